"""A run's saving against its matching baseline, for `replay` and `tune` to print.

The matching baseline is the one `compare` uses (`analysis.compare`): the latest finished
no-op run of the same dataset with the same cache and price settings (a run's stored cache
settings include its slice). The interval is the same paired bootstrap over sessions
(`analysis.intervals`), computed for this run alone.

A saving is measured on the sessions both runs replayed alike (`comparable`): a baseline stored
before an ingest lacks the sessions added since, and replayed the older version of a session
whose file was read again since. The point and the interval are computed on the same sessions,
and the result says how many were left out and why.
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


def comparable(con, pairs: dict[str, str]) -> dict[str, dict[str, Any]]:
    """run_id -> {keys: the session keys both it and its baseline (``pairs``: run -> baseline)
    replayed alike, sessions: their count, run_sessions, baseline_sessions, left_out: {run_only,
    baseline_only, changed} or None when none is}. A session is *changed* when a version of its
    file was stored between the two runs' starts (each replayed another version of it)."""
    ids = sorted({*pairs, *pairs.values()})
    keys: dict[str, set] = {}
    for rid, k in con.execute("SELECT run_id, session_key FROM run_sessions WHERE run_id IN (SELECT unnest(?))",
                              [ids]).fetchall():
        keys.setdefault(rid, set()).add(k)
    started = dict(con.execute("SELECT run_id, started_at FROM runs WHERE run_id IN (SELECT unnest(?))",
                               [ids]).fetchall())
    stored: dict[str, list] | None = None  # session key -> when versions of its file were stored
    out = {}
    for rid, base in pairs.items():
        r, b = keys.get(rid, set()), keys.get(base, set())
        shared, changed = r & b, set()
        lo, hi = sorted((started[rid], started[base])) if rid in started and base in started else (None, None)
        if lo is not None and lo != hi and shared:
            if stored is None:
                stored = {}
                for k, at in con.execute(
                        "SELECT s.session_key, f.ingested_at FROM sessions s JOIN source_files f ON f.dataset = "
                        "s.dataset AND f.file_key = s.file_key WHERE f.status = 'ok' AND f.ingested_at > ?",
                        [min(started.values())]).fetchall():
                    stored.setdefault(k, []).append(at)
            changed = {k for k in shared if any(lo < at <= hi for at in stored.get(k, ()))}
            shared -= changed
        left = {"run_only": len(r - b), "baseline_only": len(b - r), "changed": len(changed)}
        out[rid] = {"keys": shared, "sessions": len(shared), "run_sessions": len(r), "baseline_sessions": len(b),
                    "left_out": left if any(left.values()) else None}
    return out


def left_out_text(c: dict[str, Any]) -> str:
    """`on the 143 sessions both runs replayed alike (27 the baseline lacks, 2 read again since it)`."""
    left = c.get("left_out")
    if not left:
        return f"on all {c['sessions']:,} sessions"
    why = [f"{left['run_only']:,} the baseline lacks" if left["run_only"] else "",
           f"{left['baseline_only']:,} only the baseline has" if left["baseline_only"] else "",
           f"{left['changed']:,} ingested again between the two runs" if left["changed"] else ""]
    return (f"on the {c['sessions']:,} sessions both runs replayed alike, of {c['run_sessions']:,} "
            f"({', '.join(w for w in why if w)} left out)")


def run_saving(con, run_id: str, *, interval: bool = True) -> dict[str, Any] | None:
    """{baseline_run, baseline_cost, cost, saved_usd, saved_pct, interval: {low, high} | None,
    sessions, run_sessions, baseline_sessions, left_out} (positive = saved; pct as a ratio), all
    on the sessions both runs replayed alike (`comparable`); None without a baseline.
    ``interval`` False skips the bootstrap."""
    base = baseline_of(con, run_id)
    if base is None:
        return None
    c = comparable(con, {run_id: base})[run_id]
    keys = sorted(c.pop("keys"))
    costs = dict(con.execute("SELECT run_id, sum(cost) FROM run_sessions WHERE run_id IN (?, ?) "
                             "AND session_key IN (SELECT unnest(?)) GROUP BY run_id", [run_id, base, keys]).fetchall())
    b, cost = float(costs.get(base) or 0.0), float(costs.get(run_id) or 0.0)
    ci = None
    if interval and base != run_id:  # all figures: compare's draw
        ci = iv.saving_intervals(con, {run_id: base}, sessions={run_id: set(keys)}).get(run_id, {}).get("cost")
    return {"baseline_run": base, "baseline_cost": b, "cost": cost, "saved_usd": b - cost,
            "saved_pct": iv.share(b - cost, b), "interval": ci, **c}
