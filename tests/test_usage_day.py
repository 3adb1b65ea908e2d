"""A response streamed across midnight falls on the day of the line whose usage it counts, as
`ccusage daily` dates it (requests.usage_ts, schema 11, trace revision 9).

ccusage keeps, of a response's lines (one message id and request id), the first with the most
output tokens, and dates the response by that line. Measured with ccusage 20.0.24 on two
two-line responses: output 5 then 3 is counted on the first line's day, 3 then 7 on the second's.
On entire-cli/ under TZ=Pacific/Chatham (local midnight is 10:15 UTC), one response's lines
straddled midnight, 18 s apart; before, `usage --by day` put it a day earlier than ccusage on
2 of 37 days. ctxreplay keeps the usage of the last line (it only differs from ccusage's where a
later line has fewer output tokens than an earlier one, which Claude Code does not write).
"""

from __future__ import annotations

import json

import duckdb
from click.testing import CliRunner

from cc_records import Transcript, text, usage
from replay.cli import main


def _log(root, first_out: int, last_out: int):
    t = Transcript(session_id="sess-m")
    t.user("q")
    recs = t.assistant("msg_m", [text("thinking"), text("answer")], usage(inp=10, out=first_out),
                       model="claude-sonnet-4-5", final_output=last_out)
    t.records[0]["timestamp"] = "2026-01-13T23:59:40.000Z"
    recs[0]["timestamp"] = "2026-01-13T23:59:50.000Z"
    recs[1]["timestamp"] = "2026-01-14T00:00:08.000Z"
    t.write_jsonl(root / "p" / "m.jsonl")


def _days(tmp_path, first_out: int, last_out: int) -> dict[str, int]:
    _log(tmp_path / "logs", first_out, last_out)
    db = tmp_path / "u.duckdb"
    r = CliRunner().invoke(main, ["ingest", str(tmp_path / "logs"), "--db", str(db), "-q"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["usage", "--db", str(db), "--no-ingest", "--by", "day", "--json",
                                  "--timezone", "UTC"])
    assert r.exit_code == 0, r.output
    return {row["key"]: row["output"] for row in json.loads(r.stdout)["rows"]}


def test_a_growing_response_falls_on_its_last_lines_day(tmp_path):
    assert _days(tmp_path, 1, 1103) == {"2026-01-14": 1103}


def test_a_response_repeating_its_usage_falls_on_its_first_lines_day(tmp_path):
    assert _days(tmp_path, 40, 40) == {"2026-01-13": 40}


def test_the_request_keeps_its_start_time_for_the_replay(tmp_path):
    _days(tmp_path, 1, 1103)
    con = duckdb.connect(str(tmp_path / "u.duckdb"), read_only=True)
    ts, usage_ts = con.execute("SELECT ts, usage_ts FROM requests").fetchone()
    con.close()
    assert usage_ts - ts == 18_000  # the replay's clock (ts) is the first line; the day's is the counted one


def test_a_database_before_schema_11_dates_by_the_first_line(tmp_path):
    _days(tmp_path, 1, 1103)
    con = duckdb.connect(str(tmp_path / "u.duckdb"))
    con.execute("ALTER TABLE requests DROP COLUMN usage_ts")
    con.close()
    from analysis.usage import usage as usage_of

    con = duckdb.connect(str(tmp_path / "u.duckdb"), read_only=True)
    rows = usage_of(con, "default", "day")["rows"]
    con.close()
    assert [r["key"] for r in rows] == ["2026-01-13"]


def test_a_slice_dates_a_session_as_usage_does(tmp_path):
    """`replay --since` takes the sessions `usage --since` counts: the response's usage day."""
    from replay.experiments.slices import slice_session_keys

    _days(tmp_path, 1, 1103)  # a response started on the 13th, its usage on the 14th
    con = duckdb.connect(str(tmp_path / "u.duckdb"), read_only=True)
    try:
        assert len(slice_session_keys(con, "default", {"since": "2026-01-14", "timezone": "UTC"})) == 1
    finally:
        con.close()
