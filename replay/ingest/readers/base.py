"""What every log reader shares: the records of a file (streamed), and what was skipped.

The trace columns are built by :mod:`replay.ingest.builder`; small field parsers are in
:mod:`replay.ingest.readers.fields`; the file formats (JSONL, JSON array, JSON document) are
read by :mod:`replay.ingest.readers.source`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from replay.ingest.readers.report import REPAIR_REASONS, SKIP_REASONS, FileError, ReadReport
from replay.ingest.readers.source import Record, Records

__all__ = ["REPAIR_REASONS", "SKIP_REASONS", "FileError", "ReadReport", "Record", "Records", "read_records"]


def read_records(path: Path, data: bytes | None, report: ReadReport, sniff: Callable[[list], bool],
                 not_this: str, records: Records | None = None) -> Records:
    """The records of a log file that ``sniff`` accepts (from its first 50); else FileError (``not_this`` says why).

    ``records`` (already opened by the caller) is used as is; else the file is opened here,
    from ``data`` when given.
    """
    if records is None:
        records = Records(path, report, data)
    head = records.head(50)
    if not head:  # a NUL costs its line; a file of no record with one is binary
        raise FileError("binary file (NUL bytes), not a JSON log" if getattr(records, "nul", False) else "no records")
    if not sniff(head):
        raise FileError(not_this)
    return records
