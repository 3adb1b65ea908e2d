"""Throughput and peak memory of `anonymize` on one large session and one huge record.

Builds two synthetic inputs under a temporary folder (never from real logs):

* a large session: the main session files of a `ctxreplay generate` corpus, repeated until
  the file reaches ``--session-mb`` (each repeat with its texts made distinct, so fillers are
  not simply re-used from a cache);
* a single-line record: one tool result of ``--line-mb`` of generated code-like text.

Each is anonymized in a fresh subprocess, which reports its peak RSS (``VmHWM``) and its
RSS after imports and tokenizer warm-up (the baseline every run pays), then prints MB/s and
the peak as a multiple of the input size.

    python bench/anonymize.py [--session-mb 196] [--line-mb 50] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

# bench/replay.py is named like the package: keep this folder off the import path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

ROOT = Path(__file__).resolve().parents[1]

_CHILD = r"""
import json, sys, time
def rss_mb(field="VmRSS"):
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forked parent
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
from replay.ingest.keys import Keyring
from replay.ingest.tokens import count_many
from replay.privacy.anonymize import anonymize_tree
from replay.privacy.vocabulary import filler_vocabulary
count_many(["warm up the tokenizer"]); filler_vocabulary()
base = rss_mb()
t = time.perf_counter()
s = anonymize_tree(sys.argv[1], sys.argv[2], Keyring(b"b" * 32))
dt = time.perf_counter() - t
peak = rss_mb("VmHWM")
print(json.dumps({"seconds": dt, "peak_mb": peak, "base_mb": base, "bytes_in": s.bytes_in,
                  "bytes_out": s.bytes_out, "records": s.records, "failed": s.failed}))
"""


def _session_file(tmp: Path, target_mb: float) -> Path:
    """One JSONL session of about ``target_mb`` MB made of repeated synthetic sessions."""
    from replay.synth.generate import generate_corpus

    corpus = tmp / "corpus"
    g = generate_corpus(corpus, sessions=8, seed=7)
    mains = [p for p in g.files if "subagents" not in p.parts]
    base = b"".join(p.read_bytes() for p in mains)
    out = tmp / "big" / "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9.jsonl"
    out.parent.mkdir(parents=True)
    target = int(target_mb * 1e6)
    written, r = 0, 0
    with open(out, "wb") as f:
        while written < target:
            # distinct texts per repeat: a marker after common words inside strings
            chunk = base if r == 0 else base.replace(b" the ", b" the%d " % r).replace(b" a ", b" a%d " % r)
            if written + len(chunk) > target:
                chunk = chunk[:chunk.rfind(b"\n", 0, target - written) + 1]
                if not chunk:
                    break
            f.write(chunk)
            written += len(chunk)
            r += 1
    return out


def _line_file(tmp: Path, target_mb: float) -> Path:
    """One record on one line: a tool result of ``target_mb`` MB of code-like text."""
    rng = random.Random(11)
    words = ["value", "result", "index", "parse", "buffer", "config", "return", "self", "item", "count",
             "error", "token", "path", "stream", "record", "(", ")", "=", ":", ",", "+", "if", "for", "in"]
    lines, size, n = [], 0, 0
    target = int(target_mb * 1e6)
    while size < target - 200:
        n += 1
        line = f"{n:>7}\t" + "    " * rng.randrange(4) + " ".join(rng.choice(words) for _ in range(rng.randrange(3, 14)))
        lines.append(line)
        size += len(line) + 2  # the newline is escaped as two bytes in JSON
    rec = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/home/bench/proj",
           "sessionId": "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", "version": "2.1.50", "gitBranch": "main",
           "type": "user", "uuid": "2b3c4d5e-6f70-4b8c-9d0e-1f2a3b4c5d6e", "timestamp": "2026-01-01T10:00:00.000Z",
           "message": {"role": "user", "content": [{"tool_use_id": "toolu_01AbCdEfGhIjKlMnOpQrStUv",
                                                    "type": "tool_result", "content": "\n".join(lines)}]}}
    out = tmp / "line" / "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d.jsonl"
    out.parent.mkdir(parents=True)
    out.write_text(json.dumps(rec) + "\n")
    return out


def _measure(path: Path, tmp: Path) -> dict:
    dst = tmp / ("out-" + path.parent.name)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(dst)], capture_output=True, text=True,
                         env=env, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--session-mb", type=float, default=196)
    ap.add_argument("--line-mb", type=float, default=50)
    ap.add_argument("--keep", type=Path, help="build the inputs here and keep them (default: a temporary folder)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ctxreplay-bench-") as d:
        tmp = args.keep or Path(d)
        tmp.mkdir(parents=True, exist_ok=True)
        for label, make, mb in (("session", _session_file, args.session_mb), ("single line", _line_file, args.line_mb)):
            path = make(tmp, mb)
            size = path.stat().st_size / 1e6
            r = _measure(path, tmp)
            assert not r["failed"], r["failed"]
            extra = r["peak_mb"] - r["base_mb"]
            print(f"{label}: {size:.1f} MB, {r['records']:,} records -> {r['bytes_out'] / 1e6:.1f} MB in "
                  f"{r['seconds']:.1f} s ({size / r['seconds']:.1f} MB/s); peak RSS {r['peak_mb']:.0f} MB "
                  f"= {r['peak_mb'] / size:.2f}x the file (baseline after imports {r['base_mb']:.0f} MB, "
                  f"+{extra:.0f} MB = {extra / size:.2f}x)")


if __name__ == "__main__":
    main()
