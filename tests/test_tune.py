import json

import duckdb
import pytest
from click.testing import CliRunner

from replay.cli import main

from test_sweep import EXAMPLES, _copy, sample_db  # noqa: F401  (fixture)


def test_tune_finds_a_feasible_best_and_stores_every_trial(sample_db, tmp_path):
    """--split none: the objective is the sum over every session, as before the time split."""
    db = _copy(sample_db, tmp_path)
    r = CliRunner().invoke(main, ["tune", str(EXAMPLES / "devboy_random.toml"), "--db", str(db), "--trials", "6",
                                  "--max-risk", "stale_refs=0", "--split", "none", "--json"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.output)
    assert res["trials"] >= 1 and res["feasible_trials"] >= 1
    best = res["best"]
    con = duckdb.connect(str(db), read_only=True)
    runs = con.execute("SELECT run_id, status FROM runs WHERE sweep_id = ?", [res["tune_id"]]).fetchall()
    cost = con.execute("SELECT sum(cost) FROM run_sessions WHERE run_id = ?", [best["run_id"]]).fetchone()[0]
    # the reference no-op run is stored outside the tune id (a plain baseline `replay` re-uses)
    all_costs = con.execute("SELECT run_id, sum(cost) FROM run_sessions WHERE run_id IN (SELECT run_id FROM runs "
                            "WHERE sweep_id = ?) GROUP BY 1", [res["tune_id"]]).fetchall()
    con.close()
    assert len(runs) == res["trials"] and all(s == "finished" for _, s in runs)
    assert cost == pytest.approx(best["objective"])
    assert best["objective"] == pytest.approx(min(c for _, c in all_costs))


def test_infeasible_limits_name_no_best(sample_db, tmp_path):
    db = _copy(sample_db, tmp_path)
    r = CliRunner().invoke(main, ["tune", str(EXAMPLES / "devboy_random.toml"), "--db", str(db), "--trials", "3",
                                  "--max-risk", "requests=0", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["best"] is None


def test_max_risk_is_parsed_by_the_reports_parser(sample_db, tmp_path):
    """tune and report take --max-risk through one parser (analysis.rules.parse_limits): the
    same error line, with "did you mean", for the same mistake, and the same names accepted."""
    db = _copy(sample_db, tmp_path)
    spec = str(EXAMPLES / "devboy_random.toml")
    for bad, says in (("dangling_ref=0", "did you mean 'dangling_refs'"), ("busts=x", "'x' is not a number"),
                      ("busts", "expected NAME=VALUE")):
        t = CliRunner().invoke(main, ["tune", spec, "--db", str(db), "--trials", "1", "--max-risk", bad])
        r = CliRunner().invoke(main, ["report", "--db", str(db), "--out", str(tmp_path / "r"), "--max-risk", bad])
        assert t.exit_code == 1 and r.exit_code == 1, (t.output, r.output)
        line = [x for x in t.stderr.splitlines() if x.startswith("error:")]
        assert len(line) == 1 and says in line[0], t.stderr
        assert line == [x for x in r.stderr.splitlines() if x.startswith("error:")]
    # a policy's own risk counter is a limit tune accepts too (the old parser knew only session
    # figures); devboy_lru never counts it, so every trial stays feasible
    t = CliRunner().invoke(main, ["tune", spec, "--db", str(db), "--trials", "2", "--max-risk", "unseen_write_risk=0",
                                  "--max-risk", "dangling_refs=0", "--json"])
    assert t.exit_code == 0, t.output
    res = json.loads(t.stdout)
    assert res["limits"] == {"unseen_write_risk": 0.0, "dangling_refs": 0.0}
    assert res["feasible_trials"] == res["trials"] >= 1
