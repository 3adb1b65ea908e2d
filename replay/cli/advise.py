"""`ctxreplay advise`: each cache lever as the client setting that applies it, in dollars per month."""

from __future__ import annotations

import click
from rich.table import Table

from replay.cli.autoingest import auto_ingest_option
from replay.cli.common import (
    DB_OPTION, count_progress, dataset_option, echo_json, esc, fail_on, json_option, open_db, out, pick_dataset,
    price_options, print_table, slice_options
)
from replay.cli.fmt import fit, money


@click.command()
@DB_OPTION
@auto_ingest_option
@dataset_option("Dataset [default: the only one].")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Local worker processes replaying the sessions (no short form: -j is --json).")
@price_options
@slice_options
@json_option("Print JSON: per setting its line to paste, the client versions that have it, whether the logs show it "
             "in effect, dollars per month with the interval, both estimators and how sure, and the settings it "
             "excludes; which settings are opposites and which to pick (`alternatives`); then habits, model "
             "choice and provider apart.")
def advise(db, dataset, jobs, prices_file, price_date, since, until, projects, models, agents, tz_name, key_file,
           as_json):
    """What to change in your client to cut the bill: each cache lever as the setting that applies it.

    For every Claude Code cache setting a lever stands for (ENABLE_PROMPT_CACHING_1H,
    FORCE_PROMPT_CACHING_5M, promptCacheTtl with subagentPromptCacheTtl): the line to paste, the
    client versions that have it and how sure we are of that, whether your logs already show it
    in effect (the share of cache writes at 1 hour, main conversation and subagents apart), and
    what it would have saved on your logs in dollars per month at their pace, with its 95%
    interval, from the recorded requests re-priced (the headline) beside the predictive replay,
    and how sure that is in words. Habits (a keep-alive tool, mid-session model or tool changes),
    model choice and provider are listed apart and never ranked with the settings. The settings
    exclude each other (each sets the TTL of every cache write): a line names the opposites and,
    where several would save money, picks the larger saving, intervals beside. A setting already
    in effect saves nothing by being set: its figure prices the writes not yet at its TTLs. Client
    behaviours of some versions explain past breaks (`ctxreplay breaks`); they are not levers.
    Rules: docs/replay-model.md, "Cache what-ifs"; the settings' sources: analysis/advice.py."""
    from analysis.advice import HABITS, MODEL_CHOICE, PROVIDER, SETTINGS, advise as build
    from analysis.whatif import whatif as run_whatif
    from replay.cli.usage import price_table, sliced
    from replay.engine import ReplayOptions
    from replay.experiments import slices
    from replay.experiments.breaks import find_breaks, summarize
    from replay.model.cache import CacheConfig
    from replay.model.costs import PriceError

    prices = price_table(prices_file, price_date)
    con = open_db(db)
    dataset = pick_dataset(con, dataset, db)
    prices.bind(dataset, key_file)
    slc, ds = sliced(slices.load_slice, con, dataset, since, until, projects, models, agents, tz_name, key_file)
    names = [s.scenario for s in SETTINGS] + list(HABITS) + list(MODEL_CHOICE) + list(PROVIDER)
    progress = count_progress("advise", "{task.completed}/{task.total}", disable=as_json)
    with fail_on(PriceError, ValueError), progress:
        task = progress.add_task("", total=len(ds.sessions))
        wi = run_whatif(ds, ReplayOptions(CacheConfig(), prices), names, on_step=lambda s: progress.advance(task),
                        jobs=jobs)
        rows, counts = find_breaks(ds, prices)
        got = build(con, dataset, ds, wi, summarize(rows, counts),
                    keys=[s.session_key for s in ds.sessions] if slc else None)
    if as_json:
        echo_json({"slice": slc, **got}, default=None)
        return
    _print(got)


def _per_month(x: float | None) -> str:
    return "-" if x is None else money(x, sign=True)


def _iv(v) -> str:
    return "-" if not v else f"[{money(v[0], sign=True)}, {money(v[1], sign=True)}]"


def _figures(t: Table, *cols: int) -> None:
    """Money columns: right-aligned, never wrapped (a figure or an interval split across lines reads as two)."""
    for i in cols:
        t.columns[i].justify, t.columns[i].no_wrap = "right", True


def _in_effect_cell(s: dict) -> str:
    """Whether the logs show the setting's TTLs already; when the client cannot have the setting,
    that they are its default, not the setting's doing."""
    if s["in_effect"] is None:
        return esc(s["in_effect_evidence"])
    if not s["in_effect"]:
        return "no"
    if s["your_client_has_it"] is False:
        return "yes, as your client's default (it lacks the setting)"
    return "yes"


def _print(got: dict) -> None:
    from analysis.advice import no_setting, saves

    out.print(f"[bold]What to change[/], per month at the pace of these logs ({got['sessions']:,} sessions over "
              f"{got['days']:.1f} days; client {esc(got['client_versions'][0] or '?')} to "
              f"{esc(got['client_versions'][1] or '?')})")
    plan = got.get("plan") or {}
    if plan.get("plan") == "subscription":
        out.print(f"plan: a subscription ({esc(plan['evidence'])}): the dollars are this usage at API rates, as "
                  "ccusage prices it, not what a subscription bills")
    elif plan:
        out.print(f"plan: {esc(plan['plan'])} ({esc(plan['evidence'])})")
    shown = {s["in_effect_evidence"] for s in got["settings"] if s["in_effect"] is not None}
    if len(shown) == 1:  # the same shares for every setting: said once, above the table
        out.print(f"in effect now: what your logs show, {esc(shown.pop())}")
    t = Table("setting", "saves per month", "95% interval", "predictive", "in effect now?", "how sure", title="Settings")
    _figures(t, 1, 2, 3)
    for c in (t.columns[0], t.columns[4], t.columns[5]):
        c.no_wrap, c.overflow = False, "fold"
    # a setting's name is never cut inside a word (ENABLE_PROMPT_CACHING_1H is one)
    t.columns[0].min_width = max((len(w) for s in got["settings"] for w in s["setting"].split()), default=8)
    for s in got["settings"]:
        has = "" if s["your_client_has_it"] in (None, True) else f" (needs {s['since']}+)"
        t.add_row(esc(s["setting"]) + has, _per_month(s['per_month']), _iv(s['per_month_interval']),
                  _per_month(s.get("predictive_per_month")),
                  _in_effect_cell(s),
                  esc(s["how_sure"]))
    print_table(fit(t))
    out.print("to set one:")
    for s in got["settings"]:
        has = "" if s["your_client_has_it"] in (None, True) else f"; your newest client {s['your_client']} lacks it"
        out.print(f"  {esc(s['setting'])}: {esc(s['line'])}  ({esc(s['client_versions'])}{esc(has)})")
    best = next((s for s in got["settings"] if saves(s)), None)
    if best:
        # the source may start with how sure it is ("reported for ..."): never "reported: reported for"
        src = best["source"] if best["source"].lower().startswith(best["confidence"]) else \
            f"{best['confidence']}: {best['source']}"
        out.print(f"to try: {esc(best['line'])}  ({esc(best['client_versions'])}; {esc(src)})")
    else:
        out.print(esc(no_setting(got, "no setting").replace("`", "")))
    alt = (got.get("alternatives") or {}).get("note")
    if alt:  # the settings exclude each other: which pairs, and which to pick
        out.print(esc(alt))
    if got["habits"]:
        h = Table("habit", "saves per month", "95% interval", "how sure / caveat",
                  title="Habits (what you do, not a setting; an interval of -: a recorded figure)")
        _figures(h, 1, 2)
        for c in (h.columns[0], h.columns[3]):
            c.no_wrap, c.overflow = False, "fold"
        for x in got["habits"]:
            h.add_row(esc(x["what"]), _per_month(x['per_month']), _iv(x.get('per_month_interval')),
                      esc(x["how_sure"] + ("; " + x["caveat"] if x.get("caveat") else "")))
        print_table(fit(h))
    for fam, label in (("model_choice", "another model"), ("provider", "another provider")):
        for x in got.get(fam, []):
            out.print(f"not a cache setting, not ranked — {label}: {esc(x['summary'])}: "
                      f"{_per_month(x['per_month'])} per month ({x['saved_pct']:+z.1f}%)")
    out.print(esc(got["note"]))


COMMANDS = [advise]
