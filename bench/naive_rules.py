"""Which model rules earn the model-only variant's skill over the naive "TTL only" predictor.

    python bench/naive_rules.py DB [--dataset NAME]

Starting from `validate`'s "TTL only" predictor (the model-only variant with every rule that
breaks or writes the cache switched off, `replay.experiments.validate.naive_config`), each
rule is switched back on alone, at the model's default; then all together (the model-only
variant). Per row: sessions within targets, corpus cost and write errors, requests matched,
and against "TTL only": its misses the row matches, its matches the row misses, the skill.
The "never breaks" row is the TTL switched off too.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

# bench/replay.py is named like the package: keep this folder off the import path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

RULES = ("turn_end_write", "thinking_switch", "resume", "task_turns", "skill_turns")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("db", type=Path)
    ap.add_argument("--dataset", default="default")
    a = ap.parse_args()
    from replay import store
    from replay.engine import ReplayOptions
    from replay.experiments.validate import (
        _per_session, _simulate, _variant_summary, naive_config, recorded_cost, skill_counts)
    from replay.model.arrays import load_dataset

    con = store.connect(a.db, read_only=True)
    ds = load_dataset(con, a.dataset)
    opts = ReplayOptions()
    recorded = recorded_cost(ds, None, opts.prices)["per_session"]
    keys = sorted(k for k, r in recorded.items() if r["requests_with_usage"])
    model = replace(opts.cache, observed_evictions="none")
    base = naive_config(opts.cache, "ttl_only")
    rows = [("TTL only", base), ("never breaks", naive_config(opts.cache, "never_breaks"))]
    rows += [(f"TTL only + {r}", replace(base, **{r: getattr(model, r)})) for r in RULES]
    rows.append(("model only (all rules)", model))
    sims = {name: _simulate(ds, replace(opts, cache=cfg)) for name, cfg in rows}
    ref = [x for k in keys for x in sims["TTL only"][k]["signs"]]
    print(f"{a.db.name}: {len(keys)} sessions with usage\n")
    print("| predictor | sessions within targets | cost | writes | requests matched | TTL only's misses it "
          "matches | TTL only's matches it misses | skill over TTL only |")
    print("|---|---|---|---|---|---|---|---|")
    for name, _ in rows:
        sim = sims[name]
        sessions = [{"session_id": k, "v": {name: _per_session(sim, k, recorded[k])}} for k in keys]
        v = _variant_summary(recorded, sim, sessions, set(keys), name, "v")
        c = skill_counts(ref, [x for k in keys for x in sim[k]["signs"]])
        e = v["rel_error"]
        sk = "—" if c["skill"] is None else f"{100 * c['skill']:+.0f}%"
        print(f"| {name} | {v['sessions_within_targets']} / {v['sessions']} | {100 * e['cost']:+.2f}% | "
              f"{100 * e['cache_write']:+.2f}% | {100 * v['request_match']:.2f}% ({v['requests'] - v['matched']} "
              f"missed) | {c['explained']} | {c['new_misses']} | "
              f"{sk} |")


if __name__ == "__main__":
    main()
