"""The record walker of the anonymizer: one Claude Code record in, its anonymized tree out.

``Anonymizer.record()`` walks a record and decides per field (``replay.privacy.schema``) what
each value becomes: a pseudonym (``pseudonyms``, ``paths``), a kept value, or a ``Text``
placeholder for filler. Message content is walked part by part (text, thinking, tool_use,
tool_result, image, document, ...), and every part that is one model-context block built from
several strings is registered as a ``Block`` so that its token count can be checked as a
whole. ``resolve()`` then fills the placeholders of the file (``texts.TextResolver``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from replay.ingest.blocktext import canonical_json, tool_result_parts, tool_use_text
from replay.ingest import identifiers
from replay.ingest.keys import Keyring
from replay.privacy.fillers import Fillers
from replay.privacy.paths import PathNamer
from replay.privacy.pseudonyms import ISO_RX, Pseudonyms
from replay.privacy.schema import (
    B64_RX, BUILTIN_TOOLS, ENUM_VOCAB, FILENAME_RX, HOOK_NAME_RX, ID_KEYS, IDENT_KEY_RX, KEEP_KEYS, KEEP_WHOLE,
    KNOWN_KEYS, META_KEYS, OPAQUE_KEYS, OPEN_ENUM_KEYS, PATH_KEYS, TIME_KEYS, TOOL_NAME_KEYS,
    TOOL_NAME_RX, TOOL_PATH_KEYS, USAGE_STRING_KEYS, enum_ok,
)
from replay.privacy.scrub import find
from replay.ingest.readers.claude_code import SKILL_LOAD, agent_progress, is_skill_part
from replay.ingest.readlines import PREVIEW_OPEN, is_preview, numbered_parts
from replay.privacy.texts import Block, Joined, Tail, TextResolver
from replay.privacy.vocabulary import deny_pattern

_WORDY = re.compile(r"[^\W_]")  # a letter or digit, in any script

if TYPE_CHECKING:
    from replay.privacy.summary import AnonymizeSummary


def _tool_result_text(content: Any) -> str:
    return tool_result_parts(content)[0]


def _tool_use_block_text(part: dict) -> str:
    return tool_use_text(str(part.get("name") or ""), part.get("input"))


_SERVER_NAME_RX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-:.]{0,63}$")
_HOOK_SOURCES = frozenset({"startup", "clear", "compact", "resume", "auto", "manual"})
_TOOL_HOOKS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest"})


class Anonymizer:
    """Anonymizes the records of one run (one key, one set of options), file after file."""

    def __init__(self, keys: Keyring, *, keep_tool_names: bool, keep_arg_keys: bool, time_shift: bool,
                 deny: set[str], summary: AnonymizeSummary, path_style: str = "words",
                 pseudonymize_mcp: bool = False):
        self.keys = keys
        self.keep_tool_names = keep_tool_names
        self.keep_arg_keys = keep_arg_keys
        self.pseudonymize_mcp = pseudonymize_mcp
        self.deny_terms = frozenset(d.lower() for d in deny)
        self.s = summary
        self.key_cache: dict[tuple[str, bool], str] = {}
        self.name_cache: dict[tuple[str, str], str] = {}
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
        """A dict key: kept when it is a name (identifier-like) in which the scrubber finds
        nothing; otherwise anonymized like a value (an AWS key id or a token used as a key,
        a question, a path). Argument names become keyed pseudonyms when asked, and then so does
        every other key outside the known keys (``schema.KNOWN_KEYS``): ``k_<hash>``."""
        if arg and not self.keep_arg_keys:
            return "arg_" + self.keys.short("argkey", k, 8)
        got = self.key_cache.get((k, arg))
        if got is None:
            if k in KNOWN_KEYS:
                got = k
            elif IDENT_KEY_RX.match(k) and not find(k):
                got = k if self.keep_arg_keys else self.pseudonym("metakey", k, "k_")
            else:
                self.s.keys_replaced += 1
                got = self.key_text(k)
            if len(self.key_cache) < 200_000:
                self.key_cache[(k, arg)] = got
        return got

    # --- kept names: enum values, models, tools ------------------------------------------
    def spells_term(self, v: str) -> bool:
        """Is a word of ``v`` (split at ``_``/``-``) one of the logs' owners' names?"""
        return any(w in self.deny_terms for w in re.split(r"[_\-]", v.lower()))

    def enum_value(self, key: str, v: str) -> str | None:
        """``v`` kept verbatim (a vocabulary word, or admitted by its key's strict grammar and
        spelling no sensitive term), or None: it must be anonymized."""
        if not enum_ok(key, v):
            if key == "version":  # major.minor.patch of a version with any other suffix, as the trace keeps it
                cut = identifiers.kept_version(v)
                return self.pseudo.keep(cut) if cut and cut != v else None
            return None
        if key in OPEN_ENUM_KEYS and v not in ENUM_VOCAB.get(key, ()) and self.spells_term(v):
            return None
        return self.pseudo.keep(v)

    def pseudonym(self, kind: str, v: str, prefix: str, n: int = 10) -> str:
        got = self.name_cache.get((kind, v))
        if got is None:
            self.s.names_replaced += 1
            got = self.name_cache[(kind, v)] = prefix + self.keys.short(kind, v, n)
        return got

    def model(self, v: str) -> str:
        """A model name kept when it is a public model id (`identifiers.kept_model`), else the
        trace's own pseudonym ``model-<8 hex>`` (`identifiers.model_pseudonym`)."""
        if identifiers.kept_model(v):
            return self.pseudo.keep(v)
        return self._named(("model", v), lambda: identifiers.model_pseudonym(self.keys, v))

    def mcp_server(self, server: str) -> str:
        """Keyed pseudonym of an MCP server name, equal in ``serverName`` and in ``mcp__<server>__<tool>``."""
        return self._named(("mcp-server", server), lambda: identifiers.mcp_server(self.keys, server))

    def mcp_tool(self, tool: str) -> str:
        return self._named(("mcp-tool", tool), lambda: identifiers.mcp_tool(self.keys, tool))

    def _named(self, key: tuple[str, str], make) -> str:
        got = self.name_cache.get(key)
        if got is None:
            self.s.names_replaced += 1
            got = self.name_cache[key] = make()
        return got

    def tool_name(self, name: str) -> str:
        """Claude Code's tools are kept; any other tool name only when it matches the tool-name
        grammar (schema.TOOL_NAME_RX) and holds no secret, else ``tool_<hash>``. With
        ``pseudonymize_mcp``, ``mcp__server__tool`` becomes ``mcp__srv_<hash>__tool_<hash>``."""
        if not self.keep_tool_names:
            return "tool_" + self.keys.short("tool", name, 10)
        if name in BUILTIN_TOOLS:
            return name
        if not TOOL_NAME_RX.match(name) or find(name):
            return self.pseudonym("tool", name, "tool_")
        if self.pseudonymize_mcp and name.startswith("mcp__"):
            return self._named(("mcp", name), lambda: identifiers.mcp_parts(self.keys, name))  # as the trace stores it
        return self.pseudo.keep(name)

    def tool_name_field(self, key: str, v: str) -> str:
        """``toolName``, ``serverName``, ``hookName`` (progress and hook records)."""
        if key == "serverName":
            if self.pseudonymize_mcp:
                return self.mcp_server(v)
            return self.pseudo.keep(v) if _SERVER_NAME_RX.match(v) and not find(v) else self.pseudonym("mcp-server", v, "srv_", 8)
        if key == "toolName":
            if self.pseudonymize_mcp and v not in BUILTIN_TOOLS and not v.startswith("mcp__") and TOOL_NAME_RX.match(v):
                return self.mcp_tool(v)  # the tool part of an MCP tool (its server is in serverName)
            return self.tool_name(v)
        m = HOOK_NAME_RX.match(v)  # hookName: Event or Event:ToolName / Event:source
        if not m or m.group(1) not in ENUM_VOCAB["hookEvent"]:
            return self.pseudonym("hook", v, "hook_")
        event, rest = m.group(1), m.group(2)
        if rest is None:
            return event
        if event not in _TOOL_HOOKS:  # a session hook's source: from a closed list, else keyed
            return v if rest in _HOOK_SOURCES else event + ":" + self.pseudonym("hook", rest, "hook_")
        return event + ":" + self.tool_name(rest)

    # --- records ------------------------------------------------------------------------
    def record(self, rec: dict, cwd: str | None = None) -> dict:
        """``cwd``: of the record that carries this one (a progress record's subagent line has none)."""
        cwd = rec.get("cwd") if isinstance(rec.get("cwd"), str) else cwd
        rtype = rec.get("type")
        out: dict[str, Any] = {}
        for k, v in rec.items():
            nk = self.dict_key(k)
            if k == "message" and isinstance(v, dict) and rtype in ("user", "assistant"):
                self.in_context = True
                try:
                    out[nk] = self.message(v, cwd, rtype, rec)
                finally:
                    self.in_context = False
            elif k == "attachment" and rtype == "attachment":
                anon = self.value(k, v, cwd)
                out[nk] = anon
                self.in_context = True
                self.add_block(canonical_json(v), anon, canonical_json)
                self.in_context = False
            elif k == "gitBranch" and isinstance(v, str):
                out[nk] = self.pseudo.branch(v)
            elif k == "snapshot" and isinstance(v, dict) and isinstance(v.get("trackedFileBackups"), dict):
                out[nk] = {self.dict_key(sk): self.backups(sv, cwd) if sk == "trackedFileBackups" else
                           self.value(sk, sv, cwd) for sk, sv in v.items()}
            elif k == "data" and rtype == "progress" and agent_progress(rec) is not None:
                # a Task subagent's transcript line: model context of its stream, walked as a record
                out[nk] = {self.dict_key(dk): self.record(dv, cwd) if dk == "message" else self.value(dk, dv, cwd)
                           for dk, dv in v.items()}
            else:
                out[nk] = self.value(k, v, cwd)
        return out

    def backups(self, v: dict, cwd: str | None) -> dict:
        """``file-history-snapshot`` backups: each key is a file (a path or a bare name): a path pseudonym."""
        return {self.paths.path(k, cwd): self.value("backup", x, cwd) for k, x in v.items()}

    def value(self, key: str, v: Any, cwd: str | None) -> Any:
        if v is None or isinstance(v, (bool, int, float)):
            return v
        if isinstance(v, str):
            return self.string(key, v, cwd)
        if isinstance(v, list):
            return [self.value(key, x, cwd) for x in v]
        if isinstance(v, dict):
            if key in KEEP_WHOLE:
                return self.meta_tree(key, v)
            if key == "message" and ("content" in v or "role" in v):
                return self.message(v, cwd, str(v.get("role") or ""), None)
            return {self.dict_key(k): self.value(k, x, cwd) for k, x in v.items()}
        return v

    def meta_tree(self, key: str, v: Any) -> Any:
        """``usage``, ``cache_creation``, ``compactMetadata``, ``thinkingMetadata``: numbers,
        booleans and known keys are kept; a string only under a known key and in its
        vocabulary (``service_tier: standard``), else filler; an unknown key only over a
        number (else pseudonymized)."""
        if v is None or isinstance(v, (bool, int, float)):
            return v
        if isinstance(v, str):
            if key in USAGE_STRING_KEYS or key in KEEP_KEYS:
                kept = self.enum_value(key, v)
                if kept is not None:
                    return kept
            return self.texts.text(v)
        if isinstance(v, list):
            return [self.meta_tree(key, x) for x in v]
        if isinstance(v, dict):
            return {self.meta_key(k, x): self.meta_tree(k, x) for k, x in v.items()}
        return v

    def meta_key(self, k: str, v: Any) -> str:
        """A key of a ``usage``-like tree: kept when known (``META_KEYS``, ``KNOWN_KEYS``), else ``k_<hash>``."""
        if k in META_KEYS or k in KNOWN_KEYS:
            return k
        return self.pseudonym("metakey", k, "k_")

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
        if key == "model":
            return self.model(v)
        if key in KEEP_KEYS:
            kept = self.enum_value(key, v)
            if kept is not None:
                return kept
            self.s.enums_replaced += 1
        elif self.keep_tool_names and key in TOOL_NAME_KEYS:
            return self.tool_name_field(key, v)
        return self.texts.text(v)

    # --- message content ----------------------------------------------------------------
    def message(self, msg: dict, cwd: str | None, role: str, rec: dict | None) -> dict:
        out: dict[str, Any] = {}
        for k, v in msg.items():
            if k == "content":
                out[self.dict_key(k)] = self.content(v, cwd, role, rec)
            elif k == "model" and isinstance(v, str):
                out[self.dict_key(k)] = self.model(v)
            else:
                out[self.dict_key(k)] = self.value(k, v, cwd)
        return out

    def content(self, content: Any, cwd: str | None, role: str, rec: dict | None) -> Any:
        compact = bool(rec and rec.get("isCompactSummary"))
        meta = bool(rec and rec.get("isMeta"))
        if isinstance(content, str):
            return self.skill_text(content) if meta and content.startswith(SKILL_LOAD) else self.texts.text(content)
        if not isinstance(content, list):
            return self.value("content", content, cwd)
        out = [self.skill_part(p) if meta and is_skill_part(p) else self.part(p, cwd) for p in content]
        if compact:  # a compact summary is one block made of all its parts
            self.add_block(_tool_result_text(content), out, _tool_result_text)
        return out

    def skill_text(self, v: str) -> Joined:
        """A loaded skill's content (a meta user message): the opening Claude Code writes is kept
        as written, so that the anonymized log still shows the skill load (the readers' client
        event "skill"); the rest is filled, and the whole keeps its token count."""
        out = Joined([SKILL_LOAD, self.texts.text(v[len(SKILL_LOAD):])])
        self.add_block(v, out, str)
        return out

    def skill_part(self, p: dict) -> dict:
        return {self.dict_key(k): (self.skill_text(v) if k == "text" else self.value(k, v, None))
                for k, v in p.items()}

    def part(self, p: Any, cwd: str | None) -> Any:
        """One content part, by its type."""
        if not isinstance(p, dict):
            return self.value("content", p, cwd)
        ptype = p.get("type")
        if ptype in ("text", "thinking"):
            return {self.dict_key(k): (self.texts.text(v) if k in ("text", "thinking") and isinstance(v, str)
                                       else self.value(k, v, cwd))
                    for k, v in p.items()}
        if ptype == "redacted_thinking":
            return {self.dict_key(k): (self.pseudo.opaque(v) if k == "data" and isinstance(v, str) else self.value(k, v, cwd))
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
                out[self.dict_key(k)] = self.tool_name(v)
            elif k == "input":
                out[self.dict_key(k)] = self.tool_input(v, cwd)
            else:
                out[self.dict_key(k)] = self.value(k, v, cwd)
        self.add_block(_tool_use_block_text(p), out, _tool_use_block_text)
        return out

    def result_text(self, v: str) -> Any:
        """A tool result's text. A file read's numbered lines keep their numbers and each line is
        filled alone (pinned: equal lines get equal fillers wherever they are read, so the
        trace's line hashes compare as the raw log's); a client preview keeps its opening tag."""
        if is_preview(v):
            head = v.index(PREVIEW_OPEN) + len(PREVIEW_OPEN)
            return Joined([v[:head], self.texts.text(v[head:])])
        got = numbered_parts(v)
        if got is None:
            return self.texts.text(v)
        lines, rest = got
        parts: list[Any] = []
        for k, (number, line) in enumerate(lines):
            # a line without a letter or digit ("}", "---", blank) says nothing and is kept: a
            # word filler cannot take its token count (o200k joins punctuation and the newline)
            text = line if not _WORDY.search(line) else self.texts.text(line, line_sep=number[-1])
            parts += (["\n"] if k else []) + [number, text]
        if rest:  # the newline ending the run stays; what follows it is filled
            parts += [rest[0], self.texts.text(rest[1:])]
        else:
            # line fillers are fitted with the newline after them; the last line has none here,
            # and an unnumbered line after it takes up the difference (`texts.Tail`)
            parts.append(Tail())
        return Joined(parts)

    def _tool_result(self, p: dict, cwd: str | None) -> dict:
        out = {}
        for k, v in p.items():
            nk = self.dict_key(k)
            if k == "content":
                if isinstance(v, str):
                    out[nk] = self.result_text(v)
                    if isinstance(out[nk], Joined):
                        self.add_block(v, out[nk], str)
                elif isinstance(v, list):
                    out[nk] = [self._result_part(x, cwd) for x in v]
                else:
                    out[nk] = self.value(k, v, cwd)
            else:
                out[nk] = self.value(k, v, cwd)
        if isinstance(p.get("content"), list):
            self.add_block(_tool_result_text(p.get("content")), out.get(self.dict_key("content")), _tool_result_text)
        return out

    def _result_part(self, x: Any, cwd: str | None) -> Any:
        if isinstance(x, dict) and x.get("type") == "text" and isinstance(x.get("text"), str):
            return {self.dict_key(k): (self.result_text(v) if k == "text" else self.value(k, v, cwd))
                    for k, v in x.items()}
        return self.part(x, cwd)

    def _media(self, p: dict, ptype: str, cwd: str | None) -> dict:
        """An image or document part: the payload redrawn with its header kept."""
        out = {}
        for k, v in p.items():
            if k == "source" and isinstance(v, dict):
                out[self.dict_key(k)] = {
                    self.dict_key(sk): (self.pseudo.image(sv) if sk == "data" and isinstance(sv, str) else self.value(sk, sv, cwd))
                    for sk, sv in v.items()}
            else:
                out[self.dict_key(k)] = self.value(k, v, cwd)
        if ptype == "document":
            self.add_block(canonical_json(p), out, canonical_json)
        return out

    def add_block(self, raw_text: str, anon: Any, render: Callable[[Any], str]) -> None:
        if self.in_context:
            self.texts.blocks.append(Block(raw_text, anon, render))

    # --- tool inputs --------------------------------------------------------------------
    def tool_input(self, inp: Any, cwd: str | None, path_keys: frozenset[str] | set[str] = TOOL_PATH_KEYS) -> Any:
        """A tool's arguments: the values of ``path_keys`` (at this level; deeper, TOOL_PATH_KEYS)
        become path pseudonyms, the rest fillers."""
        if not isinstance(inp, dict):
            return self.tool_value(inp, cwd)
        out = {}
        for k, v in inp.items():
            nk = self.dict_key(k, arg=True)
            if k in path_keys and isinstance(v, str):
                out[nk] = self.paths.path(v, cwd)
            elif k in path_keys and isinstance(v, list) and all(isinstance(x, str) for x in v):
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
