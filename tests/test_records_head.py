"""`Records.head` parses a file's first lines once for every sniffer and the read that follows."""

from __future__ import annotations

import json
from collections import Counter
from types import SimpleNamespace

import orjson

from replay.ingest.readers import source
from replay.ingest.readers.report import ReadReport
from replay.ingest.readers.source import Records


def _counting(monkeypatch) -> Counter:
    """Calls of orjson.loads made by `Records`, per line parsed."""
    calls: Counter = Counter()

    def loads(raw):
        calls[bytes(raw)] += 1
        return orjson.loads(raw)

    monkeypatch.setattr(source, "orjson", SimpleNamespace(loads=loads, JSONDecodeError=orjson.JSONDecodeError))
    return calls


def _lines(tmp_path):
    recs = [json.dumps({"type": "user", "n": n, "text": "x" * 50}).encode() for n in range(6)]
    recs[2] = recs[2].replace(b"xxx", b"x\xffx", 1)  # invalid UTF-8: repaired, and reported by the read
    recs[4] = recs[4] + recs[4]  # two records on one line
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(recs) + b"\n")
    return path, recs


def test_head_lines_are_parsed_once_and_reports_stay(tmp_path, monkeypatch):
    path, recs = _lines(tmp_path)
    expected = list(Records(path, ReadReport()))
    calls = _counting(monkeypatch)
    report = ReadReport()
    records = Records(path, report)
    assert records.head(2) == expected[:2] and records.head(50) == expected and records.head(5) == expected[:5]
    assert list(records) == expected
    # clean lines once; a line that needed a repair (or holds two records) at every pass, as before
    assert [calls[r] for r in recs] == [1, 1, 3, 1, 3, 1]
    assert report.repaired == Counter({"invalid_utf8": 1, "multi_object_line": 1})  # the read reports, once
    assert not report.skipped and not records._parsed  # what the read took is not kept
    # a line over the budget is parsed again
    monkeypatch.setattr(source, "_PARSED_BYTES", len(recs[0]) + len(recs[1]))
    calls.clear()
    records = Records(path, ReadReport())
    records.head(50)
    assert list(records) == expected and [calls[r] for r in recs] == [1, 1, 2, 2, 2, 2]
