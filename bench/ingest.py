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
Each file is ingested twice, with the default ``--jobs`` and with ``--jobs 1``.

    python bench/ingest.py --memory [--size-mb 196] [--line-mb 50] [--tmp /tmp]

``--jobs N`` instead times whole processes on a copy of the files in a temporary Claude config
folder (``CLAUDE_CONFIG_DIR``; copies, since ccusage's native builds skip symbolic links):
`ctxreplay ingest -q` into a fresh database with ``--jobs 1`` and ``--jobs N``, and again on
the unchanged tree (``--repeat`` runs each, interleaved; medians, best and worst, MB/s), and
the speed-up of the medians. Where `ccusage` is on PATH, each run is paired with a run of
`ccusage daily --json --offline` on the same copy and the median of the paired ratios is
printed (pairing keeps a ratio meaningful on a machine whose load drifts); where it is not
installed, fails or reads no usage, it says so.

    python bench/ingest.py ../shared/logs/entire-cli --jobs 2 [--repeat 5]

``--stages`` instead prints the CPU seconds of a fresh one-process ingest and of its stages, and
the floor they set: the compiled work no Python change removes (hashing, JSON, tokenizer;
writing left out) spread over ``--cores`` (default 2) plus the process start-up, against `ccusage daily`
where it is on PATH.

    python bench/ingest.py ../shared/logs/entire-cli --stages
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

from _corpora import claude_config_copy  # noqa: E402 (this folder, before it leaves the import path)

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


def peak_rss_mb(log: Path, work: Path, extra: tuple[str, ...] = ()) -> tuple[float, float]:
    """(peak RSS in MB, seconds) of `ctxreplay ingest LOG [EXTRA]` into a new database in a fresh process."""
    db = work / f"{log.stem}.duckdb"
    for f in work.glob(db.name + "*"):
        f.unlink()
    cmd = [sys.executable, "-m", "replay.cli", "ingest", str(log), "--db", str(db), "-q", *extra]
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
        for name, extra in (("default --jobs", ()), ("--jobs 1", ("--jobs", "1"))):
            base, _ = peak_rss_mb(small, work, extra)
            print(f"{name}: baseline (one-turn session): peak RSS {base:.0f} MB")
            for label, path in (("session file", big), ("single long line", long)):
                mb = path.stat().st_size / 1e6
                peak, secs = peak_rss_mb(path, work, extra)
                print(f"{name}: {label}: {mb:.0f} MB -> peak RSS {peak:.0f} MB ({peak / mb:.2f}x the file; "
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


def _ccusage(ccusage: str | None, env: dict) -> str | None:
    """Why ``ccusage daily`` cannot be the yardstick here, None when it can."""
    if not ccusage:
        return "not installed here (not on PATH)"
    try:
        out = subprocess.run([ccusage, "daily", "--json", "--offline"], env=env, capture_output=True, text=True,
                             check=True).stdout
        days = len(json.loads(out).get("daily", []))
    except (subprocess.CalledProcessError, ValueError, AttributeError) as e:
        return f"failed ({str(getattr(e, 'stderr', '') or e).strip()[:200]})"
    return None if days else "read no usage from these files"


def parallel(path: Path, jobs: int, repeat: int) -> None:
    """Whole-process `ingest` on a fresh database (``--jobs 1`` and ``--jobs N``) and on the
    unchanged tree, each run paired with a run of `ccusage daily --json --offline` where installed."""
    from replay.ingest.keys import load_or_create_master_key

    with tempfile.TemporaryDirectory(prefix="ctxreplay-bench-") as d:
        work = Path(d)
        logs, projects, cenv = claude_config_copy(path, work)
        mb = sum(f.stat().st_size for f in logs) / 1e6
        print(f"corpus: {path} ({len(logs)} files, {mb:.1f} MB), copied into a Claude config folder; "
              f"{os.cpu_count()} CPUs; {repeat} runs each (interleaved), whole process")
        load_or_create_master_key(work / "key")
        env = {**os.environ, "CTXREPLAY_KEY_FILE": str(work / "key")}
        time.sleep(2.1)  # older than the 2 s within which ingest leaves a file unsigned (replay.store.statsig)
        ccusage = shutil.which("ccusage")
        why_not = _ccusage(ccusage, cenv)
        ingest = [sys.executable, "-m", "replay.cli", "ingest", str(projects.parent), "-q"]
        same = work / "unchanged.duckdb"
        _run([*ingest, "--db", str(same)], env)  # the database the unchanged runs find
        cases = {f"fresh --jobs {n}": (["--jobs", str(n)], work / f"jobs{n}.duckdb") for n in sorted({1, jobs})}
        cases["unchanged tree"] = ([], None)
        secs: dict[str, list[float]] = {k: [] for k in [*cases, "ccusage"]}
        ratios: dict[str, list[float]] = {k: [] for k in cases}
        for _ in range(repeat):  # interleaved and paired, so that a busier moment of the machine hits both alike
            for name, (extra, db) in cases.items():
                a = _run([*ingest, *extra, "--db", str(db or same)], env, fresh=db)[0]
                secs[name].append(a)
                if why_not is None:
                    b = _run([ccusage, "daily", "--json", "--offline"], cenv)[0]
                    secs["ccusage"].append(b)
                    ratios[name].append(a / b)
        for name in cases:
            print(f"ctxreplay ingest, {name}: {_stats(secs[name])}; {mb / statistics.median(secs[name]):.1f} MB/s")
        if jobs > 1:
            speedup = statistics.median(secs["fresh --jobs 1"]) / statistics.median(secs[f"fresh --jobs {jobs}"])
            print(f"--jobs {jobs} speed-up over --jobs 1 (medians): {speedup:.2f}x")
        if why_not is not None:
            print(f"ccusage: {why_not}: no comparison with `ccusage daily`")
            return
        print(f"ccusage daily --json --offline: {_stats(secs['ccusage'])}")
        for name in cases:
            r = ratios[name]
            print(f"ctxreplay ingest, {name}: {statistics.median(r):.2f}x ccusage's time "
                  f"(median of {len(r)} paired ratios; {min(r):.2f}-{max(r):.2f})")


def stages(path: Path, cores: int = 2) -> None:
    """CPU seconds of a fresh one-process ingest of ``path``, and of its stages (a stage's time
    includes the stages it calls: token counting is part of parsing)."""
    import functools

    from replay import store
    from replay.ingest import builder, readlines
    from replay.ingest.readers import source
    from replay.store import load

    spent: dict[str, float] = {}

    def timed(owner, name: str, label: str) -> None:
        f = getattr(owner, name)

        @functools.wraps(f)
        def g(*a, **k):
            t = time.process_time()
            try:
                return f(*a, **k)
            finally:
                spent[label] = spent.get(label, 0.0) + time.process_time() - t

        setattr(owner, name, g)
        spent[label] = 0.0  # printed in this order

    timed(load, "hash_unit", "hash the files")
    timed(load, "parse_unit", "parse (all below but writing)")
    timed(builder, "count_many", "  count tokens (with the tokenizer load)")
    timed(source.orjson, "loads", "  parse JSON")
    timed(readlines, "numbered_lines", "  find numbered lines")
    timed(readlines.LineHasher, "hashes", "  hash numbered lines")
    timed(store, "write_sessions", "write (DuckDB inserts and commits)")
    with tempfile.TemporaryDirectory() as d:
        os.environ["CTXREPLAY_KEY_FILE"] = str(Path(d) / "key")
        t = time.process_time()
        s = load.ingest([path], Path(d) / "b.duckdb")
        total = time.process_time() - t
    print(f"corpus: {path} ({s.files} files, {s.bytes / 1e6:.1f} MB, {s.blocks} blocks); fresh ingest, one process: "
          f"{total:.2f} s of CPU")
    for label, secs in spent.items():
        print(f"{label}: {secs:.2f} s")
    floor(path, spent, cores)


def floor(path: Path, spent: dict[str, float], cores: int) -> None:
    """The least a fresh ingest of this design can take: the work done in compiled code that
    no Python change removes (hash the bytes, parse every line's JSON, load the tokenizer and
    count the block texts), spread perfectly over ``cores``, plus the start-up of the process;
    and that bound against `ccusage daily` when it is on PATH. Writing is left out (its stage
    holds Python too), so the true floor is higher."""
    work = sum(spent[k] for k in spent if k.startswith(("hash the files", "  parse JSON", "  count tokens")))
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import replay.cli.main, replay.store.load, replay.ingest.readers.claude_code"],
                   check=True)
    start = time.perf_counter() - t
    bound = start + work / cores
    print(f"floor: {work:.2f} s of CPU in compiled code (hashing, JSON, tokenizer; writing left out) + {start:.2f} s "
          f"start-up "
          f"-> no fresh ingest of this design beats {bound:.2f} s of wall time on {cores} cores")
    ccusage = shutil.which("ccusage")
    if ccusage is None:
        print("ccusage: not on PATH: no comparison")
        return
    with tempfile.TemporaryDirectory(prefix="ctxreplay-bench-") as d:
        cenv = claude_config_copy(path, Path(d))[2]
        why_not = _ccusage(ccusage, cenv)
        if why_not is not None:
            print(f"ccusage: {why_not}: no comparison")
            return
        secs = [_run([ccusage, "daily", "--json", "--offline"], cenv)[0] for _ in range(5)]
    c = statistics.median(secs)
    print(f"ccusage daily --json --offline: {_stats(secs)} -> the floor is {bound / c:.2f}x ccusage's median time")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--memory", action="store_true", help="measure peak RSS on synthetic large files instead")
    ap.add_argument("--size-mb", type=float, default=196.0)
    ap.add_argument("--line-mb", type=float, default=50.0)
    ap.add_argument("--tmp", type=Path, default=None, help="where the synthetic files are written")
    ap.add_argument("--jobs", type=int, default=0,
                    help="time whole-process `ingest` fresh (--jobs 1, --jobs N) and unchanged, against `ccusage daily` "
                         "where installed, instead")
    ap.add_argument("--stages", action="store_true",
                    help="CPU seconds per stage of a fresh ingest, and the floor they set, instead")
    ap.add_argument("--cores", type=int, default=2, help="cores the --stages floor spreads the compiled work over")
    args = ap.parse_args()
    if args.stages:
        stages(args.path, args.cores)
        return
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
