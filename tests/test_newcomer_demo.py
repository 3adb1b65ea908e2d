"""A newcomer's first commands: `report` before any run says what to run (at once, with a
concrete policy), in a fresh home as well; `demo` prints Python warnings as its own counted
`warning:` lines and cuts no name or title in a pipe; `claims` names a saving's baseline when it
is not the no-op replay."""

import json
import re
import warnings

import pytest
from click.testing import CliRunner

from replay.cli import demo as demo_mod
from replay.cli import main


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory):
    """The embedded sample ingested, no run stored."""
    from replay.cli import sample_logs_dir
    from replay.store.load import ingest

    db = tmp_path_factory.mktemp("newcomer") / "s.duckdb"
    ingest([sample_logs_dir()], db, dataset="sample", key_file=db.parent / "key")
    return db


def _no_build(monkeypatch):
    import analysis.report

    def fail(*a, **k):
        raise AssertionError("the report was built")

    monkeypatch.setattr(analysis.report, "build", fail)


def test_report_without_runs_fails_before_the_slow_work_and_names_the_commands(sample_db, tmp_path, monkeypatch):
    _no_build(monkeypatch)
    r = CliRunner().invoke(main, ["report", "--db", str(sample_db), "--out", str(tmp_path / "rep")])
    assert r.exit_code == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: no finished runs for dataset 'sample'"), r.stderr
    assert f"`ctxreplay replay --db {sample_db}` (the no-op baseline)" in lines[0]
    assert f"`ctxreplay replay --db {sample_db} --policy devboy_lru`" in lines[0]
    assert "`ctxreplay policies`" in lines[0] and "`ctxreplay sweep " in lines[0]
    assert not (tmp_path / "rep").exists()


def test_report_of_noop_baselines_only_names_a_policy_run(sample_db, tmp_path, monkeypatch):
    import shutil

    import analysis.report

    db = tmp_path / "n.duckdb"
    shutil.copy(sample_db, db)
    r = CliRunner().invoke(main, ["replay", "--db", str(db), "--variants", "calibrated"])
    assert r.exit_code == 0, r.output
    monkeypatch.setattr(analysis.report, "build", lambda *a, **k: {
        "runs": 1, "figures": 0, "answer": {"verdict": "no_runs", "headline": "No policy run to compare."}})
    r = CliRunner().invoke(main, ["report", "--db", str(db), "--out", str(tmp_path / "rep")])
    assert r.exit_code == 0, r.output
    assert r.stderr == ""
    assert "(the no-op baseline)" not in r.stdout  # one is stored
    assert re.search(r"for example: `ctxreplay replay --db \S+ --policy devboy_lru`", r.stdout), r.stdout


@pytest.fixture
def fresh_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    for var in ("CTXREPLAY_DB", "XDG_DATA_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))
    return home


def test_report_in_a_fresh_home_says_what_to_run_first(fresh_home, tmp_path, monkeypatch):
    from replay.cli import sample_logs_dir

    _no_build(monkeypatch)
    (fresh_home / ".claude").mkdir()
    (fresh_home / ".claude" / "projects").symlink_to(sample_logs_dir(), target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(main, ["report", "--out", "r"])
    assert r.exit_code == 1
    msg = r.stderr.strip()
    assert msg.startswith("error: no database at ") and "no such database" not in msg
    assert "`ctxreplay ingest ~/.claude/projects`" in msg
    assert "`ctxreplay replay` (the no-op baseline) and `ctxreplay replay --policy devboy_lru`" in msg
    assert msg.endswith("then `ctxreplay report --out r`")
    assert not (fresh_home / ".local" / "share" / "ctxreplay" / "ctxreplay.duckdb").exists()
    assert not (tmp_path / "r").exists()


def test_report_in_a_fresh_home_without_logs(fresh_home, tmp_path, monkeypatch):
    _no_build(monkeypatch)
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(main, ["report", "--out", "r"])
    assert r.exit_code == 1 and "`ctxreplay ingest PATH` (a folder of agent logs)" in r.stderr


# --- demo -------------------------------------------------------------------------------

@pytest.fixture
def short_demo(monkeypatch):
    """The demo's real ingest, fidelity, policies and bounds steps; no sweep, no report."""
    monkeypatch.setattr(demo_mod, "_sweep", lambda db: None)
    monkeypatch.setattr(demo_mod, "_report", lambda db, d: {"headline": "h"})
    monkeypatch.delenv("COLUMNS", raising=False)


def test_demo_in_a_pipe_routes_warnings_and_cuts_no_name(short_demo, tmp_path):
    from replay.policies import REGISTRY

    r = CliRunner().invoke(main, ["demo", "--db", str(tmp_path / "d.duckdb"), "--report", str(tmp_path / "r")])
    assert r.exit_code == 0, r.output
    # Python's own warning lines never appear: one `warning:` line per message, counted
    assert "warnings.warn" not in r.stderr and ".py:" not in r.stderr and "UnsupportedModelWarning" not in r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("warning: server_compaction: model 'claude-haiku"), r.stderr
    assert re.search(r"\(raised \d+ times in this step\)$", lines[0])
    assert "demo done (1 warning, on stderr above)" in r.stdout
    # names and titles whole, though a pipe is 80 columns
    assert "…" not in r.stdout
    for name in REGISTRY:
        if name != "pipeline":
            assert re.search(rf"│ {name} +│", r.stdout), name
    assert "3. the baseline and every policy at its defaults, under both cache-model variants" in r.stdout
    assert "3b. offline-optimal bounds (what a policy that knew the whole log could save)" in r.stdout


def test_demo_json_counts_the_warnings(monkeypatch, tmp_path):
    from replay.policies.server_compaction import UnsupportedModelWarning

    def ingest(logs, db):
        import duckdb

        con = duckdb.connect(str(db))
        con.execute("CREATE TABLE datasets (name VARCHAR, description VARCHAR)")
        con.execute("INSERT INTO datasets VALUES ('sample', NULL)")
        con.close()
        return {}

    def policies(con):
        for _ in range(3):
            warnings.warn("a policy's note", UnsupportedModelWarning, stacklevel=1)
        return {}

    import duckdb

    monkeypatch.setattr(demo_mod, "_ingest_sample", ingest)
    monkeypatch.setattr(demo_mod, "open_db", lambda db, read_only: duckdb.connect(str(db)))
    monkeypatch.setattr(demo_mod, "_baseline_fidelity", lambda con: {})
    monkeypatch.setattr(demo_mod, "_every_policy", policies)
    monkeypatch.setattr(demo_mod, "_bounds", lambda con: {})
    monkeypatch.setattr(demo_mod, "_sweep", lambda db: None)
    monkeypatch.setattr(demo_mod, "_report", lambda db, d: {"headline": "h"})
    r = CliRunner().invoke(main, ["demo", "--db", str(tmp_path / "d.duckdb"), "--report", str(tmp_path / "r"),
                                  "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["warnings"] == [{"message": "a policy's note", "count": 3}]
    assert r.stderr.strip() == "warning: a policy's note (raised 3 times in this step)"


# --- claims -----------------------------------------------------------------------------

def _claim(**kw):
    base = {"id": "swe_agent_polling", "source": "swe_agent", "claim": "c", "figure": None, "lever": None,
            "own_metric": {"value": 63.09, "interval": {"low": 61.94, "high": 64.12}, "unit": "% fewer writes"},
            "baseline": {"name": "observation_masking", "params": {"window": 10, "polling": 1}},
            "cost": {"saved_usd": 1255.98, "baseline_usd": 2338.74, "saved_pct": 53.70,
                     "interval_pct": {"low": 52.23, "high": 55.09}},
            "cost_vs_noop": {"saved_usd": -324.09, "saved_pct": -42.72, "interval_pct": {"low": -50.95, "high": -34.60},
                             "baseline_usd": 758.67},
            "verdict": "holds", "reason": "r", "cost_verdict": None, "cost_paper_prices": None}
    return {**base, **kw}


def test_a_claims_baseline_other_than_the_noop_is_named_with_its_cost():
    from analysis.report_claims import cells

    _, _, usd, _ = cells(_claim())
    assert usd == ("$1,255.98 (+53.70% [52.23, 55.09]) against observation_masking (window=10, polling=1) "
                   "($2,338.74); against the no-op ($758.67): -$324.09 (-42.72% [-50.95, -34.60])")
    noop = _claim(baseline={"name": "noop", "params": {}}, cost_vs_noop=None)
    assert cells(noop)[2] == "$1,255.98 (+53.70% [52.23, 55.09])"
    lever = _claim(lever="ttl_5m", baseline={"name": "recorded settings (re-priced recorded requests)", "params": {}},
                   cost={"saved_usd": 18.98, "baseline_usd": 458.55, "saved_pct": 4.14, "sessions": 78,
                         "interval_pct": {"low": 0.30, "high": 7.36}}, cost_vs_noop=None)
    assert "against the recorded settings re-priced (78 sessions) ($458.55)" in cells(lever, 143)[2]
    assert "sessions" not in cells(lever, 78)[2]


def test_the_narrow_claims_table_names_the_baseline_and_keeps_figures_whole():
    from rich.console import Console

    from replay.cli.claims_view import register_table

    c = Console(width=120, record=True)
    c.print(register_table([_claim(), _claim(id="other", baseline={"name": "noop", "params": {}}, cost_vs_noop=None)],
                           "t", sessions=143))
    text = c.export_text()
    lines = text.splitlines()
    for fig in ("+53.70% [52.23, 55.09]", "$1,255.98 of $2,338.74", "-42.72% [-50.95, -34.60]", "-$324.09"):
        assert any(fig in x for x in lines), fig
    assert "vs observation_masking" in text and "the no-op ($758.67):" in text
    assert text.count("of $2,338.74") == 1  # the no-op's claim has no "of"


def test_a_library_warning_is_one_warning_line_in_any_command(sample_db):
    import subprocess
    import sys

    # a subprocess: pytest's own warning capture would stand in for the CLI's
    r = subprocess.run([sys.executable, "-m", "replay.cli", "replay", "--db", str(sample_db), "--policy",
                        "server_compaction", "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert any(x.startswith("warning: server_compaction: model ") for x in lines), r.stderr
    assert not any("warnings.warn" in x or "Warning:" in x or ".py:" in x for x in lines), r.stderr
    json.loads(r.stdout)  # stdout stays clean JSON
