import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from replay import store
from replay.store.load import ingest
from replay.ingest.keys import Keyring
from replay.ingest.readers.base import ReadReport
from replay.ingest.readers.claude_code import read_session

from cc_records import Transcript, basic_session, text, tool_use, usage


def q(db, sql, *params):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def test_basic_session_trace(tmp_path):
    basic_session().write_jsonl(tmp_path / "proj" / "s1.jsonl")
    db = tmp_path / "t.duckdb"
    s = ingest([tmp_path / "proj"], db)
    assert (s.sessions, s.requests, s.failed) == (1, 5, [])
    reqs = q(db, "SELECT req_idx, position, input_tokens, cache_write_1h, cache_read, output_tokens "
                 "FROM requests ORDER BY req_idx")
    # position = number of blocks before the request; output from the response's last line
    assert reqs[0] == (0, 1, 3, 5000, 0, 40)
    assert [r[1] for r in reqs] == [1, 4, 6, 8, 10]
    assert [r[5] for r in reqs] == [40, 25, 30, 20, 5]
    blocks = q(db, "SELECT pos, kind, tool_name, tool_kind, resource, line_start, line_end, content_hash "
                   "FROM blocks ORDER BY pos")
    kinds = [b[1] for b in blocks]
    assert kinds == ["user_text", "assistant_text", "tool_use", "tool_result", "tool_use", "tool_result",
                     "tool_use", "tool_result", "tool_use", "tool_result", "assistant_text"]
    r1, r2, r4 = blocks[3], blocks[5], blocks[9]
    # identical re-read: same content hash, and the relative path resolves to the same pseudonym
    assert r1[7] == r2[7] and r1[4] == r2[4]
    assert r1[2:4] == ("Read", "read")
    assert (r4[5], r4[6]) == (10, 29) and r4[4] == r1[4]
    assert blocks[7][3] == "mutate"
    # the UI copy (toolUseResult) is not context
    assert q(db, "SELECT count(*) FROM blocks")[0][0] == 11


def test_usage_counted_once_per_message_id(tmp_path):
    t = Transcript()
    t.user("hi")
    t.assistant("m1", [text("a"), text("b"), tool_use("x", "Bash", command="ls")],
                usage(inp=7, write=100, read=900, out=3), final_output=77)
    t.tool_result("x", "file1\nfile2")
    t.write_jsonl(tmp_path / "s.jsonl")
    db = tmp_path / "t.duckdb"
    ingest([tmp_path / "s.jsonl"], db)
    assert q(db, "SELECT count(*), sum(input_tokens), sum(cache_write_5m), sum(cache_read), sum(output_tokens), "
                 "bool_and(NOT ttl_split_known) FROM requests")[0] == (1, 7, 100, 900, 77, True)


def test_compaction_and_sidechains(tmp_path):
    t = basic_session()
    t.compact("Summary of the earlier conversation", pre_tokens=5150)
    t.user("continue")
    t.assistant("msg_b1", [text("ok")], usage(write=900, read=0))
    side = Transcript(sidechain=True)
    side.records = []
    side.parent = None
    side.user("sub task prompt")
    side.assistant("msg_s1", [text("sub answer")], usage(write=10, read=0))
    t.records[3:3] = side.records  # inline, out of order in the file
    t.write_jsonl(tmp_path / "s.jsonl")
    db = tmp_path / "t.duckdb"
    ingest([tmp_path], db)
    assert q(db, "SELECT kind, n_requests FROM streams ORDER BY stream_id") == [("main", 6), ("sidechain", 1)]
    comp = q(db, "SELECT stream_id, partition, trigger, pre_tokens FROM compactions")
    assert comp == [(0, 1, "auto", 5150)]
    part = q(db, "SELECT kind, partition FROM blocks WHERE stream_id = 0 AND partition = 1 ORDER BY pos")
    assert [k for k, _ in part] == ["compact_summary", "user_text", "assistant_text"]
    assert q(db, "SELECT partition FROM requests WHERE stream_id = 0 ORDER BY req_idx DESC LIMIT 1") == [(1,)]


def test_subagent_files_join_their_session(tmp_path):
    proj = tmp_path / "projects" / "-home-alice-proj"
    basic_session(session_id="S").write_jsonl(proj / "S.jsonl")
    sub = Transcript(session_id="S", sidechain=True, agent_id="abc123")
    sub.user("investigate")
    sub.assistant("msg_sub", [text("found it")], usage(write=4000))
    sub.write_jsonl(proj / "S" / "subagents" / "agent-abc123.jsonl")
    db = tmp_path / "t.duckdb"
    s = ingest([tmp_path / "projects"], db)
    assert (s.files, s.sessions, s.streams) == (2, 1, 2)
    assert q(db, "SELECT kind, n_requests FROM streams ORDER BY stream_id") == [("main", 5), ("subagent", 1)]


def test_json_array_dump_equals_jsonl(tmp_path):
    t = basic_session()
    a = t.write_jsonl(tmp_path / "a" / "s.jsonl")
    b = t.write_json_array(tmp_path / "b" / "s.json")
    keys = Keyring(b"k" * 32)
    ta = read_session(a, keys, "d", "f", ReadReport())
    tb = read_session(b, keys, "d", "f", ReadReport())
    assert ta.blocks == tb.blocks and ta.requests == tb.requests


def test_bad_input_is_counted_and_never_aborts(tmp_path):
    logs = tmp_path / "logs"
    basic_session().write_jsonl(logs / "good.jsonl")
    lines = basic_session(session_id="broken").write_jsonl(tmp_path / "src.jsonl").read_text().splitlines()
    (logs / "broken.jsonl").write_text(
        lines[0] + "\n{not json\n" + '{"type": "weird_new_type", "sessionId": "s"}\n' + "[1, 2]\n"
        + "\n".join(lines[1:]) + "\n" + lines[-1][: len(lines[-1]) // 2]
    )
    (logs / "empty.jsonl").write_text("")
    (logs / "binary.jsonl").write_bytes(b"\x00\x01\x02garbage")
    (logs / "other.json").write_text('{"name": "not a log"}')
    (tmp_path / "nologs").mkdir()
    db = tmp_path / "t.duckdb"
    s = ingest([logs, tmp_path / "nologs", tmp_path / "missing"], db)
    failed = dict(s.failed)
    assert "empty file" in failed[str((logs / "empty.jsonl").resolve())]
    assert "binary" in failed[str((logs / "binary.jsonl").resolve())]
    assert str(logs / "other.json") in "".join(failed)
    assert "no such file" in failed[str(tmp_path / "missing")]
    assert "no .jsonl" in failed[str(tmp_path / "nologs")]
    assert s.report.skipped == {"invalid_json": 1, "unknown_type": 1, "not_an_object": 1, "truncated_last_line": 1}
    # the broken file still yields its intact records, the good one is whole
    assert s.sessions == 2
    assert any("broken.jsonl:2: invalid json" in m for m in s.report.messages)
    # the unknown type is counted and named as such, never echoed (a closed vocabulary, issue 37)
    assert any("unknown record type" in m for m in s.report.messages)
    assert not any("weird_new_type" in m for m in s.report.messages)


def test_missing_usage_is_counted(tmp_path):
    t = Transcript()
    t.user("hi")
    t._base("assistant", message={"model": "m", "id": "x", "role": "assistant", "content": [text("no usage")]})
    t.write_jsonl(tmp_path / "s.jsonl")
    s = ingest([tmp_path], tmp_path / "t.duckdb")
    assert s.report.skipped["missing_usage"] == 1
    assert q(tmp_path / "t.duckdb", "SELECT has_usage FROM requests") == [(False,)]


def test_reingest_is_idempotent_and_grown_file_is_new_version(tmp_path):
    t = basic_session()
    path = t.write_jsonl(tmp_path / "s.jsonl")
    db = tmp_path / "t.duckdb"
    ingest([tmp_path], db)
    before = q(db, "SELECT count(*) FROM blocks")[0][0]
    s2 = ingest([tmp_path], db)
    assert (s2.ingested, s2.unchanged) == (0, 1)
    assert q(db, "SELECT count(*) FROM blocks")[0][0] == before
    t.user("one more question")
    t.assistant("msg_more", [text("answer")], usage(write=10, read=5180))
    t.write_jsonl(path)
    s3 = ingest([tmp_path], db)
    assert (s3.ingested, s3.new_versions) == (1, 1)
    assert q(db, "SELECT count(*) FROM sessions")[0][0] == 1
    assert q(db, "SELECT count(*) FROM blocks")[0][0] == before + 2
    assert q(db, "SELECT max(version) FROM source_files")[0][0] == 2


def test_copied_tree_is_not_ingested_twice(tmp_path):
    a = basic_session().write_jsonl(tmp_path / "a" / "s.jsonl")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "s.jsonl").write_bytes(a.read_bytes())
    s = ingest([tmp_path], tmp_path / "t.duckdb")
    assert (s.ingested, s.duplicates) == (1, 1)


def test_resumed_copies_are_flagged(tmp_path):
    t = Transcript(session_id="old")
    t.user("first")
    t.assistant("m_old", [text("x")], usage(write=10))
    t.session_id = "new"
    t.user("resumed")
    t.assistant("m_new", [text("y")], usage(write=10, read=10))
    t.write_jsonl(tmp_path / "s.jsonl")
    db = tmp_path / "t.duckdb"
    ingest([tmp_path], db)
    assert q(db, "SELECT resumed_copy FROM requests ORDER BY req_idx") == [(True,), (False,)]


def test_key_change_is_refused(tmp_path, monkeypatch):
    basic_session().write_jsonl(tmp_path / "s.jsonl")
    db = tmp_path / "t.duckdb"
    ingest([tmp_path], db, key_file=tmp_path / "k1")
    with pytest.raises(store.StoreError, match="another key"):
        ingest([tmp_path], db, key_file=tmp_path / "k2")


def test_locked_database_gives_clear_error(tmp_path):
    db = tmp_path / "t.duckdb"
    store.connect(db).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import duckdb,time; c=duckdb.connect({str(db)!r}); print('ready', flush=True); time.sleep(30)"],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(store.StoreError, match="locked by another process"):
            store.connect(db)
    finally:
        holder.kill()
        holder.wait()


def test_migrations_are_tracked_and_not_reapplied(tmp_path):
    db = tmp_path / "t.duckdb"
    con = store.connect(db)
    assert store.migrate(con) == []
    versions = [r[0] for r in con.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall()]
    assert versions == [v for v, _, _ in store.MIGRATIONS]
    con.close()


def test_no_raw_text_reaches_the_database(tmp_path):
    t = basic_session(cwd="/home/alice/secretproject")
    t.tool_result("tu4", "ANOTHER_FILELINE_zzz")
    t.write_jsonl(tmp_path / "logs" / "s.jsonl")
    db = tmp_path / "t.duckdb"
    ingest([tmp_path / "logs"], db)
    needles = ["SECRETPROMPT_alpha", "FILELINE_unique_marker_1", "secretproject", "alice", "parser.py",
               "UI COPY NOT CONTEXT", "ANOTHER_FILELINE"]
    _assert_absent(db, needles)


def _assert_absent(db: Path, needles: list[str]) -> None:
    con = duckdb.connect(str(db), read_only=True)
    cols = con.execute(
        "SELECT table_name, column_name FROM information_schema.columns WHERE data_type IN ('VARCHAR', 'JSON')"
    ).fetchall()
    for table, col in cols:
        values = "\0".join(str(v[0]) for v in con.execute(f'SELECT DISTINCT "{col}" FROM "{table}"').fetchall())
        for n in needles:
            assert n not in values, f"{n!r} found in {table}.{col}"
    con.close()
    raw = db.read_bytes()
    for n in needles:
        assert n.encode() not in raw, f"{n!r} found in the database file bytes"
