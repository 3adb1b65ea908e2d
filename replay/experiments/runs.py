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
from replay.model.arrays import Dataset, load_dataset
from replay.engine import REQUEST_FIGURES, SESSION_FIGURES, ReplayOptions, SessionResult, replay_session
from replay.policies import Policy

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


def fail_run(con, run_id: str, error: str) -> None:
    con.execute("UPDATE runs SET status = 'failed', finished_at = ?, error = ? WHERE run_id = ?",
                [store.now(), error[:2000], run_id])


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
        fail_run(con, run_id, f"{type(e).__name__}: {e}")
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


def load(con, dataset: str, slice: dict[str, Any] | None = None) -> Dataset:
    """The dataset's arrays: all its sessions, or those of ``slice`` (``slice_session_keys``)."""
    if dataset not in store.dataset_names(con):
        known = ", ".join(store.dataset_names(con)) or "none (run `ctxreplay ingest` first)"
        raise store.StoreError(f"no dataset {dataset!r}; known: {known}")
    if not slice:
        return load_dataset(con, dataset)
    return load_dataset(con, dataset, session_keys=slice_session_keys(con, dataset, slice))


SLICE_KEYS = ("since", "until", "timezone", "projects", "models", "agents")


def _zone(name: str):
    import re
    from datetime import timedelta, timezone

    if name.upper() == "UTC":
        return timezone.utc
    m = re.fullmatch(r"([+-])(\d\d):(\d\d)", name)
    if m:
        off = timedelta(hours=int(m[2]), minutes=int(m[3]))
        return timezone(-off if m[1] == "-" else off)
    from zoneinfo import ZoneInfo

    return ZoneInfo(name)


def slice_session_keys(con, dataset: str, slice: dict[str, Any]) -> list[str]:
    """The sessions of a dataset slice, sorted. A session is in the slice when its agent is one
    of ``agents`` (if given), its project is one of ``projects`` or a folder below one (if
    given), and it has at least one recorded request (any row of ``requests``, a resume's
    copies included) that is both of one of ``models`` (if given) and timestamped on a day in
    [``since``, ``until``] (inclusive, days in ``timezone``, UTC by default; with a date bound,
    requests without a timestamp do not count). Every request of a session in the slice is
    replayed, not only the matching ones. Raises ``StoreError`` when no session matches."""
    from datetime import date, datetime, timezone

    unknown = set(slice) - set(SLICE_KEYS)
    if unknown:
        raise store.StoreError(f"unknown slice key(s) {', '.join(sorted(unknown))}")
    since = date.fromisoformat(slice["since"]) if slice.get("since") else None
    until = date.fromisoformat(slice["until"]) if slice.get("until") else None
    tz = _zone(slice.get("timezone") or "UTC")
    models, agents = set(slice.get("models") or ()), set(slice.get("agents") or ())
    projects = tuple(slice.get("projects") or ())
    has_project = store.records_projects(con)
    if projects and not store.records_projects(con, dataset):
        raise store.StoreError("this database records no project for its sessions, so it cannot be sliced by "
                               "project")
    rows = con.execute(
        f"""SELECT s.session_key, s.agent, {'s.project' if has_project else 'NULL'}, r.ts, coalesce(r.model, '')
            FROM sessions s JOIN requests r USING (session_key) WHERE s.dataset = ?""", [dataset]).fetchall()
    keys: set[str] = set()
    for key, agent, project, ts, model in rows:
        if key in keys or (agents and agent not in agents) or (models and model not in models):
            continue
        if projects and not (project and any(project == p or project.startswith(p.rstrip("/") + "/")
                                             for p in projects)):
            continue
        if since or until:
            if ts is None or ts < 0:
                continue
            try:
                utc = datetime.fromtimestamp(ts / 1000, tz=timezone.utc)
            except (OverflowError, ValueError, OSError):
                continue  # no date: outside every date range
            try:
                day = utc.astimezone(tz).date()
            except (OverflowError, ValueError):  # a local date past year 9999: its UTC date
                day = utc.date()
            if (since and day < since) or (until and day > until):
                continue
        keys.add(key)
    if not keys:
        asked = ", ".join(f"{k} {', '.join(v) if isinstance(v, list) else v}" for k, v in sorted(slice.items())
                          if v and k != "timezone")
        raise store.StoreError(f"no session of dataset {dataset!r} matches {asked or 'this slice'}; "
                               + coverage_text(con, dataset))
    return sorted(keys)


def coverage(con, dataset: str) -> tuple[str, str] | None:
    """(first, last) day (UTC) the dataset's sessions cover, or None when it has no dated session."""
    from datetime import datetime, timezone

    lo, hi = con.execute("SELECT min(started_at), max(coalesce(ended_at, started_at)) FROM sessions "
                         "WHERE dataset = ?", [dataset]).fetchone()
    if lo is None or hi is None:
        return None
    day = lambda ms: datetime.fromtimestamp(ms / 1000, tz=timezone.utc).date().isoformat()  # noqa: E731
    return day(lo), day(hi)


def coverage_text(con, dataset: str) -> str:
    """What the logs cover and how to ask for it, for a filter that matched nothing."""
    got = coverage(con, dataset)
    if got is None:
        return "its sessions carry no dates"
    return f"the logs span {got[0]} to {got[1]} (UTC): ask for those days, e.g. --since {got[0]}"
