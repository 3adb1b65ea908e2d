"""Paired bootstrap intervals for savings against a baseline, resampling sessions.

Method (what ``ctxreplay compare`` and the report show as "95% interval"):

* The unit of resampling is the **session**: sessions are independent conversations, the
  requests inside one are not. A run and its no-op baseline replay the same sessions, so
  the two are **paired** by session: every resample draws ``n`` sessions with replacement
  (``n`` = the sessions both runs hold) and applies the same draw to the baseline and to
  the policy run.
* On each resample the saving ratio is recomputed exactly like the point figure:
  ``sum(baseline - policy) / sum(baseline)`` over the drawn sessions (cost in $, context
  tokens, tokens delivered; positive = saved).
* The interval is the **percentile interval**: the 2.5th and 97.5th percentiles of the
  ``N_RESAMPLES`` (2,000) resampled ratios, i.e. a 95% interval. Percentiles use numpy's
  default (linear) interpolation. In the rare case of strongly skewed per-session savings
  where the percentile interval misses the point estimate, it is widened to include it, so
  ``low <= point <= high`` always holds.
* Sessions are put in the order of their baseline figures (cost, context tokens, tokens
  delivered; session key last), not of their pseudonymous keys, and the draw is seeded
  (``SEED``): the same logs give the same intervals whatever the hashing key. One draw is
  made per set of sessions and shared by every run on that set (common random numbers), and
  all runs are resampled at once: a resample is a row of a (resamples x sessions) count
  matrix ``W`` and the resampled sums are one matrix product ``W @ X``.
* A per-session difference smaller than 1e-12 of the session's baseline value (floating-point
  summation noise) counts as 0.

A policy that changes nothing has a zero difference in every session, so its interval is
exactly [0, 0]; a policy that saves the same fraction in every session has an interval of
zero width around that fraction.

"Not distinguishable" (``distinguishable`` false): the interval contains 0, or the saving
is smaller in size than the baseline's own fidelity error (for cost: |simulated - recorded|
/ recorded cost of the baseline; for token figures: the same for the input total). A saving
inside the replay's own error against the recorded bill is not evidence of a saving. For a
baseline replayed under a setting the log did not use (a forced TTL), that difference also
holds the setting's own effect, so the test is stricter there.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

N_RESAMPLES = 2000
SEED = 20_240_613
LEVEL = 0.95
NOISE = 1e-12  # per-session |difference| below this share of the baseline is floating-point noise
FIGURES = ("cost", "context_tokens", "tokens_delivered")


def share(part: float, whole: float) -> float | None:
    """``part / whole`` (None when ``whole`` is 0), and 0 when ``part`` is below the noise floor:
    two runs that price every session alike can differ by 1e-16 when summed in another order, and
    a saving must never fall outside its own [0, 0] interval."""
    if not whole:
        return None
    return 0.0 if abs(part) <= NOISE * abs(whole) else float(part / whole)


def resample_counts(n: int, n_resamples: int = N_RESAMPLES, seed: int = SEED) -> np.ndarray:
    """(n_resamples, n) matrix: how often each of ``n`` sessions is drawn in each resample
    (``n`` draws with replacement per row)."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_resamples, n))
    flat = (idx + (np.arange(n_resamples) * n)[:, None]).ravel()
    return np.bincount(flat, minlength=n_resamples * n).reshape(n_resamples, n).astype(np.float64)


def percentile_interval(samples: np.ndarray, point: float | None, level: float = LEVEL) -> dict | None:
    """Percentile interval of the resampled statistics (axis 0), widened to hold ``point``."""
    s = samples[np.isfinite(samples)]
    if s.size == 0 or point is None:
        return None
    a = (1 - level) / 2
    low, high = np.percentile(s, [100 * a, 100 * (1 - a)])
    return {"low": float(min(low, point)), "high": float(max(high, point))}


def ratio_intervals(base: np.ndarray, runs: np.ndarray, counts: np.ndarray, points: np.ndarray,
                    level: float = LEVEL) -> list[dict | None]:
    """Intervals of ``sum(base - run) / sum(base)`` for many runs at once.

    base: (n,) per-session baseline values; runs: (r, n) per-session values of r runs on the
    same sessions; counts: (B, n) from ``resample_counts``; points: (r,) point estimates.
    """
    sb = counts @ base                       # (B,)
    diff = base[None, :] - runs
    diff[np.abs(diff) <= NOISE * np.abs(base)[None, :]] = 0.0  # summation-order noise is no saving
    saved = counts @ diff.T                  # (B, r); exactly 0 where no session differs
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = saved / sb[:, None]
    return [percentile_interval(ratios[:, j], None if not np.isfinite(points[j]) else float(points[j]), level)
            for j in range(runs.shape[0])]


def difference_interval(a: np.ndarray, b: np.ndarray, den: np.ndarray, counts: np.ndarray,
                        level: float = LEVEL) -> dict | None:
    """Interval of ``sum(a - b) / sum(den)`` (e.g. the margin of one policy over another as a
    share of the baseline's cost), all three paired by session."""
    sd = counts @ den
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = (counts @ (a - b)) / sd
        point = float((a.sum() - b.sum()) / den.sum()) if den.sum() else None
    return percentile_interval(ratios, point, level)


def session_matrix(con, run_ids: Iterable[str], figures: Sequence[str] = FIGURES) -> dict[str, dict[str, np.ndarray]]:
    """run_id -> {"session_key": sorted keys, figure: per-session values in that order}."""
    ids = sorted(set(run_ids))
    if not ids:
        return {}
    cols = ", ".join(figures)
    df = con.execute(f"SELECT run_id, session_key, {cols} FROM run_sessions WHERE run_id IN (SELECT unnest(?)) "
                     "ORDER BY run_id, session_key", [ids]).df()
    out = {}
    for run_id, g in df.groupby("run_id", sort=False):
        out[run_id] = {"session_key": g["session_key"].to_numpy(),
                       **{f: g[f].to_numpy(dtype=np.float64) for f in figures}}
    return out


def saving_intervals(con, pairs: dict[str, str], *, figures: Sequence[str] = FIGURES,
                     n_resamples: int = N_RESAMPLES, seed: int = SEED, level: float = LEVEL,
                     sessions: dict[str, set] | None = None) -> dict[str, dict[str, dict | None]]:
    """run_id -> figure -> {"low", "high"} for each (run -> its baseline run) in ``pairs``.

    Runs are grouped by (baseline, shared sessions); each group is resampled with one count
    matrix (the same seed for every group, so a run's interval does not depend on which other
    runs are in the database). ``sessions`` (run_id -> session keys) keeps a run's pair to those
    of its shared sessions (`analysis.saving.comparable`: the ones both runs replayed alike).
    """
    per = session_matrix(con, [*pairs, *pairs.values()], figures)
    groups: dict[tuple, list[tuple[str, np.ndarray, np.ndarray]]] = {}
    for run_id, base_id in pairs.items():
        if run_id not in per or base_id not in per:
            continue
        rpos = {k: i for i, k in enumerate(per[run_id]["session_key"])}
        bpos = {k: i for i, k in enumerate(per[base_id]["session_key"])}
        base = per[base_id]
        shared = rpos.keys() & bpos.keys()
        if sessions is not None and run_id in sessions:
            shared &= sessions[run_id]
        keys = tuple(sorted(shared, key=lambda k: (*(base[f][bpos[k]] for f in figures), k)))
        if not keys:
            continue
        ri = np.fromiter((rpos[k] for k in keys), dtype=np.int64, count=len(keys))
        bi = np.fromiter((bpos[k] for k in keys), dtype=np.int64, count=len(keys))
        groups.setdefault((base_id, keys), []).append((run_id, ri, bi))
    out: dict[str, dict[str, dict | None]] = {}
    cache: dict[int, np.ndarray] = {}
    for (base_id, _), members in groups.items():
        bi = members[0][2]
        n = len(bi)
        counts = cache.get(n)
        if counts is None:
            counts = cache[n] = resample_counts(n, n_resamples, seed)
        for f in figures:
            base = per[base_id][f][bi]
            runs = np.stack([per[rid][f][ri] for rid, ri, _ in members])
            with np.errstate(divide="ignore", invalid="ignore"):
                points = (base.sum() - runs.sum(axis=1)) / base.sum() if base.sum() else np.full(len(members), np.nan)
            for (rid, _, _), iv in zip(members, ratio_intervals(base, runs, counts, points, level)):
                out.setdefault(rid, {})[f] = iv
    return out


def distinguishable(point: float | None, interval: dict | None, threshold: float | None) -> bool:
    """True when the interval excludes 0 and |point| is at least the fidelity threshold."""
    if point is None or interval is None:
        return False
    if interval["low"] <= 0 <= interval["high"]:
        return False
    return abs(point) >= abs(threshold or 0.0)
