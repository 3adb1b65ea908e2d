"""Tuning that holds going forward (issue 35, item 5): `tune`, a sweep's cheapest setting and the
report's recommendation pick on the earlier sessions and report the saving on the later ones."""

import json
import shutil

import duckdb
import numpy as np
import pytest
from click.testing import CliRunner

from analysis import intervals as iv
from analysis.saving import run_saving
from replay import store
from replay.cli import main
from replay.experiments import runs as runs_mod
from replay.experiments import tune as tune_mod
from replay.experiments.sweep import SpecError, load_spec
from replay.store.load import ingest

from test_sweep import EXAMPLES, SAMPLE, _copy, sample_db  # noqa: F401  (fixture)

SPEC = str(EXAMPLES / "devboy_random.toml")


def _tune(db, *args):
    r = CliRunner().invoke(main, ["tune", SPEC, "--db", str(db), "--json", *args])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _per_session(db, run_id):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return dict(con.execute("SELECT session_key, cost FROM run_sessions WHERE run_id = ?", [run_id]).fetchall())
    finally:
        con.close()


def _by_start(db):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return [k for k, in con.execute("SELECT session_key FROM sessions ORDER BY started_at, session_key").fetchall()]
    finally:
        con.close()


# --- the split --------------------------------------------------------------------------------

class _Con:
    """Just enough of a connection for split_sessions: session_key -> started_at."""

    def __init__(self, starts):
        self.starts = starts

    def execute(self, sql, params):
        keys = params[0]
        self._rows = [(k, self.starts.get(k)) for k in keys]
        return self

    def fetchall(self):
        return self._rows


def test_the_split_orders_by_start_time_then_key_and_unknown_times_go_last():
    starts = {"d": 100, "c": 100, "b": 300, "a": None, "e": 200}
    train, test = tune_mod.split_sessions(_Con(starts), list(starts), "time", 0.6)
    # c and d started together: the key decides, whatever order they were given in
    assert train == ["c", "d", "e"] and test == ["b", "a"]
    assert tune_mod.split_sessions(_Con(starts), ["e", "a", "b", "c", "d"], "time", 0.6) == (train, test)
    assert tune_mod.split_sessions(_Con(starts), list(starts), "none", 0.6) == (sorted(starts), sorted(starts))


def test_a_split_with_an_empty_side_is_one_error_naming_split_none(sample_db, tmp_path):
    with pytest.raises(SpecError, match="--split none"):
        tune_mod.split_sessions(_Con({"a": 1}), ["a"], "time", 0.7)
    with pytest.raises(SpecError, match="no earlier"):
        tune_mod.split_sessions(_Con({"a": 1, "b": 2}), ["a", "b"], "time", 0.1)
    # a dataset of one session, through the command
    one = tmp_path / "one"
    one.mkdir()
    src = next(p for p in sorted(SAMPLE.rglob("*.jsonl")) if "subagents" not in p.parts)
    shutil.copy(src, one / src.name)
    db = tmp_path / "one.duckdb"
    ingest([one], db, dataset="one", key_file=tmp_path / "key")
    r = CliRunner().invoke(main, ["tune", SPEC, "--db", str(db), "--trials", "1"])
    assert r.exit_code == 1
    line = [x for x in r.stderr.splitlines() if x.startswith("error:")]
    assert len(line) == 1 and "1 session(s)" in line[0] and "--split none" in line[0], r.stderr
    assert _tune(db, "--trials", "1", "--split", "none")["best"] is not None  # the suggestion works


# --- tune -------------------------------------------------------------------------------------

def test_tune_picks_on_the_earlier_sessions_and_reports_the_later_ones(sample_db, tmp_path):
    db = _copy(sample_db, tmp_path)
    res = _tune(db, "--trials", "5")
    order = _by_start(db)
    n_train = 4  # 6 sessions, 70%: round(4.2)
    train, test = order[:n_train], order[n_train:]
    assert res["split"] == {"kind": "time", "train_fraction": 0.7, "train_sessions": 4, "test_sessions": 2}
    best, ref = res["best"], res["reference"]["run_id"]
    pick, base = _per_session(db, best["run_id"]), _per_session(db, ref)
    # the objective the pick was made on is the earlier sessions' cost alone, and it is the least one
    assert best["objective"] == pytest.approx(sum(pick[k] for k in train))
    con = duckdb.connect(str(db), read_only=True)
    trial_ids = [r for r, in con.execute("SELECT run_id FROM runs WHERE sweep_id = ?", [res["tune_id"]]).fetchall()]
    con.close()
    assert best["objective"] == pytest.approx(min(sum(_per_session(db, t)[k] for k in train) for t in trial_ids))
    # the out-of-sample figure is the saving on the later sessions alone, against the reference
    oos, ins = res["out_of_sample"], res["in_sample"]
    saved = sum(base[k] - pick[k] for k in test)
    assert oos["sessions"] == 2 and oos["saved"] == pytest.approx(saved)
    assert oos["baseline_cost"] == pytest.approx(sum(base[k] for k in test))
    assert oos["saved_pct"] == pytest.approx(saved / sum(base[k] for k in test))
    lo, hi = oos["interval_pct"]
    assert lo <= oos["saved_pct"] <= hi and lo < hi
    assert ins["sessions"] == 4 and ins["saved"] == pytest.approx(sum(base[k] - pick[k] for k in train))
    assert res["optimism"] == pytest.approx(ins["saved_pct"] - oos["saved_pct"])
    # the margin over the always-replayed reference, on the sessions the pick was made on
    assert best["margin_over_reference"] == pytest.approx(ins["saved"])


def test_changing_a_later_session_does_not_change_the_pick(sample_db, tmp_path, monkeypatch):
    """The sampler and the pick see the earlier sessions only: later sessions made to punish the
    pick (and reward every other trial) leave every trial and the pick as they were; without the
    split the same change moves the pick, so the change is one that would matter."""
    db = _copy(sample_db, tmp_path)
    spec = load_spec(EXAMPLES / "devboy_random.toml")
    later = set(_by_start(db)[4:])

    def study(split, punish=None):
        real = tune_mod.run_policy

        def run_policy(con, ds, policy, opts, **kw):
            run_id, results = real(con, ds, policy, opts, **kw)
            if punish is not None and policy.name != "noop":
                hit = policy.params == punish
                for r in results:
                    if r.session_key in later:
                        r.figures = {**r.figures, "cost": 1e6 if hit else 0.0}
            return run_id, results

        monkeypatch.setattr(tune_mod, "run_policy", run_policy)
        con = store.connect(db)
        try:
            ds = runs_mod.load(con, "sample")
            res = tune_mod.tune(con, ds, spec, trials=6, seed=3, split=split)
        finally:
            con.close()
        monkeypatch.setattr(tune_mod, "run_policy", real)
        return res

    clean = study("time")
    from replay.policies import build

    punish = build(spec.policy, clean["best"]["params"]).params
    changed = study("time", punish)
    assert changed["best"]["params"] == clean["best"]["params"]
    assert changed["best"]["objective"] == pytest.approx(clean["best"]["objective"])
    assert changed["runner_up"]["params"] == clean["runner_up"]["params"]
    # the same change does move a pick made on every session
    assert study("none", punish)["best"]["params"] != clean["best"]["params"]


def test_the_reference_is_always_replayed_and_never_the_pick(sample_db, tmp_path):
    db = _copy(sample_db, tmp_path)
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 0  # no baseline stored beforehand
    con.close()
    res = _tune(db, "--trials", "2")
    ref = res["reference"]
    con = duckdb.connect(str(db), read_only=True)
    row = con.execute("SELECT policy, status, n_sessions, sweep_id FROM runs WHERE run_id = ?",
                      [ref["run_id"]]).fetchone()
    con.close()
    assert row == ("noop", "finished", 6, None) and ref["cache"] == {}
    assert res["best"]["saving"]["baseline_run"] == ref["run_id"] != res["best"]["run_id"]
    # a second tune re-uses the stored reference: one baseline, not two
    assert _tune(db, "--trials", "1", "--seed", "4")["reference"]["run_id"] == ref["run_id"]
    # a no-op spec tuning the cache: the pick is a no-op run, measured against the cache as logged,
    # not against itself (before: "saves $0.00")
    spec = tmp_path / "ttl.toml"
    spec.write_text('name = "ttl"\npolicy = "noop"\n[cache]\nttl = ["5m", "1h"]\n')
    r = CliRunner().invoke(main, ["tune", str(spec), "--db", str(db), "--trials", "4", "--split", "none", "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert got["reference"]["cache"] == {"observed_evictions": "none"}  # what-if grid: model-only, TTL as logged
    assert got["best"]["cache"]["ttl"] in ("5m", "1h") and got["reference"]["run_id"] != got["best"]["run_id"]
    assert got["best"]["saving"]["saved_usd"] != 0
    text = CliRunner().invoke(main, ["tune", str(spec), "--db", str(db), "--trials", "2", "--split", "none"])
    assert text.exit_code == 0 and "margin over the reference, vs the no-op baseline (no-op" in text.stdout, text.output
    assert "saves $0.00" not in text.stdout


def test_split_none_picks_and_reports_on_every_session(sample_db, tmp_path):
    db = _copy(sample_db, tmp_path)
    res = _tune(db, "--trials", "5", "--split", "none")
    best, ref = res["best"], res["reference"]["run_id"]
    pick, base = _per_session(db, best["run_id"]), _per_session(db, ref)
    assert best["objective"] == pytest.approx(sum(pick.values()))
    assert res["out_of_sample"] is None and res["optimism"] is None
    assert res["split"]["kind"] == "none" and res["split"]["train_sessions"] == 6
    assert res["in_sample"]["saved"] == pytest.approx(sum(base[k] - pick[k] for k in base))
    # on every session the interval is the one `compare` draws (same ordering, same seed)
    con = duckdb.connect(str(db), read_only=True)
    s = run_saving(con, best["run_id"])
    con.close()
    assert s["baseline_run"] == ref
    assert res["in_sample"]["interval_pct"] == [s["interval"]["low"], s["interval"]["high"]]
    assert res["best"]["saving"]["interval"] == s["interval"]


def test_tune_help_names_the_split_options():
    r = CliRunner().invoke(main, ["tune", "--help"])
    assert "--split [time|none]" in r.output and "--train-fraction" in r.output
    bad = CliRunner().invoke(main, ["tune", SPEC, "--train-fraction", "1.5"])
    assert bad.exit_code == 2


# --- a sweep's cheapest setting and the report's recommendation --------------------------------

@pytest.fixture(scope="module")
def swept(sample_db, tmp_path_factory):
    d = tmp_path_factory.mktemp("swept")
    db = _copy(sample_db, d)
    r = CliRunner().invoke(main, ["sweep", str(EXAMPLES / "devboy_capacity.toml"), "--db", str(db)])
    assert r.exit_code == 0, r.output
    return db


def test_a_sweeps_cheapest_setting_is_picked_on_the_earlier_sessions(swept):
    from analysis.compare import compare
    from analysis.sweep_best import best_lines, sweep_pick

    con = store.connect(swept, read_only=True)
    try:
        rows = compare(con, "sample")
        sid = next(r["sweep_id"] for r in rows if r.get("sweep_id"))
        held = sweep_pick(con, rows, sid)
    finally:
        con.close()
    order = _by_start(swept)
    train, test = order[:4], order[4:]
    assert held["train"] == train and held["test"] == test
    # the runs the section ranks: a forced-TTL grid runs every point on the model-only variant
    cal = [r for r in rows if r.get("sweep_id") == sid and r["policy"] != "noop" and r.get("saved_pct")]
    assert {r["variant"] for r in cal} == {"model_only"} and len(cal) == 14

    def share(r, keys):
        p, b = _per_session(swept, r["run_id"]), _per_session(swept, r["baseline_run"])
        return sum(b[k] - p[k] for k in keys) / sum(b[k] for k in keys)

    best = max(cal, key=lambda r: (share(r, train), r["run_id"]))
    assert held["run_id"] == best["run_id"]
    assert held["out_of_sample"]["saved_pct"] == pytest.approx(share(best, test))
    assert held["in_sample"]["saved_pct"] == pytest.approx(share(best, train))
    head = best_lines(rows, sid, held)[1]
    assert head.startswith("Cheapest with caching (model-only), picked on the earlier sessions:")
    assert "on the 2 later session(s) it was not picked on" in head
    # without the split, the cheapest on every session leads, as before
    assert best_lines(rows, sid)[1].startswith("Cheapest with caching (model-only): **")


def test_the_report_recommendation_leads_with_the_held_out_saving(swept):
    from analysis.answer import answer
    from analysis.compare import compare

    con = store.connect(swept, read_only=True)
    try:
        rows = compare(con, "sample")
        held = answer(con, rows, min_per_session=0, split="time")
        plain = answer(con, rows, min_per_session=0)
    finally:
        con.close()
    assert "held_out" not in plain  # the default (compare --answer) is unchanged
    h = held["held_out"]
    assert h["train_sessions"] == 4 and h["test_sessions"] == 2
    lead = held.get("best") or held.get("closest")
    order = _by_start(swept)
    p, b = _per_session(swept, lead["run_id"]), _per_session(swept, lead["baseline_run"])
    assert h["out_of_sample"]["saved_pct"] == pytest.approx(sum(b[k] - p[k] for k in order[4:])
                                                          / sum(b[k] for k in order[4:]))
    if held["verdict"] == "recommended":
        first = held["headline"].split(". ", 2)[1]
        assert first.startswith("On the 2 later session(s), which played no part in choosing it, it saves")
    assert np.isfinite(h["optimism"])
