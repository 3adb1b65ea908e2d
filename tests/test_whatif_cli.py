"""`ctxreplay whatif`'s text output and zero-config use: the scenario name is never cut nor
wrapped (columns are dropped or narrowed instead), each table names the baseline its rows are
measured against, and the default log folders are ingested first as in `advise`."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from replay.cli import main
from replay.cli import whatif as cli
from replay.experiments.whatif import BOUND, SCENARIOS

ROOT = Path(__file__).resolve().parents[1]
NAMES = [*SCENARIOS, BOUND]


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory):
    from replay.cli.demo import sample_logs_dir
    from replay.store.load import ingest

    db = tmp_path_factory.mktemp("whatif_cli") / "s.duckdb"
    ingest([sample_logs_dir()], db, dataset="sample", key_file=db.parent / "key")
    return db


@pytest.fixture(scope="module")
def got(sample_db):
    r = CliRunner().invoke(main, ["whatif", "--db", str(sample_db), "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _rows_of(text: str) -> dict[str, list[str]]:
    """The scenario rows of the text tables, by the name in their first cell."""
    rows = {}
    for line in text.splitlines():
        if line.startswith("│"):
            cells = [c.strip() for c in line.strip("│").split("│")]
            rows.setdefault(cells[0], cells)
    return rows


def test_piped_with_wide_columns_every_scenario_name_is_whole(sample_db):
    env = {**os.environ, "COLUMNS": "200"}
    p = subprocess.run([sys.executable, "-m", "replay.cli", "whatif", "--db", str(sample_db)], capture_output=True,
                       text=True, env=env, cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr
    rows = _rows_of(p.stdout)
    for n in NAMES:
        assert n in rows, (n, p.stdout)  # whole, on one line: never `keepali…`
    assert not any("…" in cells[0] for cells in rows.values())
    tables = p.stdout.split("Model-only fidelity")[0]
    assert max(len(x) for x in tables.splitlines() if x[:1] in "┏│└") <= 120  # the default fits 120 columns
    assert "--wide: writes saved" in p.stdout  # what was left out, and how to see it


def test_a_narrow_page_drops_columns_and_never_cuts_the_scenario(got, monkeypatch):
    from replay.cli.fmt import natural_width

    rows = got["scenarios"]
    groups = [(("recorded_events", "re-priced"), [r for r in rows if r["headline"] == "recorded_events"]),
              (("predictive", "predictive"), [r for r in rows if r["headline"] == "predictive"])]
    for page, gone in ((120, {"writes saved"}), (90, {"writes saved", "agree", "predictive replay [95%]"})):
        monkeypatch.setattr(cli, "_page", lambda: page)
        tables, left = cli._layout(groups, wide=False)
        assert gone <= set(left)
        for t in tables:
            assert natural_width(t) <= page
            assert t.columns[0].no_wrap
        assert sorted(x for t in tables for x in t.columns[0]._cells) == sorted(NAMES)
    tables, left = cli._layout(groups, wide=True)  # --wide: every column, nothing left out
    assert left == [] and [c.header for c in tables[0].columns][-1] == "pings"


def test_each_table_names_its_baseline_and_a_cheaper_row_is_explained(sample_db, got):
    r = CliRunner().invoke(main, ["whatif", "--db", str(sample_db)])
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    b = got["baseline"]
    rec, pred = text.index("against the recorded bill"), text.index("against the model-only replay")
    assert f"against the recorded bill (${b['recorded_cost']:,.2f})" in text
    assert f"model-only replay of the recorded settings (${b['cost']:,.2f})" in text
    assert "compare savings, not costs, across them" in text
    # every row sits in the table of its estimator, largest saving first within it
    for x in got["scenarios"]:
        at = text.index(f"│ {x['name']} ")
        assert (rec < at < pred) if x["headline"] == "recorded_events" else at > pred, x["name"]
        assert x["cost_baseline"] == ("recorded_bill" if x["headline"] == "recorded_events" else "model_only")
        want = b["recorded_cost"] if x["cost_baseline"] == "recorded_bill" else b["cost"]
        assert x["baseline"]["cost"] == pytest.approx(want)
    for est in ("recorded_events", "predictive"):
        mine = sorted((x for x in got["scenarios"] if x["headline"] == est), key=lambda x: -x["saved"]["cost"])
        at = [text.index(f"│ {x['name']} ") for x in mine]
        assert at == sorted(at), est
    # the JSON keeps its fields: added, never renamed
    for x in got["scenarios"]:
        for key in ("baseline", "scenario", "saved", "saved_pct", "interval_pct", "headline", "predictive",
                    "recorded_events", "agreement", "distinguishable", "worth_acting_on"):
            assert key in x, key


def test_csv_keeps_every_default_column(sample_db):
    r = CliRunner().invoke(main, ["whatif", "--db", str(sample_db), "--format", "csv"])
    assert r.exit_code == 0, r.output
    first = r.stdout.split("\n\n")[0].splitlines()
    assert first[0] == "scenario,cost $,saved,95% interval,predictive replay [95%],agree,writes saved,distinguishable"
    assert "%" in first[1].split('"')[1]  # the interval keeps its percent signs where there is no page to fit


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A fresh HOME with Claude Code logs (the sample's) in the default folder."""
    from replay.cli.demo import sample_logs_dir

    h = tmp_path / "home"
    shutil.copytree(sample_logs_dir(), h / ".claude" / "projects")
    monkeypatch.setenv("HOME", str(h))
    for var in ("CTXREPLAY_KEY_FILE", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME",
                "CTXREPLAY_DB"):
        monkeypatch.delenv(var, raising=False)
    return h


def test_fresh_home_ingests_the_default_folders_first_as_advise_does(home):
    data = home / ".local" / "share" / "ctxreplay"
    r = CliRunner().invoke(main, ["whatif", "--list"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["whatif", "--list", "--json", "--scenario", "ttl_1h"])
    assert r.exit_code == 0 and [x["name"] for x in json.loads(r.stdout)] == ["ttl_1h"]
    assert not data.exists()  # no database needed: none made, nor its folder
    r = CliRunner().invoke(main, ["whatif", "--no-ingest", "--scenario", "ttl_1h"])
    assert r.exit_code == 1 and "no such database" in r.output
    r = CliRunner().invoke(main, ["whatif", "--scenario", "ttl_1h"])
    assert r.exit_code == 0, r.output
    assert "ingested" in r.stderr and "Cache what-ifs" in r.stdout
    assert (data / "ctxreplay.duckdb").is_file()
    r = CliRunner().invoke(main, ["whatif", "--scenario", "ttl_1h", "--json"])  # machine output: quiet
    assert r.exit_code == 0 and r.stderr == "" and json.loads(r.stdout)["sessions"] > 0
    r = CliRunner().invoke(main, ["whatif", "--scenario", "ttl_1h", "--quiet"])
    assert r.exit_code == 0 and r.stderr == ""
    options = {"auto_ingest", "ingest_quiet"}  # the same options as advise
    assert options <= {p.name for p in main.commands["whatif"].params}
    assert options <= {p.name for p in main.commands["advise"].params}


def test_the_bound_share_names_its_estimator_and_both_figures(sample_db, got):
    """Newcomer's hour (2026-11-28): "online_1h_after_idle reaches -9% of the offline bound's saving"
    beside a table row saving +$6.24: the share is the predictive replay's, the row the re-priced one."""
    from replay.cli.fmt import money

    by = {r["name"]: r for r in got["scenarios"]}
    online, bound = by["online_1h_after_idle"], by[BOUND]
    r = CliRunner().invoke(main, ["whatif", "--db", str(sample_db)])
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    assert (f"by the predictive replay, online_1h_after_idle saves {money(online['predictive']['saved'], sign=True)} "
            f"against the offline bound's {money(bound['saved']['cost'], sign=True)}") in text
    assert "reaches" not in text
