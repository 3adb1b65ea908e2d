"""GitHub Copilot CLI session event logs -> content-free traces.

Reads ``~/.copilot/session-state/<session>/events.jsonl``: one event per line,
``{"type", "data", "id", "timestamp", "parentId"}``. ``docs/readers.md`` documents the
mapping; in short:

* ``user.message`` is a prompt: its ``transformedContent`` (what the model receives, with the
  injected date) is a ``user_text`` block, each attachment an ``attachment`` block;
* ``assistant.message`` is one API response (one request per ``messageId``, keyed by
  ``apiCallId``): ``reasoningText``/``reasoningOpaque`` -> ``thinking``, ``content`` ->
  ``assistant_text``, each ``toolRequests`` entry -> ``tool_use``. The log records only
  ``outputTokens``: requests carry ``output_tokens`` but ``has_usage = false`` (no input or
  cache usage);
* ``tool.execution_complete`` -> ``tool_result`` (``result.content``, the model's copy; the UI
  copy ``detailedContent`` is ignored; failures use ``error.message``);
* ``system.notification`` (e.g. a background shell finished) is injected for the model ->
  ``attachment``;
* ``system.message`` (the system prompt, resent each interaction) is request overhead, and
  ``session.*``, ``hook.*``, ``permission.*``, ``assistant.turn_*``, ``tool.execution_start``
  (a copy of the tool request) and ``abort`` are non-context.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from replay.ingest.blocktext import canonical_json
from replay.ingest.builder import TraceBuilder
from replay.ingest.checks import InvalidUsage, usage_count
from replay.ingest.keys import Keyring
from replay.ingest.readers.base import ReadReport, Records, read_records
from replay.ingest.readers.fields import SECOND_SESSION, as_list, opt_str, parse_ts, record_ts, text_or_json
from replay.ingest.readers.vocab import copilot_name
from replay.ingest.shell import shell_resource
from replay.ingest.trace import SessionTrace, mcp_kind

AGENT = "copilot-cli"

NON_CONTEXT_PREFIXES = ("session.", "hook.", "permission.", "assistant.turn_", "assistant.intent", "abort",
                        "tool.execution_start", "tool.execution_partial", "tool.execution_progress",
                        "assistant.message_delta", "assistant.reasoning_delta", "assistant.usage", "system.message",
                        "user.ack", "subagent.")

_PATH_TOOLS = {"view": "read", "read": "read", "read_file": "read", "create": "mutate", "edit": "mutate",
               "str_replace_editor": "mutate", "str_replace": "mutate", "insert": "mutate", "write": "mutate",
               "grep": "search", "rg": "search", "search": "search", "glob": "list", "ls": "list", "list": "list"}
_SHELL = frozenset({"bash", "powershell", "shell"})
_SHELL_SESSION = frozenset({"read_bash", "write_bash", "stop_bash", "list_bash", "read_powershell",
                            "write_powershell", "stop_powershell"})
_WEB = frozenset({"web_fetch", "fetch", "web_search"})


def sniff(records: list[tuple[int, dict]]) -> bool:
    """True when the first records look like a Copilot CLI event log."""
    for _, rec in records[:20]:
        t = rec.get("type")
        if isinstance(t, str) and "." in t and isinstance(rec.get("data"), dict):
            if t.split(".", 1)[0] in ("session", "user", "assistant", "tool", "system", "hook"):
                return True
        if "sessionId" in rec or "payload" in rec:
            return False
    return False


def _copilot_tool(name: str, args: Any, keys: Keyring, cwd: str | None) -> tuple[str, str | None, int | None, int | None]:
    d = args if isinstance(args, dict) else {}
    if name in _SHELL:
        return shell_resource(d.get("command"), cwd, keys)
    if name in _SHELL_SESSION:
        return "shell", None, None, None
    kind = _PATH_TOOLS.get(name)
    if kind:
        p = d.get("path") or d.get("file_path")
        if not (isinstance(p, str) and p) and kind in ("search", "list"):
            p = cwd
        start = end = None
        rng = d.get("view_range")
        if kind == "read" and isinstance(rng, list) and rng and all(isinstance(x, int) for x in rng):
            start = max(1, rng[0])
            end = rng[1] if len(rng) > 1 and rng[1] > 0 else None
        return kind, keys.path(p, cwd) if isinstance(p, str) and p else None, start, end
    if name in _WEB:
        return "web", None, None, None
    return mcp_kind(name) if "mcp" in name.lower() or "/" in name else "other", None, None, None


class _CopilotReader:
    def __init__(self, b: TraceBuilder):
        self.b = b
        self.st = b.new_stream("main")
        self.cwd: str | None = None
        self.model: str | None = None
        self.session_id: str | None = None
        self.messages: set[str] = set()

    def add(self, line: int, rec: dict) -> None:
        t = rec.get("type")
        d = rec.get("data")
        ts = record_ts(rec.get("timestamp"), self.b.report, self.b.path, line)
        if not isinstance(t, str):
            self.b.report.skip("malformed_record", self.b.path, line, "event without a type")
            return
        if not isinstance(d, dict):
            self.b.report.skip("malformed_record", self.b.path, line, "event without a data object")
            return
        if t == "session.start":
            self._session_start(d, line)
        elif t == "session.model_change" and isinstance(d.get("newModel"), str):
            self.model = d["newModel"]
        handler = self._CONTEXT_EVENTS.get(t)
        if handler is not None:
            try:
                handler(self, line, d, ts)
            except InvalidUsage as e:
                self.b.report.skip("invalid_usage", self.b.path, line, str(e))
        elif t.startswith(NON_CONTEXT_PREFIXES):
            self.b.report.non_context[copilot_name(t)] += 1
        else:
            self.b.report.skip("unknown_type", self.b.path, line, "unknown event type")

    def _session_start(self, d: dict, line: int) -> None:
        sid = d.get("sessionId")
        if isinstance(sid, str) and self.session_id is None:
            self.session_id = sid
        elif isinstance(sid, str) and sid != self.session_id:
            self.b.report.repair("second_session", self.b.path, line, SECOND_SESSION)
        ver = d.get("copilotVersion") or d.get("version")
        if isinstance(ver, str):
            self.b.versions.add(ver)
        ctx = d.get("context") if isinstance(d.get("context"), dict) else {}
        if isinstance(ctx.get("cwd"), str) and ctx["cwd"]:
            self.cwd = ctx["cwd"]
            self.b.cwd = self.b.cwd or ctx["cwd"]

    def _user_message(self, line: int, d: dict, ts: int | None) -> None:
        st = self.st
        st.open_req = None
        text = d.get("transformedContent") if isinstance(d.get("transformedContent"), str) else d.get("content")
        text = text if isinstance(text, str) else canonical_json(text)
        st.user_turn += 1
        self.b.add_block(st, ts, "user", "user_text", text)
        for att in as_list(d, "attachments", self.b.report, self.b.path, line):
            self.b.add_block(st, ts, "user", "attachment", canonical_json(att))

    def _tool_complete(self, line: int, d: dict, ts: int | None) -> None:
        self.st.open_req = None
        res = d.get("result") if isinstance(d.get("result"), dict) else {}
        content = res.get("content")
        if content is None and isinstance(d.get("error"), dict):
            content = d["error"].get("message")
        self.b.tool_result(self.st, ts, opt_str(d, "toolCallId"), text_or_json(content),
                           is_error=d.get("success") is False)

    def _notification(self, line: int, d: dict, ts: int | None) -> None:
        self.st.open_req = None
        content = d.get("content")
        text = content if isinstance(content, str) else canonical_json(content)
        self.b.add_block(self.st, ts, "user", "attachment", text)

    def _assistant(self, line: int, d: dict, ts: int | None) -> None:
        st = self.st
        output_tokens = usage_count(d, "outputTokens")  # before anything is added: a bad count skips the event
        mid = opt_str(d, "messageId")
        if mid is not None:
            if mid in self.messages:
                self.b.report.skip("duplicate_record", self.b.path, line, "assistant message id seen earlier")
                return
            self.messages.add(mid)
        model = d.get("model") if isinstance(d.get("model"), str) and d.get("model") else self.model
        key = d.get("apiCallId") or d.get("requestId") or mid or f"line:{line}"
        row = self.b.open_request(st, ts, model, str(key))
        self.b.set_usage(row, output_tokens=output_tokens, has_usage=False)
        rtext = d.get("reasoningText") if isinstance(d.get("reasoningText"), str) else ""
        ropaque = d.get("reasoningOpaque") if isinstance(d.get("reasoningOpaque"), str) else ""
        if rtext or ropaque:
            self.b.add_block(st, ts, "assistant", "thinking", rtext or ropaque,
                             (rtext + "\0" + ropaque).encode("utf-8", "surrogatepass"))
        content = d.get("content")
        if isinstance(content, str) and content:
            self.b.add_block(st, ts, "assistant", "assistant_text", content)
        elif content and not isinstance(content, str):
            self.b.add_block(st, ts, "assistant", "assistant_text", canonical_json(content))
        for tr in as_list(d, "toolRequests", self.b.report, self.b.path, line):
            if isinstance(tr, dict):
                name = str(tr.get("name") or "")
                args = tr.get("arguments")
                target = _copilot_tool(name, args, self.b.keys, self.cwd)
                self.b.tool_use(st, ts, name, args, opt_str(tr, "toolCallId"), *target)

    _CONTEXT_EVENTS = {
        "user.message": _user_message, "assistant.message": _assistant,
        "tool.execution_complete": _tool_complete, "system.notification": _notification,
    }


def read_session(main: Path, keys: Keyring, dataset: str, file_key: str, report: ReadReport,
                 subagent_files: list[Path] | None = None, data: bytes | None = None,
                 records: Records | None = None, limits: dict | None = None) -> SessionTrace | None:
    """Read one Copilot CLI event log into a SessionTrace.

    Raises FileError when the file is not a Copilot CLI event log; bad lines are skipped and counted.
    """
    records = read_records(main, data, report, sniff,
                           "not a Copilot CLI event log (no session./user./assistant. events)", records)
    b = TraceBuilder(AGENT, keys, dataset, file_key, main, report)
    r = _CopilotReader(b)
    for line, rec in records:
        r.add(line, rec)
    return b.finish(r.session_id or main.stem, identity=r.session_id)
