import json

import duckdb
import pytest
from click.testing import CliRunner

from replay.cli import main
from replay.experiments.sweep import SpecError
from replay.experiments.tune import parse_limits

from test_sweep import EXAMPLES, _copy, sample_db  # noqa: F401  (fixture)


def test_tune_finds_a_feasible_best_and_stores_every_trial(sample_db, tmp_path):
    db = _copy(sample_db, tmp_path)
    r = CliRunner().invoke(main, ["tune", str(EXAMPLES / "devboy_random.toml"), "--db", str(db), "--trials", "6",
                                  "--max-risk", "stale_refs=0", "--json"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.output)
    assert res["trials"] >= 1 and res["feasible_trials"] >= 1
    best = res["best"]
    con = duckdb.connect(str(db), read_only=True)
    runs = con.execute("SELECT run_id, status FROM runs WHERE sweep_id = ?", [res["tune_id"]]).fetchall()
    cost = con.execute("SELECT sum(cost) FROM run_sessions WHERE run_id = ?", [best["run_id"]]).fetchone()[0]
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


def test_limit_parsing():
    assert parse_limits(("dangling_refs=0", "busts=3")) == {"dangling_refs": 0.0, "busts": 3.0}
    with pytest.raises(SpecError, match="did you mean 'dangling_refs'"):
        parse_limits(("dangling_ref=0",))
