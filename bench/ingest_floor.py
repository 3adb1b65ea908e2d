"""The fastest fresh `ingest --jobs N` this design allows: the real ingest with the readers' Python taken out.

Every file is first read by the real readers (not timed) and what they compute is kept: each
unit's trace, the block texts the tokenizer counts, the texts and bytes given a content hash and
the numbered lines given a line hash. Then, timed, the real `replay.store.load.ingest` runs on a
fresh database (the early reader, the forked workers, the tokenizer load, the writer, its
batches and commits, all as they are), except that a unit's parse is replaced by only the work
done in compiled code that the design asks for:

* hash the file (as `hash_unit` does, already outside the parse);
* parse every line with orjson, and re-serialize it (the duplicate-key check);
* the content hashes, the line hashes and the token counts of what the real reader computed;
* the trace check (`check_trace`), and the trace sent back to the writer.

So the time is what an ingest would take if the readers' own Python (record dispatch, dict
lookups, the builder's bookkeeping) cost nothing; the process start-up (imports before the
ingest starts) is measured apart and added. With `ccusage` on PATH each run is paired with a
run of `ccusage daily --json --offline` on a copy of the same files.

    python bench/ingest_floor.py [PATH] [--jobs 2] [--repeat 5]

It answers "how close to ccusage can this ingest get by making the readers faster?": whatever
this prints is a floor for any rewrite of the readers that keeps what is stored.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when a test loads this file by its path
from _corpora import claude_config_copy  # noqa: E402 (this folder, before it leaves the import path)

sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT = ROOT.parent / "shared" / "logs" / "entire-cli"
_PREP: dict = {}  # unit's main path -> what the real reader computed (inherited by forked workers)


def prepare(path: Path, keys) -> None:
    """Read every unit with the real readers, token counting deferred, keeping what they computed."""
    from replay.ingest import readlines, tokens
    from replay.ingest.keys import Keyring
    from replay.store import discovery, readunit

    units = discovery.discover([path], [])
    seen: dict[str, list] = {"text": [], "bytes": [], "lines": []}
    text_hash_size, content_hash, hashes = Keyring.text_hash_size, Keyring.content_hash, readlines.LineHasher.hashes

    def t(self, text, *a, **k):
        seen["text"].append(text)
        return text_hash_size(self, text, *a, **k)

    def b(self, data):
        seen["bytes"].append(data)
        return content_hash(self, data)

    def lines(self, ls):
        seen["lines"].append(list(ls))
        return hashes(self, ls)

    Keyring.text_hash_size, Keyring.content_hash, readlines.LineHasher.hashes = t, b, lines
    tokens.DEFER = True
    try:
        for unit in units:
            for v in seen.values():
                v.clear()
            sizes = readunit.hash_unit(unit, keys)[2]
            parsed = readunit.parse_unit(unit, keys, "default", keys.short("file", str(unit.main), 16), sizes)
            _PREP[unit.main] = (parsed, list(seen["text"]), list(seen["bytes"]), list(seen["lines"]))
    finally:
        Keyring.text_hash_size, Keyring.content_hash, readlines.LineHasher.hashes = text_hash_size, content_hash, hashes
        tokens.DEFER = False
        for cache in (readlines.LineHasher._caches, readlines.LineHasher._chars, readlines.LineHasher._reads,
                      readlines.LineHasher._reads_lines):
            cache.clear()  # the timed ingest hashes its lines as a new process does, not from this read's cache


def compiled_only(unit, keys, dataset, file_key, sizes):
    """A unit's parse reduced to its compiled work (see the module's docstring); the trace the real reader built."""
    import copy

    import orjson

    from replay.ingest import tokens
    from replay.ingest.builder import count_uncounted
    from replay.ingest.readers.source import open_log
    from replay.ingest.readlines import LineHasher
    from replay.store.readunit import _checked

    parsed, texts, blobs, line_lists = _PREP[unit.main]
    for p in [unit.main, *sorted(unit.subagents)]:
        with open_log(p) as fh:
            data = fh.read()
        for line in data.split(b"\n"):
            if line:
                try:
                    v = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if len(line) > len(orjson.dumps(v)):  # the duplicate-key check's first test
                    pass
        del data
    for text in texts:
        keys.text_hash_size(text)
    for blob in blobs:
        keys.content_hash(blob)
    hasher = LineHasher(keys)  # its per-process cache as in the real read: a line is hashed once
    for ls in line_lists:
        hasher.hashes(ls)
    parsed = copy.copy(parsed)
    if parsed.trace is not None:
        parsed.trace = copy.copy(parsed.trace)
        parsed.trace.blocks = dict(parsed.trace.blocks)
        if not tokens.DEFER:  # as the real parse: counted where the tokenizer is loaded, then checked
            count_uncounted(parsed.trace)
            parsed = _checked(unit, parsed)
    return parsed


def _startup() -> float:
    """Seconds from a process's start to its ingest's start: the interpreter and `ctxreplay ingest`'s imports."""
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import replay.cli.main, replay.store.load, replay.ingest.readers.claude_code"],
                   check=True, cwd=ROOT)
    return time.perf_counter() - t


def reduced_ingest(path: Path, db: Path, keys_master: bytes, jobs: int):
    """The real ingest of ``path`` into ``db`` with each unit's parse reduced to its compiled work
    (after `prepare`): the rows stored are the real ingest's."""
    from replay.store import load, load_parallel

    real = load_parallel.parse_unit, load.parse_unit
    load_parallel.parse_unit = load.parse_unit = compiled_only
    try:
        return load.ingest([path], db, master_key=keys_master, jobs=jobs)
    finally:
        load_parallel.parse_unit, load.parse_unit = real


def run_floor(path: Path, jobs: int, keys_master: bytes, reduced: bool = True) -> tuple[float, float]:
    """(wall, CPU) seconds of one real ingest into a fresh database, in a process forked for it (so
    that each run loads the tokenizer, as a new process does), with the parse reduced to its
    compiled work (``reduced``; else as it is); the CPU is that process's and its workers'."""
    from replay.store import load

    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        pid = os.fork()
        if pid == 0:  # the child: one ingest, then out without running the parent's clean-ups
            code = 1
            try:
                if reduced:
                    reduced_ingest(path, Path(d) / "f.duckdb", keys_master, jobs)
                else:
                    load.ingest([path], Path(d) / "f.duckdb", master_key=keys_master, jobs=jobs)
                code = 0
            finally:
                os._exit(code)
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - t
    if status != 0:
        raise SystemExit(f"the ingest failed (wait status {status})")
    kind = "reduced" if reduced else "as it is"
    print(f"  {kind}: {wall:.2f} s wall, {usage.ru_utime:.2f} s user, {usage.ru_stime:.2f} s system")
    return wall, usage.ru_utime + usage.ru_stime


def ccusage_seconds(path: Path) -> float | None:
    ccusage = shutil.which("ccusage")
    if ccusage is None:
        return None
    with tempfile.TemporaryDirectory(prefix="ctxreplay-floor-") as d:
        env = claude_config_copy(path, Path(d))[2]
        t = time.perf_counter()
        r = subprocess.run([ccusage, "daily", "--json", "--offline"], env=env, capture_output=True)
        return time.perf_counter() - t if r.returncode == 0 else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", nargs="?", type=Path, default=DEFAULT, help="log tree (default: the shared entire-cli corpus)")
    ap.add_argument("--jobs", type=int, default=2, help="ingest --jobs (default 2)")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs, each paired with a ccusage run (default 5)")
    args = ap.parse_args()
    if not args.path.exists():
        ap.error(f"{args.path}: no such file or folder")
    from replay.ingest.keys import Keyring

    master = os.urandom(32)
    keys = Keyring.for_dataset(master, "default")
    t = time.process_time()
    prepare(args.path, keys)
    print(f"corpus: {args.path} ({len(_PREP)} units); read by the real readers first in {time.process_time() - t:.2f} s "
          "of CPU (not timed)")
    import gc

    gc.freeze()  # what was kept is never scanned by the collector during the timed runs (an ingest has none of it)
    start = statistics.median(_startup() for _ in range(3))
    floors, ratios, cpus, whole, whole_cpu = [], [], [], [], []
    for _ in range(args.repeat):  # interleaved: the real ingest, then the reduced one
        wall, cpu = run_floor(args.path, args.jobs, master, reduced=False)
        whole.append(start + wall)
        whole_cpu.append(cpu)
        wall, cpu = run_floor(args.path, args.jobs, master)
        f = start + wall
        floors.append(f)
        cpus.append(cpu)
        c = ccusage_seconds(args.path)
        if c is not None:
            ratios.append((whole[-1] / c, f / c))
    print(f"start-up (interpreter and imports): {start:.2f} s")
    print(f"fresh ingest --jobs {args.jobs} as it is, with start-up: median {statistics.median(whole):.2f} s "
          f"(best {min(whole):.2f}, worst {max(whole):.2f}); {statistics.median(whole_cpu):.2f} s of CPU in the ingest")
    print(f"fresh ingest --jobs {args.jobs} without the readers' Python, with start-up: median {statistics.median(floors):.2f} s "
          f"(best {min(floors):.2f}, worst {max(floors):.2f}); {statistics.median(cpus):.2f} s of CPU in the ingest "
          "(all its processes, start-up left out)")
    if ratios:
        for label, rs in (("as it is", [r[0] for r in ratios]), ("without the readers' Python", [r[1] for r in ratios])):
            print(f"  {label}: {statistics.median(rs):.2f}x ccusage daily's time (median of {len(rs)} paired ratios; "
                  f"{min(rs):.2f}-{max(rs):.2f})")
    else:
        print("ccusage: not on PATH (or it failed): no comparison")


if __name__ == "__main__":
    main()
