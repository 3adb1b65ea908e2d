"""`ctxreplay usage`: recorded usage and cost by day, week, month, session, project, model or
agent; and the filter options it shares with `sessions`."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import click
from rich.table import Table

from replay.cli.cache_flags import PRICE_DATE_HELP, PRICES_HELP
from replay.cli.autoingest import auto_ingest_option
from replay.cli.fmt import WIDTH, fit, natural_width, wide_option
from replay.cli.common import (
    DB_OPTION, dataset_option, echo_json, err, esc, fail, fail_on, fmt_ts, format_option, json_option, open_db, out, warn,
    pick_dataset, print_table, slice_options, zone_label
)

GROUPS = ("day", "week", "month", "session", "project", "model", "agent")


def filter_options(f):
    """The slice options (`common.slice_options`) and --prices/--price-date."""
    opts = [
        slice_options,
        click.option("--prices", "prices_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                     default=None, help=PRICES_HELP + ", e.g. for a model without a library price."),
        click.option("--price-date", default=None, help=PRICE_DATE_HELP),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def sliced(build, con, dataset: str, *slice_args):
    """``build`` (a `replay.experiments.slices` builder: `make_filters`, `make_slice`, `load_slice`)
    on the slice options' values, with relative days counted from `dates.now()`, its note on
    stderr and its error as one `error:` line."""
    from replay.cli.dates import now
    from replay.ingest.keys import KeyFileError
    from replay.store import StoreError  # a SliceError, and `load`'s unknown dataset or empty slice

    with fail_on(StoreError, KeyFileError, OSError):
        return build(con, dataset, *slice_args, at=now(), note=lambda text: err.print(esc(text)))


def make_filters(con, dataset: str, *slice_args):
    """The `Filters` of the filter options (`replay.experiments.slices.make_filters`; one `error:`
    line on a bad value)."""
    from replay.experiments import slices

    return sliced(slices.make_filters, con, dataset, *slice_args)


def local_zone():
    """This machine's time zone (`replay.experiments.slices.local_zone`)."""
    from replay.experiments.slices import local_zone as zone

    return zone()


def price_table(prices_file: Path | None, price_date: str | None):
    from replay.model.costs import DEFAULT_PRICE_DATE, PriceError, PriceTable

    date = price_date or DEFAULT_PRICE_DATE
    with fail_on(PriceError, ValueError):
        return PriceTable.from_toml(prices_file, date, given_date=price_date) if prices_file else PriceTable(date)


def recorded_usage(con, dataset: str, by: str, filters, prices) -> dict:
    from analysis.usage import UsageError, usage

    with fail_on(UsageError):
        res = usage(con, dataset, by, filters, prices)
    for row in (res["totals"], *res["rows"]):
        if row.get("cost") is None and row.get("requests"):  # a sum that overflowed to infinity: never a blank
            fail(f"the cost of {row.get('key', 'the total')} is too large to compute (it overflows to infinity); "
                 f"check the rates of the price file (at most {_max_rate():,.0f} $ per million tokens)")
    return res


def _max_rate() -> float:
    from replay.model.costs import MAX_RATE

    return MAX_RATE


def money(row: dict) -> str:
    """'$1,234.56', with '+' when part of the usage is unpriced ('?' when none is priced)."""
    if row["cost_complete"]:
        return f"{row['cost']:,.2f}"
    if not row["cost"]:
        return "?"
    return f"{row['cost']:,.2f}+"


def project_label(p: str | None, names: dict[str, str]) -> str:
    if not p:
        return "-"
    return f"{names[p]} ({p})" if p in names else p


@click.command()
@DB_OPTION
@auto_ingest_option
@dataset_option()
@click.option("--by", type=click.Choice(GROUPS), default="day", show_default=True, help="Group rows by this.")
@filter_options
@json_option("Print strict JSON: {dataset, by, filters, prices, rows, totals, unpriced_models, notes}.")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV (a header, one line per row, then the totals), with "
              "the numbers unformatted (cost to 6 decimals, cost_complete, unpriced_models); --format csv is the same.")
@click.option("--resolve", "resolve_dir", metavar="DIR", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="With --by project: name each project pseudonym by the folder it stands for, found among the "
                   "log files under DIR (only the key that ingested them can; `ctxreplay sessions --resolve` "
                   "does the same per session).")
@format_option
@wide_option
def usage(db, dataset, by, since, until, projects, models, agents, tz_name, key_file, prices_file, price_date,
          as_json, as_csv, wide, resolve_dir=None):
    """Recorded usage and cost: what the logs say was used, by day, week, month, session,
    project, model or agent, with a totals row.

    Counts each API response once (output from its final streamed line; a response a resumed
    session copied is counted in the session that recorded it first) and prices it with its
    own model's rates: cache writes with a 1-hour TTL at the 1-hour rate, 5-minute writes at
    the 5-minute rate, long-context tiers per response. A model without a price is named and
    its cost left out (the cost shows `+`, or `?` when nothing could be priced), never counted
    as $0; add its rates with --prices. Responses whose log records no input usage (Copilot
    CLI, Gemini CLI) are counted with their output only, and said so. Fast mode is priced at
    fast-mode rates (and shown as `MODEL (fast)` by model) where the trace records each
    response's speed; a trace without it prices every response at standard rates.

    Days, weeks (ISO, from Monday), months and the sessions' start times are in --timezone (this
    machine's zone by default, as ccusage counts them; `--timezone UTC` for UTC days). A project
    is the keyed pseudonym of the session's first working directory, per path component (no
    path text is stored; Claude Code, Codex and Copilot CLI logs record it, Gemini CLI logs do
    not); --project also takes a path on this machine and pseudonymizes it with your key.
    Sessions ingested before ctxreplay recorded projects have none: re-ingest them.
    """
    prices = price_table(prices_file, price_date)
    con = open_db(db)
    dataset = pick_dataset(con, dataset, db)
    prices.bind(dataset, key_file)  # a hidden model name in the price file, keyed as this dataset keys it
    warn_unused_overrides(con, dataset, prices, prices_file)
    filters = make_filters(con, dataset, since, until, projects, models, agents, tz_name, key_file)
    res = recorded_usage(con, dataset, by, filters, prices)
    if resolve_dir is not None:
        if by != "project":
            fail("--resolve goes with --by project (per session: `ctxreplay sessions --resolve DIR`)", 2)
        paths = resolved_projects(con, dataset, key_file, resolve_dir)
        for r in res["rows"]:
            r["project_path"] = paths.get(r["key"])
        filters.project_names.update({p: v for p, v in paths.items() if p not in filters.project_names})
    if not res["rows"]:  # an empty answer says what the logs do cover, and how to ask for it
        from replay.experiments.slices import coverage_text, no_match_text

        res["coverage"] = coverage_text(con, dataset, filters.tz)
        hint = no_match_text(con, dataset, filters.projects, filters.models, filters.agents, filters.tz,
                             filters.project_names)
        if hint != res["coverage"]:  # a project, model or agent that no session has: not a matter of days
            res["no_match"] = hint
    if as_json:
        echo_json(res, default=None)
    elif as_csv:
        _print_csv(res, filters.tz)
        if not res["rows"] and (res.get("no_match") or res.get("coverage")):  # stdout stays CSV: the hint on stderr
            err.print(f"no recorded responses in {esc(res['dataset'])} match these filters; "
                      f"{esc(res.get('no_match') or res['coverage'])}", soft_wrap=True)
    else:
        # a project's short name must tell it from every project of the dataset, not only the rows shown:
        # `--project` looks among them all
        from replay.experiments.slices import dataset_projects

        every = dataset_projects(con, dataset) if by == "project" else []
        _print_usage(res, filters, wide, every)


def warn_unused_overrides(con, dataset: str, prices, prices_file: Path | None) -> None:
    """One warning naming the price file's models that no response of ``dataset`` has (a typo)."""
    if prices_file is None or not prices.overrides:
        return
    from replay.experiments.slices import dataset_models

    unused = prices.unused_overrides(dataset_models(con, dataset))
    if unused:
        more = f" and {len(unused) - 1} more" if len(unused) > 1 else ""
        warn(f"{prices_file}: [models.\"{unused[0]}\"]{more} {'match' if more else 'matches'} no model of {dataset} "
             "(`ctxreplay usage --by model` lists them); check the name")


def resolved_projects(con, dataset: str, key_file: Path | None, root: Path) -> dict[str, str]:
    """project pseudonym -> the folder it stands for, from the sessions whose log is under ``root``."""
    from replay.ingest.keys import open_master_key
    from replay.store.resolve import resolve

    with fail_on(ValueError, OSError):
        found = resolve(con, dataset, open_master_key(key_file, warn=warn), root)
    projects = dict(con.execute("SELECT session_key, project FROM sessions WHERE dataset = ?", [dataset]).fetchall())
    return {projects[k]: v["project_path"] for k, v in found["sessions"].items()
            if v.get("project_path") and projects.get(k)}


COLUMNS = (("requests", "responses"), ("input", "input"), ("cache_write_5m", "cache write 5m"),
           ("cache_write_1h", "cache write 1h"), ("cache_read", "cache read"), ("output", "output"),
           ("total_tokens", "total tokens"))


def _key_columns(by: str, tz=None, times=None) -> list[str]:
    started = f"started ({zone_label(tz, times)})"
    return {"session": ["session", "agent", started, "project"], "week": ["week", "from"]}.get(by, [by])


def _key_cells(r: dict, by: str, names: dict[str, str], tz=None) -> list[str]:
    if by == "session":
        return [r["key"], r["agent"], fmt_ts(r["started_at"], tz), project_label(r.get("project"), names)]
    if by == "week":
        return [r["key"], r.get("week_start") or "-"]
    if by == "project":
        return [project_label(r["key"], names) if r["key"] in names else r["key"]]
    return [r["key"]]


# the compact layout, when every column does not fit `fmt.WIDTH`: both cache writes in one column, no total
COMPACT = (("requests", "responses"), ("input", "input"), ("cache_write", "cache write"), ("cache_read", "cache read"),
           ("output", "output"))


def _cell(r: dict, f: str) -> int:
    return r["cache_write_5m"] + r["cache_write_1h"] if f == "cache_write" else r[f]


SHORT_KEY = 12  # a session key's first characters in the compact view, as `breaks` and `validate` show it (--session
# takes any prefix); --wide and --json give it whole


def short_project(p: str, others=()) -> str:
    """A project pseudonym by its last components (`…/c504243265`): the fewest that no other
    project of ``others`` ends with too, so `--project` takes it as it is shown; `--wide` and
    `--json` give the whole path of pseudonyms."""
    parts = [x for x in p.split("/") if x]
    rivals = [[x for x in o.split("/") if x] for o in set(others) if o != p]
    for n in range(1, len(parts)):
        if not any(r[-n:] == parts[-n:] for r in rivals):
            return "\u2026/" + "/".join(parts[-n:])
    return p


def _usage_table(res: dict, filters, compact: bool, every: list[str] | tuple = ()) -> Table:
    by = res["by"]
    # a narrow table names the zone by its abbreviation when every start shares one (PST)
    keys = _key_columns(by, filters.tz, [r.get("started_at") for r in res["rows"]] if compact else None)
    cols = COMPACT if compact else COLUMNS
    agents = sorted({r["agent"] for r in res["rows"]}) if by == "session" else []
    no_agent = compact and by == "session"  # said once in the title rather than on every row (--by agent splits)
    if no_agent:
        keys = [k for k in keys if k != "agent"]
    title = f"Recorded usage of {res['dataset']} by {by}"
    active = {k: v for k, v in res["filters"].items() if v and k != "timezone"}
    if active:
        title += " (" + "; ".join(f"{k} {', '.join(v) if isinstance(v, list) else v}" for k, v in active.items()) + ")"
    if no_agent:
        title += f", {', '.join(agents)}"
    if compact:  # the columns left out: each cache write by TTL, total tokens, agent, whole project keys
        title += " (--wide: every column" + (", whole project keys)" if by in ("project", "session") else ")")
    t = Table(*keys, *(label for _, label in cols), "cost $", title=esc(title), show_footer=True)
    tot = res["totals"]
    for i, c in enumerate(t.columns):
        c.footer = ""
        if i >= len(keys):
            c.justify = "right"
        else:
            c.overflow = "fold"  # a long key wraps rather than being cut
    t.columns[0].footer = "total"
    for (f, _), c in zip(cols, t.columns[len(keys):]):
        c.footer = f"{_cell(tot, f):,}"
    t.columns[-1].footer = money(tot)
    projects = {r["key"] for r in res["rows"] if r["key"]} | set(every) if by == "project" else set()
    for r in res["rows"]:
        cells = _key_cells(r, by, filters.project_names, filters.tz)
        if compact and by == "project" and r["key"] and r["key"] not in filters.project_names:
            cells[0] = short_project(r["key"], projects)
        if no_agent:
            if r.get("project") and r["project"] not in filters.project_names:
                cells[3] = short_project(r["project"])  # its last component: the row's neighbours tell it apart
            cells[0] = cells[0][:SHORT_KEY]
            del cells[1]
        t.add_row(*(esc(x) for x in cells), *(f"{_cell(r, f):,}" for f, _ in cols), money(r))
    for c in t.columns[len(keys):]:  # a figure is never wrapped or cut: its column is as wide as its widest cell
        c.min_width = max(len(x) for x in [*c._cells, c.footer, *str(c.header).split()])
    for c in t.columns[:len(keys)]:
        if compact and c.header == "session":  # a key people copy stays whole
            c.no_wrap = True
            c.min_width = max(len(x) for x in [*c._cells, *str(c.header).split()])
        elif compact and str(c.header).startswith("started ("):
            c.min_width = 10  # the day stays whole; its time goes to a second line when the table is tight


    return t


def _print_usage(res: dict, filters, wide: bool = False, every: list[str] | tuple = ()) -> None:
    if not res["rows"]:
        hint = res.get("no_match") or res.get("coverage")
        out.print(f"no recorded responses in {esc(res['dataset'])} match these filters"
                  + (f"; {esc(hint)}" if hint else ""))
        return
    t = _usage_table(res, filters, compact=False)
    if not wide and natural_width(t) > WIDTH:
        t = _usage_table(res, filters, compact=True, every=every)
    print_table(fit(t, wide))  # 120 columns: the keys wrap, the figures stay whole
    if res["by"] in ("day", "week", "month", "session") and res["filters"]["timezone"] != "UTC":
        out.print(f"times in {esc(res['filters']['timezone'])}")
    for n in res["notes"]:
        out.print(f"[yellow]{esc(n)}[/]")


def _print_csv(res: dict, tz=None) -> None:
    by = res["by"]
    extra = {"session": ["agent", "started_at", "project"], "week": ["week_start"]}.get(by, [])
    fields = [f for f, _ in COLUMNS]
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow([by, *extra, *fields, "cost", "cost_complete", "unpriced_models", "requests_without_usage"])

    def line(key, r, ex):
        w.writerow([key, *ex, *(r[f] for f in fields), f"{r['cost']:.6f}", str(r["cost_complete"]).lower(),
                    ";".join(r["unpriced_models"]), r["requests_without_usage"]])

    def cell(r, e):
        v = r.get(e)
        if e == "started_at" and v is not None:
            return fmt_ts(v, tz)  # in --timezone, as the day, week and month keys are
        return "" if v is None else v

    for r in res["rows"]:
        line(r["key"], r, [cell(r, e) for e in extra])
    line("total", res["totals"], [""] * len(extra))


COMMANDS = [usage]
