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

This module also holds what the Gemini CLI and Copilot CLI readers share with it: the column
builder (:class:`TraceBuilder`) and the shell command classifier (:func:`classify_shell`).
"""

from __future__ import annotations

import base64
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from replay.ingest.blocktext import canonical_json, tool_use_text
from replay.ingest.keys import Keyring
from replay.ingest.tokens import count_many, image_tokens
from replay.ingest.trace import SessionTrace
from replay.ingest.readers.base import FileError, ReadReport, finish_session, load_records
from replay.ingest.readers.claude_code import parse_ts

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
        if rec.get("type") in CODEX_TYPES and isinstance(rec.get("payload"), dict):
            return True
        if "sessionId" in rec or "uuid" in rec:
            return False
        if rec.get("record_type") == "state":
            return True
        if _legacy_item(rec):
            return True
    return False


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


# =========================================================================================
# Shared column builder
# =========================================================================================


class Stream:
    """One stream's running state while a reader appends blocks and requests."""

    __slots__ = ("sid", "kind", "agent_id", "partition", "user_turn", "n_blocks", "n_req", "open_req")

    def __init__(self, sid: int, kind: str, agent_id: str | None):
        self.sid = sid
        self.kind = kind
        self.agent_id = agent_id
        self.partition = 0
        self.user_turn = 0
        self.n_blocks = 0
        self.n_req = 0
        self.open_req: int | None = None  # row in trace.requests of the request receiving output blocks


class TraceBuilder:
    """Accumulates one session's columns; block texts are token-counted in one batch at the end.

    Readers call :meth:`add_block`, :meth:`open_request`, :meth:`set_usage` and
    :meth:`compaction`; ``finish`` fills keys, token counts and the session row.
    """

    def __init__(self, agent: str, keys: Keyring, dataset: str, file_key: str, path: Path, report: ReadReport):
        self.agent = agent
        self.keys = keys
        self.path = path
        self.report = report
        self.trace = SessionTrace(session={"dataset": dataset, "file_key": file_key, "agent": agent})
        self.streams: list[Stream] = []
        self.texts: list[str] = []
        self.extra_tokens: list[int] = []
        self.token_override: list[int | None] = []
        self.models: set[str] = set()
        self.versions: set[str] = set()
        self.session_ids: list[str] = []
        self.t_min: int | None = None
        self.t_max: int | None = None

    def new_stream(self, kind: str = "main", agent_id: str | None = None) -> Stream:
        st = Stream(len(self.streams), kind, agent_id)
        self.streams.append(st)
        return st

    def add_block(
        self, st: Stream, ts: int | None, role: str, kind: str, text: str, content: bytes | None = None, *,
        tokens: int | None = None, extra_tokens: int = 0, tool_name: str | None = None,
        tool_kind: str | None = None, tool_use_id: str | None = None, resource: str | None = None,
        line_start: int | None = None, line_end: int | None = None, args_hash: str | None = None,
        is_error: bool = False,
    ) -> int:
        """Append a block; ``tokens`` overrides the BPE count of ``text``. Returns its row."""
        if content is None:
            content = text.encode("utf-8", "surrogatepass")
        b = self.trace.blocks
        row = len(b["pos"])
        b["session_key"].append(None)
        b["stream_id"].append(st.sid)
        b["pos"].append(st.n_blocks)
        b["partition"].append(st.partition)
        b["user_turn"].append(st.user_turn)
        b["req_idx"].append(
            self.trace.requests["req_idx"][st.open_req] if role == "assistant" and st.open_req is not None else None
        )
        b["ts"].append(ts)
        b["role"].append(role)
        b["kind"].append(kind)
        b["tool_name"].append(tool_name)
        b["tool_kind"].append(tool_kind)
        b["tool_use_key"].append(self.keys.short("tool_use", tool_use_id, 16) if tool_use_id else None)
        b["content_hash"].append(self.keys.content_hash(content))
        b["bytes"].append(len(content))
        b["tokens"].append(0)
        b["resource"].append(resource)
        b["line_start"].append(line_start)
        b["line_end"].append(line_end)
        b["args_hash"].append(args_hash)
        b["is_error"].append(bool(is_error))
        self.texts.append("" if tokens is not None else text)
        self.extra_tokens.append(extra_tokens)
        self.token_override.append(tokens)
        st.n_blocks += 1
        if ts is not None:
            self.t_min = ts if self.t_min is None else min(self.t_min, ts)
            self.t_max = ts if self.t_max is None else max(self.t_max, ts)
        return row

    def override_tokens(self, row: int, tokens: int) -> None:
        self.texts[row] = ""
        self.token_override[row] = tokens

    def open_request(self, st: Stream, ts: int | None, model: str | None, msg_id: str) -> int:
        """Start a request at the stream's current position; returns its row in ``trace.requests``."""
        r = self.trace.requests
        row = len(r["req_idx"])
        r["session_key"].append(None)
        r["stream_id"].append(st.sid)
        r["req_idx"].append(st.n_req)
        r["position"].append(st.n_blocks)
        r["partition"].append(st.partition)
        r["user_turn"].append(st.user_turn)
        r["ts"].append(ts)
        r["model"].append(model or "")
        r["msg_key"].append(self.keys.short("message", msg_id, 16))
        for c in ("input_tokens", "cache_write_5m", "cache_write_1h", "cache_read", "output_tokens"):
            r[c].append(0)
        r["has_usage"].append(False)
        r["ttl_split_known"].append(False)
        r["resumed_copy"].append(False)
        st.n_req += 1
        st.open_req = row
        if model:
            self.models.add(model)
        return row

    def set_usage(
        self, row: int, *, input_tokens: int = 0, cache_read: int = 0, cache_write_5m: int = 0,
        cache_write_1h: int = 0, output_tokens: int = 0, has_usage: bool = True, ttl_split_known: bool = False,
        msg_id: str | None = None,
    ) -> None:
        r = self.trace.requests
        r["input_tokens"][row] = input_tokens
        r["cache_read"][row] = cache_read
        r["cache_write_5m"][row] = cache_write_5m
        r["cache_write_1h"][row] = cache_write_1h
        r["output_tokens"][row] = output_tokens
        r["has_usage"][row] = has_usage
        r["ttl_split_known"][row] = ttl_split_known
        if msg_id is not None:
            r["msg_key"][row] = self.keys.short("message", msg_id, 16)

    def compaction(self, st: Stream, ts: int | None, trigger: str | None, pre_tokens: int | None) -> None:
        """Start a new partition of ``st`` at its current position."""
        st.partition += 1
        st.open_req = None
        c = self.trace.compactions
        c["session_key"].append(None)
        c["stream_id"].append(st.sid)
        c["pos"].append(st.n_blocks)
        c["partition"].append(st.partition)
        c["ts"].append(ts)
        c["trigger"].append(trigger)
        c["pre_tokens"].append(pre_tokens)

    def finish(self, session_id: str | None) -> SessionTrace | None:
        tr = self.trace
        if tr.n_blocks == 0 and tr.n_requests == 0:
            return None
        counts = count_many(self.texts)
        tr.blocks["tokens"] = [
            (ov if ov is not None else c) + e for c, e, ov in zip(counts, self.extra_tokens, self.token_override)
        ]
        primary = session_id or self.path.stem
        finish_session(tr, self.keys, self.streams, primary, versions=self.versions, t_min=self.t_min,
                       t_max=self.t_max, models=self.models)
        return tr


def num(v: Any) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 else 0


def data_url_payload(url: Any) -> str:
    """The base64 payload of a ``data:image/...;base64,`` URL (else the string itself)."""
    if not isinstance(url, str):
        return ""
    head, sep, tail = url.partition(";base64,")
    return tail if sep and head.startswith("data:") else url


def safe_image_tokens(b64: str) -> int:
    try:
        base64.b64decode(b64[:64] + "=" * (-len(b64[:64]) % 4), validate=False)
    except (ValueError, TypeError):
        return image_tokens(None)
    return image_tokens(b64)


def mcp_kind(name: str) -> str:
    low = name.lower()
    return "web" if any(w in low for w in ("browser", "fetch", "web", "http")) else "other"


# =========================================================================================
# Shell command classifier (Codex exec_command / shell, Gemini run_shell_command, Copilot bash)
# =========================================================================================


@dataclass
class ShellTarget:
    """What a shell command does to which file: ``kind`` is one of read/search/list/mutate/shell.

    ``path`` is the one path the command names, relative to the directory the command started
    in (a leading ``cd`` is folded in) or absolute; None when it names none or several (except
    patches: the first file). ``line_start``/``line_end`` give a partial read's line range.
    """

    kind: str = "shell"
    path: str | None = None
    line_start: int | None = None
    line_end: int | None = None


@dataclass
class _Stage:
    argv: list[str] = field(default_factory=list)
    out: list[str] = field(default_factory=list)  # stdout redirection targets
    heredoc: list[str] = field(default_factory=list)


_SEPARATORS = (";", "\n", "&&", "||", "&", "(", ")")


def parse_script(script: str) -> list[list[_Stage]]:
    """Split a shell script into pipelines of simple commands (argv, stdout targets, heredocs).

    A small POSIX-ish tokenizer: quotes, escapes, ``$(...)``/backticks kept inside words,
    redirections separated from argv, here-document bodies attached to their command.
    """
    pipelines: list[list[_Stage]] = []
    stages: list[_Stage] = []
    cur = _Stage()
    word: list[str] | None = None
    redirect: tuple[str, str] | None = None  # (operator, fd) waiting for its target word
    heredocs: list[tuple[str, _Stage, bool]] = []
    i, n = 0, len(script)

    def end_word() -> None:
        nonlocal word, redirect
        if word is None:
            return
        w = "".join(word)
        word = None
        if redirect is not None:
            op, fd = redirect
            redirect = None
            if op in ("<<", "<<-"):
                heredocs.append((w, cur, op == "<<-"))
            elif op in (">", ">>", ">|", "&>", "&>>") and fd in ("", "1") and not w.startswith("&"):
                cur.out.append(w)
            return
        cur.argv.append(w)

    def end_stage() -> None:
        nonlocal cur
        end_word()
        if cur.argv or cur.out or cur.heredoc:
            stages.append(cur)
        cur = _Stage()

    def end_pipeline() -> None:
        nonlocal stages
        end_stage()
        if stages:
            pipelines.append(stages)
        stages = []

    def read_heredocs(pos: int) -> int:
        # pos is just after a newline: consume each pending here-document body
        for delim, stage, strip_tabs in heredocs:
            body = []
            while pos < n:
                j = script.find("\n", pos)
                line = script[pos:] if j < 0 else script[pos:j]
                pos = n if j < 0 else j + 1
                if (line.lstrip("\t") if strip_tabs else line) == delim:
                    break
                body.append(line)
            stage.heredoc.append("\n".join(body))
        heredocs.clear()
        return pos

    while i < n:
        ch = script[i]
        if ch == "\\" and i + 1 < n:
            if script[i + 1] == "\n":
                i += 2
                continue
            word = (word or []) + [script[i + 1]]
            i += 2
            continue
        if ch == "'":
            j = script.find("'", i + 1)
            j = n if j < 0 else j
            word = (word or []) + [script[i + 1 : j]]
            i = j + 1
            continue
        if ch == '"':
            j = i + 1
            buf = []
            while j < n and script[j] != '"':
                if script[j] == "\\" and j + 1 < n and script[j + 1] in '"\\$`\n':
                    buf.append(script[j + 1])
                    j += 2
                    continue
                buf.append(script[j])
                j += 1
            word = (word or []) + ["".join(buf)]
            i = j + 1
            continue
        if ch == "$" and i + 1 < n and script[i + 1] in "({":
            close = ")" if script[i + 1] == "(" else "}"
            opening = script[i + 1]
            depth, j = 0, i + 1
            while j < n:
                if script[j] == opening:
                    depth += 1
                elif script[j] == close:
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            word = (word or []) + [script[i : j + 1]]
            i = j + 1
            continue
        if ch == "`":
            j = script.find("`", i + 1)
            j = n if j < 0 else j
            word = (word or []) + [script[i : j + 1]]
            i = j + 1
            continue
        if ch == "#" and word is None:
            j = script.find("\n", i)
            i = n if j < 0 else j
            continue
        if ch in "<>" or (ch == "&" and script.startswith("&>", i)):
            fd = ""
            if word is not None and "".join(word).isdigit():
                fd = "".join(word)
                word = None
            end_word()
            for op in ("&>>", "&>", "<<<", "<<-", "<<", ">>", ">|", ">&", "<&", "<>", ">", "<"):
                if script.startswith(op, i):
                    break
            i += len(op)
            if op in (">&", "<&"):
                # fd duplication (2>&1): the target is a descriptor, not a file
                m = re.match(r"\s*[0-9-]+", script[i:])
                if m:
                    i += m.end()
                    continue
                op = ">" if op == ">&" else "<"
            redirect = (op, fd)
            continue
        if ch in " \t":
            end_word()
            i += 1
            continue
        if ch == "\n":
            end_pipeline()
            i = read_heredocs(i + 1) if heredocs else i + 1
            continue
        if ch == "|":
            if script.startswith("||", i):
                end_pipeline()
                i += 2
            else:
                end_stage()
                i += 2 if script.startswith("|&", i) else 1
            continue
        if ch in ";()":
            end_pipeline()
            i += 2 if script.startswith(";;", i) else 1
            continue
        if ch == "&":
            end_pipeline()
            i += 2 if script.startswith("&&", i) else 1
            continue
        word = (word or []) + [ch]
        i += 1
    end_pipeline()
    return pipelines


_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_KEYWORDS = frozenset({"then", "else", "do", "!", "{", "}", "if", "elif", "while", "until", "time"})
_WRAPPERS = frozenset({"sudo", "command", "builtin", "exec", "nohup", "nice", "stdbuf"})
_NEUTRAL = frozenset(
    {"echo", "printf", "true", "false", ":", "pwd", "set", "export", "unset", "local", "shopt", "fi", "done",
     "esac", "clear", "exit", "return", "test", "[", "[["}
)
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$", re.M)
_SED_RANGE = re.compile(r"^\s*(\d+)\s*(?:,\s*(\d+|\$)\s*)?p\s*;?\s*$")


def patch_first_file(patch: str) -> str | None:
    """The first file an ``apply_patch`` envelope adds, updates or deletes."""
    m = _PATCH_FILE.search(patch or "")
    return m.group(1) if m else None


def _unwrap(argv: list[str]) -> list[str]:
    out = list(argv)
    while out:
        head = out[0]
        base = posixpath.basename(head)
        if _ASSIGN.match(head) or head in _KEYWORDS:
            out = out[1:]
        elif base in _WRAPPERS:
            out = out[1:]
            while out and out[0].startswith("-"):
                out = out[1:]
        elif base == "env":
            out = out[1:]
            while out and (out[0].startswith("-") or _ASSIGN.match(out[0])):
                out = out[1:]
        elif base == "timeout":
            out = out[1:]
            while out and out[0].startswith("-"):
                out = out[1:]
            out = out[1:]  # the duration
        else:
            break
    return out


def _positional(args: list[str], value_short: str = "", value_long: frozenset[str] = frozenset()) -> tuple[list[str], dict[str, list[str]]]:
    """Split args into positionals and options (short clusters, ``--opt=v``, ``--opt v``)."""
    pos: list[str] = []
    opts: dict[str, list[str]] = {}
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            pos.extend(args[i + 1 :])
            break
        if a.startswith("--") and len(a) > 2:
            name, eq, val = a[2:].partition("=")
            if eq:
                opts.setdefault(name, []).append(val)
            elif name in value_long and i + 1 < len(args):
                opts.setdefault(name, []).append(args[i + 1])
                i += 1
            else:
                opts.setdefault(name, []).append("")
        elif a.startswith("-") and len(a) > 1 and not a[1:].isdigit():
            j = 1
            while j < len(a):
                c = a[j]
                if c in value_short:
                    rest = a[j + 1 :]
                    if rest:
                        opts.setdefault(c, []).append(rest)
                    elif i + 1 < len(args):
                        opts.setdefault(c, []).append(args[i + 1])
                        i += 1
                    break
                opts.setdefault(c, []).append("")
                j += 1
        else:
            pos.append(a)
        i += 1
    return pos, opts


_RG_LONG = frozenset(
    {"regexp", "file", "glob", "iglob", "type", "type-not", "max-count", "after-context", "before-context",
     "context", "max-columns", "threads", "replace", "encoding", "max-depth", "sort", "sortr", "type-add",
     "pre", "pre-glob", "max-filesize", "colors", "color", "path-separator", "context-separator",
     "field-match-separator", "engine", "dfa-size-limit", "regex-size-limit", "ignore-file"}
)
_GREP_LONG = frozenset(
    {"regexp", "file", "after-context", "before-context", "context", "max-count", "include", "exclude",
     "exclude-dir", "label", "color", "colour", "devices", "directories", "binary-files"}
)


def _stage_info(argv: list[str], heredoc: list[str]) -> tuple[str, list[str], int | None, int | None] | None:
    """(kind, paths, line_start, line_end) of one simple command; None when it is neutral."""
    argv = _unwrap(argv)
    if not argv:
        return None
    cmd = posixpath.basename(argv[0])
    args = argv[1:]
    if cmd in _NEUTRAL:
        return None
    if cmd in _SHELLS:
        for k, a in enumerate(args):
            if a.startswith("-") and not a.startswith("--") and "c" in a[1:] and k + 1 < len(args):
                t = classify_shell(args[k + 1])
                return t.kind, [t.path] if t.path else [], t.line_start, t.line_end
        return "shell", [], None, None
    if cmd == "apply_patch":
        body = args[0] if args else (heredoc[0] if heredoc else "")
        f = patch_first_file(body)
        return "mutate", [f] if f else [], None, None
    if cmd == "cat":
        pos, _ = _positional(args)
        pos = [p for p in pos if p != "-"]
        return ("read", pos, None, None) if pos else None
    if cmd in ("less", "more", "bat", "batcat"):
        pos, _ = _positional(args, "lmrH", frozenset({"line-range", "language", "style", "theme"}))
        return "read", pos, None, None
    if cmd == "nl":
        pos, _ = _positional(args, "bdfhilnsvw")
        return "read", pos, None, None
    if cmd == "head":
        pos, opts = _positional([("-n" + a[1:]) if re.fullmatch(r"-\d+", a) else a for a in args], "nc", frozenset({"lines", "bytes"}))
        if "c" in opts or "bytes" in opts:
            return "read", pos, None, None
        val = (opts.get("n") or opts.get("lines") or ["10"])[-1]
        m = re.fullmatch(r"\d+", val)
        return "read", pos, (1 if m else None), (int(val) if m else None)
    if cmd == "tail":
        if any(a in ("-f", "-F", "--follow") or a.startswith("--follow") for a in args):
            return "shell", [], None, None
        norm: list[str] = []
        for a in args:
            if re.fullmatch(r"[-+]\d+", a) and not (norm and norm[-1] in ("-n", "-c", "--lines", "--bytes")):
                norm += ["-n", a if a.startswith("+") else a[1:]]
            else:
                norm.append(a)
        pos, opts = _positional(norm, "nc", frozenset({"lines", "bytes"}))
        val = (opts.get("n") or opts.get("lines") or [""])[-1]
        if val.startswith("+") and val[1:].isdigit():
            return "read", pos, int(val[1:]), None
        return "read", pos, None, None
    if cmd in ("sed", "gsed"):
        pos, opts = _positional(args, "efl", frozenset({"expression", "file", "line-length"}))
        if "i" in opts or "in-place" in opts:
            files = pos if ("e" in opts or "expression" in opts or "f" in opts) else pos[1:]
            return "mutate", files, None, None
        scripts = (opts.get("e") or []) + (opts.get("expression") or [])
        if not scripts and "f" not in opts and pos:
            scripts, pos = [pos[0]], pos[1:]
        start = end = None
        if ("n" in opts or "quiet" in opts or "silent" in opts) and len(scripts) == 1:
            m = _SED_RANGE.match(scripts[0])
            if m:
                start = int(m.group(1))
                end = None if m.group(2) == "$" else int(m.group(2) or m.group(1))
        return ("read", pos, start, end) if pos else ("pipe-sed", [], start, end)
    if cmd in ("perl", "ruby") and any(re.fullmatch(r"-\w*i\w*", a) for a in args if a.startswith("-") and not a.startswith("--")):
        pos, _ = _positional([a for a in args if not re.fullmatch(r"-\w*[ie]\w*", a)])
        return "mutate", pos[1:], None, None
    if cmd in ("rg", "ripgrep"):
        pos, opts = _positional(args, "efgtTmABCMjrEd", _RG_LONG)
        if "files" in opts:
            return "list", pos or ["."], None, None
        if not ("e" in opts or "regexp" in opts or "f" in opts or "file" in opts):
            pos = pos[1:]
        return "search", pos or ["."], None, None
    if cmd in ("grep", "egrep", "fgrep", "ag", "ack", "ack-grep"):
        pos, opts = _positional(args, "efABCmdD", _GREP_LONG)
        if not ("e" in opts or "regexp" in opts or "f" in opts or "file" in opts):
            pos = pos[1:]
        recursive = any(k in opts for k in ("r", "R", "recursive", "dereference-recursive")) or cmd in ("ag", "ack", "ack-grep")
        if not pos and not recursive:
            return "pipe-grep", [], None, None  # reads stdin
        return "search", pos or ["."], None, None
    if cmd == "git" and args:
        sub_i = 0
        while sub_i < len(args) and args[sub_i].startswith("-"):
            sub_i += 2 if args[sub_i] in ("-C", "-c") else 1
        sub = args[sub_i] if sub_i < len(args) else ""
        base = args[sub_i - 1] if 2 <= sub_i <= len(args) and args[sub_i - 2] == "-C" else "."
        rest = args[sub_i + 1 :]
        if sub == "grep":
            paths = rest[rest.index("--") + 1 :] if "--" in rest else []
            return "search", [posixpath.join(base, p) for p in paths] or [base], None, None
        if sub == "ls-files":
            pos, _ = _positional(rest, "xX", frozenset({"exclude", "exclude-from"}))
            return "list", [posixpath.join(base, p) for p in pos] or [base], None, None
        return "shell", [], None, None
    if cmd in ("ls", "dir", "exa", "eza", "lsd"):
        pos, _ = _positional(args, "IwT", frozenset({"ignore", "hide", "width", "tabsize", "color", "sort", "time-style"}))
        return "list", pos or ["."], None, None
    if cmd == "tree":
        pos, _ = _positional(args, "LPIo", frozenset({"filelimit", "charset", "sort", "timefmt"}))
        return "list", pos or ["."], None, None
    if cmd == "find":
        paths = []
        for a in args:
            if a.startswith("-") or a in ("(", "!", ")"):
                break
            paths.append(a)
        return "list", paths or ["."], None, None
    if cmd in ("fd", "fdfind"):
        pos, _ = _positional(args, "etdEjxXcS", frozenset({"extension", "type", "max-depth", "min-depth", "exclude", "threads", "exec", "exec-batch", "color", "size", "changed-within", "changed-before", "owner", "base-directory", "max-results", "glob"}))
        return "list", pos[1:] or ["."], None, None
    if cmd in ("rm", "touch", "truncate", "tee", "unlink"):
        pos, _ = _positional(args, "s" if cmd == "truncate" else "")
        return ("mutate", pos, None, None) if pos else None
    if cmd in ("mv", "cp"):
        pos, _ = _positional(args, "tS", frozenset({"target-directory", "suffix"}))
        return "mutate", pos[-1:] if len(pos) >= 2 else [], None, None
    return "shell", [], None, None


def _has_unresolvable(path: str) -> bool:
    return any(c in path for c in "$`*?[{") or path == "-"


def classify_shell(command: Any) -> ShellTarget:
    """Classify a shell command (a script string or an argv list) by what it does to files.

    ``cat``/``nl``/``head``/``tail``/``sed -n``/``less`` are reads (``sed -n 'a,bp'`` and
    ``head -n N`` give a line range, also when piped after ``cat``/``nl -ba FILE``); ``rg``,
    ``grep``, ``git grep`` are searches (path defaults to the directory); ``ls``, ``find``,
    ``tree``, ``fd``, ``rg --files`` list; ``apply_patch`` (first file of the patch), ``sed -i``,
    ``rm``/``mv``/``cp``/``touch``/``tee`` and output redirection to a file mutate. Leading
    ``cd DIR`` is folded into the path; ``echo``/``printf`` decorations are ignored. Several
    commands of one kind keep that kind (a path only when they all name the same one); mixed
    kinds are ``shell``.
    """
    try:
        return _classify(command)
    except (ValueError, IndexError, KeyError, TypeError):
        return ShellTarget()  # an unparseable command is just a shell command


def _classify(command: Any) -> ShellTarget:
    if isinstance(command, (list, tuple)):
        argv = [str(a) for a in command]
        if len(argv) >= 3 and posixpath.basename(argv[0]) in _SHELLS and argv[1].startswith("-") and "c" in argv[1]:
            return _classify(argv[2])
        if argv and argv[0] == "apply_patch":
            f = patch_first_file(argv[1] if len(argv) > 1 else "")
            return ShellTarget("mutate", f)
        script = " ".join(_quote(a) for a in argv)
    elif isinstance(command, str):
        script = command
    else:
        return ShellTarget()
    pipelines = parse_script(script)
    cwd = ""
    parts: list[tuple[str, list[str], int | None, int | None]] = []
    for stages in pipelines:
        first = _unwrap(stages[0].argv)
        if first and first[0] in ("cd", "pushd") and len(stages) == 1:
            dest = next((a for a in first[1:] if not a.startswith("-")), "~")
            cwd = dest if dest.startswith(("/", "~")) or not cwd else posixpath.join(cwd, dest)
            continue
        info = _stage_info(stages[0].argv, stages[0].heredoc)
        if info is not None and info[0].startswith("pipe-"):
            info = ("shell", [], None, None)
        if info is not None and info[0] == "read" and len(stages) > 1 and info[2] is None and len(info[1]) == 1:
            for st in stages[1:]:
                nxt = _stage_info(st.argv, st.heredoc)
                if nxt and nxt[0] == "pipe-sed" and nxt[2] is not None:
                    info = ("read", info[1], nxt[2], nxt[3])
                    break
                if nxt and nxt[0] == "read" and not nxt[1] and nxt[3] is not None and nxt[2] == 1:
                    info = ("read", info[1], 1, nxt[3])  # head -n N reading the pipe
                    break
        elif info is None and len(stages) > 1:
            info = ("shell", [], None, None)
        outs = [t for st in stages for t in st.out if not t.startswith("/dev/")]
        if outs:
            info = ("mutate", outs[:1] if len(outs) == 1 else outs, None, None)
        if info is None:
            continue
        kind, paths, ls, le = info
        paths = [p if p.startswith(("/", "~")) or not cwd else posixpath.join(cwd, p) for p in paths]
        parts.append((kind, paths, ls, le))
    if not parts:
        return ShellTarget()
    kinds = {p[0] for p in parts}
    if len(kinds) != 1:
        return ShellTarget()
    kind = parts[0][0]
    if kind == "shell":
        return ShellTarget()
    if any(len(p[1]) != 1 for p in parts):
        return ShellTarget(kind)
    paths = {p[1][0] for p in parts}
    ranges = {(p[2], p[3]) for p in parts}
    if len(paths) != 1:
        return ShellTarget(kind)
    path = paths.pop()
    if _has_unresolvable(path):
        return ShellTarget(kind)
    ls, le = ranges.pop() if len(ranges) == 1 else (None, None)
    return ShellTarget(kind, path, ls, le)


def _quote(a: str) -> str:
    return a if re.fullmatch(r"[\w@%+=:,./-]+", a) else "'" + a.replace("'", "'\"'\"'") + "'"


def shell_resource(command: Any, cwd: str | None, keys: Keyring) -> tuple[str, str | None, int | None, int | None]:
    """(tool_kind, pseudonymized resource, line_start, line_end) of a shell command."""
    t = classify_shell(command)
    res = keys.path(t.path, cwd) if t.path else None
    return t.kind, res, t.line_start, t.line_end


# =========================================================================================
# Codex tools
# =========================================================================================

_SHELL_TOOLS = frozenset({"exec_command", "shell", "shell_command", "container.exec", "local_shell", "unified_exec"})
_SESSION_TOOLS = frozenset({"write_stdin", "read_stdin", "kill_session"})


def _codex_tool(name: str, args: Any, cwd: str | None, keys: Keyring) -> tuple[str, str | None, int | None, int | None]:
    """(tool_kind, resource, line_start, line_end) of a Codex tool call."""
    d = args if isinstance(args, dict) else {}
    workdir = d.get("workdir") or d.get("working_directory") or d.get("cwd")
    here = workdir if isinstance(workdir, str) and workdir else cwd
    if isinstance(here, str) and cwd and not here.startswith("/"):
        here = posixpath.join(cwd, here)
    if name in _SHELL_TOOLS:
        cmd = d.get("cmd", d.get("command")) if d else args
        return shell_resource(cmd, here, keys)
    if name in _SESSION_TOOLS:
        return "shell", None, None, None
    if name == "apply_patch":
        body = args if isinstance(args, str) else d.get("input", d.get("patch", ""))
        f = patch_first_file(body if isinstance(body, str) else "")
        return "mutate", keys.path(f, here) if f else None, None, None
    if name in ("read_file", "view_image"):
        p = d.get("file_path") or d.get("path")
        start = end = None
        off, lim = d.get("offset"), d.get("limit")
        if name == "read_file" and (isinstance(off, int) or isinstance(lim, int)):
            start = off if isinstance(off, int) and off > 0 else 1
            end = start + lim - 1 if isinstance(lim, int) and lim > 0 else None
        return "read", keys.path(p, here) if isinstance(p, str) and p else None, start, end
    if name in ("list_dir", "list_directory"):
        p = d.get("dir_path") or d.get("path") or here
        return "list", keys.path(p, here) if isinstance(p, str) and p else None, None, None
    if name in ("grep_files", "grep", "search"):
        p = d.get("path") or here
        return "search", keys.path(p, here) if isinstance(p, str) and p else None, None, None
    if name in ("web_search", "web_fetch", "fetch"):
        return "web", None, None, None
    if name.startswith("mcp__"):
        return mcp_kind(name), None, None, None
    return "other", None, None, None


def _parse_args(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
    return raw


def _message_text(payload: dict) -> str:
    content = payload.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") in ("input_text", "output_text", "text")
    )


def _output_parts(output: Any) -> tuple[str, list[str], bool | None]:
    """(text, image payloads, success flag) of a function_call_output's ``output``."""
    if output is None:
        return "", [], None
    if isinstance(output, str):
        return output, [], None
    if isinstance(output, dict):
        text, images, _ = _output_parts(output.get("content", output.get("output")))
        ok = output.get("success")
        return text if (text or images) else canonical_json(output), images, ok if isinstance(ok, bool) else None
    if isinstance(output, list):
        texts, images = [], []
        for part in output:
            if not isinstance(part, dict):
                texts.append(str(part))
            elif part.get("type") in ("input_text", "output_text", "text"):
                texts.append(str(part.get("text", "")))
            elif part.get("type") in ("input_image", "image"):
                images.append(data_url_payload(part.get("image_url", part.get("data"))))
            else:
                texts.append(canonical_json(part))
        return "\n".join(texts), images, None
    return canonical_json(output), [], None


_EXIT = re.compile(r"(?:Process exited with code|Exit code:)\s*(-?\d+)")


def _output_is_error(text: str, success: bool | None) -> bool:
    if success is not None:
        return not success
    m = _EXIT.search(text[:400])
    return bool(m and m.group(1) != "0")


# =========================================================================================
# Codex reader
# =========================================================================================


class _CodexReader:
    def __init__(self, b: TraceBuilder, records: list[tuple[int, dict]]):
        self.b = b
        self.records = records
        self.st = b.new_stream("main")
        self.cwd: str | None = None
        self.model: str | None = None
        self.session_id: str | None = None
        self.tools: dict[str, tuple[str, str, str | None, int | None, int | None, str]] = {}
        self.last_total: str | None = None
        self.last_usage: dict | None = None
        self.req_reasoning: list[int] = []  # block rows of the open request's reasoning items
        self.req_first_line: int | None = None
        self.seen_prompts: set[str] = set()
        self.seen_messages: set[str] = set()
        self.items_since_task_start = 0
        self.has_token_counts = any(
            r.get("type") == "event_msg" and isinstance(r.get("payload"), dict) and r["payload"].get("type") == "token_count"
            for _, r in records
        )
        self.prompt_lines = self._prompt_lines()

    def _prompt_lines(self) -> set[int]:
        """Lines of user messages that are prompts (Codex echoes a prompt as an event_msg user_message)."""
        out: set[int] = set()
        recs = self.records
        for k, (line, rec) in enumerate(recs):
            p = rec.get("payload")
            if rec.get("type") != "event_msg" or not isinstance(p, dict) or p.get("type") != "user_message":
                continue
            msg = p.get("message")
            msg = msg if isinstance(msg, str) else ""
            near = list(range(k - 1, max(-1, k - 5), -1)) + list(range(k + 1, min(len(recs), k + 5)))
            for j in near:
                q = recs[j][1].get("payload") if recs[j][1].get("type") == "response_item" else None
                if isinstance(q, dict) and q.get("type") == "message" and q.get("role") == "user":
                    text = _message_text(q)
                    if text == msg or (msg and text.strip() == msg.strip()):
                        out.add(recs[j][0])
                        break
        return out

    # --- requests -------------------------------------------------------------------------
    def _ensure_request(self, line: int, ts: int | None, item_id: Any) -> None:
        if self.st.open_req is None:
            key = item_id if isinstance(item_id, str) and item_id else f"{self.b.path.name}:{line}"
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
        if not isinstance(info, dict) or not isinstance(info.get("last_token_usage"), dict):
            self.b.report.non_context["event_msg:token_count(no info)"] += 1
            return
        total = info.get("total_token_usage")
        key = canonical_json(total) if isinstance(total, dict) else None
        if key is not None and key == self.last_total:
            self.b.report.non_context["event_msg:token_count(repeat)"] += 1
            return
        if key is None and self.st.open_req is None and canonical_json(info["last_token_usage"]) == canonical_json(self.last_usage):
            self.b.report.non_context["event_msg:token_count(repeat)"] += 1
            return
        self.b.report.non_context["event_msg:token_count"] += 1
        self.last_total = key
        u = info["last_token_usage"]
        self.last_usage = u
        if self.st.open_req is None:  # a call whose output items were not written
            self.b.open_request(self.st, parse_ts(self._ts), self.model, f"{self.b.path.name}:{line}")
        row = self.st.open_req
        inp, cached = num(u.get("input_tokens")), num(u.get("cached_input_tokens"))
        cached = min(cached, inp)
        self.b.set_usage(
            row, input_tokens=inp - cached, cache_read=cached, output_tokens=num(u.get("output_tokens")),
            has_usage=True, ttl_split_known=False, msg_id=("usage:" + key) if key else None,
        )
        reasoning = num(u.get("reasoning_output_tokens"))
        if reasoning and self.req_reasoning:
            share, rest = divmod(reasoning, len(self.req_reasoning))
            for k, brow in enumerate(self.req_reasoning):
                self.b.override_tokens(brow, share + (rest if k == 0 else 0))
        self.st.open_req = None
        self.req_reasoning = []

    # --- items ----------------------------------------------------------------------------
    def _user_side(self, line: int, p: dict, ts: int | None, *, replay: bool = False) -> None:
        """A user/developer/system message (input side of the conversation)."""
        role = p.get("role")
        text = _message_text(p)
        content = p.get("content")
        parts = content if isinstance(content, list) else [{"type": "input_text", "text": content if isinstance(content, str) else ""}]
        if replay:
            if role == "user" and text in self.seen_prompts:
                kind = "user_text"
            elif text in self.seen_messages or role != "user":
                kind = "attachment"
            else:
                kind = "compact_summary"  # a summary Codex wrote into the replacement history
        else:
            is_prompt = role == "user" and line in self.prompt_lines
            kind = "user_text" if is_prompt else "attachment"
            if is_prompt:
                self.st.user_turn += 1
                self.seen_prompts.add(text)
            self.seen_messages.add(text)
        for part in parts:
            if not isinstance(part, dict):
                continue
            ptype = part.get("type")
            if ptype in ("input_image", "image"):
                data = data_url_payload(part.get("image_url", part.get("data")))
                self.b.add_block(self.st, ts, "user", "image", "", data.encode(), extra_tokens=safe_image_tokens(data))
            elif ptype in ("input_text", "output_text", "text"):
                t = str(part.get("text", ""))
                self.b.add_block(self.st, ts, "user", kind, t)
            else:
                t = canonical_json(part)
                self.b.add_block(self.st, ts, "user", kind, t)

    def _reasoning(self, line: int, p: dict, ts: int | None, role: str = "assistant") -> int:
        summary = "\n".join(
            str(s.get("text", "")) for s in p.get("summary") or [] if isinstance(s, dict)
        )
        body = "\n".join(str(s.get("text", "")) for s in p.get("content") or [] if isinstance(s, dict))
        enc = p.get("encrypted_content") if isinstance(p.get("encrypted_content"), str) else ""
        visible = "\n".join(t for t in (summary, body) if t)
        content = (visible + "\0" + enc).encode("utf-8", "surrogatepass") if (visible or enc) else b""
        if not content:
            # nothing of the item was written: keep it distinct rather than equal to every other empty one
            ident = p.get("id") if isinstance(p.get("id"), str) else f"{self.b.path.name}:{line}"
            hash_input = b"\0reasoning\0" + ident.encode()
            row = self.b.add_block(self.st, ts, role, "thinking", "", hash_input, tokens=0)
            self.b.trace.blocks["bytes"][row] = 0
            return row
        return self.b.add_block(self.st, ts, role, "thinking", visible or enc, content)

    def _tool_call(self, line: int, p: dict, ts: int | None) -> None:
        ptype = p.get("type")
        call_id = p.get("call_id") if isinstance(p.get("call_id"), str) else p.get("id")
        call_id = call_id if isinstance(call_id, str) else None
        if ptype == "function_call":
            name = str(p.get("name") or "")
            ns = p.get("namespace")
            if isinstance(ns, str) and ns:
                name = f"{ns}__{name.lstrip('_')}"
            args = _parse_args(p.get("arguments"))
        elif ptype == "custom_tool_call":
            name = str(p.get("name") or "")
            args = p.get("input")
        elif ptype == "local_shell_call":
            name = "local_shell"
            action = p.get("action") if isinstance(p.get("action"), dict) else {}
            args = {"command": action.get("command"), "workdir": action.get("working_directory")}
        elif ptype == "web_search_call":
            name = "web_search"
            args = p.get("action")
        elif ptype == "tool_search_call":
            name = "tool_search"
            args = p.get("arguments")
        else:
            name = ptype or "tool"
            args = {k: v for k, v in p.items() if k not in ("id", "status", "internal_chat_message_metadata_passthrough")}
        if ptype == "web_search_call":
            kind, res, ls, le = "web", None, None, None
        elif ptype == "tool_search_call":
            kind, res, ls, le = "other", None, None, None
        else:
            kind, res, ls, le = _codex_tool(name, args, self.cwd, self.b.keys)
        text = tool_use_text(name, args)
        args_hash = self.b.keys.text_hash(canonical_json(args))[:16]
        if call_id:
            self.tools[call_id] = (name, kind, res, ls, le, args_hash)
        self.b.add_block(
            self.st, ts, "assistant", "tool_use", text, tool_name=name, tool_kind=kind, tool_use_id=call_id,
            resource=res, line_start=ls, line_end=le, args_hash=args_hash,
        )

    def _tool_output(self, line: int, p: dict, ts: int | None) -> None:
        call_id = p.get("call_id") if isinstance(p.get("call_id"), str) else None
        if p.get("type") == "tool_search_output":
            text, images, ok = canonical_json(p.get("tools")), [], None
        else:
            text, images, ok = _output_parts(p.get("output"))
        raw = text.encode("utf-8", "surrogatepass")
        if images:
            raw += b"".join(b"\0image:" + i.encode() for i in images)
        name, kind, res, ls, le, ah = self.tools.get(call_id or "", (None, None, None, None, None, None))
        self.b.add_block(
            self.st, ts, "user", "tool_result", text, raw, extra_tokens=sum(safe_image_tokens(i) for i in images),
            tool_name=name, tool_kind=kind, tool_use_id=call_id, resource=res, line_start=ls, line_end=le,
            args_hash=ah, is_error=_output_is_error(text, ok),
        )

    def _response_item(self, line: int, p: dict, ts: int | None) -> None:
        ptype = p.get("type")
        self.items_since_task_start += 1
        if ptype in NON_CONTEXT_ITEMS:
            self.b.report.non_context[f"response_item:{ptype}"] += 1
            return
        if ptype == "message":
            role = p.get("role")
            if role == "assistant":
                self._ensure_request(line, ts, p.get("id"))
                content = p.get("content")
                parts = content if isinstance(content, list) else [{"type": "output_text", "text": str(content or "")}]
                for part in parts:
                    if not isinstance(part, dict):
                        continue
                    t = str(part.get("text", part.get("refusal", ""))) if part.get("type") in ("output_text", "text", "refusal") else canonical_json(part)
                    self.b.add_block(self.st, ts, "assistant", "assistant_text", t)
                return
            if role in ("user", "developer", "system"):
                if not self.has_token_counts:
                    self.st.open_req = None  # legacy rollouts: input closes the inferred request
                self._user_side(line, p, ts)
                return
            self.b.report.skip("malformed_record", self.b.path, line, f"message with role {role!r}")
            return
        if ptype == "reasoning":
            self._ensure_request(line, ts, p.get("id"))
            self.req_reasoning.append(self._reasoning(line, p, ts))
            return
        if ptype in OUTPUT_ITEMS:
            self._ensure_request(line, ts, p.get("id"))
            self._tool_call(line, p, ts)
            return
        if ptype in INPUT_ITEMS:
            if not self.has_token_counts:
                self.st.open_req = None
            self._tool_output(line, p, ts)
            return
        if ptype in ("compaction", "compaction_summary"):
            enc = str(p.get("encrypted_content") or p.get("summary") or "")
            self.b.add_block(self.st, ts, "user", "compact_summary", enc)
            return
        self.b.report.skip("unknown_type", self.b.path, line, f"response item type {ptype!r}")

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
                if not isinstance(item, dict):
                    continue
                itype = item.get("type")
                if itype == "message":
                    self._user_side(line, item, ts, replay=True)
                elif itype in ("compaction", "compaction_summary"):
                    enc = str(item.get("encrypted_content") or item.get("summary") or "")
                    ident = item.get("id") if isinstance(item.get("id"), str) else f"{line}"
                    self.b.add_block(self.st, ts, "user", "compact_summary", enc, (enc + "\0" + ident).encode())
                elif itype == "reasoning":
                    self._reasoning(line, item, ts, role="assistant")
                elif itype in OUTPUT_ITEMS:
                    self._tool_call(line, item, ts)
                elif itype in INPUT_ITEMS:
                    self._tool_output(line, item, ts)
                else:
                    t = canonical_json(item)
                    self.b.add_block(self.st, ts, "user", "attachment", t)
        msg = p.get("message")
        if isinstance(msg, str) and msg:
            self.b.add_block(self.st, ts, "user", "compact_summary", msg)

    def read(self) -> None:
        self._ts: Any = None
        for line, rec in self.records:
            rtype = rec.get("type")
            p = rec.get("payload")
            self._ts = rec.get("timestamp")
            ts = parse_ts(self._ts)
            if rtype not in CODEX_TYPES:
                # legacy rollouts: items at the top level, a first line with the session id
                if rec.get("record_type") == "state":
                    self.b.report.non_context["state"] += 1
                    continue
                if rtype in _LEGACY_ITEM_TYPES or rtype in NON_CONTEXT_ITEMS:
                    self._response_item(line, rec, ts)
                    continue
                if line == self.records[0][0] and isinstance(rec.get("id"), str):
                    self.session_id = rec["id"]
                    self.b.report.non_context["session_meta"] += 1
                    continue
                self.b.report.skip("unknown_type", self.b.path, line, f"record type {rtype!r}")
                continue
            if not isinstance(p, dict):
                self.b.report.skip("malformed_record", self.b.path, line, f"{rtype} line without a payload object")
                continue
            if rtype == "response_item":
                self._response_item(line, p, ts)
            elif rtype == "event_msg":
                etype = p.get("type")
                if etype == "token_count":
                    self._token_count(line, p)
                    continue
                self.b.report.non_context[f"event_msg:{etype}"] += 1
                if etype == "task_started":
                    self.items_since_task_start = 0
                if etype in ("turn_aborted", "task_complete", "task_started") and self.st.open_req is not None:
                    self._close_without_usage(line, f"response ended by {etype} before its token_count")
            elif rtype == "turn_context":
                self.b.report.non_context["turn_context"] += 1
                if isinstance(p.get("model"), str) and p["model"]:
                    self.model = p["model"]
                if isinstance(p.get("cwd"), str) and p["cwd"]:
                    self.cwd = p["cwd"]
            elif rtype == "session_meta":
                self.b.report.non_context["session_meta"] += 1
                sid = p.get("id") or p.get("session_id")
                if isinstance(sid, str) and self.session_id is None:
                    self.session_id = sid
                if isinstance(p.get("cli_version"), str):
                    self.b.versions.add(p["cli_version"])
                if isinstance(p.get("cwd"), str) and p["cwd"] and self.cwd is None:
                    self.cwd = p["cwd"]
                if isinstance(p.get("model"), str) and p["model"] and self.model is None:
                    self.model = p["model"]
            elif rtype == "compacted":
                self._compacted(line, p, ts)
        if self.st.open_req is not None:
            self._close_without_usage(None, "response at the end of the file without a token_count")


def read_session(
    main: Path,
    keys: Keyring,
    dataset: str,
    file_key: str,
    report: ReadReport,
    subagent_files: list[Path] | None = None,
    data: bytes | None = None,
) -> SessionTrace | None:
    """Read one Codex rollout file into a SessionTrace.

    Raises FileError when the file is not a Codex rollout at all; bad lines are skipped and
    counted in ``report``. Codex has no separate sub-agent files (``subagent_files`` is ignored).
    """
    data = main.read_bytes() if data is None else data
    records = load_records(main, data, report)
    if not records:
        raise FileError("no records")
    if not sniff(records):
        raise FileError("not a Codex rollout (no session_meta/response_item/event_msg lines)")
    b = TraceBuilder(AGENT, keys, dataset, file_key, main, report)
    r = _CodexReader(b, records)
    r.read()
    return b.finish(r.session_id)
