import json
import os
import subprocess
import sys

from click.testing import CliRunner

from replay.cli import main

from cc_records import basic_session


def test_help_on_every_command():
    r = CliRunner().invoke(main, ["--help"])
    assert r.exit_code == 0
    for name in main.commands:
        sub = CliRunner().invoke(main, [name, "--help"])
        assert sub.exit_code == 0, name
        assert len(sub.output.splitlines()) > 3, name


def test_ingest_datasets_sessions_export(tmp_path):
    basic_session().write_jsonl(tmp_path / "logs" / "s.jsonl")
    db = str(tmp_path / "t.duckdb")
    runner = CliRunner()
    r = runner.invoke(main, ["ingest", str(tmp_path / "logs"), "--db", db, "--dataset", "mine", "--json"])
    assert r.exit_code == 0, r.output
    summary = json.loads(r.output)
    assert summary["sessions"] == 1 and summary["requests"] == 5
    r = runner.invoke(main, ["datasets", "--db", db, "--json"])
    assert json.loads(r.output)[0]["name"] == "mine"
    r = runner.invoke(main, ["sessions", "--db", db, "--json"])
    rows = json.loads(r.output)
    assert len(rows) == 1 and rows[0]["n_requests"] == 5
    r = runner.invoke(main, ["sessions", "--db", db, "--dataset", "nope"])
    assert r.exit_code == 1 and "no dataset 'nope'" in r.output
    r = runner.invoke(main, ["export", "--db", db, "--dataset", "mine", "--out", str(tmp_path / "pq")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "pq" / "blocks.parquet").exists()
    import pyarrow.parquet as pq

    assert pq.read_table(tmp_path / "pq" / "blocks.parquet").num_rows == 11


def test_missing_database_is_a_clear_error(tmp_path):
    r = CliRunner().invoke(main, ["datasets", "--db", str(tmp_path / "none.duckdb")])
    assert r.exit_code == 1
    assert "no such database" in r.output


def test_ingest_as_subprocess_reports_skips(tmp_path):
    p = basic_session().write_jsonl(tmp_path / "logs" / "s.jsonl")
    with p.open("a") as fh:
        fh.write("{broken\n")
    env = dict(os.environ)
    proc = subprocess.run(
        [sys.executable, "-m", "replay.cli", "ingest", str(tmp_path / "logs"), "--db", str(tmp_path / "t.duckdb"), "-q"],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "invalid_json=1" in proc.stdout
    assert "s.jsonl:" in proc.stdout
