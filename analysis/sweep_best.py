"""Which setting of a sweep is cheapest once prompt caching is priced, with its 95% interval.

The report's Sweeps section charts every point; a user tuning a policy (masking window x
polling, a compaction trigger) wants the answer first: the setting with the largest cost saving
against the no-op baseline (calibrated variant, or the only variant a what-if sweep has), its
paired-bootstrap interval (`analysis.compare`), and beside it the setting that sends the fewest
context tokens, because the two differ exactly when a policy saves tokens by breaking the cache.
Then every point, cheapest first.

Held out (``holdout``, ``sweep_pick``): the setting is picked on the earlier sessions (by start
time, ``replay.experiments.tune.split_sessions``, 70% by default) and its saving is shown on the
later ones first, with its interval, beside the figure on the sessions it was picked on: the
cheapest of many settings measured on the same sessions is partly the luckiest, and the later
sessions, which played no part in the pick, say what it saves going forward. `ctxreplay tune`
uses the same function for its pick.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import numpy as np

from replay.experiments.sweep import SpecError
from replay.experiments.tune import TRAIN_FRACTION, split_sessions
from replay.policies import REGISTRY

from . import intervals as iv
from .wording import interval_text, pct, show_value, ttl_text


def _runs(rows: list[dict], sid: str) -> list[dict]:
    runs = [r for r in rows if r.get("sweep_id") == sid and r["policy"] != "noop"
            and (r.get("saved_pct") or {}).get("cost") is not None]
    cal = [r for r in runs if r.get("variant") == "calibrated"]
    return cal or runs


def _varying(runs: list[dict]) -> tuple[list[str], bool]:
    """The parameters whose values differ between the runs, and whether the cache settings do."""
    cls = REGISTRY.get(runs[0]["policy"])
    declared = [f.name for f in cls.param_fields()] if cls is not None else []
    seen = {k for r in runs for k in r["params"]}
    keys = [k for k in declared if k in seen] + sorted(seen - set(declared))  # the policy's parameter order
    vary = [k for k in keys if len({json.dumps(r["params"].get(k), sort_keys=True) for r in runs}) > 1]
    cache = len({json.dumps(r["cache_config"], sort_keys=True) for r in runs}) > 1
    return vary, cache


def _label(r: dict, keys: list[str], cache: bool) -> str:
    text = ", ".join(f"{k}={show_value(r['policy'], k, r['params'].get(k))}" for k in keys) or "defaults"
    return f"{text}, {ttl_text(r['cache_config'])}" if cache else text


def _saved(r: dict, fig: str) -> float:
    v = (r.get("saved_pct") or {}).get(fig)
    return v if v is not None else float("-inf")


def _interval(r: dict, fig: str) -> str:
    return interval_text((r.get("interval") or {}).get(fig))


def _count(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


# one draw per number of sessions, shared by every run measured on that many (as in saving_intervals)
_counts = lru_cache(maxsize=8)(iv.resample_counts)


def _side(per: dict, run_id: str, base_id: str, keys, figure: str) -> dict[str, Any] | None:
    """The saving of ``run_id`` against ``base_id`` over the sessions ``keys`` (those both hold):
    the point figure and its paired-bootstrap interval, drawn exactly as ``intervals.saving_intervals``
    draws it (sessions in the order of the baseline's figures, the same seed), so on every session
    it is the interval `compare` shows."""
    r, b = per.get(run_id), per.get(base_id)
    if r is None or b is None:
        return None
    rpos = {k: i for i, k in enumerate(r["session_key"])}
    bpos = {k: i for i, k in enumerate(b["session_key"])}
    ks = sorted((k for k in keys if k in rpos and k in bpos),
                key=lambda k: (*(b[f][bpos[k]] for f in iv.FIGURES), k))
    if not ks:
        return None
    ri = np.fromiter((rpos[k] for k in ks), dtype=np.int64, count=len(ks))
    bi = np.fromiter((bpos[k] for k in ks), dtype=np.int64, count=len(ks))
    base, run = b[figure][bi], r[figure][ri]
    point = iv.share(base.sum() - run.sum(), base.sum())
    ci = iv.ratio_intervals(base, run[None, :], _counts(len(ks)),
                            np.array([np.nan if point is None else point]))[0]
    return {"sessions": len(ks), "saved": float(base.sum() - run.sum()), "saved_pct": point,
            "interval_pct": None if ci is None else [ci["low"], ci["high"]], "baseline": float(base.sum()),
            "baseline_cost": float(b["cost"][bi].sum()), "cost": float(r["cost"][ri].sum())}


def holdout(con, run_id: str, base_id: str, train, test, figure: str = "cost", *,
            held_out: bool = True) -> dict[str, Any]:
    """{in_sample, out_of_sample, optimism}: the saving of ``run_id`` against ``base_id`` on the
    sessions it was picked on (``train``) and on the later ones (``test``), each with its 95%
    interval. ``optimism``: in-sample minus out-of-sample saving (a ratio, like ``saved_pct``;
    positive = the pick looked better where it was picked). ``held_out`` False (``--split none``):
    the pick was made on every session, so there is nothing held out."""
    per = iv.session_matrix(con, [run_id, base_id])
    ins = _side(per, run_id, base_id, train, figure)
    oos = _side(per, run_id, base_id, test, figure) if held_out else None
    opt = (None if not ins or not oos or ins["saved_pct"] is None or oos["saved_pct"] is None
           else ins["saved_pct"] - oos["saved_pct"])
    return {"in_sample": ins, "out_of_sample": oos, "optimism": opt}


def earlier_fit(con, runs: list[dict], split: str, train_fraction: float, figure: str) -> dict[str, Any]:
    """The sessions of ``runs``' baselines split into earlier and later ones, and each run's
    saving against its baseline on the earlier: {train, test, fit: run_id -> `_side` (None
    where it has none)}, or {error} when the split leaves a side empty."""
    per = iv.session_matrix(con, [*(r["run_id"] for r in runs), *(r["baseline_run"] for r in runs)])
    keys = sorted({k for r in runs if r["baseline_run"] in per for k in per[r["baseline_run"]]["session_key"]})
    try:
        train, test = split_sessions(con, keys, split, train_fraction)
    except SpecError as e:
        return {"error": str(e)}
    return {"train": train, "test": test,
            "fit": {r["run_id"]: _side(per, r["run_id"], r["baseline_run"], train, figure) for r in runs}}


def sweep_pick(con, rows: list[dict], sid: str, split: str = "time",
               train_fraction: float = TRAIN_FRACTION) -> dict[str, Any] | None:
    """Sweep ``sid``'s cheapest setting picked on its earlier sessions: {run_id, train, test,
    in_sample, out_of_sample, optimism}, or {error} when the split leaves a side empty, or None
    when the sweep has no measured policy run. The candidates are the runs `best_lines` ranks."""
    runs = [r for r in _runs(rows, sid) if r.get("baseline_run")]
    if not runs:
        return None
    view = earlier_fit(con, runs, split, train_fraction, "cost")
    if "error" in view:
        return view
    fit, train, test = view["fit"], view["train"], view["test"]
    # the pick sees the earlier sessions only; a run id breaks a tie so the pick never depends on row order
    best = max(runs, key=lambda r: ((fit[r["run_id"]] or {}).get("saved_pct") or float("-inf"), r["run_id"]))
    got = holdout(con, best["run_id"], best["baseline_run"], train, test, "cost", held_out=split != "none")
    return {"run_id": best["run_id"], "train": train, "test": test, **got}


def held_out_text(h: dict, unit: str = "cost") -> str:
    """`cost saved +4.10% (95% interval ...) on the 30 later sessions it was not picked on, against
    +5.20% on the 70 earlier ones it was picked on (optimism +1.10 points)`."""
    o, i = h["out_of_sample"], h["in_sample"]
    text = (f"{unit} saved {pct(o['saved_pct'])} (95% interval {_pair(o['interval_pct'])}) on the {o['sessions']:,} "
            f"later session(s) it was not picked on")
    if i:
        text += (f", against {pct(i['saved_pct'])} (95% interval {_pair(i['interval_pct'])}) on the "
                 f"{i['sessions']:,} earlier one(s) it was picked on")
    if h.get("optimism") is not None:
        text += f" ({optimism_text(h['optimism'])})"
    return text


def optimism_text(opt: float) -> str:
    """`optimism +1.10 points`: how much more the pick saved on the sessions it was picked on than
    on the later ones; a negative one says the later sessions saved more (not a flaw of the pick)."""
    return f"optimism {100 * opt:+z.2f} points" + (
        ": the later saved more" if round(100 * opt, 2) < 0 else "")


def _pair(v: list | None) -> str:
    return interval_text(None if v is None else {"low": v[0], "high": v[1]})


def best_lines(rows: list[dict], sid: str, held: dict[str, Any] | None = None) -> list[str]:
    """Markdown: the cheapest setting of sweep ``sid`` with caching, the one sending the fewest
    context tokens, and a table of every point (empty when the sweep has no policy runs).
    ``held`` (``sweep_pick``): the setting picked on the earlier sessions leads, with its saving
    on the later ones; without it (or when the split left a side empty) the cheapest on every
    session leads, as before the split."""
    runs = _runs(rows, sid)
    if not runs:
        return []
    keys, cache = _varying(runs)
    variant = runs[0].get("variant", "calibrated").replace("_", "-")
    ranked = sorted(runs, key=lambda r: -_saved(r, "cost"))
    best = ranked[0]
    tok = max(runs, key=lambda r: _saved(r, "context_tokens"))
    picked = None
    if held and held.get("out_of_sample"):
        picked = next((r for r in runs if r["run_id"] == held["run_id"]), None)
    if picked is not None:
        best = picked
        out = ["", f"Cheapest with caching ({variant}), picked on the earlier sessions: **{best['policy']} "
                   f"({_label(best, keys, cache)})**, {held_out_text(held)}; on every session cost saved "
                   f"{pct(_saved(best, 'cost'))} (95% interval {_interval(best, 'cost')}), context tokens saved "
                   f"{pct(_saved(best, 'context_tokens'))}."]
    else:
        out = ["", f"Cheapest with caching ({variant}): **{best['policy']} ({_label(best, keys, cache)})**, cost saved "
                   f"{pct(_saved(best, 'cost'))} (95% interval {_interval(best, 'cost')}), context tokens saved "
                   f"{pct(_saved(best, 'context_tokens'))}."]
        if held and held.get("error"):
            out[-1] += f" Not held out: {held['error'].split(';')[0]}."
    if _saved(ranked[0], "cost") < 0:  # the pick on earlier sessions need not be the cheapest on all
        out[-1] += " Every setting of this sweep costs more than the no-op baseline."
    rr = (best.get("risk") or {}).get("trimmed_reread")
    if rr:
        # the recommendation above ranks only runs within the risk limits (0 by default)
        out[-1] += (f" It removed content the agent read again {rr:,.0f} times, over the recommendation's default "
                    f"risk limit (`--max-risk trimmed_reread={rr:.0f}` admits it).")
    if tok is not best:
        out += ["", f"Fewest context tokens: {_label(tok, keys, cache)}, context tokens saved "
                   f"{pct(_saved(tok, 'context_tokens'))}, but cost saved {pct(_saved(tok, 'cost'))} "
                   f"(95% interval {_interval(tok, 'cost')}): fewer tokens are not fewer dollars here."]
    out += ["", "| setting | cost saved | 95% interval | context tokens saved | cache busts | re-reads of removed "
                "content |", "|---|---|---|---|---|---|"]
    for r in ranked:
        busts = (r.get("figures") or {}).get("busts")
        rr = (r.get("risk") or {}).get("trimmed_reread")
        out.append(f"| {_label(r, keys, cache)} | {pct(_saved(r, 'cost'))} | {_interval(r, 'cost')} | "
                   f"{pct(_saved(r, 'context_tokens'))} | {_count(busts)} | {_count(rr)} |")
    return out + [""]


def best_of(rows: list[dict], sid: str) -> dict[str, Any] | None:
    """The cheapest run of sweep ``sid`` (the row as ``compare`` gives it), or None."""
    runs = _runs(rows, sid)
    return max(runs, key=lambda r: _saved(r, "cost")) if runs else None
