"""Ingest memory stays bounded: reading a log holds about one block of it, never the file. Peak memory is measured with
tracemalloc (Python's allocations, deterministic), not RSS."""

from __future__ import annotations

import gzip
import json
import tracemalloc
from pathlib import Path

import pytest

from replay.ingest.readers.report import ReadReport
from replay.ingest.readers.source import Records


def _log(path: Path, mb: float) -> Path:
    """A JSONL log of about ``mb`` MB: 2 KB records, a blank line and a bad line among them."""
    line = json.dumps({"type": "user", "uuid": "u", "message": {"content": "x" * 2000}}) + "\n"
    n = int(mb * 1_000_000) // len(line)
    body = line * (n // 2) + "\n{not json\n" + line * (n - n // 2)
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(body.encode(), compresslevel=1))
    else:
        path.write_text(body)
    return path


def _peak_reading(path: Path) -> tuple[int, int, ReadReport]:
    """(records, peak bytes traced while the records of ``path`` are read, the report)."""
    report = ReadReport()
    records = Records(path, report)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        n = sum(1 for _ in records)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return n, peak, report


@pytest.mark.parametrize("name", ["log.jsonl", "log.jsonl.gz"])
def test_reading_holds_a_block_not_the_file(tmp_path, name):
    small_n, small_peak, _ = _peak_reading(_log(tmp_path / f"small-{name}", 1))
    big_n, big_peak, report = _peak_reading(_log(tmp_path / f"big-{name}", 12))
    assert big_n > 10 * small_n > 0
    assert report.skipped.get("invalid_json") == 1  # the bad line is still counted, once
    # a whole-file buffer would be 12 MB; a line copied per record would still be bounded, but
    # the blocks (1 MB) and the file object's buffer are all the reader may hold
    limit = 7_000_000 if name.endswith(".gz") else 4_000_000  # gzip keeps its decompressor's buffers too
    assert big_peak < limit, big_peak
    assert big_peak < small_peak + 1_000_000, (small_peak, big_peak)  # does not grow with the file
