"""`Records.head` parses a file's first lines once for every sniffer and the read that follows."""

from __future__ import annotations

import json
from collections import Counter
from types import SimpleNamespace

import orjson
import pytest
from hypothesis import given, settings, strategies as st

from replay.ingest.readers import source
from replay.ingest.readers.report import FileError, ReadReport
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


_LINES = st.sampled_from([
    b'{"type": "user", "n": 1}', b'{"a": "' + "é→".encode() * 40 + b'"}', b"", b"   ", b"\t\r", b"not json",
    b"[1, 2]", b'{"a": 1}{"b": 2}', b'{"bad": "\xff\xfe"}', b'  {"pad": true}  ', b'{"x": "' + b"y" * 300 + b'"}',
    b'{"cut": "', b'{"a": 1} trailing',
])


@settings(max_examples=150, deadline=None)
@given(st.lists(_LINES, max_size=12), st.booleans(), st.integers(1, 40), st.integers(0, 2000))
def test_blocks_of_any_size_read_the_lines_the_file_holds(tmp_path_factory, lines, last_newline, block, limit):
    """Read in blocks of any size (lines cut across blocks, parsed where they lie), up to a byte
    limit: the records and reports of the file's lines taken one by one."""
    data = b"\n".join(lines) + (b"\n" if last_newline else b"")
    limit = min(limit, len(data))
    path = tmp_path_factory.mktemp("blocks") / "s.jsonl"
    path.write_bytes(data)
    want_report = ReadReport()
    try:
        ref = Records(path, want_report, limit=limit)
    except FileError:  # empty, or blank up to the limit
        return
    parts = data[:limit].split(b"\n")
    want = [(i, rec) for i, raw in enumerate(parts[:-1], 1) for rec in ref._line(raw, want_report, i, True)]
    if parts[-1]:
        want += [(len(parts), rec) for rec in ref._line(parts[-1], want_report, len(parts), False)]
    report = ReadReport()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(source.Buffer, "BLOCK", block)
        records = Records(path, report, limit=limit)
        if records.kind != "jsonl":
            return
        got = list(records)
    assert got == want
    assert (report.skipped, report.repaired, report.messages) == (want_report.skipped, want_report.repaired,
                                                                   want_report.messages)
