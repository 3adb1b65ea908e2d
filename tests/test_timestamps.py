"""Record timestamps (hostile-input audit, 2026-11-28): unreadable, non-string and out-of-range
timestamps were silently "(no time)"; a timestamp without a zone was read in the machine's own
zone, so one log gave other times on another machine."""

from __future__ import annotations

import os
import time
from collections import Counter

import pytest

from replay.ingest.readers.base import ReadReport
from replay.ingest.readers.fields import TS_MAX, TS_MIN, parse_ts, record_ts


def test_parse_ts_reads_iso_dates_and_takes_a_naive_one_as_utc(monkeypatch):
    z = parse_ts("2026-01-05T13:54:00.000Z")
    assert z == 1767621240000
    assert parse_ts("2026-01-05T14:54:00+01:00") == z
    for zone in ("America/Los_Angeles", "Asia/Kolkata"):
        monkeypatch.setenv("TZ", zone)
        time.tzset()
        assert parse_ts("2026-01-05T13:54:00") == z  # no zone: UTC, whatever the machine's
    monkeypatch.delenv("TZ")
    time.tzset()


@pytest.mark.parametrize("value", ["not-a-date", "0000-01-01T00:00:00Z", "99999-01-01T00:00:00Z",
                                   "2999-01-01T00:00:00Z", "1970-01-01T00:00:00Z", 1767621240000, [], {}])
def test_unusable_timestamps_are_counted_without_their_text(value):
    report = ReadReport()
    assert record_ts(value, report, "f.jsonl", 7) is None
    assert report.repaired == Counter({"bad_timestamp": 1})
    assert "not-a-date" not in " ".join(map(str, report.messages))


def test_absent_timestamps_are_not_counted_and_the_bounds_are_this_century():
    report = ReadReport()
    assert record_ts(None, report, "f", 1) is None and record_ts("", report, "f", 1) is None
    assert not report.repaired
    assert parse_ts("2000-01-01T00:00:00Z") == TS_MIN and parse_ts("2099-12-31T23:59:59Z") < TS_MAX


def test_a_zoneless_log_ingests_to_the_same_times_in_any_zone(tmp_path):
    import subprocess
    import sys

    from replay.synth.generate import generate_corpus

    d = tmp_path / "logs"
    generate_corpus(d, sessions=1, seed=2)
    for p in d.rglob("*.jsonl"):
        p.write_text(p.read_text().replace('Z"', '"'))  # every timestamp without its zone
    code = ("import sys, duckdb; from pathlib import Path; from replay.store.load import ingest; "
            "ingest([Path(sys.argv[1])], Path(sys.argv[2]), master_key=b'k' * 32); "
            "print(duckdb.connect(sys.argv[2]).execute('SELECT min(ts), max(ts) FROM requests').fetchone())")
    got = set()
    for zone in ("UTC", "America/Los_Angeles", "Asia/Kolkata"):
        r = subprocess.run([sys.executable, "-c", code, str(d), str(tmp_path / f"{zone.replace('/', '_')}.duckdb")],
                           capture_output=True, text=True, env={**os.environ, "TZ": zone}, timeout=120)
        assert r.returncode == 0, r.stderr
        got.add(r.stdout.strip())
    assert len(got) == 1 and "None" not in got.pop()


def test_a_line_cut_inside_a_character_says_so_not_surrogates(tmp_path):
    """Hostile-input audit (2026-11-28): a line cut in the middle of a UTF-8 character was reported
    as "str is not valid UTF-8: surrogates not allowed"; it now says what is still wrong."""
    import json

    from replay.ingest.readers.base import Records

    line = json.dumps({"type": "user", "message": {"content": "héllo wörld"}}, ensure_ascii=False).encode()
    cut = line[: line.index("ö".encode()) + 1]
    p = tmp_path / "b.jsonl"
    p.write_bytes(cut + b"\n" + line + b"\n")
    report = ReadReport()
    recs = list(Records(p, report))
    assert len(recs) == 1 and report.skipped == Counter({"invalid_json": 1})
    msg = report.messages[0]
    assert "invalid UTF-8, and then JSONDecodeError: Unterminated string" in msg and "surrogates" not in msg, msg
