"""Whole-process start-up time of `ctxreplay --help` and `ctxreplay --version`.

Each command is run ``--runs`` times (default 20) as a fresh process, both as
``python -m replay.cli`` (this interpreter) and as the installed ``ctxreplay`` script next to
it (``.venv/bin/ctxreplay``), and min / median / max wall seconds are printed. The issue's
target is a median of at most 0.2 s.

    python bench/startup.py [--runs 20]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

# bench/replay.py is named like the package: keep this folder off the import path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

TARGET = 0.2


def script() -> str | None:
    """The installed `ctxreplay` script of this interpreter's environment, else the one on PATH."""
    here = Path(sys.executable).parent / "ctxreplay"
    return str(here) if here.exists() else shutil.which("ctxreplay")


def times(cmd: list[str], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20, help="runs per command (default 20)")
    args = ap.parse_args()
    launchers = [("python -m replay.cli", [sys.executable, "-m", "replay.cli"])]
    exe = script()
    if exe:
        launchers.append((exe, [exe]))
    else:
        print("the ctxreplay script is not installed here (pip install -e .): measuring python -m only")
    times([sys.executable, "-c", "pass"], 3)  # warm the file cache
    base = statistics.median(times([sys.executable, "-c", "pass"], args.runs))
    print(f"{args.runs} runs each; bare interpreter start-up: median {base:.3f} s; target: median <= {TARGET} s")
    for name, cmd in launchers:
        for flag in ("--help", "--version"):
            ts = times([*cmd, flag], args.runs)
            med = statistics.median(ts)
            print(f"{name} {flag}: min {min(ts):.3f} s  median {med:.3f} s  max {max(ts):.3f} s"
                  f"  {'ok' if med <= TARGET else 'over target'}")


if __name__ == "__main__":
    main()
