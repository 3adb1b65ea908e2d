"""Tuning: search a sweep spec's space for the best configuration under a risk limit.

Uses Optuna's TPE sampler (seeded, so a tuning run is reproducible): it handles the mixed
spaces of these policies (categorical grids, integer and float ranges) and concentrates
trials where the objective improves, which a grid of the same size cannot. Every trial is
replayed over the whole dataset and stored as a run under one tune id, so `compare` and the
report see them like any sweep.

The pick is made on the earlier sessions only (``split="time"``: sessions ordered by
``sessions.started_at``, then key, the first ``train_fraction`` of them, 70% by default) and
checked on the later ones: a setting tuned on the sessions it is then measured on looks better
than it will do on the sessions to come, and the gap between the two figures (the optimism) says
by how much. Trials are still replayed over every session and stored whole (the report and
`compare` read them like any sweep), but the objective and the risk limits the sampler sees are
sums over the earlier sessions alone, so nothing of a later session can steer the pick.
``split="none"`` picks and reports on every session (the behaviour before the split).

The pick is always measured against a reference that is always replayed (`reference_point`):
the no-op policy under the cache settings the spec fixes, a [cache] key the spec tunes left at
its default (the log's setting). Without it a spec whose trials never hit the defaults had
nothing to be measured against, and a no-op spec tuning cache settings was compared with itself.
The intervals (``analysis.sweep_best.holdout``) are computed outside this room: experiments may
not import analysis.

The objective is total cost ($) or tokens (context tokens summed over requests). Risk limits
are upper bounds on run figures (e.g. ``dangling_refs=0``, ``trimmed_reread=20``,
``busts=10``) or on a policy's own counters (``unseen_write_risk=0``); a trial over a limit
is infeasible and never chosen. They are parsed by the report's parser
(``analysis.rules.parse_limits``, called by the CLI), so both accept the same names.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any

from replay.model.arrays import Dataset
from replay.engine import SESSION_FIGURES
from replay.policies import build
from replay.experiments.reuse import identical_run
from replay.experiments.runs import git_sha, run_policy
from replay.experiments.sweep import Point, SpecError, SweepSpec, _options

OBJECTIVES = {"cost": "cost", "tokens": "context_tokens"}
SPLITS = ("time", "none")
TRAIN_FRACTION = 0.7


def split_sessions(con, keys, split: str = "time", train_fraction: float = TRAIN_FRACTION,
                   ) -> tuple[list[str], list[str]]:
    """(earlier, later) session keys: ``keys`` ordered by (``sessions.started_at``, key), the
    first ``round(n * train_fraction)`` earlier. The key breaks ties, so sessions that started
    at the same moment fall on one side whatever order they were stored in; a session without a
    start time counts as the latest (its place in time is unknown, so it is never used to pick).
    ``split="none"``: every session on both sides. Raises ``SpecError`` when a side is empty."""
    keys = sorted(set(keys))
    if split == "none":
        return keys, keys
    if split not in SPLITS:
        raise SpecError(f"--split must be one of {', '.join(SPLITS)}")
    if not 0 < train_fraction < 1:
        raise SpecError(f"--train-fraction must be between 0 and 1 (exclusive), not {train_fraction:g}")
    start = dict(con.execute("SELECT session_key, started_at FROM sessions WHERE session_key IN (SELECT unnest(?))",
                             [keys]).fetchall()) if keys else {}
    ordered = sorted(keys, key=lambda k: (start.get(k) is None, start.get(k) or 0, k))
    n_train = math.floor(len(ordered) * train_fraction + 0.5)  # round half up: round() would round to even
    train, test = ordered[:n_train], ordered[n_train:]
    if not train or not test:
        side = "earlier (to pick on)" if not train else "later (to check the pick on)"
        raise SpecError(f"the time split leaves no {side} sessions: {len(ordered)} session(s) at --train-fraction "
                        f"{train_fraction:g}; use more sessions, another --train-fraction, or --split none to pick "
                        "and report on all sessions")
    return train, test


def reference_point(spec: SweepSpec) -> Point:
    """The setting every pick is measured against: the no-op policy under the cache settings the
    spec fixes (a one-value [cache] list, e.g. the model-only variant a what-if grid forces), each
    [cache] key it tunes at its default, the log's setting. For a policy-only spec this is the
    baseline `compare` pairs the pick with; for a spec tuning the cache it is the cache as logged,
    not the pick's own setting, so the pick is never measured against itself."""
    return Point({}, {k: v[0] for k, v in spec.cache.items() if len(v) == 1}, "noop")


@dataclass
class Trial:
    number: int
    run_id: str
    params: dict[str, Any]
    cache: dict[str, Any]
    objective: float  # on the sessions the pick is made on (every session with split="none")
    figures: dict[str, float]  # on every session
    feasible: bool
    train_figures: dict[str, float] = field(default_factory=dict)


def _sums(per_session: dict[str, dict[str, float]], keys, names) -> dict[str, float]:
    return {f: sum(per_session[k].get(f, 0.0) for k in keys if k in per_session) for f in names}


def tune(con, ds: Dataset, spec: SweepSpec, *, objective: str = "cost", limits: dict[str, float] | None = None,
         trials: int = 20, seed: int = 0, on_trial=None, split: str = "time",
         train_fraction: float = TRAIN_FRACTION) -> dict[str, Any]:
    """Run the study; the result names the pick (made on the earlier sessions), the runner-up,
    the reference run (always replayed) and the session split (``train``/``test`` keys)."""
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
    # before any trial: a split that leaves a side empty is one error line, not a wasted study
    train, test = split_sessions(con, [s.session_key for s in ds.sessions], split, train_fraction)
    train_set = set(train)
    body = {"spec": spec.source, "grid": grid, "cache": cache_grid, "ranges": ranges, "objective": objective,
            "limits": limits, "seed": seed, "trials": trials, "dataset": ds.name}
    if split != "none":  # --split none keeps the tune id it had before the split existed
        body["split"] = {"kind": split, "train_fraction": train_fraction}
    tune_id = "tune-" + hashlib.blake2b(json.dumps(body, sort_keys=True, default=str).encode(),
                                        digest_size=5).hexdigest()
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
            run_id, results = run_policy(con, ds, policy, _options(point, spec.prices, dataset=ds.name), sweep_id=tune_id)
            # a policy's own counter (unseen_write_risk, ...) is not a session figure: 0 where it never counted
            names = [*SESSION_FIGURES, *(k for k in limits if k not in SESSION_FIGURES)]
            per = {r.session_key: r.figures for r in results}
            figs = _sums(per, per, names)
            # the sampler and the risk limits see the earlier sessions only: the later ones check the pick
            fit = _sums(per, train_set, names)
            feasible = all(fit[k] <= v for k, v in limits.items())
            tr = Trial(t.number, run_id, params, cache, fit[figure], figs, feasible, fit)
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
    ref = reference_point(spec)
    ref_policy, ref_opts = build("noop", {}), _options(ref, spec.prices, dataset=ds.name)
    # the no-op replay is deterministic: an identical stored one is re-used, not stored twice
    ref_id = identical_run(con, ref_policy, ref_opts, ds.name, git_sha())
    if ref_id is None:
        ref_id, _ = run_policy(con, ds, ref_policy, ref_opts)
    ref_per = {k: {"cost": c, "context_tokens": t} for k, c, t in con.execute(
        "SELECT session_key, cost, context_tokens FROM run_sessions WHERE run_id = ?", [ref_id]).fetchall()}
    ref_objective = _sums(ref_per, train_set, [figure])[figure]
    result: dict[str, Any] = {
        "tune_id": tune_id, "policy": spec.policy, "objective": objective, "figure": figure, "limits": limits,
        "trials": len(done), "feasible_trials": len(feasible), "sampler": f"optuna {optuna.__version__} TPE seed={seed}",
        "split": {"kind": split, "train_fraction": None if split == "none" else train_fraction,
                  "train_sessions": len(train), "test_sessions": 0 if split == "none" else len(test),
                  "train": train, "test": [] if split == "none" else test},
        "reference": {"run_id": ref_id, "policy": "noop", "cache": ref.cache, "objective": ref_objective,
                      "what": "the no-op policy, cache settings the spec fixes, tuned ones at their default "
                              "(the log's)"},
        "best": None, "runner_up": None,
    }
    if feasible:
        best = feasible[0]
        result["best"] = {"run_id": best.run_id, "params": best.params, "cache": best.cache,
                          "objective": best.objective, "figures": best.figures, "train_figures": best.train_figures,
                          "margin_over_reference": ref_objective - best.objective}
        if len(feasible) > 1:
            ru = feasible[1]
            result["runner_up"] = {"run_id": ru.run_id, "params": ru.params, "cache": ru.cache,
                                   "objective": ru.objective, "margin": ru.objective - best.objective}
        if default_key is not None:
            result["defaults"] = {"run_id": default_key.run_id, "objective": default_key.objective,
                                  "margin": default_key.objective - best.objective}
    return result
