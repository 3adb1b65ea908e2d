"""A run's saving against its matching baseline, for `replay` and `tune` to print.

The matching baseline is the one `compare` uses (`analysis.compare`): the latest finished
no-op run of the same dataset with the same cache and price settings (a run's stored cache
settings include its slice). The interval is the same paired bootstrap over sessions
(`analysis.intervals`), computed for this run alone.
"""

from __future__ import annotations

from typing import Any

from analysis import intervals as iv


def baseline_of(con, run_id: str) -> str | None:
    """The latest finished no-op run with ``run_id``'s dataset, cache and price settings."""
    row = con.execute(
        "SELECT b.run_id FROM runs b JOIN runs r ON b.dataset = r.dataset AND b.cache_config = r.cache_config "
        "AND b.prices = r.prices WHERE r.run_id = ? AND b.policy = 'noop' AND b.status = 'finished' "
        "ORDER BY b.started_at DESC LIMIT 1", [run_id]).fetchone()
    return row[0] if row else None


def run_saving(con, run_id: str, *, interval: bool = True) -> dict[str, Any] | None:
    """{baseline_run, baseline_cost, cost, saved_usd, saved_pct, interval: {low, high} | None}
    (positive = saved; pct as a ratio); None without a baseline. ``interval`` False skips the
    bootstrap."""
    base = baseline_of(con, run_id)
    if base is None:
        return None
    costs = dict(con.execute("SELECT run_id, sum(cost) FROM run_sessions WHERE run_id IN (?, ?) GROUP BY run_id",
                             [run_id, base]).fetchall())
    b, c = float(costs.get(base) or 0.0), float(costs.get(run_id) or 0.0)
    ci = None
    if interval and base != run_id:
        ci = iv.saving_intervals(con, {run_id: base}).get(run_id, {}).get("cost")  # all figures: compare's draw
    return {"baseline_run": base, "baseline_cost": b, "cost": c, "saved_usd": b - c,
            "saved_pct": iv.share(b - c, b), "interval": ci}
