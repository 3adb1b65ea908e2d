"""Task subagents that Claude Code 2.1.x writes inside ``progress`` records (``agent_progress``):
one subagent stream each, every response counted once, in ``usage`` and ``validate`` too."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from click.testing import CliRunner

from replay.cli import main
from replay.ingest.keys import Keyring
from replay.ingest.readers.base import ReadReport
from replay.ingest.readers.claude_code import read_session

from cc_records import Transcript, text, tool_use, usage
from conftest import shared_logs

KEYS = Keyring(b"p" * 32)
USAGE_FIELDS = ("input_tokens", "cache_write_5m", "cache_write_1h", "cache_read", "output_tokens")


def session_with_two_subagents(session_id="sess-p") -> Transcript:
    """A main conversation that starts two Task subagents; their lines interleave in the file,
    each response is one progress record per content block, and a bash progress line sits between."""
    t = Transcript(session_id=session_id, cwd="/home/alice/proj")
    t.user("find the parser and the lexer")
    t.assistant("msg_m1", [text("Two agents."), tool_use("toolu_A", "Task", prompt="find the parser"),
                           tool_use("toolu_B", "Task", prompt="find the lexer")],
                usage(write=4000, read=0, out=2, w1h=4000), final_output=90)
    a = t.subagent("agentA1", "toolu_A", "find the parser")
    b = t.subagent("agentB2", "toolu_B", "find the lexer")
    a.assistant("msg_a1", [{"type": "thinking", "thinking": "look in src"}, text("Reading."),
                           tool_use("toolu_a1", "Read", file_path="/home/alice/proj/src/parser.py")],
                usage(inp=5, write=3000, read=0, out=1, w1h=3000), final_output=70)
    b.assistant("msg_b1", [tool_use("toolu_b1", "Grep", pattern="lex")], usage(inp=4, write=2900, out=1),
                final_output=30)
    t.raw({"type": "progress", "sessionId": session_id, "uuid": "bash-progress-1", "parentUuid": t.parent,
           "data": {"type": "bash_progress", "output": "..."}, "timestamp": "2026-01-01T10:00:30.000Z"})
    a.tool_result("toolu_a1", "def parse(): pass\n")
    b.tool_result("toolu_b1", "src/lexer.py:1:lex\n")
    a.assistant("msg_a2", [text("It is in src/parser.py.")], usage(inp=2, write=40, read=3000, w1h=40),
                final_output=12)
    b.assistant("msg_b2", [text("src/lexer.py")], usage(inp=1, write=25, read=2900), final_output=8)
    t.tool_result("toolu_A", "It is in src/parser.py.")
    t.tool_result("toolu_B", "src/lexer.py")
    t.assistant("msg_m2", [text("Found both.")], usage(write=80, read=4000, w1h=80), final_output=6)
    return t


def progress_usage(records: list[dict]) -> dict[tuple, dict]:
    """Independent count: the usage of each subagent response, one per (agent, message id, request
    id), from its last progress record."""
    last: dict[tuple, dict] = {}
    for r in records:
        inner = (r.get("data") or {}).get("message") if r.get("type") == "progress" else None
        if isinstance(inner, dict) and inner.get("type") == "assistant":
            msg = inner["message"]
            last[(r["data"]["agentId"], msg["id"], inner["requestId"])] = msg["usage"]
    return last


def read(path: Path, subagent_files=None):
    rep = ReadReport()
    return read_session(path, KEYS, "d", "f", rep, subagent_files=subagent_files), rep


def stream_of(tr, agent: str) -> int:
    return tr.streams["stream_id"][tr.streams["agent_id"].index(KEYS.short("agent", agent, 12))]


def test_each_subagent_is_its_own_stream_with_every_response_once(tmp_path):
    t = session_with_two_subagents()
    tr, rep = read(t.write_jsonl(tmp_path / "s.jsonl"))
    assert tr.streams["kind"] == ["main", "progress_subagent", "progress_subagent"]
    want = progress_usage(t.records)
    assert len(want) == 4
    req = tr.requests
    for agent in ("agentA1", "agentB2"):
        sid = stream_of(tr, agent)
        rows = [i for i, s in enumerate(req["stream_id"]) if s == sid]
        mine = [u for (ag, _, _), u in want.items() if ag == agent]
        assert len(rows) == len(mine) == 2
        assert [req["req_idx"][i] for i in rows] == [0, 1]
        assert all(req["has_usage"][i] for i in rows)
        assert sum(req["output_tokens"][i] for i in rows) == sum(u["output_tokens"] for u in mine)
        assert sum(req["input_tokens"][i] for i in rows) == sum(u["input_tokens"] for u in mine)
        assert sum(req["cache_read"][i] for i in rows) == sum(u["cache_read_input_tokens"] for u in mine)
        assert sum(req["cache_write_5m"][i] + req["cache_write_1h"][i] for i in rows) == \
            sum(u["cache_creation_input_tokens"] for u in mine)
    # the subagent's own conversation, in its order: prompt, response, tool result, response
    sa = stream_of(tr, "agentA1")
    kinds = [k for s, k in zip(tr.blocks["stream_id"], tr.blocks["kind"]) if s == sa]
    assert kinds == ["user_text", "thinking", "assistant_text", "tool_use", "tool_result", "assistant_text"]
    pos = [p for s, p in zip(req["stream_id"], req["position"]) if s == sa]
    assert pos == [1, 5]  # the first response follows the prompt; the second the tool result
    turns = [u for s, u in zip(tr.blocks["stream_id"], tr.blocks["user_turn"]) if s == sa]
    assert set(turns) == {1}  # the prompt is the subagent's one user turn
    # the main stream is unchanged by its subagents: 2 requests, its own blocks only
    main_kinds = [k for s, k in zip(tr.blocks["stream_id"], tr.blocks["kind"]) if s == 0]
    assert main_kinds == ["user_text", "assistant_text", "tool_use", "tool_use", "tool_result", "tool_result",
                          "assistant_text"]
    assert req["stream_id"].count(0) == 2
    # progress records that carry a subagent are context now; the bash progress line is not
    assert dict(rep.non_context) == {"progress": 1}
    assert dict(rep.skipped) == {}
    # the subagent's Read is a file read of its own stream, its result linked to its call
    reads = [i for i, (s, k) in enumerate(zip(tr.blocks["stream_id"], tr.blocks["tool_kind"])) if s == sa and k == "read"]
    assert len(reads) == 2 and tr.blocks["tool_use_key"][reads[0]] == tr.blocks["tool_use_key"][reads[1]]
    assert tr.blocks["resource"][reads[0]] == KEYS.path("/home/alice/proj/src/parser.py")


def test_a_progress_line_written_twice_counts_once(tmp_path):
    t = session_with_two_subagents()
    dup = [r for r in t.records if r.get("type") == "progress" and r["data"].get("type") == "agent_progress"]
    # the same subagent line again under a new progress uuid (as a resumed copy or a re-write would)
    again = [json.loads(json.dumps(r)) | {"uuid": f"copy-{i}"} for i, r in enumerate(dup)]
    t.records.extend(again)
    tr, rep = read(t.write_jsonl(tmp_path / "s.jsonl"))
    once, _ = read(session_with_two_subagents().write_jsonl(tmp_path / "once.jsonl"))
    for col in USAGE_FIELDS:
        assert sum(tr.requests[col]) == sum(once.requests[col]), col
    assert tr.n_requests == once.n_requests and tr.n_blocks == once.n_blocks
    assert rep.skipped["duplicate_record"] == len(again)


def test_the_subagent_file_wins_over_its_progress_copy(tmp_path):
    """Where the session keeps the agent's separate file, its progress records are the same
    conversation again: read once, from the file."""
    t = session_with_two_subagents(session_id="sess-f")
    main = t.write_jsonl(tmp_path / "sess-f.jsonl")
    # agent A's file, written from its progress lines (what Claude Code writes to subagents/)
    lines = [r["data"]["message"] | {"sessionId": "sess-f", "isSidechain": True, "agentId": "agentA1"}
             for r in t.records if r.get("type") == "progress" and r["data"].get("agentId") == "agentA1"]
    sub = tmp_path / "sess-f" / "subagents" / "agent-agentA1.jsonl"
    sub.parent.mkdir(parents=True)
    sub.write_text("".join(json.dumps(x) + "\n" for x in lines))
    both, rep = read(main, [sub])
    alone, _ = read(main)
    # agent B from its progress records, agent A from its file
    assert both.streams["kind"] == ["main", "progress_subagent", "subagent"]
    assert alone.streams["kind"] == ["main", "progress_subagent", "progress_subagent"]
    assert both.n_requests == alone.n_requests == 6
    for col in USAGE_FIELDS:
        assert sum(both.requests[col]) == sum(alone.requests[col]), col
    assert rep.non_context["progress:agent_progress(subagent file read)"] == len(lines)
    assert dict(rep.skipped) == {}


def test_responses_without_their_input_lines_still_count(tmp_path):
    """Progress records that carry only the subagent's responses (no prompt, no tool results):
    its requests are stored with their usage, and without agentId the Task call names the agent."""
    t = Transcript(session_id="sess-o")
    t.user("go")
    t.assistant("msg_m1", [tool_use("toolu_T", "Task", prompt="x")], usage(write=2000), final_output=9)
    a = t.subagent("ignored", "toolu_T", "x")
    t.records.pop()  # drop the prompt line
    a.assistant("msg_o1", [tool_use("toolu_o1", "Bash", command="ls")], usage(inp=7, write=1500), final_output=4)
    a.assistant("msg_o2", [text("done")], usage(inp=2, read=1500, write=30), final_output=3)
    for r in t.records:
        if r.get("type") == "progress":
            del r["data"]["agentId"]
    tr, rep = read(t.write_jsonl(tmp_path / "s.jsonl"))
    assert tr.streams["kind"] == ["main", "progress_subagent"]
    assert tr.streams["agent_id"][1] == KEYS.short("agent", "task:toolu_T", 12)
    rows = [i for i, s in enumerate(tr.requests["stream_id"]) if s == 1]
    assert [tr.requests["position"][i] for i in rows] == [0, 1]
    assert [tr.requests["output_tokens"][i] for i in rows] == [4, 3]
    assert [tr.requests["input_tokens"][i] for i in rows] == [7, 2]
    assert all(tr.requests["has_usage"][i] for i in rows)


def test_usage_and_validate_count_the_subagent_spend(tmp_path):
    t = session_with_two_subagents()
    logs = tmp_path / "logs"
    t.write_jsonl(logs / "proj" / "sess-p.jsonl")
    db = tmp_path / "p.duckdb"
    r = CliRunner().invoke(main, ["ingest", str(logs), "--db", str(db), "-q"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["usage", "--db", str(db), "--json"])
    assert r.exit_code == 0, r.output
    tot = json.loads(r.stdout)["totals"]
    want = defaultdict(int)
    for rec in t.records:
        msg = rec.get("message") if rec.get("type") == "assistant" else None
        if msg:
            want[("main", msg["id"])] = msg["usage"]
    for k, u in progress_usage(t.records).items():
        want[k] = u
    assert tot["requests"] == len(want) == 6
    assert tot["output"] == sum(u["output_tokens"] for u in want.values())
    assert tot["input"] == sum(u["input_tokens"] for u in want.values())
    assert tot["cache_read"] == sum(u["cache_read_input_tokens"] for u in want.values())
    assert tot["cache_write_5m"] + tot["cache_write_1h"] == sum(u["cache_creation_input_tokens"] for u in want.values())
    r = CliRunner().invoke(main, ["validate", "--db", str(db), "--json"])
    assert r.exit_code == 0, r.output
    cal = json.loads(r.stdout)["variants"]["calibrated"]
    assert cal["requests"] == 6


def _entire_cli_counts(folder: Path) -> tuple[dict, dict]:
    """Independent count of the raw logs: (main-stream responses, subagent responses carried by
    progress records), each keyed by (message id, request id), usage from the last line."""
    main_, prog = {}, {}
    for path in sorted(folder.iterdir()):
        for line in path.read_text(errors="replace").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if not isinstance(rec, dict):
                continue
            if rec.get("type") == "assistant" and isinstance(rec.get("message"), dict):
                msg, rid, into = rec["message"], rec.get("requestId"), main_
            elif rec.get("type") == "progress" and isinstance(rec.get("data"), dict) \
                    and isinstance(rec["data"].get("message"), dict) and rec["data"]["message"].get("type") == "assistant":
                msg, rid, into = rec["data"]["message"].get("message") or {}, rec["data"]["message"].get("requestId"), prog
            else:
                continue
            if isinstance(msg.get("usage"), dict) and msg.get("id") and msg.get("model") != "<synthetic>":
                into[(msg["id"], rid)] = msg["usage"]
    return main_, prog


def test_entire_cli_usage_includes_the_progress_responses(tmp_path):
    logs = shared_logs("entire-cli")
    db = tmp_path / "e.duckdb"
    r = CliRunner().invoke(main, ["ingest", str(logs), "--db", str(db), "-q"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["usage", "--db", str(db), "--json", "--agent", "claude-code"])
    assert r.exit_code == 0, r.output
    tot = json.loads(r.stdout)["totals"]
    main_, prog = _entire_cli_counts(logs)
    assert prog and not set(prog) & set(main_)  # subagent responses live only in progress records
    every = main_ | prog
    assert tot["requests"] == len(every)
    assert tot["output"] == sum(u.get("output_tokens", 0) for u in every.values())
    assert tot["input"] == sum(u.get("input_tokens", 0) for u in every.values())
    assert tot["cache_read"] == sum(u.get("cache_read_input_tokens", 0) for u in every.values())
    assert tot["cache_write_5m"] + tot["cache_write_1h"] == \
        sum(u.get("cache_creation_input_tokens", 0) for u in every.values())
    # the progress responses are a visible part of the spend, not a rounding error
    assert sum(u.get("cache_read_input_tokens", 0) for u in prog.values()) > 0.01 * tot["cache_read"]
