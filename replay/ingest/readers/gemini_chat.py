"""Gemini CLI chat files (``~/.gemini/tmp/<project>/chats/session-*.json``) -> content-free traces.

A chat file is one pretty-printed JSON object, whatever its name ends with (the Entire CLI
saves them as ``.jsonl``): ``sessionId``, ``projectHash``, ``startTime``, ``lastUpdated``
and a ``messages`` array, streamed element by element (see `replay.ingest.readers.source`).
``docs/readers.md`` documents the mapping; in short:

* ``user`` message: a prompt, its ``content`` (a string or a list of parts) -> ``user_text``
  blocks (inline images -> ``image``);
* ``gemini`` message: one API response, one request (keyed by the message ``id``) at the
  position before its blocks: ``thoughts`` (summaries) -> ``thinking`` blocks carrying the
  response's ``tokens.thoughts`` count, ``content`` -> ``assistant_text``, each entry of
  ``toolCalls`` -> ``tool_use`` and then, after the response, its ``result`` ->
  ``tool_result`` (``status: "error"`` marks it as an error);
* usage from ``tokens`` (Gemini API usage metadata): ``input`` is the whole prompt
  including the ``cached`` part, so ``input_tokens = input - cached + tool`` (tool-use
  prompt tokens), ``cache_read = cached``, ``output_tokens = output + thoughts`` (thinking
  is billed as output), no cache writes (Gemini's implicit cache has none);
* ``info``, ``error`` and ``warning`` messages are shown to the user only: non-context.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from replay.ingest.blocktext import canonical_json
from replay.ingest.builder import Stream, TraceBuilder
from replay.ingest.checks import InvalidUsage, describe, usage_count
from replay.ingest.keys import Keyring
from replay.ingest.readers.base import FileError, ReadReport, Records
from replay.ingest.readers.fields import opt_str, parse_ts, record_ts, text_or_json
from replay.ingest.readers.gemini import _gemini_tool
from replay.ingest.trace import SessionTrace

AGENT = "gemini-cli"
MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
UI_TYPES = frozenset({"info", "error", "warning"})


def _compact(records: Records) -> dict | None:
    """The chat object of a compact chat file (the whole object on one line, read as one JSONL record)."""
    if records.kind != "jsonl":
        return None
    head = records.head(2)
    if len(head) == 1 and isinstance(head[0][1].get("messages"), list):
        return head[0][1]
    return None


def _chat(records: Records) -> tuple[dict, list | None]:
    """(top-level fields, the messages when the file is compact, else None: they are streamed)."""
    doc = _compact(records)
    if doc is None:
        return records.meta, None
    return {k: v for k, v in doc.items() if k != "messages"}, doc["messages"]


def sniff_document(records: Records) -> bool:
    """True when the file is a Gemini CLI chat file: a JSON object with a session id and a messages array."""
    if records.kind not in ("document", "jsonl"):
        return False
    meta, messages = _chat(records)
    if records.kind == "jsonl" and messages is None:
        return False
    if "sessionId" not in meta or not ("projectHash" in meta or "startTime" in meta):
        return False
    # one message of a known type is enough: a newer client's new message type is skipped as
    # `unknown_type` by the reader, a null sessionId takes the file's name; requiring every one of
    # the first five to be known sent such a file to the Claude Code reader, which kept nothing
    head = [m for _, m in records.head(5)] if messages is None else messages[:5]
    return not head or any(isinstance(m, dict) and m.get("type") in MESSAGE_TYPES for m in head)


def _parts(content: Any) -> list[Any]:
    """A PartListUnion (a string, a part, or a list of strings and parts) as a list."""
    if content is None:
        return []
    return content if isinstance(content, list) else [content]


def result_parts(result: Any) -> tuple[list[str], list[str]]:
    """A tool call's ``result`` as its tool_result block holds it: the texts (joined by newlines)
    and the base64 data of its inline images."""
    texts, images = [], []
    for part in _parts(result):
        fr = part.get("functionResponse") if isinstance(part, dict) else None
        if isinstance(fr, dict):
            resp = fr.get("response")
            out = resp.get("output", resp.get("error")) if isinstance(resp, dict) else resp
            texts.append(text_or_json(out if out is not None else resp))
        elif isinstance(part, dict) and isinstance(part.get("inlineData"), dict):
            images.append(str(part["inlineData"].get("data") or ""))
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
        else:
            texts.append(text_or_json(part))
    return texts, images


class _ChatReader:
    def __init__(self, b: TraceBuilder):
        self.b = b
        self.st: Stream = b.new_stream("main")

    def add(self, line: int, rec: dict) -> None:
        t = rec.get("type")
        t = t if isinstance(t, str) else None
        ts = record_ts(rec.get("timestamp"), self.b.report, self.b.path, line)
        if t == "user":
            self._user(rec, ts)
        elif t == "gemini":
            try:
                self._gemini(line, rec, ts)
            except InvalidUsage as e:
                self.b.report.skip("invalid_usage", self.b.path, line, str(e))
        elif t in UI_TYPES:
            self.b.report.non_context[f"message:{t}"] += 1
        else:
            self.b.report.skip("unknown_type", self.b.path, line, "unknown message type")

    def _user(self, rec: dict, ts: int | None) -> None:
        st = self.st
        st.open_req = None
        st.user_turn += 1
        for part in _parts(rec.get("content")):
            if isinstance(part, str):
                self.b.add_block(st, ts, "user", "user_text", part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                self.b.add_block(st, ts, "user", "user_text", part["text"])
            elif isinstance(part, dict) and isinstance(part.get("inlineData"), dict):
                self.b.image(st, ts, str(part["inlineData"].get("data") or ""))
            else:
                self.b.add_block(st, ts, "user", "user_text", canonical_json(part))

    def _usage(self, tokens: Any) -> dict[str, int] | None:
        if not isinstance(tokens, dict):
            return None
        inp, cached = usage_count(tokens, "input"), usage_count(tokens, "cached")
        tool, out, thoughts = usage_count(tokens, "tool"), usage_count(tokens, "output"), usage_count(tokens, "thoughts")
        cached = min(cached, inp)
        return {"input_tokens": inp - cached + tool, "cache_read": cached, "output_tokens": out + thoughts,
                "thoughts": thoughts}

    def _gemini(self, line: int, rec: dict, ts: int | None) -> None:
        usage = self._usage(rec.get("tokens"))  # first: a bad count skips the whole message
        st = self.st
        mid = opt_str(rec, "id") or f"line:{line}"
        model = rec.get("model") if isinstance(rec.get("model"), str) else None
        row = self.b.open_request(st, ts, model, mid)
        if usage is None:
            self.b.report.skip("missing_usage", self.b.path, line, "gemini message without tokens (tokens from BPE)")
        else:
            thoughts = usage.pop("thoughts")
            self.b.set_usage(row, **usage)
        thought_rows = []
        for th in rec.get("thoughts") or []:
            if isinstance(th, dict):
                text = f"{th.get('subject') or ''}\n{th.get('description') or ''}"
                thought_rows.append(self.b.add_block(st, parse_ts(th.get("timestamp")) or ts, "assistant", "thinking",
                                                     text))
        if usage is not None and thought_rows:
            share, rest = divmod(thoughts, len(thought_rows))
            for k, brow in enumerate(thought_rows):
                self.b.override_tokens(brow, share + (rest if k == 0 else 0))
        for part in _parts(rec.get("content")):
            text = part if isinstance(part, str) else (
                part["text"] if isinstance(part, dict) and isinstance(part.get("text"), str) else canonical_json(part))
            if text:
                self.b.add_block(st, ts, "assistant", "assistant_text", text)
        calls = [c for c in rec.get("toolCalls") or [] if isinstance(c, dict)]
        for c in calls:
            name = str(c.get("name") or "")
            args = c.get("args")
            self.b.tool_use(st, parse_ts(c.get("timestamp")) or ts, name, args, opt_str(c, "id"),
                            *_gemini_tool(name, args, self.b.keys, None))
        if calls:
            st.open_req = None  # the results are the next request's input
        for c in calls:
            self._result(c, ts)

    def _result(self, call: dict, ts: int | None) -> None:
        texts, images = result_parts(call.get("result"))
        self.b.tool_result(self.st, parse_ts(call.get("timestamp")) or ts, opt_str(call, "id"), "\n".join(texts),
                           images, is_error=call.get("status") == "error")


def read_session(main: Path, keys: Keyring, dataset: str, file_key: str, report: ReadReport,
                 subagent_files: list[Path] | None = None, data: bytes | None = None,
                 records: Records | None = None, limits: dict | None = None) -> SessionTrace | None:
    """Read one Gemini CLI chat file into a SessionTrace (one stream).

    Raises FileError when the file is not a chat file; bad messages are skipped and counted.
    """
    if records is None:
        records = Records(main, report, data)
    if not sniff_document(records):
        raise FileError("not a Gemini CLI chat file (a JSON object with sessionId, projectHash or startTime, and "
                        "messages)")
    b = TraceBuilder(AGENT, keys, dataset, file_key, main, report)
    r = _ChatReader(b)
    meta, messages = _chat(records)
    if messages is None:
        for line, rec in records:
            r.add(line, rec)
    else:
        for i, rec in enumerate(messages, 1):
            if isinstance(rec, dict):
                r.add(i, rec)
            else:
                report.skip("not_an_object", main, i, f"message {i} is {type(rec).__name__}")
    if "messages" in meta and not isinstance(meta["messages"], list):  # read whole into the fields, not streamed
        got = meta["messages"]
        raise FileError(f"its messages are {'a JSON object' if isinstance(got, dict) else describe(got)}, not an "
                        "array of messages")
    sid = meta.get("sessionId")
    sid = sid if isinstance(sid, str) and sid else None
    return b.finish(sid or main.stem, identity=sid)
