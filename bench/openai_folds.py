"""Held-fold check of the OpenAI cache rules (`CacheConfig.openai_*`) on Codex logs.

    ctxreplay ingest ../shared/logs/codex --db /tmp/codex.duckdb
    python bench/openai_folds.py --db /tmp/codex.duckdb

Splits the sessions into two halves by a
hash of the session id (SHA-256, even / odd first byte), and validates with each OpenAI rule
on and off (every other rule at its default). For each rule it prints, per half and over all
sessions, the model-only cost error and the share of requests whose read matches; then the
same per session (leave one session out: the rules have no fitted parameter, so the held-out
session's figures with and without the rule are the check). A rule earns its default when it
helps both halves. It also counts, per half, the cached-token counts on the grid the
``openai_increments = "observed"`` rule assumes (384 + a multiple of 512 for GPT-5.5).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from dataclasses import replace
from pathlib import Path

# bench/replay.py is named like the package: keep this folder off the import path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import duckdb  # noqa: E402

from replay.engine.loop import ReplayOptions  # noqa: E402
from replay.experiments.validate import validate  # noqa: E402
from replay.model.cache import GPT55_BASE, GPT55_STEP  # noqa: E402

RULES = {
    "openai_increments": ("observed", "documented"),
    "openai_reasoning": ("turn", "keep"),
    "openai_retention": ("1h", "10m"),
    "openai_second_request": ("system_only", "model"),
}


def half(session_id: str) -> str:
    return "A" if hashlib.sha256(session_id.encode()).digest()[0] % 2 == 0 else "B"


def _fold_figures(report: dict, keys: set[str], variant: str) -> tuple[float, float, int]:
    rec = sim = 0.0
    matched = n = 0
    for s in report["sessions"]:
        if s["session_id"] not in keys:
            continue
        v = s["variants"][variant]
        rel = v["rel_error"]["cost"] or 0.0
        rec += s["recorded"]["cost"]
        sim += s["recorded"]["cost"] * (1 + rel)
        matched += v.get("matched", 0)
        n += v.get("requests", 0)
    return (sim / rec - 1 if rec else 0.0), (matched / n if n else 0.0), n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True, help="a database holding the Codex logs (ctxreplay ingest)")
    ap.add_argument("--dataset", default="default", help="the dataset to check")
    args = ap.parse_args(argv)
    con = duckdb.connect(args.db, read_only=True)
    if True:
        base = ReplayOptions()
        reports = {"defaults": validate(con, args.dataset, base)}
        for name, (on, off) in RULES.items():
            reports[f"{name}={off}"] = validate(con, args.dataset, replace(base, cache=replace(base.cache, **{name: off})))
        sessions = [s["session_id"] for s in reports["defaults"]["sessions"] if s["variants"]["model_only"].get("requests")]
        folds = {"A": {s for s in sessions if half(s) == "A"}, "B": {s for s in sessions if half(s) == "B"},
                 "all": set(sessions)}
        print(f"sessions: A {len(folds['A'])}, B {len(folds['B'])}")
        for variant in ("model_only", "calibrated"):
            print(f"\n{variant}: cost error / requests matched")
            print(f"{'configuration':38s}" + "".join(f"{f:>22s}" for f in folds))
            for name, rep in reports.items():
                cells = []
                for keys in folds.values():
                    c, m, _ = _fold_figures(rep, keys, variant)
                    cells.append(f"{c * 100:+7.2f}% / {m * 100:6.2f}%")
                print(f"{name:38s}" + "".join(f"{x:>22s}" for x in cells))
        print("\nleave one session out (model only): cost error / matched, defaults vs the rule off")
        for sid in sessions:
            row = [f"{sid[:12]} ({half(sid)})"]
            for name, rep in reports.items():
                c, m, _ = _fold_figures(rep, {sid}, "model_only")
                row.append(f"{name.split('=')[0].replace('openai_', '')}: {c * 100:+.1f}%/{m * 100:.1f}%")
            print("  " + "; ".join(row))
        rows = con.execute(
            "SELECT r.session_key, count(*), "
            f"count(*) FILTER (WHERE r.cache_read % {GPT55_STEP} = {GPT55_BASE}) "
            "FROM requests r JOIN sessions s USING (session_key) "
            "WHERE s.dataset = ? AND r.cache_read > 0 AND lower(r.model) LIKE 'gpt-5.5%' GROUP BY 1",
            [args.dataset]).fetchall()
        print(f"\nGPT-5.5 cached counts on 384 + a multiple of 512:")
        for f in ("A", "B"):
            n = sum(r[1] for r in rows if half(r[0]) == f)
            on = sum(r[2] for r in rows if half(r[0]) == f)
            print(f"  half {f}: {on} of {n}")
    con.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
