"""What a shell command does to which file (Codex exec_command/shell, Gemini run_shell_command,
Copilot bash): :func:`classify_shell` and :func:`shell_resource`.

The script is split by :mod:`replay.ingest.shell_parse`; each simple command is then
classified by its program (``cat``/``sed -n``/``head`` read, ``rg``/``grep`` search,
``ls``/``find`` list, ``apply_patch``/``sed -i``/redirections mutate, ...).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any

from replay.ingest.keys import Keyring
from replay.ingest.shell_parse import Stage, parse_script

# (kind, paths, line_start, line_end) of one simple command or pipeline
Info = tuple[str, list[str], int | None, int | None]


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


def _opaque() -> Info:
    return "shell", [], None, None


def _shell(cmd: str, args: list[str], heredoc: list[str]) -> Info | None:
    for k, a in enumerate(args):
        if a.startswith("-") and not a.startswith("--") and "c" in a[1:] and k + 1 < len(args):
            t = classify_shell(args[k + 1])
            return t.kind, [t.path] if t.path else [], t.line_start, t.line_end
    return _opaque()


def _apply_patch(cmd: str, args: list[str], heredoc: list[str]) -> Info | None:
    body = args[0] if args else (heredoc[0] if heredoc else "")
    f = patch_first_file(body)
    return "mutate", [f] if f else [], None, None


def _cat(cmd: str, args: list[str], heredoc: list[str]) -> Info | None:
    pos, _ = _positional(args)
    pos = [p for p in pos if p != "-"]
    return ("read", pos, None, None) if pos else None


def _pager(cmd: str, args: list[str], heredoc: list[str]) -> Info | None:
    pos, _ = _positional(args, "lmrH", frozenset({"line-range", "language", "style", "theme"}))
    return "read", pos, None, None


def _nl(cmd: str, args: list[str], heredoc: list[str]) -> Info | None:
    pos, _ = _positional(args, "bdfhilnsvw")
    return "read", pos, None, None


def _head(cmd: str, args: list[str], heredoc: list[str]) -> Info | None:
    pos, opts = _positional([("-n" + a[1:]) if re.fullmatch(r"-\d+", a) else a for a in args], "nc", frozenset({"lines", "bytes"}))
    if "c" in opts or "bytes" in opts:
        return "read", pos, None, None
    val = (opts.get("n") or opts.get("lines") or ["10"])[-1]
    m = re.fullmatch(r"\d+", val)
    return "read", pos, (1 if m else None), (int(val) if m else None)


def _tail(cmd: str, args: list[str], heredoc: list[str]) -> Info | None:
    if any(a in ("-f", "-F", "--follow") or a.startswith("--follow") for a in args):
        return _opaque()
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


def _sed(cmd: str, args: list[str], heredoc: list[str]) -> Info | None:
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


def _perl(cmd: str, args: list[str], heredoc: list[str]) -> Info | None:
    if not any(re.fullmatch(r"-\w*i\w*", a) for a in args if a.startswith("-") and not a.startswith("--")):
        return _opaque()
    pos, _ = _positional([a for a in args if not re.fullmatch(r"-\w*[ie]\w*", a)])
    return "mutate", pos[1:], None, None


def _has_pattern_option(opts: dict[str, list[str]]) -> bool:
    return "e" in opts or "regexp" in opts or "f" in opts or "file" in opts


def _rg(cmd: str, args: list[str], heredoc: list[str]) -> Info | None:
    pos, opts = _positional(args, "efgtTmABCMjrEd", _RG_LONG)
    if "files" in opts:
        return "list", pos or ["."], None, None
    if not _has_pattern_option(opts):
        pos = pos[1:]
    return "search", pos or ["."], None, None


def _grep(cmd: str, args: list[str], heredoc: list[str]) -> Info | None:
    pos, opts = _positional(args, "efABCmdD", _GREP_LONG)
    if not _has_pattern_option(opts):
        pos = pos[1:]
    recursive = any(k in opts for k in ("r", "R", "recursive", "dereference-recursive")) or cmd in ("ag", "ack", "ack-grep")
    if not pos and not recursive:
        return "pipe-grep", [], None, None  # reads stdin
    return "search", pos or ["."], None, None


def _git(cmd: str, args: list[str], heredoc: list[str]) -> Info | None:
    if not args:
        return _opaque()
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
    return _opaque()


def _ls(cmd: str, args: list[str], heredoc: list[str]) -> Info | None:
    pos, _ = _positional(args, "IwT", frozenset({"ignore", "hide", "width", "tabsize", "color", "sort", "time-style"}))
    return "list", pos or ["."], None, None


def _tree(cmd: str, args: list[str], heredoc: list[str]) -> Info | None:
    pos, _ = _positional(args, "LPIo", frozenset({"filelimit", "charset", "sort", "timefmt"}))
    return "list", pos or ["."], None, None


def _find(cmd: str, args: list[str], heredoc: list[str]) -> Info | None:
    paths = []
    for a in args:
        if a.startswith("-") or a in ("(", "!", ")"):
            break
        paths.append(a)
    return "list", paths or ["."], None, None


_FD_LONG = frozenset(
    {"extension", "type", "max-depth", "min-depth", "exclude", "threads", "exec", "exec-batch", "color", "size",
     "changed-within", "changed-before", "owner", "base-directory", "max-results", "glob"}
)


def _fd(cmd: str, args: list[str], heredoc: list[str]) -> Info | None:
    pos, _ = _positional(args, "etdEjxXcS", _FD_LONG)
    return "list", pos[1:] or ["."], None, None


def _touch(cmd: str, args: list[str], heredoc: list[str]) -> Info | None:
    pos, _ = _positional(args, "s" if cmd == "truncate" else "")
    return ("mutate", pos, None, None) if pos else None


def _copy(cmd: str, args: list[str], heredoc: list[str]) -> Info | None:
    pos, _ = _positional(args, "tS", frozenset({"target-directory", "suffix"}))
    return "mutate", pos[-1:] if len(pos) >= 2 else [], None, None


_COMMANDS = {
    **dict.fromkeys(_SHELLS, _shell), "apply_patch": _apply_patch, "cat": _cat,
    **dict.fromkeys(("less", "more", "bat", "batcat"), _pager), "nl": _nl, "head": _head, "tail": _tail,
    "sed": _sed, "gsed": _sed, "perl": _perl, "ruby": _perl, "rg": _rg, "ripgrep": _rg,
    **dict.fromkeys(("grep", "egrep", "fgrep", "ag", "ack", "ack-grep"), _grep), "git": _git,
    **dict.fromkeys(("ls", "dir", "exa", "eza", "lsd"), _ls), "tree": _tree, "find": _find, "fd": _fd,
    "fdfind": _fd, **dict.fromkeys(("rm", "touch", "truncate", "tee", "unlink"), _touch), "mv": _copy, "cp": _copy,
}


def _stage_info(argv: list[str], heredoc: list[str]) -> Info | None:
    """(kind, paths, line_start, line_end) of one simple command; None when it is neutral."""
    argv = _unwrap(argv)
    if not argv:
        return None
    cmd = posixpath.basename(argv[0])
    if cmd in _NEUTRAL:
        return None
    handler = _COMMANDS.get(cmd)
    return handler(cmd, argv[1:], heredoc) if handler else _opaque()


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
    return _combine(_script_parts(parse_script(script)))


def _script_parts(pipelines: list[list[Stage]]) -> list[Info]:
    """What each pipeline does, its paths resolved against the directories ``cd`` went to."""
    cwd = ""
    parts: list[Info] = []
    for stages in pipelines:
        first = _unwrap(stages[0].argv)
        if first and first[0] in ("cd", "pushd") and len(stages) == 1:
            dest = next((a for a in first[1:] if not a.startswith("-")), "~")
            cwd = dest if dest.startswith(("/", "~")) or not cwd else posixpath.join(cwd, dest)
            continue
        info = _pipeline_info(stages)
        if info is None:
            continue
        kind, paths, ls, le = info
        paths = [p if p.startswith(("/", "~")) or not cwd else posixpath.join(cwd, p) for p in paths]
        parts.append((kind, paths, ls, le))
    return parts


def _pipeline_info(stages: list[Stage]) -> Info | None:
    """A pipeline is what its first command does (a line range may come from a later ``sed``/``head``)."""
    info = _stage_info(stages[0].argv, stages[0].heredoc)
    if info is not None and info[0].startswith("pipe-"):
        info = _opaque()
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
        info = _opaque()
    outs = [t for st in stages for t in st.out if not t.startswith("/dev/")]
    if outs:
        info = ("mutate", outs[:1] if len(outs) == 1 else outs, None, None)
    return info


def _combine(parts: list[Info]) -> ShellTarget:
    """Several commands of one kind keep it (and a path they all name); mixed kinds are shell."""
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
