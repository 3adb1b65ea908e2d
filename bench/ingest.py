"""Ingest throughput on a log tree (default: the shared Claude Code corpus), and peak memory.

Prints MB/s and blocks/s for a cold ingest into a fresh DuckDB file, on one core
(token counting pinned to one thread), with and without the one-time tokenizer load.

    python bench/ingest.py [PATH] [--repeat 3]

``--memory`` instead measures the peak resident memory (RSS) of `ctxreplay ingest`, each
run in a fresh process, on two synthetic Claude Code sessions written under ``--tmp``
(default: the system temporary folder; nothing from real logs): one session file of
``--size-mb`` MB (default 196) built by repeating turns of a synthetic session, and one file
whose single assistant line holds a ``--line-mb`` MB (default 50) tool result. The baseline is
the peak of the same command on a one-turn session (interpreter, DuckDB and tokenizer loaded).

    python bench/ingest.py --memory [--size-mb 196] [--line-mb 50] [--tmp /tmp]

``--jobs N`` instead times whole processes: `ctxreplay ingest PATH -q --jobs 1` and ``--jobs N``
(a fresh database each, ``--repeat`` runs each, interleaved; medians, best and worst), prints
the speed-up of the medians, and, where `ccusage` is on PATH, times `ccusage session --json
--offline` on the same files (read from a temporary ``CLAUDE_CONFIG_DIR`` of hard links, or
symbolic links across file systems, which ccusage's native builds skip); where it is not
installed, fails or finds no session, it says so.

    python bench/ingest.py ../shared/logs/entire-cli --jobs 2 [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# bench/replay.py is named like the package: keep this folder off the import path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT.parent / "shared" / "logs" / "claude-code"

_WORDS = ("alpha beta gamma delta parser token cache request stream block session value index result "
          "error return import class def self none true false list dict string number line file path").split()


def _text(rng: random.Random, n_bytes: int) -> str:
    out, size = [], 0
    while size < n_bytes:
        w = rng.choice(_WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)


def _turns(session_id: str, rng: random.Random):
    """Endless Claude Code-shaped records of one synthetic session (prompt, streamed response, tool result)."""
    k = 0
    parent = None
    while True:
        k += 1
        ts = f"2026-01-01T{(k // 3600) % 24:02d}:{(k // 60) % 60:02d}:{k % 60:02d}.000Z"

        def rec(type_, **kw):
            nonlocal parent
            r = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/bench/proj",
                 "sessionId": session_id, "version": "2.1.50", "gitBranch": "main", "type": type_,
                 "uuid": f"{k:08d}-{rng.getrandbits(64):016x}", "timestamp": ts, **kw}
            parent = r["uuid"]
            return r

        if k % 10 == 1:
            yield rec("user", message={"role": "user", "content": _text(rng, 300)})
        mid = f"msg_{k:08d}"
        use = {"input_tokens": 3, "cache_creation_input_tokens": 500, "cache_read_input_tokens": 20_000 + k,
               "output_tokens": 1}
        blocks = [{"type": "thinking", "thinking": _text(rng, 400), "signature": "x" * 200},
                  {"type": "text", "text": _text(rng, 200)},
                  {"type": "tool_use", "id": f"tu_{k}", "name": "Read", "input": {"file_path": f"/home/bench/proj/f{k % 50}.py"}}]
        for i, b in enumerate(blocks):
            u = dict(use, output_tokens=1 if i < len(blocks) - 1 else 120)
            yield rec("assistant", requestId=f"req_{k}", message={
                "model": "claude-sonnet-4-5", "id": mid, "type": "message", "role": "assistant", "content": [b],
                "stop_reason": None, "usage": u})
        body = _text(rng, rng.randint(1000, 6000))
        yield rec("user", message={"role": "user", "content": [{"tool_use_id": f"tu_{k}", "type": "tool_result",
                                                                  "content": body}]},
                  toolUseResult={"type": "text", "file": {"filePath": f"/home/bench/proj/f{k % 50}.py", "content": body}})
        yield rec("progress", data={"type": "hook_progress", "text": _text(rng, 100)})


def write_session(path: Path, size_mb: float, seed: int = 1) -> Path:
    """A synthetic Claude Code session of about ``size_mb`` MB, written line by line."""
    rng = random.Random(seed)
    limit = int(size_mb * 1_000_000)
    with open(path, "w") as fh:
        size = 0
        for rec in _turns(f"bench-{seed}", rng):
            line = json.dumps(rec) + "\n"
            fh.write(line)
            size += len(line)
            if size >= limit:
                break
    return path


def write_long_line(path: Path, line_mb: float) -> Path:
    """A short synthetic session one of whose lines is a ``line_mb`` MB tool result."""
    rng = random.Random(2)
    recs = []
    for rec in _turns("bench-long", rng):
        recs.append(rec)
        if len(recs) >= 6:
            break
    big = {"parentUuid": None, "isSidechain": False, "type": "user", "sessionId": "bench-long", "uuid": "big-1",
           "timestamp": "2026-01-01T10:00:00.000Z",
           "message": {"role": "user", "content": [{"tool_use_id": "tu_1", "type": "tool_result",
                                                     "content": _text(rng, int(line_mb * 1_000_000))}]}}
    recs.insert(5, big)
    with open(path, "w") as fh:
        for r in recs:
            fh.write(json.dumps(r) + "\n")
    return path


_PEAK = r"""
import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
if r.returncode:
    sys.stderr.write(r.stderr)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def peak_rss_mb(log: Path, work: Path) -> tuple[float, float]:
    """(peak RSS in MB, seconds) of `ctxreplay ingest LOG` in a fresh process."""
    db = work / f"{log.stem}.duckdb"
    db.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "replay.cli", "ingest", str(log), "--db", str(db), "-q"]
    env = {**os.environ, "CTXREPLAY_KEY_FILE": str(work / "key")}
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", _PEAK, *cmd], env=env, capture_output=True, text=True, check=True)
    secs = time.perf_counter() - t
    return int(r.stdout.strip().splitlines()[-1]) / 1024, secs


def memory(size_mb: float, line_mb: float, tmp: Path | None) -> None:
    from replay.ingest.keys import load_or_create_master_key

    with tempfile.TemporaryDirectory(dir=tmp, prefix="ctxreplay-bench-") as d:
        work = Path(d)
        load_or_create_master_key(work / "key")
        small = write_session(work / "small.jsonl", 0.01)
        big = write_session(work / "big.jsonl", size_mb)
        long = write_long_line(work / "longline.jsonl", line_mb)
        base, _ = peak_rss_mb(small, work)
        print(f"baseline (one-turn session): peak RSS {base:.0f} MB")
        for label, path in (("session file", big), ("single long line", long)):
            mb = path.stat().st_size / 1e6
            peak, secs = peak_rss_mb(path, work)
            print(f"{label}: {mb:.0f} MB -> peak RSS {peak:.0f} MB ({peak / mb:.2f}x the file; "
                  f"{peak - base:.0f} MB above baseline) in {secs:.1f} s ({mb / secs:.1f} MB/s incl. start-up)")


def _run(cmd: list[str], env: dict, fresh: Path | None = None) -> tuple[float, str]:
    """(whole-process wall seconds, stdout) of ``cmd`` (``fresh``: deleted before)."""
    if fresh is not None:
        for f in fresh.parent.glob(fresh.name + "*"):
            f.unlink()
    t = time.perf_counter()
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True, text=True)
    return time.perf_counter() - t, r.stdout


def _stats(xs: list[float]) -> str:
    return f"median {statistics.median(xs):.2f} s (best {min(xs):.2f}, worst {max(xs):.2f})"


def parallel(path: Path, jobs: int, repeat: int) -> None:
    """Whole-process `ingest --jobs 1` vs ``--jobs N``, and `ccusage session` where installed."""
    from replay.ingest.keys import load_or_create_master_key

    logs = sorted(f for f in (path.rglob("*") if path.is_dir() else [path]) if f.suffix in (".jsonl", ".json"))
    mb = sum(f.stat().st_size for f in logs) / 1e6
    print(f"corpus: {path} ({len(logs)} files, {mb:.1f} MB); {os.cpu_count()} CPUs; {repeat} runs each "
          f"(interleaved), whole process, fresh database")
    with tempfile.TemporaryDirectory(prefix="ctxreplay-bench-") as d:
        work = Path(d)
        load_or_create_master_key(work / "key")
        env = {**os.environ, "CTXREPLAY_KEY_FILE": str(work / "key")}
        ns = sorted({1, jobs})
        secs: dict[int, list[float]] = {n: [] for n in ns}
        for _ in range(repeat):  # interleaved, so that a busier moment of the machine hits both alike
            for n in ns:
                db = work / f"jobs{n}.duckdb"
                secs[n].append(_run([sys.executable, "-m", "replay.cli", "ingest", str(path), "--db", str(db), "-q",
                                     "--jobs", str(n)], env, fresh=db)[0])
        med = {n: statistics.median(v) for n, v in secs.items()}
        for n in ns:
            print(f"ctxreplay ingest --jobs {n}: {_stats(secs[n])}; {mb / med[n]:.1f} MB/s")
        if jobs > 1:
            print(f"--jobs {jobs} speed-up over --jobs 1 (medians): {med[1] / med[jobs]:.2f}x")
        ccusage = shutil.which("ccusage")
        if not ccusage:
            print("ccusage: not installed here (not on PATH): no comparison with `ccusage session`")
            return
        projects = work / "claude" / "projects" / "bench"
        projects.mkdir(parents=True)
        for i, f in enumerate(logs):  # hard links where possible: ccusage's native builds skip symbolic links
            link = projects / f"{i:05d}-{f.name}"
            try:
                os.link(f.resolve(), link)
            except OSError:
                link.symlink_to(f.resolve())
        cenv = {**os.environ, "CLAUDE_CONFIG_DIR": str(work / "claude")}
        cmd = [ccusage, "session", "--json", "--offline"]
        try:
            runs = [_run(cmd, cenv) for _ in range(repeat)]
        except subprocess.CalledProcessError as e:
            print(f"ccusage: failed ({(e.stderr or '').strip()[:200]}): no comparison with `ccusage session`")
            return
        try:
            found = len(json.loads(runs[-1][1]).get("session", []))
        except ValueError:
            found = -1
        if found <= 0:
            print("ccusage: read no session from these files: no comparison with `ccusage session`")
            return
        c = [r[0] for r in runs]
        print(f"ccusage session --json --offline ({found} sessions): {_stats(c)}  ->  ctxreplay ingest --jobs {jobs} "
              f"takes {med[jobs] / statistics.median(c):.2f}x ccusage's time (medians)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--memory", action="store_true", help="measure peak RSS on synthetic large files instead")
    ap.add_argument("--size-mb", type=float, default=196.0)
    ap.add_argument("--line-mb", type=float, default=50.0)
    ap.add_argument("--tmp", type=Path, default=None, help="where the synthetic files are written")
    ap.add_argument("--jobs", type=int, default=0,
                    help="time whole-process `ingest --jobs 1` vs --jobs N (and ccusage where installed) instead")
    args = ap.parse_args()
    if args.jobs:
        if not args.path.exists():
            sys.exit(f"{args.path} not found; pass a log directory")
        parallel(args.path, args.jobs, args.repeat)
        return
    if args.memory:
        memory(args.size_mb, args.line_mb, args.tmp)
        return
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
