"""OpenAI Codex CLI rollout files -> content-free traces.

Reads ``~/.codex/sessions/**/rollout-*.jsonl``: one JSON object per line, each
``{"timestamp", "type", "payload"}`` with ``type`` one of ``session_meta``, ``turn_context``,
``response_item``, ``event_msg`` and ``compacted``. ``docs/readers.md`` documents the mapping;
in short:

* ``response_item`` lines are the model context (the items Codex sends back to the Responses
  API): ``message`` (user/developer/assistant), ``reasoning``, ``function_call`` /
  ``custom_tool_call`` / ``local_shell_call`` / ``web_search_call`` / ``tool_search_call`` and
  their ``*_output`` items;
* ``event_msg`` lines are UI events that duplicate response items (``agent_message``,
  ``user_message``, ...) and are non-context, except ``token_count``: each one whose
  ``info.total_token_usage`` differs from the previous one marks one API call and carries its
  usage in ``info.last_token_usage`` (repeated events with unchanged totals are counted once);
* a request sits before the first output item (reasoning / assistant message / tool call) of
  the call that the next new ``token_count`` closes: Codex writes the call's output items, then
  the outputs of the tools it ran, then the ``token_count``;
* ``compacted`` lines start a new partition whose blocks are the ``replacement_history``.

Older rollouts (items written at the top level without the ``payload`` wrapper, no
``token_count`` events) are read too: requests are then inferred from the output groups and
carry no usage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from replay.ingest.blocktext import canonical_json
from replay.ingest.builder import TraceBuilder
from replay.ingest.checks import InvalidUsage, usage_count
from replay.ingest.keys import Keyring
from replay.ingest.readers.base import ReadReport, Records, read_records
from replay.ingest.readers.codex_items import (
    call_name_args, message_text, output_is_error, output_parts, reasoning_text, tool_target,
)
from replay.ingest.readers.fields import SECOND_SESSION, as_list, data_url_payload, num, parse_ts, record_ts
from replay.ingest.readers.vocab import CODEX_EVENTS
from replay.ingest.trace import SessionTrace

AGENT = "codex"

CODEX_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})
# Response items the model produced (they belong to the request that the next token_count closes).
OUTPUT_ITEMS = frozenset(
    {"reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call",
     "tool_search_call", "image_generation_call"}
)
# Response items that feed the next request (tool outputs).
INPUT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})
# Response items Codex records that are never sent to the model.
NON_CONTEXT_ITEMS = frozenset({"ghost_snapshot"})
_LEGACY_ITEM_TYPES = OUTPUT_ITEMS | INPUT_ITEMS | {"message"}


def sniff(records: list[tuple[int, dict]]) -> bool:
    """True when the first records look like a Codex rollout."""
    for _, rec in records[:20]:
        if _type(rec) in CODEX_TYPES and isinstance(rec.get("payload"), dict):
            return True
        if "sessionId" in rec or "uuid" in rec:
            return False
        if rec.get("record_type") == "state":
            return True
        if _legacy_item(rec):
            return True
    return False


def _type(d: dict) -> str | None:
    """``d["type"]`` when it is a string (anything else is no type)."""
    t = d.get("type")
    return t if isinstance(t, str) else None


def _legacy_item(rec: dict) -> bool:
    """A response item written at the top level (rollouts before the ``payload`` wrapper)."""
    rtype = rec.get("type")
    if rtype == "message":
        content = rec.get("content")
        return isinstance(content, list) and any(
            isinstance(c, dict) and c.get("type") in ("input_text", "output_text", "input_image") for c in content
        )
    if rtype in ("function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output"):
        return isinstance(rec.get("call_id"), str)
    if rtype == "reasoning":
        return isinstance(rec.get("summary"), list)
    return False



def _user_item_text(rec: dict) -> str | None:
    """The text of a response_item user message (a prompt's model copy), else None."""
    q = rec.get("payload") if rec.get("type") == "response_item" else None
    if isinstance(q, dict) and q.get("type") == "message" and q.get("role") == "user":
        return message_text(q)
    return None


def _prescan(records: Records) -> tuple[int | None, bool, set[int]]:
    """A first pass (nothing reported, only a window of records held): (first line, has token_count
    events, lines of user messages that are prompts).

    Codex echoes a prompt as an ``event_msg`` ``user_message`` within four records of its
    ``response_item`` copy: the nearest copy before it, else after it, is the prompt.
    """
    first: int | None = None
    has_token_counts = False
    prompts: set[int] = set()
    window: dict[int, tuple[int, str | None]] = {}  # record index -> (line, user item text)
    waiting: list[tuple[int, str]] = []  # user_message events still missing records after them

    def resolve(k: int, msg: str) -> None:
        for j in [*range(k - 1, k - 5, -1), *range(k + 1, k + 5)]:
            got = window.get(j)
            if got is not None and got[1] is not None:
                text = got[1]
                if text == msg or (msg and text.strip() == msg.strip()):
                    prompts.add(got[0])
                    return

    k = -1
    for k, (line, rec) in enumerate(records.iter(quiet=True)):
        if first is None:
            first = line
        p = rec.get("payload")
        if rec.get("type") == "event_msg" and isinstance(p, dict):
            if p.get("type") == "token_count":
                has_token_counts = True
            elif p.get("type") == "user_message":
                msg = p.get("message")
                waiting.append((k, msg if isinstance(msg, str) else ""))
        window[k] = (line, _user_item_text(rec))
        window.pop(k - 9, None)
        while waiting and waiting[0][0] <= k - 4:
            resolve(*waiting.pop(0))
    for item in waiting:
        resolve(*item)
    return first, has_token_counts, prompts


USAGE_FIELDS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens")


def _change(before: dict | None, total: Any) -> dict | None:
    """One call's usage as the change of ``total_token_usage`` since ``before`` (the whole of it for
    the first); None when either is not a usage object or a count went down."""
    if not isinstance(total, dict) or (before is not None and not isinstance(before, dict)):
        return None
    out = {}
    for f in USAGE_FIELDS:
        now, was = total.get(f, 0), (before or {}).get(f, 0)
        if type(now) is not int or type(was) is not int or now < was:
            return None
        out[f] = now - was
    return out


class _CodexReader:
    def __init__(self, b: TraceBuilder, records: Records):
        self.b = b
        self.records = records
        self.st = b.new_stream("main")
        self.cwd: str | None = None
        self.model: str | None = None
        self.session_id: str | None = None
        self.last_total: str | None = None
        self.totals: dict | None = None  # the last total_token_usage read: a call's usage is its change
        self.forked_from: str | None = None
        self.past_header = False
        self.last_usage: dict | None = None
        self.req_reasoning: list[int] = []  # block rows of the open request's reasoning items
        self.req_first_line: int | None = None
        self.seen_prompts: set[str] = set()
        self.seen_messages: set[str] = set()
        self.items_since_task_start = 0
        self.first_line, self.has_token_counts, self.prompt_lines = _prescan(records)
        self._ts: Any = None

    # --- requests -------------------------------------------------------------------------
    def _ensure_request(self, line: int, ts: int | None, item_id: Any) -> None:
        if self.st.open_req is None:
            key = item_id if isinstance(item_id, str) and item_id else f"line:{line}"
            self.b.open_request(self.st, ts, self.model, key)
            self.req_reasoning = []
            self.req_first_line = line

    def _close_without_usage(self, line: int | None, why: str) -> None:
        if self.st.open_req is not None and self.has_token_counts:
            self.b.report.skip("missing_usage", self.b.path, self.req_first_line, why)
        self.st.open_req = None
        self.req_reasoning = []

    def _token_count(self, line: int, p: dict) -> None:
        info = p.get("info")
        total = info.get("total_token_usage") if isinstance(info, dict) else None
        key = canonical_json(total) if isinstance(total, dict) else None
        u = info.get("last_token_usage") if isinstance(info, dict) else None
        if not isinstance(u, dict) and (key is None or key == self.last_total):
            self.b.report.non_context["event_msg:token_count(no info)"] += 1
            return
        if key is not None and key == self.last_total:
            self.b.report.non_context["event_msg:token_count(repeat)"] += 1
            return
        if key is None and self.st.open_req is None and canonical_json(u) == canonical_json(self.last_usage):
            self.b.report.non_context["event_msg:token_count(repeat)"] += 1
            return
        self.last_total = key
        before, self.totals = self.totals, total if key is not None else self.totals
        if not isinstance(u, dict):
            # the totals moved without the call's own usage: it is their change, not nothing (merged
            # into the next call's, the call was lost and its tokens counted under another)
            u = _change(before, total)
            if u is None:
                self.b.report.skip("invalid_usage", self.b.path, line, "token_count without last_token_usage, and "
                                   "its total_token_usage does not give the call's usage")
                self.st.open_req = None
                self.req_reasoning = []
                return
            self.b.report.repair("usage_from_totals", self.b.path, line, "token_count without last_token_usage: "
                                 "the call's usage is the change of total_token_usage")
        try:
            inp, cached = usage_count(u, "input_tokens"), usage_count(u, "cached_input_tokens")
            out, reasoning = usage_count(u, "output_tokens"), usage_count(u, "reasoning_output_tokens")
        except InvalidUsage as e:  # the call happened, its usage is unusable: it ends without one
            self.b.report.skip("invalid_usage", self.b.path, line, str(e))
            self.st.open_req = None
            self.req_reasoning = []
            return
        self.b.report.non_context["event_msg:token_count"] += 1
        self.last_usage = u
        if self.st.open_req is None:  # a call whose output items were not written
            self.b.open_request(self.st, parse_ts(self._ts), self.model, f"line:{line}")
        if cached > inp:
            self.b.report.repair("inconsistent_usage", self.b.path, line, f"cached_input_tokens {cached:,} above "
                                 f"input_tokens {inp:,}: taken as {inp:,}")
            cached = inp
        self.b.set_usage(
            self.st.open_req, input_tokens=inp - cached, cache_read=cached, output_tokens=out,
            has_usage=True, ttl_split_known=False, msg_id=("usage:" + key) if key else None,
        )
        if reasoning and self.req_reasoning:
            share, rest = divmod(reasoning, len(self.req_reasoning))
            for k, brow in enumerate(self.req_reasoning):
                self.b.override_tokens(brow, share + (rest if k == 0 else 0))
        self.st.open_req = None
        self.req_reasoning = []

    # --- items ----------------------------------------------------------------------------
    def _input_kind(self, line: int, role: Any, text: str, replay: bool) -> str:
        """Block kind of an input message: a prompt is user_text, injected context an attachment."""
        if replay:
            if role == "user" and text in self.seen_prompts:
                return "user_text"
            if text in self.seen_messages or role != "user":
                return "attachment"
            return "compact_summary"  # a summary Codex wrote into the replacement history
        is_prompt = role == "user" and line in self.prompt_lines
        if is_prompt:
            self.st.user_turn += 1
            self.seen_prompts.add(text)
        self.seen_messages.add(text)
        return "user_text" if is_prompt else "attachment"

    def _user_side(self, line: int, p: dict, ts: int | None, *, replay: bool = False) -> None:
        """A user/developer/system message (input side of the conversation)."""
        text = message_text(p)
        content = p.get("content")
        parts = content if isinstance(content, list) else [{"type": "input_text", "text": content if isinstance(content, str) else ""}]
        kind = self._input_kind(line, p.get("role"), text, replay)
        for part in parts:
            if not isinstance(part, dict):
                continue
            ptype = part.get("type")
            if ptype in ("input_image", "image"):
                self.b.image(self.st, ts, data_url_payload(part.get("image_url", part.get("data"))))
            elif ptype in ("input_text", "output_text", "text"):
                self.b.add_block(self.st, ts, "user", kind, str(part.get("text", "")))
            else:
                self.b.add_block(self.st, ts, "user", kind, canonical_json(part))

    def _assistant_message(self, line: int, p: dict, ts: int | None) -> None:
        self._ensure_request(line, ts, p.get("id"))
        content = p.get("content")
        parts = content if isinstance(content, list) else [{"type": "output_text", "text": str(content or "")}]
        for part in parts:
            if not isinstance(part, dict):
                continue
            if part.get("type") in ("output_text", "text", "refusal"):
                t = str(part.get("text", part.get("refusal", "")))
            else:
                t = canonical_json(part)
            self.b.add_block(self.st, ts, "assistant", "assistant_text", t)

    def _reasoning(self, line: int, p: dict, ts: int | None) -> int:
        for key in ("summary", "content"):  # counted when not a list (it failed the file)
            as_list(p, key, self.b.report, self.b.path, line)
        visible, enc = reasoning_text(p)
        content = (visible + "\0" + enc).encode("utf-8", "surrogatepass") if (visible or enc) else b""
        if not content:
            # nothing of the item was written: keep it distinct rather than equal to every other empty one
            ident = p.get("id") if isinstance(p.get("id"), str) else f"{self.b.path.name}:{line}"
            hash_input = b"\0reasoning\0" + ident.encode()
            return self.b.add_block(self.st, ts, "assistant", "thinking", "", hash_input, tokens=0, size=0)
        return self.b.add_block(self.st, ts, "assistant", "thinking", visible or enc, content)

    def _tool_call(self, line: int, p: dict, ts: int | None) -> None:
        ptype = p.get("type")
        call_id = p.get("call_id") if isinstance(p.get("call_id"), str) else p.get("id")
        call_id = call_id if isinstance(call_id, str) else None
        name, args = call_name_args(p)
        if ptype == "web_search_call":
            target = ("web", None, None, None)
        elif ptype == "tool_search_call":
            target = ("other", None, None, None)
        else:
            target = tool_target(name, args, self.cwd, self.b.keys)
        self.b.tool_use(self.st, ts, name, args, call_id, *target)

    def _tool_output(self, line: int, p: dict, ts: int | None) -> None:
        call_id = p.get("call_id") if isinstance(p.get("call_id"), str) else None
        if p.get("type") == "tool_search_output":
            text, images, ok = canonical_json(p.get("tools")), [], None
        else:
            text, images, ok = output_parts(p.get("output"))
        self.b.tool_result(self.st, ts, call_id, text, images, is_error=output_is_error(text, ok))

    def _message(self, line: int, p: dict, ts: int | None) -> None:
        role = p.get("role")
        if role == "assistant":
            self._assistant_message(line, p, ts)
        elif role in ("user", "developer", "system"):
            if not self.has_token_counts:
                self.st.open_req = None  # legacy rollouts: input closes the inferred request
            self._user_side(line, p, ts)
        else:
            self.b.report.skip("malformed_record", self.b.path, line, "message with an unknown role")

    def _response_item(self, line: int, p: dict, ts: int | None) -> None:
        ptype = _type(p)
        self.items_since_task_start += 1
        if ptype in NON_CONTEXT_ITEMS:
            self.b.report.non_context[f"response_item:{ptype}"] += 1
        elif ptype == "message":
            self._message(line, p, ts)
        elif ptype == "reasoning":
            self._ensure_request(line, ts, p.get("id"))
            self.req_reasoning.append(self._reasoning(line, p, ts))
        elif ptype in OUTPUT_ITEMS:
            self._ensure_request(line, ts, p.get("id"))
            self._tool_call(line, p, ts)
        elif ptype in INPUT_ITEMS:
            if not self.has_token_counts:
                self.st.open_req = None
            self._tool_output(line, p, ts)
        elif ptype in ("compaction", "compaction_summary"):
            enc = str(p.get("encrypted_content") or p.get("summary") or "")
            self.b.add_block(self.st, ts, "user", "compact_summary", enc)
        else:
            self.b.report.skip("unknown_type", self.b.path, line, "unknown response item type")

    # --- compactions ------------------------------------------------------------------------
    def _compacted(self, line: int, p: dict, ts: int | None) -> None:
        if self.st.open_req is not None:
            self._close_without_usage(line, "response cut by a compaction before its token_count")
        trigger = "manual" if self.items_since_task_start == 0 else "auto"
        u = self.last_usage or {}
        pre = num(u.get("total_tokens")) or (num(u.get("input_tokens")) + num(u.get("output_tokens"))) or None
        self.b.compaction(self.st, ts, trigger, pre)
        history = p.get("replacement_history")
        if isinstance(history, list):
            for item in history:
                if isinstance(item, dict):
                    self._replacement_item(line, item, ts)
        msg = p.get("message")
        if isinstance(msg, str) and msg:
            self.b.add_block(self.st, ts, "user", "compact_summary", msg)

    def _replacement_item(self, line: int, item: dict, ts: int | None) -> None:
        """One item of a compaction's replacement history (the new context)."""
        itype = _type(item)
        if itype == "message":
            self._user_side(line, item, ts, replay=True)
        elif itype in ("compaction", "compaction_summary"):
            enc = str(item.get("encrypted_content") or item.get("summary") or "")
            ident = item.get("id") if isinstance(item.get("id"), str) else f"{line}"
            self.b.add_block(self.st, ts, "user", "compact_summary", enc, (enc + "\0" + ident).encode())
        elif itype == "reasoning":
            self._reasoning(line, item, ts)
        elif itype in OUTPUT_ITEMS:
            self._tool_call(line, item, ts)
        elif itype in INPUT_ITEMS:
            self._tool_output(line, item, ts)
        else:
            self.b.add_block(self.st, ts, "user", "attachment", canonical_json(item))

    # --- lines ------------------------------------------------------------------------------
    def read(self) -> None:
        for line, rec in self.records:
            rtype = _type(rec)
            p = rec.get("payload")
            self._ts = rec.get("timestamp")
            ts = record_ts(self._ts, self.b.report, self.b.path, line)
            if rtype not in CODEX_TYPES:
                self._legacy_record(line, rec, rtype, ts)
            elif not isinstance(p, dict):
                self.b.report.skip("malformed_record", self.b.path, line, f"{rtype} line without a payload object")
            elif rtype == "response_item":
                self._response_item(line, p, ts)
            elif rtype == "event_msg":
                self._event_msg(line, p)
            elif rtype == "turn_context":
                self._turn_context(p)
            elif rtype == "session_meta":
                self._session_meta(p, line)
            elif rtype == "compacted":
                self._compacted(line, p, ts)
            if rtype != "session_meta":
                self.past_header = True  # a fork's file opens with its own and its ancestors' session_meta
        if self.st.open_req is not None:
            self._close_without_usage(None, "response at the end of the file without a token_count")

    def _legacy_record(self, line: int, rec: dict, rtype: Any, ts: int | None) -> None:
        """Legacy rollouts: items at the top level, a first line with the session id."""
        if rec.get("record_type") == "state":
            self.b.report.non_context["state"] += 1
        elif rtype in _LEGACY_ITEM_TYPES or rtype in NON_CONTEXT_ITEMS:
            self._response_item(line, rec, ts)
        elif line == self.first_line and isinstance(rec.get("id"), str):
            self.session_id = rec["id"]
            self.b.report.non_context["session_meta"] += 1
        else:
            self.b.report.skip("unknown_type", self.b.path, line, "unknown record type")

    def _event_msg(self, line: int, p: dict) -> None:
        etype = p.get("type")
        if etype == "token_count":
            self._token_count(line, p)
            return
        self.b.report.non_context[f"event_msg:{etype if isinstance(etype, str) and etype in CODEX_EVENTS else 'other'}"] += 1
        if etype == "task_started":
            self.items_since_task_start = 0
        if etype in ("turn_aborted", "task_complete", "task_started") and self.st.open_req is not None:
            self._close_without_usage(line, f"response ended by {etype} before its token_count")

    def _turn_context(self, p: dict) -> None:
        self.b.report.non_context["turn_context"] += 1
        if isinstance(p.get("model"), str) and p["model"]:
            self.model = p["model"]
        if isinstance(p.get("cwd"), str) and p["cwd"]:
            self.cwd = p["cwd"]
            self.b.cwd = self.b.cwd or p["cwd"]

    def _session_meta(self, p: dict, line: int) -> None:
        self.b.report.non_context["session_meta"] += 1
        sid = p.get("id") or p.get("session_id")
        if isinstance(sid, str) and self.session_id is None:
            self.session_id = sid
            self.forked_from = p.get("forked_from_id")  # a fork repeats its parent's session_meta after its own
        elif isinstance(sid, str) and sid not in (self.session_id, self.forked_from) and self.past_header:
            self.b.report.repair("second_session", self.b.path, line, SECOND_SESSION)  # `cat a b`: said, not split
        if isinstance(p.get("cli_version"), str):
            self.b.versions.add(p["cli_version"])
        if isinstance(p.get("cwd"), str) and p["cwd"] and self.cwd is None:
            self.cwd = p["cwd"]
            self.b.cwd = self.b.cwd or p["cwd"]
        if isinstance(p.get("model"), str) and p["model"] and self.model is None:
            self.model = p["model"]


def read_session(main: Path, keys: Keyring, dataset: str, file_key: str, report: ReadReport,
                 subagent_files: list[Path] | None = None, data: bytes | None = None,
                 records: Records | None = None, limits: dict | None = None) -> SessionTrace | None:
    """Read one Codex rollout file into a SessionTrace.

    Raises FileError when the file is not a Codex rollout at all; bad lines are skipped and
    counted in ``report``. Codex has no separate sub-agent files (``subagent_files`` is ignored).
    Two passes over the file (see `_prescan`), each holding one record at a time.
    """
    records = read_records(main, data, report, sniff,
                           "not a Codex rollout (no session_meta/response_item/event_msg lines)", records)
    b = TraceBuilder(AGENT, keys, dataset, file_key, main, report)
    r = _CodexReader(b, records)
    r.read()
    return b.finish(r.session_id or main.stem, identity=r.session_id)
