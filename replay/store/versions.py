"""A log that shrinks never replaces its fuller stored version.

Logs are appended to; a file found smaller than the version stored from it was truncated (a
disk filled mid-write, a copy cut short, an editor that saved part of it). Ingest stores a new
version of a file as the file's session: a truncated file would replace a 57-request session
with its first 9 requests. So a new version is *shorter* when all of these hold:

* its files hold fewer bytes than the latest version stored with a trace (status 'ok');
* that version's session (same agent, same session id) is still stored under this file;
* every request of the new version (by message and request id) and every block (by keyed
  content hash, counted) is in the stored session: the new one is nested in the stored one.

A shorter version is not stored instead: the stored session is kept, and a source_files row
with status 'shorter' records the new version's hash and stat signature (so an unchanged
file is not read again at the next ingest), and the summary names the file
(`IngestSummary.shorter_versions`). A version that is smaller but not nested (the file was
rewritten with other content, or a new trace revision reads other blocks) is stored as any
new version; one holding another session keeps the old session beside it (`write_sessions`).
"""

from __future__ import annotations

from collections import Counter

SHORTER = "shorter"  # source_files.status of a shorter version (no trace stored)


def stored_fuller(con, p) -> tuple[int, int] | None:
    """(requests of ``p``, requests of the stored session) when ``p`` (a `PendingFile` with a new
    version number) is a shorter version of the session stored from its file; else None."""
    row = con.execute(
        "SELECT size_bytes FROM source_files WHERE dataset = ? AND file_key = ? AND status = 'ok' "
        "ORDER BY version DESC LIMIT 1", [p.dataset, p.file_key]).fetchone()
    if row is None or row[0] is None or p.size_bytes >= row[0]:
        return None
    rows = con.execute("SELECT session_key, agent, session_id, n_requests FROM sessions WHERE dataset = ? "
                       "AND file_key = ?", [p.dataset, p.file_key]).fetchall()
    tr = p.trace
    if tr is None:  # the file lost every line of context it had
        return (0, sum(r[3] or 0 for r in rows)) if rows else None
    same = [r for r in rows if r[1] == tr.session["agent"] and r[2] == tr.session["session_id"]]
    if len(same) != 1:
        return None  # another session (kept beside by write_sessions), or nothing stored to lose
    skey, n_requests = same[0][0], same[0][3] or 0
    old_keys = {k for (k,) in con.execute("SELECT DISTINCT msg_key FROM requests WHERE session_key = ?",
                                          [skey]).fetchall()}
    if not set(tr.requests["msg_key"]) <= old_keys:
        return None
    old_blocks = Counter(h for (h,) in con.execute("SELECT content_hash FROM blocks WHERE session_key = ?",
                                                   [skey]).fetchall())
    if Counter(tr.blocks["content_hash"]) - old_blocks:
        return None  # a block the stored session lacks: not a prefix of it
    if (tr.n_requests, tr.n_blocks) == (n_requests, sum(old_blocks.values())):
        return None  # the same trace in fewer bytes (a line that was not context): nothing lost either way
    return tr.n_requests, n_requests
