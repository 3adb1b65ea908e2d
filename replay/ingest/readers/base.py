"""What every log reader shares: load records with line numbers, count what was skipped.

The trace columns are built by :mod:`replay.ingest.builder`; small field parsers are in
:mod:`replay.ingest.readers.fields`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

# Skip reasons a reader may report. Lines that are simply not model context (progress,
# snapshots, UI-only system lines) are counted separately as "non-context", not as skips.
SKIP_REASONS = (
    "invalid_json",
    "truncated_last_line",
    "not_an_object",
    "unknown_type",
    "duplicate_record",
    "malformed_record",
    "missing_usage",
)


@dataclass
class ReadReport:
    """Counts and the first few messages for one file; merged into the ingest summary."""

    skipped: Counter = field(default_factory=Counter)
    non_context: Counter = field(default_factory=Counter)
    messages: list[str] = field(default_factory=list)
    max_messages: int = 20

    def skip(self, reason: str, path: Path | str, line: int | None, detail: str = "") -> None:
        self.skipped[reason] += 1
        if len(self.messages) < self.max_messages:
            where = f"{path}:{line}" if line is not None else str(path)
            self.messages.append(f"{where}: {reason.replace('_', ' ')}{': ' + detail if detail else ''}")

    def merge(self, other: "ReadReport") -> None:
        self.skipped.update(other.skipped)
        self.non_context.update(other.non_context)
        room = self.max_messages - len(self.messages)
        if room > 0:
            self.messages.extend(other.messages[:room])


class FileError(Exception):
    """A whole file cannot be read (empty, binary, not a log). Other files go on."""


def load_records(path: Path, data: bytes, report: ReadReport) -> list[tuple[int, dict[str, Any]]]:
    """(line number, record) pairs from JSONL or from a JSON array of records.

    Bad lines are skipped and counted; a last line without its newline that fails to parse
    is reported as truncated (a session still being written), not as corruption.
    """
    if not data.strip():
        raise FileError("empty file")
    if b"\x00" in data[:8192]:
        raise FileError("binary file (NUL bytes), not a JSON log")
    stripped = data.lstrip()
    if stripped[:1] == b"[":
        try:
            arr = orjson.loads(data)
        except orjson.JSONDecodeError as e:
            raise FileError(f"JSON array does not parse: {e}") from e
        out = []
        for i, rec in enumerate(arr, 1):
            if isinstance(rec, dict):
                out.append((i, rec))
            else:
                report.skip("not_an_object", path, i, f"element {i} is {type(rec).__name__}")
        return out
    out = []
    lines = data.split(b"\n")
    last = len(lines)
    ends_with_newline = data.endswith(b"\n")
    for i, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            rec = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            if i == last and not ends_with_newline:
                report.skip("truncated_last_line", path, i, "incomplete record at end of file")
            else:
                report.skip("invalid_json", path, i, str(e)[:80])
            continue
        if not isinstance(rec, dict):
            report.skip("not_an_object", path, i, f"line holds a JSON {type(rec).__name__}")
            continue
        out.append((i, rec))
    return out


def read_records(path: Path, data: bytes | None, report: ReadReport, sniff: Callable[[list], bool],
                 not_this: str) -> list[tuple[int, dict[str, Any]]]:
    """The records of a log file that ``sniff`` accepts; else FileError (``not_this`` says why)."""
    records = load_records(path, path.read_bytes() if data is None else data, report)
    if not records:
        raise FileError("no records")
    if not sniff(records):
        raise FileError(not_this)
    return records
