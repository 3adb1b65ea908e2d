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
    # resolved path -> the path as given or found under a given folder, where they differ (a
    # symlink): files are keyed by their resolved path, but named to the user as they know them
    found: dict[Path, Path] = field(default_factory=dict)

    def shown(self, path: Path | str) -> str:
        """``path`` as the user gave or found it."""
        return str(self.found.get(Path(path), path))

    def shown_message(self, message: str) -> str:
        """A `path:line: ...` message naming a resolved path, with the path as the user gave it."""
        for real, given in self.found.items():
            if message.startswith(f"{real}:"):
                return f"{given}{message[len(str(real)):]}"
        return message

    @property
    def size(self) -> int:
        return sum(p.stat().st_size for p in [self.main, *self.subagents] if p.exists())


def _is_subagent_file(p: Path) -> bool:
    return p.parent.name == "subagents" and p.name.startswith("agent-") and p.name.endswith((".jsonl", ".jsonl.gz"))


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
    as_found: dict[Path, Path] = {}
    for f in files:
        rf = f.resolve()
        if rf in seen:
            continue
        seen.add(rf)
        if rf != f:
            as_found[rf] = f
        if _is_subagent_file(rf):
            orphans.append(rf)
        else:
            units[rf] = Unit(rf, found={rf: as_found[rf]} if rf in as_found else {})
    for sub in orphans:
        # <dir>/<session>/subagents/agent-x.jsonl belongs to <dir>/<session>.jsonl
        session_dir = sub.parent.parent
        parent = session_dir.parent / (session_dir.name + ".jsonl")
        if parent not in units:  # a session archived with gzip keeps its subagent files (gzipped or not)
            parent = session_dir.parent / (session_dir.name + ".jsonl.gz")
        if parent in units:
            units[parent].subagents.append(sub)
            if sub in as_found:
                units[parent].found[sub] = as_found[sub]
        else:
            units[sub] = Unit(sub, found={sub: as_found[sub]} if sub in as_found else {})
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
