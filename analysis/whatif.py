"""Cache what-ifs compared with the recorded settings (issue 26; `ctxreplay whatif`, the report's levers).

`replay.experiments.whatif.replay_scenarios` replays each scenario on the model-only variant;
here each is compared, session by session, with the model-only replay of the recorded settings:
the saving in dollars and in cache-write tokens with the 95% paired bootstrap interval over
sessions of `analysis.intervals` (sessions in the order of their baseline cost, as there), and
whether it is distinguishable: its interval excludes 0 and its size on the sessions it changes
is at least the model-only cost error against the recorded bill on those same sessions. The
model-only fidelity is given per recorded TTL group (sessions that wrote mostly 5m or 1h).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from replay.engine import ReplayOptions
from replay.experiments.whatif import BOUND, SCENARIOS, VARIANT, TTL_CARRIES, replay_scenarios
from replay.experiments.whatif_recorded import reprice
from replay.model.arrays import Dataset

from . import intervals as iv

# Savings smaller than this per session are "not worth acting on" (issue 26 item 5: cents per session).
PRACTICAL_PER_SESSION = 0.01


def whatif(ds: Dataset, opts: ReplayOptions, names: list[str] | None = None, n_resamples: int = iv.N_RESAMPLES,
           on_step=None, per_session: bool = False, jobs: int = 1, advise_on: tuple | None = None) -> dict[str, Any]:
    """Replay ``ds`` under each named scenario (all by default) and the offline bound, and compare
    each with the model-only replay of the recorded settings, per session. ``per_session``: also
    return every replayed setting's cost per session (``per_session``, in the order of
    ``session_keys``). ``jobs``: local worker processes for the replays. ``advise_on``: (con, dataset, session
    keys of a slice or None): also each lever as the client setting that applies it (``advice``,
    `analysis.advice`), so a command makes one call."""
    raw = replay_scenarios(ds, opts, names, on_step, jobs)
    keys, costs, writes, totals = raw["session_keys"], raw["costs"], raw["writes"], raw["totals"]
    recorded, usage = raw["recorded"], raw["usage_cost"]
    fidelity = _fidelity(keys, raw["groups"], recorded, usage)
    rows = _compare(keys, costs, writes, raw["names"], recorded, usage["recorded"], n_resamples)
    rep = reprice(ds, opts.prices, raw["names"])
    counts = iv.resample_counts(len(keys), n_resamples) if keys else None  # one draw for every scenario
    assert rep["session_keys"] == keys
    for r in rows:
        two_estimators(r, keys, rep, recorded, usage["recorded"], counts)
    for r in rows:
        n = r["name"]
        r["totals"] = totals[n]
        if n == BOUND:
            r.update(family="bound", summary="offline-optimal cache bound: per stream the cheapest of a hindsight "
                     "schedule (per write 5m or 1h, per idle gap ping through or let expire) and every TTL/keep-alive "
                     "scenario", rule="the TTL/keep-alive family chosen with hindsight", source="docs/replay-model.md",
                     carries=TTL_CARRIES, variant=f"{VARIANT} (hindsight)", chosen_per_stream=raw["chosen_per_stream"])
        else:
            sc = SCENARIOS[n]
            r.update(family=sc.family, summary=sc.summary, rule=sc.rule, source=sc.source, carries=sc.carries,
                     variant=VARIANT)
    by = {r["name"]: r for r in rows}
    if BOUND in by and "online_1h_after_idle" in by and by[BOUND]["saved"]["cost"] > 0:
        # the bound is the predictive replay's: compared with the online rule's predictive saving
        by[BOUND]["online_share_of_bound"] = by["online_1h_after_idle"]["predictive"]["saved"] / \
            by[BOUND]["saved"]["cost"]
    extra = {"session_keys": keys, "per_session": costs} if per_session else {}
    out = {
        **extra,
        "variant": VARIANT, "sessions": len(keys), "requests": raw["requests"],
        "baseline": {"name": "recorded settings", "variant": VARIANT, **totals["recorded"],
                     "recorded_cost": sum(recorded.get(k, 0.0) for k in keys)},
        "scenarios": rows, "fidelity": fidelity,
        "practical_threshold_per_session": PRACTICAL_PER_SESSION,
        "bootstrap": {"method": "paired percentile bootstrap over sessions", "resamples": n_resamples,
                      "seed": iv.SEED, "level": iv.LEVEL},
        "seconds": raw["seconds"],
    }
    if advise_on is not None:
        from .advice import advise

        con, dataset, slice_keys = advise_on
        out["advice"] = advise(con, dataset, ds, out, None, keys=slice_keys)
    return out


def _rel(sim: float, rec: float) -> float | None:
    return None if rec == 0 else (sim - rec) / rec


def _fidelity(keys, groups, recorded, usage) -> dict[str, Any]:
    """Model-only cost error against the recorded bill, per recorded TTL group: the recorded
    settings' replay, and the replay forcing that group's own TTL on every write."""
    out = {}
    for g in ("5m", "1h"):
        ks = [k for k in keys if groups[k] == g and recorded.get(k, 0.0) > 0]
        rec = sum(recorded[k] for k in ks)
        sim = sum(usage["recorded"][k] for k in ks)
        own = sum(usage[g][k] for k in ks)
        within = sum(1 for k in ks if abs(_rel(usage["recorded"][k], recorded[k]) or 0.0) <= 0.02)
        out[g] = {"sessions": len(ks), "recorded_cost": rec, "model_only_cost": sim, "rel_error": _rel(sim, rec),
                  f"every_write_{g}_cost": own, f"every_write_{g}_rel_error": _rel(own, rec),
                  "sessions_within_2pct": within}
    return out


def _compare(keys, costs, writes, names, recorded, base_usage_cost, n_resamples) -> list[dict]:
    """Per scenario: saving against the recorded settings (dollars, written tokens), with the
    paired bootstrap interval, and whether it is distinguishable from the model's own error on
    the sessions it changes."""
    base = np.asarray(costs["recorded"], dtype=np.float64)
    base_w = np.asarray(writes["recorded"], dtype=np.float64)
    order = sorted(range(len(keys)), key=lambda i: (base[i], keys[i]))  # as analysis.intervals: not by key
    idx = np.asarray(order, dtype=np.int64)
    counts = iv.resample_counts(len(keys), n_resamples) if keys else None
    rows = []
    for n in names:
        run = np.asarray(costs[n], dtype=np.float64)
        run_w = np.asarray(writes[n], dtype=np.float64)
        row = {"name": n}
        for fig, b, r in (("cost", base, run), ("cache_write", base_w, run_w)):
            saved = float(b.sum() - r.sum())
            pct = saved / b.sum() if b.sum() else None
            interval = None
            if counts is not None and pct is not None:
                interval = iv.ratio_intervals(b[idx], r[idx][None, :], counts, np.array([pct]))[0]
            row.setdefault("baseline", {})[fig] = float(b.sum())
            row.setdefault("scenario", {})[fig] = float(r.sum())
            row.setdefault("saved", {})[fig] = saved
            row.setdefault("saved_pct", {})[fig] = None if pct is None else 100 * pct
            row.setdefault("interval_pct", {})[fig] = None if interval is None else {
                "low": 100 * interval["low"], "high": 100 * interval["high"]}
        diff = base - run
        changed = [i for i in range(len(keys)) if abs(diff[i]) > iv.NOISE * max(abs(base[i]), 1e-12)]
        rec = sum(recorded.get(keys[i], 0.0) for i in changed)
        err = abs(sum(base_usage_cost[keys[i]] for i in changed) - rec) / rec if rec else None
        on_changed = float(diff[changed].sum() / base[changed].sum()) if changed and base[changed].sum() else 0.0
        row["sessions_changed"] = len(changed)
        row["_changed"] = [keys[i] for i in changed]
        row["saving_on_changed_pct"] = 100 * on_changed
        row["model_error_on_changed_pct"] = None if err is None else 100 * err
        iv_cost = row["interval_pct"]["cost"]
        iv_frac = None if iv_cost is None else {"low": iv_cost["low"] / 100, "high": iv_cost["high"] / 100}
        row["distinguishable"] = bool(changed) and iv.distinguishable(on_changed, iv_frac, err)
        row["per_session"] = row["saved"]["cost"] / len(keys) if keys else 0.0
        row["worth_acting_on"] = row["distinguishable"] and row["saved"]["cost"] > 0 and \
            row["per_session"] >= PRACTICAL_PER_SESSION
        rows.append(row)
    return rows


def two_estimators(row: dict, keys: list[str], rep: dict, recorded: dict, base_usage_cost: dict,
                   counts) -> None:
    """Put the predictive replay's saving under ``predictive`` and the re-priced recorded events'
    under ``recorded_events`` (None where the lever needs the model), state their agreement, and
    make the headline cost figures (``saved``, ``saved_pct``, ``interval_pct``, ``baseline``,
    ``scenario`` for cost) the recorded estimator's where it exists: it changes only the events
    the lever changes, so it carries no model error on the rest.

    The predictive interval is widened by the model's per-session cost error on the sessions
    the scenario changes, summed without cancelling (``model_error_abs_pct``): a net error can
    be small because errors of both signs cancel. A scenario is distinguishable when every
    estimator it has excludes 0 on the same side."""
    n = row["name"]
    changed = row.pop("_changed", [])
    rec_total = sum(recorded.get(k, 0.0) for k in changed)
    abs_err = (sum(abs(base_usage_cost[k] - recorded.get(k, 0.0)) for k in changed) / rec_total
               if rec_total else None)
    iv_p = row["interval_pct"]["cost"]
    widened = None if iv_p is None else {
        "low": iv_p["low"] - 100 * (abs_err or 0.0), "high": iv_p["high"] + 100 * (abs_err or 0.0)}
    pred = {"saved": row["saved"]["cost"], "saved_pct": row["saved_pct"]["cost"], "interval_pct": widened,
            "bootstrap_interval_pct": iv_p, "baseline": row["baseline"]["cost"], "scenario": row["scenario"]["cost"],
            "model_error_net_pct": row["model_error_on_changed_pct"],
            "model_error_abs_pct": None if abs_err is None else 100 * abs_err}
    row["predictive"] = pred
    recd = None
    if n in rep["costs"]:
        b = np.asarray(rep["recorded"], dtype=np.float64)
        r = np.asarray(rep["costs"][n], dtype=np.float64)
        saved = float(b.sum() - r.sum())
        pct = saved / b.sum() if b.sum() else None
        interval = None
        if counts is not None and pct is not None:
            idx = np.asarray(sorted(range(len(keys)), key=lambda i: (b[i], keys[i])), dtype=np.int64)
            got = iv.ratio_intervals(b[idx], r[idx][None, :], counts,
                                     np.array([pct]))[0]
            interval = None if got is None else {"low": 100 * got["low"], "high": 100 * got["high"]}
        recd = {"saved": saved, "saved_pct": None if pct is None else 100 * pct, "interval_pct": interval,
                "baseline": float(b.sum()), "scenario": float(r.sum()), "keepalive_pings": rep["pings"][n]}
    if recd is not None and recd["saved_pct"] is None:
        recd = None  # no recorded usage to re-price (a log that records none): the predictive figure leads
    row["recorded_events"] = recd
    ests = [e for e in (pred, recd) if e is not None and e["interval_pct"] is not None]
    sides = {("+" if e["interval_pct"]["low"] > 0 else "-" if e["interval_pct"]["high"] < 0 else "0") for e in ests}
    if recd is not None and recd["saved_pct"] is not None and pred["saved_pct"] is not None:
        lo = max(pred["interval_pct"]["low"], recd["interval_pct"]["low"]) if pred["interval_pct"] and \
            recd["interval_pct"] else None
        hi = min(pred["interval_pct"]["high"], recd["interval_pct"]["high"]) if lo is not None else None
        row["agreement"] = {"difference_pct": pred["saved_pct"] - recd["saved_pct"],
                            "intervals_overlap": None if lo is None else bool(lo <= hi),
                            "same_sign": bool((pred["saved_pct"] >= 0) == (recd["saved_pct"] >= 0))}
    else:
        row["agreement"] = None
    row["distinguishable"] = bool(ests) and len(sides) == 1 and "0" not in sides and (
        recd is not None or row["distinguishable"])
    row["worth_acting_on"] = row["distinguishable"] and row["worth_acting_on"] if recd is None else (
        row["distinguishable"] and recd["saved"] > 0 and recd["saved"] / max(len(keys), 1) >= PRACTICAL_PER_SESSION)
    row["headline"] = "recorded_events" if recd is not None else "predictive"
    # what the headline cost figures are measured against: rows of both kinds differ in baseline
    row["cost_baseline"] = "recorded_bill" if recd is not None else "model_only"
    if recd is not None:
        row["saved"]["cost"], row["saved_pct"]["cost"] = recd["saved"], recd["saved_pct"]
        row["interval_pct"]["cost"] = recd["interval_pct"]
        row["baseline"]["cost"], row["scenario"]["cost"] = recd["baseline"], recd["scenario"]
        row["per_session"] = recd["saved"] / len(keys) if keys else 0.0
