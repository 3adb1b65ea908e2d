"""The trace builder every reader fills: one session's columns, appended block by block.

A reader parses its own log format and calls :class:`TraceBuilder` to append blocks
(:meth:`~TraceBuilder.add_block`, :meth:`~TraceBuilder.tool_use`,
:meth:`~TraceBuilder.tool_result`, :meth:`~TraceBuilder.image`), requests
(:meth:`~TraceBuilder.open_request`, :meth:`~TraceBuilder.set_usage`) and compaction
boundaries. Block texts are token-counted in batches of about ``COUNT_BATCH_CHARS``
characters as they come (memory stays bounded by the batch, not the session), and
:meth:`~TraceBuilder.finish` keys the session and fills the streams and sessions rows.

Strings the trace keeps as written (model, tool name, agent version, compaction trigger)
pass `replay.ingest.checks` here, whatever the reader: a value outside its grammar is
replaced by a keyed pseudonym and counted in the report. Usage counts must be valid
(`checks.usage_count`); :meth:`~TraceBuilder.set_usage` refuses anything else.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from replay.ingest import checks
from replay.ingest import tokens as tokenizer
from replay.ingest.blocktext import canonical_json, tool_use_text
from replay.ingest.identifiers import kept_model, kept_tool_name, kept_version
from replay.ingest.keys import Keyring
from replay.ingest.readlines import LineHasher, is_preview
from replay.ingest.readers.report import ReadReport
from replay.ingest.tokens import count_many, image_tokens
from replay.ingest.trace import CLIENT_EVENTS, MISS_REASONS, SessionTrace

USAGE_COLUMNS = ("input_tokens", "cache_write_5m", "cache_write_1h", "cache_read", "output_tokens")
# What a tool_use remembers for its tool_result: name, kind, resource, line_start, line_end, args_hash.
ToolCall = tuple[str, str | None, str | None, int | None, int | None, str]
_NO_TOOL = (None, None, None, None, None, None)
COUNT_BATCH_CHARS = 4_000_000  # block text held for one token-counting batch
MAX_BLOCK_TOKENS = 2**31 - 1
_PSEUDONYM_PREFIX = {"model": "model", "tool_name": "tool", "agent_version": "version", "trigger": "trigger"}


def token_counts(bpe: list[int], extra: list[int], override: list[int | None]) -> list[int]:
    """Each block's tokens: its count from the log, else its BPE count, plus its images' estimate."""
    return [(ov if ov is not None else c) + e for c, e, ov in zip(bpe, extra, override)]


def count_uncounted(tr: SessionTrace) -> None:
    """Fill the token counts of a trace read where counting was deferred (`SessionTrace.uncounted`)."""
    texts, extra, override = tr.uncounted
    tr.blocks["tokens"] = token_counts(count_many(texts), extra, override)
    tr.uncounted = None


class Stream:
    """One stream's running state while a reader appends blocks and requests.

    ``open_req`` is the row (in ``trace.requests``) of the request that receives the
    assistant blocks; while it is None they get ``idle_req_idx`` as their ``req_idx``.
    """

    __slots__ = ("sid", "kind", "agent_id", "partition", "user_turn", "n_blocks", "n_req", "open_req",
                 "idle_req_idx", "event")

    def __init__(self, sid: int, kind: str, agent_id: str | None, idle_req_idx: int | None = None):
        self.sid = sid
        self.kind = kind
        self.agent_id = agent_id
        self.partition = 0
        self.user_turn = 0
        self.n_blocks = 0
        self.n_req = 0
        self.open_req: int | None = None
        self.idle_req_idx = idle_req_idx
        self.event: str | None = None  # a client event the next request follows (see client_event)

    def state(self) -> tuple:
        return self.partition, self.user_turn, self.n_blocks, self.n_req, self.open_req, self.event

    def restore(self, state: tuple) -> None:
        self.partition, self.user_turn, self.n_blocks, self.n_req, self.open_req, self.event = state


class Checkpoint(NamedTuple):
    """Where a :meth:`TraceBuilder.rollback` returns to."""

    n_blocks: int
    n_requests: int
    n_compactions: int
    n_read_lines: int
    n_streams: int
    stream: Stream | None
    state: tuple | None


_new_checkpoint = tuple.__new__
_ADD_BLOCK_ORDER = ("session_key", "stream_id", "pos", "partition", "user_turn", "req_idx", "ts", "role", "kind",
                    "tool_name", "tool_kind", "tool_use_key", "content_hash", "bytes", "tokens", "resource",
                    "line_start", "line_end", "args_hash", "is_error")


def _append(table: dict[str, list], row: dict[str, Any]) -> None:
    for col, value in row.items():
        table[col].append(value)


class TraceBuilder:
    """Accumulates one session's columns; block texts are token-counted in one batch at the end."""

    def __init__(self, agent: str, keys: Keyring, dataset: str, file_key: str, path: Path, report: ReadReport):
        self.agent = agent
        self.keys = keys
        self.path = path  # the file being read (a reader may point it at a subagent file for a while)
        self.report = report
        self.trace = SessionTrace(session={"dataset": dataset, "file_key": file_key, "agent": agent})
        self.streams: list[Stream] = []
        self.texts: list[str] = []  # text to count per block, "" once counted or when the count is given
        self.counts: list[int] = []  # BPE count per block (0 until its batch is counted)
        self.counted = 0  # blocks before this row have been counted
        self.pending_chars = 0
        self.extra_tokens: list[int] = []  # image tokens per block
        self.token_override: list[int | None] = []
        self.usage_most: list[int] = []  # per request: the most output tokens a line of its usage gave (-1: none)
        self.clean: dict[tuple[str, str], str] = {}  # (field, value) -> the value kept in the trace
        self.kept_raw: dict[tuple[str, str], str] = {}  # (field, value as written) -> `kept`'s answer
        self.tools: dict[str, ToolCall] = {}  # tool_use id -> what its result inherits
        self.models: set[str] = set()
        self.last_model: dict[int, str] = {}  # stream id -> the model of its latest request naming one
        self.versions: set[str] = set()
        self.cwd: str | None = None  # the session's first working directory: its project
        self.t_min: int | None = None
        self.t_max: int | None = None
        self.line_hasher = LineHasher(keys)
        self._block_appends = tuple(self.trace.blocks[c].append for c in _ADD_BLOCK_ORDER)

    # --- values kept as written ----------------------------------------------------------------
    def kept(self, field: str, value: str) -> str:
        """``value`` when it matches ``field``'s grammar (a model: `identifiers.kept_model`, a public
        model id), else its keyed pseudonym (counted once per file)."""
        out = self.kept_raw.get((field, value))  # asked once per request: the same few values again and again
        if out is not None:
            return out
        raw = value
        if field == "agent_version":  # major.minor.patch only: a pre-release or build suffix can name anything
            value = kept_version(value) or value
        key = (field, value if len(value) <= 256 else "\0" + self.keys.short(field, value, 16))
        out = self.clean.get(key)
        if out is None:
            if kept_model(value) if field == "model" else checks.acceptable(field, value):
                out = value
            else:  # a model: `identifiers.model_pseudonym`, as the anonymizer writes it
                out = f"{_PSEUDONYM_PREFIX[field]}-{self.keys.short(field, value, 8)}"
                self.report.pseudonymize(field, self.path, out)
            self.clean[key] = out
        if len(raw) <= 256:
            self.kept_raw[(field, raw)] = out
        return out

    def tool_name(self, name: str) -> str:
        """An agent's own tool as written, an MCP tool keyed per part, any other tool (whose name
        can say whose it is) as its keyed pseudonym, counted once per file."""
        kept = kept_tool_name(self.keys, name)
        if kept is not None:
            return kept
        key = ("tool_name", name if len(name) <= 256 else "\0" + self.keys.short("tool_name", name, 16))
        out = self.clean.get(key)
        if out is None:
            out = self.clean[key] = f"{_PSEUDONYM_PREFIX['tool_name']}-{self.keys.short('tool_name', name, 8)}"
            self.report.pseudonymize("tool_name", self.path, out)
        return out

    def new_stream(self, kind: str = "main", agent_id: str | None = None, idle_req_idx: int | None = None) -> Stream:
        st = Stream(len(self.streams), kind, agent_id, idle_req_idx)
        self.streams.append(st)
        return st

    # --- blocks ---------------------------------------------------------------------------
    def add_block(
        self, st: Stream, ts: int | None, role: str, kind: str, text: str, content: bytes | None = None, *,
        tokens: int | None = None, extra_tokens: int = 0, size: int | None = None, tool_name: str | None = None,
        tool_kind: str | None = None, tool_use_id: str | None = None, resource: str | None = None,
        line_start: int | None = None, line_end: int | None = None, args_hash: str | None = None,
        is_error: bool = False,
    ) -> int:
        """Append a block and return its row.

        ``content`` (default: ``text`` as UTF-8) is what is hashed and measured (``size``
        overrides its length); ``tokens`` overrides the BPE count of ``text``.
        """
        if tool_name is not None:
            tool_name = self.tool_name(tool_name) if tool_name else tool_name
        if content is None:
            chash, nbytes = self.keys.text_hash_size(text)
        else:
            chash, nbytes = self.keys.content_hash(content), len(content)
        b = self.trace.blocks
        row = len(b["pos"])
        if role != "assistant":
            req_idx = None
        elif st.open_req is None:
            req_idx = st.idle_req_idx
        else:
            req_idx = self.trace.requests["req_idx"][st.open_req]
        # one append per column, written out: this is the hot path of ingest (the columns' append
        # methods are taken once: a rollback shortens the lists in place, only finish replaces them)
        (a_session_key, a_stream_id, a_pos, a_partition, a_user_turn, a_req_idx, a_ts, a_role, a_kind, a_tool_name,
         a_tool_kind, a_tool_use_key, a_content_hash, a_bytes, a_tokens, a_resource, a_line_start, a_line_end,
         a_args_hash, a_is_error) = self._block_appends
        a_session_key(None)
        a_stream_id(st.sid)
        a_pos(st.n_blocks)
        a_partition(st.partition)
        a_user_turn(st.user_turn)
        a_req_idx(req_idx)
        a_ts(ts)
        a_role(role)
        a_kind(kind)
        a_tool_name(tool_name)
        a_tool_kind(tool_kind)
        a_tool_use_key(self.keys.short("tool_use", tool_use_id, 16) if tool_use_id else None)
        a_content_hash(chash)
        a_bytes(nbytes if size is None else size)
        a_tokens(0)
        a_resource(resource)
        a_line_start(None if line_start is None else checks.small_int(line_start))
        a_line_end(None if line_end is None else checks.small_int(line_end))
        a_args_hash(args_hash)
        a_is_error(bool(is_error))
        if tokens is not None and not 0 <= tokens <= MAX_BLOCK_TOKENS:
            tokens = None
        self.texts.append("" if tokens is not None else text)
        self.counts.append(0)
        self.extra_tokens.append(extra_tokens)
        self.token_override.append(tokens)
        st.n_blocks += 1
        if tokens is None:
            self.pending_chars += len(text)
            if self.pending_chars >= COUNT_BATCH_CHARS:
                self.count_pending()
        if ts is not None:
            if self.t_min is None or ts < self.t_min:
                self.t_min = ts
            if self.t_max is None or ts > self.t_max:
                self.t_max = ts
        return row

    def rewrite_block(self, row: int, text: str) -> None:
        """Replace the text of a block (one streamed in chunks): its hash, size and count."""
        b = self.trace.blocks
        b["content_hash"][row], b["bytes"][row] = self.keys.text_hash_size(text)
        if row < self.counted:
            self.counts[row] = count_many([text])[0]
        else:
            self.pending_chars += len(text) - len(self.texts[row])
            self.texts[row] = text

    def override_tokens(self, row: int, tokens: int) -> None:
        """Give a block a token count from the log (instead of its BPE count); out-of-range counts are ignored."""
        if 0 <= tokens <= MAX_BLOCK_TOKENS:
            self.texts[row] = ""
            self.token_override[row] = tokens

    def count_pending(self) -> None:
        """Token-count the blocks added since the last batch and drop their texts (kept whole
        where counting is deferred: `replay.ingest.tokens.DEFER`)."""
        if tokenizer.DEFER:
            return
        start, end = self.counted, len(self.texts)
        if start < end:
            self.counts[start:end] = count_many(self.texts[start:end])
            self.texts[start:end] = [""] * (end - start)
        self.counted = end
        self.pending_chars = 0

    def image(self, st: Stream, ts: int | None, data: str) -> int:
        """A user image block from its base64 payload (hashed; counted by the image estimate)."""
        return self.add_block(st, ts, "user", "image", "", data.encode(), extra_tokens=image_tokens(data))

    def tool_use(
        self, st: Stream, ts: int | None, name: str, args: Any, call_id: str | None, kind: str | None,
        resource: str | None = None, line_start: int | None = None, line_end: int | None = None,
    ) -> int:
        """A tool_use block; its result (:meth:`tool_result` with the same id) inherits its features."""
        text = tool_use_text(name, args)
        args_hash = self.keys.text_hash(canonical_json(args))[:16]
        if call_id:
            self.tools[call_id] = (name, kind, resource, line_start, line_end, args_hash)
        return self.add_block(
            st, ts, "assistant", "tool_use", text, tool_name=name, tool_kind=kind, tool_use_id=call_id,
            resource=resource, line_start=line_start, line_end=line_end, args_hash=args_hash,
        )

    def tool_result(
        self, st: Stream, ts: int | None, call_id: str | None, text: str, images: list[str] | None = None, *,
        is_error: bool = False,
    ) -> int:
        """A tool_result block: ``text`` plus the base64 payloads of its images, if any."""
        raw = None  # the text alone: hashed without a copy
        if images:
            raw = text.encode("utf-8", "surrogatepass") + b"".join(b"\0image:" + i.encode() for i in images)
        name, kind, res, ls, le, ah = self.tools.get(call_id or "", _NO_TOOL)
        row = self.add_block(
            st, ts, "user", "tool_result", text, raw, extra_tokens=sum(image_tokens(i) for i in images or ()),
            tool_name=name, tool_kind=kind, tool_use_id=call_id, resource=res, line_start=ls, line_end=le,
            args_hash=ah, is_error=is_error,
        )
        if kind == "read" and not is_error:
            # the block's hash is the text's own when there is no image (else it covers them too)
            self._read_lines(st, row, text, None if images else self.trace.blocks["content_hash"][row])
        return row

    def _read_lines(self, st: Stream, row: int, text: str, content_hash: str | None = None) -> None:
        """Keyed hashes of a read result's numbered lines, or the mark of a client preview."""
        if is_preview(text):
            first, hashes, preview = None, [], True
        else:
            got = self.line_hasher.numbered(text, content_hash)
            if got is None or checks.small_int(got[0] + len(got[1])) is None:
                return
            first, hashes, preview = got[0], got[1], False
        _append(self.trace.read_lines, {"session_key": None, "stream_id": st.sid, "pos": self.trace.blocks["pos"][row],
                                        "first_line": first, "line_hashes": hashes, "preview": preview})

    # --- requests and compactions -----------------------------------------------------------
    def client_event(self, st: Stream, event: str) -> None:
        """The log records a client event (one of ``CLIENT_EVENTS``) before the stream's next
        request, which stores it."""
        if event not in CLIENT_EVENTS:
            raise ValueError(f"unknown client event {event!r}")
        st.event = event

    def open_request(self, st: Stream, ts: int | None, model: str | None, msg_id: str, *,
                     resumed: bool = False, version: str | None = None) -> int:
        """Start a request at the stream's current position; returns its row in ``trace.requests``.
        ``version``: the client version the log gives for it."""
        model = self.kept("model", model) if model else model
        if not model and self.last_model:
            # a response that names no model (null, missing, ""): priced as its stream's previous
            # one (else the session's latest), not as a model called "" that no price covers
            model = self.last_model.get(st.sid) or next(reversed(self.last_model.values()))
            self.report.repair("missing_model", self.path, None,
                               f"response without a model: taken as the one before it ({model})")
        version = self.kept("agent_version", version) if isinstance(version, str) and version else None
        r = self.trace.requests
        row = len(r["req_idx"])
        for col, value in (  # a tuple of pairs, not a dict: one per request
            ("session_key", None), ("stream_id", st.sid), ("req_idx", st.n_req), ("position", st.n_blocks),
            ("partition", st.partition), ("user_turn", st.user_turn), ("ts", ts), ("model", model or ""),
            ("msg_key", self.keys.short("message", msg_id, 16)), ("input_tokens", 0), ("cache_write_5m", 0),
            ("cache_write_1h", 0), ("cache_read", 0), ("output_tokens", 0), ("has_usage", False),
            ("ttl_split_known", False), ("resumed_copy", resumed), ("speed", None), ("client_version", version),
            ("client_event", st.event), ("miss_reason", None), ("miss_tokens", None), ("usage_ts", None),
        ):
            r[col].append(value)
        self.usage_most.append(-1)
        st.event = None
        st.n_req += 1
        st.open_req = row
        if model:
            self.models.add(model)
            self.last_model.pop(st.sid, None)  # kept in the order models were last seen
            self.last_model[st.sid] = model
        return row

    def set_usage(
        self, row: int, *, input_tokens: int = 0, cache_read: int = 0, cache_write_5m: int = 0,
        cache_write_1h: int = 0, output_tokens: int = 0, has_usage: bool = True, ttl_split_known: bool = False,
        msg_id: str | None = None, speed: str | None = None, ts: int | None = None,
    ) -> None:
        """The usage of request ``row`` (a later line's replaces an earlier one's). ``ts``: the line's
        time, kept as the request's ``usage_ts`` when this line has more output tokens than every
        earlier one (the line `ccusage` counts: a day's usage then falls where ccusage puts it)."""
        for v in (input_tokens, cache_read, cache_write_5m, cache_write_1h, output_tokens):
            if type(v) is int and 0 <= v < checks.MAX_COUNT:  # the usual case, without a call
                continue
            if checks.valid_count(v) is None or not isinstance(v, int):
                raise checks.InvalidUsage(f"usage count {checks.describe(v)}")
        r = self.trace.requests
        r["input_tokens"][row] = input_tokens
        r["cache_read"][row] = cache_read
        r["cache_write_5m"][row] = cache_write_5m
        r["cache_write_1h"][row] = cache_write_1h
        r["output_tokens"][row] = output_tokens
        r["has_usage"][row] = has_usage
        r["ttl_split_known"][row] = ttl_split_known
        # the usage's service tier ("fast" is priced at fast-mode rates); a known word or nothing
        r["speed"][row] = speed if speed in ("fast", "standard") else None
        if msg_id is not None:
            r["msg_key"][row] = self.keys.short("message", msg_id, 16)
        if ts is not None and output_tokens > self.usage_most[row]:
            self.usage_most[row] = output_tokens
            r["usage_ts"][row] = ts

    def miss_reason(self, row: int, reason: Any, missed: Any) -> None:
        """The provider's account of a cache miss at request ``row``: its type, kept only when it
        is one of ``MISS_REASONS`` (anything else is "other"), and the input tokens it says
        were missed (an invalid count is None)."""
        if reason is None:
            return
        self.trace.requests["miss_reason"][row] = reason if isinstance(reason, str) and reason in MISS_REASONS \
            else "other"
        self.trace.requests["miss_tokens"][row] = checks.valid_count(missed)

    def compaction(self, st: Stream, ts: int | None, trigger: Any, pre_tokens: Any) -> None:
        """Start a new partition of ``st`` at its current position (an invalid ``pre_tokens`` is None)."""
        if trigger is not None:
            trigger = self.kept("trigger", trigger if isinstance(trigger, str) else canonical_json(trigger))
        pre_tokens = checks.valid_count(pre_tokens)
        st.partition += 1
        _append(self.trace.compactions, {
            "session_key": None, "stream_id": st.sid, "pos": st.n_blocks, "partition": st.partition, "ts": ts,
            "trigger": trigger, "pre_tokens": pre_tokens,
        })

    # --- all or nothing -------------------------------------------------------------------
    def checkpoint(self, st: Stream | None) -> Checkpoint:
        """A mark to :meth:`rollback` to: the table lengths, the stream count and ``st``'s state."""
        tr = self.trace  # once per record: lengths read directly, the tuple built without Checkpoint's __new__
        return _new_checkpoint(Checkpoint, (len(tr.blocks["pos"]), len(tr.requests["req_idx"]),
                                            len(tr.compactions["pos"]), len(tr.read_lines["pos"]), len(self.streams),
                                            st, None if st is None else (st.partition, st.user_turn, st.n_blocks,
                                                                         st.n_req, st.open_req, st.event)))

    def rollback(self, mark: Checkpoint) -> None:
        """Drop what was appended since ``mark`` (rows, new streams) and restore the stream's state.

        Session-wide sets (models, versions, tool calls, time range) keep what they saw.
        """
        tr = self.trace
        for table, n in ((tr.blocks, mark.n_blocks), (tr.requests, mark.n_requests),
                         (tr.compactions, mark.n_compactions), (tr.read_lines, mark.n_read_lines)):
            for col in table.values():
                del col[n:]
        for col in (self.texts, self.counts, self.extra_tokens, self.token_override):
            del col[mark.n_blocks:]
        del self.usage_most[mark.n_requests:]
        self.counted = min(self.counted, mark.n_blocks)
        self.pending_chars = sum(len(t) for t in self.texts[self.counted:])
        del self.streams[mark.n_streams:]
        if mark.stream is not None:
            mark.stream.restore(mark.state)

    # --- finish ---------------------------------------------------------------------------
    def finish(self, primary: str, resumed_records: int = 0, identity: str | None = None) -> SessionTrace | None:
        """Count the tokens, key the session by ``primary`` (its live id) and fill its rows.

        ``identity`` is the session id as the log wrote it (None when ``primary`` is only a
        file name): copies of one session found at several paths share it (see ``SessionTrace.identity``).
        """
        tr = self.trace
        if tr.n_blocks == 0 and tr.n_requests == 0:
            return None
        if tokenizer.DEFER:  # counted by the process that has the tokenizer
            tr.uncounted = (self.texts, self.extra_tokens, self.token_override)
        else:
            self.count_pending()
            tr.blocks["tokens"] = token_counts(self.counts, self.extra_tokens, self.token_override)
        self.counts, self.texts = [], []
        skey = self.keys.short("session", tr.session["file_key"] + "\0" + primary, 16)
        for table in (tr.blocks, tr.requests, tr.compactions, tr.read_lines):
            table["session_key"] = [skey] * len(table["session_key"])
        for st in self.streams:
            _append(tr.streams, {
                "session_key": skey, "stream_id": st.sid, "kind": st.kind,
                "agent_id": self.keys.short("agent", st.agent_id, 12) if st.agent_id else None,
                "n_requests": st.n_req, "n_blocks": st.n_blocks,
            })
        tr.identity = self.keys.short("session_id", identity, 16) if identity else None
        tr.session.update(
            session_key=skey,
            session_id=self.keys.short("session_id", primary, 16),
            agent_version=",".join(sorted({self.kept("agent_version", v) for v in self.versions})) or None,
            started_at=self.t_min,
            ended_at=self.t_max,
            n_streams=len(self.streams),
            n_requests=tr.n_requests,
            n_blocks=tr.n_blocks,
            n_compactions=len(tr.compactions["pos"]),
            models=",".join(sorted(self.models)) or None,
            resumed_records=resumed_records,
            project=self.keys.path(self.cwd) or None if self.cwd else None,
        )
        return tr
