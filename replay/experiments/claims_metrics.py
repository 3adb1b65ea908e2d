"""The claims register's metrics: each published claim's own metric measured on these logs.

Two families, both returning a point figure and a 95% paired bootstrap interval over sessions
(`analysis.intervals`' method, seed and resample count):

* run metrics compare two stored runs session by session (a policy against the no-op, or one
  setting against another): ``paired`` gives ``sum(base - run) / sum(base)`` of any sum of
  ``run_sessions`` columns. Sessions are put in the order `analysis.intervals.saving_intervals`
  uses (baseline cost, context tokens, tokens delivered, key), so for a run against its no-op
  baseline the cost and context-token intervals are exactly those of ``ctxreplay compare``.
* trace metrics (devboy's own accounting, tokens per line of a file read) are ratios of
  per-session sums read from the trace arrays; ``ratio`` bootstraps them the same way.

``replay`` cannot import ``analysis`` (layering): the resampling helpers are passed in as
``iv`` (the module `analysis.intervals`) by the caller.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from replay.experiments.claims_own import devboy_own_metric
from replay.model.arrays import K_TOOL_RESULT, TOOL_KIND_CODE, Dataset

ORDER = ("cost", "context_tokens", "tokens_delivered")
CACHE_WRITES = ("cache_write_5m", "cache_write_1h")


def pct_interval(ivl: dict | None) -> dict | None:
    return None if not ivl else {"low": 100 * ivl["low"], "high": 100 * ivl["high"]}


def paired(con, iv, base_run: str, run: str, columns: tuple[str, ...]) -> dict[str, Any]:
    """Saving of ``run`` against ``base_run`` in the sum of ``columns``: percent of the
    baseline (positive = less than the baseline), its 95% interval, and both totals."""
    b_expr = " + ".join(f"b.{c}" for c in columns)
    r_expr = " + ".join(f"r.{c}" for c in columns)
    rows = con.execute(
        f"SELECT b.cost, b.context_tokens, b.tokens_delivered, b.session_key, {b_expr}, {r_expr} "
        "FROM run_sessions b JOIN run_sessions r USING (session_key) WHERE b.run_id = ? AND r.run_id = ?",
        [base_run, run]).fetchall()
    rows.sort(key=lambda x: x[:4])
    base = np.array([x[4] for x in rows], dtype=np.float64)
    other = np.array([x[5] for x in rows], dtype=np.float64)
    out = {"baseline_total": float(base.sum()), "run_total": float(other.sum()), "sessions": len(rows)}
    if not rows or not base.sum():
        return {**out, "saved_pct": None, "interval_pct": None}
    point = (base.sum() - other.sum()) / base.sum()
    counts = iv.resample_counts(len(rows))
    ivl = iv.ratio_intervals(base, other[None, :], counts, np.array([point]))[0]
    return {**out, "saved_pct": 100 * float(point), "interval_pct": pct_interval(ivl)}


def ratio(iv, num: list[float], den: list[float], scale: float = 100.0) -> dict[str, Any]:
    """``scale * sum(num) / sum(den)`` over sessions, with its 95% paired bootstrap interval
    (sessions in the order of (den, num): the draw does not depend on pseudonymous keys)."""
    pairs = sorted(zip(den, num))
    d = np.array([p[0] for p in pairs], dtype=np.float64)
    n = np.array([p[1] for p in pairs], dtype=np.float64)
    if not pairs or not d.sum():
        return {"value": None, "interval": None, "sessions": len(pairs)}
    point = n.sum() / d.sum()
    counts = iv.resample_counts(len(pairs))
    with np.errstate(divide="ignore", invalid="ignore"):
        samples = (counts @ n) / (counts @ d)
    ivl = iv.percentile_interval(samples, float(point))
    return {"value": scale * float(point), "interval": {"low": scale * ivl["low"], "high": scale * ivl["high"]},
            "sessions": len(pairs)}


def per_session(ds: Dataset) -> list[Dataset]:
    return [Dataset(ds.name, [s], ds.vocab) for s in ds.sessions]


def devboy_l0(iv, ds: Dataset) -> dict[str, Any]:
    """devboy's L0 accounting (`claims_own.devboy_own_metric`): tokens saved, percent of the
    tool-result tokens it counts."""
    ms = [devboy_own_metric(d) for d in per_session(ds)]
    return {**ratio(iv, [m["saved_tokens"] for m in ms], [m["base_tokens"] for m in ms]),
            "unit": "% of tool-result tokens (chars/4), devboy's L0 accounting"}


def devboy_recent(iv, ds: Dataset, capacity: int = 3) -> dict[str, Any]:
    """The share of the saving an unbounded cache finds that a cache of the last ``capacity``
    results already finds (devboy's accounting: FIFO per session log)."""
    ms = [devboy_own_metric(d, capacity=capacity) for d in per_session(ds)]
    return {**ratio(iv, [m["saved_tokens"] for m in ms], [m["ceiling_saved_tokens"] for m in ms]),
            "unit": f"% of the unbounded cache's saving found by the last {capacity} results"}


def median(iv, groups: list[list[float]], scale: float = 1.0) -> dict[str, Any]:
    """``scale`` x the median of the values pooled over sessions (``groups``: one list per
    session), with a 95% bootstrap interval: each resample weights a value by how often its
    session is drawn and takes the weighted (lower) median."""
    import statistics

    groups = sorted((sorted(g) for g in groups), key=lambda g: (len(g), sum(g), g))
    vals = np.array([v for g in groups for v in g], dtype=np.float64)
    if not vals.size:
        return {"value": None, "interval": None, "sessions": len(groups)}
    owner = np.repeat(np.arange(len(groups)), [len(g) for g in groups])
    order = np.argsort(vals, kind="stable")
    w = iv.resample_counts(len(groups))[:, owner[order]]
    cw = np.cumsum(w, axis=1)
    pick = np.argmax(cw >= cw[:, -1:] / 2, axis=1)
    samples = np.where(cw[:, -1] > 0, vals[order][pick], np.nan)
    point = statistics.median(vals.tolist())
    ivl = iv.percentile_interval(samples, point)
    return {"value": scale * point, "interval": {"low": scale * ivl["low"], "high": scale * ivl["high"]},
            "sessions": len(groups)}


def tokens_per_lines(iv, ds: Dataset, lines: int = 500) -> dict[str, Any]:
    """o200k tokens of ``lines`` lines of a file read: ``lines`` x the median tokens per line of
    the ranged reads (``line_start``/``line_end`` known, not errors; `claims_own.jp_redundant_reads`)."""
    read = TOOL_KIND_CODE["read"]
    groups = []
    for s in ds.sessions:
        g = []
        for st in s.streams:
            for i in range(st.n_blocks):
                if (st.bkind[i] == K_TOOL_RESULT and st.tool_kind[i] == read and not st.is_error[i]
                        and st.line_start[i] >= 0 <= st.line_end[i] and st.line_end[i] >= st.line_start[i]):
                    g.append(float(st.bpe[i]) / float(st.line_end[i] - st.line_start[i] + 1))
        groups.append(g)
    return {**median(iv, groups, scale=float(lines)), "unit": f"o200k tokens per {lines} lines read (median)"}


TRACE_METRICS = {"devboy_l0": devboy_l0, "devboy_recent": devboy_recent, "tokens_per_500_lines": tokens_per_lines}

# run metrics: (columns summed, sign, unit). sign -1 turns "saved" into "added" (cache writes a
# policy causes); the value is then the increase, percent of the baseline's.
RUN_METRICS = {
    "context_tokens_saved": (("context_tokens",), 1, "% of context tokens (input tokens sent, no cache) saved"),
    "cost_saved": (("cost",), 1, "% of billed cost saved (prompt caching priced)"),
    "cache_writes_added": (CACHE_WRITES, -1, "% more tokens written to the prompt cache"),
    "cache_writes_saved": (CACHE_WRITES, 1, "% fewer tokens written to the prompt cache"),
}


def run_metric(con, iv, name: str, base_run: str, run: str) -> dict[str, Any]:
    cols, sign, unit = RUN_METRICS[name]
    p = paired(con, iv, base_run, run, cols)
    ivl = p["interval_pct"]
    if sign < 0 and p["saved_pct"] is not None:
        value = -p["saved_pct"]
        ivl = {"low": -ivl["high"], "high": -ivl["low"]} if ivl else None
    else:
        value = p["saved_pct"]
    detail = {"baseline_total": p["baseline_total"], "run_total": p["run_total"], "columns": list(cols)}
    if name.startswith("cache_writes"):
        reads = paired(con, iv, base_run, run, ("cache_read",))
        detail["cache_reads_lost_pct"] = reads["saved_pct"]
        detail["cache_reads_lost_interval_pct"] = reads["interval_pct"]
        busts, tokens = con.execute("SELECT sum(busts), sum(bust_tokens) FROM run_sessions WHERE run_id = ?",
                                    [run]).fetchone()
        detail["busts"], detail["bust_tokens"] = float(busts or 0), float(tokens or 0)
    return {"value": value, "interval": ivl, "unit": unit, "sessions": p["sessions"], "detail": detail}
