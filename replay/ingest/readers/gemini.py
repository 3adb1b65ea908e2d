"""Gemini CLI ``--output-format stream-json`` transcripts -> content-free traces.

One JSON event per line: ``init`` (session id, model), ``message`` (``role`` user or
assistant; assistant text arrives as ``delta`` chunks), ``tool_use`` (tool name, id,
parameters), ``tool_result`` (status, output, error), ``error`` and ``result`` (final status
and session *totals* in ``stats``). ``docs/readers.md`` documents the mapping; in short:

* every ``init`` starts a new stream (a file may hold several CLI runs, each with its own
  context); lines before the first ``init`` of a run (a wrapper echoing the task) are
  non-context;
* the stream records no per-request usage, so requests are inferred: a request opens at the
  first model output (assistant text or tool call) after user input or a tool result, and
  every request has ``has_usage = false`` (the ``result`` line only carries totals);
* ``tool_result`` without ``output`` (Gemini omits it for e.g. ``write_file``) becomes an
  empty tool_result block.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from replay.ingest.blocktext import canonical_json
from replay.ingest.builder import Stream, TraceBuilder
from replay.ingest.keys import Keyring
from replay.ingest.readers.base import ReadReport, Records, read_records
from replay.ingest.readers.fields import line_range, opt_str, parse_ts, record_ts, text_or_json
from replay.ingest.shell import shell_resource
from replay.ingest.trace import SessionTrace, mcp_kind

AGENT = "gemini-cli"

EVENT_TYPES = frozenset({"init", "message", "tool_use", "tool_result", "error", "result"})

_READ = {"read_file": ("file_path", "absolute_path", "path"), "read_many_files": ("paths",)}
_MUTATE = {"write_file": ("file_path", "absolute_path", "path"), "replace": ("file_path", "absolute_path", "path"),
           "edit": ("file_path", "absolute_path", "path"), "smart_edit": ("file_path",)}
_SEARCH = {"search_file_content": ("dir_path", "path"), "grep": ("dir_path", "path"), "grep_search": ("dir_path", "path"),
           "ripgrep": ("dir_path", "path")}
_LIST = {"glob": ("dir_path", "path"), "list_directory": ("dir_path", "path"), "ls": ("dir_path", "path")}
_WEB = frozenset({"web_fetch", "google_web_search", "web_search"})
_SHELL = frozenset({"run_shell_command", "shell"})


def sniff(records: list[tuple[int, dict]]) -> bool:
    """True when the first records look like a Gemini CLI stream-json transcript."""
    for _, rec in records[:20]:
        t = rec.get("type")
        if t == "init" and "session_id" in rec:
            return True
        if t in ("tool_use", "tool_result") and "tool_id" in rec:
            return True
        if "sessionId" in rec or "payload" in rec or "data" in rec:
            return False
    return False


def _first_str(d: dict, names: tuple[str, ...]) -> str | None:
    for n in names:
        v = d.get(n)
        if isinstance(v, str) and v:
            return v
    return None


def _gemini_tool(name: str, params: Any, keys: Keyring, cwd: str | None) -> tuple[str, str | None, int | None, int | None]:
    d = params if isinstance(params, dict) else {}
    if name in _SHELL:
        here = d.get("dir_path") or d.get("directory")
        here = here if isinstance(here, str) and here else cwd
        return shell_resource(d.get("command"), here, keys)
    if name in _READ:
        p = _first_str(d, _READ[name])
        start, end = line_range(d.get("offset"), d.get("limit"), zero_based=True)  # Gemini offsets are 0-based
        return "read", keys.path(p, cwd) if p else None, start, end
    if name in _MUTATE:
        p = _first_str(d, _MUTATE[name])
        return "mutate", keys.path(p, cwd) if p else None, None, None
    if name in _SEARCH:
        p = _first_str(d, _SEARCH[name]) or cwd
        return "search", keys.path(p, cwd) if p else None, None, None
    if name in _LIST:
        p = _first_str(d, _LIST[name]) or cwd
        return "list", keys.path(p, cwd) if p else None, None, None
    if name in _WEB:
        return "web", None, None, None
    return mcp_kind(name) if name.startswith("mcp") else "other", None, None, None


def _model_activity(t: str | None, rec: dict) -> bool:
    """An event only a run writes: a tool call or result, or the model's own text."""
    return t in ("tool_use", "tool_result") or (t == "message" and rec.get("role") == "assistant")


class _GeminiReader:
    def __init__(self, b: TraceBuilder):
        self.b = b
        self.st: Stream | None = None
        self.model: str | None = None
        self.session_id: str | None = None
        self.text_row: int | None = None  # block row of the assistant text being streamed
        self.text_parts: list[str] = []

    def flush_text(self) -> None:
        if self.text_row is None:
            return
        self.b.rewrite_block(self.text_row, "".join(self.text_parts))
        self.text_row = None
        self.text_parts = []

    def _output(self, line: int, ts: int | None) -> Stream:
        st = self.st
        assert st is not None
        if st.open_req is None:
            self.b.open_request(st, ts, self.model, f"line:{line}")
        return st

    def _input(self) -> None:
        """User input or a tool result: the next model output belongs to a new request."""
        self.flush_text()
        if self.st is not None:
            self.st.open_req = None

    def add(self, line: int, rec: dict, before_init: bool = False) -> None:
        """Add one event; ``before_init`` marks an event directly followed by an ``init``."""
        t = rec.get("type")
        t = t if isinstance(t, str) else None
        ts = record_ts(rec.get("timestamp"), self.b.report, self.b.path, line)
        if t not in EVENT_TYPES:
            self.b.report.skip("unknown_type", self.b.path, line, "unknown event type")
        elif t == "init":
            self._init(rec)
        elif t in ("result", "error"):
            self._input()
            self.b.report.non_context[t] += 1
            if t == "result":
                self.st = None  # the run is over; anything before the next init is not its context
        elif self.st is None and not before_init and not self.b.streams and _model_activity(t, rec):
            # the model at work and no run ever started: the first init was lost (a cut or broken
            # first line); read as one run rather than losing the file as a wrapper's echo
            self.b.report.repair("missing_init", self.b.path, line, "model output with no init line before it: "
                                 "read as one run")
            self._init({})
            self.add(line, rec)
        elif self.st is None or before_init:
            # outside a run (before its init / after its result): a wrapper's echo of the task
            self.b.report.non_context[f"{t}:outside_run"] += 1
        elif t == "message":
            self._message(line, rec, ts)
        elif t == "tool_use":
            self._tool_use(line, rec, ts)
        else:
            self._tool_result(rec, ts)

    def _init(self, rec: dict) -> None:
        self._input()
        self.b.report.non_context["init"] += 1
        sid = rec.get("session_id")
        self.session_id = sid if isinstance(sid, str) else self.session_id
        if isinstance(rec.get("model"), str) and rec["model"]:
            self.model = rec["model"]
        self.st = self.b.new_stream("main", sid if isinstance(sid, str) and self.b.streams else None)

    def _message(self, line: int, rec: dict, ts: int | None) -> None:
        st = self.st
        role = rec.get("role")
        content = rec.get("content")
        text = content if isinstance(content, str) else canonical_json(content)
        if role == "assistant":
            st = self._output(line, ts)
            if rec.get("delta") and self.text_row is not None:
                self.text_parts.append(text)
                return
            self.flush_text()
            self.text_row = self.b.add_block(st, ts, "assistant", "assistant_text", text)
            self.text_parts = [text]
            if not rec.get("delta"):
                self.flush_text()
        elif role == "user":
            self._input()
            st.user_turn += 1
            self.b.add_block(st, ts, "user", "user_text", text)
        else:
            self.b.report.skip("malformed_record", self.b.path, line, "message with an unknown role")

    def _tool_use(self, line: int, rec: dict, ts: int | None) -> None:
        self.flush_text()
        st = self._output(line, ts)
        name = str(rec.get("tool_name") or "")
        params = rec.get("parameters")
        tid = opt_str(rec, "tool_id")
        self.b.tool_use(st, ts, name, params, tid, *_gemini_tool(name, params, self.b.keys, None))

    def _tool_result(self, rec: dict, ts: int | None) -> None:
        st = self.st
        self._input()
        out = rec.get("output")
        if out is None and isinstance(rec.get("error"), dict):
            out = rec["error"].get("message")
        self.b.tool_result(st, ts, opt_str(rec, "tool_id"), text_or_json(out), is_error=rec.get("status") == "error")


def read_session(main: Path, keys: Keyring, dataset: str, file_key: str, report: ReadReport,
                 subagent_files: list[Path] | None = None, data: bytes | None = None,
                 records: Records | None = None, limits: dict | None = None) -> SessionTrace | None:
    """Read one Gemini CLI stream-json transcript into a SessionTrace (one stream per ``init``).

    Raises FileError when the file is not such a transcript; bad lines are skipped and counted.
    """
    records = read_records(main, data, report, sniff,
                           "not a Gemini CLI stream-json transcript (no init/tool_use events)", records)
    b = TraceBuilder(AGENT, keys, dataset, file_key, main, report)
    r = _GeminiReader(b)
    prev = None  # one event of lookahead: a message directly followed by an init is a wrapper's echo
    for line, rec in records:
        if prev is not None:
            r.add(prev[0], prev[1], before_init=rec.get("type") == "init" and prev[1].get("type") == "message")
        prev = (line, rec)
    if prev is not None:
        r.add(prev[0], prev[1])
    r.flush_text()
    return b.finish(r.session_id or main.stem, identity=r.session_id)
