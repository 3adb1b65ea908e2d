"""Axis helpers for ``analysis.plots``: which series would flatten the others (drawn clipped at the
axis edge with their values written), and categorical parameter axes with "unbounded" last.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

UNBOUNDED = "unbounded"
# (policy, parameter) whose value 0 (or None) means "no limit": drawn as the category "unbounded",
# after every bounded value, never joined to them (0 is not a small capacity)
ZERO_IS_UNBOUNDED = {("devboy_lru", "capacity")}
OFF_SCALE_FACTOR = 5.0  # a series this many times wider than the typical one is drawn off scale


def off_scale(series: dict[str, np.ndarray]) -> set[str]:
    """The series whose largest |value| exceeds OFF_SCALE_FACTOR times the typical series' (the
    median over all but the widest): on a shared axis they would squeeze the others into flat
    lines. Two policies at -100% and -250% beside five within +-35% are both off scale; the
    narrowest series always stays on."""
    spans = {k: float(np.nanmax(np.abs(v))) if np.isfinite(v).any() else 0.0 for k, v in series.items()}
    if len(spans) < 2:
        return set()
    ref = float(np.median(sorted(spans.values(), reverse=True)[1:]))
    return {k for k, v in spans.items() if v > OFF_SCALE_FACTOR * max(ref, 0.5)}  # under half a point: nothing flat


def limits(values: list[np.ndarray], pad: float = 0.12, min_span: float = 0.5) -> tuple[float, float]:
    """Axis limits that hold ``values`` and 0, padded."""
    finite = [float(x) for v in values for x in np.asarray(v, dtype=float).ravel() if math.isfinite(x)]
    lo, hi = min(finite + [0.0]), max(finite + [0.0])
    p = pad * max(hi - lo, min_span)
    return lo - p, hi + p


def zero_is_unbounded(policy: str | None, column: str) -> bool:
    return (policy, column.removeprefix("param.")) in ZERO_IS_UNBOUNDED


def _is_unbounded(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, (int, float)) and v == 0)


def _label(v) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def categories(s: pd.Series, unbounded: bool) -> tuple[pd.Series, list[str]]:
    """A parameter column as category labels and their order: numbers ascending, then other
    values in the order they first appear, then "unbounded" (when 0/None means no limit)."""
    labels = s.map(lambda v: UNBOUNDED if unbounded and _is_unbounded(v) else _label(v))
    nums, others = {}, []
    for v, lab in zip(s, labels):
        if lab == UNBOUNDED or lab in nums or lab in others:
            continue
        x = pd.to_numeric(pd.Series([v]), errors="coerce").iloc[0]
        if pd.notna(x) and not isinstance(v, bool):
            nums[lab] = float(x)
        else:
            others.append(lab)
    order = sorted(nums, key=nums.get) + others + ([UNBOUNDED] if (labels == UNBOUNDED).any() else [])
    return labels, order
