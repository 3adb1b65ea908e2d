"""Claude Code transcripts -> content-free traces.

Reads ``~/.claude/projects/**/<session>.jsonl`` files, Stop-hook dumps (one JSON array of
the same records) and separate ``<session>/subagents/agent-*.jsonl`` files. Quirks handled
(see ``../shared/logs/README.md``):

* one API response is written as several lines sharing ``message.id`` that repeat the same
  ``usage``: one request per message id, usage counted once, ``output_tokens`` taken from
  the last line (earlier lines carry partial streaming counts);
* ``toolUseResult`` is a UI copy of a tool result, not model context: ignored;
* ``progress``, ``file-history-snapshot``, ``queue-operation``, ``summary``, ``last-prompt``,
  ``pr-link`` and UI-only ``system`` lines are counted as non-context;
* ``system``/``compact_boundary`` starts a new compaction partition; the following
  ``isCompactSummary`` user line is its ``compact_summary`` block;
* inline sidechains (``isSidechain`` in 1.0.x files, timestamps out of order) become one
  stream per sidechain root; separate subagent files become one stream each;
* resumed sessions copy earlier records with the old ``sessionId``: they are context of the
  resumed conversation and kept, their requests flagged ``resumed_copy``;
* tool_result content is a string or a list of text/image parts.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from replay.ingest.blocktext import canonical_json, tool_result_parts, tool_use_text
from replay.ingest.keys import Keyring
from replay.ingest.tokens import count_many, image_tokens
from replay.ingest.trace import SessionTrace, tool_kind
from replay.ingest.readers.base import FileError, ReadReport, finish_session, load_records

AGENT = "claude-code"

NON_CONTEXT_TYPES = frozenset(
    {"progress", "file-history-snapshot", "queue-operation", "summary", "last-prompt", "pr-link"}
)
CONTEXT_TYPES = frozenset({"user", "assistant", "attachment"})
SYNTHETIC_MODEL = "<synthetic>"

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
    return "sessionId" in rec or rec.get("type") in CONTEXT_TYPES | NON_CONTEXT_TYPES | {"system"}


def parse_ts(value: Any) -> int | None:
    """ISO-8601 timestamp -> epoch milliseconds (None when absent or unreadable)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


class _Stream:
    __slots__ = ("sid", "kind", "agent_id", "partition", "user_turn", "n_blocks", "req_by_msg", "n_req", "last_req")

    def __init__(self, sid: int, kind: str, agent_id: str | None):
        self.sid = sid
        self.kind = kind
        self.agent_id = agent_id
        self.partition = 0
        self.user_turn = 0
        self.n_blocks = 0
        self.req_by_msg: dict[str, int] = {}
        self.n_req = 0
        self.last_req = -1


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
        off, lim = tool_input.get("offset"), tool_input.get("limit")
        if isinstance(off, int) or isinstance(lim, int):
            start = off if isinstance(off, int) and off > 0 else 1
            end = start + lim - 1 if isinstance(lim, int) and lim > 0 else None
    return keys.path(raw, cwd), start, end


class _SessionBuilder:
    """Accumulates one session's blocks/requests; texts are token-counted in one batch at the end."""

    def __init__(self, keys: Keyring, dataset: str, file_key: str, path: Path, report: ReadReport):
        self.keys = keys
        self.path = path
        self.report = report
        self.trace = SessionTrace(session={"dataset": dataset, "file_key": file_key, "agent": AGENT})
        self.streams: dict[str, _Stream] = {}
        self.texts: list[str] = []  # text to count per block (parallel to blocks), "" for images
        self.extra_tokens: list[int] = []  # image tokens per block
        self.tool_uses: dict[str, tuple[str, str | None, int | None, int | None, str]] = {}
        self.seen_uuids: set[str] = set()
        self.primary_session: str | None = None
        self.session_ids: set[str] = set()
        self.versions: set[str] = set()
        self.models: set[str] = set()
        self.t_min: int | None = None
        self.t_max: int | None = None
        self.resumed_records = 0

    def stream(self, key: str, kind: str, agent_id: str | None) -> _Stream:
        st = self.streams.get(key)
        if st is None:
            st = self.streams[key] = _Stream(len(self.streams), kind, agent_id)
        return st

    # --- blocks -------------------------------------------------------------------------
    def add_block(
        self, st: _Stream, ts: int | None, role: str, kind: str, text: str, content: bytes,
        *, extra_tokens: int = 0, tool_name: str | None = None, tool_use_id: str | None = None,
        resource: str | None = None, line_start: int | None = None, line_end: int | None = None,
        args_hash: str | None = None, is_error: bool = False,
    ) -> None:
        b = self.trace.blocks
        b["session_key"].append(None)
        b["stream_id"].append(st.sid)
        b["pos"].append(st.n_blocks)
        b["partition"].append(st.partition)
        b["user_turn"].append(st.user_turn)
        b["req_idx"].append(st.last_req if role == "assistant" else None)
        b["ts"].append(ts)
        b["role"].append(role)
        b["kind"].append(kind)
        b["tool_name"].append(tool_name)
        b["tool_kind"].append(tool_kind(tool_name))
        b["tool_use_key"].append(self.keys.short("tool_use", tool_use_id, 16) if tool_use_id else None)
        b["content_hash"].append(self.keys.content_hash(content))
        b["bytes"].append(len(content))
        b["tokens"].append(0)
        b["resource"].append(resource)
        b["line_start"].append(line_start)
        b["line_end"].append(line_end)
        b["args_hash"].append(args_hash)
        b["is_error"].append(bool(is_error))
        self.texts.append(text)
        self.extra_tokens.append(extra_tokens)
        st.n_blocks += 1
        if ts is not None:
            self.t_min = ts if self.t_min is None else min(self.t_min, ts)
            self.t_max = ts if self.t_max is None else max(self.t_max, ts)

    # --- records ------------------------------------------------------------------------
    def add_record(self, line: int, rec: dict[str, Any], stream_key: str, stream_kind: str, agent_id: str | None) -> None:
        """Add one record; a record of an unexpected shape is skipped whole, with nothing half-added."""
        tr = self.trace
        marks = (len(tr.blocks["pos"]), len(tr.requests["req_idx"]), len(tr.compactions["pos"]), len(self.texts))
        st = self.streams.get(stream_key)
        st_state = (st.partition, st.user_turn, st.n_blocks, st.n_req, st.last_req, dict(st.req_by_msg)) if st else None
        try:
            self._add_record(line, rec, stream_key, stream_kind, agent_id)
        except (TypeError, ValueError, AttributeError, KeyError, IndexError) as e:
            for table, n in ((tr.blocks, marks[0]), (tr.requests, marks[1]), (tr.compactions, marks[2])):
                for col in table.values():
                    del col[n:]
            del self.texts[marks[3]:]
            del self.extra_tokens[marks[3]:]
            if st_state is not None:
                st.partition, st.user_turn, st.n_blocks, st.n_req, st.last_req, st.req_by_msg = st_state
            elif stream_key in self.streams and stream_key != "main":
                del self.streams[stream_key]
            self.report.skip("malformed_record", self.path, line, f"{type(e).__name__}: {str(e)[:60]}")

    def _add_record(self, line: int, rec: dict[str, Any], stream_key: str, stream_kind: str,
                    agent_id: str | None) -> None:
        rtype = rec.get("type")
        if not isinstance(rtype, str):
            self.report.skip("unknown_type", self.path, line, f"record type is a {type(rtype).__name__}")
            return
        uuid = rec.get("uuid")
        if isinstance(uuid, str):
            if uuid in self.seen_uuids:
                self.report.skip("duplicate_record", self.path, line, "uuid seen earlier in this session")
                return
            self.seen_uuids.add(uuid)
        sid = rec.get("sessionId")
        if isinstance(sid, str):
            self.session_ids.add(sid)
        if isinstance(rec.get("version"), str):
            self.versions.add(rec["version"])
        if rtype == "system":
            if rec.get("subtype") == "compact_boundary":
                st = self.stream(stream_key, stream_kind, agent_id)
                meta = rec.get("compactMetadata") or {}
                c = self.trace.compactions
                st.partition += 1
                c["session_key"].append(None)
                c["stream_id"].append(st.sid)
                c["pos"].append(st.n_blocks)
                c["partition"].append(st.partition)
                c["ts"].append(parse_ts(rec.get("timestamp")))
                c["trigger"].append(meta.get("trigger") if isinstance(meta, dict) else None)
                pre = meta.get("preTokens") if isinstance(meta, dict) else None
                c["pre_tokens"].append(pre if isinstance(pre, int) else None)
            else:
                self.report.non_context[f"system:{rec.get('subtype') or 'ui'}"] += 1
            return
        if rtype in NON_CONTEXT_TYPES:
            self.report.non_context[rtype] += 1
            return
        if rtype not in CONTEXT_TYPES:
            self.report.skip("unknown_type", self.path, line, f"record type {rtype!r}")
            return
        st = self.stream(stream_key, stream_kind, agent_id)
        ts = parse_ts(rec.get("timestamp"))
        resumed = bool(self.primary_session and isinstance(sid, str) and sid != self.primary_session)
        if resumed:
            self.resumed_records += 1
        if rtype == "attachment":
            att = rec.get("attachment")
            text = canonical_json(att)
            self.add_block(st, ts, "user", "attachment", text, text.encode())
            return
        msg = rec.get("message")
        if not isinstance(msg, dict):
            self.report.skip("malformed_record", self.path, line, f"{rtype} record without a message object")
            return
        if rtype == "assistant":
            self._assistant(line, rec, msg, st, ts, resumed)
        else:
            self._user(rec, msg, st, ts)

    def _assistant(self, line: int, rec: dict, msg: dict, st: _Stream, ts: int | None, resumed: bool) -> None:
        model = msg.get("model")
        mid = msg.get("id")
        content = msg.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            self.report.skip("malformed_record", self.path, line, "assistant content is neither text nor a list")
            return
        if model != SYNTHETIC_MODEL and isinstance(mid, str):
            self._request(line, rec, msg, st, ts, mid, resumed)
        for part in content:
            if not isinstance(part, dict):
                continue
            ptype = part.get("type")
            if ptype == "text":
                t = str(part.get("text", ""))
                self.add_block(st, ts, "assistant", "assistant_text", t, t.encode("utf-8", "surrogatepass"))
            elif ptype in ("thinking", "redacted_thinking"):
                t = str(part.get("thinking", part.get("data", "")))
                self.add_block(st, ts, "assistant", "thinking", t, t.encode("utf-8", "surrogatepass"))
            elif ptype in ("tool_use", "server_tool_use"):
                name = str(part.get("name", ""))
                tin = part.get("input")
                tid = part.get("id") if isinstance(part.get("id"), str) else None
                text = tool_use_text(name, tin)
                res, ls, le = _resource(name, tin, rec.get("cwd"), self.keys)
                args_hash = self.keys.text_hash(canonical_json(tin))[:16]
                if tid:
                    self.tool_uses[tid] = (name, res, ls, le, args_hash)
                self.add_block(
                    st, ts, "assistant", "tool_use", text, text.encode("utf-8", "surrogatepass"),
                    tool_name=name, tool_use_id=tid, resource=res, line_start=ls, line_end=le, args_hash=args_hash,
                )
            else:
                t = canonical_json(part)
                self.add_block(st, ts, "assistant", "assistant_text", t, t.encode())

    def _request(self, line: int, rec: dict, msg: dict, st: _Stream, ts: int | None, mid: str, resumed: bool) -> None:
        usage = msg.get("usage") if isinstance(msg.get("usage"), dict) else None
        r = self.trace.requests
        key = mid + "\0" + str(rec.get("requestId") or "")
        idx = st.req_by_msg.get(mid)
        if idx is None:
            idx = st.req_by_msg[mid] = len(r["req_idx"])
            st.last_req = st.n_req
            r["session_key"].append(None)
            r["stream_id"].append(st.sid)
            r["req_idx"].append(st.n_req)
            r["position"].append(st.n_blocks)
            r["partition"].append(st.partition)
            r["user_turn"].append(st.user_turn)
            r["ts"].append(ts)
            r["model"].append(str(msg.get("model") or ""))
            r["msg_key"].append(self.keys.short("message", key, 16))
            for c in ("input_tokens", "cache_write_5m", "cache_write_1h", "cache_read", "output_tokens"):
                r[c].append(0)
            r["has_usage"].append(False)
            r["ttl_split_known"].append(False)
            r["resumed_copy"].append(resumed)
            st.n_req += 1
            if msg.get("model"):
                self.models.add(str(msg["model"]))
        else:
            st.last_req = r["req_idx"][idx]
        if usage is None:
            if not r["has_usage"][idx]:
                self.report.skip("missing_usage", self.path, line, "assistant line without usage (tokens from BPE)")
            return
        # Every line repeats the same usage except output_tokens, which grows while
        # streaming: the last line wins.
        def num(v: Any) -> int:
            return int(v) if isinstance(v, (int, float)) and v >= 0 else 0

        writes = num(usage.get("cache_creation_input_tokens"))
        cc = usage.get("cache_creation")
        if isinstance(cc, dict) and ("ephemeral_5m_input_tokens" in cc or "ephemeral_1h_input_tokens" in cc):
            w5, w1 = num(cc.get("ephemeral_5m_input_tokens")), num(cc.get("ephemeral_1h_input_tokens"))
            split_known = True
        else:
            w5, w1, split_known = writes, 0, False  # before the split existed, writes were 5-minute
        r["input_tokens"][idx] = num(usage.get("input_tokens"))
        r["cache_write_5m"][idx] = w5
        r["cache_write_1h"][idx] = w1
        r["cache_read"][idx] = num(usage.get("cache_read_input_tokens"))
        r["output_tokens"][idx] = num(usage.get("output_tokens"))
        r["has_usage"][idx] = True
        r["ttl_split_known"][idx] = split_known

    def _user(self, rec: dict, msg: dict, st: _Stream, ts: int | None) -> None:
        content = msg.get("content")
        if rec.get("isCompactSummary"):
            text = content if isinstance(content, str) else tool_result_parts(content)[0]
            self.add_block(st, ts, "user", "compact_summary", text, text.encode("utf-8", "surrogatepass"))
            return
        if isinstance(content, str):
            if not rec.get("isMeta"):
                st.user_turn += 1
            self.add_block(st, ts, "user", "user_text", content, content.encode("utf-8", "surrogatepass"))
            return
        if not isinstance(content, list):
            return
        is_prompt = not rec.get("isMeta") and not any(
            isinstance(p, dict) and p.get("type") == "tool_result" for p in content
        )
        if is_prompt and content:
            st.user_turn += 1
        for part in content:
            if not isinstance(part, dict):
                continue
            ptype = part.get("type")
            if ptype == "text":
                t = str(part.get("text", ""))
                self.add_block(st, ts, "user", "user_text", t, t.encode("utf-8", "surrogatepass"))
            elif ptype == "image":
                src = part.get("source") or {}
                data = str(src.get("data", "")) if isinstance(src, dict) else ""
                self.add_block(st, ts, "user", "image", "", data.encode(), extra_tokens=image_tokens(data))
            elif ptype == "tool_result":
                tid = part.get("tool_use_id") if isinstance(part.get("tool_use_id"), str) else None
                text, images = tool_result_parts(part.get("content"))
                raw = text.encode("utf-8", "surrogatepass")
                if images:
                    raw += b"".join(b"\0image:" + i.encode() for i in images)
                name, res, ls, le, ah = self.tool_uses.get(tid or "", (None, None, None, None, None))
                self.add_block(
                    st, ts, "user", "tool_result", text, raw,
                    extra_tokens=sum(image_tokens(i) for i in images),
                    tool_name=name, tool_use_id=tid, resource=res, line_start=ls, line_end=le,
                    args_hash=ah, is_error=bool(part.get("is_error")),
                )
            else:
                t = canonical_json(part)
                self.add_block(st, ts, "user", "user_text", t, t.encode())

    # --- finish -------------------------------------------------------------------------
    def finish(self, counter_texts: bool = True) -> SessionTrace | None:
        tr = self.trace
        if tr.n_blocks == 0 and tr.n_requests == 0:
            return None
        counts = count_many(self.texts) if counter_texts else [0] * len(self.texts)
        tr.blocks["tokens"] = [c + e for c, e in zip(counts, self.extra_tokens)]
        primary = self.primary_session or (sorted(self.session_ids)[0] if self.session_ids else self.path.stem)
        return finish_session(tr, self.keys, self.streams.values(), primary, versions=self.versions,
                              t_min=self.t_min, t_max=self.t_max, models=self.models,
                              resumed_records=self.resumed_records)


def _primary_session_id(records: Iterable[tuple[int, dict]]) -> str | None:
    """The live session of a file: the last sessionId written (resumes copy older ones first)."""
    last = None
    for _, rec in records:
        sid = rec.get("sessionId")
        if isinstance(sid, str):
            last = sid
    return last


def read_session(
    main: Path,
    keys: Keyring,
    dataset: str,
    file_key: str,
    report: ReadReport,
    subagent_files: list[Path] | None = None,
    data: bytes | None = None,
) -> SessionTrace | None:
    """Read one main transcript (plus its separate subagent files) into a SessionTrace.

    Raises FileError when the main file cannot be read at all; bad lines are skipped and
    counted in ``report``.
    """
    data = main.read_bytes() if data is None else data
    records = load_records(main, data, report)
    if not records:
        raise FileError("no records")
    if not any(looks_like_claude_code(r) for _, r in records[:50]):
        raise FileError("not a Claude Code transcript (no sessionId/type fields)")
    b = _SessionBuilder(keys, dataset, file_key, main, report)
    b.primary_session = _primary_session_id(records)

    # Inline sidechains: one stream per root of the parentUuid chain among sidechain records.
    side_root: dict[str, str] = {}
    side_parent = {r.get("uuid"): r.get("parentUuid") for _, r in records if r.get("isSidechain")}

    def root_of(uuid: str) -> str:
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

    b.stream("main", "main", None)
    for line, rec in records:
        agent_id = rec.get("agentId") if isinstance(rec.get("agentId"), str) else None
        if rec.get("isSidechain") and isinstance(rec.get("uuid"), str):
            key = "agent:" + agent_id if agent_id else "side:" + root_of(rec["uuid"])
            b.add_record(line, rec, key, "sidechain", agent_id)
        else:
            b.add_record(line, rec, "main", "main", None)
    for sub in subagent_files or []:
        try:
            sub_records = load_records(sub, sub.read_bytes(), report)
        except (FileError, OSError) as e:
            report.skip("malformed_record", sub, None, f"subagent file unreadable: {e}")
            continue
        agent_id = sub.stem.removeprefix("agent-")
        for line, rec in sub_records:
            old_path, b.path = b.path, sub
            b.add_record(line, rec, "agent:" + agent_id, "subagent", agent_id)
            b.path = old_path
    return b.finish()
