"""Regenerate the figures docs/results.md and docs/replay-model.md state, on the shared corpus.

    python bench/figures.py [CORPUS ...] [--logs ../shared/logs] [--out /tmp/ctxreplay-figures] [--report]

For each corpus folder given (default: `claude-code/` and `entire-cli/` under ``--logs``): ingest into a fresh DuckDB file, `validate`
(calibrated, model-only, raw BPE: sessions within targets, corpus errors, request match; the
naive predictors beside model only),
then every registered policy at its source's defaults under both cache variants and the
offline-optimal bounds, and print Markdown tables of the savings with their 95% intervals
(`compare`). ``--report`` also writes each corpus's report (``OUT/report-CORPUS/index.html``):
the plots on real logs, where one policy's loss is hundreds of times another's saving.
Everything goes through the CLI, exactly as a user would run it; the commands
are printed as they run. Takes a few minutes on two cores.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

# bench/replay.py is named like the package: keep this folder off the import path
from _corpora import corpus_folders  # noqa: E402 (this folder, before it leaves the import path)

sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "replay.cli"]
SKIP = {"noop", "pipeline"}


def run(*args: str) -> str:
    cmd = [*CLI, *args]
    print("$ ctxreplay " + " ".join(args), file=sys.stderr)
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(args)}\n{p.stderr}")
    return p.stdout


def pct(x) -> str:
    return "—" if x is None else f"{100 * x:+.2f}%"


def fidelity(db: str) -> None:
    rep = json.loads(run("validate", "--db", db, "--json"))
    print("| variant | sessions within targets | reads | writes | cost | requests matched |")
    print("|---|---|---|---|---|---|")
    for name, v in rep["variants"].items():
        e = v["rel_error"]
        print(f"| {name} | {v['sessions_within_targets']} / {v['sessions']} | {pct(e['cache_read'])} | "
              f"{pct(e['cache_write'])} | {pct(e['cost'])} | {100 * v['request_match']:.2f}% |")
    rec = rep["overall"]["recorded"]["cost"]
    print(f"\nrecorded cost ${rec:,.2f}\n")
    # the naive predictors on the same recorded input sizes: how much of model only's match is the model's
    print("| predictor | sessions within targets | reads | writes | cost | requests matched | its misses model only "
          "matches | its matches model only misses | skill |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, v in rep["naive"].items():
        e, c = v["rel_error"], v["vs_model_only"]
        sk = "—" if c["skill"] is None else f"{100 * c['skill']:+.0f}%"
        print(f"| {name} | {v['sessions_within_targets']} / {v['sessions']} | {pct(e['cache_read'])} | "
              f"{pct(e['cache_write'])} | {pct(e['cost'])} | {100 * v['request_match']:.2f}% | "
              f"{c['explained']} of {c['naive_misses']} | {c['new_misses']} | {sk} |")
    print()


def policies(db: str) -> None:
    names = [p["name"] for p in json.loads(run("policies", "--json"))]
    run("replay", "--db", db, "--policy", "noop", "--variants", "both")
    for name in names:
        if name not in SKIP:
            run("replay", "--db", db, "--policy", name, "--variants", "both")
    run("bound", "--db", db, "--json")
    rows = json.loads(run("compare", "--db", db, "--json"))
    rows = rows["runs"] if isinstance(rows, dict) else rows
    seen = set()
    print("| policy | cost saved, calibrated [95%] | model only [95%] | context tokens saved | busts | distinguishable |")
    print("|---|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: -(r.get("saved_pct") or {}).get("cost", 0) if r.get("saved_pct") else 0):
        cc = json.loads(r["cache_config"]) if isinstance(r.get("cache_config"), str) else (r.get("cache_config") or {})
        if r["policy"] == "noop" or cc.get("observed_evictions", "log") != "log" or r["policy"] in seen:
            continue
        seen.add(r["policy"])
        s, iv = r.get("saved_pct") or {}, (r.get("interval") or {}).get("cost") or {}
        mo = (r.get("variants") or {}).get("model_only") or {}
        mo_s, mo_iv = (mo.get("saved_pct") or {}).get("cost"), (mo.get("interval") or {}).get("cost") or {}
        mo_txt = f"{pct(mo_s)} [{pct(mo_iv.get('low'))}, {pct(mo_iv.get('high'))}]" if mo_s is not None else "—"
        print(f"| {r['policy']} | {pct(s.get('cost'))} [{pct(iv.get('low'))}, {pct(iv.get('high'))}] | {mo_txt} | "
              f"{pct(s.get('context_tokens'))} | {int(r['figures']['busts'] or 0):,} | "
              f"{'yes' if (r.get('distinguishable') or {}).get('cost') else 'no'} |")
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", type=Path, metavar="CORPUS", help="log folders (default: --corpus)")
    ap.add_argument("--logs", type=Path, default=ROOT.parent / "shared" / "logs")
    ap.add_argument("--out", type=Path, default=Path("/tmp/ctxreplay-figures"))
    ap.add_argument("--corpus", action="append",
                    help="a folder of --logs: claude-code, entire-cli (default: both, unless CORPUS folders are given)")
    ap.add_argument("--report", action="store_true", help="also write `ctxreplay report` to OUT/report-CORPUS/")
    a = ap.parse_args()
    folders = corpus_folders(ap, a.paths, a.logs, a.corpus, ("claude-code", "entire-cli"))
    a.out.mkdir(parents=True, exist_ok=True)
    key = a.out / "key"
    for corpus, path in folders.items():
        db = a.out / f"{corpus}.duckdb"
        db.unlink(missing_ok=True)
        if not key.exists():
            from replay.ingest.keys import load_or_create_master_key

            load_or_create_master_key(key)
        run("ingest", str(path), "--db", str(db), "--key-file", str(key), "-q")
        print(f"## {corpus}\n")
        fidelity(str(db))
        policies(str(db))
        if a.report:
            run("report", "--db", str(db), "--out", str(a.out / f"report-{corpus}"))
            print(f"report: {a.out / f'report-{corpus}' / 'index.html'}\n")


if __name__ == "__main__":
    main()
