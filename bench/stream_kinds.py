"""How well the no-op replay predicts each kind of stream (main, sidechain, subagent).

    python bench/stream_kinds.py DB [--dataset default]

`ctxreplay validate` reports per session; a session's Task subagents are streams of it, each
with its own cache. This splits the requests whose log records usage by their stream's kind
and prints, per cache-model variant (calibrated, model only), the simulated against the
recorded cache reads and writes and the share of requests whose simulated read matches the
recorded one (within max(256 tokens, 1%), as `validate` counts it).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

# bench/replay.py is named like the package: keep this folder off the import path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]


def by_kind(ds, opts) -> dict[str, dict[str, float]]:
    from replay.experiments.validate import _simulate, read_match

    sim = _simulate(ds, opts)
    acc: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for s in ds.sessions:
        d = sim[s.session_key]["detail"]
        i = 0  # the detail lists run over the session's streams in order
        for st in s.streams:
            a = acc[st.kind]
            for k in range(st.n_requests):
                if st.r_has_usage[k]:
                    a["requests"] += 1
                    a["rec_read"] += st.r_read[k]
                    a["sim_read"] += d["cache_read"][i]
                    a["rec_write"] += st.r_w5[k] + st.r_w1h[k]
                    a["sim_write"] += d["cache_write_5m"][i] + d["cache_write_1h"][i]
                    a["matched"] += read_match(st.r_read[k], d["cache_read"][i]) == 0
                i += 1
    return acc


def _rel(sim: float, rec: float) -> str:
    return "—" if not rec else f"{100 * (sim / rec - 1):+.2f}%"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("db", type=Path)
    ap.add_argument("--dataset", default="default")
    args = ap.parse_args()
    from replay import store
    from replay.engine import ReplayOptions
    from replay.model.arrays import load_dataset

    con = store.connect(args.db, read_only=True)
    ds = load_dataset(con, args.dataset)
    con.close()
    opts = ReplayOptions()
    variants = {"calibrated": opts,
                "model_only": replace(opts, cache=replace(opts.cache, observed_evictions="none"))}
    print("| variant | stream kind | requests | reads | writes | requests matched |")
    print("|---|---|---|---|---|---|")
    for name, o in variants.items():
        for kind, a in sorted(by_kind(ds, o).items()):
            print(f"| {name} | {kind} | {int(a['requests']):,} | {_rel(a['sim_read'], a['rec_read'])} | "
                  f"{_rel(a['sim_write'], a['rec_write'])} | {100 * a['matched'] / a['requests']:.2f}% |")


if __name__ == "__main__":
    main()
