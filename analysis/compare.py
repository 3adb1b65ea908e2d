"""Policy comparison: one row per finished run with its figures and deltas vs the baseline.

Read-only over the DuckDB file. The baseline of a run is the latest finished `noop` run of
the same dataset with the same cache-model and price settings; the baseline's own fidelity
(simulated vs recorded cost, on sessions whose log records usage) is reported with it,
because every saving is measured against it.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

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
    df["cache_write"] = df["cache_write_5m"] + df["cache_write_1h"]
    df["hit_rate"] = df["cache_read"] / (df["cache_read"] + df["cache_write"] + df["uncached"]).where(lambda x: x > 0)
    df["mean_hint_distance"] = (df["hint_distance"] / df["hints"]).where(df["hints"] > 0)
    return df


def recorded_cost(con, dataset: str, prices) -> dict[str, float]:
    """Recorded usage and its cost (priced like the runs) over sessions whose log has usage."""
    rows = con.execute(
        """SELECT r.model, sum(r.input_tokens), sum(r.cache_write_5m), sum(r.cache_write_1h), sum(r.cache_read),
                  sum(r.output_tokens)
           FROM requests r JOIN sessions s USING (session_key)
           WHERE s.dataset = ? AND r.session_key IN (
               SELECT session_key FROM requests GROUP BY session_key HAVING bool_or(has_usage))
           GROUP BY r.model""", [dataset]).fetchall()
    tot = {"input_total": 0.0, "cache_read": 0.0, "cache_write": 0.0, "cost": 0.0}
    for model, u, w5, w1h, rd, out in rows:
        tot["input_total"] += u + w5 + w1h + rd
        tot["cache_read"] += rd
        tot["cache_write"] += w5 + w1h
        tot["cost"] += prices.rates(model).cost(u, w5, w1h, rd, out)
    return tot


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
        rec = recorded_cost(con, key[0], table)
        keys = con.execute(
            "SELECT session_key FROM requests r JOIN sessions s USING (session_key) WHERE s.dataset = ? "
            "GROUP BY session_key HAVING bool_or(has_usage)", [key[0]]).fetchall()
        sim = con.execute(
            "SELECT sum(cost) FROM run_sessions WHERE run_id = ? AND session_key IN (SELECT unnest(?))",
            [b["run_id"], [k[0] for k in keys]]).fetchone()[0] or 0.0
        fidelity[key] = {"recorded_cost": rec["cost"], "baseline_cost": sim,
                         "cost_rel_error": (sim - rec["cost"]) / rec["cost"] if rec["cost"] else None}
    per_agent = agent_totals(con, dataset)
    for r in df.itertuples(index=False):
        d = r._asdict()
        key = (r.dataset, r.cache_config, r.prices)
        base = baselines.get(key)
        row = {
            "run_id": r.run_id, "sweep_id": r.sweep_id, "policy": r.policy, "params": json.loads(r.params),
            "dataset": r.dataset, "sessions": int(r.sessions), "git_sha": r.git_sha,
            "started_at": r.started_at.isoformat(),
            "figures": {f: _num(d[f]) for f in (*SUM_FIGURES, "cache_write", "hit_rate", "mean_hint_distance")},
            "baseline_run": base["run_id"] if base else None,
            "baseline_fidelity": fidelity.get(key),
            "by_agent": per_agent.get(r.run_id, {}),
        }
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
                "tokens_delivered": _pct(base["tokens_delivered"] - d["tokens_delivered"], base["tokens_delivered"]),
                "context_tokens": _pct(base["context_tokens"] - d["context_tokens"], base["context_tokens"]),
                "cost": _pct(base["cost"] - d["cost"], base["cost"]),
            }
        rows.append(row)
    return rows


def _num(v):
    if v is None or (isinstance(v, float) and v != v):
        return None
    return float(v)


def _pct(part, whole):
    return float(part / whole) if whole else None
