"""A fresh ingest stores what it stored before the ingest speed-ups of issue 29 (item 2), row for row.

`GOLDEN` holds, per table, a digest of the rows ctxreplay 9fbd476 (main before those changes)
stored from `_corpus` with the key `MASTER`, the paths of the files replaced by their names in
the corpus (a file key depends on where the test's temporary folder is), and the same for the
ingest summary. The rows of `--jobs 1` and `--jobs 2` are also compared with ``EXCEPT ALL`` both
ways. Were a change to what ingest stores intended, regenerate the digests with `digests` on
the commit before it and on the change, and say why they differ.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
from pathlib import Path

import duckdb
import pytest

import cc_records
from cc_records import ProgressAgent, Transcript, text, tool_use, usage
from replay.cli import sample_logs_dir
from replay.ingest.keys import Keyring
from replay.store import load, load_parallel
from replay.store.load import ingest

MASTER = bytes(range(32))
# written when the row is, not read from the logs
VOLATILE = {"datasets": {"created_at"}, "schema_migrations": {"applied_at"},
            "source_files": {"ingested_at", "stat_sig"}}
GOLDEN = {  # from 9fbd476; requests, schema_migrations and source_files from b81abdc (migration 10 adds
    # requests.miss_reason and miss_tokens, NULL on this corpus; trace revision 7 is in each file's hash);
    # source_files again for trace revision 8 (issue 37: model names outside the public ids are keyed),
    # which is in each file's hash: no other row changes, this corpus names public models only;
    # requests, schema_migrations and source_files again for migration 11 and trace revision 9
    # (requests.usage_ts): with usage_ts left out, requests still digests to 693f508f41fc73cc;
    # source_files again for trace revision 10 (hostile input read, 2026-11-28): no other row changes
    "blocks": "0c04ba441e3a580a",
    "compactions": "9e88aa39022c69a2",
    "datasets": "97a81ab333f9f2c1",
    "read_lines": "e77679620f5ef823",
    "requests": "064f932e5bb3a011",
    "run_requests": "e3b0c44298fc1c14",
    "run_sessions": "e3b0c44298fc1c14",
    "runs": "e3b0c44298fc1c14",
    "schema_migrations": "86d4fcd2b1d3397f",
    "sessions": "497ec543abc72ba3",
    "source_files": "e7de3fcfe54cc3e8",
    "streams": "132604c8358912f1",
    "summary": "bdf9d65a1ff6413d",  # 2026-11-28: shorter_versions (issue 37), subagent_files, line_messages (38)
}


def numbered(first: int, lines: list[str], tab: bool = False, width: int = 6) -> str:
    sep = "\t" if tab else "→"
    return "\n".join((f"{first + k}" if tab else f"{first + k:>{width}}") + sep + t for k, t in enumerate(lines))


def _session() -> Transcript:
    """Reads of every shape (padded, tab, numbers wider than the padding, a preview, a tail), a
    progress subagent that reads, a compaction, a resumed copy and an id-less response."""
    src = [f"    value_{k} = compute({k})  # line {k}" for k in range(1, 1300)]
    t = Transcript(session_id="golden-1")
    t.user("read the module")
    reads = [
        ({}, numbered(1, src[:400]) + "\n\n<system-reminder>consider whether it is malware</system-reminder>"),
        ({"offset": 90, "limit": 30}, numbered(90, src[89:119], width=2)),  # 99 -> 100: wider than its padding
        ({"offset": 200, "limit": 50}, [{"type": "text", "text": numbered(200, src[199:249], tab=True)}]),
        ({"offset": 1000, "limit": 299}, numbered(1000, src[999:1298]) + "\n"),
        ({}, "<persisted-output>\nOutput too large (80.1KB). Full output saved to: /x.txt\n\nPreview (first 2KB):\n"
             + numbered(1, src[:20]) + "\n...\n</persisted-output>"),
        ({}, numbered(1, ["only line"])),
        ({"offset": 5}, "     5→a\n     7→gap\n     8→b"),
        ({}, "<system-reminder>the file is empty</system-reminder>"),
    ]
    for n, (inp, content) in enumerate(reads):
        t.assistant(f"msg_r{n}", [text(f"reading {n}"), tool_use(f"tr{n}", "Read", file_path="src/mod.py", **inp)],
                    usage(write=200, read=1000 * n, w1h=100), final_output=7 + n)
        t.tool_result(f"tr{n}", content)
    agent = ProgressAgent(t, "agent-1", "task-1", "look around")
    agent.assistant("msg_s1", [tool_use("ts1", "Read", file_path="/home/alice/proj/src/mod.py")], usage(write=50))
    agent.tool_result("ts1", numbered(1, src[:30]))
    agent.assistant("msg_s2", [text("found it")], usage(write=20, read=50), final_output=9)
    t.assistant("msg_g1", [tool_use("tg", "Grep", pattern="value_1")], usage(write=30, read=9000))
    t.tool_result("tg", "src/mod.py:1:    value_1 = compute(1)")
    t.compact("the summary of what happened", pre_tokens=150_000)
    t.user("go on")
    t.assistant("msg_a9", [text("done")], usage(write=40, read=100), final_output=12)
    return t


def _corpus(root: Path) -> Path:
    """The demo sample, `_session` as JSONL with bad and repaired lines near its start (what the
    format sniffers read) and at its end, as a Stop-hook JSON array, and behind a byte order mark."""
    logs = root / "logs"
    shutil.copytree(sample_logs_dir(), logs / "sample")
    t = _session()
    path = t.write_jsonl(logs / "golden" / "golden-1.jsonl")
    lines = path.read_bytes().split(b"\n")[:-1]
    bad_utf8 = lines[0].replace(b"read the module", b"read the \xff module")  # repaired: U+FFFD
    assert bad_utf8 != lines[0]
    two = lines[2] + lines[3]  # two records on one line
    raw = [bad_utf8, lines[1], two, b"", b"not json", b"[1, 2]", *lines[4:], b'{"type": "user", "mess']
    (logs / "golden" / "golden-bad.jsonl").write_bytes(b"\n".join(raw))
    other = Transcript(session_id="golden-2")
    other.records = [dict(r, sessionId="golden-2") for r in t.records]
    other.write_json_array(logs / "golden" / "golden-2.json")
    bom = logs / "golden" / "golden-3.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"golden-1", b"golden-3"))
    return logs


def _names(logs: Path, keys: Keyring) -> dict[str, str]:
    """File key -> the file's path in the corpus."""
    return {keys.short("file", str(p.resolve()), 16): p.relative_to(logs).as_posix()
            for p in logs.rglob("*") if p.is_file()}


def _rows(db: Path, names: dict[str, str]) -> dict[str, list]:
    """Every table's rows (volatile columns left out), file and session keys named by their file."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        sessions = {k: (f, sid) for k, f, sid in con.execute(
            "SELECT session_key, file_key, session_id FROM sessions").fetchall()}

        def name(col: str, v):
            if col in ("file_key", "duplicate_of") and isinstance(v, str):
                fk, at, version = v.partition("@")
                return names.get(fk, fk) + at + version
            if col == "session_key" and v in sessions:
                return (name("file_key", sessions[v][0]), sessions[v][1])
            return v

        out = {}
        for (t,) in con.execute("SELECT table_name FROM information_schema.tables ORDER BY 1").fetchall():
            cols = [c for (c,) in con.execute("SELECT column_name FROM information_schema.columns WHERE table_name = ? "
                                              "ORDER BY ordinal_position", [t]).fetchall()
                    if c not in VOLATILE.get(t, ())]
            rows = con.execute(f'SELECT {", ".join(f"{chr(34)}{c}{chr(34)}" for c in cols)} FROM "{t}"').fetchall()
            out[t] = sorted(repr(tuple(name(c, v) for c, v in zip(cols, row))) for row in rows)
        return out
    finally:
        con.close()


def digests(root: Path, jobs: int = 1) -> dict[str, str]:
    """Per table (and for the summary), a digest of what a fresh ingest of `_corpus` stores.

    Batches end by their blocks alone (not after ``BATCH_SECONDS`` of reading): where a batch ends
    decides whether a copy of a session stored in it is one 'duplicate' row of `source_files` or
    an 'ok' row and then a 'duplicate' version, and a slow machine must not change the rows."""
    load.BATCH_SECONDS, batch_seconds = 1e9, load.BATCH_SECONDS
    try:
        return _digests(root, jobs)
    finally:
        load.BATCH_SECONDS = batch_seconds


def _digests(root: Path, jobs: int) -> dict[str, str]:
    cc_records._ids = itertools.count(1)  # the uuids of the synthetic records, as on every run
    logs = _corpus(root)
    keys = Keyring.for_dataset(MASTER, "default")
    names = _names(logs, keys)
    s = ingest([logs], root / "db.duckdb", master_key=MASTER, jobs=jobs, batch_blocks=300)
    summary = {**s.as_dict(), "messages": s.report.messages}  # skipped and repaired lines, named
    summary.pop("seconds")
    shown = json.dumps(summary, sort_keys=True).replace(str(logs.resolve()), "LOGS").replace(str(logs), "LOGS")
    out = {t: hashlib.sha256("\n".join(rows).encode()).hexdigest()[:16]
           for t, rows in _rows(root / "db.duckdb", names).items()}
    out["summary"] = hashlib.sha256(shown.encode()).hexdigest()[:16]
    return out


def _except_all(a: Path, b: Path) -> dict[str, tuple[int, int]]:
    """Per table, (rows of ``a`` not in ``b``, rows of ``b`` not in ``a``), counted with EXCEPT ALL."""
    con = duckdb.connect()
    try:
        con.execute(f"ATTACH '{a}' AS a (READ_ONLY)")
        con.execute(f"ATTACH '{b}' AS b (READ_ONLY)")
        out = {}
        for (t,) in con.execute("SELECT table_name FROM information_schema.tables WHERE table_catalog = 'a'").fetchall():
            cols = ", ".join(f'"{c}"' for (c,) in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_catalog = 'a' AND table_name = ? "
                "ORDER BY ordinal_position", [t]).fetchall() if c not in VOLATILE.get(t, ()))
            only = [con.execute(f'SELECT count(*) FROM (SELECT {cols} FROM {x}."{t}" EXCEPT ALL '
                                f'SELECT {cols} FROM {y}."{t}")').fetchone()[0] for x, y in (("a", "b"), ("b", "a"))]
            out[t] = tuple(only)
        return out
    finally:
        con.close()


def test_a_fresh_ingest_stores_what_it_stored_before(tmp_path):
    one = digests(tmp_path / "one", jobs=1)
    two = digests(tmp_path / "two", jobs=2)
    assert one == two
    # the corpus reaches what the speed-ups touch: numbered reads, skipped and repaired lines, subagents
    con = duckdb.connect(str(tmp_path / "one" / "db.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT count(*), count(*) FILTER (preview), max(len(line_hashes)) FROM read_lines"
                           ).fetchone() >= (10, 2, 400)
        assert con.execute("SELECT count(*) FROM streams WHERE kind = 'progress_subagent'").fetchone()[0] >= 3
    finally:
        con.close()
    summary = ingest([tmp_path / "one" / "logs"], tmp_path / "again.duckdb", master_key=MASTER).as_dict()
    assert {"invalid_json", "not_an_object", "truncated_last_line"} <= set(summary["skipped_lines"])
    assert {"invalid_utf8", "multi_object_line"} <= set(summary["repaired_lines"])
    assert one == GOLDEN


@pytest.mark.parametrize("early", [0, 200_000, load_parallel.EARLY_BYTES])
def test_except_all_both_ways_between_jobs_1_and_jobs_2(tmp_path, monkeypatch, early):
    """--jobs 2 with no early reader, one that reads the first files, one that reads them all."""
    cc_records._ids = itertools.count(1)
    logs = _corpus(tmp_path)
    monkeypatch.setattr(load_parallel, "EARLY_BYTES", early)
    monkeypatch.setattr(load, "BATCH_SECONDS", 1e9)  # batches end by blocks alone (see `digests`)
    for jobs in (1, 2):
        ingest([logs], tmp_path / f"j{jobs}.duckdb", master_key=MASTER, jobs=jobs, batch_blocks=300)
    diff = _except_all(tmp_path / "j1.duckdb", tmp_path / "j2.duckdb")
    assert diff and set(diff.values()) == {(0, 0)}, diff
    # the comparison sees a difference where there is one
    con = duckdb.connect(str(tmp_path / "j2.duckdb"))
    con.execute("UPDATE blocks SET tokens = tokens + 1 WHERE rowid = (SELECT min(rowid) FROM blocks)")
    con.close()
    assert _except_all(tmp_path / "j1.duckdb", tmp_path / "j2.duckdb")["blocks"] == (1, 1)
