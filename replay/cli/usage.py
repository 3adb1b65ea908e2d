"""`ctxreplay usage`: recorded usage and cost by day, week, month, session, project, model or
agent; and the filter options it shares with `sessions`."""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

import click
from rich.table import Table

from replay.cli.autoingest import auto_ingest_option
from replay.cli.fmt import WIDTH, fit, natural_width, wide_option
from replay.cli.common import (
    DB_OPTION, dataset_option, echo_json, err, esc, fail, fail_on, fmt_ts, format_option, json_option, open_db, out,
    pick_dataset, print_table, slice_options
)

GROUPS = ("day", "week", "month", "session", "project", "model", "agent")
PSEUDONYM = re.compile(r"^/?[0-9a-f]{10}(\.[a-z0-9]{1,6})?(/[0-9a-f]{10}(\.[a-z0-9]{1,6})?)*/?$")


def filter_options(f):
    """The slice options (`common.slice_options`) and --prices/--price-date."""
    opts = [
        slice_options,
        click.option("--prices", "prices_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                     default=None, help="TOML price overrides ([models.\"NAME\"] input/cache_write_5m/"
                     "cache_write_1h/cache_read/output in $/Mtok), e.g. for a model without a library price."),
        click.option("--price-date", default=None, help="Date the library prices are resolved at "
                     "[default: 2026-11-01]."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def _timezone(name: str):
    from datetime import timezone

    if name.upper() == "UTC":
        return timezone.utc
    if name.lower() == "local":
        return local_zone()
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        fail(f"--timezone {name!r}: unknown time zone; give an IANA name such as Europe/Paris, UTC or `local`")


def local_zone():
    """This machine's time zone as ccusage counts days in it: the IANA zone of $TZ or of
    /etc/localtime (so that a day across a daylight-saving change keeps its own offset), else the
    current fixed offset; UTC when the zone is UTC."""
    import os
    from datetime import datetime, timezone
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    names = []
    tz = os.environ.get("TZ")
    if tz:
        names.append(tz.lstrip(":"))
    try:
        link = os.readlink("/etc/localtime")
        if "zoneinfo/" in link:
            names.append(link.split("zoneinfo/", 1)[1])
    except OSError:
        pass
    for n in names:
        if n.upper() in ("UTC", "UTC0", "ETC/UTC", "GMT", "ETC/GMT", "UCT", "ZULU"):
            return timezone.utc
        try:
            return ZoneInfo(n)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            continue
    here = datetime.now().astimezone().tzinfo
    return timezone.utc if here is not None and here.utcoffset(None) == timezone.utc.utcoffset(None) else here


def _project_pseudonyms(con, dataset: str, paths: tuple[str, ...], key_file: Path | None) -> dict[str, str]:
    """pseudonym -> what the user typed, for each --project (raw paths pseudonymized with the key)."""
    import os

    found: dict[str, str] = {}
    raw = [p for p in paths if not PSEUDONYM.match(p)]
    for p in paths:
        if PSEUDONYM.match(p):
            found["/" + p.strip("/")] = p
    if raw:
        from replay.ingest.keys import KeyFileError, Keyring, default_key_path, load_or_create_master_key

        path = Path(key_file).expanduser() if key_file else default_key_path()
        with fail_on(KeyFileError, OSError):
            master = load_or_create_master_key(path, create=False, named_by="--key-file" if key_file else
                                               "$CTXREPLAY_KEY_FILE or the default key path")
        keys = Keyring.for_dataset(master, dataset)
        known = con.execute("SELECT key_fingerprint FROM datasets WHERE name = ?", [dataset]).fetchone()
        if known and known[0] != keys.fingerprint:
            fail(f"the key in {path} is not the key dataset {dataset!r} was ingested with, so --project "
                 f"{raw[0]!r} cannot be matched; pass that key with --key-file, or give the project's pseudonym "
                 "(`ctxreplay usage --by project`)")
        for p in raw:
            full = os.path.abspath(os.path.expanduser(p))
            found[keys.path(full)] = p
    return found


def make_filters(con, dataset: str, since, until, projects, models, agents, tz_name, key_file):
    """The `Filters` of the filter options (one `error:` line on a bad value)."""
    from analysis.usage import NO_PROJECT_MESSAGE, Filters, has_project_column

    tz = _timezone(tz_name)
    s = _day("--since", since, tz) if since else None
    u = _day("--until", until, tz) if until else None
    if s and u and s > u:
        fail(f"--since {since} ({s}) is after --until {until} ({u})")
    if projects and not has_project_column(con, dataset):
        fail(NO_PROJECT_MESSAGE)
    if projects:
        missing = con.execute("SELECT count(*) FROM sessions WHERE dataset = ? AND project IS NULL",
                              [dataset]).fetchone()[0]
        if missing:
            err.print(f"note: {missing:,} session(s) of {esc(dataset)} record no project (ingested before ctxreplay "
                      "recorded projects, or from logs without a working directory) and are left out by --project; "
                      "re-ingest them into a new database to include them")
    names = _project_pseudonyms(con, dataset, projects, key_file) if projects else {}
    return Filters(since=s, until=u, projects=tuple(names), models=tuple(models), agents=tuple(agents),
                   tz=tz, project_names=names)


def _day(flag: str, text: str, tz):
    from replay.cli.dates import resolve_day

    try:
        return resolve_day(text, tz)
    except ValueError as e:
        fail(f"{flag}: {e}")


def make_slice(con, dataset: str, since, until, projects, models, agents, tz_name, key_file) -> dict | None:
    """The dataset slice the slice options select, as a run stores it in its configuration
    (None: the whole dataset); see `replay.experiments.runs.slice_session_keys`."""
    return slice_of(make_filters(con, dataset, since, until, projects, models, agents, tz_name, key_file))


def slice_of(f) -> dict | None:
    """`Filters` as a stored slice: ISO days, the time zone (an IANA name or a fixed offset
    `+HH:MM`, only with a date bound), sorted project pseudonyms (never a raw path), models and agents."""
    if not f.active():
        return None
    out: dict = {}
    if f.since:
        out["since"] = f.since.isoformat()
    if f.until:
        out["until"] = f.until.isoformat()
    if f.since or f.until:
        out["timezone"] = _zone_text(f.tz)
    for name in ("projects", "models", "agents"):
        v = sorted(set(getattr(f, name)))
        if v:
            out[name] = v
    return out


def _zone_text(tz) -> str:
    from datetime import datetime, timezone

    if tz == timezone.utc:
        return "UTC"
    key = getattr(tz, "key", None)
    if key:
        return key
    off = tz.utcoffset(datetime.now())
    minutes = int(off.total_seconds() // 60)
    return f"{'-' if minutes < 0 else '+'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def slice_text(slc: dict | None) -> str:
    """A stored slice as options (`--since 2026-01-05 --agent codex`); '' for the whole dataset."""
    import shlex

    if not slc:
        return ""
    parts = []
    for key, flag in (("since", "--since"), ("until", "--until")):
        if slc.get(key):
            parts += [flag, slc[key]]
    for key, flag in (("projects", "--project"), ("models", "--model"), ("agents", "--agent")):
        for v in slc.get(key) or ():
            parts += [flag, v]
    if slc.get("timezone", "UTC") != "UTC":
        parts += ["--timezone", slc["timezone"]]
    return " ".join(shlex.quote(p) for p in parts)


def price_table(prices_file: Path | None, price_date: str | None):
    from replay.model.costs import DEFAULT_PRICE_DATE, PriceError, PriceTable

    date = price_date or DEFAULT_PRICE_DATE
    with fail_on(PriceError, ValueError):
        return PriceTable.from_toml(prices_file, date) if prices_file else PriceTable(date)


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
@format_option
@wide_option
def usage(db, dataset, by, since, until, projects, models, agents, tz_name, key_file, prices_file, price_date,
          as_json, as_csv, wide):
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

    Days, weeks (ISO, from Monday) and months are in --timezone (this machine's zone by default,
    as ccusage counts them; `--timezone UTC` for UTC days). A project
    is the keyed pseudonym of the session's first working directory, per path component (no
    path text is stored; Claude Code, Codex and Copilot CLI logs record it, Gemini CLI logs do
    not); --project also takes a path on this machine and pseudonymizes it with your key.
    Sessions ingested before ctxreplay recorded projects have none: re-ingest them.
    """
    prices = price_table(prices_file, price_date)
    con = open_db(db)
    dataset = pick_dataset(con, dataset, db)
    filters = make_filters(con, dataset, since, until, projects, models, agents, tz_name, key_file)
    res = recorded_usage(con, dataset, by, filters, prices)
    if not res["rows"]:  # an empty answer says what the logs do cover, and how to ask for it
        from replay.experiments.runs import coverage_text

        res["coverage"] = coverage_text(con, dataset)
    if as_json:
        echo_json(res, default=None)
    elif as_csv:
        _print_csv(res)
    else:
        _print_usage(res, filters, wide)


COLUMNS = (("requests", "responses"), ("input", "input"), ("cache_write_5m", "cache write 5m"),
           ("cache_write_1h", "cache write 1h"), ("cache_read", "cache read"), ("output", "output"),
           ("total_tokens", "total tokens"))


def _key_columns(by: str) -> list[str]:
    return {"session": ["session", "agent", "started (UTC)", "project"], "week": ["week", "from"]}.get(by, [by])


def _key_cells(r: dict, by: str, names: dict[str, str]) -> list[str]:
    if by == "session":
        return [r["key"], r["agent"], fmt_ts(r["started_at"]), project_label(r.get("project"), names)]
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


def short_project(p: str) -> str:
    """A project pseudonym by its last component (`…/c504243265`): enough to tell a session's
    project from its neighbours'; `--wide` and `--json` give the whole path of pseudonyms."""
    parts = [x for x in p.split("/") if x]
    return p if len(parts) <= 1 else "\u2026/" + parts[-1]


def _usage_table(res: dict, filters, compact: bool) -> Table:
    by = res["by"]
    keys = _key_columns(by)
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
        title += " (--wide: every column)"
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
    for r in res["rows"]:
        cells = _key_cells(r, by, filters.project_names)
        if no_agent:
            if r.get("project") and r["project"] not in filters.project_names:
                cells[3] = short_project(r["project"])
            del cells[1]
        t.add_row(*(esc(x) for x in cells), *(f"{_cell(r, f):,}" for f, _ in cols), money(r))
    for c in t.columns[len(keys):]:  # a figure is never wrapped or cut: its column is as wide as its widest cell
        c.min_width = max(len(x) for x in [*c._cells, c.footer, *str(c.header).split()])
    for c in t.columns[:len(keys)]:
        if compact and c.header == "session":  # a key people copy stays whole
            c.no_wrap = True
            c.min_width = max(len(x) for x in [*c._cells, *str(c.header).split()])
        elif compact and c.header == "started (UTC)":
            c.min_width = 10  # the day stays whole; its time goes to a second line when the table is tight
    return t


def _print_usage(res: dict, filters, wide: bool = False) -> None:
    if not res["rows"]:
        out.print(f"no recorded responses in {esc(res['dataset'])} match these filters"
                  + (f"; {esc(res['coverage'])}" if res.get("coverage") else ""))
        return
    t = _usage_table(res, filters, compact=False)
    if not wide and natural_width(t) > WIDTH:
        t = _usage_table(res, filters, compact=True)
    print_table(fit(t, wide))  # 120 columns: the keys wrap, the figures stay whole
    if res["by"] in ("day", "week", "month") and res["filters"]["timezone"] != "UTC":
        out.print(f"times in {esc(res['filters']['timezone'])}")
    for n in res["notes"]:
        out.print(f"[yellow]{esc(n)}[/]")


def _print_csv(res: dict) -> None:
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
            return fmt_ts(v)
        return "" if v is None else v

    for r in res["rows"]:
        line(r["key"], r, [cell(r, e) for e in extra])
    line("total", res["totals"], [""] * len(extra))


COMMANDS = [usage]
