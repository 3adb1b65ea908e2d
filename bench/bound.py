"""Wall time of the offline-optimal bounds on a whole corpus (target: <= 120 s on 2 cores).

    python bench/bound.py [LOG_DIR]

Ingests LOG_DIR (default: the shared Claude Code corpus) into a temporary DuckDB file, loads
the arrays once, then times `compute_bounds` (the no-op baseline, the insert-time bound, the
lossless bound and the retro_flush schedule with its per-stream dynamic program) for the calibrated and
the model-only variant, without storing runs, and prints each bound's saving.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

# bench/replay.py is named like the package: keep this folder off the import path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT.parent / "shared" / "logs" / "claude-code"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", nargs="?", type=Path, default=DEFAULT)
    args = ap.parse_args()
    if not args.path.exists():
        raise SystemExit(f"{args.path} not found; pass a log directory")

    from replay import store
    from replay.engine import ReplayOptions
    from replay.experiments.bound import compute_bounds
    from replay.ingest.keys import load_or_create_master_key
    from replay.model.arrays import load_dataset
    from replay.model.cache import CacheConfig
    from replay.store.load import ingest

    with tempfile.TemporaryDirectory() as tmp:
        db, key = Path(tmp) / "b.duckdb", Path(tmp) / "key"
        load_or_create_master_key(key)
        ingest([args.path], db, key_file=key)
        con = store.connect(db, read_only=True)
        ds = load_dataset(con, "default")
        print(f"dataset: {args.path} ({len(ds.sessions)} sessions, {ds.n_blocks} blocks, {ds.n_requests} requests)")
        total = 0.0
        for variant, ev in (("calibrated", "log"), ("model-only", "none")):
            t = time.perf_counter()
            res = compute_bounds(con, ds, ReplayOptions(CacheConfig(observed_evictions=ev)), store_runs=False)
            dt = time.perf_counter() - t
            total += dt
            b = res["bounds"]
            print(f"{variant}: {dt:.1f} s; bound_insert saves {b['bound_insert']['cost']['saved_pct']:+.2f}% of cost, "
                  f"bound_retro {b['bound_retro']['cost']['saved_pct']:+.2f}%, retro_flush "
                  f"{res['schedules']['retro_flush']['cost']['saved_pct']:+.2f}%")
        print(f"both variants: {total:.1f} s wall (one process)")
        con.close()


if __name__ == "__main__":
    main()
