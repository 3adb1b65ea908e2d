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
from bisect import bisect_right
from dataclasses import replace
from pathlib import Path

# bench/replay.py is named like the package: keep this folder off the import path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

RULES = {
    "openai_increments": ("observed", "documented"),
    "openai_reasoning": ("turn", "keep"),
    "openai_retention": ("1h", "10m"),
    "openai_second_request": ("system_only", "model"),
    "openai_warm_prefix": ("kept", "ttl"),
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


def _reads(report: dict, keys: set[str]) -> tuple[float, float]:
    """(recorded, model-only simulated) cache reads of the sessions ``keys``."""
    rec = sim = 0.0
    for s in report["sessions"]:
        if s["session_id"] in keys:
            rec += s["recorded"]["cache_read"]
            sim += s["recorded"]["cache_read"] * (1 + (s["variants"]["model_only"]["rel_error"]["cache_read"] or 0.0))
    return rec, sim


def _fit_rate(off: dict, half_on: dict, keys: set[str]) -> float:
    """The routing-miss rate at which the model-only reads of ``keys`` equal the recorded ones
    (the reads are linear in the rate: measured at 0 and at 0.5)."""
    rec, s0 = _reads(off, keys)
    _, s1 = _reads(half_on, keys)
    slope = (s0 - s1) / 0.5
    return min(max((s0 - rec) / slope, 0.0), 0.5) if slope > 0 else 0.0


def _log_counts(con, dataset: str) -> None:
    """Per half: how the second request and the requests after an idle gap read, against the
    model-only replay with every rule at its default."""
    from replay.engine.calibration import openai_reasoning_cuts, send_times
    from replay.engine.loop import ReplayOptions
    from replay.experiments.validate import _simulate, read_match
    from replay.model.arrays import load_dataset
    from replay.model.cache import CacheConfig

    ds = load_dataset(con, dataset)
    cfg = CacheConfig(observed_evictions="none")
    sim = _simulate(ds, ReplayOptions(cfg))
    buckets = (("< 10 min", 0, 600_000), ("10-60 min", 600_000, 3_600_000), ("> 60 min", 3_600_000, 1 << 62))
    second = {"A": [0, 0], "B": [0, 0]}
    turns = {"A": [0, 0, 0], "B": [0, 0, 0]}
    busiest = 0
    sim_keep = _simulate(ds, ReplayOptions(replace(cfg, openai_reasoning="keep")))
    gaps = {(f, b[0]): [0, 0, 0, 0] for f in ("A", "B") for b in buckets}
    for sess in ds.sessions:
        f = half(sess.session_key)
        detail = sim[sess.session_key]["detail"]
        row = 0
        for st in sess.streams:
            base_row, row = row, row + st.n_requests
            idx = [k for k in range(st.n_requests) if st.r_has_usage[k]]
            if len(idx) < 2 or not ds.vocab.models[st.r_model[idx[0]]].lower().startswith("gpt"):
                continue
            times = sorted(st.r_ts[k] for k in idx)
            busiest = max(busiest, max(bisect_right(times, t + 60_000) - i for i, t in enumerate(times)))
            first_prompt = st.r_read[idx[0]] + st.r_uncached[idx[0]]
            second[f][0] += 1
            second[f][1] += st.r_read[idx[1]] < 0.5 * first_prompt
            send = send_times(st, cfg)
            cuts = openai_reasoning_cuts(st, cfg, [True] * len(ds.vocab.models))
            kept = sim_keep[sess.session_key]["detail"]["cache_read"]
            for k in idx[1:]:
                if cuts[k] >= 0:
                    t = turns[f]
                    t[0] += 1
                    t[1] += read_match(st.r_read[k], detail["cache_read"][base_row + k]) == 0
                    t[2] += read_match(st.r_read[k], kept[base_row + k]) == 0
            for i in range(2, len(idx)):
                k, j = idx[i], idx[i - 1]
                if st.r_partition[k] != st.r_partition[j]:
                    continue
                gap = send[k] - st.r_ts[j]
                predicted = detail["cache_read"][base_row + k]
                for name, lo, hi in buckets:
                    if lo <= gap < hi:
                        g = gaps[(f, name)]
                        g[0] += 1
                        g[1] += predicted > st.r_read[idx[0]] + 256  # the model reads past the warm prefix
                        g[2] += read_match(st.r_read[k], predicted) == 0
                        g[3] += st.r_read[k] > st.r_read[idx[0]] + 256  # the log reads past it
    print(f"\nthe most requests of one stream within 60 s: {busiest}")
    print("second requests reading less than half the first request's prompt:",
          ", ".join(f"half {f}: {v[1]} of {v[0]}" for f, v in second.items()))
    print("requests opening a user turn after a turn with reasoning: how many, read matched with openai_reasoning "
          "turn, with keep:", ", ".join(f"half {f}: {v[0]} / {v[1]} / {v[2]}" for f, v in turns.items()))
    print("requests (third on) by idle gap since the previous response: how many, the model reads past the warm "
          "prefix at, its read matches, the log reads past the warm prefix at:")
    for name, _, _ in buckets:
        print(f"  {name:10s} " + ", ".join("half " + x + ": " + " / ".join(str(v) for v in gaps[(x, name)])
                                           for x in ("A", "B")))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True, help="a database holding the Codex logs (ctxreplay ingest)")
    ap.add_argument("--dataset", default="default", help="the dataset to check")
    args = ap.parse_args(argv)
    import duckdb

    from replay.engine.loop import ReplayOptions
    from replay.experiments.validate import validate
    from replay.model.cache import GPT55_BASE, GPT55_STEP

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
        print("\nopenai_routing_miss (expected share of the read beyond the warm prefix lost to routing),"
              "\nfitted so that the fitting sessions' model-only reads equal their recorded reads; "
              "model only, cost error / matched:")
        fits = {f"{a}->{b}": (folds[a], folds[b]) for a, b in (("A", "B"), ("B", "A"))}
        fits.update({f"others->{sid[:12]}": (set(sessions) - {sid}, {sid}) for sid in sessions})
        off = reports["defaults"]
        half_on = validate(con, args.dataset, replace(base, cache=replace(base.cache, openai_routing_miss=0.5)))
        for name, (fit, held) in fits.items():
            rate = _fit_rate(off, half_on, fit)
            rep = validate(con, args.dataset, replace(base, cache=replace(base.cache, openai_routing_miss=rate)))
            c0, m0, _ = _fold_figures(off, held, "model_only")
            c1, m1, _ = _fold_figures(rep, held, "model_only")
            print(f"  {name:24s} rate {rate:.4f}: off {c0 * 100:+6.2f}% / {m0 * 100:6.2f}%   "
                  f"on {c1 * 100:+6.2f}% / {m1 * 100:6.2f}%")
        _log_counts(con, args.dataset)
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
