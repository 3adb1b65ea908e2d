"""Read-only loaders and derived tables over a ctxreplay DuckDB file (pandas DataFrames).

Everything here is a query plus arithmetic on stored figures: nothing is replayed. Cost is
linear in the token categories a run stores (uncached, 5m/1h writes, reads, output), so
repricing under other read/write price ratios is exact without a replay.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from .compare import run_totals
from .compare import variant_of as variant
# re-exported: `replay.cli.results` and the notebooks import them from here
from .wording import VALUE_NAMES, non_default, show_value  # noqa: F401

# shown beside savings; the recommendation's risk filter is analysis.rules (every risk counter, policies' own too)
RISK_FIGURES = ("dangling_refs", "stale_refs", "trimmed_reread", "busts")


def connect(db, read_only: bool = True):
    from replay import store

    return store.connect(db, read_only=read_only)


def datasets(con) -> pd.DataFrame:
    from replay import store

    return pd.DataFrame(store.datasets(con))


def dataset_overview(con, dataset: str) -> dict[str, Any]:
    row = con.execute(
        """SELECT count(*) AS sessions, sum(n_streams), sum(n_requests), sum(n_blocks), sum(n_compactions),
                  string_agg(DISTINCT agent, ', '), min(started_at), max(ended_at)
           FROM sessions WHERE dataset = ?""", [dataset]).fetchone()
    usage = con.execute(
        """SELECT sum(input_tokens + cache_write_5m + cache_write_1h + cache_read), sum(cache_read),
                  sum(cache_write_5m + cache_write_1h), sum(output_tokens)
           FROM requests JOIN sessions USING (session_key) WHERE dataset = ?""", [dataset]).fetchone()
    tool = con.execute(
        """SELECT count(*), sum(tokens) FROM blocks JOIN sessions USING (session_key)
           WHERE dataset = ? AND kind = 'tool_result'""", [dataset]).fetchone()
    return {
        "dataset": dataset, "sessions": row[0], "streams": row[1], "requests": row[2], "blocks": row[3],
        "compactions": row[4], "agents": row[5], "first_ms": row[6], "last_ms": row[7],
        "recorded_input_tokens": usage[0], "recorded_cache_read": usage[1], "recorded_cache_write": usage[2],
        "recorded_output": usage[3], "tool_results": tool[0], "tool_result_bpe_tokens": tool[1],
    }


def runs(con, dataset: str | None = None) -> pd.DataFrame:
    """Finished runs, one row per run, with totals and derived rates (see compare.run_totals)."""
    df = run_totals(con, dataset)
    if df.empty:
        return df
    df["params_dict"] = df["params"].map(json.loads)
    df["cache_dict"] = df["cache_config"].map(json.loads)
    df["label"] = [label(p, r) for p, r in zip(df["policy"], df["params_dict"])]
    return df


def label(policy: str, params: dict) -> str:
    nd = non_default(policy, params)
    if not nd:
        return f"{policy} (defaults)" if policy != "noop" else policy
    return f"{policy} ({', '.join(f'{k}={show_value(policy, k, v)}' for k, v in nd.items())})"


def calibrated(df: pd.DataFrame) -> pd.DataFrame:
    """The runs of the calibrated variant (all runs if the frame has none of them)."""
    if df.empty or "cache_dict" not in df:
        return df
    mask = df["cache_dict"].map(variant) == "calibrated"
    return df[mask] if mask.any() else df


def with_baseline(df: pd.DataFrame) -> pd.DataFrame:
    """Add the matching no-op baseline's figures and the savings (positive = saved)."""
    if df.empty:
        return df
    base = df[df["policy"] == "noop"].drop_duplicates(["dataset", "cache_config", "prices"], keep="last")
    cols = ["dataset", "cache_config", "prices", "cost", "context_tokens", "tokens_delivered", "input_total", "run_id"]
    m = df.merge(base[cols], on=["dataset", "cache_config", "prices"], how="left", suffixes=("", "_base"))
    m["cost_saved"] = m["cost_base"] - m["cost"]
    m["cost_saved_pct"] = m["cost_saved"] / m["cost_base"]
    m["context_saved_pct"] = (m["context_tokens_base"] - m["context_tokens"]) / m["context_tokens_base"]
    m["delivered_saved_pct"] = (m["tokens_delivered_base"] - m["tokens_delivered"]) / m["tokens_delivered_base"]
    m["risk"] = m[list(RISK_FIGURES[:3])].sum(axis=1)
    return m


def defaults_leaderboard(df: pd.DataFrame) -> pd.DataFrame:
    """The latest calibrated-variant run of each policy at its source defaults and the log's TTL."""
    from replay.policies import REGISTRY, build

    if df.empty:
        return df
    rows = []
    df = calibrated(df)
    for policy, g in df[df["sweep_id"].isna()].groupby("policy"):
        if policy not in REGISTRY or policy == "pipeline":
            continue
        default = build(policy).params
        for r in g.iloc[::-1].itertuples(index=False):
            try:
                if build(policy, r.params_dict).params == default and r.cache_dict.get("ttl") == "log":
                    rows.append(r._asdict())
                    break
            except Exception:
                continue
    out = pd.DataFrame(rows)
    return out.sort_values("cost") if not out.empty else out


def pareto_front(df: pd.DataFrame, x: str = "risk", y: str = "cost_saved") -> pd.DataFrame:
    """Rows not dominated: no other row has lower-or-equal risk and higher-or-equal saving (one strictly)."""
    if df.empty:
        return df
    d = df.sort_values([x, y], ascending=[True, False])
    best = -np.inf
    keep = []
    for idx, r in d.iterrows():
        if r[y] > best:
            keep.append(idx)
            best = r[y]
    return d.loc[keep]


def sweep_table(df: pd.DataFrame, sweep_id: str) -> pd.DataFrame:
    """Runs of one sweep with their parameter values (and cache settings) as columns."""
    s = df[(df["sweep_id"] == sweep_id) & (df["policy"] != "noop")].copy()
    if s.empty:
        return s
    params = pd.DataFrame(list(s["params_dict"]), index=s.index)
    cache = pd.DataFrame([{f"cache.{k}": v for k, v in c.items() if k in ("ttl", "breakpoints", "lookback_blocks",
                                                                          "observed_evictions")}
                          for c in s["cache_dict"]], index=s.index)
    return pd.concat([s, params.add_prefix("param."), cache], axis=1)


def varying_columns(t: pd.DataFrame) -> list[str]:
    cols = [c for c in t.columns if c.startswith(("param.", "cache."))]
    return [c for c in cols if t[c].astype(str).nunique() > 1]


def reprice(df: pd.DataFrame, read_ratio: float, write_ratio: float, input_price: float = 3.0,
            output_price: float = 15.0) -> pd.Series:
    """Cost of each run ($) if reads cost read_ratio x input and writes write_ratio x input.

    Exact for any price table, since cost is linear in the stored token categories; uses one
    representative input price for all models.
    """
    p = input_price / 1e6
    return (df["uncached"] * p + df["cache_write"] * p * write_ratio + df["cache_read"] * p * read_ratio
            + df["output"] * output_price / 1e6)


def cache_hit_study(df: pd.DataFrame, ratios: list[tuple[float, float]] | None = None) -> pd.DataFrame:
    """Saving of each non-baseline run vs its baseline under several read/write price ratios.

    Seed 004's trade-off made quantitative: a rewriting policy saves tokens but pays cache
    writes; the ratio of read to write price decides whether trimming pays.
    """
    ratios = ratios or [(0.1, 1.25), (0.1, 2.0), (0.25, 1.0), (0.5, 1.0), (1.0, 1.0)]
    m = with_baseline(df)
    rows = []
    if m.empty:
        return pd.DataFrame(rows, columns=["run_id", "label", "policy", "ttl", "read_ratio", "write_ratio", "hit_rate",
                                           "saved_pct"])
    base = df[df["policy"] == "noop"].drop_duplicates(["dataset", "cache_config", "prices"], keep="last")
    for r_ratio, w_ratio in ratios:
        c = reprice(m, r_ratio, w_ratio)
        b = reprice(base, r_ratio, w_ratio)
        bmap = dict(zip(zip(base["dataset"], base["cache_config"], base["prices"]), b))
        for i, r in m.iterrows():
            if r["policy"] == "noop":
                continue
            bc = bmap.get((r["dataset"], r["cache_config"], r["prices"]))
            if bc is None:
                continue
            rows.append({"run_id": r["run_id"], "label": r["label"], "policy": r["policy"],
                         "ttl": r["cache_dict"].get("ttl"), "read_ratio": r_ratio, "write_ratio": w_ratio,
                         "hit_rate": r["hit_rate"], "saved_pct": (bc - c[i]) / bc if bc else np.nan})
    # the columns even without a row, so a notebook's pivot of a database without policy runs is empty, not an error
    return pd.DataFrame(rows, columns=["run_id", "label", "policy", "ttl", "read_ratio", "write_ratio", "hit_rate",
                                       "saved_pct"])


def tool_breakdown(con, dataset: str) -> pd.DataFrame:
    """Tool results per tool: count, tokens, and tokens in byte-identical repeats (what dedup can target)."""
    return con.execute(
        """WITH r AS (
             SELECT b.tool_name, b.tool_kind, b.tokens, b.bytes,
                    row_number() OVER (PARTITION BY b.session_key, b.stream_id, b.partition, b.content_hash
                                       ORDER BY b.pos) AS nth
             FROM blocks b JOIN sessions s USING (session_key)
             WHERE s.dataset = ? AND b.kind = 'tool_result')
           SELECT coalesce(tool_name, '?') AS tool, coalesce(tool_kind, '?') AS kind, count(*) AS results,
                  sum(tokens) AS tokens, sum(CASE WHEN nth > 1 THEN tokens ELSE 0 END) AS repeat_tokens,
                  sum(CASE WHEN nth > 1 THEN 1 ELSE 0 END) AS repeats
           FROM r GROUP BY ALL ORDER BY tokens DESC""", [dataset]).df()


def kind_breakdown(con, dataset: str) -> pd.DataFrame:
    return con.execute(
        """SELECT kind, count(*) AS blocks, sum(tokens) AS tokens, sum(bytes) AS bytes
           FROM blocks JOIN sessions USING (session_key) WHERE dataset = ? GROUP BY 1 ORDER BY tokens DESC""",
        [dataset]).df()


COMPACT = ("objective", "figure", "verdict", "headline", "max_risk", "risk_rule", "min_saving_per_session",
           "variant", "candidates", "best", "closest", "runner_up", "runner_up_differs", "margin_over_runner_up",
           "best_source_default", "margin_over_source_default", "dropped", "without_baseline")


def compact(ans: dict[str, Any]) -> dict[str, Any]:
    """The recommendation part of ``analysis.answer.answer`` (no ranked table, no bounds)."""
    return {k: ans[k] for k in COMPACT if k in ans}


def recommend(con, df: pd.DataFrame | None = None, objective: str = "cost", max_risk: dict[str, float] | None = None,
              *, dataset: str | None = None, slice: Any = "auto",
              min_per_session: float | None = None) -> dict[str, Any]:
    """The recommendation among the runs of ``df`` (default: every run of the dataset), made
    exactly as the report makes it (``analysis.answer``): each run against the baseline
    ``analysis.compare`` pairs it with (same dataset, slice, cache and price settings), the
    risk filter and the too-small-to-act rule of ``analysis.rules``, margins as differences of
    savings. Only runs of one session set are compared: ``slice`` (None = the whole dataset)
    selects it, and ``other_slices`` counts the runs of ``df`` left out for being of another;
    ``"auto"``: the slice of ``df``'s policy runs when they share one, else the whole dataset."""
    from .answer import BOUNDS, answer
    from .compare import compare

    if dataset is None:
        names = sorted(set(df["dataset"])) if df is not None and not df.empty else [
            n for (n,) in con.execute("SELECT DISTINCT dataset FROM runs WHERE status = 'finished'").fetchall()]
        if len(names) > 1:
            raise ValueError(f"runs of several datasets ({', '.join(names)}): name one (dataset=...)")
        dataset = names[0] if names else None
    rows = compare(con, dataset) if dataset is not None else []
    ids = None if df is None else set(df["run_id"])
    chosen = [r for r in rows if ids is None or r["run_id"] in ids or r["policy"] == "noop" or r["policy"] in BOUNDS]
    if isinstance(slice, str) and slice == "auto":
        found = {json.dumps(r["cache_config"].get("slice"), sort_keys=True) for r in chosen
                 if r["policy"] != "noop" and r["policy"] not in BOUNDS}
        slice = json.loads(found.pop()) if len(found) == 1 else None
    same = [r for r in chosen if r["cache_config"].get("slice") == slice]
    out = compact(answer(con, same, objective, max_risk, min_per_session=min_per_session))
    out["dataset"], out["slice"] = dataset, slice
    out["other_slices"] = sum(1 for r in chosen if r["cache_config"].get("slice") != slice
                              and r["policy"] != "noop" and r["policy"] not in BOUNDS)
    return out
