"""The answer the report leads with: which configuration to use, by how much it beats the
baseline (percent and dollars, with a 95% interval), what the runner-up changes, or a plain
"no policy beats the baseline on these logs" / "no policy saves enough to act on".

Built from the rows of ``analysis.compare.compare``, so every run is measured against the
no-op baseline compare pairs it with: the same dataset, slice (session set), cache and price
settings (intervals and ``distinguishable`` as documented in ``analysis.intervals``). The rows
must cover one session set (one dataset and slice): savings of different session sets are
not comparable, and ``answer`` refuses them. The recommendation is made within the calibrated
cache-model variant (the default every run uses); each configuration's model-only saving is
shown beside it.

The rules (``analysis.rules``): runs with any risk counter above its limit (default 0) are
dropped, and the report names each with the counter and its value. Among the rest, the runs
whose saving is distinguishable rank by the saving against their own baseline (in $ or
tokens); the first whose saving is worth acting on (at least a cent, or 1,000 context tokens,
per session) is recommended. Margins between two runs are the difference of their savings,
bootstrapped the same way (paired by session) as a share of the recommended run's baseline.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from . import intervals as iv
from . import rules
from .compare import configuration_key
# how settings and figures read (re-exported: `analysis.report_md` and `analysis.plots` import them from here)
from .wording import interval_text, money, non_default, pct, show_value, ttl_text  # noqa: F401

FIGURE = {"cost": "cost", "tokens": "context_tokens"}
# The offline-optimal bounds (`ctxreplay bound`, replay/experiments/bound.py): stored as runs, never recommended.
BOUNDS = {"bound_insert": "insert-time", "bound_retro": "lossless"}
UNIT = {"cost": ("of cost", "$"), "context_tokens": ("of context tokens", "tokens")}


def calibrated_whatif(row: dict) -> bool:
    """A run of the calibrated variant under a cache what-if setting (`replay.model.whatif`):
    its prices rest on recorded misses the setting would change, so it is never ranked."""
    from replay.model.whatif import whatif_settings

    return row.get("variant") == "calibrated" and bool(whatif_settings(row.get("cache_config") or {}))


def settings(policy: str, params: dict) -> dict[str, str]:
    """Parameters that differ from the policy's source defaults, values as printed."""
    return {k: show_value(policy, k, v) for k, v in non_default(policy, params).items()}


def name(row: dict) -> str:
    """policy (non-default settings), TTL: how the report names a configuration."""
    st = settings(row["policy"], row["params"])
    inner = ", ".join(f"{k}={v}" for k, v in st.items()) or ("defaults" if row["policy"] != "noop" else "")
    return f"{row['policy']}{f' ({inner})' if inner else ''}, {ttl_text(row['cache_config'])}"


def _iv(pair: list | None) -> dict | None:
    return None if pair is None else {"low": pair[0], "high": pair[1]}


def summary(row: dict, fig: str) -> dict[str, Any]:
    base = _baseline_value(row, fig)
    mo = (row.get("variants") or {}).get("model_only")
    return {
        "run_id": row["run_id"], "policy": row["policy"], "params": row["params"],
        "settings": settings(row["policy"], row["params"]), "name": name(row), "ttl": row["cache_config"].get("ttl"),
        "variant": row["variant"], "sweep_id": row.get("sweep_id"), fig: row["figures"][fig],
        "cost": row["figures"]["cost"], "baseline_run": row.get("baseline_run"), "baseline": base,
        "saved_pct": (row.get("saved_pct") or {}).get(fig),
        "saved": None if base is None else base - row["figures"][fig],
        "interval": (row.get("interval") or {}).get(fig),
        "distinguishable": bool((row.get("distinguishable") or {}).get(fig)),
        "fidelity_threshold": (row.get("fidelity_threshold") or {}).get(fig),
        "model_only": None if not mo or mo["run_id"] == row["run_id"] else {
            "run_id": mo["run_id"], "saved_pct": (mo.get("saved_pct") or {}).get(fig),
            "interval": (mo.get("interval") or {}).get(fig),
            "distinguishable": bool((mo.get("distinguishable") or {}).get(fig))},
        "sessions": row.get("sessions"),
        "saved_per_session": (None if base is None or not row.get("sessions")
                               else (base - row["figures"][fig]) / row["sessions"]),
        "risk": {**rules.risk_of(row), "busts": row["figures"].get("busts")},
    }


def differences(a: dict, b: dict) -> list[str]:
    """How configuration ``b`` differs from ``a``, e.g. ["TTL log instead of 5m"]."""
    if a["policy"] != b["policy"]:
        return [f"policy: {b['policy']} instead of {a['policy']}"]
    out = []
    for k in sorted(set(a["params"]) | set(b["params"])):
        va, vb = a["params"].get(k), b["params"].get(k)
        if va != vb:
            out.append(f"{k}: {show_value(a['policy'], k, vb)} instead of {show_value(a['policy'], k, va)}")
    ca, cb = (dict(json.loads(configuration_key(x)[3])) for x in (a, b))
    for k in sorted(set(ca) | set(cb)):
        if ca.get(k) != cb.get(k):
            out.append(f"{'TTL' if k == 'ttl' else k}: {cb.get(k)} instead of {ca.get(k)}")
    return out or ["nothing (the same configuration, run again)"]


def bound_of(policy: str, params: dict | None = None) -> str:
    """The bound a policy is measured against: bound_retro for policies that rewrite history
    (a retroactive hook; a pipeline: any retroactive step), bound_insert for insert-time ones."""
    from replay.policies import REGISTRY, build

    cls = REGISTRY.get(policy)
    if cls is None:
        return "bound_insert"
    if policy == "pipeline":  # per instance: depends on the steps
        try:
            return "bound_retro" if build(policy, params or {}).retroactive() else "bound_insert"
        except Exception:  # noqa: BLE001 - an unbuildable stored pipeline: no bound kind to claim
            return "bound_retro"
    return "bound_retro" if cls.retroactive() else "bound_insert"


def _setting_key(r: dict) -> tuple:
    """A configuration without its policy: dataset, prices, cache settings and variant."""
    k = configuration_key(r)
    return k[0], k[3], k[4]


def bound_runs(rows: list[dict]) -> dict[tuple, dict[str, dict]]:
    """(dataset, cache, prices) -> bound policy -> its latest run with a baseline."""
    out: dict[tuple, dict[str, dict]] = {}
    for r in rows:  # start order: later runs replace earlier ones
        if r["policy"] in BOUNDS and r.get("saved_pct"):
            out.setdefault(_setting_key(r), {})[r["policy"]] = r
    return out


def bound_share(row: dict, bounds: dict[tuple, dict[str, dict]], fig: str = "cost") -> dict[str, Any] | None:
    """A run's saving as a share of its bound (same dataset, cache and price settings), or None
    when no such bound run exists. ``share`` is None when the bound saves nothing."""
    if row["policy"] in BOUNDS or row["policy"] == "noop":
        return None
    name_ = bound_of(row["policy"], row.get("params"))
    b = bounds.get(_setting_key(row), {}).get(name_)
    if b is None:
        return None
    bp = (b.get("saved_pct") or {}).get(fig)
    rp = (row.get("saved_pct") or {}).get(fig)
    base = _baseline_value(b, fig)
    return {"bound": name_, "kind": BOUNDS[name_], "run_id": b["run_id"], "saved_pct": bp,
            "saved": None if base is None else base - b["figures"][fig],
            "share": rp / bp if rp is not None and bp else None}


def _baseline_value(row: dict, fig: str) -> float | None:
    d = row.get("delta")
    return None if not d or d.get(fig) is None else row["figures"][fig] - d[fig]


def _saved(row: dict, fig: str) -> float | None:
    base = _baseline_value(row, fig)
    return None if base is None else base - row["figures"][fig]


def per_session_text(v: float | None, fig: str) -> str:
    if v is None:
        return "-"
    if fig != "cost":
        return f"{v:z,.0f} tokens"
    text = f"{abs(v):,.4f}".rstrip("0")  # a cent shows as $0.01, a fraction of one keeps its digits
    text += "0" * max(0, 2 - len(text.split(".")[1]))
    return ("-$" if v < 0 and float(text.replace(",", "")) != 0 else "$") + text


def session_set(row: dict) -> tuple[str, str]:
    """The sessions a run replayed, as compare pairs them: its dataset and slice."""
    return row["dataset"], json.dumps(row["cache_config"].get("slice"), sort_keys=True)


def _margin(con, fig: str, better: dict, worse: dict) -> dict[str, Any]:
    """``better``'s saving minus ``worse``'s, each against its own baseline (the same baseline
    when both share cache settings), in the figure's units and as a share of ``better``'s
    baseline, with a paired bootstrap interval over the sessions the runs share."""
    ids = [better["run_id"], better["baseline_run"], worse["run_id"], worse["baseline_run"]]
    sb, sw = _saved(better, fig), _saved(worse, fig)
    base = _baseline_value(better, fig)
    value = None if sb is None or sw is None else sb - sw
    out: dict[str, Any] = {"value": value, "pct": value / base if value is not None and base else None,
                           "interval": None, "distinguishable": False}
    if value is None:
        return out
    per = iv.session_matrix(con, ids, (fig,))
    if not base or any(r not in per for r in ids):
        return out
    pos = [{k: i for i, k in enumerate(per[r]["session_key"])} for r in ids]
    base_vals = per[ids[1]][fig]
    keys = sorted(set(pos[0]).intersection(*pos[1:]), key=lambda k: (base_vals[pos[1][k]], k))  # as in intervals
    if not keys:
        return out
    b, bb, w, wb = (np.array([per[r][fig][p[k]] for k in keys]) for r, p in zip(ids, pos))
    out["interval"] = iv.difference_interval(bb - b, wb - w, bb, iv.resample_counts(len(keys)))
    out["distinguishable"] = iv.distinguishable(out["pct"], out["interval"], 0.0)
    return out


def _dropped(r: dict, over: list[dict], fig: str) -> dict[str, Any]:
    return {"run_id": r["run_id"], "name": name(r), "policy": r["policy"],
            "saved_pct": (r.get("saved_pct") or {}).get(fig), "over": over}


def _earlier_view(con, cand: list[dict], fig: str, split: str, train_fraction: float) -> dict[str, Any] | None:
    """The candidates measured on the earlier sessions only (``split="time"``), which the pick is
    then made on: {train, test, fit: run_id -> {saved_pct, saved, sessions, distinguishable}}, or
    {error} when the split leaves a side empty, or None (``split="none"``, nothing to rank)."""
    if split == "none" or con is None or not cand:
        return None
    from .sweep_best import earlier_fit

    view = earlier_fit(con, cand, split, train_fraction, fig)
    if "error" in view:
        return view
    fit = {}
    for r in cand:
        h = view["fit"][r["run_id"]]
        if h is None:
            continue
        ci = None if h["interval_pct"] is None else {"low": h["interval_pct"][0], "high": h["interval_pct"][1]}
        fit[r["run_id"]] = {"saved_pct": h["saved_pct"], "saved": h["saved"], "sessions": h["sessions"],
                            "distinguishable": iv.distinguishable(h["saved_pct"], ci,
                                                                  (r.get("fidelity_threshold") or {}).get(fig))}
    return {**view, "fit": fit}


def answer(con, rows: list[dict], objective: str = "cost", max_risk: dict[str, float] | None = None,
           top: int = 10, min_per_session: float | None = None, split: str = "none",
           train_fraction: float = 0.7) -> dict[str, Any]:
    """The recommendation with its evidence; ``headline`` is one plain sentence; ``verdict`` is
    ``recommended``, ``too_small`` (distinguishable savings, none worth acting on), ``no_saving``
    (none distinguishable), ``over_risk`` (every measured run dropped by the risk filter),
    ``no_baseline`` or ``no_runs``. ``max_risk``: limits over the default (0 for every risk
    counter); ``min_per_session``: the saving per session worth acting on (rules.MIN_SAVING_PER_SESSION).

    ``split="time"`` (the report's): the candidates are ranked, tested for distinguishability and
    for being worth acting on over the earlier ``train_fraction`` of the sessions (by start time,
    ``replay.experiments.tune.split_sessions``) and the headline leads with the lead's saving on
    the later sessions, which played no part in choosing it (``held_out``). ``split="none"``:
    everything on every session."""
    max_risk = dict(max_risk or {})
    fig = FIGURE[objective]
    unit_pct, _ = UNIT[fig]
    sets = {session_set(r) for r in rows}
    if len(sets) > 1:
        raise ValueError("the runs cover different session sets (" + "; ".join(
            f"{d}{'' if s == 'null' else ' slice ' + s}" for d, s in sorted(sets)) + "): a saving is only comparable "
            "within one; choose one dataset and slice")
    floor = rules.MIN_SAVING_PER_SESSION[fig] if min_per_session is None else float(min_per_session)
    # a cache what-if (a forced TTL, a client break ignored) is never ranked by calibrated prices:
    # that variant copies the log's recorded misses, which the setting would change
    whatifs = [r for r in rows if calibrated_whatif(r)]
    trusted = [r for r in rows if not calibrated_whatif(r)]
    cal = [r for r in trusted if r["variant"] == "calibrated"]
    variant = "calibrated" if cal else "model_only"
    cal = cal or trusted
    bounds = bound_runs(cal)
    cal = [r for r in cal if r["policy"] not in BOUNDS]
    latest = {configuration_key(r): r for r in cal}  # a configuration run twice counts once (its latest run)
    measured = [r for r in latest.values() if r["policy"] != "noop" and r.get("saved_pct")]
    cand, dropped = [], []
    for r in measured:
        over = rules.over_limits(r, max_risk)
        if over:
            dropped.append(_dropped(r, over, fig))
        else:
            cand.append(r)
    dropped.sort(key=lambda d: -(d["saved_pct"] if d["saved_pct"] is not None else -1e18))

    def saved(r):
        v = _saved(r, fig)
        return -1e18 if v is None else v

    view = _earlier_view(con, cand, fig, split, train_fraction)
    fit = (view or {}).get("fit")
    if fit is not None:  # the pick sees the earlier sessions only; a run measured on none of them cannot lead
        cand = [r for r in cand if r["run_id"] in fit]

    def fit_saved(r):
        v = fit[r["run_id"]]["saved"] if fit is not None else _saved(r, fig)
        return -1e18 if v is None else v

    def fit_pct(r):
        v = fit[r["run_id"]]["saved_pct"] if fit is not None else r["saved_pct"][fig]
        return -1e18 if v is None else v

    def fit_dist(r):
        if fit is not None:
            return fit[r["run_id"]]["distinguishable"]
        return bool((r.get("distinguishable") or {}).get(fig))

    winners = sorted((r for r in cand if fit_dist(r) and fit_pct(r) > 0), key=lambda r: -fit_saved(r))
    act = [r for r in winners if rules.worth_acting(
        fit_saved(r), True, fig, fit[r["run_id"]]["sessions"] if fit is not None else r["sessions"], floor)]
    rest = sorted((r for r in cand if r not in winners), key=lambda r: -fit_pct(r))
    ranked = act + [r for r in winners if r not in act] + rest
    unmeasured = [r for r in latest.values() if r["policy"] != "noop" and not r.get("baseline_run")]
    out: dict[str, Any] = {"objective": objective, "figure": fig, "max_risk": max_risk, "variant": variant,
                           "risk_rule": rules.limits_text(max_risk), "min_saving_per_session": floor,
                           "candidates": len(cand), "beats_baseline": bool(winners), "worth_acting": bool(act),
                           "best": None, "dropped": dropped, "without_baseline": [r["run_id"] for r in unmeasured],
                           "ranked": [{**summary(r, fig), "bound": bound_share(r, bounds, fig)} for r in ranked[:top]],
                           "not_ranked_whatifs": sorted({r["run_id"] for r in whatifs if r["policy"] != "noop"})}
    if not measured:
        if unmeasured:
            out["verdict"] = "no_baseline"
            out["headline"] = (f"No saving can be measured: {len(unmeasured)} configuration(s) have no no-op baseline "
                               "with their cache and price settings. Store one with `ctxreplay replay --policy noop` "
                               "and the same cache options (or `ctxreplay compare --run-baselines`), then write the "
                               "report again.")
        else:
            out["verdict"] = "no_runs"
            out["headline"] = ("No policy run to compare: the runs of this dataset and slice are no-op baselines "
                               "only. Replay a policy (`ctxreplay replay --policy NAME`, or `ctxreplay sweep SPEC`), "
                               "then write the report again.")
        return out
    if not cand:
        out["verdict"] = "over_risk"
        out["headline"] = (f"No run meets the risk limit ({out['risk_rule']}): all {len(dropped)} measured "
                           "configuration(s) were dropped (listed below with the counter that dropped them).")
        return out
    lead = ranked[0]
    s = {**summary(lead, fig), "bound": bound_share(lead, bounds, fig)}
    here = bounds.get(_setting_key(lead), {})
    out["bounds"] = {k: {"run_id": b["run_id"], "kind": BOUNDS[k], "saved_pct": (b.get("saved_pct") or {}).get(fig),
                         "saved": _saved(b, fig)} for k, b in sorted(here.items())}
    mo = s["model_only"]
    mo_text = ("" if not mo else f"; model only: {pct(mo['saved_pct'])}, 95% interval {interval_text(mo['interval'])}"
               + ("" if mo["distinguishable"] else ", not distinguishable"))
    evidence = (f"{pct(s['saved_pct'])} {unit_pct} ({money(s['saved'], fig)} of {money(s['baseline'], fig)}, "
                f"{per_session_text(s['saved_per_session'], fig)} per session), "
                f"95% interval {interval_text(s['interval'])} ({variant.replace('_', '-')} cache model{mo_text})")
    bs = s["bound"]
    if bs and bs["share"] is not None:
        evidence += (f"; that is {bs['share']:z.0%} of the offline-optimal {bs['kind']} bound's saving "
                     f"({pct(bs['saved_pct'])}, {money(bs['saved'], fig)})")
    floor_text = per_session_text(floor, fig)
    ahead = ""
    if view and view.get("error"):
        out["held_out"] = {"error": view["error"]}
    elif view:
        from .sweep_best import holdout, optimism_text

        h = holdout(con, lead["run_id"], lead["baseline_run"], view["train"], view["test"], fig)
        out["held_out"] = {"split": split, "train_fraction": train_fraction, "train_sessions": len(view["train"]),
                           "test_sessions": len(view["test"]), **h}
        o, i = h["out_of_sample"], h["in_sample"]
        if o and i:
            # the figure that holds going forward leads: it played no part in choosing the lead
            ahead = (f"On the {o['sessions']:,} later session(s), which played no part in choosing it, it saves "
                     f"{pct(o['saved_pct'])} {unit_pct} ({money(o['saved'], fig)}), 95% interval "
                     f"{interval_text(_iv(o['interval_pct']))}, against {pct(i['saved_pct'])} (95% interval "
                     f"{interval_text(_iv(i['interval_pct']))}) on the {i['sessions']:,} earlier one(s) it was chosen "
                     f"on ({optimism_text(h['optimism'])}). ") if h["optimism"] is not None else ""
    if act:
        out["verdict"] = "recommended"
        out["best"] = s
        out["headline"] = (f"Recommended: {s['name']}. {ahead}Against the no-op baseline with the same cache settings"
                           f"{', on every session,' if ahead else ''} it saves {evidence}.")
    elif winners:
        # the floor was applied to what the pick saw: the earlier sessions' saving when there are
        # later ones, which may differ from the all-session figure quoted in `evidence`
        judged = "That is "
        if fit is not None and fit[lead["run_id"]]["sessions"]:
            f = fit[lead["run_id"]]
            judged = (f"On the {f['sessions']:,} earlier session(s) it was judged on it saves "
                      f"{per_session_text(f['saved'] / f['sessions'], fig)} per session: ")
        out["verdict"] = "too_small"
        out["closest"] = s
        out["headline"] = (f"No policy saves enough to act on: the largest distinguishable saving within the risk limit"
                           f"{' on the earlier sessions' if ahead else ''}, {s['name']}, is {evidence}. "
                           f"{ahead}{judged}below {floor_text} per session, the least worth changing a set-up for.")
    else:
        out["verdict"] = "no_saving"
        out["closest"] = s
        out["headline"] = (f"No policy beats the baseline on these logs: no saving {unit_pct} within the risk limit is "
                           f"distinguishable from 0 and from the baseline's own error"
                           f"{' on the earlier sessions' if ahead else ''}. Closest: {s['name']}, "
                           f"{evidence}, not distinguishable. {ahead}".rstrip())
    if len(ranked) > 1:
        ru = ranked[1]
        out["runner_up"] = summary(ru, fig)
        out["runner_up_differs"] = differences(lead, ru)
        out["margin_over_runner_up"] = _margin(con, fig, lead, ru)
    defaults = [r for r in cand if not non_default(r["policy"], r["params"]) and r["cache_config"].get("ttl") == "log"]
    if defaults:
        d = max(defaults, key=lambda r: saved(r))
        # the runner-up's margin is stated already: the same run's is not repeated
        if d["run_id"] != lead["run_id"] and d["run_id"] != out.get("runner_up", {}).get("run_id"):
            out["best_source_default"] = summary(d, fig)
            out["margin_over_source_default"] = _margin(con, fig, lead, d)
    return out
