"""Ingest throughput on a log tree (default: the shared Claude Code corpus).

Prints MB/s and blocks/s for a cold ingest into a fresh DuckDB file, on one core
(token counting pinned to one thread), with and without the one-time tokenizer load.

    python bench/ingest.py [PATH] [--repeat 3]
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
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if not args.path.exists():
        sys.exit(f"{args.path} not found; pass a log directory")
    from replay.ingest import tokens

    tokens.THREADS = 1  # one core, as the target is stated
    t = time.perf_counter()
    tokens.count_many(["warm up the tokenizer"])
    load = time.perf_counter() - t
    from replay.store.load import ingest

    best = None
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as d:
            os.environ["CTXREPLAY_KEY_FILE"] = str(Path(d) / "key")
            s = ingest([args.path], Path(d) / "b.duckdb")
            if best is None or s.seconds < best.seconds:
                best = s
    mb = best.bytes / 1e6
    print(f"corpus: {args.path} ({best.files} files, {mb:.1f} MB, {best.blocks} blocks, {best.requests} requests)")
    print(f"tokenizer load (once per process): {load:.2f} s")
    print(f"ingest, best of {args.repeat}: {best.seconds:.2f} s  ->  {mb / best.seconds:.1f} MB/s, "
          f"{best.blocks / best.seconds:,.0f} blocks/s")
    print(f"including tokenizer load: {mb / (best.seconds + load):.1f} MB/s")


if __name__ == "__main__":
    main()
