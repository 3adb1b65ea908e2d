"""One unit (a session file and its subagent files) hashed and read into a checked trace.

What a worker process of `ingest --jobs N` does with a file, and what the writer does when it
reads one itself (`replay.store.load`). A trace read where token counting is deferred
(`replay.ingest.tokens.DEFER`) has its counts filled, and is checked, by `complete`.
"""

from __future__ import annotations

import os
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from replay.ingest import trace as trace_format
from replay.ingest.keys import Keyring
from replay.ingest.readers.report import FileError, ReadReport
from replay.ingest.readers.source import damaged_gzip, open_log
from replay.store.db import check_trace
from replay.store.discovery import Unit

# test hook (crash-safety test): a delay per file read
_SLOW_MS = int(os.environ.get("CTXREPLAY_INGEST_SLOW_MS", "0") or 0)


def reader_for(records):
    """The reader module for a log, from its content: a Gemini chat document, else its first 50 records.

    The readers are imported here, not with this module: an ingest that finds nothing new never loads them."""
    from replay.ingest.readers import claude_code, codex, copilot, gemini, gemini_chat

    if gemini_chat.sniff_document(records):
        return gemini_chat
    head = records.head(50)
    for mod in (codex, copilot, gemini):  # tried in this order; Claude Code is the fallback
        if mod.sniff(head):
            return mod
    return claude_code


def hash_unit(unit: Unit, keys: Keyring) -> tuple[str, int, dict[Path, int]]:
    """(keyed content hash, size, bytes per file) of a unit's files, read in chunks: the trace
    revision (``trace.TRACE_REVISION``; revision 1 hashed the bytes alone), the main file, then
    each subagent file (sorted) after ``\\0sub\\0``."""
    h = keys.hasher()
    if trace_format.TRACE_REVISION > 1:
        h.update(b"ctxreplay-trace-revision\0%d\0" % trace_format.TRACE_REVISION)
    sizes: dict[Path, int] = {}
    total = 0
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    for i, path in enumerate([unit.main, *sorted(unit.subagents)]):
        if i:
            h.update(b"\0sub\0")
            total += 5
        n = 0
        with open_log(path) as fh:
            try:
                while got := fh.readinto(buf):  # one buffer for every chunk: no new memory to fault in
                    h.update(view[:got])
                    n += got
            except (EOFError, zlib.error) as e:  # a truncated or damaged gzip log fails alone
                raise damaged_gzip(path, e) from e
        sizes[path] = n
        total += n
    return h.hexdigest(), total, sizes


@dataclass
class Parsed:
    """One unit read into a trace (``failure``: (path, reason) when it could not be)."""

    trace: object = None
    agent: str = ""
    report: ReadReport = field(default_factory=ReadReport)
    failure: tuple[str, str] | None = None
    merge_report: bool = False  # a failed file's line counts still go to the summary


def parse_unit(unit: Unit, keys: Keyring, dataset: str, file_key: str, sizes: dict[Path, int]) -> Parsed:
    """Read one unit (the bytes hashed, ``sizes``) into a checked trace; any problem fails this
    file alone. Its messages name the files as the user gave them (not their symlink targets).
    A trace whose token counting was deferred is counted and checked by `complete`."""
    parsed = _read_unit(unit, keys, dataset, file_key, sizes)
    if unit.found:
        parsed.report.messages[:] = [unit.shown_message(m) for m in parsed.report.messages]
    if parsed.trace is not None and parsed.trace.uncounted is None:
        parsed = _checked(unit, parsed)
    if unit.found and parsed.failure is not None:
        parsed.failure = (unit.shown(parsed.failure[0]), parsed.failure[1])
    return parsed


def complete(unit: Unit, parsed: Parsed) -> Parsed:
    """A parse whose token counting was deferred (`SessionTrace.uncounted`), counted and checked."""
    if parsed.trace is None or parsed.trace.uncounted is None:
        return parsed
    from replay.ingest.builder import count_uncounted

    try:
        count_uncounted(parsed.trace)
    except Exception as e:  # as when counted while reading: this file fails alone
        parsed = Parsed(report=parsed.report, failure=(
            str(unit.main), f"internal error while reading ({type(e).__name__}: {e}); please report"))
    else:
        parsed = _checked(unit, parsed)
    if unit.found and parsed.failure is not None:
        parsed.failure = (unit.shown(parsed.failure[0]), parsed.failure[1])
    return parsed


def _checked(unit: Unit, parsed: Parsed) -> Parsed:
    try:
        check_trace(parsed.trace)
    except Exception as e:  # a value that does not fit its column: this file fails alone
        return Parsed(report=parsed.report, failure=(
            str(unit.main), f"a value does not fit the trace ({type(e).__name__}: {str(e)[:80]}); please report"))
    return parsed


def _read_unit(unit: Unit, keys: Keyring, dataset: str, file_key: str, sizes: dict[Path, int]) -> Parsed:
    from replay.ingest.readers.source import Records

    report = ReadReport()
    if _SLOW_MS:
        time.sleep(_SLOW_MS / 1000)
    subs = sorted(unit.subagents)
    try:
        records = Records(unit.main, report, limit=sizes[unit.main])
        reader = reader_for(records)
        trace = reader.read_session(unit.main, keys, dataset, file_key, report, subagent_files=subs,
                                    records=records, limits=sizes)
    except FileError as e:
        return Parsed(report=report, failure=(str(unit.main), str(e)), merge_report=True)
    except OSError as e:
        return Parsed(report=report, failure=(str(e.filename or unit.main), f"cannot read: {e.strerror or e}"))
    except Exception as e:  # a reader bug must not cost the user the other files
        return Parsed(report=report, failure=(
            str(unit.main), f"internal error while reading ({type(e).__name__}: {e}); please report"))
    return Parsed(trace, reader.AGENT, report)
