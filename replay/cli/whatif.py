"""`ctxreplay whatif`: what would the same sessions have cost under another cache setting?"""

from __future__ import annotations

import functools

import click
from rich.table import Table

from replay.cli.autoingest import auto_ingest_option, resolve_db
from replay.cli.common import (
    DB_OPTION, count_progress, dataset_option, echo_json, esc, fail_on, format_option, json_option, open_db, out,
    pick_dataset, price_options, print_table, remember_db, slice_options
)
from replay.cli.fmt import amount, count, money, natural_width, wide_option


LIST_META = "ctxreplay.whatif.list"


def _listing(ctx: click.Context, param, value):
    """`--list` is read first (eager), so that --db and the automatic ingest know no database is needed."""
    if value:
        ctx.meta[LIST_META] = True
    return value


def _db_unless_listing(ctx: click.Context, param, value):
    """--db as in every command, except with `--list`: no database is resolved, so no data folder is made."""
    return value if ctx.meta.get(LIST_META) else remember_db(ctx, param, resolve_db(ctx, value))


def _db_option(f):
    f = DB_OPTION(f)
    f.__click_params__[-1].callback = _db_unless_listing
    return f


def _auto_ingest_unless_listing(f):
    """`advise`'s automatic ingest (`--ingest/--no-ingest`, `--quiet`), skipped by `--list`."""
    ingesting = auto_ingest_option(f)

    @functools.wraps(ingesting)
    def run(*args, **kw):
        if kw.get("list_only"):
            kw.pop("auto_ingest", None), kw.pop("ingest_quiet", None)
            return f(*args, **kw)
        return ingesting(*args, **kw)

    return run


@click.command()
@_db_option
@_auto_ingest_unless_listing
@dataset_option("Dataset [default: the only one].")
@click.option("--scenario", "scenarios", metavar="NAME", multiple=True,
              help="Run only this scenario (repeatable) [default: every scenario and the bound]. Names: "
                   "ttl_5m, ttl_1h, main_1h_sub_5m, main_5m_sub_1h, ttl_mixed, keepalive_15m, keepalive_60m, online_1h_after_idle, "
                   "no_thinking_switch, no_task_turns, no_skill_turns, no_tool_search, no_resume_rerender, openai_caching, "
                   "rates_sonnet_4_5, bound_offline (`--list` describes each).")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Local worker processes replaying the sessions (no short form: -j is --json); the result is the "
                   "same for any number.")
@click.option("--list", "list_only", is_flag=True, is_eager=True, callback=_listing,
              help="List the scenarios, the rule each rests on and its source, and exit (no database needed).")
@price_options
@slice_options
@json_option("Print JSON: the baseline (the recorded settings, model-only), per scenario its cost and written "
             "tokens (baseline, scenario, saved, saved_pct, interval_pct: the headline estimator's, `headline`, "
             "against `cost_baseline`: the recorded bill, or the model-only replay where only the predictive "
             "replay exists), "
             "`recorded_events` and `predictive` (each saved, saved_pct, interval_pct) and their `agreement`, "
             "the variant it used, the sessions it "
             "changes, the model-only error on them, distinguishable, worth_acting_on and the rule and source it "
             "rests on; the model-only fidelity per recorded TTL (`fidelity`).")
@wide_option
@format_option
def whatif(db, dataset, scenarios, jobs, list_only, prices_file, price_date, since, until, projects, models, agents,
           tz_name, key_file, wide, as_json):
    """Cache what-ifs: what would these sessions have cost under another cache setting?

    Two estimators per scenario. The headline (saved, saved_pct) re-prices the recorded requests
    with only the events the lever changes altered, by each miss's cause (the provider's reason
    where the log has one, else the inferred cause): a TTL lever bridges the expiries the new TTL
    covers and prices every write at its rate, a keep-alive bridges the gaps its pings cover and
    adds the pings, a client-break lever removes the breaks of its cause; these rows are saved
    against the recorded bill. Beside it (and the headline where no such re-pricing exists: those
    rows in a table of their own, saved against the model-only replay), the predictive replay: each scenario
    replays the dataset on the predictive (model-only) variant — no cache miss or
    write is copied from the log, since a recorded miss may not happen in the scenario's world —
    and is compared per session with the model-only replay of the recorded settings (the log's
    TTL per request, the client's recorded breaks), with a 95% paired bootstrap interval over
    sessions, in dollars and in cache-write tokens. Scenarios: every write 5m or 1h, a mixed
    layout (1h on the system prefix, 5m on the conversation), keep-alive pings every 270 s (up
    to 15 or 60 minutes idle; each ping charged as a request, also those nothing used), an
    online rule (1h writes after a stream's first idle gap over 5 minutes), one client break
    avoided per scenario (thinking switches, task turns, skill turns, resume re-renders),
    OpenAI's automatic caching and Claude Sonnet 4.5's rates; and bound_offline, the best
    TTL/keep-alive schedule per stream chosen with hindsight. A saving whose interval contains
    0, or that is smaller than the model-only error on the sessions it changes, is not
    distinguishable. Rules and sources: docs/replay-model.md, "Cache what-ifs"."""
    from replay.engine import ReplayOptions
    from replay.experiments import slices
    from replay.experiments.whatif import SCENARIOS, UnknownScenario, pick
    from analysis.whatif import whatif as run_whatif
    from replay.model.cache import CacheConfig
    from replay.model.costs import PriceError

    with fail_on(UnknownScenario):
        names = pick(list(scenarios))
    if list_only:
        _list(names, SCENARIOS, as_json)
        return
    from replay.cli.usage import price_table, sliced

    prices = price_table(prices_file, price_date)
    con = open_db(db)
    dataset = pick_dataset(con, dataset, db)
    prices.bind(dataset, key_file)
    # the slice and its sessions' arrays in one step below the commands (experiments)
    slc, ds = sliced(slices.load_slice, con, dataset, since, until, projects, models, agents, tz_name, key_file)
    progress = count_progress("whatif", "{task.completed}/{task.total}", disable=as_json)
    with fail_on(PriceError, ValueError), progress:
        task = progress.add_task("", total=len(ds.sessions))
        # with each lever as the client setting that applies it, printed first (`ctxreplay advise`: the table)
        got = run_whatif(ds, ReplayOptions(CacheConfig(), prices), names, on_step=lambda s: progress.advance(task),
                         jobs=jobs, advise_on=(con, dataset, [s.session_key for s in ds.sessions] if slc else None))
    got = {"dataset": dataset, "slice": slc, **got}
    if as_json:
        echo_json(got, default=None)
        return
    _print(got, wide)


def _list(names, scenarios, as_json) -> None:
    from replay.experiments.whatif import BOUND

    rows = []
    for n in names:
        if n == BOUND:
            rows.append({"name": n, "family": "bound", "summary": "per stream the cheapest of a hindsight schedule "
                         "(per write 5m or 1h, per idle gap ping through or not) and every TTL/keep-alive scenario",
                         "rule": "the TTL/keep-alive family with hindsight", "source": "docs/replay-model.md"})
        else:
            s = scenarios[n]
            rows.append({"name": n, "family": s.family, "summary": s.summary, "rule": s.rule, "source": s.source,
                         "carries": s.carries})
    if as_json:
        echo_json(rows)
        return
    t = Table("scenario", "family", "what changes", "rule", "source", title="Cache what-if scenarios")
    for r in rows:
        t.add_row(esc(r["name"]), r["family"], esc(r["summary"]), esc(r["rule"]), esc(r["source"]))
    print_table(t)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+z.2f}%"


# The main table's columns, in order; `--wide` adds the last four. The scenario (the key) is never
# cut nor wrapped and a figure never wrapped: on a narrow page columns are dropped or narrowed
# instead (`_layout`), in this order.
COLUMNS = ("scenario", "cost $", "saved", "95% interval", "predictive replay [95%]", "agree", "writes saved",
           "distinguishable")
WIDE = ("variant", "sessions changed", "model error there", "pings")
NARROWER = (("drop", "writes saved"), ("narrow", "95% interval"), ("drop", "agree"),
            ("drop", "predictive replay [95%]"), ("drop", "95% interval"))
# headers on two lines in a Rich table (one line in --format plain/markdown/csv)
TWO_LINES = {"predictive replay [95%]": "predictive replay\n[95%]", "writes saved": "writes\nsaved",
             "sessions changed": "sessions\nchanged", "model error there": "model error\nthere",
             "95% interval (%)": "95% interval\n(%)"}
FIGURES = ("cost $", "saved", "95% interval", "predictive replay [95%]", "writes saved", "sessions changed",
           "model error there", "pings")  # right-aligned
# each estimator's baseline, named in its table's title (`--json`: the row's `cost_baseline`)
GROUPS = (("recorded_events", "re-priced from the recorded requests: saved against the recorded bill"),
          ("predictive", "by the predictive replay alone (no re-pricing exists for these levers): saved against the "
                         "model-only replay of the recorded settings"))


def _cells(r: dict, narrow: bool) -> dict[str, str]:
    """Every column's text for scenario row ``r``."""
    iv = r["interval_pct"]["cost"]
    p = r.get("predictive") or {}
    piv = p.get("interval_pct")
    a = r.get("agreement")
    err = r["model_error_on_changed_pct"]
    pc = "" if narrow else "%"
    return {
        "scenario": esc(r["name"]), "cost $": amount(r["scenario"]["cost"]),
        "saved": f"{money(r['saved']['cost'], sign=True)} ({_pct(r['saved_pct']['cost'])})",
        "95% interval": "-" if iv is None else f"[{iv['low']:+z.2f}{pc}, {iv['high']:+z.2f}{pc}]",
        "predictive replay [95%]": "(= saved)" if r.get("headline") != "recorded_events" else (
            _pct(p.get("saved_pct")) + ("" if piv is None else f" [{piv['low']:+z.1f}, {piv['high']:+z.1f}]")),
        "agree": "-" if a is None else ("yes" if a["same_sign"] and a["intervals_overlap"] else "no"),
        "writes saved": _pct(r["saved_pct"]["cache_write"]), "distinguishable": "yes" if r["distinguishable"] else "no",
        "variant": esc(r["variant"]), "sessions changed": count(r["sessions_changed"]),
        "model error there": "-" if err is None else f"{err:.2f}%", "pings": count(r["totals"]["keepalive_pings"]),
    }


def _table(title: str, rows: list[dict], cols: list[str], narrow: bool, lines: bool) -> Table:
    header = {c: "95% interval (%)" if c == "95% interval" and narrow else c for c in cols}
    t = Table(*((TWO_LINES.get(header[c], header[c]) if lines else header[c]) for c in cols), title=title)
    for c in t.columns:
        c.no_wrap = True  # its width is its widest cell: never cut, never wrapped
    for c, name in zip(t.columns, cols):
        if name in FIGURES:
            c.justify = "right"
    for r in rows:
        cells = _cells(r, narrow)
        t.add_row(*(cells[c] for c in cols))
    return t


def _rich() -> bool:
    """Whether the tables print as Rich tables (not `--format plain|markdown|csv`)."""
    from replay.cli.common import FORMAT_META

    ctx = click.get_current_context(silent=True)
    return ctx is None or ctx.meta.get(FORMAT_META, "table") == "table"


def _page() -> int | None:
    """The width the main tables must fit: `fmt.WIDTH`, or the terminal's when narrower; None
    (no limit) outside `--format table`."""
    from replay.cli.fmt import WIDTH

    if not _rich():
        return None
    return min(WIDTH, out.width) if out.is_terminal else WIDTH


def _layout(groups: list[tuple[str, list[dict]]], wide: bool) -> tuple[list[Table], list[str]]:
    """The tables, one per estimator, and the columns left out: every column with `--wide`, else
    the default ones, dropping or narrowing columns (`NARROWER`, in order) until every table fits
    the page at its natural width, so nothing is ever cut."""
    page, lines = None if wide else _page(), _rich()
    cols, narrow, left = list(COLUMNS) + (list(WIDE) if wide else []), False, []
    steps = iter(NARROWER)
    while True:
        tables = []
        for (est, title), rows in groups:
            mine = [c for c in cols if est == "recorded_events" or c not in ("predictive replay [95%]", "agree")]
            tables.append(_table(title, rows, mine, narrow, lines))
        if page is None or all(natural_width(t) <= page for t in tables):
            return tables, left
        step = next(steps, None)
        if step is None:
            return tables, left  # a page narrower than the key and three figures: printed whole anyway
        what, col = step
        if what == "narrow":
            narrow = True
        elif col in cols:
            cols.remove(col)
            left.append(col)


def _print(got: dict, wide: bool = False) -> None:
    from analysis.advice import first_line

    line = first_line(got.get("advice"))
    if line:  # what to change, in the client's own terms, before the table of scenarios
        out.print(esc(line.replace("**", "").replace("`", "").replace("*Advice* below", "`ctxreplay advise` lists "
                                                                       "every setting")))
    b = got["baseline"]
    groups = []
    for est, title in GROUPS:
        rows = sorted((r for r in got["scenarios"] if (r.get("headline") or "predictive") == est),
                      key=lambda r: -r["saved"]["cost"])
        if rows:
            base = rows[0]["baseline"]["cost"]  # the group's: every row of it has this baseline
            groups.append(((est, f"Cache what-ifs {title} ({money(base)}), largest saving first"), rows))
    tables, left = _layout(groups, wide)
    if tables:  # the sessions; the columns `--wide` adds and those the page had no room for
        more = [f"{count(got['sessions'])} sessions"] + ([] if wide else [f"--wide: {', '.join(left + list(WIDE))}"])
        tables[0].title += f" ({'; '.join(more)})"
    for t in tables:
        print_table(t)
    if len(tables) > 1:
        out.print(f"the two tables have different baselines (the recorded bill {money(b['recorded_cost'])}, the "
                  f"model-only replay {money(b['cost'])}, its {b['variant']} variant): compare savings, not costs, "
                  "across them")
    f = Table("recorded TTL", "sessions", "recorded $", "model-only $", "error", "every write at that TTL: error",
              "sessions within 2%", title="Model-only fidelity by the TTL the log recorded")
    for g, x in got["fidelity"].items():
        f.add_row(g, count(x["sessions"]), amount(x["recorded_cost"]), amount(x["model_only_cost"]),
                  _frac(x["rel_error"]), _frac(x[f"every_write_{g}_rel_error"]), count(x["sessions_within_2pct"]))
    print_table(f)
    bound = next((r for r in got["scenarios"] if r["name"] == "bound_offline"), None)
    online = next((r for r in got["scenarios"] if r["name"] == "online_1h_after_idle"), None)
    if bound and online and bound.get("online_share_of_bound") is not None:
        # both by the predictive replay: the bound has no re-priced figure, so the share compares like with like
        pred = (online.get("predictive") or {}).get("saved")
        out.print(f"by the predictive replay, online_1h_after_idle saves {money(pred, sign=True)} against the offline "
                  f"bound's {money(bound['saved']['cost'], sign=True)}: {bound['online_share_of_bound']:.0%} of it"
                  + (f" (its re-priced figure above, {money(online['saved']['cost'], sign=True)}, has no bound to "
                     "compare with)" if online.get("headline") == "recorded_events" else ""))
    out.print("saved: the recorded requests re-priced with only the events the lever changes altered (bridged "
              "expiries, added pings, breaks of one cause removed); where no such estimator exists, the predictive replay's "
              "figure (= saved), against the model-only replay of the recorded settings. The predictive interval "
              "carries the model's per-session error; writes saved: cache-write tokens, the predictive replay's. "
              "agree: both estimators "
              "have the same sign and overlapping intervals; distinguishable: every estimator's interval "
              "excludes 0 on the same side")
    out.print(f"computed in {got['seconds']:.1f} s")


def _frac(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+z.2f}%"


COMMANDS = [whatif]
