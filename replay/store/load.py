"""Ingest: discover log files, read each into a trace, store it; never let one file stop the rest."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from replay import store
from replay.ingest.keys import Keyring, load_or_create_master_key
import orjson

from replay.ingest.readers import claude_code, codex, copilot, gemini
from replay.ingest.readers.base import FileError, ReadReport
from replay.ingest.tokens import COUNTER

LOG_SUFFIXES = (".jsonl", ".json")
SKIP_NAMES = frozenset({"MANIFEST.json", "package.json", "package-lock.json", "tsconfig.json"})
SNIFFED_READERS = (codex, copilot, gemini)  # tried in this order; Claude Code is the fallback


def reader_for(data: bytes):
    """The reader module for a log, from its first 50 lines (JSON arrays are Claude Stop-hook dumps)."""
    head = []
    for i, raw in enumerate(data.split(b"\n", 50)[:50], 1):
        try:
            rec = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(rec, dict):
            head.append((i, rec))
    for mod in SNIFFED_READERS:
        if mod.sniff(head):
            return mod
    return claude_code


@dataclass
class Unit:
    """One session on disk: a main transcript and its separate subagent files."""

    main: Path
    subagents: list[Path] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(p.stat().st_size for p in [self.main, *self.subagents] if p.exists())


@dataclass
class IngestSummary:
    files: int = 0
    ingested: int = 0
    unchanged: int = 0
    duplicates: int = 0
    new_versions: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    skipped_files: list[tuple[str, str]] = field(default_factory=list)  # not regular files: never opened
    sessions: int = 0
    streams: int = 0
    requests: int = 0
    blocks: int = 0
    bytes: int = 0
    seconds: float = 0.0
    report: ReadReport = field(default_factory=ReadReport)

    def as_dict(self) -> dict:
        return {
            "files": self.files,
            "ingested": self.ingested,
            "new_versions": self.new_versions,
            "unchanged": self.unchanged,
            "duplicates": self.duplicates,
            "failed": [{"file": f, "reason": r} for f, r in self.failed],
            "skipped_files": [{"file": f, "reason": r} for f, r in self.skipped_files],
            "sessions": self.sessions,
            "streams": self.streams,
            "requests": self.requests,
            "blocks": self.blocks,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
            "skipped_lines": dict(self.report.skipped),
            "non_context_lines": dict(self.report.non_context),
        }

    @property
    def nothing_usable(self) -> bool:
        """Every given file failed or was skipped: nothing ingested, nothing already there."""
        return (self.ingested + self.unchanged + self.duplicates) == 0 and bool(self.failed or self.skipped_files)


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

    Nonexistent paths and directories without logs are reported in ``problems``; FIFOs,
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
            found = _walk(p, skipped)
            if not found:
                problems.append((str(p), "directory holds no .jsonl or .json log files"))
            files.extend(found)
        elif not_regular(mode):
            skipped.append((str(p), not_regular(mode)))
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


def _walk(root: Path, skipped: list[tuple[str, str]]) -> list[Path]:
    """The log files under ``root``; entries that are not regular files go to ``skipped``."""
    found = []
    for f in sorted(root.rglob("*")):
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
        elif f.suffix in LOG_SUFFIXES and f.name not in SKIP_NAMES:
            found.append(f)
    return found


def ingest(
    paths: list[Path],
    db: Path,
    dataset: str = "default",
    key_file: Path | None = None,
    on_progress: Callable[[int, str], None] | None = None,
    on_total: Callable[[int], None] | None = None,
    batch_blocks: int = 50_000,
    master_key: bytes | None = None,
) -> IngestSummary:
    """Ingest every log under ``paths`` into ``db``. Per-file problems are counted, not raised.

    ``master_key`` (as read by `open_master_key`) wins over ``key_file``, which is created if
    missing. A damaged database is refused (StoreError) before anything is written to it.
    """
    t0 = time.perf_counter()
    summary = IngestSummary()
    units = discover(paths, summary.failed, summary.skipped_files)
    summary.files = sum(1 + len(u.subagents) for u in units)
    master = master_key if master_key is not None else load_or_create_master_key(key_file)
    keys = Keyring.for_dataset(master, dataset)
    con = store.connect(db, verify=True)
    try:
        store.ensure_dataset(con, dataset, keys.fingerprint, COUNTER)
        if on_total:
            on_total(sum(u.size for u in units))
        pending: list[store.PendingFile] = []
        pending_blocks = 0
        for unit in units:
            item = _read_unit(con, unit, keys, dataset, summary, pending)
            if item is not None:
                pending.append(item)
                pending_blocks += item.trace.n_blocks if item.trace else 0
            if pending_blocks >= (_BATCH or batch_blocks):
                _flush(con, pending, summary)
                pending_blocks = 0
            if on_progress:
                on_progress(unit.size, unit.main.name)
        _flush(con, pending, summary)
    finally:
        con.close()
    summary.seconds = time.perf_counter() - t0
    return summary


# test hooks (crash-safety test): per-file delay and a note per committed batch
_SLOW_MS = int(os.environ.get("CTXREPLAY_INGEST_SLOW_MS", "0") or 0)
_TRACE_FILE = os.environ.get("CTXREPLAY_INGEST_TRACE")
_BATCH = int(os.environ.get("CTXREPLAY_INGEST_BATCH_BLOCKS", "0") or 0)


def _flush(con, pending: list[store.PendingFile], summary: IngestSummary) -> None:
    store.write_sessions(con, pending)
    if _TRACE_FILE and pending:
        with open(_TRACE_FILE, "a") as fh:
            fh.write(f"{len(pending)}\n")
    for p in pending:
        summary.ingested += 1
        if p.version > 1:
            summary.new_versions += 1
        if p.trace is not None:
            summary.sessions += 1
            summary.streams += p.trace.session["n_streams"]
            summary.requests += p.trace.n_requests
            summary.blocks += p.trace.n_blocks
    pending.clear()


def _read_unit(
    con, unit: Unit, keys: Keyring, dataset: str, summary: IngestSummary, pending: list[store.PendingFile]
) -> store.PendingFile | None:
    try:
        data = read_regular(unit.main)
        subs = [(p, read_regular(p)) for p in sorted(unit.subagents)]
    except OSError as e:
        summary.failed.append((str(e.filename or unit.main), f"cannot read: {e.strerror or e}"))
        return None
    file_key = keys.short("file", str(unit.main), 16)
    blob = data + b"".join(b"\0sub\0" + b for _, b in subs)
    content_hash = keys.content_hash(blob)
    summary.bytes += len(blob)
    latest, latest_hash = store.file_status(con, dataset, file_key)
    if latest_hash == content_hash:
        summary.unchanged += 1
        return None
    if latest == 0 and (
        store.content_known(con, dataset, content_hash) or any(p.content_hash == content_hash for p in pending)
    ):
        summary.duplicates += 1
        return None
    report = ReadReport()
    if _SLOW_MS:
        time.sleep(_SLOW_MS / 1000)
    reader = reader_for(data)
    try:
        trace = reader.read_session(
            unit.main, keys, dataset, file_key, report, subagent_files=[p for p, _ in subs], data=data
        )
    except FileError as e:
        summary.failed.append((str(unit.main), str(e)))
        summary.report.merge(report)
        return None
    except Exception as e:  # a reader bug must not cost the user the other files
        summary.failed.append((str(unit.main), f"internal error while reading ({type(e).__name__}: {e}); please report"))
        return None
    summary.report.merge(report)
    return store.PendingFile(
        trace, dataset, file_key, latest + 1, content_hash, len(blob), len(subs), reader.AGENT,
        dict(report.skipped),
    )


def read_regular(path: Path) -> bytes:
    """The bytes of a regular file; anything else (swapped in since discovery) is refused, never waited on."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(0, not_regular(mode), str(path))
        with os.fdopen(os.dup(fd), "rb") as fh:
            return fh.read()
    finally:
        os.close(fd)
