"""`ctxreplay bound`: the offline-optimal bounds (insert-time and lossless), stored as runs."""

from __future__ import annotations

import click
from rich.table import Table

from replay.cli.common import (
    DB_OPTION, cache_options, dataset_option, echo_json, esc, fail_on, format_option, json_option, make_options,
    open_db, out, pick_dataset, print_table, key_file_option
)
from replay.cli.fmt import count, fit, money

VARIANT_EVICTIONS = {"calibrated": "log", "model-only": "none"}
COMPARE_WITH = ("devboy_lru", "jp_resource_dedup", "read_range_dedup", "supersede", "cupel_dedup")


@click.command()
@DB_OPTION
@dataset_option("Dataset [default: the only one].")
@cache_options
@click.option("--variants", type=click.Choice(["both", "calibrated", "model-only"]), default="both",
              show_default=True, help="Cache-model variants to compute the bounds under (calibrated: observed "
              "evictions replayed from the log; model-only: not). --observed-evictions is ignored.")
@click.option("--no-store", is_flag=True, help="Do not store the runs (noop, bound_insert, bound_retro).")
@key_file_option("Key the dataset was ingested with, which maps a --prices file's hidden model names to the trace's [default: $CTXREPLAY_KEY_FILE or the default key file].")
@json_option("Print JSON: per variant, the baseline, each bound's saving (cost, context and delivered tokens: "
             "baseline, run, saved, saved_pct) and run id, retro_flush's saving and schedule under `schedules`, and "
             "the same savings of devboy_lru, jp_resource_dedup, read_range_dedup, supersede and cupel_dedup at their "
             "defaults.")
@format_option
def bound(db, dataset, ttl, breakpoints, observed_evictions, prices_file, price_date, variants, no_store, key_file,
          as_json):
    """The offline-optimal bounds: what a lossless policy that knew the whole log could save.

    insert-time (bound_insert), the bound of every insert-time lossless policy (devboy_lru,
    jp_resource_dedup, read_range_dedup): every byte-identical
    repeat of a block of any kind still in context (same compaction partition), and every read
    whose line range an earlier read of the same path still in context covers with no write of
    the path in between (open reads capped at 2000 lines), is removed (size 0) as it arrives:
    unbounded cache, no busts. Lossless (bound_retro), the bound of every lossless policy,
    retroactive or not, at any setting: in addition, every read that a later read of the same
    path covers with no write in between is removed as it arrives (a relaxation: no policy can
    remove it before the later read, nor without a cache bust). Both are stored as runs (with a
    noop baseline) of each variant, so `compare` and the report show them. retro_flush is what
    retroactive lossless removal achieves: the best schedule of flushes found by a dynamic
    program (docs/bound.md); it is printed, not stored."""
    from replay.experiments import runs
    from replay.experiments.bound import compute_bounds
    from replay.model.costs import PriceError

    chosen = ["calibrated", "model-only"] if variants == "both" else [variants]
    with fail_on(PriceError, ValueError):
        opts = {v: make_options(ttl, breakpoints, VARIANT_EVICTIONS[v], prices_file, price_date) for v in chosen}
    con = open_db(db, read_only=no_store)
    dataset = pick_dataset(con, dataset, db)
    for o in opts.values():
        o.prices.bind(dataset, key_file)
    ds = runs.load(con, dataset)
    got = {}
    with fail_on(PriceError):
        for v in chosen:
            got[v.replace("-", "_")] = compute_bounds(con, ds, opts[v], store_runs=not no_store,
                                                      compare_with=COMPARE_WITH)
    if as_json:
        echo_json({"dataset": dataset, "sessions": len(ds.sessions), "requests": ds.n_requests, "variants": got})
        return
    for v, r in got.items():
        t = Table("", "cost saved", "context tokens saved", "delivered saved", "busts", "run",
                  title=f"Offline-optimal bounds vs the no-op baseline ({v.replace('_', '-')}; baseline "
                        f"{money(r['baseline']['cost'])}, {count(r['baseline']['context_tokens'])} context tokens)")
        for c in t.columns[1:5]:
            c.justify = "right"
            c.no_wrap = True  # a figure stays on one line; the names wrap to fit the page
        rows = [(k, x, x.get("run_id") or "-") for k, x in r["bounds"].items()]
        rows += [(f"{k} (achievable)", x, "not stored") for k, x in r.get("schedules", {}).items()]
        rows += [(f"{k} (defaults)", x, "not stored") for k, x in r["policies"].items()]
        for name, x, rid in rows:
            t.add_row(esc(name), _cell(x["cost"], "$"), _cell(x["context_tokens"]), _cell(x["tokens_delivered"]),
                      count(x["busts"]), esc(rid))
        print_table(fit(t))
        f = r.get("schedules", {}).get("retro_flush")
        if f:
            out.print(f"retro_flush (the best flush schedule of retroactive lossless removals found; achievable): "
                      f"{f['flushes']:,} flush point(s), {f['eager_streams']} stream(s) eager")
        out.print(f"computed in {r['seconds']:.1f} s")


def _cell(x: dict, unit: str = "") -> str:
    """`+$3.58 (+18.392%)`, `−$15.47 (-79.394%)`, `4,106,706 (+16.601%)`: the saving, then its share."""
    pct = "-" if x["saved_pct"] is None else f"{x['saved_pct']:+z.3f}%"
    return f"{money(x['saved'], sign=True)} ({pct})" if unit else f"{count(x['saved'])} ({pct})"


COMMANDS = [bound]
