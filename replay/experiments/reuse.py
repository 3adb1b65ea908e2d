"""Re-using a stored run instead of storing a duplicate.

A no-op replay is deterministic: the same dataset revision, cache and price settings and
code give the same figures. `replay --policy noop` run twice would otherwise store two
identical baselines, which the report and `compare` then list twice; `identical_run` finds
the one to re-use.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from replay import __version__
from replay.engine import SESSION_FIGURES, ReplayOptions
from replay.policies import Policy


def stored_config(policy: Policy, opts: ReplayOptions, slice: dict[str, Any] | None = None) -> tuple[str, str, str]:
    """(params, cache_config, prices) as `runs.start_run` stores them, so equal settings compare equal as text."""
    cache = {**opts.cache.as_dict(), **({"slice": slice} if slice else {})}
    return (json.dumps(asdict(policy.params), default=list), json.dumps(cache), json.dumps(opts.prices.describe()))


def identical_run(con, policy: Policy, opts: ReplayOptions, dataset: str, git_sha: str,
                  slice: dict[str, Any] | None = None) -> str | None:
    """The latest finished run of ``policy`` with the same parameters, cache and price settings
    (and slice) on ``dataset``, made by the same ctxreplay (version and ``git_sha``) after the
    dataset's latest ingest (the dataset revision it replayed is the current one) and, when
    ``opts.detail`` asks for per-request rows, holding them; None when there is none.
    A sweep's runs are not re-used (their sweep owns them)."""
    if opts.whatif is not None:
        return None
    params, cache, prices = stored_config(policy, opts, slice)
    row = con.execute(
        "SELECT r.run_id FROM runs r WHERE r.dataset = ? AND r.policy = ? AND r.status = 'finished' "
        "AND r.sweep_id IS NULL AND r.params::VARCHAR = ? AND r.cache_config::VARCHAR = ? AND r.prices::VARCHAR = ? "
        "AND r.ctxreplay_version = ? AND r.git_sha = ? "
        "AND r.started_at >= coalesce((SELECT max(ingested_at) FROM source_files WHERE dataset = ?), r.started_at) "
        "AND (NOT ? OR EXISTS (SELECT 1 FROM run_requests q WHERE q.run_id = r.run_id)) "
        "ORDER BY r.started_at DESC LIMIT 1",
        [dataset, policy.name, params, cache, prices, __version__, git_sha, dataset, bool(opts.detail)]).fetchone()
    return row[0] if row else None


def run_totals(con, run_id: str) -> tuple[int, dict[str, float]]:
    """(sessions, figure -> sum over sessions) of a stored run."""
    cols = ", ".join(f"sum({f})" for f in SESSION_FIGURES)
    row = con.execute(f"SELECT count(*), {cols} FROM run_sessions WHERE run_id = ?", [run_id]).fetchone()
    return int(row[0]), {f: float(v or 0.0) for f, v in zip(SESSION_FIGURES, row[1:])}
