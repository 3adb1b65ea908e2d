"""Paired bootstrap intervals (analysis/intervals.py): checked against a naive loop, on hand-built
runs with known answers, for speed, and through `ctxreplay compare --json` (strict JSON)."""

import json
import time

import duckdb
import numpy as np
import pytest

from analysis import intervals as iv

FIGS = ("cost", "context_tokens", "tokens_delivered")


def _db(runs: dict[str, np.ndarray], names=None):
    """An in-memory database with a run_sessions table: run_id -> per-session values (all figures)."""
    import pandas as pd

    df = pd.concat([pd.DataFrame({"run_id": run_id,
                                  "session_key": names or [f"s{i:04d}" for i in range(len(vals))],
                                  "cost": vals, "context_tokens": vals * 1000, "tokens_delivered": vals * 10})
                    for run_id, vals in runs.items()])
    con = duckdb.connect()
    con.register("df", df)
    con.execute("CREATE TABLE run_sessions AS SELECT * FROM df")
    return con


def _naive(base, run, n_resamples=iv.N_RESAMPLES, seed=iv.SEED):
    """The method as the docstring states it, one resample at a time (sessions in baseline order)."""
    order = np.argsort(base, kind="stable")
    base, run = base[order], run[order]
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(base), size=(n_resamples, len(base)))
    ratios = [(base[i].sum() - run[i].sum()) / base[i].sum() for i in idx]
    return np.percentile(ratios, [2.5, 97.5])


def test_counts_are_draws_with_replacement():
    w = iv.resample_counts(7, 50, seed=3)
    assert w.shape == (50, 7) and (w.sum(axis=1) == 7).all() and (w >= 0).all()
    assert (w == iv.resample_counts(7, 50, seed=3)).all()  # seeded
    assert not (w == iv.resample_counts(7, 50, seed=4)).all()


def test_vectorized_equals_the_naive_bootstrap():
    rng = np.random.default_rng(1)
    base = rng.uniform(1, 20, 40)
    run = base * rng.uniform(0.6, 1.3, 40)
    con = _db({"base": base, "run": run})
    got = iv.saving_intervals(con, {"run": "base"})["run"]["cost"]
    low, high = _naive(base, run)
    assert got["low"] == pytest.approx(low, rel=1e-9) and got["high"] == pytest.approx(high, rel=1e-9)
    point = (base.sum() - run.sum()) / base.sum()
    assert got["low"] < point < got["high"]
    assert iv.N_RESAMPLES >= 2000


def test_intervals_do_not_depend_on_the_session_pseudonyms():
    rng = np.random.default_rng(5)
    base = rng.uniform(1, 20, 30)
    run = base * rng.uniform(0.7, 1.2, 30)
    names = [f"k{v:08x}" for v in rng.permutation(10**6)[:30]]  # another hashing key: other names, other order
    a = iv.saving_intervals(_db({"b": base, "r": run}), {"r": "b"})
    b = iv.saving_intervals(_db({"b": base, "r": run}, names), {"r": "b"})
    assert a == b


def test_identical_policy_gives_zero_interval_and_not_distinguishable():
    base = np.random.default_rng(2).uniform(1, 10, 25)
    con = _db({"base": base, "same": base.copy()})
    got = iv.saving_intervals(con, {"same": "base"})["same"]
    for f in FIGS:
        assert got[f] == {"low": 0.0, "high": 0.0}
        assert not iv.distinguishable(0.0, got[f], 0.0)


def test_constant_saving_gives_a_tight_interval_around_it():
    base = np.random.default_rng(3).uniform(1, 10, 25)
    con = _db({"base": base, "tenth": base * 0.9, "worse": base * 1.5})
    got = iv.saving_intervals(con, {"tenth": "base", "worse": "base"})
    for f in FIGS:
        assert got["tenth"][f]["low"] == pytest.approx(0.1, abs=1e-12)
        assert got["tenth"][f]["high"] == pytest.approx(0.1, abs=1e-12)
        assert got["worse"][f]["low"] == pytest.approx(-0.5, abs=1e-12)
    i = got["tenth"]["cost"]
    assert iv.distinguishable(0.1, i, 0.02)          # outside 0 and above the fidelity error
    assert not iv.distinguishable(0.1, i, 0.15)      # smaller than the baseline's own error
    assert iv.distinguishable(-0.5, got["worse"]["cost"], 0.02)  # a loss is distinguishable too


def test_a_saving_in_one_session_only_contains_zero():
    base = np.full(30, 5.0)
    run = base.copy()
    run[7] = 1.0
    con = _db({"base": base, "one": run})
    got = iv.saving_intervals(con, {"one": "base"})["one"]["cost"]
    point = 4.0 / base.sum()
    assert got["low"] == 0.0 and got["low"] <= point <= got["high"]
    assert not iv.distinguishable(point, got, 0.0)


def test_runs_are_paired_on_shared_sessions_only():
    base = np.arange(1, 11, dtype=float)
    con = _db({"base": base, "part": base[:6] * 0.8})
    got = iv.saving_intervals(con, {"part": "base"})["part"]["cost"]
    assert got["low"] == pytest.approx(0.2) and got["high"] == pytest.approx(0.2)


def test_200_runs_by_200_sessions_is_fast():
    rng = np.random.default_rng(4)
    base = rng.uniform(1, 50, 200)
    runs = {"base": base, **{f"r{j:03d}": base * rng.uniform(0.7, 1.2, 200) for j in range(200)}}
    con = _db(runs)
    t0 = time.perf_counter()
    got = iv.saving_intervals(con, {r: "base" for r in runs if r != "base"})
    dt = time.perf_counter() - t0
    assert len(got) == 200 and all(got[r]["cost"]["low"] <= got[r]["cost"]["high"] for r in got)
    assert dt < 5, f"{dt:.2f}s for 200 runs x 200 sessions x 3 figures"


def test_strict_json_replaces_nan():
    from analysis.compare import strict

    out = strict({"a": float("nan"), "b": [np.float64("inf"), np.int64(3)], "c": None, "d": "x"})
    assert out == {"a": None, "b": [None, 3], "c": None, "d": "x"}
    json.dumps(out, allow_nan=False)
