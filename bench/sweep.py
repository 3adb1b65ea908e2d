"""Sweep wall time and peak memory: a 100-configuration devboy_lru sweep over a corpus.

    python bench/sweep.py [--db FILE] [--sessions 1500] [--jobs 2]

Without --db, generates the synthetic scale corpus (`ctxreplay generate --sessions N`,
about devboy's published study size at 1,500) and ingests it first (minutes; reused from
~/.cache/ctxreplay/bench/ on the next run). Prints wall time, blocks·configs/s and the
peak resident memory of the driver and of the largest worker.
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

SPEC = """
name = "bench: devboy 100 configs"
policy = "devboy_lru"
[grid]
capacity = [1, 2, 3, 4, 5, 6, 8, 10, 13, 16, 20, 30, 40, 50, 60, 70, 80, 90, 100, 0]
min_body_chars = [0, 200, 500, 1000, 2000]
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", type=Path, default=None)
    ap.add_argument("--sessions", type=int, default=1500)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    from replay import store
    from replay.experiments.sweep import load_spec, run_sweep

    db = args.db
    if db is None:
        CACHE.mkdir(parents=True, exist_ok=True)
        db = CACHE / f"synthetic-{args.sessions}.duckdb"
        if not db.exists():
            from replay.synth.generate import generate_corpus
            from replay.store.load import ingest

            with tempfile.TemporaryDirectory() as d:
                t = time.perf_counter()
                s = generate_corpus(Path(d) / "logs", sessions=args.sessions, seed=0)
                print(f"generated {s.sessions} sessions, {s.tool_results} tool results, {s.bytes / 1e6:.0f} MB "
                      f"in {time.perf_counter() - t:.0f} s", flush=True)
                os.environ.setdefault("CTXREPLAY_KEY_FILE", str(CACHE / "bench.key"))
                t = time.perf_counter()
                ingest([Path(d) / "logs"], db, dataset="synthetic")
                print(f"ingested in {time.perf_counter() - t:.0f} s", flush=True)
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
        t = time.perf_counter()
        res = run_sweep(work, spec, jobs=args.jobs)
        wall = time.perf_counter() - t
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"corpus: {n_sessions} sessions, {n_blocks:,} blocks; sweep: {res.points} configs, jobs={args.jobs}")
    print(f"wall {wall:.1f} s; {res.blocks_configs / wall:,.0f} blocks·configs/s")
    print(f"peak RSS: driver {me:,.0f} MB, largest worker {kids:,.0f} MB")
    sys.exit(0 if wall <= 60 and max(me, kids) < 2048 else 1)


if __name__ == "__main__":
    main()
