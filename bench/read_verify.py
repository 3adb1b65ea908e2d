"""How often read_range_dedup's unverified (trust) rule points a re-read at different content,
and what the verified rule (the default) hints instead, on the shared corpus.

    python bench/read_verify.py [CORPUS ...] [--logs ../shared/logs] [--out /tmp/ctxreplay-read-verify]

For each corpus folder given (default: `claude-code/` and `entire-cli/` under ``--logs``): ingest into a fresh DuckDB file, replay the
no-op baseline and read_range_dedup with ``verify=lines`` and ``verify=trust`` (calibrated
variant), and print per run: hints, hints verified (byte-identical, or every line identical by
its keyed hash), hints taken on trust, trust hints the line hashes refute, tokens removed at
insert, and the cost saved with its 95% interval (`ctxreplay compare`). Through the CLI, as a
user would run it; the commands are printed as they run. A second table replays the trust rule
as issue 14 shipped it (previews taken for the range they asked for, other streams' writes
unseen) through the Python API, with the same counts.
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
MODES = ("lines", "trust")
CORPORA = ("claude-code", "entire-cli")


def run(*args: str) -> str:
    print("$ ctxreplay " + " ".join(args), file=sys.stderr)
    p = subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(args)}\n{p.stderr}")
    return p.stdout


def figures(db: Path) -> dict[str, dict[str, float]]:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            """SELECT r.params->>'verify', sum(s.hints), sum((s.extra->>'hints_verified')::DOUBLE),
                      sum((s.extra->>'hints_trusted')::DOUBLE), sum((s.extra->>'trust_refuted')::DOUBLE),
                      sum(s.tokens_saved)
               FROM runs r JOIN run_sessions s USING (run_id)
               WHERE r.policy = 'read_range_dedup' AND r.status = 'finished' GROUP BY 1""").fetchall()
    finally:
        con.close()
    cols = ("hints", "verified", "trusted", "refuted", "tokens_saved")
    return {mode: dict(zip(cols, vals)) for mode, *vals in rows}


def savings(db: Path) -> dict[str, str]:
    """verify mode -> the calibrated cost saving with its 95% interval, as `compare` gives it."""
    got = {}
    for r in json.loads(run("compare", "--db", str(db), "--policy", "read_range_dedup", "--json")):
        cost, ci = (r.get("saved_pct") or {}).get("cost"), (r.get("interval") or {}).get("cost")
        if r.get("variant") == "calibrated" and cost is not None and ci:
            got[r["params"].get("verify", "?")] = f"{100 * cost:+.2f}% [{100 * ci['low']:+.2f}%, {100 * ci['high']:+.2f}%]"
    return got


def issue14_rule(db: Path) -> dict[str, int]:
    """The trust rule with the trace's preview marks and other streams' writes hidden."""
    import duckdb

    from replay.engine import ReplayOptions, replay_session
    from replay.model.arrays import load_dataset
    from replay.model.cache import CacheConfig
    from replay.model.costs import PriceTable
    from replay.policies.read_range_dedup import ReadRangeDedup

    con = duckdb.connect(str(db), read_only=True)
    try:
        ds = load_dataset(con, "default")
    finally:
        con.close()
    tot: dict[str, int] = {}
    policy = ReadRangeDedup(ReadRangeDedup.make_params({"verify": "trust"}))
    for s in ds.sessions:
        for st in s.streams:
            st.previews, st.other_writes = frozenset(), []
        figs = replay_session(s, ds.vocab, policy, ReplayOptions(CacheConfig(), PriceTable())).figures
        for k in ("hints", "hints_verified", "hints_trusted", "trust_refuted"):
            tot[k] = tot.get(k, 0) + int(figs.get(k, 0))
    return tot


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", nargs="*", type=Path,
                    help="log folders to ingest (default: " + " and ".join(CORPORA) + " under --logs)")
    ap.add_argument("--logs", type=Path, default=ROOT.parent / "shared" / "logs")
    ap.add_argument("--out", type=Path, default=Path("/tmp/ctxreplay-read-verify"))
    a = ap.parse_args(argv)
    folders = corpus_folders(ap, a.corpus, a.logs, None, CORPORA)
    a.out.mkdir(parents=True, exist_ok=True)
    print("| corpus | verify | hints | verified | on trust | trust refuted | tokens removed | cost saved [95%] |")
    print("|---|---|---|---|---|---|---|---|")
    for corpus, path in folders.items():
        db = a.out / f"{corpus}.duckdb"
        db.unlink(missing_ok=True)
        run("ingest", str(path), "--db", str(db), "--jobs", "2", "-q")
        run("replay", "--db", str(db), "--policy", "noop", "--observed-evictions", "log")
        for mode in MODES:
            run("replay", "--db", str(db), "--policy", "read_range_dedup", "--set", f"verify={mode}",
                "--observed-evictions", "log")
        figs, saved = figures(db), savings(db)
        for mode in MODES:
            f = figs[mode]
            print(f"| {corpus} | {mode} | {f['hints']:.0f} | {f['verified']:.0f} | {f['trusted']:.0f} | "
                  f"{f['refuted']:.0f} | {f['tokens_saved']:,.0f} | {saved.get(mode, '—')} |")
    print("\nThe trust rule as issue 14 shipped it (previews and other streams' writes not seen):\n")
    print("| corpus | hints | verified | on trust | refuted (lines differ) | unverifiable (no lines) |")
    print("|---|---|---|---|---|---|")
    for corpus in folders:
        t = issue14_rule(a.out / f"{corpus}.duckdb")
        print(f"| {corpus} | {t['hints']} | {t['hints_verified']} | {t['hints_trusted']} | {t['trust_refuted']} | "
              f"{t['hints_trusted'] - t['trust_refuted']} |")


if __name__ == "__main__":
    main()
