"""Builders for small Claude Code-shaped transcripts used as test fixtures (written here, not copied)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

_ids = itertools.count(1)


def _uuid() -> str:
    return f"00000000-0000-4000-8000-{next(_ids):012d}"


class Transcript:
    def __init__(self, session_id="sess-1", cwd="/home/alice/proj", version="2.1.50", sidechain=False, agent_id=None):
        self.records: list[dict] = []
        self.session_id = session_id
        self.cwd = cwd
        self.version = version
        self.sidechain = sidechain
        self.agent_id = agent_id
        self.parent = None
        self.t = 0

    def _base(self, type_: str, **kw) -> dict:
        self.t += 1
        rec = {
            "parentUuid": self.parent, "isSidechain": self.sidechain, "userType": "external", "cwd": self.cwd,
            "sessionId": self.session_id, "version": self.version, "gitBranch": "main", "type": type_,
            "uuid": _uuid(), "timestamp": f"2026-01-01T10:{self.t // 60:02d}:{self.t % 60:02d}.000Z",
        }
        if self.agent_id:
            rec["agentId"] = self.agent_id
        rec.update(kw)
        self.parent = rec["uuid"]
        self.records.append(rec)
        return rec

    def user(self, text: str, **kw) -> dict:
        return self._base("user", message={"role": "user", "content": text}, **kw)

    def assistant(self, msg_id: str, blocks: list[dict], usage: dict, model="claude-sonnet-4-5", final_output=None):
        """One response split over one line per block, usage repeated, output growing."""
        recs = []
        for i, b in enumerate(blocks):
            u = dict(usage)
            last = i == len(blocks) - 1
            u["output_tokens"] = final_output if (last and final_output is not None) else usage.get("output_tokens", 1)
            recs.append(self._base("assistant", requestId="req_" + msg_id, message={
                "model": model, "id": msg_id, "type": "message", "role": "assistant", "content": [b],
                "stop_reason": None, "usage": u}))
        return recs

    def tool_result(self, tool_use_id: str, content, is_error=False) -> dict:
        return self._base("user", message={"role": "user", "content": [
            {"tool_use_id": tool_use_id, "type": "tool_result", "content": content, "is_error": is_error}]},
            toolUseResult={"stdout": "UI COPY NOT CONTEXT"})

    def _progress(self, agent_id: str, task_id: str, inner: dict, prompt: str) -> dict:
        """A progress record carrying one line of a Task subagent's transcript (Claude Code 2.1.x)."""
        return self._base("progress", data={"message": inner, "normalizedMessages": [], "type": "agent_progress",
                                            "prompt": prompt, "agentId": agent_id},
                          toolUseID="agent_msg_" + task_id, parentToolUseID=task_id)

    def subagent(self, agent_id: str, task_id: str, prompt: str) -> "ProgressAgent":
        """A Task subagent whose conversation this transcript carries in progress records."""
        return ProgressAgent(self, agent_id, task_id, prompt)

    def raw(self, rec: dict) -> dict:
        self.records.append(rec)
        return rec

    def compact(self, summary: str, pre_tokens: int = 1000):
        self._base("system", subtype="compact_boundary", content="Conversation compacted",
                   compactMetadata={"trigger": "auto", "preTokens": pre_tokens})
        return self._base("user", message={"role": "user", "content": summary}, isCompactSummary=True)

    def write_jsonl(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in self.records))
        return path

    def write_json_array(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.records, indent=2))
        return path


class ProgressAgent:
    """Writes a subagent's lines into its parent transcript as progress records, shaped like
    Claude Code 2.1.x's: each response one record per content block, sharing message id,
    request id and usage; the prompt and tool results as user records."""

    def __init__(self, parent: Transcript, agent_id: str, task_id: str, prompt: str):
        self.parent, self.agent_id, self.task_id, self.prompt = parent, agent_id, task_id, prompt
        self.user(prompt)

    def _inner(self, type_: str, **kw) -> dict:
        t = self.parent.t + 1
        return {"type": type_, **kw, "uuid": _uuid(), "timestamp": f"2026-01-01T10:{t // 60:02d}:{t % 60:02d}.500Z"}

    def _emit(self, inner: dict) -> dict:
        return self.parent._progress(self.agent_id, self.task_id, inner, self.prompt)

    def user(self, text_: str) -> dict:
        return self._emit(self._inner("user", message={"role": "user", "content": [{"type": "text", "text": text_}]}))

    def assistant(self, msg_id: str, blocks: list[dict], usage: dict, model="claude-haiku-4-5", final_output=None):
        recs = []
        for i, b in enumerate(blocks):
            u = dict(usage)
            if i == len(blocks) - 1 and final_output is not None:
                u["output_tokens"] = final_output
            recs.append(self._emit(self._inner("assistant", requestId="req_" + msg_id, message={
                "model": model, "id": msg_id, "type": "message", "role": "assistant", "content": [b],
                "stop_reason": None, "usage": u})))
        return recs

    def tool_result(self, tool_use_id: str, content) -> dict:
        return self._emit(self._inner("user", message={"role": "user", "content": [
            {"tool_use_id": tool_use_id, "type": "tool_result", "content": content}]}))


def usage(inp=3, write=0, read=0, out=1, w1h=None):
    u = {"input_tokens": inp, "cache_creation_input_tokens": write, "cache_read_input_tokens": read,
         "output_tokens": out}
    if w1h is not None:
        u["cache_creation"] = {"ephemeral_5m_input_tokens": write - w1h, "ephemeral_1h_input_tokens": w1h}
    return u


def text(t: str) -> dict:
    return {"type": "text", "text": t}


def tool_use(tid: str, name: str, **inp) -> dict:
    return {"type": "tool_use", "id": tid, "name": name, "input": inp}


def basic_session(session_id="sess-1", cwd="/home/alice/proj") -> Transcript:
    """A small session: prompt, a read, a re-read (identical), an edit, a partial read, an answer."""
    t = Transcript(session_id=session_id, cwd=cwd)
    t.user("please look at the parser SECRETPROMPT_alpha")
    t.assistant("msg_a1", [text("Reading it."), tool_use("tu1", "Read", file_path="/home/alice/proj/src/parser.py")],
                usage(write=5000, read=0, out=2, w1h=5000), final_output=40)
    t.tool_result("tu1", "def parse():\n    return 'FILELINE_unique_marker_1'\n")
    t.assistant("msg_a2", [tool_use("tu2", "Read", file_path="src/parser.py")],
                usage(write=60, read=5000, out=3, w1h=60), final_output=25)
    t.tool_result("tu2", "def parse():\n    return 'FILELINE_unique_marker_1'\n")
    t.assistant("msg_a3", [tool_use("tu3", "Edit", file_path="/home/alice/proj/src/parser.py",
                                    old_string="a", new_string="b")],
                usage(write=50, read=5060, w1h=50), final_output=30)
    t.tool_result("tu3", "The file has been updated.")
    t.assistant("msg_a4", [tool_use("tu4", "Read", file_path="/home/alice/proj/src/parser.py", offset=10, limit=20)],
                usage(write=40, read=5110, w1h=40), final_output=20)
    t.tool_result("tu4", [{"type": "text", "text": "10\tline ten"}])
    t.assistant("msg_a5", [text("Done.")], usage(write=30, read=5150, w1h=30), final_output=5)
    return t
