"""`ctxreplay demo` says what its data is (issue 36, item 5): on the console, in its JSON and in
the report, the embedded sample is synthetic and its savings illustrate the pipeline; a dataset
is marked in the database (``datasets.description``), not recognized by its name; `--logs`
(your own logs) is not marked. The full demo and its report: tests/test_report.py."""

import json

import duckdb
import pytest
from click.testing import CliRunner

from analysis.report import SYNTHETIC_NOTICE, synthetic_banner
from replay.cli import demo as demo_mod
from replay.cli import main


@pytest.fixture
def fast_demo(monkeypatch):
    """The demo with its steps stubbed: ingest creates the datasets row, the others do nothing."""
    def ingest(logs, db):
        con = duckdb.connect(str(db))
        con.execute("CREATE TABLE datasets (name VARCHAR, created_at TIMESTAMP, key_fingerprint VARCHAR, "
                    "token_counter VARCHAR, description VARCHAR)")
        con.execute("INSERT INTO datasets VALUES ('sample', now(), 'k', 'o200k', NULL)")
        con.close()
        return {"sessions": 1}

    monkeypatch.setattr(demo_mod, "_ingest_sample", ingest)
    monkeypatch.setattr(demo_mod, "open_db", lambda db, read_only: duckdb.connect(str(db)))
    for step in ("_baseline_fidelity", "_every_policy", "_bounds"):
        monkeypatch.setattr(demo_mod, step, lambda con: {})
    monkeypatch.setattr(demo_mod, "_sweep", lambda db: None)
    monkeypatch.setattr(demo_mod, "_report", lambda db, d: {"headline": "h"})


def _description(db):
    con = duckdb.connect(str(db))
    try:
        return con.execute("SELECT description FROM datasets WHERE name = 'sample'").fetchone()[0]
    finally:
        con.close()


def test_demo_console_opens_and_closes_with_the_notice(fast_demo, tmp_path):
    db = tmp_path / "demo.duckdb"
    r = CliRunner().invoke(main, ["demo", "--db", str(db), "--report", str(tmp_path / "report")])
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())  # the console may wrap the line
    assert text.count("Synthetic data") == 2, r.output
    assert text.index("Synthetic data") < text.index("demo done") < text.rindex("Synthetic data")
    assert "illustrate the pipeline, not what real logs save" in text
    assert json.loads(_description(db)) == {"synthetic": True, "card": "datasets/sample/README.md"}
    assert synthetic_banner(_description(db)) == [f"**{SYNTHETIC_NOTICE}**", ""]


def test_demo_json_carries_the_notice(fast_demo, tmp_path):
    r = CliRunner().invoke(main, ["demo", "--db", str(tmp_path / "d.duckdb"), "--report", str(tmp_path / "r"),
                                  "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert got["synthetic"] is True and got["notice"] == demo_mod.SYNTHETIC_NOTICE


def test_demo_on_your_own_logs_is_not_marked(fast_demo, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    db = tmp_path / "own.duckdb"
    r = CliRunner().invoke(main, ["demo", "--db", str(db), "--report", str(tmp_path / "r"), "--logs", str(logs),
                                  "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert got["synthetic"] is False and got["notice"] is None
    assert _description(db) is None and synthetic_banner(_description(db)) == []


def test_banner_reads_the_marker_not_the_name():
    assert synthetic_banner(None) == [] and synthetic_banner("") == []
    assert synthetic_banner("synthetic sample") == []  # free text is not a marker
    assert synthetic_banner(json.dumps({"synthetic": False})) == []
    assert synthetic_banner(json.dumps({"synthetic": True}))[0] == f"**{SYNTHETIC_NOTICE}**"
