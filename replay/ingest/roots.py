"""Where things live on a user's machine when no path is given: the agents' log folders that
the readers understand, and ctxreplay's own default database.

Only the standard library: the CLI asks for these before anything heavy is imported.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

DB_ENV = "CTXREPLAY_DB"
DB_NAME = "ctxreplay.duckdb"


@dataclass(frozen=True)
class LogRoot:
    agent: str
    path: Path


def _home(env: Mapping[str, str]) -> Path:
    # HOME from the given environment (not the process's), so tests and callers can point it elsewhere
    return Path(env["HOME"]) if env.get("HOME") else Path.home()


def _xdg(env: Mapping[str, str], var: str, fallback: str) -> Path:
    value = env.get(var)
    # the XDG spec ignores relative values: they would depend on the current directory
    if value and os.path.isabs(value):
        return Path(value)
    return _home(env) / fallback


def default_db_path(env: Mapping[str, str] | None = None) -> Path:
    """$XDG_DATA_HOME/ctxreplay/ctxreplay.duckdb, else ~/.local/share/ctxreplay/ctxreplay.duckdb
    (``CTXREPLAY_DB`` is the caller's to honour first: `db_from_env`)."""
    env = os.environ if env is None else env
    return _xdg(env, "XDG_DATA_HOME", ".local/share") / "ctxreplay" / DB_NAME


def db_from_env(env: Mapping[str, str] | None = None) -> Path | None:
    """The database ``CTXREPLAY_DB`` names (``~`` expanded), or None when it is unset or empty."""
    env = os.environ if env is None else env
    value = env.get(DB_ENV, "").strip()
    return Path(os.path.expanduser(value)) if value else None


def candidate_roots(env: Mapping[str, str] | None = None) -> list[LogRoot]:
    """Every folder looked at, present or not (for messages that say where we looked).

    Claude Code as ccusage finds it: each folder of the comma-separated ``CLAUDE_CONFIG_DIR``
    when set (its ``projects/``), else ``$XDG_CONFIG_HOME/claude/projects`` and
    ``~/.claude/projects``. Codex: ``$CODEX_HOME/sessions`` (default ``~/.codex``). Gemini
    CLI: its chat folders ``~/.gemini/tmp/*/chats`` (not the whole ``tmp``, which also holds
    prompt logs and checkpoints that are not sessions). Copilot CLI: ``~/.copilot/session-state``.
    """
    env = os.environ if env is None else env
    home = _home(env)
    roots: list[LogRoot] = []
    claude_dirs = [d.strip() for d in env.get("CLAUDE_CONFIG_DIR", "").split(",") if d.strip()]
    if claude_dirs:
        roots += [LogRoot("claude-code", Path(os.path.expanduser(d)) / "projects") for d in claude_dirs]
    else:
        roots += [LogRoot("claude-code", _xdg(env, "XDG_CONFIG_HOME", ".config") / "claude" / "projects"),
                  LogRoot("claude-code", home / ".claude" / "projects")]
    codex = env.get("CODEX_HOME", "").strip()
    roots.append(LogRoot("codex", (Path(os.path.expanduser(codex)) if codex else home / ".codex") / "sessions"))
    gemini_tmp = home / ".gemini" / "tmp"
    try:
        chats = sorted(p / "chats" for p in gemini_tmp.iterdir() if (p / "chats").is_dir())
    except OSError:
        chats = []
    roots += [LogRoot("gemini-cli", p) for p in chats] or [LogRoot("gemini-cli", gemini_tmp / "*" / "chats")]
    roots.append(LogRoot("copilot-cli", home / ".copilot" / "session-state"))
    return roots


def default_log_roots(env: Mapping[str, str] | None = None) -> list[LogRoot]:
    """The candidate folders that exist, each once (two names for one folder count once)."""
    found: list[LogRoot] = []
    seen: set[Path] = set()
    for r in candidate_roots(env):
        try:
            if not r.path.is_dir():
                continue
            real = r.path.resolve()
        except OSError:  # an unreadable parent: as absent
            continue
        if real not in seen:
            seen.add(real)
            found.append(r)
    return found


def shown(path: Path, env: Mapping[str, str] | None = None) -> str:
    """``path`` with the home folder written as ``~`` (shorter in messages)."""
    env = os.environ if env is None else env
    home = str(_home(env))
    p = str(path)
    return "~" + p[len(home):] if home not in ("", "/") and (p == home or p.startswith(home + os.sep)) else p
