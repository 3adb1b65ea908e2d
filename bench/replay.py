"""Replay throughput: blocks/s and requests/s of a policy over a dataset, arrays loaded once.

    python bench/replay.py [LOG_DIR] [--policy noop] [--repeat 5]

Ingests LOG_DIR (default: the shared Claude Code corpus) into a temporary DuckDB file,
loads the arrays once, then times the replay loop alone on one core.
"""

from __future__ import annotations

import argparse
import os
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
    ap.add_argument("--policy", default="noop")
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    if not args.path.exists():
        sys.exit(f"{args.path} not found; pass a log directory")
    from replay import store
    from replay.model.arrays import load_dataset
    from replay.engine import ReplayOptions, replay_dataset
    from replay.engine.memo import forget_priced
    from replay.store.load import ingest
    from replay.policies import build

    with tempfile.TemporaryDirectory() as d:
        os.environ["CTXREPLAY_KEY_FILE"] = str(Path(d) / "key")
        db = Path(d) / "b.duckdb"
        ingest([args.path], db)
        con = store.connect(db, read_only=True)
        t = time.perf_counter()
        ds = load_dataset(con, "default")
        load = time.perf_counter() - t
        con.close()
    policy = build(args.policy)
    opts = ReplayOptions()
    replay_dataset(ds, policy, opts)  # warm: price table resolved once
    best = float("inf")
    for _ in range(args.repeat):
        # each repeat prices every stream again: a stream priced before is not priced twice
        # (replay.engine.memo), which would time a sweep's repeated configuration instead
        forget_priced(ds.sessions)
        t = time.perf_counter()
        replay_dataset(ds, policy, opts)
        best = min(best, time.perf_counter() - t)
    print(f"dataset: {args.path} ({len(ds.sessions)} sessions, {ds.n_blocks} blocks, {ds.n_requests} requests)")
    print(f"array load: {load:.2f} s")
    print(f"replay {args.policy}, best of {args.repeat}: {best * 1000:.1f} ms -> "
          f"{ds.n_blocks / best:,.0f} blocks/s, {ds.n_requests / best:,.0f} requests/s")


if __name__ == "__main__":
    main()
