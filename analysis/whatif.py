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
from replay.model.arrays import Dataset

from . import intervals as iv

# Savings smaller than this per session are "not worth acting on" (issue 26 item 5: cents per session).
PRACTICAL_PER_SESSION = 0.01


def whatif(ds: Dataset, opts: ReplayOptions, names: list[str] | None = None, n_resamples: int = iv.N_RESAMPLES,
           on_step=None, per_session: bool = False, jobs: int = 1) -> dict[str, Any]:
    """Replay ``ds`` under each named scenario (all by default) and the offline bound, and compare
    each with the model-only replay of the recorded settings, per session. ``per_session``: also
    return every replayed setting's cost per session (``per_session``, in the order of
    ``session_keys``). ``jobs``: local worker processes for the replays."""
    raw = replay_scenarios(ds, opts, names, on_step, jobs)
    keys, costs, writes, totals = raw["session_keys"], raw["costs"], raw["writes"], raw["totals"]
    recorded, usage = raw["recorded"], raw["usage_cost"]
    fidelity = _fidelity(keys, raw["groups"], recorded, usage)
    rows = _compare(keys, costs, writes, raw["names"], recorded, usage["recorded"], n_resamples)
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
        by[BOUND]["online_share_of_bound"] = by["online_1h_after_idle"]["saved"]["cost"] / by[BOUND]["saved"]["cost"]
    extra = {"session_keys": keys, "per_session": costs} if per_session else {}
    return {
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
