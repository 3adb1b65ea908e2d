"""Hostile input at ingest: poison numbers, copies of one session, planted values in kept
fields, broken encodings and odd first lines, huge files.

Every input here is built from synthetic records (tests/cc_records.py and the fixtures of
test_readers_other.py); the shared corpus is only read in place.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from replay import store
from replay.ingest import checks
from replay.ingest.keys import Keyring
from replay.ingest.readers import claude_code, codex, copilot, gemini_chat
from replay.ingest.readers.base import ReadReport, Records
from replay.store import load
from replay.store.load import ingest

from cc_records import Transcript, basic_session, text, tool_use, usage
from conftest import shared_logs
from test_ingest import _assert_absent, q
from test_readers_other import codex_fixture, copilot_records, gemini_chat_doc

ROOT = Path(__file__).resolve().parents[1]
KEYS = Keyring(b"h" * 32)


def _session(session_id: str, poison=None, n: int = 3, cwd: str = "/home/alice/proj") -> Transcript:
    """A prompt and ``n`` one-line responses; ``poison`` replaces the second response's input_tokens."""
    t = Transcript(session_id=session_id, cwd=cwd)
    t.user("hello there")
    for i in range(n):
        u = usage(inp=10 + i, write=100, read=1000 * i, out=5)
        if i == 1 and poison is not None:
            u["input_tokens"] = poison
        t.assistant(f"{session_id}-m{i}", [text(f"answer {i}")], u, final_output=7)
    return t


# --- 1. validate at the boundary ---------------------------------------------------------------

POISON = [2**64 + 5, 1.5, 1e300, -3, "12", True, [1], {"n": 1}]


@pytest.mark.parametrize("value", POISON, ids=repr)
def test_poison_usage_skips_its_record_and_never_aborts(tmp_path, value):
    logs = tmp_path / "logs"
    _session("good").write_jsonl(logs / "good.jsonl")
    _session("bad", poison=value).write_jsonl(logs / "bad.jsonl")
    db = tmp_path / "t.duckdb"
    s = ingest([logs], db)
    assert s.failed == [] and s.sessions == 2
    assert dict(s.report.skipped) == {"invalid_usage": 1}
    assert any("bad.jsonl:3: invalid usage: usage.input_tokens is" in m for m in s.report.messages), s.report.messages
    # the poisoned response is not stored (not as 0): 2 requests of "bad", with their own inputs
    got = q(db, "SELECT count(*), sum(input_tokens), min(input_tokens) FROM requests JOIN sessions USING (session_key) "
                "GROUP BY session_key ORDER BY 1, 2")
    assert got == [(2, 10 + 12, 10), (3, 10 + 11 + 12, 10)]


def test_poison_on_one_line_of_a_streamed_response_keeps_the_others(tmp_path):
    t = Transcript(session_id="s")
    t.user("hi")
    lines = t.assistant("m1", [text("a"), text("b"), tool_use("x", "Bash", command="ls")],
                        usage(inp=7, write=100, read=900, out=3), final_output=77)
    lines[0]["message"]["usage"]["cache_read_input_tokens"] = -1
    t.write_jsonl(tmp_path / "s.jsonl")
    s = ingest([tmp_path / "s.jsonl"], tmp_path / "t.duckdb")
    assert dict(s.report.skipped) == {"invalid_usage": 1}
    assert q(tmp_path / "t.duckdb", "SELECT count(*), sum(input_tokens), sum(cache_read), sum(output_tokens) "
                                    "FROM requests") == [(1, 7, 900, 77)]
    assert q(tmp_path / "t.duckdb", "SELECT count(*) FROM blocks WHERE role = 'assistant'") == [(2,)]


@pytest.mark.parametrize("value", [2**64 + 5, -3, "12", 1.5])
def test_poison_usage_in_other_formats(tmp_path, value):
    log = codex_fixture()
    tc = next(r for r in log.records if r["type"] == "event_msg" and r["payload"].get("type") == "token_count")
    tc["payload"]["info"]["last_token_usage"]["input_tokens"] = value
    cop = copilot_records()
    next(r for r in cop if r["type"] == "assistant.message")["data"]["outputTokens"] = value
    chat = gemini_chat_doc()
    chat["messages"][1]["tokens"]["cached"] = value
    for mod, name, body in ((codex, "rollout.jsonl", "\n".join(json.dumps(r) for r in log.records)),
                            (copilot, "events.jsonl", "\n".join(json.dumps(r) for r in cop)),
                            (gemini_chat, "chat.jsonl", json.dumps(chat, indent=2))):
        path = tmp_path / name
        path.write_text(body + "\n")
        report = ReadReport()
        tr = mod.read_session(path, KEYS, "d", "f", report)
        assert report.skipped["invalid_usage"] == 1, (mod, report.messages)
        assert all(checks.valid_count(v) is not None for c in checks_usage_columns() for v in tr.requests[c])


def checks_usage_columns():
    return ("input_tokens", "cache_read", "cache_write_5m", "cache_write_1h", "output_tokens")


def test_valid_counts():
    assert [checks.valid_count(v) for v in (0, 12, 12.0, 2**40 - 1)] == [0, 12, 12, 2**40 - 1]
    assert [checks.valid_count(v) for v in (2**40, -1, 1.5, 1e300, float("inf"), "12", True, None)] == [None] * 8


def test_poison_file_beside_the_real_corpus_stores_every_good_file(tmp_path):
    """Acceptance: a poison-usage file beside the 146 entire-cli files: the good files are stored, no traceback."""
    corpus = shared_logs("entire-cli")
    poison = tmp_path / "poison"
    for i, value in enumerate([2**64 + 5, 1.5, 1e300, -3, "12"]):
        _session(f"poison-{i}", poison=value).write_jsonl(poison / f"p{i}.jsonl")
    db = tmp_path / "t.duckdb"
    r = subprocess.run([sys.executable, "-m", "replay.cli", "ingest", str(corpus), str(poison), "--db", str(db),
                        "--json"], capture_output=True, text=True, timeout=600, cwd=ROOT,
                       env={**os.environ, "CTXREPLAY_INGEST_BATCH_BLOCKS": "1"})  # a batch per file: copies replace stored ones
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    s = json.loads(r.stdout)
    assert s["failed"] == [] and s["files"] == 146 + 5
    assert s["skipped_lines"]["invalid_usage"] == 5
    assert s["sessions"] == 146 - 1 - len(s["duplicate_sessions"]) + 5  # one chat file holds only a warning
    # A copy stored in an earlier batch (batches close by size or by time, so where depends on the
    # machine's speed) keeps its 'ok' row under a newer 'duplicate' version: count each file's latest.
    latest_ok = "SELECT count(*) FROM (SELECT arg_max(status, version) AS s FROM source_files GROUP BY file_key) WHERE s = 'ok'"
    assert q(db, latest_ok)[0][0] == 146 + 5 - len(s["duplicate_sessions"])


def test_a_file_whose_values_do_not_fit_fails_alone(tmp_path, monkeypatch):
    logs = tmp_path / "logs"
    for name in ("a", "b", "c"):
        basic_session(session_id=name).write_jsonl(logs / f"{name}.jsonl")
    real = claude_code.read_session

    def buggy(main, *a, **k):  # a reader bug: a value out of its column's range
        tr = real(main, *a, **k)
        if main.name == "b.jsonl":
            tr.blocks["tokens"][0] = 2**40
        return tr

    monkeypatch.setattr(claude_code, "read_session", buggy)
    db = tmp_path / "t.duckdb"
    s = ingest([logs], db)
    assert [Path(f).name for f, _ in s.failed] == ["b.jsonl"] and "does not fit" in s.failed[0][1]
    assert s.sessions == 2 and q(db, "SELECT count(*) FROM sessions") == [(2,)]


def test_an_interrupted_ingest_keeps_the_batches_written_and_a_rerun_resumes(tmp_path, monkeypatch):
    logs = tmp_path / "logs"
    for i in range(5):
        basic_session(session_id=f"s{i}").write_jsonl(logs / f"s{i}.jsonl")
    ref = tmp_path / "ref.duckdb"
    ingest([logs], ref)
    db = tmp_path / "t.duckdb"
    calls = []
    real = store.write_sessions

    def dies_on_third(con, batch):
        calls.append(len(batch))
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(con, batch)

    monkeypatch.setattr(store, "write_sessions", dies_on_third)
    with pytest.raises(KeyboardInterrupt):
        ingest([logs], db, batch_blocks=1)  # every file is a batch of its own
    assert q(db, "SELECT count(*) FROM sessions") == [(2,)]
    monkeypatch.setattr(store, "write_sessions", real)
    s = ingest([logs], db)
    assert (s.unchanged, s.ingested) == (2, 3)
    for table in ("sessions", "requests", "blocks"):
        assert q(db, f"SELECT * FROM {table} ORDER BY ALL") == q(ref, f"SELECT * FROM {table} ORDER BY ALL")


# --- 2. one session, one count --------------------------------------------------------------------

def _live_and_backup(tmp_path: Path, n_backup: int = 2, n_live: int = 5) -> tuple[Path, Path]:
    live = _session("S", n=n_live)
    backup = _session("S", n=n_backup)
    backup.records = live.records[: len(backup.records)]  # an older, shorter copy: same uuids and ids
    return backup.write_jsonl(tmp_path / "backup" / "S.jsonl"), live.write_jsonl(tmp_path / "live" / "S.jsonl")


def _requests(db):
    return q(db, "SELECT count(*), sum(input_tokens), sum(cache_read), count(DISTINCT session_key) FROM requests")[0]


@pytest.mark.parametrize("order", ["backup first", "live first"])
def test_a_prefix_copy_is_stored_once_in_one_run(tmp_path, order):
    backup, live = _live_and_backup(tmp_path)
    paths = [backup.parent, live.parent] if order == "backup first" else [live.parent, backup.parent]
    db = tmp_path / "t.duckdb"
    s = ingest(paths, db)
    ref = tmp_path / "ref.duckdb"
    ingest([live], ref)
    assert _requests(db) == _requests(ref) and _requests(db)[0] == 5
    assert s.sessions == 1 and s.duplicate_sessions == [(str(backup), str(live))]
    assert q(db, "SELECT status, duplicate_of IS NOT NULL FROM source_files ORDER BY version, status") in (
        [("duplicate", True), ("ok", False)], [("ok", False), ("duplicate", True), ("duplicate", True)],
        [("ok", False), ("ok", False), ("duplicate", True)])
    again = ingest(paths, db)
    assert (again.ingested, again.unchanged) == (0, 2)


def test_a_longer_copy_ingested_later_replaces_the_stored_one(tmp_path):
    backup, live = _live_and_backup(tmp_path)
    db = tmp_path / "t.duckdb"
    first = ingest([backup], db)
    assert first.sessions == 1 and _requests(db)[0] == 2
    second = ingest([live], db)
    assert second.sessions == 1 and second.duplicate_sessions[0][1] == str(live)
    assert "ingested earlier" in second.duplicate_sessions[0][0]
    assert _requests(db)[0] == 5 and _requests(db)[3] == 1
    third = ingest([backup, live], db)
    assert (third.ingested, third.unchanged) == (0, 2) and _requests(db)[0] == 5
    # the backup grows past the live file: now it is the longest copy
    longer = _session("S", n=7)
    longer.write_jsonl(backup)
    fourth = ingest([backup, live], db)
    assert fourth.new_versions == 1 and _requests(db)[:1] + _requests(db)[3:] == (7, 1)


def test_a_shorter_copy_ingested_later_is_a_duplicate(tmp_path):
    backup, live = _live_and_backup(tmp_path)
    db = tmp_path / "t.duckdb"
    ingest([live], db)
    s = ingest([backup], db)
    assert s.sessions == 0 and s.duplicate_sessions == [(str(backup), f"a file ingested earlier (file key "
                                                                      f"{s.duplicate_sessions[0][1][-17:-1]})")]
    assert _requests(db)[0] == 5 and not s.nothing_usable


def test_a_moved_project_is_one_session_and_diverged_copies_are_two(tmp_path):
    db = tmp_path / "t.duckdb"
    _session("M", cwd="/home/alice/old").write_jsonl(tmp_path / "a" / "M.jsonl")
    _session("M", cwd="/home/alice/new").write_jsonl(tmp_path / "b" / "M.jsonl")  # other bytes, same ids
    s = ingest([tmp_path / "a", tmp_path / "b"], db)
    assert s.sessions == 1 and len(s.duplicate_sessions) == 1
    # same session id, but each copy has responses the other lacks: two sessions
    x, y = _session("D"), _session("D")
    y.assistant("D-other", [text("fork")], usage(inp=50))
    x.assistant("D-mine", [text("fork")], usage(inp=60))
    x.write_jsonl(tmp_path / "c" / "D.jsonl")
    y.write_jsonl(tmp_path / "d" / "D.jsonl")
    s = ingest([tmp_path / "c", tmp_path / "d"], db)
    assert s.sessions == 2 and s.duplicate_sessions == []
    # same message ids under another session id: not a copy
    _session("E").write_jsonl(tmp_path / "e" / "E.jsonl")
    other = _session("E")
    other.session_id = "F"
    for r in other.records:
        r["sessionId"] = "F"
    other.write_jsonl(tmp_path / "f" / "F.jsonl")
    s = ingest([tmp_path / "e", tmp_path / "f"], db)
    assert s.sessions == 2 and s.duplicate_sessions == []


def test_duplicate_sessions_are_in_the_json_summary(tmp_path):
    backup, live = _live_and_backup(tmp_path)
    r = subprocess.run([sys.executable, "-m", "replay.cli", "ingest", str(backup), str(live), "--db",
                        str(tmp_path / "t.duckdb"), "--json"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["duplicate_sessions"] == [{"file": str(backup), "kept": str(live)}]


def test_requests_are_keyed_by_message_id_and_request_id(tmp_path):
    t = Transcript(session_id="k")
    t.user("hi")
    a = t.assistant("same-id", [text("a"), text("b")], usage(inp=5, out=1), final_output=30)
    b = t.assistant("same-id", [text("c")], usage(inp=9, out=1), final_output=40)
    for rec in b:
        rec["requestId"] = "req_retry"
    assert a[0]["requestId"] != b[0]["requestId"]
    t.write_jsonl(tmp_path / "k.jsonl")
    tr = claude_code.read_session(tmp_path / "k.jsonl", KEYS, "d", "f", ReadReport())
    # output from each response's last streamed line, not its first
    assert tr.requests["input_tokens"] == [5, 9] and tr.requests["output_tokens"] == [30, 40]


# --- 3. nothing kept unchecked ------------------------------------------------------------------

PLANTED_MODEL = "claude-opus-4-6 /home/victim/x"
PLANTED_TOOL = "Bash /home/victim password=hunter2"
PLANTED_VERSION = "2.1.0 /home/victim/x victim@example.com"
PLANTED_TRIGGER = "auto /home/victim"


def test_planted_values_never_reach_the_database(tmp_path):
    t = basic_session(session_id="planted")
    t.assistant("msg_p1", [tool_use("tp1", PLANTED_TOOL, command="ls")], usage(write=1, read=1), model=PLANTED_MODEL)
    t.tool_result("tp1", "ok")
    t.assistant("msg_p2", [tool_use("tp2", "mcp__x__AKIAIOSFODNN7EXAMPLE")], usage(write=1, read=1))
    t.tool_result("tp2", "ok")
    for r in t.records[-4:]:
        r["version"] = PLANTED_VERSION
    t._base("system", subtype="compact_boundary", compactMetadata={"trigger": PLANTED_TRIGGER, "preTokens": 2**70})
    t.write_jsonl(tmp_path / "logs" / "s.jsonl")
    cop = copilot_records()
    cop[0]["data"]["copilotVersion"] = PLANTED_VERSION
    next(r for r in cop if r["type"] == "assistant.message")["data"]["model"] = PLANTED_MODEL
    (tmp_path / "logs" / "events.jsonl").write_text("\n".join(json.dumps(r) for r in cop) + "\n")
    db = tmp_path / "t.duckdb"
    s = ingest([tmp_path / "logs"], db)
    assert s.failed == [] and s.sessions == 2
    # the MCP tool name is keyed whole (mcp__srv_<hash>__tool_<hash>), and a version is cut to its
    # major.minor.patch (2.1.0) before its grammar is checked: neither is counted as outside its grammar
    assert s.report.pseudonymized == {"model": 2, "tool_name": 1, "trigger": 1}
    _assert_absent(db, ["/home/victim", "victim", "hunter2", "password", "example.com", "AKIAIOSFODNN7EXAMPLE",
                        "opus-4-6 "])
    models = {r[0] for r in q(db, "SELECT DISTINCT model FROM requests")}
    assert "claude-sonnet-4-5" in models and any(m.startswith("model-") and len(m) == 14 for m in models)
    tools = {r[0] for r in q(db, "SELECT DISTINCT tool_name FROM blocks WHERE tool_name IS NOT NULL")}
    assert {"Read", "Edit"} <= tools and sum(t.startswith("tool-") for t in tools) == 1
    assert sum(t.startswith("mcp__srv_") and "__tool_" in t for t in tools) == 1
    versions = q(db, "SELECT agent_version FROM sessions ORDER BY agent ")
    assert versions == [("2.1.0,2.1.50",), ("2.1.0",)]
    assert q(db, "SELECT trigger, pre_tokens FROM compactions") == [(q(db, "SELECT trigger FROM compactions")[0][0], None)]
    assert q(db, "SELECT trigger FROM compactions")[0][0].startswith("trigger-")


@pytest.mark.parametrize("field,value", [
    ("model", "claude-sonnet-4-5-20250929"), ("model", "gpt-5.1-codex-max"), ("model", "gemini-2.5-flash"),
    ("model", "models/gemini-2.5-pro"), ("model", "claude-opus-4@20250514"), ("model", "claude-opus-4-6[1m]"),
    ("model", "anthropic.claude-3-5-sonnet-20241022-v2:0"), ("tool_name", "Read"), ("tool_name", "mcp__github__get_issue"),
    ("tool_name", "container.exec"), ("tool_name", "mcp__plugin_playwright_playwright__browser_navigate"),
    ("agent_version", "2.1.50"), ("agent_version", "0.140.0"), ("agent_version", "1.0"), ("trigger", "manual"),
])
def test_real_names_are_kept(field, value):
    assert checks.acceptable(field, value)


@pytest.mark.parametrize("field,value", [
    ("model", PLANTED_MODEL), ("model", "/home/u/model"), ("model", "gpt@example.com"), ("model", "x" * 102),
    ("model", "models/../../etc"), ("model", "sk-proj-abcdef1234567890abcdef"), ("model", "m\nx"),
    ("tool_name", PLANTED_TOOL), ("tool_name", "mcp__x__AKIAIOSFODNN7EXAMPLE"), ("tool_name", "ghp_" + "a1" * 18),
    ("tool_name", "tool/home/u"), ("tool_name", ""), ("agent_version", PLANTED_VERSION), ("agent_version", "2.1.0/x"),
    ("agent_version", "1.0.0-beta.3"), ("agent_version", "2.1.50-alice"), ("agent_version", "1.2.3.4"),
    ("trigger", PLANTED_TRIGGER),
])
def test_planted_names_are_refused(field, value):
    assert not checks.acceptable(field, value)


# --- 5. encodings and odd first lines -----------------------------------------------------------

def test_invalid_utf8_in_one_string_keeps_the_record(tmp_path):
    t = basic_session(session_id="u")
    clean = t.write_jsonl(tmp_path / "clean.jsonl").read_bytes()
    dirty = clean.replace(b"please look at", b"please \xff\xfe look at", 1)
    dirty = dirty.replace(b"Reading it.", b"Reading \\ud800 it.", 1)  # a lone surrogate escape
    assert dirty != clean
    (tmp_path / "dirty.jsonl").write_bytes(dirty)
    report = ReadReport()
    tr = claude_code.read_session(tmp_path / "dirty.jsonl", KEYS, "d", "f", report)
    ref = claude_code.read_session(tmp_path / "clean.jsonl", KEYS, "d", "f", ReadReport())
    assert dict(report.skipped) == {} and dict(report.repaired) == {"invalid_utf8": 2}
    assert tr.blocks["kind"] == ref.blocks["kind"] and tr.requests == ref.requests
    assert tr.blocks["content_hash"][0] == KEYS.text_hash("please \ufffd\ufffd look at the parser SECRETPROMPT_alpha")
    s = ingest([tmp_path / "dirty.jsonl"], tmp_path / "t.duckdb")
    assert s.failed == [] and s.as_dict()["repaired_lines"] == {"invalid_utf8": 2}


def test_a_first_line_that_is_an_array_is_skipped_not_the_file(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text("[1,2,3]\n" + "".join(json.dumps(r) + "\n" for r in basic_session().records))
    recs = Records(path, ReadReport())
    assert recs.kind == "jsonl"
    s = ingest([path], tmp_path / "t.duckdb")
    assert s.failed == [] and s.sessions == 1 and dict(s.report.skipped) == {"not_an_object": 1}
    # a file that is only one compact array is a Stop-hook dump
    only = tmp_path / "dump.json"
    only.write_text(json.dumps(basic_session(session_id="dump").records))
    assert Records(only, ReadReport()).kind == "array"
    ref = claude_code.read_session(tmp_path / "s.jsonl", KEYS, "d", "f", ReadReport())
    got = claude_code.read_session(only, KEYS, "d", "f", ReadReport())
    assert got.blocks["content_hash"] == ref.blocks["content_hash"]


def test_pretty_array_documents_stream_element_by_element(tmp_path):
    recs = basic_session(session_id="p").records
    ref = claude_code.read_session(basic_session(session_id="p").write_jsonl(tmp_path / "p.jsonl"), KEYS, "d", "f",
                                   ReadReport())
    for indent in (1, 2, 4, "\t"):
        path = tmp_path / f"p{indent!r}.json"
        path.write_text(json.dumps(recs, indent=indent))
        report = ReadReport()
        got = claude_code.read_session(path, KEYS, "d", "f", report)
        assert got.blocks == ref.blocks and dict(report.skipped) == {}
    # a dump cut mid-element keeps the elements before the cut
    text_ = json.dumps(recs, indent=2)
    cut = tmp_path / "cut.json"
    cut.write_text(text_[: text_.index('"msg_a3"')])
    report = ReadReport()
    got = claude_code.read_session(cut, KEYS, "d", "f", report)
    assert dict(report.skipped) == {"truncated_last_line": 1} and got.n_requests == 2


def test_only_the_bytes_hashed_are_read(tmp_path):
    """A live session grows while it is ingested: lines past the hashed size wait for the next ingest."""
    path = basic_session().write_jsonl(tmp_path / "s.jsonl")
    size = path.stat().st_size
    with open(path, "a") as fh:
        fh.write(json.dumps({"type": "user", "sessionId": "sess-1", "uuid": "late",
                             "message": {"role": "user", "content": "appended later"}}) + "\n")
    n_all = sum(1 for _ in Records(path, ReadReport()))
    n_limited = sum(1 for _ in Records(path, ReadReport(), limit=size))
    assert n_all == n_limited + 1


# --- 6. bounded memory ----------------------------------------------------------------------------

_PEAK_READ = r"""
import sys
from pathlib import Path
from replay.ingest.keys import Keyring
from replay.ingest.readers.base import ReadReport
from replay.ingest.readers import claude_code

def hwm():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM"))

keys = Keyring(b"h" * 32)
claude_code.read_session(Path(sys.argv[1]), keys, "d", "f", ReadReport())  # warm up: imports, tokenizer
before = hwm()
tr = claude_code.read_session(Path(sys.argv[2]), keys, "d", "f", ReadReport())
print(tr.n_blocks, hwm() - before)
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmHWM from /proc")
def test_reading_a_large_file_does_not_hold_it(tmp_path):
    t = Transcript(session_id="big")
    t.user("start")
    body = "lorem ipsum dolor sit amet " * 40_000  # ~1 MB per tool result
    for i in range(40):
        t.assistant(f"mb{i}", [tool_use(f"tb{i}", "Read", file_path=f"/p/f{i}.py")], usage(write=1, read=1))
        t.tool_result(f"tb{i}", body + str(i))
    path = t.write_jsonl(tmp_path / "big.jsonl")
    size = path.stat().st_size
    small = basic_session().write_jsonl(tmp_path / "small.jsonl")
    r = subprocess.run([sys.executable, "-c", _PEAK_READ, str(small), str(path)], capture_output=True, text=True,
                       timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    n_blocks, grew = map(int, r.stdout.split())
    assert n_blocks == 81
    # reading the whole file at once held it three times over (bytes, lines, records): 130 MB here;
    # streamed, the peak is one record and its parser's scratch space
    assert grew < size, f"peak grew {grew / 1e6:.1f} MB while reading a {size / 1e6:.1f} MB file"


def test_ingest_memory_bench_runs(tmp_path):
    r = subprocess.run([sys.executable, "bench/ingest.py", "--memory", "--size-mb", "3", "--line-mb", "2", "--tmp",
                        str(tmp_path)], capture_output=True, text=True, timeout=300, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    assert "session file: 3 MB -> peak RSS" in r.stdout and "single long line: 2 MB" in r.stdout


def test_summary_counts_and_old_databases(tmp_path):
    """The source_files column added by migration 4 exists, and the summary's new keys are there."""
    db = tmp_path / "t.duckdb"
    s = ingest([basic_session().write_jsonl(tmp_path / "s.jsonl")], db)
    d = s.as_dict()
    assert {"duplicate_sessions", "repaired_lines", "pseudonymized_values"} <= set(d)
    con = duckdb.connect(str(db), read_only=True)
    try:
        cols = {r[0] for r in con.execute("SELECT column_name FROM duckdb_columns() WHERE table_name = 'source_files'")
                .fetchall()}
    finally:
        con.close()
    assert "duplicate_of" in cols
    assert load.BATCH_SECONDS > 0
