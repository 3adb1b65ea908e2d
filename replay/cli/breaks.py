"""`ctxreplay breaks`: at which request did the prompt cache break, why, and what did it cost?"""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from replay.cli.autoingest import auto_ingest_option
from replay.cli.cache_flags import PRICE_DATE_HELP, PRICES_HELP
from replay.cli.common import (
    DB_OPTION, dataset_option, echo_json, esc, fail_on, format_option, json_option, open_db, out, pick_dataset,
    print_table, slice_options, zone_label
)
from replay.cli.fmt import amount, count, duration_cell, fit, money

DEFAULT_LIMIT = 20


@click.command()
@DB_OPTION
@auto_ingest_option
@dataset_option("Dataset [default: the only one].")
@click.option("--session", "session", metavar="KEY", default=None,
              help="Only the sessions whose key starts with KEY (`ctxreplay sessions` lists the keys).")
@click.option("--limit", type=click.IntRange(min=0), default=None,
              help=f"List at most N breaks and N sessions, the costliest first (--json: in request order) "
                   f"[default: {DEFAULT_LIMIT} in text, every break in --json; 0: every break]; the summary "
                   "always covers all.")
@click.option("--prices", "prices_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help=PRICES_HELP + ".")
@click.option("--price-date", default=None, help=PRICE_DATE_HELP)
@slice_options
@json_option("Print JSON: {\"breaks\": [one object per break, with cause, tokens, cost, time (UTC) and time_local "
             "(in --timezone), ...], \"summary\": {...}, \"slice\": the --since ... --agent options (null: all)}.")
@format_option
def breaks(db, dataset, session, limit, prices_file, price_date, since, until, projects, models, agents, tz_name,
           key_file, as_json):
    """Cache breaks: at which request did the prompt cache break, why, and what did it cost?

    A break is a request whose recorded cache read is shorter than the prefix the stream had
    cached (by more than max(256 tokens, 1%)). Each break lists the session, stream, request,
    time, the idle gap before it, the tokens paid again (as cache writes or uncached input) and
    their dollars (what was paid minus what a cache read would have cost, at the request's
    model rates), the block position p where the read stops and the kind of block there, and
    the cause: model_switch, compaction, ttl_5m / ttl_1h (idle from the end of the previous
    response beyond the TTL), thinking_switch, resumed (the log records a resumed session),
    task_turn (Claude Code 2.1.32-2.1.37, after a turn with the task tools), skill_turn (a
    turn that loads a skill by slash command, or the turn after one that loaded a skill),
    content_removed, system_changed, first_message_rewritten, history_rewritten (at p) or
    unexplained. Causes marked "(inferred)" rest on where the read stopped, not on anything the
    log shows changing. Where the log carries the provider's own reason for a miss (Claude Code
    2.1.119+: previous_message_not_found, messages_changed, tools_changed, system_changed,
    model_changed, unavailable), each break shows it beside the inferred cause and whether the
    two name the same kind of change (expiry, messages, system/tools, model, provider).
    Rules: docs/replay-model.md, "Cache breaks".
    Models with automatic caching (OpenAI, Gemini) are not classified.

    --since/--until/--project/--model/--agent take the sessions with at least one recorded
    request on a day in [--since, --until] (days in --timezone, this machine's zone by default)
    of one of the --model names, of one of the --agent agents and in --project or a folder
    below it, as `replay` slices them; every break of those sessions is listed. Times are
    shown in --timezone.
    """
    from replay.cli.usage import sliced
    from replay.experiments import slices
    from replay.experiments.breaks import breaks as find
    from replay.model.costs import DEFAULT_PRICE_DATE, PriceError, PriceTable
    from replay.store import StoreError

    date = price_date or DEFAULT_PRICE_DATE
    with fail_on(PriceError, ValueError):
        prices = PriceTable.from_toml(prices_file, date, given_date=price_date) if prices_file else PriceTable(date)
    con = open_db(db)
    dataset = pick_dataset(con, dataset, db)
    prices.bind(dataset, key_file)
    slc = sliced(slices.make_slice, con, dataset, since, until, projects, models, agents, tz_name, key_file)
    with fail_on(StoreError):
        tz = slices.zone(tz_name)
    with fail_on(PriceError, ValueError, StoreError):  # StoreError: no session in the slice (it names the days)
        rows, summary = find(con, dataset, prices=prices, session=session, top=10 ** 9, slice=slc)
    for r in rows:
        if "time" in r:
            r["time_local"] = _local(r["time"], tz)
    n = (limit or None) if limit is not None else (None if as_json else DEFAULT_LIMIT)  # 0: every break
    shown = _costliest(rows, n)
    if as_json:
        if limit != 0:  # 0: every break and every session
            summary["top_sessions"] = summary["top_sessions"][:10 if n is None else n]
        echo_json({"dataset": dataset, "slice": slc, "breaks": shown, "summary": summary})
        return
    _print(rows, shown, summary, n, tz)


def _local(iso: str | None, tz) -> str | None:
    """A break's time (ISO 8601 in UTC) in ``tz``, with its offset."""
    from datetime import datetime

    from replay.experiments.slices import iso_in

    return None if not iso else iso_in(round(datetime.fromisoformat(iso).timestamp() * 1000), tz)


def _costliest(rows: list[dict], n: int | None) -> list[dict]:
    """The n costliest rows, in their (session, stream, request) order."""
    if n is None or n >= len(rows):
        return rows
    keep = {id(r) for r in sorted(rows, key=lambda r: -r["cost"])[:n]}
    return [r for r in rows if id(r) in keep]


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1%}"


def _print(rows: list[dict], shown: list[dict], summary: dict, n: int | None, tz=None) -> None:
    from replay.experiments.breaks import BY_NAME

    if not rows:
        out.print(f"no cache breaks in {summary['requests']:,} requests with usage"
                  + _skipped(summary))
        return
    title = ("Cache breaks, costliest first" + (f" (the {len(shown)} costliest of {count(len(rows))})"
                                                if len(shown) < len(rows) else ""))
    t = Table("session", "request", f"time ({zone_label(tz)})", "idle", "cause", "p (block kind)", "re-billed", "$",
              title=title + "; request: stream:index, re-billed: tokens")
    for c in t.columns:
        c.no_wrap = True  # ids, times and figures stay whole; only the cause and the block kind wrap
    for c in t.columns[4:6]:  # wrapped between words; a name too long for its column ends in "…", never split
        c.no_wrap, c.overflow = False, "ellipsis"
    for c in (t.columns[1], t.columns[3], *t.columns[6:]):
        c.justify = "right"
    # the costliest first, as the title says; ties keep request order (sorted is stable)
    for r in sorted(shown, key=lambda r: -r["cost"]):
        where = f"{r['p']} ({r['p_kind'] or 'end'})"
        t.add_row(esc(r["session"][:12]), f"{r['stream']}:{r['request']}",
                  esc((r.get("time_local") or "-").replace("T", " ")[:16]), duration_cell(r["idle_s"]),
                  esc(r["cause_label"]), esc(where), count(r["tokens"]), amount(r["cost"]))
    print_table(fit(t))
    s = Table("session", "agent", "breaks", "re-billed tokens", "$", "main cause",
              title=f"Breaks per session (the {len(summary['top_sessions'][:n])} costliest)")
    for x in summary["top_sessions"][:n]:
        s.add_row(esc(x["session"][:12]), esc(x["agent"] or "-"), count(x["breaks"]), count(x["tokens"]),
                  amount(x["cost"]), esc(BY_NAME[x["main_cause"]].label))
    print_table(fit(s))
    c = Table("cause", "evidence", "breaks", "re-billed tokens", "$", "share of tokens",
              title="Breaks by cause, most re-billed tokens first")
    for b in sorted(summary["by_cause"], key=lambda b: -b["tokens"]):
        if b["count"]:
            c.add_row(esc(b["label"]), b["evidence"], count(b["count"]), count(b["tokens"]), amount(b["cost"]),
                      _pct(b["share"]))
    print_table(fit(c))
    _print_provider(summary.get("provider") or {})
    out.print(f"{summary['breaks']:,} breaks in {summary['sessions_with_breaks']:,} session(s) "
              f"({summary['requests']:,} requests with usage) re-billed {summary['tokens']:,} tokens "
              f"({money(summary['cost'])}); a cause other than unexplained names {_pct(summary['named_share'])} of "
              f"those tokens ({_pct(summary['named_share_without_first_message'])} without first_message_rewritten, "
              f"{_pct(summary['named_share_direct'])} without any inferred cause)"
              + _skipped(summary))


def _print_provider(p: dict) -> None:
    """The provider's stated reasons (Claude Code 2.1.119+) beside the inferred causes."""
    if not p.get("breaks_with_reason") and not p.get("reasons_not_breaks"):
        return
    t = Table("provider's reason", "breaks", "cause agrees", "re-billed tokens", "inferred causes",
              title="The provider's reason for a miss beside the inferred cause (Claude Code 2.1.119+)")
    t.columns[4].no_wrap, t.columns[4].overflow = False, "ellipsis"  # wrapped between words, never inside a name
    for r in p["by_reason"]:
        t.add_row(esc(r["reason"]), count(r["breaks"]), f"{r['agree']:,} ({_pct(r['agree'] / r['breaks'])})",
                  count(r["tokens"]), esc(", ".join(f"{c} {n}" for c, n in r["causes"].items())))
    print_table(fit(t))
    silent = p["breaks_without_reason_in_reporting_versions"]
    causes = ", ".join(f"{c} {n}" for c, n in p["causes_without_reason_in_reporting_versions"].items())
    out.print(f"the cause agrees with the provider's reason at {p['agree']:,} of {p['breaks_with_reason']:,} "
              f"breaks ({_pct(p['agreement'])}); in the client versions that report reasons, "
              f"{silent:,} breaks carry none" + (f" ({esc(causes)})" if silent else "")
              + (f"; {p['reasons_not_breaks']:,} reasons fall on requests whose read is no break "
                 f"(a partial miss within the tolerance)" if p["reasons_not_breaks"] else ""))


def _skipped(summary: dict) -> str:
    k = summary.get("not_classified") or 0
    return f"; {k:,} requests of automatically cached models (OpenAI, Gemini) not classified" if k else ""


COMMANDS = [breaks]
