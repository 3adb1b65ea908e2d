"""What the notebooks share with the report and `ctxreplay demo`, so that all three give one answer.

``report_answer`` is the recommendation exactly as ``analysis.report.build`` makes it: the
compare rows of the report's slice, ``analysis.answer.answer(..., split="time")`` (chosen on
the earlier sessions, led by the saving on the later ones). The notebooks call it instead of
``tables.recommend`` (``split="none"``), which ranked on every session and could name another
policy than the report on the same database.

``find_sweep`` finds the runs of an example sweep spec by what every sweep run stores: its
policy and the spec file it came from (``cache_config["sweep_spec"]``), not by an id recomputed
from the spec's points. `ctxreplay demo` runs `examples/devboy_capacity.toml` without its TTL
axis (and under both cache-model variants), so its sweep id is not the file's; it is still
that spec's sweep.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd


def report_answer(con, dataset: str, objective: str = "cost", max_risk: dict[str, float] | None = None, *,
                  slice: dict | None = None, min_per_session: float | None = None,
                  run_ids: set[str] | None = None) -> dict[str, Any]:
    """The report's recommendation (``analysis.report.build``: the same rows, ``split="time"``)
    in the compact form of ``tables.recommend`` (``tables.compact`` plus ``held_out``,
    ``dataset`` and ``slice``). ``run_ids``: rank only these policy runs (e.g. one sweep's); the
    no-op baselines and the offline bounds stay, as compare pairs every run with its own."""
    from .answer import BOUNDS, answer
    from .compare import compare
    from .tables import compact

    rows = [r for r in compare(con, dataset) if r["cache_config"].get("slice") == slice]
    if run_ids is not None:
        rows = [r for r in rows if r["run_id"] in run_ids or r["policy"] == "noop" or r["policy"] in BOUNDS]
    ans = answer(con, rows, objective, max_risk, min_per_session=min_per_session, split="time")
    out = compact(ans)
    if "held_out" in ans:
        out["held_out"] = ans["held_out"]
    out["dataset"], out["slice"] = dataset, slice
    return out


def _spec_file(cache: Any) -> str | None:
    s = cache.get("sweep_spec") if isinstance(cache, dict) else None
    return Path(s).name if s else None


def find_sweep(m: pd.DataFrame, spec_path: str | Path, dataset: str) -> str:
    """The id of the stored sweep of the spec ``spec_path`` on ``dataset``: among the runs of
    ``m`` (``tables.runs`` or ``with_baseline``) of the spec's policy whose stored spec file has
    the same name, the sweep with the most runs (the latest on a tie); when none is stored, the
    id ``ctxreplay sweep`` gives the spec as written (a sweep not run yet, or stored before runs
    kept their spec file)."""
    from replay.experiments.sweep import load_spec, sweep_id

    spec = load_spec(Path(spec_path))
    if not m.empty and "sweep_id" in m.columns:
        name = Path(spec_path).name
        own = m[m["sweep_id"].notna() & (m["policy"] == spec.policy) & (m["dataset"] == dataset)]
        own = own[own["cache_dict"].map(_spec_file) == name]
        if not own.empty:
            order = {sid: i for i, sid in enumerate(own["sweep_id"])}  # start order: the last is the latest
            counts = own.groupby("sweep_id").size()
            return max(counts.index, key=lambda sid: (counts[sid], order[sid]))
    return sweep_id(spec, dataset)


def second_axis(t: pd.DataFrame, x: str, prefer: str = "cache.ttl") -> str | None:
    """The column a sweep's heatmap sets against ``x``: ``prefer`` when it varies, else the first
    other column that varies (the demo's devboy sweep varies the cache-model variant,
    ``cache.observed_evictions``, not the TTL), else None (one axis: draw a line)."""
    from .tables import varying_columns

    var = [c for c in varying_columns(t) if c != x] if not t.empty else []
    return prefer if prefer in var else (var[0] if var else None)


def sweep_chart(t: pd.DataFrame, x: str, title: str, prefer: str = "cache.ttl"):
    """A sweep's chart: a heatmap of ``x`` by its second axis (``second_axis``), or a line when
    only ``x`` varies; None without runs."""
    from . import plots

    y = second_axis(t, x, prefer)
    if y is None:
        return plots.sweep_line(t, x, title=title)
    return plots.sweep_heatmap(t, x, y, title=f"{title} by {x.split('.', 1)[-1]} and {y.split('.', 1)[-1]}")
