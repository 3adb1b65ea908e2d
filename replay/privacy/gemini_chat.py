"""Gemini CLI chat files for the anonymizer: one JSON object in, its anonymized copy out.

A chat file (``~/.gemini/tmp/<project>/chats/session-*.json``; the Entire CLI saves them as
``.jsonl``) is one JSON object, usually pretty-printed: ``sessionId``, ``projectHash``,
``startTime``, ``lastUpdated`` and a ``messages`` array (``replay.ingest.readers.gemini_chat``
reads it). It is recognised by its content, as ingest recognises it, and written back as one
JSON object (pretty-printed when the input was). The walk reuses ``records.Anonymizer``:

* prompts, answers, thought subjects and descriptions, tool-argument strings, tool results,
  ``resultDisplay``/``description``/``displayName`` and the texts of ``info``/``warning``/
  ``error`` messages become token-exact fillers; tool-argument paths (``file_path``,
  ``absolute_path``, ``dir_path``, ``path``, ...) become path pseudonyms;
* ``sessionId``, message and tool-call ids (also in ``functionResponse.id``) and
  ``projectHash`` get format-preserving keyed pseudonyms; timestamps (``startTime``,
  ``lastUpdated``, ``timestamp``) are kept or shifted as for other formats;
* ``tokens`` (numbers) are kept; message ``type`` is kept when it is one of Gemini CLI's
  message types, tool-call ``status`` by its vocabulary, ``model`` by the model grammar,
  tool names as for Claude Code (kept when they match the tool-name grammar), ``mimeType``
  when it is a media type; anything else is filler.

Composite context blocks (a thought is ``subject\\ndescription``, a tool call its name and
arguments, a tool result the joined ``functionResponse`` outputs) are registered so their
token counts are checked as a whole, exactly as ingest builds them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from replay.ingest.blocktext import canonical_json, tool_use_text
from replay.ingest.readers.gemini_chat import MESSAGE_TYPES, result_parts
from replay.privacy.pseudonyms import ISO_RX
from replay.privacy.schema import MEDIA_TYPES, TOOL_PATH_KEYS

if TYPE_CHECKING:
    from replay.privacy.records import Anonymizer

CONTEXT_TYPES = frozenset({"user", "gemini"})
CHAT_TIME_KEYS = frozenset({"startTime", "lastUpdated", "timestamp"})
CHAT_HASH_KEYS = frozenset({"projectHash"})
# Gemini CLI's path arguments (read_file/write_file/replace: file_path or absolute_path;
# glob/grep/ls/shell: dir_path or path or directory)
CHAT_PATH_KEYS = TOOL_PATH_KEYS | {"absolute_path", "dir_path"}


def is_chat(doc: Any) -> bool:
    """The test of ``replay.ingest.readers.gemini_chat.sniff_document`` on a parsed object:
    a session id, a project hash or start time, and a ``messages`` array of typed messages."""
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        return False
    if not isinstance(doc.get("sessionId"), str) or not ("projectHash" in doc or "startTime" in doc):
        return False
    return all(isinstance(m, dict) and isinstance(m.get("type"), str) and m["type"] in MESSAGE_TYPES
               for m in doc["messages"][:5])


def result_text(result: Any) -> str:
    """A tool call's ``result`` as ingest turns it into the tool_result block's text (images aside)."""
    return "\n".join(result_parts(result)[0])


def _thought_text(th: Any) -> str:
    return f"{th.get('subject') or ''}\n{th.get('description') or ''}" if isinstance(th, dict) else ""


class ChatWalker:
    """Anonymizes Gemini CLI chat documents with an ``Anonymizer``'s pseudonyms and fillers."""

    def __init__(self, anon: Anonymizer):
        self.a = anon

    def fields(self, d: dict, by_key: dict[str, tuple[type, Callable[[Any], Any]]]) -> dict:
        """Each field of ``d`` under its key's pseudonym: one named in ``by_key`` whose value has
        the type given there through the function given there, any other by `tree`."""
        out: dict[str, Any] = {}
        for k, v in d.items():
            nk = self.a.dict_key(k)
            rule = by_key.get(k)
            out[nk] = rule[1](v) if rule is not None and isinstance(v, rule[0]) else self.tree(k, v)
        return out

    def document(self, doc: dict) -> dict:
        return self.fields(doc, {"messages": (list, lambda v: [
            self.message(m) if isinstance(m, dict) else self.tree("content", m) for m in v])})

    def message(self, m: dict) -> dict:
        a = self.a
        a.in_context = m.get("type") in CONTEXT_TYPES
        try:
            return self.fields(m, {
                "type": (str, self.message_type),
                "content": (object, self.content),
                "thoughts": (list, lambda v: [self.thought(th) for th in v]),
                "tokens": (object, lambda v: a.meta_tree("tokens", v)),
                "toolCalls": (list, lambda v: [self.call(c) if isinstance(c, dict) else self.tree("toolCalls", c)
                                               for c in v]),
            })
        finally:
            a.in_context = False

    def message_type(self, v: str) -> Any:
        """A message ``type``: kept when it is one of Gemini CLI's, else filler."""
        if v in MESSAGE_TYPES:
            return self.a.pseudo.keep(v)
        self.a.s.enums_replaced += 1
        return self.a.texts.text(v)

    def content(self, content: Any) -> Any:
        """A PartListUnion: a string, a part, or a list of them; each is one block."""
        if isinstance(content, list):
            return [self.part(p) for p in content]
        return self.part(content)

    def part(self, p: Any) -> Any:
        out = self.tree("content", p)
        if isinstance(p, dict) and not isinstance(p.get("text"), str) and not isinstance(p.get("inlineData"), dict):
            self.a.add_block(canonical_json(p), out, canonical_json)  # ingest keeps it as canonical JSON
        return out

    def thought(self, th: Any) -> Any:
        out = self.tree("thought", th)
        if isinstance(th, dict):
            self.a.add_block(_thought_text(th), out, _thought_text)
        return out

    def call(self, c: dict) -> dict:
        a = self.a
        # result (functionResponse parts), status, resultDisplay, description, ...: by `tree`
        out = self.fields(c, {"name": (str, a.tool_name), "args": (object, self.args)})
        # each block's own strings only (the same Text objects): a count difference is absorbed
        # by them, never by a resultDisplay or description outside the model context
        nname, nargs = a.dict_key("name"), a.dict_key("args")
        use = {nname: out.get(nname), nargs: out.get(nargs)}
        a.add_block(tool_use_text(str(c.get("name") or ""), c.get("args")), use,
                    lambda o: tool_use_text(str(o.get(nname) or ""), o.get(nargs)))
        a.add_block(result_text(c.get("result")), out.get(a.dict_key("result")), result_text)
        return out

    def args(self, args: Any) -> Any:
        return self.a.tool_input(args, None, CHAT_PATH_KEYS)

    def tree(self, key: str, v: Any) -> Any:
        """Any other value: ids, hashes, times, media types and tool names by their key, the
        rest as ``Anonymizer.value`` does (strings become filler)."""
        a = self.a
        if isinstance(v, str):
            if key in CHAT_HASH_KEYS:
                return a.pseudo.ident(v)
            if key in CHAT_TIME_KEYS:
                return a.pseudo.timestamp(v) if ISO_RX.match(v) else a.texts.text(v)
            if key == "mimeType":
                return a.pseudo.keep(v) if v in MEDIA_TYPES else a.texts.text(v)
            return a.string(key, v, None)
        if isinstance(v, list):
            return [self.tree(key, x) for x in v]
        if isinstance(v, dict):
            out = {}
            for k, x in v.items():
                nk = a.dict_key(k)
                if key in ("functionResponse", "functionCall") and k == "name" and isinstance(x, str):
                    out[nk] = a.tool_name(x)
                elif key == "functionCall" and k == "args":
                    out[nk] = self.args(x)
                else:
                    out[nk] = self.tree(k, x)
            return out
        return v
