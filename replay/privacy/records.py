"""The record walker of the anonymizer: one Claude Code record in, its anonymized tree out.

``Anonymizer.record()`` walks a record and decides per field (``replay.privacy.schema``) what
each value becomes: a pseudonym (``pseudonyms``, ``paths``), a kept value, or a ``Text``
placeholder for filler. Message content is walked part by part (text, thinking, tool_use,
tool_result, image, document, ...), and every part that is one model-context block built from
several strings is registered as a ``Block`` so that its token count can be checked as a
whole. ``resolve()`` then fills the placeholders of the file (``texts.TextResolver``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from replay.ingest.blocktext import canonical_json, tool_result_parts, tool_use_text
from replay.ingest.keys import Keyring
from replay.privacy.fillers import Fillers
from replay.privacy.paths import PathNamer
from replay.privacy.pseudonyms import ISO_RX, Pseudonyms
from replay.privacy.schema import (
    B64_RX, FILENAME_RX, ID_KEYS, IDENT_KEY_RX, KEEP_KEYS, KEEP_WHOLE, OPAQUE_KEYS, PATH_KEYS, TIME_KEYS,
    TOOL_NAME_KEYS, TOOL_PATH_KEYS, looks_like_enum,
)
from replay.privacy.texts import Block, TextResolver
from replay.privacy.vocabulary import deny_pattern

if TYPE_CHECKING:
    from replay.privacy.anonymize import AnonymizeSummary


def _tool_result_text(content: Any) -> str:
    return tool_result_parts(content)[0]


def _tool_use_block_text(part: dict) -> str:
    return tool_use_text(str(part.get("name") or ""), part.get("input"))


class Anonymizer:
    """Anonymizes the records of one run (one key, one set of options), file after file."""

    def __init__(self, keys: Keyring, *, keep_tool_names: bool, keep_arg_keys: bool, time_shift: bool,
                 deny: set[str], summary: AnonymizeSummary, path_style: str = "words"):
        self.keys = keys
        self.keep_tool_names = keep_tool_names
        self.keep_arg_keys = keep_arg_keys
        self.s = summary
        deny_rx = deny_pattern(deny)
        self.pseudo = Pseudonyms(keys, deny_rx=deny_rx, time_shift=time_shift, summary=summary)
        self.fillers = Fillers(deny_rx)
        self.paths = PathNamer(keys, path_style, self.pseudo, self.fillers, summary)
        self.texts = TextResolver(keys, self.pseudo, self.fillers, summary)
        self.in_context = False  # inside a user/assistant message or attachment (model context)

    def resolve(self) -> None:
        """Fillers for the texts met since the last call, block token counts checked."""
        self.texts.resolve()

    # --- keys ---------------------------------------------------------------------------
    def key_text(self, k: str) -> str:
        """A dict key that is data (a question, a path, a name): anonymized now, not batched."""
        if "/" in k or "\\" in k or FILENAME_RX.match(k):
            return self.paths.path(k, None)
        return self.texts.filler_now(k)

    def dict_key(self, k: str, *, arg: bool = False) -> str:
        if arg and not self.keep_arg_keys:
            return "arg_" + self.keys.short("argkey", k, 8)
        if IDENT_KEY_RX.match(k):
            return k
        return self.key_text(k)

    # --- records ------------------------------------------------------------------------
    def record(self, rec: dict) -> dict:
        cwd = rec.get("cwd") if isinstance(rec.get("cwd"), str) else None
        rtype = rec.get("type")
        out: dict[str, Any] = {}
        for k, v in rec.items():
            if k == "message" and isinstance(v, dict) and rtype in ("user", "assistant"):
                self.in_context = True
                try:
                    out[k] = self.message(v, cwd, rtype, rec)
                finally:
                    self.in_context = False
            elif k == "attachment" and rtype == "attachment":
                anon = self.value(k, v, cwd)
                out[k] = anon
                self.in_context = True
                self.add_block(canonical_json(v), anon, canonical_json)
                self.in_context = False
            elif k == "gitBranch" and isinstance(v, str):
                out[k] = self.pseudo.branch(v)
            else:
                out[k] = self.value(k, v, cwd)
        return out

    def value(self, key: str, v: Any, cwd: str | None) -> Any:
        if v is None or isinstance(v, (bool, int, float)):
            return v
        if isinstance(v, str):
            return self.string(key, v, cwd)
        if isinstance(v, list):
            return [self.value(key, x, cwd) for x in v]
        if isinstance(v, dict):
            if key in KEEP_WHOLE:
                return self.keep_tree(v)
            if key == "message" and ("content" in v or "role" in v):
                return self.message(v, cwd, str(v.get("role") or ""), None)
            return {self.dict_key(k): self.value(k, x, cwd) for k, x in v.items()}
        return v

    def keep_tree(self, v: Any) -> Any:
        if isinstance(v, str):
            return self.pseudo.keep(v)
        if isinstance(v, list):
            return [self.keep_tree(x) for x in v]
        if isinstance(v, dict):
            return {self.pseudo.keep(k): self.keep_tree(x) for k, x in v.items()}
        return v

    def string(self, key: str, v: str, cwd: str | None) -> Any:
        if key in ID_KEYS:
            return self.pseudo.ident(v)
        if key in PATH_KEYS:
            return self.paths.path(v, cwd)
        if key in TIME_KEYS:
            return self.pseudo.timestamp(v) if ISO_RX.match(v) else self.texts.text(v)
        if key == "gitBranch":
            return self.pseudo.branch(v)
        if key in OPAQUE_KEYS:
            return self.pseudo.opaque(v)
        if key == "data" and len(v) >= 64 and B64_RX.match(v):
            return self.pseudo.image(v)
        if (key in KEEP_KEYS or (self.keep_tool_names and key in TOOL_NAME_KEYS)) and looks_like_enum(key, v):
            return self.pseudo.keep(v)
        return self.texts.text(v)

    def tool_name(self, name: str) -> str:
        if self.keep_tool_names:
            return self.pseudo.keep(name)
        return "tool_" + self.keys.short("tool", name, 10)

    # --- message content ----------------------------------------------------------------
    def message(self, msg: dict, cwd: str | None, role: str, rec: dict | None) -> dict:
        out: dict[str, Any] = {}
        for k, v in msg.items():
            if k == "content":
                out[k] = self.content(v, cwd, role, rec)
            elif k == "model" and isinstance(v, str):
                out[k] = self.pseudo.keep(v)
            else:
                out[k] = self.value(k, v, cwd)
        return out

    def content(self, content: Any, cwd: str | None, role: str, rec: dict | None) -> Any:
        compact = bool(rec and rec.get("isCompactSummary"))
        if isinstance(content, str):
            return self.texts.text(content)
        if not isinstance(content, list):
            return self.value("content", content, cwd)
        out = [self.part(p, cwd) for p in content]
        if compact:  # a compact summary is one block made of all its parts
            self.add_block(_tool_result_text(content), out, _tool_result_text)
        return out

    def part(self, p: Any, cwd: str | None) -> Any:
        """One content part, by its type."""
        if not isinstance(p, dict):
            return self.value("content", p, cwd)
        ptype = p.get("type")
        if ptype in ("text", "thinking"):
            return {k: (self.texts.text(v) if k in ("text", "thinking") and isinstance(v, str) else self.value(k, v, cwd))
                    for k, v in p.items()}
        if ptype == "redacted_thinking":
            return {k: (self.pseudo.opaque(v) if k == "data" and isinstance(v, str) else self.value(k, v, cwd))
                    for k, v in p.items()}
        if ptype in ("tool_use", "server_tool_use"):
            return self._tool_use(p, cwd)
        if ptype == "tool_result":
            return self._tool_result(p, cwd)
        if ptype in ("image", "document"):
            return self._media(p, ptype, cwd)
        out = {self.dict_key(k): self.value(k, v, cwd) for k, v in p.items()}
        self.add_block(canonical_json(p), out, canonical_json)
        return out

    def _tool_use(self, p: dict, cwd: str | None) -> dict:
        out = {}
        for k, v in p.items():
            if k == "name" and isinstance(v, str):
                out[k] = self.tool_name(v)
            elif k == "input":
                out[k] = self.tool_input(v, cwd)
            else:
                out[k] = self.value(k, v, cwd)
        self.add_block(_tool_use_block_text(p), out, _tool_use_block_text)
        return out

    def _tool_result(self, p: dict, cwd: str | None) -> dict:
        out = {}
        for k, v in p.items():
            if k == "content":
                if isinstance(v, str):
                    out[k] = self.texts.text(v)
                elif isinstance(v, list):
                    out[k] = [self.part(x, cwd) for x in v]
                else:
                    out[k] = self.value(k, v, cwd)
            else:
                out[k] = self.value(k, v, cwd)
        if isinstance(p.get("content"), list):
            self.add_block(_tool_result_text(p.get("content")), out.get("content"), _tool_result_text)
        return out

    def _media(self, p: dict, ptype: str, cwd: str | None) -> dict:
        """An image or document part: the payload redrawn with its header kept."""
        out = {}
        for k, v in p.items():
            if k == "source" and isinstance(v, dict):
                out[k] = {sk: (self.pseudo.image(sv) if sk == "data" and isinstance(sv, str) else self.value(sk, sv, cwd))
                          for sk, sv in v.items()}
            else:
                out[k] = self.value(k, v, cwd)
        if ptype == "document":
            self.add_block(canonical_json(p), out, canonical_json)
        return out

    def add_block(self, raw_text: str, anon: Any, render: Callable[[Any], str]) -> None:
        if self.in_context:
            self.texts.blocks.append(Block(raw_text, anon, render))

    # --- tool inputs --------------------------------------------------------------------
    def tool_input(self, inp: Any, cwd: str | None) -> Any:
        if not isinstance(inp, dict):
            return self.tool_value(inp, cwd)
        out = {}
        for k, v in inp.items():
            nk = self.dict_key(k, arg=True)
            if k in TOOL_PATH_KEYS and isinstance(v, str):
                out[nk] = self.paths.path(v, cwd)
            elif k in TOOL_PATH_KEYS and isinstance(v, list) and all(isinstance(x, str) for x in v):
                out[nk] = [self.paths.path(x, cwd) for x in v]
            else:
                out[nk] = self.tool_value(v, cwd)
        return out

    def tool_value(self, v: Any, cwd: str | None) -> Any:
        if v is None or isinstance(v, (bool, int, float)):
            return v
        if isinstance(v, str):
            return self.texts.text(v)
        if isinstance(v, list):
            return [self.tool_value(x, cwd) for x in v]
        if isinstance(v, dict):
            return self.tool_input(v, cwd)
        return v

