"""Sweep wall time and peak memory: a 100-configuration devboy_lru sweep over a corpus.

    python bench/sweep.py [--db FILE] [--sessions 1500] [--jobs 2] [--budget 60] [--strict]
    python bench/sweep.py --profile sweep.prof     # the same sweep in one process, under cProfile
    python bench/sweep.py --cpu 300 [--figures F.npy]  # the replays' CPU over the first 300 sessions

Without --db, generates the synthetic scale corpus (`ctxreplay generate --sessions N`,
about devboy's published study size at 1,500) and ingests it first (minutes; reused from
``--cache``, default ~/.cache/ctxreplay/bench/, on the next run, and built again when the
store's schema has moved on since). Prints wall time, blocks·configs/s, the peak resident
memory of the driver and of the largest worker, and the machine's load.

``--cpu N``: the same 101 points over the first N sessions of the corpus in this process, as a
worker replays them (``run_task`` per point, the per-stream decisions warm, the dataset out of the
cyclic collector's reach), timed with ``time.process_time()``: the replays alone, steadier than the
wall time of the whole sweep on a shared machine; ``--figures`` saves their per-session figures
(points x sessions x figures, float64) to compare two versions of the code exactly.

Exit status: 1 when the sweep did not store every configuration of every session, or a
process passed 2 GB; the wall-time budget (``--budget``, 60 s on 2 cores) is printed as a
verdict, and fails the run only with ``--strict``: on a machine shared with other jobs the
wall time follows their load, not the code.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

# bench/replay.py is named like the package: keep this folder off the import path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

CACHE = Path.home() / ".cache" / "ctxreplay" / "bench"
MAX_RSS_MB = 2048

SPEC = """
name = "bench: devboy 100 configs"
policy = "devboy_lru"
[grid]
capacity = [1, 2, 3, 4, 5, 6, 8, 10, 13, 16, 20, 30, 40, 50, 60, 70, 80, 90, 100, 0]
min_body_chars = [0, 200, 500, 1000, 2000]
"""


def _stale(db: Path) -> bool:
    """Whether a cached corpus was stored by an older schema (migrating it would keep its old trace)."""
    import duckdb

    from replay.store.db import migrations_pending

    try:
        con = duckdb.connect(str(db), read_only=True)
    except duckdb.Error:
        return True
    try:
        return migrations_pending(con)
    finally:
        con.close()


def corpus(cache: Path, sessions: int) -> Path:
    """The cached synthetic corpus of ``sessions`` sessions, generated and ingested if missing or stale."""
    cache.mkdir(parents=True, exist_ok=True)
    db = cache / f"synthetic-{sessions}.duckdb"
    if db.exists() and _stale(db):
        print(f"{db}: stored by an older schema; building it again", flush=True)
        db.unlink()
        Path(str(db) + ".wal").unlink(missing_ok=True)
    if not db.exists():
        from replay.store.load import ingest
        from replay.synth.generate import generate_corpus

        part = db.with_suffix(".part.duckdb")  # an interrupted build leaves no corpus behind
        part.unlink(missing_ok=True)
        with tempfile.TemporaryDirectory() as d:
            t = time.perf_counter()
            s = generate_corpus(Path(d) / "logs", sessions=sessions, seed=0)
            print(f"generated {s.sessions} sessions, {s.tool_results} tool results, {s.bytes / 1e6:.0f} MB "
                  f"in {time.perf_counter() - t:.0f} s", flush=True)
            os.environ.setdefault("CTXREPLAY_KEY_FILE", str(cache / "bench.key"))
            t = time.perf_counter()
            ingest([Path(d) / "logs"], part, dataset="synthetic")
            print(f"ingested in {time.perf_counter() - t:.0f} s", flush=True)
        wal = Path(str(part) + ".wal")
        if wal.exists():
            wal.rename(str(db) + ".wal")
        part.rename(db)
    return db


def cpu(db: Path, n: int, figures: Path | None) -> int:
    """The replays' CPU: the sweep's points over the first ``n`` sessions, in this process."""
    import gc

    from replay import store
    from replay.engine.memo import forget_priced
    from replay.experiments.sweep import load_spec, run_task
    from replay.model.arrays import load_dataset

    con = store.connect(db, read_only=True)
    names = store.dataset_names(con)
    if len(names) != 1:  # the sweep's own rule: it needs --dataset otherwise
        con.close()
        print(f"{db}: --cpu replays a database of one dataset, this one has {len(names)}", file=sys.stderr)
        return 2
    ds = load_dataset(con, names[0])
    con.close()
    ds.sessions = ds.sessions[:n]
    gc.freeze()  # as a worker does once the dataset is loaded
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "spec.toml").write_text(SPEC)
        spec = load_spec(Path(d) / "spec.toml")
    points, idx = spec.baselines() + spec.points(), list(range(len(ds.sessions)))
    run_task(ds, "noop", {}, {}, spec.prices, idx)  # the per-stream decisions, made once per worker
    forget_priced(ds.sessions)
    t = time.process_time()
    res = [run_task(ds, p.policy or spec.policy, p.params, p.cache, spec.prices, idx) for p in points]
    took = time.process_time() - t
    print(f"{len(points)} points x {len(idx)} sessions in one process: {took:.2f} s CPU")
    if figures is not None:
        import numpy as np

        np.save(figures, np.stack([r.values for r in res]))
        print(f"figures: {figures}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", type=Path, default=None, help="an ingested database to sweep (default: the synthetic corpus)")
    ap.add_argument("--sessions", type=int, default=1500, help="sessions of the synthetic corpus (default 1500)")
    ap.add_argument("--cache", type=Path, default=CACHE, help=f"where the synthetic corpus is kept (default {CACHE})")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--budget", type=float, default=60.0, help="wall-time budget in seconds (default 60)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when the sweep takes longer than --budget")
    ap.add_argument("--profile", type=Path, metavar="FILE",
                    help="run the sweep in this process (--jobs 1) under cProfile, write the stats to FILE "
                         "and print the functions with the most time")
    ap.add_argument("--cpu", type=int, metavar="N",
                    help="time the replays of the 101 points over the first N sessions in this process (CPU seconds)")
    ap.add_argument("--figures", type=Path, metavar="FILE", help="with --cpu: save the per-session figures (.npy)")
    args = ap.parse_args(argv)
    from replay import store
    from replay.experiments.sweep import load_spec, run_sweep

    db = args.db if args.db is not None else corpus(args.cache, args.sessions)
    if not db.is_file():
        ap.error(f"{db}: no such database")
    if args.cpu is not None:
        return cpu(db, args.cpu, args.figures)
    jobs = 1 if args.profile else args.jobs
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as d:
        work = Path(d) / "sweep.duckdb"
        work.write_bytes(db.read_bytes())  # the sweep writes its runs into a scratch copy
        spec_file = Path(d) / "spec.toml"
        spec_file.write_text(SPEC)
        spec = load_spec(spec_file)
        con = store.connect(work, read_only=True)
        n_blocks = con.execute("SELECT count(*) FROM blocks").fetchone()[0]
        n_sessions = con.execute("SELECT count(*) FROM sessions").fetchone()[0]
        con.close()
        prof = None
        if args.profile:
            import cProfile

            prof = cProfile.Profile()
            prof.enable()
        t = time.perf_counter()
        res = run_sweep(work, spec, jobs=jobs)
        wall = time.perf_counter() - t
        if prof is not None:
            prof.disable()
        con = store.connect(work, read_only=True)
        finished, stored = con.execute(
            "SELECT count(*) FILTER (WHERE status = 'finished'), "
            "(SELECT count(*) FROM run_sessions) FROM runs").fetchone()
        con.close()
    load1 = os.getloadavg()[0]
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"corpus: {n_sessions} sessions, {n_blocks:,} blocks; sweep: {res.points} configs, jobs={jobs}")
    print(f"wall {wall:.1f} s; {res.blocks_configs / wall:,.0f} blocks·configs/s")
    print(f"peak RSS: driver {me:,.0f} MB, largest worker {kids:,.0f} MB")
    complete = finished == res.points and stored == res.points * n_sessions
    print(f"stored: {finished} of {res.points} configurations finished, {stored:,} session results"
          + ("" if complete else f" (expected {res.points * n_sessions:,}): INCOMPLETE"))
    over = wall > args.budget and not prof
    print(f"1-minute load average {load0:.1f} before, {load1:.1f} after ({os.cpu_count()} cores); budget "
          + ("not judged under --profile" if prof else f"{args.budget:g} s: {'over' if over else 'within'}"))
    if prof is not None:
        import pstats

        prof.dump_stats(args.profile)
        print(f"profile: {args.profile} (one process: the replays, the load and the writes)")
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    return 0 if complete and max(me, kids) < MAX_RSS_MB and not (args.strict and over) else 1


if __name__ == "__main__":
    sys.exit(main())
