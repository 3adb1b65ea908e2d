"""Times shown in --timezone (session starts, break times, the days an empty answer names), the
slice options of `breaks`, and a --project/--model that matches nothing said as such."""

import json
import re
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import duckdb
import pytest
from click.testing import CliRunner

from replay.cli import main, sample_logs_dir

LA = "America/Los_Angeles"


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory):
    from replay.store.load import ingest

    db = tmp_path_factory.mktemp("zone") / "s.duckdb"
    ingest([sample_logs_dir()], db, key_file=db.parent / "key")
    return db


def cli(*args, env=None, code=0):
    r = CliRunner().invoke(main, [str(a) for a in args], env=env)
    assert r.exit_code == code, r.output
    return r


def sessions_of(db):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT session_key, agent, project, started_at FROM sessions "
                           "ORDER BY started_at").fetchall()
    finally:
        con.close()


def copy_db(db, tmp_path, *sql):
    out = tmp_path / "copy.duckdb"
    out.write_bytes(db.read_bytes())
    con = duckdb.connect(str(out))
    for q in sql:
        con.execute(q)
    con.close()
    return out


def shown(ms, tz):
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).astimezone(tz).strftime("%Y-%m-%d %H:%M")


# --- 1. help ----------------------------------------------------------------------------------

def test_no_help_says_slices_are_utc_by_default():
    for name in main.commands:
        text = CliRunner().invoke(main, [name, "--help"]).output
        assert "UTC by default" not in text, name


# --- 2. displayed times follow the zone ------------------------------------------------------

def test_sessions_show_start_times_in_the_zone(sample_db):
    key, _, _, started = sessions_of(sample_db)[0]
    r = cli("sessions", "--db", sample_db, env={"TZ": LA})  # $TZ is the default `local` zone
    assert f"started ({LA})" in r.output
    line = next(ln for ln in r.output.splitlines() if key in ln)
    assert shown(started, ZoneInfo(LA)) in line and shown(started, timezone.utc) not in line
    r = cli("sessions", "--db", sample_db, "--timezone", "UTC", env={"TZ": LA})
    assert "started (UTC)" in r.output and shown(started, timezone.utc) in r.output
    got = {s["session_key"]: s for s in json.loads(cli("sessions", "--db", sample_db, "--json",
                                                       "--timezone", LA).stdout)}
    assert got[key]["started_at"] == started  # machine-readable, unchanged
    local = datetime.fromisoformat(got[key]["started_at_local"])
    assert local.utcoffset() is not None and local.utcoffset().total_seconds() < 0
    assert round(local.timestamp() * 1000) // 1000 == started // 1000


def test_usage_by_session_header_names_the_zone(sample_db):
    key, _, _, started = sessions_of(sample_db)[0]
    for args, header in (((), re.compile(r"started \(P[SD]T\)")), (("--wide",), re.compile(r"started \(America/"))):
        r = cli("usage", "--db", sample_db, "--by", "session", "--timezone", LA, *args)
        assert "started (UTC)" not in r.output and header.search(r.output), r.output
        assert shown(started, ZoneInfo(LA)).split()[0] in r.output
    r = cli("usage", "--db", sample_db, "--by", "session", "--timezone", "UTC", "--wide")
    assert "started (UTC)" in r.output and shown(started, timezone.utc) in r.output
    rows = json.loads(cli("usage", "--db", sample_db, "--by", "session", "--timezone", LA, "--json").stdout)["rows"]
    row = next(x for x in rows if x["key"] == key)
    assert row["started_at"] == started and row["started_at_local"].endswith(("-08:00", "-07:00"))


def test_the_no_match_hint_names_days_in_the_zone(sample_db):
    first = sessions_of(sample_db)[0][3]
    la_day = datetime.fromtimestamp(first / 1000, tz=timezone.utc).astimezone(ZoneInfo(LA)).date().isoformat()
    for cmd in ("usage", "sessions"):
        r = cli(cmd, "--db", sample_db, "--since", "2099-01-01", "--timezone", LA)
        assert f"the logs span {la_day} to" in r.output and f"({LA})" in r.output and "(UTC)" not in r.output


# --- 3. breaks takes the slice options ---------------------------------------------------------

def test_breaks_takes_since_until_and_timezone(sample_db):
    from replay.experiments.slices import slice_session_keys

    whole = json.loads(cli("breaks", "--db", sample_db, "--json").stdout)
    assert whole["slice"] is None
    days = sorted({b["time"][:10] for b in whole["breaks"] if b.get("time")})
    assert days, "the sample has breaks"
    day = days[0]
    r = cli("breaks", "--db", sample_db, "--json", "--since", day, "--until", day, "--timezone", "UTC")
    got = json.loads(r.stdout)
    assert got["slice"] == {"since": day, "until": day, "timezone": "UTC"}
    con = duckdb.connect(str(sample_db), read_only=True)
    try:
        keys = set(slice_session_keys(con, "default", got["slice"]))
    finally:
        con.close()
    assert {b["session"] for b in got["breaks"]} <= keys
    assert {b["session"] for b in whole["breaks"] if b["session"] in keys} == {b["session"] for b in got["breaks"]}
    # the sessions in the slice keep every break (a slice takes whole sessions)
    assert len(got["breaks"]) == sum(1 for b in whole["breaks"] if b["session"] in keys)
    # times: UTC in `time`, the zone in `time_local` and in the table
    b = got["breaks"][0]
    la = json.loads(cli("breaks", "--db", sample_db, "--json", "--timezone", LA).stdout)["breaks"]
    same = next(x for x in la if (x["session"], x["stream"], x["request"]) == (b["session"], b["stream"], b["request"]))
    assert same["time"] == b["time"] and same["time_local"].endswith(("-08:00", "-07:00"))
    text = cli("breaks", "--db", sample_db, "--timezone", LA, "--limit", "1000").output
    assert f"time ({LA})" in text and same["time_local"].replace("T", " ")[:16] in text


def test_an_empty_breaks_slice_names_the_days_the_logs_cover(sample_db):
    r = cli("breaks", "--db", sample_db, "--since", "2099-01-01", code=1)
    assert "the logs span" in r.output and "--since 20" in r.output
    r = cli("breaks", "--db", sample_db, "--since", "30d", code=1)  # relative days parse (no "No such option")
    assert "No such option" not in r.output


# --- 4. a --project or --model that matches nothing -------------------------------------------

def test_an_unknown_project_or_model_is_named_not_the_days(sample_db):
    for args, kind, name in ((("--project", "862358450f"), "project", "862358450f"),
                             (("--project", "\u2026/862358450f"), "project", "\u2026/862358450f"),
                             (("--model", "gpt-9"), "model", "gpt-9")):
        for cmd in ("usage", "sessions"):
            r = cli(cmd, "--db", sample_db, *args)
            assert f"no {kind} of default matches {name}" in r.output, r.output
            assert f"--by {kind}" in r.output and "--since" not in r.output and "re-ingest" not in r.output
        got = json.loads(cli("usage", "--db", sample_db, *args, "--json").stdout)
        assert got["rows"] == [] and f"no {kind} of default" in got["no_match"] and "logs span" in got["coverage"]
        r = cli("breaks", "--db", sample_db, *args, code=1)  # the stored slice's pseudonym: `/862358450f`
        assert f"no {kind} of default matches" in r.output and name in r.output and "--since" not in r.output
    # one unknown model beside a known one: a note, and the known one's usage
    r = cli("usage", "--db", sample_db, "--model", "gpt-9", "--model", "claude-opus-4-6", "--json")
    assert "no model of default matches gpt-9" in r.stderr and json.loads(r.stdout)["rows"]


def test_the_displayed_form_of_a_project_is_accepted_when_unambiguous(sample_db, tmp_path):
    projects = sorted({p for _, _, p, _ in sessions_of(sample_db)})
    last = [p.rsplit("/", 1)[1] for p in projects]
    unique = next(p for p, x in zip(projects, last) if last.count(x) == 1)
    full = json.loads(cli("usage", "--db", sample_db, "--project", unique, "--json").stdout)
    short = json.loads(cli("usage", "--db", sample_db, "--project", "\u2026/" + unique.rsplit("/", 1)[1],
                           "--json").stdout)
    assert full["rows"] and short["totals"] == full["totals"]
    # two projects that end alike: the short form is refused, naming both
    a, b = projects[0], projects[1]
    db = copy_db(sample_db, tmp_path, f"UPDATE sessions SET project = '/aaaaaaaaaa/cccccccccc' WHERE project = '{a}'",
                 f"UPDATE sessions SET project = '/bbbbbbbbbb/cccccccccc' WHERE project = '{b}'")
    r = cli("usage", "--db", db, "--project", "\u2026/cccccccccc", code=1)
    assert "ambiguous" in r.output and "/aaaaaaaaaa/cccccccccc" in r.output and "/bbbbbbbbbb/cccccccccc" in r.output


def test_sessions_of_agents_that_never_record_a_project_are_not_told_to_reingest(sample_db, tmp_path):
    rows = sessions_of(sample_db)
    project = rows[1][2]
    db = copy_db(sample_db, tmp_path,
                 f"UPDATE sessions SET agent = 'gemini-cli', project = NULL WHERE session_key = '{rows[0][0]}'")
    r = cli("usage", "--db", db, "--project", project, "--json")
    assert "re-ingest" not in r.stderr and json.loads(r.stdout)["rows"]
    # a database of such sessions only cannot be grouped by project, and re-ingesting would not help
    only = copy_db(sample_db, tmp_path, "UPDATE sessions SET agent = 'gemini-cli', project = NULL")
    r = cli("usage", "--db", only, "--by", "project", code=1)
    assert "Gemini CLI" in r.output and "re-ingest" not in r.output


def test_validate_takes_a_slice(sample_db, tmp_path):
    from replay.experiments.slices import slice_session_keys

    whole = json.loads(cli("validate", "--db", sample_db, "--json", "--plot", tmp_path / "a.png").stdout)
    assert whole["slice"] is None
    con = duckdb.connect(str(sample_db), read_only=True)
    try:
        first = con.execute("SELECT min(ts) FROM requests").fetchone()[0]
        day = shown(first, timezone.utc)[:10]
        keys = set(slice_session_keys(con, "default", {"since": day, "until": day, "timezone": "UTC"}))
    finally:
        con.close()
    got = json.loads(cli("validate", "--db", sample_db, "--json", "--since", day, "--until", day, "--timezone", "UTC",
                         "--plot", tmp_path / "b.png").stdout)
    assert got["slice"] == {"since": day, "until": day, "timezone": "UTC"}
    assert {s["session_id"] for s in got["sessions"]} == keys
    assert 0 < len(keys) < len(whole["sessions"])  # a real subset of the sample's sessions
    mine = {s["session_id"]: s["recorded"] for s in whole["sessions"] if s["session_id"] in keys}
    assert {s["session_id"]: s["recorded"] for s in got["sessions"]} == mine  # each session checked as before
    r = cli("validate", "--db", sample_db, "--since", "2099-01-01", code=1)
    assert "the logs span" in r.output


@pytest.fixture(scope="module")
def cc_db(tmp_path_factory):
    """The shared claude-code corpus: more breaks (68) and sessions with breaks (20) than any default limit."""
    from conftest import shared_logs
    from replay.store.load import ingest

    db = tmp_path_factory.mktemp("cc") / "c.duckdb"
    ingest([shared_logs("claude-code")], db, key_file=db.parent / "key")
    return db


def test_breaks_limit_zero_lists_every_break_and_session(cc_db):
    got = json.loads(cli("breaks", "--db", cc_db, "--json", "--limit", "0").stdout)
    s = got["summary"]
    assert s["breaks"] > 20 and s["sessions_with_breaks"] > 10  # past the text (20) and JSON (10) defaults
    assert len(got["breaks"]) == s["breaks"] and len(s["top_sessions"]) == s["sessions_with_breaks"]
    assert len(json.loads(cli("breaks", "--db", cc_db, "--json").stdout)["summary"]["top_sessions"]) == 10
    text = cli("breaks", "--db", cc_db, "--limit", "0", "--format", "csv").stdout
    tables = text.strip().split("\n\n")
    assert len(tables[0].splitlines()) - 1 == s["breaks"]  # the breaks table: a header, then every break
    assert len(tables[1].splitlines()) - 1 == s["sessions_with_breaks"]


def test_a_fast_mode_price_key_as_model_says_what_to_give(sample_db):
    """`--by model` shows `MODEL (fast)` apart; given to --model it was "no model matches" (newcomer's
    hour, 2026-11-28): it names the model to give instead, in every command taking slice options."""
    from replay.experiments.slices import FAST_SUFFIX
    from replay.model.costs import FAST_SUFFIX as PRICED

    assert FAST_SUFFIX == PRICED
    for cmd in ("usage", "sessions", "breaks"):
        r = cli(cmd, "--db", sample_db, "--model", "claude-opus-4-6 (fast)", code=1)
        assert "--model claude-opus-4-6 (fast): give the model without (fast) (--model claude-opus-4-6)" in \
            " ".join(r.output.split()), r.output
