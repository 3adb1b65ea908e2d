"""Tuning: search a sweep spec's space for the best configuration under a risk limit.

Uses Optuna's TPE sampler (seeded, so a tuning run is reproducible): it handles the mixed
spaces of these policies (categorical grids, integer and float ranges) and concentrates
trials where the objective improves, which a grid of the same size cannot. Every trial is
replayed over the whole dataset and stored as a run under one tune id, so `compare` and the
report see them like any sweep.

The objective is total cost ($) or tokens (context tokens summed over requests). Risk limits
are upper bounds on run figures (e.g. ``dangling_refs=0``, ``trimmed_reread=20``,
``busts=10``) or on a policy's own counters (``unseen_write_risk=0``); a trial over a limit
is infeasible and never chosen. They are parsed by the report's parser
(``analysis.rules.parse_limits``, called by the CLI), so both accept the same names.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from replay.model.arrays import Dataset
from replay.engine import SESSION_FIGURES
from replay.policies import build
from replay.experiments.runs import run_policy
from replay.experiments.sweep import Point, SpecError, SweepSpec, _options

OBJECTIVES = {"cost": "cost", "tokens": "context_tokens"}


@dataclass
class Trial:
    number: int
    run_id: str
    params: dict[str, Any]
    cache: dict[str, Any]
    objective: float
    figures: dict[str, float]
    feasible: bool


def tune(con, ds: Dataset, spec: SweepSpec, *, objective: str = "cost", limits: dict[str, float] | None = None,
         trials: int = 20, seed: int = 0, on_trial=None) -> dict[str, Any]:
    try:
        import optuna
    except ImportError as e:
        raise SpecError("tuning needs Optuna: pip install 'ctxreplay[tune]'") from e
    if objective not in OBJECTIVES:
        raise SpecError(f"--objective must be one of {', '.join(OBJECTIVES)}")
    limits = limits or {}
    grid, cache_grid = spec.grid, spec.cache
    ranges = (spec.random or {}).get("params", {})
    if not grid and not cache_grid and not ranges:
        raise SpecError(f"{spec.source}: nothing to tune: give [grid], [cache] or [random.params]")
    tune_id = "tune-" + hashlib.blake2b(json.dumps(
        {"spec": spec.source, "grid": grid, "cache": cache_grid, "ranges": ranges, "objective": objective,
         "limits": limits, "seed": seed, "trials": trials, "dataset": ds.name}, sort_keys=True, default=str
    ).encode(), digest_size=5).hexdigest()
    # a failed trial is re-raised by optimize() and reported as one error line: optuna's own
    # warning (with its traceback) would print before it
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed))
    done: list[Trial] = []
    seen: dict[str, Trial] = {}
    figure = OBJECTIVES[objective]

    def run_trial(t: "optuna.Trial") -> float:
        params = dict(spec.params)
        cache = {}
        for name, values in grid.items():
            params[name] = values[t.suggest_categorical(name, list(range(len(values))))]
        for name, values in cache_grid.items():
            cache[name] = values[t.suggest_categorical("cache." + name, list(range(len(values))))]
        for name, r in ranges.items():
            if "choices" in r:
                params[name] = r["choices"][t.suggest_categorical(name, list(range(len(r["choices"]))))]
            elif r.get("int"):
                params[name] = t.suggest_int(name, int(r["low"]), int(r["high"]), log=bool(r.get("log")))
            else:
                params[name] = t.suggest_float(name, float(r["low"]), float(r["high"]), log=bool(r.get("log")))
        point = Point(params, cache)
        key = point.key()
        if key in seen:  # TPE may propose a point again: reuse its run
            tr = seen[key]
        else:
            policy = build(spec.policy, params)
            run_id, results = run_policy(con, ds, policy, _options(point, spec.prices), sweep_id=tune_id)
            figs = {f: sum(r.figures[f] for r in results) for f in SESSION_FIGURES}
            # a policy's own counter (unseen_write_risk, ...) is not a session figure: 0 where it never counted
            figs.update({k: sum(r.figures.get(k, 0.0) for r in results) for k in limits if k not in figs})
            feasible = all(figs[k] <= v for k, v in limits.items())
            tr = Trial(t.number, run_id, params, cache, figs[figure], figs, feasible)
            seen[key] = tr
            done.append(tr)
            if on_trial:
                on_trial(tr)
        return tr.objective if tr.feasible else float("inf")

    study.optimize(run_trial, n_trials=trials)
    feasible = sorted((t for t in done if t.feasible), key=lambda t: t.objective)
    defaults = build(spec.policy, {}).params
    default_key = None
    for t in done:
        if build(spec.policy, t.params).params == defaults and not t.cache:
            default_key = t
    result: dict[str, Any] = {
        "tune_id": tune_id, "policy": spec.policy, "objective": objective, "figure": figure, "limits": limits,
        "trials": len(done), "feasible_trials": len(feasible), "sampler": f"optuna {optuna.__version__} TPE seed={seed}",
        "best": None, "runner_up": None,
    }
    if feasible:
        best = feasible[0]
        result["best"] = {"run_id": best.run_id, "params": best.params, "cache": best.cache,
                          "objective": best.objective, "figures": best.figures}
        if len(feasible) > 1:
            ru = feasible[1]
            result["runner_up"] = {"run_id": ru.run_id, "params": ru.params, "cache": ru.cache,
                                   "objective": ru.objective, "margin": ru.objective - best.objective}
        if default_key is not None:
            result["defaults"] = {"run_id": default_key.run_id, "objective": default_key.objective,
                                  "margin": default_key.objective - best.objective}
    return result
