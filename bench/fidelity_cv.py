"""Held-fold fidelity of the predictive (model-only) replay, rule by rule.

    python bench/fidelity_cv.py [CORPUS ...] [--logs ../shared/logs] [--corpus entire-cli] [--k 2] [--split time] [--json]

For each corpus folder given (default: `claude-code/` and `entire-cli/` under ``--logs``, or the
``--corpus`` folders of it): ingest into a fresh DuckDB file
with a key derived from `--seed` (so the folds, a hash of the keyed session ids, are the same
on every run), split the sessions into `--k` folds, replay model-only with the default cache
configuration and with each client rule switched (replay/experiments/fidelity_cv.py), and
print per fold: sessions within targets, requests matched, model-only cost error; then each
rule's verdict per fold ("helps" / "hurts" / "same") and whether it is earned (helps on some
fold, hurts on none). The system prefix rule that takes figures from other sessions is also
scored derived on the other folds only ("dataset (held)"). Takes about a minute per corpus.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

from _corpora import corpus_folders  # noqa: E402 (this folder, before it leaves the import path)

sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", type=Path, metavar="CORPUS", help="log folders (default: --corpus)")
    ap.add_argument("--logs", type=Path, default=ROOT.parent / "shared" / "logs")
    ap.add_argument("--out", type=Path, default=Path("/tmp/ctxreplay-fidelity-cv"))
    ap.add_argument("--corpus", action="append",
                    help="a folder of --logs (default: claude-code, entire-cli, unless CORPUS folders are given)")
    ap.add_argument("--k", type=int, default=2, help="folds (default 2: halves)")
    ap.add_argument("--split", choices=("fold", "time", "version"), default="fold",
                    help="fold: k hashed folds; time / version: derive on the earlier 70%% of the sessions by "
                         "start time / newest client version, judge on the later 30%% (with the naive "
                         "predictors beside the default)")
    ap.add_argument("--train", type=float, default=0.7, help="the earlier share with --split time/version")
    ap.add_argument("--seed", default="ctxreplay-fidelity-cv", help="derives the ingest key, hence the folds")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    a = ap.parse_args()
    folders = corpus_folders(ap, a.paths, a.logs, a.corpus, ("claude-code", "entire-cli"))

    import duckdb

    from replay.engine import ReplayOptions
    from replay.experiments.fidelity_cv import cross_validate, markdown
    from replay.model.cache import CacheConfig
    from replay.model.costs import PriceTable

    a.out.mkdir(parents=True, exist_ok=True)
    key = a.out / "key"
    key.write_text(hashlib.blake2b(a.seed.encode(), digest_size=32).hexdigest() + "\n")
    key.chmod(0o600)
    results = {}
    for corpus, path in folders.items():
        db = a.out / f"{corpus}.duckdb"
        db.unlink(missing_ok=True)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "replay.cli", "ingest", str(path), "--db", str(db),
                        "--key-file", str(key), "-q"], check=True, cwd=ROOT, stdout=sys.stderr)
        con = duckdb.connect(str(db), read_only=True)
        ds = con.execute("SELECT min(dataset) FROM sessions").fetchone()[0]
        res = cross_validate(con, ds, ReplayOptions(cache=CacheConfig(), prices=PriceTable()), k=a.k,
                             split=a.split, train=a.train,
                             progress=lambda name, n: print(f"  {corpus}: {name}", file=sys.stderr))
        con.close()
        res["seconds"] = round(time.perf_counter() - t0, 1)
        results[corpus] = res
        if not a.json:
            print(f"## {corpus} ({res['sessions']} sessions, k = {a.k}, {res['seconds']} s)\n")
            print("Each cell: sessions within targets, requests matched, model-only cost error "
                  "(sessions' cost errors summed without cancelling).\n")
            print(markdown(res))
            print()
    if a.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
