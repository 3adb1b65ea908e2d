"""Zero-config daily use (issue 29): the default database (--db > $CTXREPLAY_DB > the data
directory), the automatic ingest of the agents' default log folders before `usage`,
`sessions`, `breaks` and `validate`, and relative --since/--until."""

import json
import os
import shutil
import subprocess
import sys
from datetime import date, datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner

from replay.cli import main
from conftest import shared_logs

ROOT = Path(__file__).resolve().parents[1]
# two small sessions of one project, both on 2026-03-25 (UTC)
SMALL = ("EntityProcess__agentv__7a-d2528cc37f-0.jsonl", "EntityProcess__agentv__1e-d266d094ed-1.jsonl")


def _home(tmp_path: Path, names=SMALL) -> Path:
    home = tmp_path / "home"
    project = home / ".claude" / "projects" / "p"
    project.mkdir(parents=True)
    for n in names:
        shutil.copy(shared_logs("claude-code") / n, project / n)
    return home


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A HOME holding Claude Code logs, the environment as on a fresh machine."""
    h = _home(tmp_path)
    monkeypatch.setenv("HOME", str(h))
    for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "CTXREPLAY_DB"):
        monkeypatch.delenv(var, raising=False)
    return h


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def ok(*args):
    r = run(*args)
    assert r.exit_code == 0, r.output
    return r


def explicit_totals(logs: Path, db: Path, *usage_args) -> dict:
    ok("ingest", logs, "--db", db, "-q")
    return json.loads(ok("usage", "--db", db, "--json", *usage_args).stdout)


def test_usage_with_no_argument_equals_an_explicit_ingest_then_usage_as_a_subprocess(tmp_path):
    home = _home(tmp_path)
    env = {k: v for k, v in os.environ.items()
           if k not in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "CTXREPLAY_DB")}
    env["HOME"] = str(home)
    p = subprocess.run([sys.executable, "-m", "replay.cli", "usage", "--json"], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=300)
    assert p.returncode == 0, p.stderr
    auto = json.loads(p.stdout)
    assert (home / ".local" / "share" / "ctxreplay" / "ctxreplay.duckdb").is_file()
    assert not (tmp_path / "ctxreplay.duckdb").exists()  # no longer the current folder
    assert "ingested" not in p.stderr  # --json: quiet
    want = explicit_totals(home / ".claude" / "projects", tmp_path / "x.duckdb")
    assert auto["totals"]["requests"] > 0
    assert auto["totals"] == want["totals"] and auto["rows"] == want["rows"]


def test_each_answering_command_ingests_new_and_grown_files_first(home, tmp_path):
    second = home / ".claude" / "projects" / "p" / SMALL[1]
    lines = second.read_bytes().splitlines(keepends=True)
    second.unlink()
    assert "ingested 1 new or grown file(s)" in ok("usage").stderr
    one = ok("usage", "--json")
    assert one.stderr == ""
    assert ok("usage").stderr == ""  # unchanged files: the daily path prints nothing extra
    second.write_bytes(b"".join(lines[: len(lines) // 3]))
    assert json.loads(ok("usage", "--json", "--no-ingest").stdout) == json.loads(one.stdout)
    for cmd, cut in ((["sessions"], len(lines) // 2), (["breaks"], len(lines))):
        second.write_bytes(b"".join(lines[:cut]))
        assert "ingested 1 new or grown file(s)" in ok(*cmd).stderr, cmd
    # validate (slow to run here) carries the same step
    assert all("auto_ingest" in [p.name for p in main.commands[c].params]
               for c in ("usage", "sessions", "breaks", "validate"))
    want = explicit_totals(home / ".claude" / "projects", tmp_path / "x.duckdb")
    got = json.loads(ok("usage", "--json").stdout)["totals"]
    assert got == want["totals"] and got["requests"] > json.loads(one.stdout)["totals"]["requests"]


def test_db_precedence_option_over_environment_over_data_directory(home, tmp_path, monkeypatch):
    data = tmp_path / "data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    ok("usage", "--json")
    default = data / "ctxreplay" / "ctxreplay.duckdb"
    assert default.is_file() and not (home / ".local").exists()

    env_db = tmp_path / "env.duckdb"
    monkeypatch.setenv("CTXREPLAY_DB", str(env_db))
    # $CTXREPLAY_DB moves the default database: the automatic ingest fills it
    assert json.loads(ok("usage", "--json").stdout)["totals"]["requests"] > 0 and env_db.is_file()

    mine = tmp_path / "mine.duckdb"
    r = run("usage", "--db", mine)  # --db wins, and an explicit database is never written to unasked
    assert r.exit_code == 1 and "no such database" in r.output and str(mine) in r.output
    assert not mine.exists()
    ok("usage", "--db", mine, "--ingest", "--json")  # unless asked
    assert mine.is_file()


def test_ingest_without_db_fills_the_default_database(home):
    ok("ingest", home / ".claude" / "projects", "-q")
    assert (home / ".local" / "share" / "ctxreplay" / "ctxreplay.duckdb").is_file()
    r = ok("usage", "--json")
    assert r.stderr == "" and json.loads(r.stdout)["totals"]["requests"] > 0  # nothing left to add


def test_relative_xdg_data_home_is_ignored_as_the_spec_says():
    from replay.ingest.roots import default_db_path

    assert default_db_path({"HOME": "/h", "XDG_DATA_HOME": "rel"}) == Path("/h/.local/share/ctxreplay/ctxreplay.duckdb")
    assert default_db_path({"HOME": "/h", "XDG_DATA_HOME": "/x"}) == Path("/x/ctxreplay/ctxreplay.duckdb")


def test_no_ingest_and_an_explicit_db_leave_the_logs_alone(home, tmp_path):
    r = run("usage", "--no-ingest")
    assert r.exit_code == 1 and "no such database" in r.output
    default = home / ".local" / "share" / "ctxreplay" / "ctxreplay.duckdb"
    assert not default.exists()
    db = tmp_path / "own.duckdb"
    ok("ingest", home / ".claude" / "projects" / "p" / SMALL[0], "--db", db, "-q")
    before = json.loads(ok("usage", "--db", db, "--json").stdout)["totals"]
    assert json.loads(ok("usage", "--db", db, "--json").stdout)["totals"] == before
    # a --dataset other than `default` is not filled automatically either
    r = run("usage", "--dataset", "other")
    assert r.exit_code == 1 and "no such database" in r.output and not default.exists()


def test_no_log_folder_and_no_database_is_one_line_naming_where_it_looked(tmp_path, monkeypatch):
    empty = tmp_path / "empty-home"
    empty.mkdir()
    monkeypatch.setenv("HOME", str(empty))
    for var in ("XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(var, raising=False)
    r = run("usage")
    assert r.exit_code == 1
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: no database at")
    for where in ("~/.claude/projects", "~/.codex/sessions", "~/.copilot/session-state"):
        assert where in lines[0]


def test_a_missing_root_is_skipped_and_the_present_ones_read(tmp_path):
    from replay.ingest.roots import candidate_roots, default_log_roots

    h = tmp_path / "h"
    (h / ".codex" / "sessions").mkdir(parents=True)
    (h / ".gemini" / "tmp" / "abc" / "chats").mkdir(parents=True)
    (h / ".gemini" / "tmp" / "def").mkdir(parents=True)  # no chats: not a root
    roots = default_log_roots({"HOME": str(h)})
    assert [(r.agent, r.path) for r in roots] == [("codex", h / ".codex" / "sessions"),
                                                 ("gemini-cli", h / ".gemini" / "tmp" / "abc" / "chats")]
    # as ccusage: CLAUDE_CONFIG_DIR (comma-separated) replaces the default Claude folders
    a, b = tmp_path / "a", tmp_path / "b"
    (a / "projects").mkdir(parents=True)
    env = {"HOME": str(h), "CLAUDE_CONFIG_DIR": f"{a},{b}", "CODEX_HOME": str(tmp_path / "cx")}
    claude = [r.path for r in candidate_roots(env) if r.agent == "claude-code"]
    assert claude == [a / "projects", b / "projects"]
    assert [r.path for r in default_log_roots(env)] == [a / "projects", h / ".gemini" / "tmp" / "abc" / "chats"]
    # one folder under two names is read once
    (h / ".claude").mkdir()
    (h / ".claude" / "projects").symlink_to(a / "projects")
    (tmp_path / "claude").symlink_to(a)
    env = {"HOME": str(h), "XDG_CONFIG_HOME": str(tmp_path), "CODEX_HOME": str(tmp_path)}
    assert [r.path for r in default_log_roots(env) if r.agent == "claude-code"] == [tmp_path / "claude" / "projects"]


def test_an_empty_default_folder_is_not_reported(home):
    (home / ".codex" / "sessions").mkdir(parents=True)  # Codex installed, never run
    r = ok("usage")
    assert "ingested 2" in r.stderr and "could not be read" not in r.stderr


# --- relative dates -------------------------------------------------------------------------

NOW = datetime(2026, 4, 1, 12, 0, tzinfo=timezone.utc)


def test_relative_days_count_back_from_today_in_the_time_zone():
    from replay.cli.dates import resolve_day

    utc = timezone.utc
    assert resolve_day("today", utc, NOW) == date(2026, 4, 1)
    assert resolve_day("Yesterday", utc, NOW) == date(2026, 3, 31)
    assert resolve_day("30d", utc, NOW) == date(2026, 3, 2)
    assert resolve_day("0d", utc, NOW) == date(2026, 4, 1)
    assert resolve_day("2w", utc, NOW) == resolve_day("14d", utc, NOW) == date(2026, 3, 18)
    assert resolve_day("2026-03-25", utc, NOW) == resolve_day("20260325", utc, NOW) == date(2026, 3, 25)
    late = datetime(2026, 4, 1, 23, 30, tzinfo=timezone.utc)  # already 2 April in Paris
    assert resolve_day("today", ZoneInfo("Europe/Paris"), late) == date(2026, 4, 2)
    assert resolve_day("today", ZoneInfo("America/Los_Angeles"), NOW.replace(hour=3)) == date(2026, 3, 31)
    for bad in ("someday", "30x", "-3d", "d", "2026-13-01"):
        with pytest.raises(ValueError, match="is not a date; expected YYYY-MM-DD"):
            resolve_day(bad, utc, NOW)


def test_since_and_until_take_relative_days_in_every_sliced_command(home, tmp_path, monkeypatch):
    import replay.cli.dates as dates

    monkeypatch.setattr(dates, "now", lambda: NOW)  # the logs' day, 2026-03-25, is 7 days before
    full = json.loads(ok("usage", "--json").stdout)
    assert [r["key"] for r in full["rows"]] == ["2026-03-25"]
    for since in ("7d", "1w", "2026-03-25"):
        got = json.loads(ok("usage", "--json", "--no-ingest", "--since", since).stdout)
        assert got["totals"] == full["totals"] and got["filters"]["since"] == "2026-03-25"
    assert json.loads(ok("usage", "--json", "--since", "6d").stdout)["rows"] == []
    assert json.loads(ok("usage", "--json", "--until", "8d").stdout)["rows"] == []
    assert json.loads(ok("usage", "--json", "--until", "yesterday").stdout)["totals"] == full["totals"]
    assert json.loads(ok("sessions", "--json", "--since", "today").stdout) == []
    db = home / ".local" / "share" / "ctxreplay" / "ctxreplay.duckdb"
    # a run stores the day the relative form meant, so it stays the same slice tomorrow
    r = json.loads(ok("replay", "--db", db, "--policy", "noop", "--variants", "calibrated", "--since", "7d",
                      "--json").stdout)
    assert r["slice"] == {"since": "2026-03-25", "timezone": "UTC"}
    bad = run("usage", "--since", "30x")
    assert bad.exit_code == 1 and bad.output.count("\n") == 1 and "--since: '30x' is not a date" in bad.output
    inverted = run("usage", "--since", "yesterday", "--until", "7d")
    assert inverted.exit_code == 1 and "(2026-03-31) is after --until 7d (2026-03-25)" in inverted.output


def test_a_database_another_process_holds_is_answered_from_what_it_stores(home):
    ok("usage", "--json")
    db = home / ".local" / "share" / "ctxreplay" / "ctxreplay.duckdb"
    holder = subprocess.Popen(  # a reader in another process: DuckDB then refuses any writer
        [sys.executable, "-c", "import duckdb, sys; c = duckdb.connect(sys.argv[1], read_only=True); "
         "print('ready', flush=True); sys.stdin.read()", str(db)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        r = ok("usage")
        assert "warning: new logs not ingested" in r.stderr and "--no-ingest skips this step" in r.stderr
        assert "total" in r.stdout
        strict = run("usage", "--ingest")  # asked for explicitly: the failure is the answer
        assert strict.exit_code == 1 and "error: cannot ingest the default log folders" in strict.output
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)


def test_the_automatic_ingest_line_counts_what_it_skipped(home):
    log = next((home / ".claude" / "projects" / "p").glob("*.jsonl"))
    with log.open("a") as fh:
        fh.write("{not json\n")
    line = [x for x in ok("usage").stderr.splitlines() if x.startswith("ingested ")][0]
    assert "1 line(s) skipped" in line and "`ctxreplay ingest` on the same folders names each" in line
