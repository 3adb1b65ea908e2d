"""Evidence for two cache-model rules, counted on ingested databases.

    python bench/model_evidence.py DB [DB ...]

(for instance the databases `bench/fidelity_cv.py` leaves in /tmp/ctxreplay-fidelity-cv/).

1. Turn-end writes by client version (``turn_end_write``): at each request that opens a user
   turn within 290 s of a response that ended in assistant text, does the recorded read reach
   that text ("T": an unlogged request cached it) or stop at the previous request's prefix
   ("P")? Requests that read less than either (a break) are left out.
2. The TTL edge (``clock``): consecutive requests of a stream with 5-minute writes, where the
   second reads the first's whole prefix (a hit) or less than half of it (a miss), with idle
   gaps of 200-500 s measured four ways; per half of the sessions (``fold_of``), how many pairs
   lie on the wrong side of 300 s.

docs/replay-model.md ("Turn-end writes", "Send clock and the TTL edge") quotes the output.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

WAYS = ("previous send -> next send", "previous response stamp -> next send",
        "previous response's last block -> next send", "previous response stamp -> next response stamp")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="DB: an ingested database, e.g. one bench/fidelity_cv.py leaves in "
                                        "/tmp/ctxreplay-fidelity-cv/")
    ap.add_argument("dbs", nargs="+", type=Path, metavar="DB", help="ingested DuckDB file(s), read only")
    a = ap.parse_args(argv)
    missing = [str(d) for d in a.dbs if not d.is_file()]
    if missing:
        ap.error("no such database: " + ", ".join(missing))
    import duckdb

    from replay.engine.calibration import MAX_LATENCY_MS, base_prefix, send_times, tolerance, turn_ends
    from replay.experiments.fidelity_cv import fold_of
    from replay.model.arrays import KIND_CODE, load_dataset
    from replay.model.cache import CacheConfig

    response = {KIND_CODE[k] for k in ("assistant_text", "thinking", "tool_use")}
    cfg = CacheConfig(clock="send")
    for db in map(str, a.dbs):
        con = duckdb.connect(db, read_only=True)
        ds = load_dataset(con, con.execute("SELECT min(dataset) FROM sessions").fetchone()[0])
        con.close()
        turn = Counter()
        pairs = []
        for s in ds.sessions:
            half = fold_of(s.session_key, 2)
            for st in s.streams:
                snd = send_times(st, cfg)
                for k, (u, t_end) in enumerate(turn_ends(st)):
                    if u < 0 or not st.r_has_usage[k] or not st.r_has_usage[k - 1]:
                        continue
                    if not 0 <= snd[k] - t_end <= 290_000:
                        continue
                    rr = st.r_read[k]
                    prev = st.r_read[k - 1] + st.r_w5[k - 1] + st.r_w1h[k - 1] + st.r_uncached[k - 1]
                    c = "T" if rr + tolerance(rr) >= base_prefix(st, k, u) else \
                        "P" if rr + tolerance(rr) >= prev - 2 * tolerance(rr) else None
                    if c:
                        v = st.r_version[k] or "none"
                        turn[(".".join(v.split(".")[:2]), c)] += 1
                for k in range(1, st.n_requests):
                    if st.r_partition[k] != st.r_partition[k - 1] or not (st.r_has_usage[k] and st.r_has_usage[k - 1]):
                        continue
                    if st.r_w1h[k - 1] > 0:
                        continue
                    prev = st.r_read[k - 1] + st.r_w5[k - 1] + st.r_w1h[k - 1] + st.r_uncached[k - 1]
                    rr = st.r_read[k]
                    hit, miss = rr + tolerance(rr) >= 0.9 * prev, rr < 0.5 * prev
                    if not (hit or miss):
                        continue
                    t_prev = st.r_ts[k - 1]
                    end = t_prev
                    i = st.r_pos[k - 1]
                    while i < st.n_blocks and st.bkind[i] in response:
                        if end < st.ts[i] <= t_prev + MAX_LATENCY_MS:
                            end = st.ts[i]
                        i += 1
                    gaps = (snd[k] - snd[k - 1], snd[k] - t_prev, snd[k] - end, st.r_ts[k] - t_prev)
                    pairs.append((half, hit, [g / 1000 for g in gaps]))
        print(f"## {db}\n\nTurn starts within 290 s of an answer: T (read reaches the answer) / "
              "P (stops at the previous request's prefix), by client version\n")
        print("| version | T | P |\n|---|---|---|")
        for v in sorted({v for v, _ in turn}):
            print(f"| {v} | {turn[(v, 'T')]} | {turn[(v, 'P')]} |")
        print("\nTTL edge: pairs with a 200-500 s idle gap, and those on the wrong side of 300 s\n")
        print("| idle gap measured | half 0 | half 1 |\n|---|---|---|")
        for w, way in enumerate(WAYS):
            cells = []
            for h in (0, 1):
                sel = [(g[w], hit) for half, hit, g in pairs if half == h and 200 <= g[w] <= 500]
                cells.append(f"{len(sel)}, {sum(1 for g, hit in sel if (g > 300) == hit)} wrong")
            print(f"| {way} | " + " | ".join(cells) + " |")
        print()


if __name__ == "__main__":
    main()
