"""Sweeps: a policy's parameters (and cost-model settings) over a grid and/or random samples.

A sweep spec is TOML:

    name = "devboy capacity study"
    policy = "devboy_lru"
    [params]                      # fixed parameters of every point
    verbosity = "standard"
    [grid]                        # policy parameters: every combination
    capacity = [1, 2, 3, 5, 8, 13, 0]
    [cache]                       # cost-model settings, also combined: ttl, breakpoints,
    ttl = ["log", "1h"]           # observed_evictions, lookback_blocks, min_cacheable, warm_start,
                                  # turn_end_write, thinking_switch, resume, task_turns, skill_turns,
                                  # unknown_times, system_prefix, prefix_versions, clock, price_date
    [random]                      # optional: random samples on top of the grid
    samples = 10
    seed = 0
    [random.params]
    min_body_chars = { low = 0, high = 2000, int = true }

Every point is a run (``runs.sweep_id`` groups them) stored with its full configuration; a
no-op baseline run is added per distinct cache setting, so every point has its baseline.
Run ids are derived from the spec, the dataset and the point, so re-running a sweep resumes
it: finished points are skipped, and within an unfinished point the sessions already stored
are skipped. Results are written in batches, each batch a transaction holding whole
sessions; a point is marked finished only when all its sessions are stored, so an
interrupted sweep never leaves a point that looks finished.
"""

from __future__ import annotations

import gc
import hashlib
import itertools
import json
import os
import pickle
import random
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from replay import store
from replay.experiments.loky_memory import rss, tolerate_in_loky_worker
from replay.model.arrays import Dataset, load_dataset
from replay.model.cache import CacheConfig
from replay.model.whatif import whatif_settings
from replay.model.costs import DEFAULT_PRICE_DATE, PriceTable
from replay.engine import SESSION_FIGURES, ReplayOptions, replay_session
from replay.engine.memo import forget_priced
from replay.policies import ParamError, build, did_you_mean
from replay.experiments.runs import insert_columns, slice_session_keys, start_run
from replay.experiments.spec_shapes import SpecError, check_ranges, check_shapes  # noqa: F401 (SpecError re-exported)

SPEC_KEYS = ("name", "policy", "dataset", "params", "grid", "cache", "random", "prices")
CACHE_KEYS = ("ttl", "breakpoints", "observed_evictions", "lookback_blocks", "min_cacheable", "warm_start",
              "turn_end_write", "thinking_switch", "resume", "task_turns", "skill_turns", "tool_search",
              "warm_prefix", "unknown_times",
              "system_prefix", "prefix_versions", "clock", "price_date")
EXECUTORS = ("local", "dask")


@dataclass(frozen=True)
class Point:
    params: dict[str, Any]
    cache: dict[str, Any]
    policy: str | None = None  # None: the spec's policy; "noop" for the sweep's baselines

    def key(self) -> str:
        body = {"params": self.params, "cache": self.cache}
        if self.policy:
            body["policy"] = self.policy
        return json.dumps(body, sort_keys=True, default=list)


@dataclass
class SweepSpec:
    name: str
    policy: str
    params: dict[str, Any] = field(default_factory=dict)
    grid: dict[str, list] = field(default_factory=dict)
    cache: dict[str, list] = field(default_factory=dict)
    random: dict[str, Any] = field(default_factory=dict)
    dataset: str | None = None
    prices: str | None = None
    source: str = ""
    # what load_spec changed and why (printed by sweep and tune)
    notes: list[str] = field(default_factory=list)

    def points(self) -> list[Point]:
        names = list(self.grid)
        cache_names = list(self.cache)
        combos = list(itertools.product(*(self.grid[n] for n in names))) or [()]
        cache_combos = list(itertools.product(*(self.cache[n] for n in cache_names))) or [()]
        out: list[Point] = []
        for c in combos:
            for cc in cache_combos:
                out.append(Point({**self.params, **dict(zip(names, c))}, dict(zip(cache_names, cc))))
        if self.random:
            rng = random.Random(self.random.get("seed", 0))
            ranges = self.random.get("params", {})
            base_points = out if out else [Point(dict(self.params), {})]
            for _ in range(int(self.random.get("samples", 0))):
                bp = base_points[rng.randrange(len(base_points))]
                sampled = {}
                for pname, r in ranges.items():
                    if "choices" in r:
                        sampled[pname] = r["choices"][rng.randrange(len(r["choices"]))]
                        continue
                    lo, hi = r["low"], r["high"]
                    v = rng.uniform(lo, hi)
                    sampled[pname] = int(round(v)) if r.get("int") else v
                out.append(Point({**bp.params, **sampled}, dict(bp.cache)))
        seen, uniq = set(), []
        for p in out:
            if p.key() not in seen:
                seen.add(p.key())
                uniq.append(p)
        return uniq

    def baselines(self) -> list[Point]:
        """One no-op point per distinct cache setting: every saving needs its own baseline."""
        if self.policy == "noop":
            return []
        caches = {json.dumps(p.cache, sort_keys=True): p.cache for p in self.points()}
        return [Point({}, c, "noop") for _, c in sorted(caches.items())]


def load_spec(path: Path) -> SweepSpec:
    try:
        data = tomllib.loads(Path(path).read_text())
    except OSError as e:
        raise SpecError(f"{path}: cannot read: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise SpecError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start}); a spec is a TOML file") from e
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{path}: not valid TOML: {e}") from e
    for k in data:
        if k not in SPEC_KEYS:
            raise SpecError(f"{path}: unknown key {k!r}{did_you_mean(k, SPEC_KEYS)} (allowed: {', '.join(SPEC_KEYS)})")
    if "policy" not in data:
        raise SpecError(f"{path}: missing `policy = NAME`")
    check_shapes(path, data)
    for section in ("grid", "cache"):
        for k, v in data.get(section, {}).items():
            if not isinstance(v, list) or not v:
                raise SpecError(f"{path}: [{section}] {k} must be a non-empty list of values")
    for k in data.get("cache", {}):
        if k not in CACHE_KEYS:
            raise SpecError(f"{path}: [cache] unknown key {k!r}{did_you_mean(k, CACHE_KEYS)}")
    rnd = data.get("random", {})
    for k in rnd:
        if k not in ("samples", "seed", "params"):
            raise SpecError(f"{path}: [random] unknown key {k!r}{did_you_mean(k, ['samples', 'seed', 'params'])}")
    spec = SweepSpec(
        name=str(data.get("name", Path(path).stem)), policy=data["policy"], params=data.get("params", {}),
        grid=data.get("grid", {}), cache=data.get("cache", {}), random=rnd, dataset=data.get("dataset"),
        prices=data.get("prices"), source=str(path),
    )
    _whatif_rule(spec, path)
    check_ranges(path, spec.policy, spec.random, spec.params)
    # fail before any work: every point must build (unknown names get "did you mean")
    pts = spec.points()
    if not pts:
        raise SpecError(f"{path}: the spec has no points")
    for p in pts:
        try:
            build(spec.policy, p.params)
            _options(p, spec.prices)
        except (ParamError, ValueError) as e:
            raise SpecError(f"{path}: {e}") from e
    return spec


def _whatif_rule(spec: SweepSpec, path: Path) -> None:
    """A [cache] grid with a what-if setting (a TTL other than the log's, a client break
    ignored) runs every point on the model-only variant, so that the points compare like with
    like: the calibrated variant copies the log's recorded misses, which such a setting would
    change (a 5-minute expiry does not happen under a 1-hour TTL), and its prices alone would
    rank the setting. A spec that asks for the calibrated variant too is refused."""
    found = sorted({s for k, vs in spec.cache.items() for v in vs for s in whatif_settings({k: v})})
    if not found:
        return
    ev = spec.cache.get("observed_evictions")
    if ev is not None and "log" in ev:
        raise SpecError(f"{path}: [cache] {found[0]} is a what-if and observed_evictions includes \"log\": the "
                        "calibrated variant copies the log's recorded cache misses, which that setting would change; "
                        "use observed_evictions = [\"none\"] (model-only) or `ctxreplay whatif`")
    spec.cache = {**spec.cache, "observed_evictions": ["none"]}
    spec.notes.append(f"[cache] {', '.join(found)} is a what-if: every point runs on the model-only variant "
                      "(observed_evictions = \"none\"), so the points compare like with like")


def _options(p: Point, prices_file: str | None, detail: bool = False, dataset: str = "default",
             key_file: str | None = None) -> ReplayOptions:
    """The point's replay options; the price file's hidden model names keyed as ``dataset`` keys them
    (with ``key_file``, else the default key)."""
    cache = {k: v for k, v in p.cache.items() if k != "price_date"}
    if "lookback_blocks" in cache and cache["lookback_blocks"] in (0, "none", None):
        cache["lookback_blocks"] = None
    date = p.cache.get("price_date", DEFAULT_PRICE_DATE)
    prices = PriceTable.from_toml(Path(prices_file), date) if prices_file else PriceTable(date)
    return ReplayOptions(CacheConfig(**cache), prices.bind(dataset, Path(key_file) if key_file else None), detail)


def sweep_id(spec: SweepSpec, dataset: str, slice: dict | None = None) -> str:
    """The sweep's id: the same spec on the same dataset (and slice, if any) resumes the same sweep."""
    body = {"policy": spec.policy, "points": [p.key() for p in spec.points()], "dataset": dataset,
            "prices": spec.prices}
    if slice:
        body["slice"] = slice
    body = json.dumps(body, sort_keys=True)
    return hashlib.blake2b(body.encode(), digest_size=6).hexdigest()


def point_run_id(sid: str, p: Point) -> str:
    return sid + "-" + hashlib.blake2b(p.key().encode(), digest_size=4).hexdigest()


# --- workers ------------------------------------------------------------------------------

_WORKER_CACHE: dict[str, Dataset] = {}
# test hooks: slow each task down, and note each committed batch in a file
_SLOW_MS = int(os.environ.get("CTXREPLAY_SWEEP_SLOW_MS", "0") or 0)
_TRACE_FILE = os.environ.get("CTXREPLAY_SWEEP_TRACE")


def _dataset_from(path: str) -> Dataset:
    ds = _WORKER_CACHE.get(path)
    if ds is None:
        before = rss()
        with open(path, "rb") as fh:
            ds = pickle.load(fh)
        _WORKER_CACHE.clear()
        _WORKER_CACHE[path] = ds
        tolerate_in_loky_worker(2 * max(0, rss() - before))  # the dataset is held on purpose
        # the arrays are long-lived objects without cycles: out of the cyclic collector's reach,
        # its collections during the replays no longer walk them (in one process, the bench's 101
        # devboy points over 300 synthetic sessions: 12.9 s of CPU against 15.9-17.4 s); a
        # dataset dropped later is still freed by refcount
        gc.freeze()
    return ds


@dataclass
class TaskResult:
    """Column-wise results of one task, cheap to send back and to write."""

    session_keys: list[str]
    values: np.ndarray  # sessions x SESSION_FIGURES
    extras: list[str]  # JSON of figures beyond the fixed columns (pipeline steps, reports)

    def __len__(self) -> int:
        return len(self.session_keys)


def run_task(ds_ref: Any, policy: str, params: dict, cache: dict, prices_file: str | None,
             session_idx: list[int], key_file: str | None = None) -> TaskResult:
    """Replay some sessions under one point; ``ds_ref`` is a Dataset or a pickle path."""
    ds = ds_ref if isinstance(ds_ref, Dataset) else _dataset_from(ds_ref)
    if _SLOW_MS:
        time.sleep(_SLOW_MS / 1000)  # tests: make a sweep slow enough to be killed midway
    pol = build(policy, params)
    opts = _options(Point(params, cache), prices_file, dataset=ds.name, key_file=key_file)
    keys, rows, extras = [], [], []
    for i in session_idx:
        s = ds.sessions[i]
        figs = replay_session(s, ds.vocab, pol, opts).figures
        keys.append(s.session_key)
        rows.append([figs[f] for f in SESSION_FIGURES])
        extras.append(json.dumps({k: v for k, v in figs.items() if k not in _FIXED}) if len(figs) > len(_FIXED)
                      else "{}")
    return TaskResult(keys, np.asarray(rows, dtype=np.float64).reshape(len(keys), len(SESSION_FIGURES)), extras)


_FIXED = frozenset(SESSION_FIGURES)


# --- driver -------------------------------------------------------------------------------

@dataclass
class SweepResult:
    sweep_id: str
    points: int
    skipped_points: int
    sessions_done: int
    sessions_skipped: int
    seconds: float
    blocks_configs: int
    run_ids: list[str]


def _chunks(idx: list[int], size: int) -> Iterator[list[int]]:
    for i in range(0, len(idx), size):
        yield idx[i:i + size]


def run_sweep(
    db: Path, spec: SweepSpec, dataset: str | None = None, *, jobs: int = 1, executor: str = "local",
    scheduler: str | None = None, chunk_sessions: int | None = None, batch_rows: int = 2000,
    on_total: Callable[[int], None] | None = None, on_progress: Callable[[int], None] | None = None,
    stop_after: int | None = None, slice: dict | None = None, key_file: Path | None = None,
) -> SweepResult:
    """Run (or resume) a sweep. ``stop_after`` ends after that many task results (tests).
    ``slice``: replay only the sessions of this dataset slice (``runs.slice_session_keys``); it
    is part of the sweep id and stored in every run's config, baselines included."""
    if executor not in EXECUTORS:
        raise SpecError(f"unknown executor {executor!r}{did_you_mean(executor, EXECUTORS)}")
    t0 = time.perf_counter()
    con = store.connect(db)
    try:
        names = store.dataset_names(con)
        dataset = dataset or spec.dataset or (names[0] if len(names) == 1 else None)
        if dataset is None or dataset not in names:
            raise store.StoreError(f"choose a dataset with --dataset (known: {', '.join(names) or 'none'})")
        keyf = str(key_file) if key_file else None  # the key that maps a price file's hidden model names
        warming = _start_workers(jobs) if executor == "local" and jobs > 1 else None
        keys = slice_session_keys(con, dataset, slice) if slice else None
        ds = load_dataset(con, dataset, session_keys=keys)  # worker start-up overlaps this load
        if warming is not None:
            warming.join()
        sid = sweep_id(spec, dataset, slice)
        points = spec.baselines() + spec.points()
        todo: list[tuple[int, Point, str, list[int]]] = []
        skipped_points = skipped_sessions = 0
        index = {s.session_key: i for i, s in enumerate(ds.sessions)}
        for p in points:
            rid = point_run_id(sid, p)
            row = con.execute("SELECT status FROM runs WHERE run_id = ?", [rid]).fetchone()
            if row and row[0] == "finished":
                skipped_points += 1
                continue
            done = {r[0] for r in con.execute("SELECT session_key FROM run_sessions WHERE run_id = ?",
                                              [rid]).fetchall()}
            skipped_sessions += len(done)
            if row is None:
                pol = build(p.policy or spec.policy, p.params)
                opts = _options(p, spec.prices, dataset=dataset, key_file=keyf)
                start_run(con, pol, opts, dataset, sid, run_id=rid, cache_extra={"sweep_spec": spec.source},
                          slice=slice)
            else:
                con.execute("UPDATE runs SET status = 'running', pid = ? WHERE run_id = ?", [os.getpid(), rid])
            remaining = [index[k] for k in sorted(index) if k not in done]
            todo.append((len(todo), p, rid, remaining))
        total_sessions = sum(len(t[3]) for t in todo)
        if on_total:
            on_total(total_sessions)
        n_workers = max(1, jobs)
        # few large tasks per point: the driver shares the cores with the workers (in parallel,
        # every point of a chunk runs in one task: more chunks keep the workers evenly busy)
        size = chunk_sessions or max(1, -(-len(ds.sessions) // ((8 if n_workers > 1 else 2) * n_workers)))
        tasks = [(rid, p, chunk) for _, p, rid, rem in todo for chunk in _chunks(rem, size)]
        remaining_per_run = {rid: len(rem) for _, _, rid, rem in todo}
        pending: list[tuple[str, TaskResult]] = []
        pending_rows = 0
        done_sessions = 0
        blocks_per_session = {s.session_key: s.n_blocks for s in ds.sessions}
        blocks_configs = 0
        finished_runs: list[str] = []

        def flush(final_runs: list[str]) -> None:
            nonlocal pending_rows
            with store.transaction(con):
                if pending:
                    vals = np.concatenate([r.values for _, r in pending])
                    cols = {"run_id": [rid for rid, r in pending for _ in range(len(r))],
                            "session_key": [k for _, r in pending for k in r.session_keys]}
                    for j, f in enumerate(SESSION_FIGURES):
                        cols[f] = vals[:, j]
                    cols["extra"] = [e for _, r in pending for e in r.extras]
                    insert_columns(con, "run_sessions", cols)
                for rid in final_runs:
                    n = con.execute("SELECT count(*) FROM run_sessions WHERE run_id = ?", [rid]).fetchone()[0]
                    con.execute("UPDATE runs SET status = 'finished', finished_at = ?, n_sessions = ? "
                                "WHERE run_id = ?", [store.now(), n, rid])
            if _TRACE_FILE:
                with open(_TRACE_FILE, "a") as fh:
                    fh.write(f"{pending_rows} {len(final_runs)}\n")
            pending.clear()
            pending_rows = 0

        results_iter = _execute(ds, spec, tasks, n_workers, executor, scheduler, keyf)
        n_results = 0
        for rid, res in results_iter:
            pending.append((rid, res))
            pending_rows += len(res)
            blocks_configs += sum(blocks_per_session[k] for k in res.session_keys)
            remaining_per_run[rid] -= len(res)
            done_sessions += len(res)
            newly = [rid] if remaining_per_run[rid] == 0 else []
            finished_runs += newly
            if pending_rows >= batch_rows or newly:
                flush(newly)
            if on_progress:
                on_progress(len(res))
            n_results += 1
            if stop_after is not None and n_results >= stop_after:
                break
        flush([])
        for rid, rem in remaining_per_run.items():
            if rem == 0 and rid not in finished_runs:  # points with nothing left to do
                flush([rid])
        return SweepResult(sid, len(points), skipped_points, done_sessions, skipped_sessions,
                           time.perf_counter() - t0, blocks_configs, [point_run_id(sid, p) for p in points])
    finally:
        con.close()


def _execute(ds: Dataset, spec: SweepSpec, tasks: list, jobs: int, executor: str, scheduler: str | None,
             keyf: str | None = None):
    """Yield (run_id, [(session_key, figures)]) per task, in completion order."""
    if not tasks:
        return
    if executor == "dask":
        yield from _execute_dask(ds, spec, tasks, scheduler, keyf)
        return
    if jobs <= 1:
        gc.freeze()  # as in a worker (`_dataset_from`), for this sweep only
        try:
            for rid, p, chunk in tasks:
                yield rid, run_task(ds, p.policy or spec.policy, p.params, p.cache, spec.prices, chunk, keyf)
        finally:
            gc.unfreeze()
        return
    from joblib import Parallel, delayed

    # workers load the arrays once from a pickle (cheaper than sending them with every task)
    fd, path = tempfile.mkstemp(prefix="ctxreplay-sweep-", suffix=".pkl")
    try:
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(ds, fh, protocol=pickle.HIGHEST_PROTOCOL)
        par = Parallel(n_jobs=jobs, return_as="generator_unordered", batch_size=1)
        gen = par(delayed(_group_with_ids)(path, spec.prices, chunk, points, keyf)
                  for chunk, points in _by_chunk(spec, tasks))
        for results in gen:
            yield from results
    finally:
        os.unlink(path)


def _noop() -> int:
    return os.getpid()


def _start_workers(jobs: int):
    """Spawn joblib's (reusable) worker processes in a background thread; returns the thread."""
    import threading

    from joblib import Parallel, delayed

    th = threading.Thread(target=lambda: Parallel(n_jobs=jobs)(delayed(_noop)() for _ in range(jobs)), daemon=True)
    th.start()
    return th


def _by_chunk(spec: SweepSpec, tasks: list) -> list[tuple[list[int], list[tuple]]]:
    """The tasks on the same sessions as one task each: (chunk, [(run id, policy, params, cache)]).

    A worker then replays every point of a chunk, so the streams it prices once per distinct
    change (`replay.engine.memo`) serve every point; spread over the workers, each would
    price them again."""
    groups: dict[tuple[int, ...], list[tuple]] = {}
    for rid, p, chunk in tasks:
        groups.setdefault(tuple(chunk), []).append((rid, p.policy or spec.policy, p.params, p.cache))
    return [(list(chunk), points) for chunk, points in groups.items()]


def _group_with_ids(ds_ref, prices_file, chunk, points, key_file=None) -> list[tuple[str, TaskResult]]:
    out = [(rid, run_task(ds_ref, policy, params, cache, prices_file, chunk, key_file))
           for rid, policy, params, cache in points]
    ds = ds_ref if isinstance(ds_ref, Dataset) else _dataset_from(ds_ref)
    # every point of these sessions is done: what was priced for them is not asked again
    forget_priced(ds.sessions[i] for i in chunk)
    return out


def _execute_dask(ds: Dataset, spec: SweepSpec, tasks: list, scheduler: str | None, keyf: str | None = None):
    try:
        from distributed import Client, as_completed
    except ImportError as e:
        raise SpecError("the dask executor needs the optional extra: pip install 'ctxreplay[dask]'") from e
    if not scheduler:
        raise SpecError("--executor dask needs --scheduler ADDRESS (e.g. tcp://10.0.0.5:8786)")
    client = Client(scheduler)
    try:
        ds_future = client.scatter(ds, broadcast=True)
        futures = [client.submit(_group_with_ids, ds_future, spec.prices, chunk, points, keyf, pure=False)
                   for chunk, points in _by_chunk(spec, tasks)]
        for fut in as_completed(futures):
            yield from fut.result()
    finally:
        client.close()
