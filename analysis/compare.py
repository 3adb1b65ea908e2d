"""Policy comparison: one row per finished run with its figures and deltas vs the baseline.

Read-only over the DuckDB file. The baseline of a run is the latest finished `noop` run of
the same dataset with the same cache-model and price settings (the stored cache configuration
includes a run's dataset slice, so a sliced run is measured only against a baseline of the same
slice, and that baseline's fidelity only over the slice's sessions); the baseline's own fidelity
(simulated vs recorded cost, on sessions whose log records usage) is reported with it,
because every saving is measured against it.

A saving (deltas, ``saved_pct``, interval) is measured on the sessions the run and its baseline
both replayed alike (`analysis.saving.comparable`): a baseline stored before an ingest lacks the
sessions added since and replayed the older version of those read again. ``sessions_compared``
says on how many, ``sessions_left_out`` how many were left out and why (None: none were).

Each saving carries a 95% paired bootstrap interval over sessions and a ``distinguishable``
flag (method: ``analysis.intervals``). Runs of the same policy, parameters and cache
settings under both cache-model variants -- ``calibrated`` (``observed_evictions="log"``,
the default) and ``model_only`` (``"none"``) -- are paired in ``variants`` so a reader sees
how much of a saving rests on the calibration from the log. The rows are strict JSON
(no NaN or infinity: missing values are null).
"""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd

from replay.model.cache import stored_settings

from . import intervals as iv
from . import rules
from .saving import comparable

SUM_FIGURES = ("requests", "input_total", "uncached", "cache_read", "cache_write_5m", "cache_write_1h", "output",
               "cost", "busts", "bust_tokens", "tokens_delivered", "context_tokens", "hints", "dangling_refs",
               "hint_distance", "trimmed_reread", "stale_refs", "blocks_changed", "tokens_saved")


def run_totals(con, dataset: str | None = None) -> pd.DataFrame:
    """Finished runs with figures summed over sessions (one row per run)."""
    sums = ", ".join(f"sum(rs.{f}) AS {f}" for f in SUM_FIGURES)
    where = "r.status = 'finished'" + (" AND r.dataset = $ds" if dataset else "")
    df = con.execute(
        f"""SELECT r.run_id, r.sweep_id, r.policy, r.params, r.cache_config, r.prices, r.dataset, r.git_sha,
                   r.started_at, count(rs.session_key) AS sessions, {sums}
            FROM runs r JOIN run_sessions rs USING (run_id)
            WHERE {where} GROUP BY ALL ORDER BY r.started_at""",
        {"ds": dataset} if dataset else {},
    ).df()
    if df.empty:
        return df
    # one text per configuration, settings a run predates filled in, so pairing is by meaning
    df["cache_config"] = df["cache_config"].map(
        lambda t: json.dumps(stored_settings(json.loads(t)), sort_keys=True))
    df["cache_config"] = df["cache_config"].astype(object)
    df["cache_write"] = df["cache_write_5m"] + df["cache_write_1h"]
    df["hit_rate"] = df["cache_read"] / (df["cache_read"] + df["cache_write"] + df["uncached"]).where(lambda x: x > 0)
    df["mean_hint_distance"] = (df["hint_distance"] / df["hints"]).where(df["hints"] > 0)
    return df


def recorded_cost(con, dataset: str, prices, run_id: str | None = None) -> dict[str, float]:
    """Recorded usage and its cost over sessions whose log has usage, each request priced on its
    own at its model's and speed's rates (the one pricing path, shared with `validate`).
    ``run_id``: only the sessions that run replayed (a run of a dataset slice)."""
    from replay.experiments.validate import recorded_cost as priced_per_request

    fields = ("input_total", "cache_read", "cache_write", "cost")
    rec = priced_per_request(con, dataset, prices)
    if run_id is None:
        return {f: rec[f] for f in fields}
    keys = {k for (k,) in con.execute("SELECT session_key FROM run_sessions WHERE run_id = ?", [run_id]).fetchall()}
    per = [v for k, v in rec["per_session"].items() if k in keys and v["requests_with_usage"]]
    return {f: float(sum(v[f] for v in per)) for f in fields}


def _sums(con, run_id: str, keys: set) -> dict[str, float]:
    """A run's figures summed over the sessions ``keys`` (with ``cache_write``)."""
    cols = ", ".join(f"coalesce(sum({f}), 0)" for f in SUM_FIGURES)
    got = con.execute(f"SELECT {cols} FROM run_sessions WHERE run_id = ? AND session_key IN (SELECT unnest(?))",
                      [run_id, sorted(keys)]).fetchone()
    out = {f: float(v) for f, v in zip(SUM_FIGURES, got)}
    out["cache_write"] = out["cache_write_5m"] + out["cache_write_1h"]
    return out


def agent_totals(con, dataset: str | None = None) -> dict[str, dict[str, dict[str, float]]]:
    """run_id -> agent -> summed figures (cost, context tokens, tokens delivered, busts, sessions)."""
    where = "r.status = 'finished'" + (" AND r.dataset = $ds" if dataset else "")
    rows = con.execute(
        f"""SELECT rs.run_id, s.agent, count(*), sum(rs.cost), sum(rs.context_tokens), sum(rs.tokens_delivered),
                   sum(rs.busts)
            FROM run_sessions rs JOIN runs r USING (run_id) JOIN sessions s USING (session_key)
            WHERE {where} GROUP BY ALL""", {"ds": dataset} if dataset else {}).fetchall()
    out: dict[str, dict[str, dict[str, float]]] = {}
    for run_id, agent, n, cost, ctx, dlv, busts in rows:
        out.setdefault(run_id, {})[agent] = {"sessions": n, "cost": cost, "context_tokens": ctx,
                                             "tokens_delivered": dlv, "busts": busts}
    return out


def compare(con, dataset: str | None = None) -> list[dict[str, Any]]:
    """Rows for `ctxreplay compare`: figures, deltas vs baseline, baseline fidelity."""
    from replay.model.costs import PriceTable

    df = run_totals(con, dataset)
    if df.empty:
        return []
    rows = []
    baselines: dict[tuple, dict] = {}
    for r in df.itertuples(index=False):
        if r.policy == "noop":
            baselines[(r.dataset, r.cache_config, r.prices)] = r._asdict()
    fidelity: dict[tuple, dict] = {}
    for key, b in baselines.items():
        prices = json.loads(key[2])
        table = PriceTable(prices["price_date"], prices.get("overrides") or {}, prices.get("override_file"))
        sliced = "slice" in json.loads(key[1])
        rec = recorded_cost(con, key[0], table, None if not sliced else b["run_id"])
        keys = con.execute(
            "SELECT session_key FROM requests r JOIN sessions s USING (session_key) WHERE s.dataset = ? "
            "GROUP BY session_key HAVING bool_or(has_usage)", [key[0]]).fetchall()
        sim, sim_input = con.execute(
            "SELECT sum(cost), sum(input_total) FROM run_sessions WHERE run_id = ? AND session_key IN (SELECT unnest(?))",
            [b["run_id"], [k[0] for k in keys]]).fetchone()
        sim, sim_input = sim or 0.0, sim_input or 0.0
        fidelity[key] = {"recorded_cost": rec["cost"], "baseline_cost": sim,
                         "cost_rel_error": (sim - rec["cost"]) / rec["cost"] if rec["cost"] else None,
                         "recorded_input_total": rec["input_total"], "baseline_input_total": sim_input,
                         "input_rel_error": ((sim_input - rec["input_total"]) / rec["input_total"]
                                             if rec["input_total"] else None)}
    per_agent = agent_totals(con, dataset)
    extras = rules.extra_totals(con, dataset)
    # a run stored before the dataset's latest ingest covers sessions as they were then: added or
    # re-read sessions change what a baseline stored since covers (and, with system_prefix =
    # "dataset", the system prefix of cold streams of every session)
    latest = dict(con.execute("SELECT dataset, max(ingested_at) FROM source_files GROUP BY dataset").fetchall())
    comp = comparable(con, {r.run_id: baselines[(r.dataset, r.cache_config, r.prices)]["run_id"]
                            for r in df.itertuples(index=False) if (r.dataset, r.cache_config, r.prices) in baselines})
    restrict: dict[str, set] = {}  # run -> the sessions its saving is measured on, where not all are
    for r in df.itertuples(index=False):
        d = r._asdict()
        key = (r.dataset, r.cache_config, r.prices)
        base = baselines.get(key)
        c = comp.get(r.run_id)
        cache_config = json.loads(r.cache_config)
        row = {
            "run_id": r.run_id, "sweep_id": r.sweep_id if isinstance(r.sweep_id, str) else None, "policy": r.policy,
            "params": json.loads(r.params), "cache_config": cache_config, "variant": variant_of(cache_config),
            "prices": json.loads(r.prices),
            "dataset": r.dataset, "sessions": int(r.sessions), "git_sha": r.git_sha,
            "started_at": r.started_at.isoformat(),
            "figures": {f: _num(d[f]) for f in (*SUM_FIGURES, "cache_write", "hit_rate", "mean_hint_distance")},
            "baseline_run": base["run_id"] if base else None,
            "before_latest_ingest": bool(latest.get(r.dataset) is not None and r.started_at < latest[r.dataset]),
            "baseline_fidelity": fidelity.get(key),
            "sessions_compared": c["sessions"] if c else None,
            "sessions_left_out": c["left_out"] if c else None,
            "by_agent": per_agent.get(r.run_id, {}),
        }
        # every risk counter, the policy's own (stored beside the fixed columns) included
        row["risk"] = {**{k: _num(d[k]) or 0.0 for k in rules.BASE_RISK_COUNTERS}, **extras.get(r.run_id, {})}
        if base and c and c["left_out"]:  # the saving on the shared sessions only
            restrict[r.run_id] = c["keys"]
            d, base = {**d, **_sums(con, r.run_id, c["keys"])}, {**base, **_sums(con, base["run_id"], c["keys"])}
        if base:
            for agent, fa in row["by_agent"].items():
                ba = per_agent.get(base["run_id"], {}).get(agent)
                if ba and ba["cost"]:
                    fa["cost_saved_pct"] = (ba["cost"] - fa["cost"]) / ba["cost"]
                    fa["context_saved_pct"] = ((ba["context_tokens"] - fa["context_tokens"]) / ba["context_tokens"]
                                               if ba["context_tokens"] else None)
            row["delta"] = {f: _num(d[f] - base[f]) for f in ("tokens_delivered", "context_tokens", "input_total",
                                                              "cache_read", "cache_write", "uncached", "cost")}
            row["saved_pct"] = {
                "tokens_delivered": iv.share(base["tokens_delivered"] - d["tokens_delivered"],
                                             base["tokens_delivered"]),
                "context_tokens": iv.share(base["context_tokens"] - d["context_tokens"], base["context_tokens"]),
                "cost": iv.share(base["cost"] - d["cost"], base["cost"]),
            }
        rows.append(row)
    add_intervals(con, rows, sessions=restrict)
    add_variants(rows)
    return [strict(r) for r in rows]


VARIANTS = {"log": "calibrated", "none": "model_only"}


def variant_of(cache_config: dict) -> str:
    """``calibrated`` (observed evictions replayed from the log) or ``model_only`` (not)."""
    v = cache_config.get("observed_evictions", "log")
    return VARIANTS.get(v, str(v))


def fidelity_thresholds(fid: dict | None) -> dict[str, float]:
    """Per figure, the baseline's own error against the recorded usage (0 if unknown): the
    cost error for cost, the input-total error for the token figures."""
    fid = fid or {}
    cost = abs(fid.get("cost_rel_error") or 0.0)
    tokens = abs(fid.get("input_rel_error") or 0.0)
    return {"cost": cost, "context_tokens": tokens, "tokens_delivered": tokens}


def add_intervals(con, rows: list[dict], **kw) -> None:
    """Give every row with a baseline ``interval`` (figure -> {low, high}, same units as
    ``saved_pct``), ``distinguishable`` (figure -> bool), ``fidelity_threshold`` and ``bootstrap``."""
    pairs = {r["run_id"]: r["baseline_run"] for r in rows if r.get("baseline_run") and r.get("saved_pct")}
    got = iv.saving_intervals(con, pairs, **kw)
    meta = {"method": "paired percentile bootstrap over sessions", "resamples": kw.get("n_resamples", iv.N_RESAMPLES),
            "level": kw.get("level", iv.LEVEL), "seed": kw.get("seed", iv.SEED)}
    for r in rows:
        if r["run_id"] not in pairs:
            continue
        ints = got.get(r["run_id"], {})
        thr = fidelity_thresholds(r.get("baseline_fidelity"))
        r["interval"] = {f: ints.get(f) for f in iv.FIGURES}
        r["distinguishable"] = {f: iv.distinguishable(r["saved_pct"].get(f), ints.get(f), thr[f]) for f in iv.FIGURES}
        r["fidelity_threshold"] = thr
        r["bootstrap"] = meta


def configuration_key(r: dict, *, variant: bool = True) -> tuple:
    """What makes two runs the same configuration: dataset (and slice), policy, parameters, prices
    and the cache-model settings (``CacheConfig`` fields only: a sweep's bookkeeping is not a setting),
    with or without the variant (``observed_evictions``)."""
    import dataclasses

    from replay.model.cache import CacheConfig

    fields = {f.name for f in dataclasses.fields(CacheConfig)} - ({"observed_evictions"} if not variant else set())
    cache = {k: v for k, v in r["cache_config"].items() if k in fields}
    if r["cache_config"].get("slice"):
        cache["slice"] = r["cache_config"]["slice"]
    return (r["dataset"], r["policy"], json.dumps(r["params"], sort_keys=True), json.dumps(cache, sort_keys=True),
            json.dumps(r["prices"], sort_keys=True))


def _variant_key(r: dict) -> tuple:
    return configuration_key(r, variant=False)


def add_variants(rows: list[dict]) -> None:
    """Pair runs of the same policy, parameters, dataset, prices and cache settings that differ
    only in the cache-model variant: each such row gets ``variants`` (variant -> the latest run's
    saving, interval and distinguishable flag) and ``calibrated_minus_model_only`` (points of
    saving that rest on the calibration; positive = the calibrated variant saves more)."""
    latest: dict[tuple, dict[str, dict]] = {}
    for r in rows:  # rows are in start order: later runs replace earlier ones
        latest.setdefault(_variant_key(r), {})[r["variant"]] = r
    for r in rows:
        found = latest[_variant_key(r)]
        if len(found) < 2:
            continue
        r["variants"] = {v: {"run_id": x["run_id"], "baseline_run": x.get("baseline_run"),
                             "saved_pct": x.get("saved_pct"), "saved_usd": (-x["delta"]["cost"] if x.get("delta")
                                                                           and x["delta"]["cost"] is not None else None),
                             "interval": x.get("interval"), "distinguishable": x.get("distinguishable"),
                             "baseline_fidelity": x.get("baseline_fidelity")}
                         for v, x in sorted(found.items())}
        cal, mo = found.get("calibrated"), found.get("model_only")
        if cal and mo and cal.get("saved_pct") and mo.get("saved_pct"):
            r["calibrated_minus_model_only"] = {
                f: (cal["saved_pct"][f] - mo["saved_pct"][f]
                    if cal["saved_pct"].get(f) is not None and mo["saved_pct"].get(f) is not None else None)
                for f in iv.FIGURES}


def strict(o):
    """``o`` with every NaN/infinite float (and pandas NA) replaced by None: strict JSON."""
    if isinstance(o, dict):
        return {k: strict(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [strict(v) for v in o]
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if o is None or isinstance(o, (str, bool, int)):
        return o
    try:
        if pd.isna(o):
            return None
    except (TypeError, ValueError):
        pass
    if hasattr(o, "item"):  # numpy scalars
        return strict(o.item())
    return o


def _num(v):
    if v is None or (isinstance(v, float) and v != v):
        return None
    return float(v)

