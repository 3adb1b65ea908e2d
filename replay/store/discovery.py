"""Which files an ingest reads: log files under the given paths (gzip logs, ``x.jsonl.gz``,
included), each session's subagent files attached to it; what is not read (FIFOs, devices,
unreadable folders, other compressed logs and archives) is named."""

from __future__ import annotations

import stat
from dataclasses import dataclass, field
from pathlib import Path

from replay.ingest.readers.source import compressed_log, compressed_reason, gzip_log, walk_files

LOG_SUFFIXES = (".jsonl", ".json")
SKIP_NAMES = frozenset({"MANIFEST.json", "package.json", "package-lock.json", "tsconfig.json"})


@dataclass
class Unit:
    """One session on disk: a main transcript and its separate subagent files."""

    main: Path
    subagents: list[Path] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(p.stat().st_size for p in [self.main, *self.subagents] if p.exists())


def _is_subagent_file(p: Path) -> bool:
    return p.parent.name == "subagents" and p.name.startswith("agent-") and p.suffix == ".jsonl"


_KINDS = {stat.S_IFIFO: "a named pipe (FIFO)", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFSOCK: "a socket"}


def not_regular(mode: int) -> str:
    """Why a file of this mode is not read ("" for a regular file)."""
    if stat.S_ISREG(mode):
        return ""
    return f"{_KINDS.get(stat.S_IFMT(mode), 'not a regular file')}, not read"


def discover(
    paths: list[Path], problems: list[tuple[str, str]], skipped: list[tuple[str, str]] | None = None
) -> list[Unit]:
    """Log units under the given files/directories, subagent files attached to their session.

    Nonexistent paths, directories without logs, unreadable folders and compressed logs are
    reported in ``problems``; FIFOs,
    devices and sockets (given or found) in ``skipped`` (default: ``problems``), never opened.
    """
    skipped = problems if skipped is None else skipped
    files: list[Path] = []
    for p in paths:
        try:
            mode = p.stat().st_mode
        except FileNotFoundError:
            problems.append((str(p), "no such file or directory"))
            continue
        except OSError as e:
            problems.append((str(p), f"cannot read: {e.strerror or e}"))
            continue
        if stat.S_ISDIR(mode):
            named = len(problems)
            found = _walk(p, skipped, problems)
            if not found and len(problems) == named:
                problems.append((str(p), "directory holds no .jsonl or .json log files"))
            files.extend(found)
        elif not_regular(mode):
            skipped.append((str(p), not_regular(mode)))
        elif compressed_log(p) and not gzip_log(p):
            problems.append((str(p), compressed_reason(p)))
        else:
            files.append(p)
    seen: set[Path] = set()
    units: dict[Path, Unit] = {}
    orphans: list[Path] = []
    for f in files:
        rf = f.resolve()
        if rf in seen:
            continue
        seen.add(rf)
        if _is_subagent_file(rf):
            orphans.append(rf)
        else:
            units[rf] = Unit(rf)
    for sub in orphans:
        # <dir>/<session>/subagents/agent-x.jsonl belongs to <dir>/<session>.jsonl
        session_dir = sub.parent.parent
        parent = session_dir.parent / (session_dir.name + ".jsonl")
        if parent in units:
            units[parent].subagents.append(sub)
        else:
            units[sub] = Unit(sub)  # no parent transcript: ingested as a session of its own
    return [units[k] for k in sorted(units)]


def _walk(root: Path, skipped: list[tuple[str, str]], problems: list[tuple[str, str]]) -> list[Path]:
    """The log files under ``root``; entries that are not regular files go to ``skipped``,
    unreadable folders and compressed logs to ``problems``."""
    found = []
    entries, unreadable = walk_files(root)
    problems.extend(unreadable)
    for f in entries:
        if compressed_log(f) and not gzip_log(f):
            problems.append((str(f), compressed_reason(f)))
            continue
        try:
            mode = f.stat().st_mode
        except OSError as e:
            if f.suffix in LOG_SUFFIXES:
                skipped.append((str(f), f"cannot read: {e.strerror or e}"))
            continue
        if stat.S_ISDIR(mode):
            continue
        if not_regular(mode):
            skipped.append((str(f), not_regular(mode)))
        elif (f.suffix in LOG_SUFFIXES and f.name not in SKIP_NAMES) or gzip_log(f):
            found.append(f)
    return found
