"""Claude Code transcripts -> content-free traces.

Reads ``~/.claude/projects/**/<session>.jsonl`` files, Stop-hook dumps (one JSON array of
the same records) and separate ``<session>/subagents/agent-*.jsonl`` files. Quirks handled
(see ``../shared/logs/README.md``):

* one API response is written as several lines sharing ``message.id`` (and ``requestId``)
  that repeat the same ``usage``: one request per message id and request id, usage counted
  once, ``output_tokens`` taken from the last line (earlier lines carry partial streaming
  counts); a line whose usage holds an invalid count is skipped whole (``invalid_usage``);
* ``toolUseResult`` is a UI copy of a tool result, not model context: ignored;
* ``NON_CONTEXT_TYPES`` (progress, snapshots, UI state) and UI-only ``system`` lines are non-context;
* ``message.diagnostics.cache_miss_reason`` (2.1.119+): ``miss_reason`` and ``miss_tokens``;
* ``system``/``compact_boundary`` starts a new compaction partition; the following
  ``isCompactSummary`` user line is its ``compact_summary`` block;
* inline sidechains (``isSidechain`` in 1.0.x files, timestamps out of order) become one
  stream per sidechain root; separate subagent files become one stream each;
* Claude Code 2.1.x writes a Task subagent's conversation into the main file as well, one
  ``progress`` record (``data.type: agent_progress``) per line of the subagent's transcript:
  ``data.message`` is that line (a user or assistant record with its own ``uuid``, ``requestId``
  and ``message``), ``data.agentId`` names the subagent. Each agent becomes one stream of kind
  ``progress_subagent`` (read like a subagent file: one request per message id and request id, usage counted
  once), unless the session has that agent's separate file, which then is the stream (the
  two are copies of one conversation; reading both would count its spend twice). The
  cumulative ``data.normalizedMessages`` copies are not read: every response they hold is
  also a ``data.message``;
* resumed sessions copy earlier records with the old ``sessionId``: they are context of the
  resumed conversation and kept, their requests flagged ``resumed_copy`` (the live session
  is the last ``sessionId`` of the file, known at its end: the file is read in one pass);
* tool_result content is a string or a list of text/image parts;
* client events (``requests.client_event``): a resume is the synthetic "No response requested."
  answer or a ``SessionStart`` hook's progress record with source ``resume``; one with source
  ``clear`` after the first request starts a partition without a summary (trigger ``clear``).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from replay.ingest.blocktext import canonical_json, tool_result_parts
from replay.ingest.builder import Stream, TraceBuilder
from replay.ingest.checks import InvalidUsage, cache_writes, usage_count
from replay.ingest.keys import Keyring
from replay.ingest.readers.base import FileError, ReadReport, Records, read_records
from replay.ingest.readers.fields import line_range, opt_str, parse_ts, record_ts
from replay.ingest.readers.vocab import SYSTEM_SUBTYPES
from replay.ingest.trace import PROGRESS_SUBAGENT, SessionTrace, tool_kind

AGENT = "claude-code"

NON_CONTEXT_TYPES = frozenset(  # the last six: 2.1.6x+ client UI state, never sent to the model
    {"progress", "file-history-snapshot", "queue-operation", "summary", "last-prompt", "pr-link",
     "ai-title", "custom-title", "mode", "permission-mode", "bridge-session", "agent-name"})
CONTEXT_TYPES = frozenset({"user", "assistant", "attachment"})
SYNTHETIC_MODEL = "<synthetic>"
# SessionStart hook sources after a stream's first request: a resume is a client event of the
# next request (``trace.CLIENT_EVENTS``); /clear starts a new partition (the conversation is gone)
SESSION_START_RESUME = "resume"
SESSION_START_CLEAR = "clear"
# how Claude Code opens the meta user message that holds a loaded skill's content
SKILL_LOAD = "Base directory for this skill:"


def is_skill_part(part: Any) -> bool:
    """A text part that opens a loaded skill's content (in a meta user message)."""
    return isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str) \
        and part["text"].startswith(SKILL_LOAD)


_FILE_TOOLS_PATH_KEY = {
    "Read": "file_path",
    "Edit": "file_path",
    "Write": "file_path",
    "MultiEdit": "file_path",
    "NotebookRead": "notebook_path",
    "NotebookEdit": "notebook_path",
    "Grep": "path",
    "Glob": "path",
    "LS": "path",
}


def looks_like_claude_code(rec: dict[str, Any]) -> bool:
    t = rec.get("type")
    return "sessionId" in rec or (isinstance(t, str) and t in CONTEXT_TYPES | NON_CONTEXT_TYPES | {"system"})


def _sniff(records: list[tuple[int, dict]]) -> bool:
    return any(looks_like_claude_code(r) for _, r in records[:50])


def _resource(name: str, tool_input: Any, cwd: str | None, keys: Keyring) -> tuple[str | None, int | None, int | None]:
    if not isinstance(tool_input, dict):
        return None, None, None
    key = _FILE_TOOLS_PATH_KEY.get(name)
    if key is None:
        return None, None, None
    raw = tool_input.get(key)
    if not isinstance(raw, str) or not raw:
        if name in ("Grep", "Glob", "LS") and cwd:
            raw = cwd  # these tools default to the working directory
        else:
            return None, None, None
    start = end = None
    if name == "Read":
        start, end = line_range(tool_input.get("offset"), tool_input.get("limit"))
    return keys.path(raw, cwd), start, end


class _ClaudeReader:
    """Adds Claude Code records to a :class:`TraceBuilder`, one stream per main/sidechain/subagent."""

    def __init__(self, b: TraceBuilder, file_agents: frozenset[str] = frozenset()):
        self.b = b
        self.file_agents = file_agents  # agents whose separate subagent file is read: their progress copies are not
        self.last_session: str | None = None  # the live session: the last sessionId of the main file
        self.streams: dict[str, Stream] = {}  # stream key -> stream
        self.req_rows: dict[tuple[int, str, str], int] = {}  # (stream id, message id, request id) -> request row
        self.req_session: list[Any] = []  # per request row: the sessionId of the line that opened it
        self.seen_uuids: set[str] = set()
        self.session_ids: set[str] = set()
        self.context_records: Counter = Counter()  # context records per sessionId
        self.no_id: dict[int, tuple[Any, str]] = {}  # stream id -> (uuid of its last id-less response line, its key)

    def stream(self, key: str, kind: str, agent_id: str | None) -> Stream:
        st = self.streams.get(key)
        if st is None:
            # assistant lines before a stream's first request have always been given req_idx -1
            st = self.streams[key] = self.b.new_stream(kind, agent_id, idle_req_idx=-1)
        return st

    # --- records ------------------------------------------------------------------------
    def add_record(self, line: int, rec: dict[str, Any], stream_key: str, stream_kind: str, agent_id: str | None) -> None:
        """Add one record; a record of an unexpected shape is skipped whole, with nothing half-added."""
        st = self.streams.get(stream_key)
        mark = self.b.checkpoint(st)
        try:
            self._add_record(line, rec, stream_key, stream_kind, agent_id)
        except (TypeError, ValueError, AttributeError, KeyError, IndexError) as e:
            self.b.rollback(mark)
            if st is None:
                self.streams.pop(stream_key, None)
            self.req_rows = {k: row for k, row in self.req_rows.items() if row < mark.n_requests}
            del self.req_session[mark.n_requests:]
            if isinstance(e, InvalidUsage):
                self.b.report.skip("invalid_usage", self.b.path, line, str(e))
            else:
                self.b.report.skip("malformed_record", self.b.path, line, f"a value of an unexpected type ({type(e).__name__})")

    def _add_record(self, line: int, rec: dict[str, Any], stream_key: str, stream_kind: str,
                    agent_id: str | None) -> None:
        rtype = rec.get("type")
        if not isinstance(rtype, str):
            self.b.report.skip("unknown_type", self.b.path, line, f"record type is a {type(rtype).__name__}")
            return
        uuid = rec.get("uuid")
        if isinstance(uuid, str):
            if uuid in self.seen_uuids:
                self.b.report.skip("duplicate_record", self.b.path, line, "uuid seen earlier in this session")
                return
            self.seen_uuids.add(uuid)
        sid = rec.get("sessionId")
        if isinstance(sid, str):
            self.session_ids.add(sid)
        if isinstance(rec.get("version"), str):
            self.b.versions.add(rec["version"])
        if self.b.cwd is None and isinstance(rec.get("cwd"), str) and rec["cwd"]:
            self.b.cwd = rec["cwd"]
        if rtype == "system":
            self._system(rec, stream_key, stream_kind, agent_id)
        elif rtype in NON_CONTEXT_TYPES:
            self.b.report.non_context[rtype] += 1
            if rtype == "progress":
                self._session_start(rec, stream_key)
        elif rtype not in CONTEXT_TYPES:
            self.b.report.skip("unknown_type", self.b.path, line, "unknown record type")
        else:
            self._context(line, rec, rtype, self.stream(stream_key, stream_kind, agent_id))

    def _skill_loaded(self, st: Stream) -> None:
        """A skill's content was added (a meta user message): the next request follows a skill
        load, unless a resume is already pending for it (the stronger event)."""
        if st.event is None:
            self.b.client_event(st, "skill")

    def _session_start(self, rec: dict, stream_key: str) -> None:
        """A SessionStart hook that runs after the stream's first request with source ``resume``
        (the client started again: the next request follows a resume) or ``clear`` (/clear, or a
        plan accepted with "clear context": the conversation starts again, a new partition without
        a summary, trigger "clear"). Claude Code logs the hook's progress as ``{"type":
        "hook_progress", "hookEvent": "SessionStart", "hookName": "SessionStart:<source>"}``
        (sources: startup, resume, clear, compact; a compaction has its own record)."""
        data = rec.get("data")
        if not isinstance(data, dict) or data.get("type") != "hook_progress" or data.get("hookEvent") != "SessionStart":
            return
        name = data.get("hookName")
        source = name.partition(":")[2] if isinstance(name, str) else ""
        st = self.streams.get(stream_key)
        if st is None or st.n_req == 0:
            return
        if source == SESSION_START_RESUME:
            self.b.client_event(st, "resume")
        elif source == SESSION_START_CLEAR and not self._partition_starts_here(st):
            self.b.compaction(st, parse_ts(rec.get("timestamp")), "clear", None)

    def _partition_starts_here(self, st: Stream) -> bool:
        """A partition of ``st`` already starts at its current position (a second hook of the
        same /clear, or a compaction right before it)."""
        c = self.b.trace.compactions
        last = next((pos for sid, pos in zip(reversed(c["stream_id"]), reversed(c["pos"])) if sid == st.sid), None)
        return last == st.n_blocks

    def _system(self, rec: dict, stream_key: str, stream_kind: str, agent_id: str | None) -> None:
        sub = rec.get("subtype")
        if sub != "compact_boundary":
            name = sub if isinstance(sub, str) and sub in SYSTEM_SUBTYPES else "other" if sub else "ui"
            self.b.report.non_context["system:" + name] += 1
            return
        st = self.stream(stream_key, stream_kind, agent_id)
        meta = rec.get("compactMetadata") or {}
        trigger = meta.get("trigger") if isinstance(meta, dict) else None
        pre = meta.get("preTokens") if isinstance(meta, dict) else None
        self.b.compaction(st, parse_ts(rec.get("timestamp")), trigger, pre if isinstance(pre, int) else None)

    def _context(self, line: int, rec: dict, rtype: str, st: Stream) -> None:
        """A user, assistant or attachment record: model context."""
        ts = record_ts(rec.get("timestamp"), self.b.report, self.b.path, line)
        sid = rec.get("sessionId")
        sid = sid if isinstance(sid, str) else None
        self.context_records[sid] += 1
        if rtype == "attachment":
            self.b.add_block(st, ts, "user", "attachment", canonical_json(rec.get("attachment")))
            return
        msg = rec.get("message")
        if not isinstance(msg, dict):
            self.b.report.skip("malformed_record", self.b.path, line, f"{rtype} record without a message object")
        elif rtype == "assistant":
            self._assistant(line, rec, msg, st, ts, sid)
        else:
            self._user(line, rec, msg, st, ts)

    def _assistant(self, line: int, rec: dict, msg: dict, st: Stream, ts: int | None, sid: str | None) -> None:
        mid, content = msg.get("id"), msg.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            self.b.report.skip("malformed_record", self.b.path, line, "assistant content is neither text nor a list")
            return
        model = msg.get("model")
        if not isinstance(model, (str, type(None))):
            # a number or object is no model name: kept, it would be priced as a model called "42"
            # and stop every command that prices the dataset
            self.b.report.skip("malformed_record", self.b.path, line, "assistant model is not text")
            return
        if model != SYNTHETIC_MODEL:
            if not isinstance(mid, str):
                mid = self._synthetic_id(line, rec, st)
            self._request(line, rec, msg, st, ts, mid, sid)
        elif rec.get("isApiErrorMessage") is False:
            # the answer Claude Code writes when it resumes a conversation that ended on a user message
            self.b.client_event(st, "resume")
        for part in content:
            if isinstance(part, dict):
                self._assistant_part(rec, part, st, ts)

    def _synthetic_id(self, line: int, rec: dict, st: Stream) -> str:
        """A key for a response line without ``message.id``, so that its usage is kept: its
        request id, else the uuid of the first of the id-less lines chained to it (the lines of
        one streamed response each name the previous one as parent). Both are copied verbatim
        into a resumed session, so a copy still matches its original."""
        rid = rec.get("requestId")
        rid = rid if isinstance(rid, str) else ""
        uuid, parent = rec.get("uuid"), rec.get("parentUuid")
        last = self.no_id.get(st.sid)
        if rid:
            key = "\0noid\0"
        elif last is not None and parent is not None and parent == last[0]:
            key = last[1]
        else:
            key = "\0noid\0" + (uuid if isinstance(uuid, str) else f"line {line}")
        if (st.sid, key, rid) not in self.req_rows:
            self.b.report.repair("missing_message_id", self.b.path, line,
                                 "response without message.id: kept under a key of its own")
        self.no_id[st.sid] = (uuid, key)
        return key

    def _assistant_part(self, rec: dict, part: dict, st: Stream, ts: int | None) -> None:
        ptype = part.get("type")
        if ptype == "text":
            self.b.add_block(st, ts, "assistant", "assistant_text", str(part.get("text", "")))
        elif ptype in ("thinking", "redacted_thinking"):
            self.b.add_block(st, ts, "assistant", "thinking", str(part.get("thinking", part.get("data", ""))))
        elif ptype in ("tool_use", "server_tool_use"):
            name = str(part.get("name", ""))
            tin = part.get("input")
            res, ls, le = _resource(name, tin, rec.get("cwd"), self.b.keys)
            self.b.tool_use(st, ts, name, tin, opt_str(part, "id"), tool_kind(name), res, ls, le)
        else:
            self.b.add_block(st, ts, "assistant", "assistant_text", canonical_json(part))

    def _request(self, line: int, rec: dict, msg: dict, st: Stream, ts: int | None, mid: str,
                 sid: str | None) -> None:
        """One request per message id and request id in a stream; its usage is taken from the last line that has one."""
        usage = msg.get("usage") if isinstance(msg.get("usage"), dict) else None
        rid = rec.get("requestId")
        rid = rid if isinstance(rid, str) else ""
        if usage is not None:  # validate before anything is added: a bad count skips the whole line
            w5, w1, split_known, mended = cache_writes(usage)
            if mended:
                self.b.report.repair("inconsistent_usage", self.b.path, line, mended)
            counts = dict(input_tokens=usage_count(usage, "input_tokens"), cache_write_5m=w5, cache_write_1h=w1,
                          cache_read=usage_count(usage, "cache_read_input_tokens"),
                          output_tokens=usage_count(usage, "output_tokens"))
        row = self.req_rows.get((st.sid, mid, rid))
        if row is None:
            row = self.req_rows[(st.sid, mid, rid)] = self.b.open_request(
                st, ts, str(msg.get("model") or ""), mid + "\0" + rid, version=rec.get("version"))
            self.req_session.append(sid)
        else:
            st.open_req = row
        if usage is None:
            if not self.b.trace.requests["has_usage"][row]:
                self.b.report.skip("missing_usage", self.b.path, line, "assistant line without usage (tokens from BPE)")
            return
        # Every line repeats the same usage except output_tokens, which grows while
        # streaming: the last line wins.
        self.b.set_usage(row, ttl_split_known=split_known, speed=usage.get("speed"), ts=ts, **counts)
        miss = msg["diagnostics"].get("cache_miss_reason") if isinstance(msg.get("diagnostics"), dict) else None
        if isinstance(miss, dict):
            self.b.miss_reason(row, miss.get("type"), miss.get("cache_missed_input_tokens"))

    def _user(self, line: int, rec: dict, msg: dict, st: Stream, ts: int | None) -> None:
        content = msg.get("content")
        if rec.get("isCompactSummary"):
            text = content if isinstance(content, str) else tool_result_parts(content)[0]
            self.b.add_block(st, ts, "user", "compact_summary", text)
            return
        if isinstance(content, str):
            if not rec.get("isMeta"):
                st.user_turn += 1
            elif content.startswith(SKILL_LOAD):
                self._skill_loaded(st)
            self.b.add_block(st, ts, "user", "user_text", content)
            return
        if not isinstance(content, list):  # counted as the assistant side is (a prompt as an object was lost unseen)
            if content is not None:
                self.b.report.skip("malformed_record", self.b.path, line, "user content is neither text nor a list")
            return
        if rec.get("isMeta") and any(is_skill_part(p) for p in content):
            self._skill_loaded(st)
        is_prompt = not rec.get("isMeta") and not any(
            isinstance(p, dict) and p.get("type") == "tool_result" for p in content
        )
        if is_prompt and content:
            st.user_turn += 1
        for part in content:
            if isinstance(part, dict):
                self._user_part(part, st, ts)

    def _user_part(self, part: dict, st: Stream, ts: int | None) -> None:
        ptype = part.get("type")
        if ptype == "text":
            self.b.add_block(st, ts, "user", "user_text", str(part.get("text", "")))
        elif ptype == "image":
            src = part.get("source") or {}
            self.b.image(st, ts, str(src.get("data", "")) if isinstance(src, dict) else "")
        elif ptype == "tool_result":
            tid = opt_str(part, "tool_use_id")
            text, images = tool_result_parts(part.get("content"))
            self.b.tool_result(st, ts, tid, text, images, is_error=bool(part.get("is_error")))
        else:
            self.b.add_block(st, ts, "user", "user_text", canonical_json(part))

    # --- files --------------------------------------------------------------------------
    def read_main(self, records: Records) -> None:
        """The main transcript: inline sidechains get one stream per root of their parentUuid chain.

        One pass: a sidechain record's parent is looked up among the records before it (in
        the logs, a parent is always written before its children).
        """
        sidechains = _Sidechains()
        self.stream("main", "main", None)
        for line, rec in records:
            sid = rec.get("sessionId")
            if isinstance(sid, str):
                self.last_session = sid
            agent_id = a if isinstance(a := rec.get("agentId"), str) else None
            sub = agent_progress(rec) if rec.get("type") == "progress" else None
            if sub is not None:
                self._agent_progress(line, rec, *sub)
                continue
            if side := rec.get("isSidechain"):
                sidechains.add(rec)
            if side and isinstance(rec.get("uuid"), str):
                key = "agent:" + agent_id if agent_id else "side:" + sidechains.root_of(rec["uuid"])
                self.add_record(line, rec, key, "sidechain", agent_id)
            else:
                self.add_record(line, rec, "main", "main", None)

    def _agent_progress(self, line: int, rec: dict, inner: dict, agent: str) -> None:
        """One line of a Task subagent's transcript, carried by a progress record of the main file."""
        if agent in self.file_agents:
            self.b.report.non_context["progress:agent_progress(subagent file read)"] += 1
            return
        # the copied line lacks the session fields of a transcript line: the progress record's apply
        merged = {k: rec[k] for k in _INHERITED if k in rec}
        merged.update(inner)
        self.add_record(line, merged, "agent:" + agent, PROGRESS_SUBAGENT, agent)

    def read_subagents(self, files: list[Path], limits: dict[Path, int] | None = None) -> None:
        """Separate subagent files: one stream each."""
        report, main = self.b.report, self.b.path
        for sub in files:
            agent_id = sub.stem.removeprefix("agent-")
            self.b.path = sub  # for the skip messages
            try:
                for line, rec in Records(sub, report, limit=limits.get(sub) if limits else None):
                    self.add_record(line, rec, "agent:" + agent_id, "subagent", agent_id)
            except (FileError, OSError) as e:
                report.skip("malformed_record", sub, None, f"subagent file unreadable: {e}")
            self.b.path = main

    def finish(self) -> SessionTrace | None:
        live = self.last_session
        if live is not None:  # records and requests of other (earlier) sessions are resumed copies
            flags = self.b.trace.requests["resumed_copy"]
            for row, sid in enumerate(self.req_session):
                flags[row] = sid is not None and sid != live
        resumed = sum(n for sid, n in self.context_records.items() if sid is not None and sid != live) if live else 0
        primary = live or (sorted(self.session_ids)[0] if self.session_ids else None)
        return self.b.finish(primary or self.b.path.stem, resumed_records=resumed, identity=primary)


_INHERITED = ("sessionId", "version", "cwd", "timestamp")


def agent_progress(rec: dict) -> tuple[dict, str] | None:
    """(the subagent's transcript line, its agent key) when ``rec`` is a progress record that
    carries one (``data.message`` a user or assistant record with a ``message`` object), else None.

    The agent key is ``data.agentId``; a record without one falls back to the Task call that
    started the subagent (``parentToolUseID``), so its responses are still counted."""
    data = rec.get("data")
    inner = data.get("message") if isinstance(data, dict) else None
    if not isinstance(inner, dict) or inner.get("type") not in ("user", "assistant") \
            or not isinstance(inner.get("message"), dict):
        return None
    agent = data.get("agentId")
    if not isinstance(agent, str) or not agent:
        ptu = rec.get("parentToolUseID")
        agent = "task:" + ptu if isinstance(ptu, str) and ptu else "task:?"
    return inner, agent


class _Sidechains:
    """Roots of the parentUuid chains among a file's inline sidechain records (those added so far)."""

    def __init__(self):
        self.root: dict[str, str] = {}
        self.parent: dict[Any, Any] = {}

    def add(self, rec: dict) -> None:
        self.parent[rec.get("uuid")] = rec.get("parentUuid")

    def root_of(self, uuid: str) -> str:
        side_parent, side_root = self.parent, self.root
        seen = []
        cur = uuid
        while cur in side_parent and side_parent[cur] in side_parent and cur not in side_root:
            seen.append(cur)
            cur = side_parent[cur]
            if len(seen) > 100000:
                break
        root = side_root.get(cur, cur)
        for s in seen:
            side_root[s] = root
        side_root[cur] = root
        return root


def read_session(main: Path, keys: Keyring, dataset: str, file_key: str, report: ReadReport,
                 subagent_files: list[Path] | None = None, data: bytes | None = None,
                 records: Records | None = None, limits: dict[Path, int] | None = None) -> SessionTrace | None:
    """Read one main transcript (plus its separate subagent files) into a SessionTrace, in one pass.

    Raises FileError when the main file cannot be read at all; bad lines are skipped and
    counted in ``report``. ``records`` is the main file already opened by the caller;
    ``limits`` caps how many bytes of each subagent file are read (what was hashed).
    """
    # Claude Code is the fallback reader: a file no reader recognizes ends here
    unknown = "not a recognised agent log (no Claude Code, Codex, Copilot CLI or Gemini CLI records)"
    records = read_records(main, data, report, _sniff, unknown, records)
    file_agents = frozenset(sub.stem.removeprefix("agent-") for sub in subagent_files or [])
    r = _ClaudeReader(TraceBuilder(AGENT, keys, dataset, file_key, main, report), file_agents)
    r.read_main(records)
    r.read_subagents(subagent_files or [], limits)
    return r.finish()
