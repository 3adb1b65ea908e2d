"""Codex CLI, Gemini CLI and Copilot CLI readers: hand-written fixtures and the shared corpus.

Fixtures are invented here; the shared corpus (../shared/logs) is only read, never copied.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from replay.ingest.keys import Keyring
from replay.ingest.readers import codex, copilot, gemini
from replay.ingest.readers.base import FileError, ReadReport
from replay.ingest.shell import classify_shell, shell_resource
from replay.ingest.trace import BLOCK_KINDS, TOOL_KINDS

from conftest import shared_logs

KEYS = Keyring.for_dataset(b"\x01" * 32, "test")
CWD = "/home/bob/widget"


def _write(tmp_path: Path, name: str, records: list, bad_lines: dict[int, str] | None = None) -> Path:
    lines = [json.dumps(r) for r in records]
    for at, text in sorted((bad_lines or {}).items(), reverse=True):
        lines.insert(at, text)
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def _read(mod, path: Path):
    report = ReadReport()
    tr = mod.read_session(path, KEYS, "test", "fk", report)
    return tr, report


def _strings(tr) -> str:
    """Every string value in every column of a trace, joined."""
    vals = [v for v in tr.session.values() if isinstance(v, str)]
    for table in (tr.streams, tr.requests, tr.blocks, tr.compactions):
        for col in table.values():
            vals.extend(v for v in col if isinstance(v, str))
    return "\0".join(vals)


def _check_columns(tr, agent: str) -> None:
    assert tr.session["agent"] == agent
    assert tr.session["models"]
    assert set(tr.blocks["kind"]) <= set(BLOCK_KINDS)
    assert set(k for k in tr.blocks["tool_kind"] if k) <= set(TOOL_KINDS)
    n = tr.n_blocks
    assert all(len(col) == n for col in tr.blocks.values())
    assert all(len(col) == tr.n_requests for col in tr.requests.values())
    for sid in set(tr.blocks["stream_id"]):
        pos = [p for s, p in zip(tr.blocks["stream_id"], tr.blocks["pos"]) if s == sid]
        assert pos == list(range(len(pos)))
    for sid, pos in zip(tr.requests["stream_id"], tr.requests["position"]):
        assert 0 <= pos <= tr.streams["n_blocks"][tr.streams["stream_id"].index(sid)]


# =========================================================================================
# Codex fixture
# =========================================================================================

PROMPT = "please tidy the frobnicator module"
SUMMARY = "summary: frobnicator tidied, tests pending"
PATCH = "*** Begin Patch\n*** Update File: src/lib.py\n@@\n-old_frob()\n+new_frob()\n*** Update File: src/other.py\n*** End Patch\n"
SED_OUT = "def frobnicate(widget):\n    return widget.spin()\n"


def _ts(i: int) -> str:
    return f"2026-03-01T10:00:{i:02d}.000Z"


class CodexLog:
    def __init__(self):
        self.records: list[dict] = []
        self.total = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "reasoning_output_tokens": 0, "total_tokens": 0}

    def add(self, type_: str, payload: dict) -> None:
        self.records.append({"timestamp": _ts(len(self.records)), "type": type_, "payload": payload})

    def item(self, **payload) -> None:
        self.add("response_item", payload)

    def event(self, **payload) -> None:
        self.add("event_msg", payload)

    def usage(self, inp: int, cached: int, out: int, reasoning: int) -> dict:
        last = {"input_tokens": inp, "cached_input_tokens": cached, "output_tokens": out,
                "reasoning_output_tokens": reasoning, "total_tokens": inp + out}
        self.total = {k: self.total[k] + last[k] for k in self.total}
        info = {"total_token_usage": dict(self.total), "last_token_usage": last, "model_context_window": 272000}
        self.event(type="token_count", info=info, rate_limits=None)
        return last

    def repeat_usage(self) -> None:
        prev = next(r for r in reversed(self.records) if r["payload"].get("type") == "token_count")
        self.event(**json.loads(json.dumps(prev["payload"])))


def _msg(role: str, text: str) -> dict:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def codex_fixture() -> CodexLog:
    log = CodexLog()
    log.add("session_meta", {"id": "sess-codex-1", "cwd": CWD, "cli_version": "0.150.0", "base_instructions": {"text": "You are a test agent."}})
    log.event(type="task_started", turn_id="t1")
    log.item(**_msg("developer", "<permissions>sandbox off</permissions>"))
    log.item(**_msg("user", "# AGENTS.md instructions for the widget repo"))
    log.add("turn_context", {"cwd": CWD, "model": "gpt-test-1"})
    log.item(**_msg("user", PROMPT))
    log.event(type="user_message", message=PROMPT)
    # call 1: reasoning + text + a sed read; its tool output comes before its token_count
    log.item(type="reasoning", id="rs_1", summary=[], encrypted_content="gAAAAencrypted1")
    log.item(**{**_msg("assistant", "Reading the module first."), "id": "msg_1"})
    log.event(type="agent_message", message="Reading the module first.")
    log.item(type="function_call", name="exec_command", call_id="call_sed",
             arguments=json.dumps({"cmd": "sed -n '10,20p' src/app.py", "workdir": CWD}))
    log.item(type="function_call_output", call_id="call_sed",
             output="Chunk ID: 1\nProcess exited with code 0\nOutput:\n" + SED_OUT)
    log.usage(1000, 800, 120, 40)
    log.repeat_usage()  # Codex repeats token_count with unchanged totals: one API call
    # call 2: two reasoning items + a patch
    log.item(type="reasoning", id="rs_2", summary=[{"type": "summary_text", "text": "plan the patch"}])
    log.item(type="reasoning", id="rs_3", summary=[])
    log.item(type="custom_tool_call", name="apply_patch", call_id="call_patch", input=PATCH, status="completed")
    log.item(type="custom_tool_call_output", call_id="call_patch", output="Exit code: 0\nOutput:\nSuccess.\n")
    log.event(type="patch_apply_end", call_id="call_patch")
    log.usage(1300, 1000, 90, 31)
    # call 3: final answer
    log.item(**_msg("assistant", "Done tidying."))
    log.usage(1400, 1200, 20, 0)
    log.event(type="task_complete", turn_id="t1")
    # auto compaction mid-turn
    log.event(type="task_started", turn_id="t2")
    log.item(**_msg("user", "now run the tests"))
    log.event(type="user_message", message="now run the tests")
    log.item(type="function_call", name="exec_command", call_id="call_ls", arguments=json.dumps({"cmd": "ls -la tests"}))
    log.item(type="function_call_output", call_id="call_ls", output="Process exited with code 2\nOutput:\nno such dir\n")
    log.usage(1500, 1300, 15, 0)
    log.add("compacted", {"message": "", "replacement_history": [
        _msg("user", PROMPT), _msg("user", "now run the tests"), _msg("developer", "<permissions>sandbox off</permissions>"),
        _msg("user", SUMMARY),
    ]})
    log.repeat_usage()
    log.event(type="context_compacted")
    log.item(**_msg("assistant", "Tests pass."))
    log.usage(600, 0, 10, 0)
    log.item(type="ghost_snapshot", ghost_commit={"id": "abc"})
    log.item(type="mystery_item")
    return log


@pytest.fixture
def codex_trace(tmp_path):
    log = codex_fixture()
    path = _write(tmp_path, "rollout.jsonl", log.records, bad_lines={10: "{this is not json"})
    tr, report = _read(codex, path)
    return tr, report, log


def test_codex_token_count_without_its_last_usage_takes_the_change_of_totals(tmp_path):
    """Hostile-input audit (2026-11-28): a token_count whose totals moved but without
    last_token_usage was dropped as "no info", so its call merged into the next one (4 requests
    of 5, their tokens counted under another); with none of them, one request of 0 tokens. The
    call's usage is now the change of the totals, counted as ``usage_from_totals``; a cached
    count above the input is counted (``inconsistent_usage``), not silently clamped."""
    whole, _ = _read(codex, _write(tmp_path, "whole.jsonl", codex_fixture().records))
    fields = ("input_tokens", "cache_read", "output_tokens", "has_usage")
    for drop in ("one", "all"):
        log = codex_fixture()
        counts = [r for r in log.records if r["payload"].get("type") == "token_count"]
        for r in counts if drop == "all" else counts[2:3]:
            del r["payload"]["info"]["last_token_usage"]
        tr, report = _read(codex, _write(tmp_path, f"{drop}.jsonl", log.records))
        assert tr.n_requests == whole.n_requests, drop
        assert all(tr.requests[f] == whole.requests[f] for f in fields), drop
        assert report.repaired["usage_from_totals"] == (1 if drop == "one" else 5)  # repeats are not calls
    log = codex_fixture()
    last = next(r for r in log.records if r["payload"].get("type") == "token_count")["payload"]["info"]
    last["last_token_usage"]["cached_input_tokens"] = 10 ** 6
    tr, report = _read(codex, _write(tmp_path, "cached.jsonl", log.records))
    assert report.repaired["inconsistent_usage"] == 1 and tr.requests["cache_read"][0] == 1000


def test_a_field_that_should_be_a_list_costs_only_itself(tmp_path):
    """Second hostile-input audit (2026-11-28): a Codex reasoning item whose summary is a number,
    or a Copilot message whose attachments or toolRequests are not a list, failed the whole file
    ("internal error ... TypeError"), or read a string character by character. The field is left
    out and counted (``malformed_field``, with the line); the rest is read."""
    log = codex_fixture()
    item = next(r for r in log.records if r["payload"].get("type") == "reasoning")
    item["payload"]["summary"] = 5
    tr, report = _read(codex, _write(tmp_path, "rollout.jsonl", log.records))
    whole, _ = _read(codex, _write(tmp_path, "whole.jsonl", codex_fixture().records))
    assert tr.n_requests == whole.n_requests and report.repaired["malformed_field"] == 1
    recs = copilot_records()
    user = next(r for r in recs if r.get("type") == "user.message")
    user["data"]["attachments"] = "abcdef"
    tr, report = _read(copilot, _write(tmp_path, "events.jsonl", recs))
    ok, _ = _read(copilot, _write(tmp_path, "ok.jsonl", copilot_records()))
    assert report.repaired["malformed_field"] == 1 and tr.n_requests == ok.n_requests
    assert tr.blocks["kind"].count("attachment") <= ok.blocks["kind"].count("attachment")
    recs = copilot_records()
    asst = next(r for r in recs if r.get("type") == "assistant.message" and r["data"].get("toolRequests"))
    asst["data"]["toolRequests"] = 7
    tr, report = _read(copilot, _write(tmp_path, "events2.jsonl", recs))
    assert report.repaired["malformed_field"] == 1 and tr.n_requests == ok.n_requests


def test_a_second_session_in_one_file_is_counted_and_a_forks_parent_is_not(tmp_path):
    """Second hostile-input audit (2026-11-28): two rollouts in one file (`cat a b`) were read as one
    session without a word. They still are (a file is one trace), but counted (``second_session``);
    a fork's copy of its parent's session_meta (the shared codex-2026 corpus has 8) is not."""
    one, two = codex_fixture().records, codex_fixture().records
    two[0] = {**two[0], "payload": {**two[0]["payload"], "id": "sess-codex-2"}}
    tr, report = _read(codex, _write(tmp_path, "cat.jsonl", one + two))
    assert report.repaired["second_session"] == 1 and tr is not None
    fork = codex_fixture().records
    meta = fork[0]
    fork[0] = {**meta, "payload": {**meta["payload"], "id": "sess-fork", "forked_from_id": "sess-codex-1"}}
    fork.insert(1, meta)  # the parent's session_meta, as Codex writes it after a fork's own
    grand = {**meta, "payload": {**meta["payload"], "id": "sess-grandparent"}}
    fork.insert(2, grand)  # and a grandparent's, before any item (review: forks of forks)
    _, report = _read(codex, _write(tmp_path, "fork.jsonl", fork))
    assert "second_session" not in report.repaired
    recs = copilot_records()
    start = next(r for r in recs if r.get("type") == "session.start")
    again = {**start, "data": {**start["data"], "sessionId": "another"}}
    _, report = _read(copilot, _write(tmp_path, "events.jsonl", recs + [again]))
    assert report.repaired["second_session"] == 1


def test_codex_requests_one_per_new_token_count_with_usage_mapped(codex_trace):
    tr, report, _ = codex_trace
    r = tr.requests
    assert tr.n_requests == 5  # six token_count events with info, two of them repeats
    assert report.non_context["event_msg:token_count(repeat)"] == 2
    assert r["input_tokens"] == [200, 300, 200, 200, 600]  # input - cached
    assert r["cache_read"] == [800, 1000, 1200, 1300, 0]
    assert r["output_tokens"] == [120, 90, 20, 15, 10]  # reasoning is part of output_tokens
    assert r["cache_write_5m"] == [0] * 5 and r["cache_write_1h"] == [0] * 5
    assert all(r["has_usage"]) and not any(r["ttl_split_known"])
    assert set(r["model"]) == {"gpt-test-1"}
    assert len(set(r["msg_key"])) == 5
    _check_columns(tr, "codex")
    assert tr.session["agent_version"] == "0.150.0"
    assert tr.session["session_id"] == KEYS.short("session_id", "sess-codex-1", 16)


def test_codex_request_sits_before_its_output_items(codex_trace):
    tr, _, _ = codex_trace
    b, r = tr.blocks, tr.requests
    kinds = b["kind"]
    # developer + AGENTS.md (attachments) + prompt, then call 1's reasoning
    assert kinds[:4] == ["attachment", "attachment", "user_text", "thinking"]
    assert r["position"][0] == 3
    # call 1 output: thinking, text, tool_use; then its tool_result; call 2 starts after it
    assert kinds[3:7] == ["thinking", "assistant_text", "tool_use", "tool_result"]
    assert r["position"][1] == 7
    assert b["req_idx"][3:6] == [0, 0, 0] and b["req_idx"][6] is None
    assert b["req_idx"][7:10] == [1, 1, 1]
    assert r["user_turn"][:3] == [1, 1, 1] and r["user_turn"][3] == 2


def test_codex_reasoning_tokens_from_usage(codex_trace):
    tr, _, _ = codex_trace
    b = tr.blocks
    think = [(i, b["req_idx"][i], b["tokens"][i]) for i, k in enumerate(b["kind"]) if k == "thinking"]
    assert [(q, t) for _, q, t in think] == [(0, 40), (1, 16), (1, 15)]  # 31 split over two items


def test_codex_tools_classified(codex_trace):
    tr, _, _ = codex_trace
    b = tr.blocks
    rows = [i for i, k in enumerate(b["kind"]) if k in ("tool_use", "tool_result")]
    got = [(b["kind"][i], b["tool_name"][i], b["tool_kind"][i], b["resource"][i], b["line_start"][i], b["line_end"][i], b["is_error"][i]) for i in rows]
    app = KEYS.path("src/app.py", CWD)
    lib = KEYS.path("src/lib.py", CWD)
    tests = KEYS.path("tests", CWD)
    assert got == [
        ("tool_use", "exec_command", "read", app, 10, 20, False),
        ("tool_result", "exec_command", "read", app, 10, 20, False),
        ("tool_use", "apply_patch", "mutate", lib, None, None, False),
        ("tool_result", "apply_patch", "mutate", lib, None, None, False),
        ("tool_use", "exec_command", "list", tests, None, None, False),
        ("tool_result", "exec_command", "list", tests, None, None, True),
    ]
    assert b["tool_use_key"][rows[0]] == b["tool_use_key"][rows[1]]
    assert b["args_hash"][rows[0]] == b["args_hash"][rows[1]]
    out = "Chunk ID: 1\nProcess exited with code 0\nOutput:\n" + SED_OUT
    assert b["content_hash"][rows[1]] == KEYS.text_hash(out)
    assert b["bytes"][rows[1]] == len(out.encode())


def test_codex_compaction_starts_partition_with_replacement_history(codex_trace):
    tr, _, _ = codex_trace
    b, r, c = tr.blocks, tr.requests, tr.compactions
    assert c["partition"] == [1] and c["trigger"] == ["auto"]
    pos = c["pos"][0]
    assert c["pre_tokens"] == [1515]
    assert b["kind"][pos:pos + 4] == ["user_text", "user_text", "attachment", "compact_summary"]
    assert set(b["partition"][pos:]) == {1} and set(b["partition"][:pos]) == {0}
    assert b["content_hash"][pos + 3] == KEYS.text_hash(SUMMARY)
    assert r["partition"] == [0, 0, 0, 0, 1]
    assert r["position"][4] == pos + 4
    assert tr.session["n_compactions"] == 1


def test_codex_bad_lines_and_non_context_counted(codex_trace):
    tr, report, _ = codex_trace
    assert report.skipped == Counter({"invalid_json": 1, "unknown_type": 1})
    nc = report.non_context
    assert nc["response_item:ghost_snapshot"] == 1
    assert nc["event_msg:agent_message"] == 1 and nc["event_msg:user_message"] == 2
    assert nc["turn_context"] == 1 and nc["session_meta"] == 1


def test_codex_no_raw_text(codex_trace):
    tr, _, _ = codex_trace
    s = _strings(tr)
    for needle in (PROMPT, SUMMARY, "frobnicat", "widget", "bob", "src/app.py", "sed -n", "Reading the module", "sandbox off"):
        assert needle not in s


def test_codex_manual_compaction_and_missing_usage(tmp_path):
    log = CodexLog()
    log.add("session_meta", {"id": "s2", "cwd": CWD})
    log.add("turn_context", {"cwd": CWD, "model": "gpt-test-1"})
    log.item(**_msg("user", "hello"))
    log.event(type="user_message", message="hello")
    log.item(**_msg("assistant", "hi"))
    log.usage(100, 0, 5, 0)
    log.event(type="task_started", turn_id="t2")
    log.add("compacted", {"message": "", "replacement_history": [_msg("user", "hello"), {"type": "compaction", "encrypted_content": "ENC"}]})
    log.event(type="task_complete", turn_id="t2")
    log.item(type="reasoning", summary=[])  # interrupted: no token_count follows
    log.event(type="turn_aborted", reason="interrupted")
    tr, report = _read(codex, _write(tmp_path, "r.jsonl", log.records))
    assert tr.compactions["trigger"] == ["manual"]
    pos = tr.compactions["pos"][0]
    assert tr.blocks["kind"][pos:pos + 2] == ["user_text", "compact_summary"]
    assert tr.n_requests == 2 and tr.requests["has_usage"] == [True, False]
    assert report.skipped == Counter({"missing_usage": 1})


def test_codex_legacy_rollout_infers_requests(tmp_path):
    records = [
        {"id": "legacy-1", "timestamp": "2025-05-01T10:00:00Z", "instructions": None},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]},
        {"type": "reasoning", "id": "rs", "summary": []},
        {"type": "function_call", "name": "shell", "arguments": json.dumps({"command": ["bash", "-lc", "ls src"]}), "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1", "output": json.dumps({"output": "a.py\n", "metadata": {"exit_code": 0}})},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "two files"}]},
    ]
    tr, report = _read(codex, _write(tmp_path, "legacy.jsonl", records))
    assert tr.n_requests == 2 and tr.requests["position"] == [1, 4]
    assert not any(tr.requests["has_usage"])
    assert report.skipped == Counter()
    i = tr.blocks["kind"].index("tool_use")
    assert tr.blocks["tool_kind"][i] == "list" and tr.blocks["resource"][i] == KEYS.path("src")  # no cwd known


def test_codex_rejects_other_formats(tmp_path):
    p = _write(tmp_path, "cc.jsonl", [{"type": "user", "sessionId": "x", "uuid": "u", "message": {"role": "user", "content": "hi"}}])
    with pytest.raises(FileError):
        _read(codex, p)
    with pytest.raises(FileError):
        _read(gemini, p)
    with pytest.raises(FileError):
        _read(copilot, p)


# =========================================================================================
# Shell command classification
# =========================================================================================

SHELL_TABLE = [
    ("cat src/a.py", "read", "src/a.py", None, None),
    ("cat -n src/a.py", "read", "src/a.py", None, None),
    ("sed -n '5,40p' src/a.py", "read", "src/a.py", 5, 40),
    ("sed -n '7p' src/a.py", "read", "src/a.py", 7, 7),
    ("sed -n '100,$p' src/a.py", "read", "src/a.py", 100, None),
    ("sed -n -e '1,9p' src/a.py", "read", "src/a.py", 1, 9),
    ("sed -n '1,5p;9,12p' src/a.py", "read", "src/a.py", None, None),
    ("nl -ba src/a.py", "read", "src/a.py", None, None),
    ("nl -ba src/a.py | sed -n '30,60p'", "read", "src/a.py", 30, 60),
    ("cat src/a.py | head -n 25", "read", "src/a.py", 1, 25),
    ("head -n 50 README.md", "read", "README.md", 1, 50),
    ("head -20 README.md", "read", "README.md", 1, 20),
    ("head README.md", "read", "README.md", 1, 10),
    ("tail -n +30 log.txt", "read", "log.txt", 30, None),
    ("tail -n 30 log.txt", "read", "log.txt", None, None),
    ("tail -f log.txt", "shell", None, None, None),
    ("cat a.py b.py", "read", None, None, None),
    ("cat src/*.py", "read", None, None, None),
    ("rg -n 'def frob' src", "search", "src", None, None),
    ("rg -n -g '*.py' frob src/lib", "search", "src/lib", None, None),
    ("rg frob", "search", ".", None, None),
    ("rg -e frob -e spin src tests", "search", None, None, None),
    ("rg --files src", "list", "src", None, None),
    ("grep -rn frob .", "search", ".", None, None),
    ("grep -n frob src/a.py", "search", "src/a.py", None, None),
    ("git grep -n frob", "search", ".", None, None),
    ("ps aux | grep frob", "shell", None, None, None),
    ("ls", "list", ".", None, None),
    ("ls -la src", "list", "src", None, None),
    ("find src -name '*.py' | sort | head -n 40", "list", "src", None, None),
    ("tree -L 2 docs", "list", "docs", None, None),
    ("apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: docs/new.md\n+hello\n*** Update File: src/a.py\n*** End Patch\nEOF", "mutate", "docs/new.md", None, None),
    ("cat > notes.md <<'EOF'\nsome notes\nEOF", "mutate", "notes.md", None, None),
    ("sed -i 's/a/b/' src/a.py", "mutate", "src/a.py", None, None),
    ("rm -f build.log", "mutate", "build.log", None, None),
    ("cd src && sed -n '1,20p' a.py", "read", "src/a.py", 1, 20),
    ("cd /opt/proj && cat setup.cfg", "read", "/opt/proj/setup.cfg", None, None),
    ("echo '---' && cat a.py && echo '---'", "read", "a.py", None, None),
    ("test -f a.py && sed -n '1,8p' a.py || true", "read", "a.py", 1, 8),
    ("cat a.py 2>/dev/null || echo missing", "read", "a.py", None, None),
    ("cat $FILE", "read", None, None, None),
    ("cat a.py; ls src", "shell", None, None, None),
    ("git status --short", "shell", None, None, None),
    ("pytest -q tests/test_a.py", "shell", None, None, None),
    ("FOO=1 timeout 30 rg -n frob src 2>&1 | head -n 5", "search", "src", None, None),
    (["bash", "-lc", "sed -n '3,4p' src/a.py"], "read", "src/a.py", 3, 4),
    (["bash", "-lc", "ls docs"], "list", "docs", None, None),
    (["apply_patch", "*** Begin Patch\n*** Delete File: old.py\n*** End Patch\n"], "mutate", "old.py", None, None),
    (["git", "diff"], "shell", None, None, None),
]


@pytest.mark.parametrize("command,kind,path,start,end", SHELL_TABLE, ids=[str(i) for i in range(len(SHELL_TABLE))])
def test_shell_classification(command, kind, path, start, end):
    t = classify_shell(command)
    assert (t.kind, t.path, t.line_start, t.line_end) == (kind, path, start, end)


def test_shell_resource_pseudonymizes_against_cwd():
    kind, res, ls, le = shell_resource("cd pkg && sed -n '2,3p' mod.py", "/srv/app", KEYS)
    assert (kind, ls, le) == ("read", 2, 3)
    assert res == KEYS.path("/srv/app/pkg/mod.py") and "mod" not in res.split(".")[0]


# =========================================================================================
# Gemini fixture
# =========================================================================================


def gemini_records() -> list[dict]:
    def ev(i, **kw):
        return {"timestamp": _ts(i), **kw}

    return [
        {"type": "message", "role": "user", "content": "wrapper echo of the frobnicator task"},
        ev(1, type="init", session_id="gem-1", model="gemini-test-pro"),
        ev(2, type="message", role="user", content=PROMPT),
        ev(3, type="message", role="assistant", content="Let me ", delta=True),
        ev(4, type="message", role="assistant", content="look.", delta=True),
        ev(5, type="tool_use", tool_name="read_file", tool_id="rf-1", parameters={"file_path": "src/app.py", "offset": 9, "limit": 5}),
        ev(6, type="tool_result", tool_id="rf-1", status="success", output=SED_OUT),
        ev(7, type="tool_use", tool_name="run_shell_command", tool_id="sh-1", parameters={"command": "rg -n frob src"}),
        ev(8, type="tool_use", tool_name="glob", tool_id="gl-1", parameters={"pattern": "**/*.py"}),
        ev(9, type="tool_result", tool_id="sh-1", status="success", output="src/a.py:3:frob"),
        ev(10, type="tool_result", tool_id="gl-1", status="error", error={"type": "x", "message": "glob failed"}),
        ev(11, type="tool_use", tool_name="write_file", tool_id="wf-1", parameters={"file_path": "src/new.py", "content": "x = 1\n"}),
        ev(12, type="tool_result", tool_id="wf-1", status="success"),
        ev(13, type="message", role="assistant", content="All done.", delta=True),
        ev(14, type="result", status="success", stats={"total_tokens": 999, "input_tokens": 900, "output_tokens": 99, "cached": 500, "tool_calls": 4}),
        {"type": "message", "role": "user", "content": "wrapper echo again"},
        ev(16, type="init", session_id="gem-2", model="gemini-test-pro"),
        ev(17, type="message", role="user", content="second run prompt"),
        ev(18, type="tool_use", tool_name="list_directory", tool_id="ls-1", parameters={"dir_path": "/work/x"}),
    ]


def test_gemini_fixture(tmp_path):
    recs = gemini_records()
    tr, report = _read(gemini, _write(tmp_path, "g.jsonl", recs, bad_lines={3: "[1, 2]"}))
    _check_columns(tr, "gemini-cli")
    assert report.skipped == Counter({"not_an_object": 1})
    assert report.non_context["message:outside_run"] == 2
    assert tr.streams["stream_id"] == [0, 1] and tr.streams["kind"] == ["main", "main"]
    assert tr.streams["n_requests"] == [4, 1]
    b, r = tr.blocks, tr.requests
    kinds0 = [k for s, k in zip(b["stream_id"], b["kind"]) if s == 0]
    assert kinds0 == ["user_text", "assistant_text", "tool_use", "tool_result", "tool_use", "tool_use",
                      "tool_result", "tool_result", "tool_use", "tool_result", "assistant_text"]
    # text + read_file in one request; the parallel pair in the next; write_file; the final text
    assert r["position"][:4] == [1, 4, 8, 10]
    assert not any(r["has_usage"]) and set(r["model"]) == {"gemini-test-pro"}
    assert b["content_hash"][1] == KEYS.text_hash("Let me look.") and b["bytes"][1] == len("Let me look.")
    assert (b["tool_kind"][2], b["resource"][2], b["line_start"][2], b["line_end"][2]) == ("read", KEYS.path("src/app.py"), 10, 14)
    assert (b["tool_kind"][4], b["resource"][4]) == ("search", KEYS.path("src"))
    assert b["tool_kind"][5] == "list" and b["is_error"][7] and not b["is_error"][6]
    assert b["tool_kind"][8] == "mutate" and b["bytes"][9] == 0
    assert r["req_idx"] == [0, 1, 2, 3, 0] and b["req_idx"][8] == 2 and b["req_idx"][10] == 3
    s = _strings(tr)
    for needle in (PROMPT, "frob", "wrapper echo", "src/app.py", "second run prompt"):
        assert needle not in s


def test_gemini_stream_whose_first_init_was_cut_is_read_as_one_run(tmp_path):
    """Hostile-input audit (2026-11-28): with the first init line cut, every event counted as a
    wrapper's echo and the file gave 0 sessions; the model's activity now starts a run (counted as
    ``missing_init``). Its first prompt, before any model output, still counts as an echo: with
    no init to go by, the reader cannot tell one from the other."""
    recs = gemini_records()[1:15]  # the first run without its wrapper echo
    lines = [json.dumps(r) for r in recs]
    lines[0] = lines[0][: len(lines[0]) // 2]  # the init line cut in the middle
    p = tmp_path / "cut.jsonl"
    p.write_text("\n".join(lines) + "\n")
    tr, report = _read(gemini, p)
    whole, _ = _read(gemini, _write(tmp_path, "whole.jsonl", recs))
    assert tr is not None and tr.n_requests == whole.n_requests == 4
    assert report.repaired == Counter({"missing_init": 1}) and report.skipped == Counter({"invalid_json": 1})
    assert report.non_context["message:outside_run"] == 1  # the prompt
    assert tr.blocks["kind"] == whole.blocks["kind"][1:]
    # after a run's result, events before the next init stay a wrapper's echo (a run started before)
    tr, report = _read(gemini, _write(tmp_path, "two.jsonl", gemini_records()))
    assert "missing_init" not in report.repaired


# =========================================================================================
# Copilot fixture
# =========================================================================================


def copilot_records() -> list[dict]:
    n = iter(range(100))

    def ev(type_, **data):
        i = next(n)
        return {"type": type_, "data": data, "id": f"id-{i}", "timestamp": _ts(i), "parentId": None}

    return [
        ev("session.start", sessionId="cop-1", copilotVersion="1.0.99", context={"cwd": CWD}),
        ev("session.model_change", newModel="claude-test-4"),
        ev("system.message", role="system", content="You are a test CLI."),
        ev("user.message", content=PROMPT, transformedContent="<current_datetime>x</current_datetime>\n\n" + PROMPT, attachments=[]),
        ev("assistant.turn_start", turnId="0"),
        ev("assistant.message", messageId="m1", model="claude-test-4", content="Looking.", reasoningText="think about frobs",
           reasoningOpaque="opaque-sig", outputTokens=77, apiCallId="api-1",
           toolRequests=[{"toolCallId": "t1", "name": "view", "arguments": {"path": f"{CWD}/src/app.py", "view_range": [5, 9]}},
                         {"toolCallId": "t2", "name": "bash", "arguments": {"command": "rg -n frob src", "description": "search"}}]),
        ev("tool.execution_start", toolCallId="t1", toolName="view", arguments={}),
        ev("hook.start", hookInvocationId="h", hookType="postToolUse", input={}),
        ev("hook.end", hookInvocationId="h", hookType="postToolUse", success=True),
        ev("tool.execution_complete", toolCallId="t2", success=False, error={"message": "rg: src: not found"}),
        ev("tool.execution_complete", toolCallId="t1", success=True, result={"content": "5. def frobnicate():", "detailedContent": "UI copy"}),
        ev("assistant.turn_end", turnId="0"),
        ev("system.notification", content="<system_notification>shell 3 finished</system_notification>", kind={"type": "shell_completed"}),
        ev("assistant.message", messageId="m2", model="claude-test-4", content="Frobnicator tidied.", toolRequests=[], outputTokens=12, apiCallId="api-2"),
        ev("assistant.message", messageId="m2", model="claude-test-4", content="Frobnicator tidied.", toolRequests=[], outputTokens=12, apiCallId="api-2"),
        ev("weird.event"),
        ev("abort", reason="user_initiated"),
    ]


def test_copilot_fixture(tmp_path):
    tr, report = _read(copilot, _write(tmp_path, "events.jsonl", copilot_records()))
    _check_columns(tr, "copilot-cli")
    assert report.skipped == Counter({"duplicate_record": 1, "unknown_type": 1})
    assert report.non_context["system.message"] == 1 and report.non_context["tool.execution_start"] == 1
    b, r = tr.blocks, tr.requests
    assert b["kind"] == ["user_text", "thinking", "assistant_text", "tool_use", "tool_use", "tool_result", "tool_result",
                         "attachment", "assistant_text"]
    assert r["position"] == [1, 8] and r["output_tokens"] == [77, 12] and r["input_tokens"] == [0, 0]
    assert not any(r["has_usage"]) and r["model"] == ["claude-test-4", "claude-test-4"]
    assert b["content_hash"][0] == KEYS.text_hash("<current_datetime>x</current_datetime>\n\n" + PROMPT)
    app = KEYS.path("src/app.py", CWD)
    assert (b["tool_kind"][3], b["resource"][3], b["line_start"][3], b["line_end"][3]) == ("read", app, 5, 9)
    assert (b["tool_kind"][4], b["resource"][4]) == ("search", KEYS.path("src", CWD))
    assert b["tool_use_key"][5] == b["tool_use_key"][4] and b["is_error"][5] and not b["is_error"][6]
    assert b["content_hash"][6] == KEYS.text_hash("5. def frobnicate():")
    assert tr.session["agent_version"] == "1.0.99"
    s = _strings(tr)
    for needle in (PROMPT, "frob", "bob", "UI copy", "opaque-sig", "Looking."):
        assert needle not in s


def test_sniffers_tell_formats_apart():
    cc = [(1, {"type": "user", "sessionId": "s", "uuid": "u"})]
    cx = [(i, r) for i, r in enumerate(codex_fixture().records, 1)]
    gm = [(i, r) for i, r in enumerate(gemini_records(), 1)]
    cp = [(i, r) for i, r in enumerate(copilot_records(), 1)]
    assert [codex.sniff(x) for x in (cc, cx, gm, cp)] == [False, True, False, False]
    assert [gemini.sniff(x) for x in (cc, cx, gm, cp)] == [False, False, True, False]
    assert [copilot.sniff(x) for x in (cc, cx, gm, cp)] == [False, False, False, True]


# =========================================================================================
# Shared corpus
# =========================================================================================


def _raw(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _needles(texts: list[str], rng: random.Random, k: int = 40) -> list[str]:
    """Distinctive slices of raw strings (commands, outputs, prompts) to look for in the trace."""
    pool = [t for t in texts if isinstance(t, str) and len(t.strip()) >= 24]
    out = []
    for t in rng.sample(pool, min(k, len(pool))):
        start = rng.randrange(0, max(1, len(t) - 24))
        out.append(t[start:start + 24])
    return out


def test_corpus_codex():
    logs = shared_logs("codex")
    files = sorted(logs.glob("*.jsonl"))
    assert len(files) == 5
    rng = random.Random(7)
    for path in files:
        tr, report = _read(codex, path)
        raw = _raw(path)
        _check_columns(tr, "codex")
        # independent count: token_count events whose total_token_usage changed
        distinct, last, usages = 0, None, []
        for rec in raw:
            p = rec.get("payload") or {}
            if rec["type"] == "event_msg" and p.get("type") == "token_count" and p.get("info"):
                if p["info"]["total_token_usage"] != last:
                    last = p["info"]["total_token_usage"]
                    distinct += 1
                    usages.append(p["info"]["last_token_usage"])
        r = tr.requests
        assert sum(r["has_usage"]) == distinct, path.name
        # requests without usage are responses cut off by an abort or the end of the file: explained skips
        aborts = sum(1 for x in raw if (x.get("payload") or {}).get("type") == "turn_aborted")
        assert set(report.skipped) <= {"missing_usage"}, (path.name, report.messages)
        assert tr.n_requests - distinct == report.skipped["missing_usage"] <= aborts + 1
        assert sum(r["cache_read"]) == sum(u["cached_input_tokens"] for u in usages)
        assert sum(r["input_tokens"]) + sum(r["cache_read"]) == sum(u["input_tokens"] for u in usages)
        assert sum(r["output_tokens"]) == sum(u["output_tokens"] for u in usages)
        # every tool call and output of the file is a block
        items = Counter((x.get("payload") or {}).get("type") for x in raw if x["type"] == "response_item")
        kinds = Counter(tr.blocks["kind"])
        calls = sum(items[t] for t in ("function_call", "custom_tool_call", "local_shell_call", "web_search_call", "tool_search_call"))
        outs = sum(items[t] for t in ("function_call_output", "custom_tool_call_output", "tool_search_output"))
        assert kinds["tool_use"] == calls and kinds["tool_result"] == outs
        assert kinds["thinking"] == items["reasoning"]
        assert tr.session["n_compactions"] == sum(1 for x in raw if x["type"] == "compacted")
        # thinking tokens of a request add up to its recorded reasoning tokens (the items are encrypted)
        think = Counter()
        for q, k, t in zip(tr.blocks["req_idx"], tr.blocks["kind"], tr.blocks["tokens"]):
            if k == "thinking" and q is not None:
                think[q] += t
        with_usage = [q for q, h in zip(r["req_idx"], r["has_usage"]) if h]
        checked = 0
        for q, u in zip(with_usage, usages):
            if q in think and u["reasoning_output_tokens"] > 0:
                assert think[q] == u["reasoning_output_tokens"], (path.name, q)
                checked += 1
        assert checked > 50
        # no raw text: commands, outputs, prompts
        texts = []
        for x in raw:
            p = x.get("payload") or {}
            if p.get("type") == "function_call":
                texts.append(json.loads(p["arguments"]).get("cmd"))
            elif p.get("type") in ("function_call_output", "custom_tool_call_output") and isinstance(p.get("output"), str):
                texts.append(p["output"])
            elif p.get("type") == "message":
                texts.extend(c.get("text") for c in p["content"] if isinstance(c, dict))
        s = _strings(tr)
        for needle in _needles(texts, rng) + ["EntityProcess", "/home/entity"]:
            assert needle not in s, (path.name, needle)


def test_corpus_gemini():
    logs = shared_logs("gemini-cli-stream")
    files = sorted(logs.glob("*.jsonl"))
    assert len(files) == 1
    rng = random.Random(11)
    for path in files:
        tr, report = _read(gemini, path)
        raw = _raw(path)
        _check_columns(tr, "gemini-cli")
        assert dict(report.skipped) == {}, report.messages
        # independent count: maximal runs of model output events (assistant text, tool_use) inside a run
        groups, prev_out = 0, False
        for x in raw:
            out = x["type"] == "tool_use" or (x["type"] == "message" and x.get("role") == "assistant")
            groups += out and not prev_out
            prev_out = out
        assert tr.n_requests == groups
        assert not any(tr.requests["has_usage"])
        assert tr.session["n_streams"] == sum(1 for x in raw if x["type"] == "init")
        kinds = Counter(tr.blocks["kind"])
        assert kinds["tool_use"] == sum(1 for x in raw if x["type"] == "tool_use")
        assert kinds["tool_result"] == sum(1 for x in raw if x["type"] == "tool_result")
        # the run that finished reports its tool calls: they match stream 0
        stats = [x["stats"] for x in raw if x["type"] == "result"]
        uses0 = sum(1 for s, k in zip(tr.blocks["stream_id"], tr.blocks["kind"]) if s == 0 and k == "tool_use")
        assert stats and stats[0]["tool_calls"] == uses0
        texts = [x.get("output") for x in raw] + [x.get("content") for x in raw] + [
            (x.get("parameters") or {}).get("command") for x in raw]
        s = _strings(tr)
        for needle in _needles(texts, rng):
            assert needle not in s, needle


def test_corpus_copilot():
    logs = shared_logs("copilot-cli")
    files = sorted(logs.glob("*.jsonl"))
    assert len(files) == 2
    rng = random.Random(13)
    for path in files:
        tr, report = _read(copilot, path)
        raw = _raw(path)
        _check_columns(tr, "copilot-cli")
        assert dict(report.skipped) == {}, report.messages
        msgs = {x["data"]["messageId"]: x["data"] for x in raw if x["type"] == "assistant.message"}
        assert tr.n_requests == len(msgs)
        assert sum(tr.requests["output_tokens"]) == sum(d["outputTokens"] for d in msgs.values())
        assert not any(tr.requests["has_usage"]) and sum(tr.requests["cache_read"]) == 0
        kinds = Counter(tr.blocks["kind"])
        assert kinds["tool_use"] == sum(len(d["toolRequests"]) for d in msgs.values())
        assert kinds["tool_result"] == sum(1 for x in raw if x["type"] == "tool.execution_complete")
        assert kinds["user_text"] == sum(1 for x in raw if x["type"] == "user.message")
        texts = []
        for x in raw:
            d = x["data"]
            if x["type"] == "tool.execution_complete":
                texts.append((d.get("result") or {}).get("content"))
            elif x["type"] == "assistant.message":
                texts += [d.get("content"), d.get("reasoningText")] + [t["arguments"].get("command") for t in d["toolRequests"]]
            elif x["type"] == "user.message":
                texts.append(d.get("content"))
        s = _strings(tr)
        for needle in _needles(texts, rng) + ["EntityProcess", "/home/entity"]:
            assert needle not in s, needle


# =========================================================================================
# Gemini CLI chat files (one pretty-printed JSON object, whatever the name ends with)
# =========================================================================================

from replay.ingest.readers import gemini_chat  # noqa: E402


def gemini_chat_doc() -> dict:
    def tokens(inp, out, cached, thoughts, tool=0):
        return {"input": inp, "output": out, "cached": cached, "thoughts": thoughts, "tool": tool,
                "total": inp + out + thoughts + tool}

    def call(cid, name, args, response, status="success"):
        return {"id": cid, "name": name, "args": args, "status": status, "timestamp": _ts(5),
                "result": [{"functionResponse": {"id": cid, "name": name, "response": response}}],
                "resultDisplay": "UI copy of the result", "displayName": name.title(), "description": "about " + name,
                "renderOutputAsMarkdown": True}

    return {
        "sessionId": "chat-sess-1", "projectHash": "ab" * 32, "startTime": _ts(0), "lastUpdated": _ts(9),
        "messages": [
            {"id": "u1", "timestamp": _ts(0), "type": "user", "content": PROMPT},
            {"id": "g1", "timestamp": _ts(1), "type": "gemini", "content": "Looking at the frobnicator.",
             "thoughts": [{"subject": "Planning", "description": "think about frobs", "timestamp": _ts(1)}],
             "tokens": tokens(1000, 12, 0, 30), "model": "gemini-test-flash"},
            {"id": "u2", "timestamp": _ts(2), "type": "user", "content": [{"text": "now edit it"}]},
            {"id": "g2", "timestamp": _ts(3), "type": "gemini", "content": "",
             "toolCalls": [call("read_file-1", "read_file", {"file_path": "src/app.py"}, {"output": SED_OUT})],
             "thoughts": [{"subject": "A", "description": "first", "timestamp": _ts(3)},
                          {"subject": "B", "description": "second", "timestamp": _ts(3)}],
             "tokens": tokens(1100, 10, 900, 41, tool=5), "model": "gemini-test-flash"},
            {"id": "g3", "timestamp": _ts(4), "type": "gemini", "content": "",
             "toolCalls": [call("write_file-2", "write_file", {"file_path": "src/app.py", "content": "new frob"},
                                {"error": "permission denied"}, status="error")],
             "tokens": tokens(1200, 8, 1000, 0), "model": "gemini-test-flash"},
            {"id": "i1", "timestamp": _ts(5), "type": "info", "content": "Request cancelled."},
            {"id": "g4", "timestamp": _ts(6), "type": "gemini", "content": "Done with the frobnicator.",
             "tokens": tokens(1300, 6, 1100, 0), "model": "gemini-test-flash"},
            {"id": "w1", "timestamp": _ts(7), "type": "warning", "content": "a UI warning"},
        ],
    }


CHAT_KINDS = ["user_text", "thinking", "assistant_text", "user_text", "thinking", "thinking", "tool_use", "tool_result",
              "tool_use", "tool_result", "assistant_text"]


def test_gemini_chat_file_is_read_whatever_its_name(tmp_path):
    path = tmp_path / "checkpoint.jsonl"  # named .jsonl, as the Entire CLI saves them
    path.write_text(json.dumps(gemini_chat_doc(), indent=2))
    tr, report = _read(gemini_chat, path)
    _check_columns(tr, "gemini-cli")
    assert dict(report.skipped) == {} and dict(report.non_context) == {"message:info": 1, "message:warning": 1}
    b, r = tr.blocks, tr.requests
    assert b["kind"] == CHAT_KINDS
    assert r["position"] == [1, 4, 8, 10] and all(r["has_usage"]) and r["model"] == ["gemini-test-flash"] * 4
    # input includes its cached part; thinking is billed as output; tool-use prompt tokens are input
    assert r["input_tokens"] == [1000, 1100 - 900 + 5, 200, 200] and r["cache_read"] == [0, 900, 1000, 1100]
    assert r["output_tokens"] == [42, 51, 8, 6] and r["cache_write_5m"] == [0] * 4
    assert [t for t, k in zip(b["tokens"], b["kind"]) if k == "thinking"] == [30, 21, 20]
    app = KEYS.path("src/app.py")
    assert (b["tool_kind"][6], b["resource"][6]) == ("read", app) and (b["tool_kind"][8], b["resource"][8]) == ("mutate", app)
    assert b["tool_use_key"][7] == b["tool_use_key"][6] and b["is_error"][9] and not b["is_error"][7]
    assert b["content_hash"][7] == KEYS.text_hash(SED_OUT)
    assert tr.identity == KEYS.short("session_id", "chat-sess-1", 16) == tr.session["session_id"]
    s = _strings(tr)
    for needle in (PROMPT, "frob", "UI copy", "think about", "permission denied", "now edit it"):
        assert needle not in s


def test_gemini_chat_compact_and_truncated(tmp_path):
    doc = gemini_chat_doc()
    pretty = tmp_path / "a.json"
    pretty.write_text(json.dumps(doc, indent=2))
    compact = tmp_path / "b.jsonl"
    compact.write_text(json.dumps(doc))
    ta, _ = _read(gemini_chat, pretty)
    tb, _ = _read(gemini_chat, compact)
    assert ta.blocks == tb.blocks and ta.requests == tb.requests
    # a checkpoint cut while it was written: the messages before the cut are kept
    text = pretty.read_text()
    cut = tmp_path / "c.jsonl"
    cut.write_text(text[: text.index('"id": "g3"') + 20])
    tc, report = _read(gemini_chat, cut)
    assert tc.blocks["kind"] == CHAT_KINDS[:8] and tc.n_requests == 2
    assert dict(report.skipped) == {"truncated_last_line": 1}


def test_gemini_chat_is_told_from_other_formats(tmp_path):
    from replay.ingest.readers.base import Records
    from replay.store.load import reader_for

    chat = tmp_path / "chat.jsonl"
    chat.write_text(json.dumps(gemini_chat_doc(), indent=2))
    assert reader_for(Records(chat, ReadReport())) is gemini_chat
    other = _write(tmp_path, "rollout.jsonl", codex_fixture().records)
    assert reader_for(Records(other, ReadReport())) is codex
    with pytest.raises(FileError, match="not a Gemini CLI chat file"):
        _read(gemini_chat, other)
    # a UI-only chat (one warning) is no session, and no error
    only = tmp_path / "warning.jsonl"
    doc = gemini_chat_doc()
    doc["messages"] = doc["messages"][-1:]
    only.write_text(json.dumps(doc, indent=2))
    tr, report = _read(gemini_chat, only)
    assert tr is None and dict(report.skipped) == {}


def test_gemini_chat_with_a_new_message_type_or_null_session_id_is_still_read(tmp_path):
    """Hostile-input audit (2026-11-28): one message of a type this version does not know among the
    first five, or a null sessionId, sent the whole file to the Claude Code reader: "1 ingested",
    0 sessions. The new type is now skipped alone; a null id takes the file's name."""
    from replay.ingest.readers.base import Records
    from replay.store.load import reader_for

    plain, _ = _read(gemini_chat, _chat_file(tmp_path / "plain.json", gemini_chat_doc()))
    doc = gemini_chat_doc()
    doc["messages"].insert(1, {"id": "z", "timestamp": _ts(1), "type": "tool_group", "content": "x"})
    path = _chat_file(tmp_path / "new.json", doc)
    assert reader_for(Records(path, ReadReport())) is gemini_chat
    tr, report = _read(gemini_chat, path)
    usage = ("input_tokens", "output_tokens", "cache_read", "model")
    assert all(tr.requests[k] == plain.requests[k] for k in usage) and tr.blocks["kind"] == plain.blocks["kind"]
    assert dict(report.skipped) == {"unknown_type": 1}
    doc = gemini_chat_doc()
    doc["sessionId"] = None
    path = _chat_file(tmp_path / "no-id.json", doc)
    assert reader_for(Records(path, ReadReport())) is gemini_chat
    tr, _ = _read(gemini_chat, path)
    assert all(tr.requests[k] == plain.requests[k] for k in usage) and tr.n_requests == 4
    assert tr.session["session_id"] == KEYS.short("session_id", "no-id", 16)


def test_gemini_chat_with_one_unreadable_field_keeps_its_messages_and_a_shapeless_one_fails(tmp_path):
    """Hostile-input audit (2026-11-28): a top-level field nested too deep to parse cost the whole
    file (0 sessions, exit 0); `messages` as an object gave 0 sessions without a word."""
    plain, _ = _read(gemini_chat, _chat_file(tmp_path / "plain.json", gemini_chat_doc()))
    doc = gemini_chat_doc()
    deep = {"sessionId": doc["sessionId"], "projectHash": doc["projectHash"], "startTime": doc["startTime"],
            "junk": "@@DEEP@@", "messages": doc["messages"]}
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(deep, indent=2).replace('"@@DEEP@@"', "[" * 3000 + "]" * 3000))
    tr, report = _read(gemini_chat, path)
    assert tr.n_requests == plain.n_requests and dict(report.skipped) == {"invalid_json": 1}
    doc["messages"] = {"0": doc["messages"][0]}
    with pytest.raises(FileError, match="its messages are a JSON object, not an array of messages"):
        _read(gemini_chat, _chat_file(tmp_path / "obj.json", doc))


def _chat_file(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc, indent=2))
    return path


def test_corpus_gemini_chat_files():
    """The two Gemini CLI chat files of entire-cli/ (named .jsonl): read as documents, no line skipped."""
    from replay.ingest.readers.base import Records

    logs = shared_logs("entire-cli")
    chats = []
    for path in sorted(logs.glob("*.jsonl")):
        with open(path, "rb") as fh:
            if fh.readline().strip() == b"{":
                chats.append(path)
    assert len(chats) == 2
    sessions = 0
    for path in chats:
        recs = Records(path, ReadReport())
        assert recs.kind == "document" and gemini_chat.sniff_document(recs)
        tr, report = _read(gemini_chat, path)
        assert dict(report.skipped) == {}, report.messages
        raw = json.loads(path.read_text())["messages"]
        n_gemini = sum(1 for m in raw if m["type"] == "gemini")
        if tr is None:
            assert n_gemini == 0 and not any(m["type"] == "user" for m in raw)
            continue
        sessions += 1
        _check_columns(tr, "gemini-cli")
        assert tr.n_requests == n_gemini and all(tr.requests["has_usage"])
        assert sum(tr.requests["cache_read"]) == sum(m["tokens"]["cached"] for m in raw if m["type"] == "gemini")
        assert sum(tr.requests["output_tokens"]) == sum(
            m["tokens"]["output"] + m["tokens"].get("thoughts", 0) for m in raw if m["type"] == "gemini")
        kinds = Counter(tr.blocks["kind"])
        assert kinds["tool_use"] == kinds["tool_result"] == sum(len(m.get("toolCalls") or []) for m in raw)
        s = _strings(tr)
        for m in raw:
            if isinstance(m.get("content"), str) and len(m["content"]) > 12:
                assert m["content"] not in s
    assert sessions == 1
