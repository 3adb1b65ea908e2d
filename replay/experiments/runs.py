"""Runs: one policy configuration replayed over a dataset, stored with its full config.

A run row is written (status ``running``) before any work, and results plus the status
``finished`` are written in one transaction at the end. A run killed midway therefore
never looks finished: it stays ``running`` and listings show it as interrupted once its
process is gone.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import uuid
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pyarrow as pa

from replay import __version__
from replay import store
from replay.model.arrays import Dataset
from replay.engine import REQUEST_FIGURES, SESSION_FIGURES, ReplayOptions, SessionResult, replay_session
from replay.policies import Policy
# what a run runs on lives in `slices`; these names stay importable from here
from replay.experiments.slices import (  # noqa: F401
    SLICE_KEYS, coverage, coverage_text, load, slice_session_keys
)

REPO_ROOT = Path(__file__).resolve().parents[2]


@functools.lru_cache(maxsize=1)
def git_sha() -> str:
    """The checkout's commit (``-dirty`` with uncommitted changes), read once per process: the
    code a process runs is the code it imported (a sweep asked for it once per configuration,
    two `git` processes each, about 1 s of the bench sweep)."""
    try:
        sha = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5).stdout.strip()
        if not sha:
            return "unknown"
        dirty = subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def start_run(con, policy: Policy, opts: ReplayOptions, dataset: str, sweep_id: str | None = None, *,
              run_id: str | None = None, cache_extra: dict[str, Any] | None = None,
              slice: dict[str, Any] | None = None) -> str:
    """Write the run row (status ``running``) with its full configuration; returns the run id
    (``run_id``, or a new one). ``cache_extra`` is stored with the cache configuration, and so is
    ``slice`` (as ``"slice"``) when the run covers a dataset slice: a run is compared only with a
    baseline of the same cache configuration, so only with a baseline of the same slice."""
    run_id = run_id or uuid.uuid4().hex[:12]
    if slice:
        cache_extra = {**(cache_extra or {}), "slice": slice}
    con.execute(
        "INSERT INTO runs (run_id, sweep_id, policy, params, cache_config, prices, dataset, git_sha, ctxreplay_version, "
        "started_at, status, pid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?)",
        [run_id, sweep_id, policy.name, json.dumps(asdict(policy.params), default=list),
         json.dumps({**opts.cache.as_dict(), **(cache_extra or {})}), json.dumps(opts.prices.describe()), dataset,
         git_sha(), __version__, store.now(), os.getpid()],
    )
    return run_id


def insert_columns(con, table: str, cols: dict[str, Any]) -> None:
    """Insert columns (lists or arrays of equal length, named like the table's) into a table."""
    con.register("_insert_tmp", pa.table(cols))
    try:
        names = ", ".join(cols)
        con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM _insert_tmp")
    finally:
        con.unregister("_insert_tmp")


def finish_run(con, run_id: str, results: list[SessionResult]) -> None:
    sess = {"run_id": [run_id] * len(results), "session_key": [r.session_key for r in results]}
    for f in SESSION_FIGURES:
        sess[f] = [float(r.figures[f]) for r in results]
    # figures beyond the fixed columns (pipeline steps, compaction reports) go to a JSON column
    sess["extra"] = [json.dumps({k: v for k, v in r.figures.items() if k not in SESSION_FIGURES}) or "{}"
                     for r in results]
    detail: dict[str, list] = {c: [] for c in ("run_id", "session_key", "stream_id", "req_idx", *REQUEST_FIGURES)}
    for r in results:
        if r.detail is None:
            continue
        n = len(r.detail["req_idx"])
        detail["run_id"].extend([run_id] * n)
        detail["session_key"].extend([r.session_key] * n)
        for c in ("stream_id", "req_idx", *REQUEST_FIGURES):
            detail[c].extend(r.detail[c])
    with store.transaction(con):
        for table, data in (("run_sessions", sess), ("run_requests", detail)):
            if data["run_id"]:
                insert_columns(con, table, data)
        con.execute("UPDATE runs SET status = 'finished', finished_at = ?, n_sessions = ? WHERE run_id = ?",
                    [store.now(), len(results), run_id])


def fail_run(con, run_id: str, error: str, status: str = "failed") -> None:
    con.execute("UPDATE runs SET status = ?, finished_at = ?, error = ? WHERE run_id = ?",
                [status, store.now(), error[:2000], run_id])


def stop_reason(e: BaseException) -> tuple[str, str]:
    """(status, error) of a run ended by ``e``: Ctrl-C or a stop signal (`replay.cli.common.Terminated`,
    a KeyboardInterrupt) is ``interrupted``, as a killed run is listed, not ``failed``."""
    if isinstance(e, KeyboardInterrupt) or store.stopped_in_duckdb(e):
        signum = getattr(e, "signum", None)
        return "interrupted", "stopped by a signal" if signum else "interrupted (Ctrl-C)"
    return "failed", f"{type(e).__name__}: {e}"


def run_policy(con, ds: Dataset, policy: Policy, opts: ReplayOptions, *, sweep_id: str | None = None,
               on_session: Callable[[Any], None] | None = None,
               slice: dict[str, Any] | None = None) -> tuple[str, list[SessionResult]]:
    """Replay ``ds`` under ``policy`` and store the run; returns (run_id, per-session results).
    ``slice``: the slice ``ds`` was loaded with (``load(..., slice=)``), stored in the run's config."""
    run_id = start_run(con, policy, opts, ds.name, sweep_id, slice=slice)
    try:
        results = []
        for s in ds.sessions:
            results.append(replay_session(s, ds.vocab, policy, opts))
            if on_session:
                on_session(s)
        finish_run(con, run_id, results)
    except BaseException as e:
        status, error = stop_reason(e)
        fail_run(con, run_id, error, status)
        raise
    return run_id, results


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def list_runs(con, dataset: str | None = None) -> list[dict[str, Any]]:
    sql = ("SELECT run_id, sweep_id, policy, params, dataset, status, started_at, finished_at, n_sessions, pid, "
           "git_sha, error FROM runs")
    params: list[Any] = []
    if dataset:
        sql += " WHERE dataset = ?"
        params.append(dataset)
    sql += " ORDER BY started_at"
    cols = ["run_id", "sweep_id", "policy", "params", "dataset", "status", "started_at", "finished_at",
            "n_sessions", "pid", "git_sha", "error"]
    out = []
    for row in con.execute(sql, params).fetchall():
        d = dict(zip(cols, row))
        if d["status"] == "running" and not _alive(d["pid"]):
            d["status"] = "interrupted"
        d["params"] = json.loads(d["params"])
        out.append(d)
    return out
