"""Ingest: discover log files, read each into a trace, store it; never let one file stop the rest.

Each file is read as a stream (bounded memory, see `replay.ingest.readers.source`): a first
pass hashes its bytes (an unchanged or byte-identical file is not read again), a second
one parses it record by record, reading only the bytes hashed. Whole files are written in
bounded batches (``batch_blocks`` blocks or ``BATCH_SECONDS`` of reading, one transaction
each), so an interruption keeps every batch finished before it and a re-run resumes; a
file whose values do not fit the store fails alone, before its batch is written. With
``jobs`` > 1, worker processes hash, parse and token-count the files; this process takes
their traces in file order and alone checks, batches and writes them, so the database and
the summary equal a ``jobs=1`` ingest (a worker that dies hands its files back to this process).

A session found at several paths (a backup that is a shorter prefix copy, a moved
project) is stored once: the copy with the most requests (then blocks) wins, as a grown
file replaces its earlier version, and the summary names the copies (`duplicate_sessions`).
One path over time keeps the fuller version too: a file that shrank to a prefix of the session
stored from it is not stored instead (`replay.store.versions`; the summary names it,
`shorter_versions`).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from replay import store
from replay.store.db import refuse_foreign
from replay.ingest.keys import Keyring, load_or_create_master_key
from replay.ingest.readers.report import ReadReport
from replay.store import heap, statsig
from replay.store.versions import SHORTER, stored_fuller
from replay.store.discovery import LOG_SUFFIXES, SKIP_NAMES, Unit, discover, not_regular  # noqa: F401 (re-exported)
from replay.store.readunit import Parsed, complete, hash_unit, parse_unit, reader_for  # noqa: F401 (re-exported)
from replay.ingest.tokens import COUNTER


@dataclass
class IngestSummary:
    files: int = 0
    ingested: int = 0
    unchanged: int = 0
    duplicates: int = 0  # byte-identical to a file already stored: not read
    new_versions: int = 0
    # (copy, kept): a copy of a session stored from another file (a shorter or equal version), not stored
    duplicate_sessions: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    # files that now hold a different session than the one stored from them (that one is kept)
    kept_sessions: list[str] = field(default_factory=list)
    skipped_files: list[tuple[str, str]] = field(default_factory=list)  # not regular files: never opened
    # `subagents/agent-*.jsonl` files read with their session's main file: counted in `files`, not
    # in ingested/unchanged/duplicates/failed (which count the main files)
    subagent_files: int = 0
    # (file, its requests, the stored version's): a file now shorter than the session stored from it, kept
    shorter_versions: list[tuple[str, int, int]] = field(default_factory=list)
    sessions: int = 0
    streams: int = 0
    requests: int = 0
    blocks: int = 0
    bytes: int = 0
    seconds: float = 0.0
    report: ReadReport = field(default_factory=ReadReport)

    def as_dict(self) -> dict:
        return {
            "files": self.files,
            "ingested": self.ingested,
            "new_versions": self.new_versions,
            "unchanged": self.unchanged,
            "duplicates": self.duplicates,
            "duplicate_sessions": [{"file": f, "kept": k} for f, k in self.duplicate_sessions],
            "failed": [{"file": f, "reason": r} for f, r in self.failed],
            "kept_sessions": list(self.kept_sessions),
            "shorter_versions": [{"file": f, "requests": n, "stored_requests": m} for f, n, m in self.shorter_versions],
            "skipped_files": [{"file": f, "reason": r} for f, r in self.skipped_files],
            "subagent_files": self.subagent_files,
            "sessions": self.sessions,
            "streams": self.streams,
            "requests": self.requests,
            "blocks": self.blocks,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
            "skipped_lines": dict(self.report.skipped),
            "repaired_lines": dict(self.report.repaired),
            "pseudonymized_values": dict(self.report.pseudonymized),
            "non_context_lines": dict(self.report.non_context),
            "line_messages": list(self.report.messages),  # the first `max_messages` (file:line: reason)
        }

    @property
    def nothing_usable(self) -> bool:
        """Every given file failed or was skipped: nothing ingested, nothing already there."""
        usable = (self.ingested + self.unchanged + self.duplicates + len(self.duplicate_sessions)
                  + len(self.shorter_versions))
        return usable == 0 and bool(self.failed or self.skipped_files)


def ingest(
    paths: list[Path],
    db: Path,
    dataset: str = "default",
    key_file: Path | None = None,
    on_progress: Callable[[int, str], None] | None = None,
    on_total: Callable[[int], None] | None = None,
    batch_blocks: int = 20_000,
    master_key: bytes | None = None,
    jobs: int | None = 1,
) -> IngestSummary:
    """Ingest every log under ``paths`` into ``db``. Per-file problems are counted, not raised.

    ``master_key`` (as read by `open_master_key`) wins over ``key_file``, which is created if
    missing. A damaged database is refused (StoreError) before anything is written to it.
    Whole files are committed together once they hold ``batch_blocks`` blocks or were read
    over ``BATCH_SECONDS``, so an interruption loses at most that much work.

    ``jobs`` > 1 hashes, parses and token-counts files in that many worker processes; this
    process alone writes, in the same order and batches, so the result equals ``jobs=1``.
    ``jobs=None`` picks it (`auto_jobs`): every core, up to ``AUTO_MAX_JOBS``, for a new
    database fed at least ``AUTO_MIN_BYTES`` of logs; else one.
    """
    t0 = time.perf_counter()
    if not dataset.strip():  # stored, it could never be chosen again: --dataset "" means "not given" everywhere
        raise ValueError(f"the dataset name {dataset!r} is empty; give --dataset a name (default: default)")
    refuse_foreign(Path(db))  # before a log is read: a log given as --db is not overwritten nor "ingested into"
    summary = IngestSummary()
    units = discover(paths, summary.failed, summary.skipped_files)
    summary.files = sum(1 + len(u.subagents) for u in units)
    summary.subagent_files = sum(len(u.subagents) for u in units)
    master = master_key if master_key is not None else load_or_create_master_key(key_file)
    keys = Keyring.for_dataset(master, dataset)
    from replay.store.load_parallel import EarlyReader, Workers, read_in_parallel, start_method

    fresh = not Path(db).exists()  # every file will be parsed
    if jobs is None:
        jobs = auto_jobs(units, fresh)
    jobs = max(1, min(jobs, len(units)))
    early = None
    if fresh and jobs > 1 and Path(db).parent.is_dir() and start_method() == "fork":
        # the first files are read while the tokenizer loads, by a process forked before (the load
        # holds this one for about 1 s); the workers are forked after it, to inherit the tokenizer
        early = EarlyReader.start(units, keys, dataset)
    with contextlib.ExitStack() as stack:
        if early is not None:
            stack.callback(early.close)
        workers = stack.enter_context(Workers.start(keys, dataset, jobs, preload=fresh))  # before the database is opened
        # the whole-database check (every table read) is for a run that will write: a tree found
        # unchanged by its files' stat writes nothing, and is answered without it
        con = store.connect(db, verify="before_write")
        try:
            run = _Run(con, keys, dataset, summary, _BATCH or batch_blocks)
            if not run.unchanged_by_stat(units):
                store.verify_store(con, Path(db))
            # one DuckDB thread for the writes: the workers hold the cores, and each thread keeps
            # buffers of its own (a 196 MB session's peak: 280 MB against 289-291 MB with two)
            con.execute("SET threads = 1")
            store.ensure_dataset(con, dataset, keys.fingerprint, COUNTER)
            if on_total:
                on_total(sum(u.size for u in units))
            if workers is not None:
                read_in_parallel(run, units, workers, on_progress, early)
            else:
                for unit in units:
                    item = run.read(unit)
                    if item is not None:
                        run.add(item)
                    if on_progress:
                        on_progress(unit.size, unit.main.name)
            run.flush()
            run.save_signatures()
        finally:
            con.close()
    summary.seconds = time.perf_counter() - t0
    return summary


# `ingest(jobs=None)`: workers pay for their start (a fork, a tokenizer load each: about 0.4 s of
# CPU) only where every file is parsed and there is enough of them; on the shared 196 MB
# entire-cli tree, 2 cores, a fresh ingest takes 5.4 s with 2 processes against 9.2 s with one,
# and an incremental one (a few grown files) the same either way (`python bench/ingest.py
# PATH --jobs 2`). More than 4 is unmeasured here (one process writes, whatever the count).
AUTO_MIN_BYTES = 16 << 20
AUTO_MAX_JOBS = 4


def available_cores() -> int:
    """The cores this process may run on (a container's or `taskset`'s limit, not the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def auto_jobs(units: list[Unit], fresh: bool) -> int:
    """The processes an ingest uses when not told: see ``AUTO_MIN_BYTES``. Only where workers
    are forked (Linux): a spawned worker imports everything and loads the tokenizer itself,
    which is not measured here."""
    from replay.store.load_parallel import start_method

    if not fresh or sum(u.size for u in units) < AUTO_MIN_BYTES or start_method() != "fork":
        return 1
    return max(1, min(available_cores(), AUTO_MAX_JOBS))


BATCH_SECONDS = 2.0
# test hooks (crash-safety test): a note per committed batch, the batch size
_TRACE_FILE = os.environ.get("CTXREPLAY_INGEST_TRACE")
_BATCH = int(os.environ.get("CTXREPLAY_INGEST_BATCH_BLOCKS", "0") or 0)



class _Run:
    """One ingest: reads units, writes whole files in bounded batches, stores a session once (the
    `replay.store.load_parallel.Writer` the parallel reader drives)."""

    def __init__(self, con, keys: Keyring, dataset: str, summary: IngestSummary, batch_blocks: int):
        self.con, self.keys, self.dataset, self.summary = con, keys, dataset, summary
        self.batch_blocks = batch_blocks
        self.pending: list[store.PendingFile] = []
        self.pending_blocks = 0
        self.batch_started = 0.0
        self.paths: dict[str, str] = {}  # file key -> path, for the files of this run
        self.added: dict[str, tuple[int, int, int]] = {}  # session key written in this run -> its counts
        self.superseded: set[str] = set()  # file keys whose stored session a pending copy replaces
        # what the dataset holds, read once and kept up to date (one query per file would cost more than reading it)
        self.status: dict[str, tuple[int, str]] = {}
        self.stats: dict[str, tuple[str, int]] = {}  # file key -> stat signature and size of its latest version
        for fkey, version, chash, sig, size in con.execute(
                "SELECT file_key, max(version), arg_max(content_hash, version), arg_max(stat_sig, version), "
                "arg_max(size_bytes, version) FROM source_files "
                "WHERE dataset = ? AND status IN ('ok', 'duplicate', ?) GROUP BY file_key", [dataset, SHORTER]).fetchall():
            self.status[fkey] = (version, chash)
            if sig is not None:
                self.stats[fkey] = (sig, size)
        self.resigned: list[tuple[str, int, str]] = []  # (file key, version, signature): unchanged, newly signed
        self.copies: list[tuple[str, str, int, str]] = []  # byte copies of stored files: key, hash, size, signature
        self.known = {r[0] for r in con.execute(
            "SELECT DISTINCT content_hash FROM source_files WHERE dataset = ? AND status = 'ok'", [dataset]).fetchall()}
        self.stored: dict[tuple[str, str], list[tuple[str, str, int]]] = {}  # (agent, session id) -> sessions
        for agent, sid, skey, fkey, n_blocks in con.execute(
                "SELECT agent, session_id, session_key, file_key, n_blocks FROM sessions WHERE dataset = ?",
                [dataset]).fetchall():
            self.stored.setdefault((agent, sid), []).append((skey, fkey, n_blocks))

    def read(self, unit: Unit) -> store.PendingFile | None:
        file_key = self.file_key(unit)
        sig = statsig.signature(unit, self.keys)  # before hashing: a write after it changes the next one
        if self.same_stat(file_key, sig):
            return None
        try:
            content_hash, size, sizes = hash_unit(unit, self.keys)
        except OSError as e:
            self.summary.failed.append((str(e.filename or unit.main), f"cannot read: {e.strerror or e}"))
            return None
        latest = self.check(file_key, content_hash, size, sig)
        if latest is None:
            return None
        return self.finish(unit, file_key, latest, content_hash, size,
                           complete(unit, parse_unit(unit, self.keys, self.dataset, file_key, sizes)), sig)

    def take(self, unit: Unit, file_key: str, sig: str | None, content_hash: str | None, size: int,
             parsed: Parsed) -> store.PendingFile | None:
        """A unit read by the early reader (`replay.store.load_parallel.EarlyReader`), taken in its turn as `read`
        takes one."""
        self.file_key(unit)
        if self.same_stat(file_key, sig):
            return None
        if content_hash is None:  # it could not be read
            self.summary.failed.append(parsed.failure)
            return None
        latest = self.check(file_key, content_hash, size, sig)
        if latest is None:
            return None
        return self.finish(unit, file_key, latest, content_hash, size, complete(unit, parsed), sig)

    def same_stat(self, file_key: str, sig: str | None) -> bool:
        """Whether the file's latest version was stored with this stat signature: unchanged (counted), not hashed."""
        stored = self.stats.get(file_key)
        if sig is None or stored is None or stored[0] != sig:
            return False
        self.summary.bytes += stored[1]
        self.summary.unchanged += 1
        return True

    def unchanged_by_stat(self, units: list[Unit]) -> bool:
        """Whether every unit's latest stored version has its current stat signature (nothing
        to read, nothing to write). Counts nothing: `same_stat` does, as the run meets them."""
        if not units:
            return False
        for unit in units:
            sig = statsig.signature(unit, self.keys)
            stored = self.stats.get(self.keys.short("file", str(unit.main), 16))
            if sig is None or stored is None or stored[0] != sig:
                return False
        return True

    def save_signatures(self) -> None:
        """Store the stat signatures of the files found unchanged by their hash (stored before they were kept),
        and a 'duplicate' row for each byte copy of a stored file (no trace: the file it copies holds it), so
        that a tree holding copies (a backup, a second config folder) is not hashed again at every run."""
        self._save_copies()
        if not self.resigned:
            return
        fkeys, versions, sigs = (list(c) for c in zip(*self.resigned))
        self.con.execute(
            "UPDATE source_files SET stat_sig = u.sig FROM (SELECT unnest(?) AS fk, unnest(?) AS v, unnest(?) AS sig) u "
            "WHERE dataset = ? AND file_key = u.fk AND version = u.v", [fkeys, versions, sigs, self.dataset])
        self.resigned = []

    def _save_copies(self) -> None:
        if not self.copies:
            return
        fkeys, hashes, sizes, sigs = (list(c) for c in zip(*self.copies))
        # the copy takes its original's reader and subagent count; a copy of a file stored in this
        # run finds it too (the batch holding it is written by now)
        self.con.execute(
            """INSERT INTO source_files (dataset, file_key, version, content_hash, size_bytes, n_subagent_files,
                   reader, status, ingested_at, skipped, duplicate_of, stat_sig)
               SELECT ?, c.fk, 1, c.h, c.size, o.n_subagent_files, o.reader, 'duplicate', ?, NULL, o.file_key, c.sig
               FROM (SELECT unnest(?) AS fk, unnest(?) AS h, unnest(?) AS size, unnest(?) AS sig) c
               JOIN (SELECT content_hash, arg_min(file_key, file_key) AS file_key,
                            arg_min(n_subagent_files, file_key) AS n_subagent_files, arg_min(reader, file_key) AS reader
                     FROM source_files WHERE dataset = ? AND status = 'ok' GROUP BY content_hash) o
                 ON o.content_hash = c.h
               WHERE NOT EXISTS (SELECT 1 FROM source_files f WHERE f.dataset = ? AND f.file_key = c.fk)""",
            [self.dataset, store.now(), fkeys, hashes, sizes, sigs, self.dataset, self.dataset])
        self.copies = []

    def file_key(self, unit: Unit) -> str:
        file_key = self.keys.short("file", str(unit.main), 16)
        self.paths[file_key] = str(unit.main)
        return file_key

    def check(self, file_key: str, content_hash: str, size: int, sig: str | None = None) -> int | None:
        """The latest stored version of a file to read (0: none), None if unchanged or a duplicate (counted).

        An unchanged file's stat signature ``sig`` is kept, so that the next run need not hash it."""
        summary = self.summary
        summary.bytes += size
        latest, latest_hash = self.status.get(file_key, (0, None))
        if latest_hash == content_hash:
            summary.unchanged += 1
            if sig is not None and self.stats.get(file_key, (None,))[0] != sig:
                self.resigned.append((file_key, latest, sig))
                self.stats[file_key] = (sig, size)
            return None
        if latest == 0 and (content_hash in self.known or any(p.content_hash == content_hash for p in self.pending)):
            summary.duplicates += 1
            # remembered (with its stat signature when it has one): the next run skips it unhashed, or
            # finds it unchanged by its hash and signs it then
            self.copies.append((file_key, content_hash, size, sig))
            return None
        return latest

    def finish(self, unit: Unit, file_key: str, latest: int, content_hash: str, size: int,
               parsed: "Parsed", sig: str | None = None) -> store.PendingFile | None:
        """The file to write from a parse (None if it failed: counted)."""
        if parsed.failure is not None:
            self.summary.failed.append(parsed.failure)
            if parsed.merge_report:
                self.summary.report.merge(parsed.report)
            return None
        why = statsig.changed_while_read(unit, size, self.keys) if content_hash else None
        if why is not None:
            self.summary.failed.append((str(unit.main), why))
            return None
        self.summary.report.merge(parsed.report)
        return store.PendingFile(
            parsed.trace, self.dataset, file_key, latest + 1, content_hash, size, len(unit.subagents), parsed.agent,
            dict(parsed.report.skipped), stat_sig=sig,
        )

    def add(self, p: store.PendingFile) -> None:
        """Queue one file (and the stored copies it replaces); write the batch once it is full."""
        if not self.pending:
            self.batch_started = time.perf_counter()
        fuller = stored_fuller(self.con, p) if p.version > 1 else None
        if fuller is not None:  # a truncated file: the stored session stays, this version is only noted
            self.summary.shorter_versions.append((self.paths[p.file_key], *fuller))
            p.trace, p.status = None, SHORTER
            self.pending.append(p)
            return
        self.pending.extend([p, *self._same_session(p)])
        self.summary.ingested += 1
        if p.version > 1:
            self.summary.new_versions += 1
        self.pending_blocks += p.trace.n_blocks if p.trace is not None else 0
        if self.pending_blocks >= self.batch_blocks or time.perf_counter() - self.batch_started >= BATCH_SECONDS:
            self.flush()

    def flush(self) -> None:
        """Write the pending files in one transaction."""
        batch, self.pending, self.pending_blocks = self.pending, [], 0
        if not batch:
            return
        heap.trim()  # the readers' freed memory goes back before DuckDB's insert grows the process
        kept = store.write_sessions(self.con, batch)
        self.superseded.clear()
        if _TRACE_FILE:
            with open(_TRACE_FILE, "a") as fh:
                fh.write(f"{len(batch)}\n")
        s = self.summary
        written = {p.file_key for p in batch}
        for k, rows in self.stored.items():  # rows replaced or deleted go; sessions kept move to their new file key
            self.stored[k] = [(r[0], kept.get(r[0], r[1]), r[2]) for r in rows if r[0] in kept or r[1] not in written]
        for fkey in sorted({k.rpartition("@")[0] for k in kept.values()}):
            s.kept_sessions.append(self._name(fkey))
        for p in batch:
            self.status[p.file_key] = (p.version, p.content_hash)
            if p.stat_sig is not None:
                self.stats[p.file_key] = (p.stat_sig, p.size_bytes)
            else:
                self.stats.pop(p.file_key, None)
            if p.duplicate_of is None and p.status is None:
                self.known.add(p.content_hash)
            if p.trace is not None and p.duplicate_of is None:
                tr = p.trace
                self.stored.setdefault((tr.session["agent"], tr.identity), []).append(
                    (tr.session["session_key"], p.file_key, tr.n_blocks))
                counts = (tr.session["n_streams"], tr.n_requests, tr.n_blocks)
                self.added[tr.session["session_key"]] = counts
                s.sessions += 1
                s.streams, s.requests, s.blocks = s.streams + counts[0], s.requests + counts[1], s.blocks + counts[2]

    # --- one session, one count ------------------------------------------------------------------
    def _same_session(self, p: store.PendingFile) -> list[store.PendingFile]:
        """Compare ``p`` with the sessions of the same id from other files, stored or pending.

        Of two copies, one holding all of the other's requests (message id and request id),
        the one with more requests, then more blocks, is kept (on a tie, the one seen first):
        ``p`` is marked a duplicate, or the copies it replaces are (a pending one in place, a
        stored one by a 'duplicate' version of its file, returned to be written with ``p``,
        which deletes its rows). Copies that diverged are two sessions.
        """
        tr = p.trace
        if tr is None or tr.identity is None:
            return []
        new_keys = set(tr.requests["msg_key"])
        others = []  # (pending file or None, session key, file key, request keys, n_blocks)
        for q in self.pending:
            if (q.trace is not None and q.duplicate_of is None and q.trace.identity == tr.identity
                    and q.trace.session["agent"] == tr.session["agent"] and q.file_key != p.file_key):
                others.append((q, None, q.file_key, set(q.trace.requests["msg_key"]), q.trace.n_blocks))
        pending_keys = {q.file_key for q in self.pending}
        for skey, fkey, n_blocks in self.stored.get((tr.session["agent"], tr.identity), ()):
            if fkey in self.superseded or fkey in pending_keys or fkey == p.file_key:
                continue
            old_keys = {r[0] for r in self.con.execute(
                "SELECT DISTINCT msg_key FROM requests WHERE session_key = ?", [skey]).fetchall()}
            others.append((None, skey, fkey, old_keys, n_blocks))
        nested = []
        for q, skey, fkey, old_keys, n_blocks in others:
            if not (new_keys <= old_keys or old_keys <= new_keys):
                continue  # diverged
            if not new_keys and not old_keys and not self._blocks_nested(tr, q, skey):
                continue
            if (len(new_keys), tr.n_blocks) <= (len(old_keys), n_blocks):
                p.duplicate_of = fkey
                self.summary.duplicate_sessions.append((self.paths[p.file_key], self._name(fkey)))
                return []
            nested.append((q, skey, fkey))
        replaced = []
        for q, skey, fkey in nested:
            self.summary.duplicate_sessions.append((self._name(fkey), self.paths[p.file_key]))
            if q is not None:
                q.duplicate_of = p.file_key
                continue
            replaced.append(self._superseded(fkey, p.file_key))
            self.superseded.add(fkey)
            counts = self.added.pop(skey, None)
            if counts is not None:  # written earlier in this run: the summary counts what stays
                s = self.summary
                s.sessions -= 1
                s.streams, s.requests, s.blocks = s.streams - counts[0], s.requests - counts[1], s.blocks - counts[2]
        return replaced

    def _blocks_nested(self, tr, q: store.PendingFile | None, skey: str | None) -> bool:
        """Whether one session's blocks (by content) are all in the other's (sessions without requests)."""
        if q is not None:
            old = Counter(q.trace.blocks["content_hash"])
        else:
            old = Counter(r[0] for r in self.con.execute("SELECT content_hash FROM blocks WHERE session_key = ?",
                                                          [skey]).fetchall())
        new = Counter(tr.blocks["content_hash"])
        return not (new - old) or not (old - new)

    def _superseded(self, file_key: str, by: str) -> store.PendingFile:
        """A new 'duplicate' version of a stored file whose session a longer copy replaces."""
        version, content_hash, size, n_sub, reader, sig = self.con.execute(
            "SELECT version, content_hash, size_bytes, n_subagent_files, reader, stat_sig FROM source_files "
            "WHERE dataset = ? AND file_key = ? ORDER BY version DESC LIMIT 1", [self.dataset, file_key]).fetchone()
        sig = self.stats.get(file_key, (sig,))[0]  # signed in this run, not yet saved
        return store.PendingFile(None, self.dataset, file_key, version + 1, content_hash, size, n_sub, reader, {},
                                 duplicate_of=by, stat_sig=sig)

    def _name(self, file_key: str) -> str:
        return self.paths.get(file_key) or f"a file ingested earlier (file key {file_key})"
