"""The `validate` command: the no-op replay against the recorded usage."""

from __future__ import annotations

import re
from pathlib import Path

import click
from rich.table import Table

from replay.cli.autoingest import auto_ingest_option
from replay.cli.common import (
    DB_OPTION, cache_options, dataset_option, echo_json, err, esc, fail_on, format_option, json_option,
    make_options, open_db, os_error_message, out, pick_dataset, print_table, slice_options
)


@click.command()
@DB_OPTION
@auto_ingest_option
@dataset_option("Dataset to validate [default: the only one].")
@cache_options
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write the PNG of simulated vs recorded cache reads [default: validate-<dataset>.png next to --db].")
@click.option("--worst", type=click.IntRange(1, 20), default=4, show_default=True, help="Sessions in the plot.")
@slice_options
@json_option("Print the full report as JSON.")
@format_option
def validate(db, dataset, ttl, breakpoints, observed_evictions, prices_file, price_date, plot_path, worst,
             since, until, projects, models, agents, tz_name, key_file, as_json):
    """Fidelity check: does the no-op replay reproduce the usage the log recorded?

    Per session and overall: recorded vs simulated input, cache reads, writes and cost, for
    the calibrated model (every run's: it copies the log's unexplained cache events), the
    model alone (predictive: hits and misses predicted from each request's recorded input
    size, time, model, TTL split and client events, and the first warm read; nothing from
    later sessions), and raw BPE counts without anchoring. Beside the model alone,
    two naive predictors given the same recorded input sizes, one that never breaks the cache
    and one that breaks it only on TTL expiry, and how many of their misses the model matches
    (its skill; docs/replay-model.md, "Skill").

    --since/--until/--project/--model/--agent check a slice: the sessions with a recorded
    request on a day in [--since, --until] (days in --timezone, this machine's zone by
    default), as `replay` slices them.
    """
    from replay.model.costs import PriceError
    from replay.experiments.validate import plot_worst, public
    from replay.experiments.validate import validate as run_validate

    with fail_on(PriceError, ValueError):
        opts = make_options(ttl, breakpoints, observed_evictions, prices_file, price_date)
    from replay.cli.usage import sliced
    from replay.experiments import slices
    from replay.store import StoreError

    con = open_db(db)
    dataset = pick_dataset(con, dataset, db)
    opts.prices.bind(dataset, key_file)
    slc = sliced(slices.make_slice, con, dataset, since, until, projects, models, agents, tz_name, key_file)
    with fail_on(StoreError):  # no session in the slice: the message names the days the logs cover
        keys = slices.slice_session_keys(con, dataset, slc) if slc else None
    with fail_on(PriceError):
        report = run_validate(con, dataset, opts, session_keys=keys)
    given = plot_path is not None
    # a dataset name may hold any character (`a/b`): the default file name keeps a safe form of it
    plot_path = plot_path or db.with_name("validate-" + re.sub(r"[^A-Za-z0-9._-]", "_", dataset) + ".png")
    try:
        plot_worst(report, plot_path, worst)
    except OSError as e:
        if given:
            raise
        # the plot beside the database is an extra: a read-only folder must not cost the check itself
        err.print(f"[yellow]warning:[/] {esc(os_error_message(e))}; no plot written (choose a path with --plot)")
        plot_path = None
    pub = public(report)
    pub["plot"] = str(plot_path) if plot_path else None
    pub["slice"] = slc
    if as_json:
        echo_json(pub)
        return
    _print_validation(pub, plot_path)


def _print_validation(pub: dict, plot_path: Path) -> None:
    from replay.experiments.validate import READ_MATCH_SHARE, READ_MATCH_TOKENS, TARGETS

    t = Table("session", "agent", "requests", "input", "reads", "writes", "cost", "reads matched", "ok",
              "ok (model only)")

    def pct(v, f):
        if v is None:
            return "n/a"
        style = "green" if abs(v) <= TARGETS[f] else "red"
        return f"[{style}]{v:+z.2%}[/]"

    def ok(v):
        return "no usage" if v is None else "yes" if v else "[red]no[/]"

    def share(v):
        return "-" if v is None else f"{v:.2%}"

    for s in pub["sessions"]:
        e, v = s["rel_error"], s["variants"]
        t.add_row(esc(s["session_id"][:12]), esc(s["agent"]), str(s["requests"]), *(pct(e[f], f) for f in TARGETS),
                  share(s["request_match"]), ok(s["within_targets"]), ok(v["model_only"]["within_targets"]))
    print_table(t)
    o = pub["overall"]
    if o["sessions_without_usage"]:
        out.print(f"{o['sessions_without_usage']} session(s) record no input usage (replayed on BPE counts, "
                  "not validated)")
    for agent, a in o["by_agent"].items():
        if a["sessions"]:
            c, m = a["variants"]["calibrated"], a["variants"]["model_only"]
            out.print(f"  {esc(agent)}: calibrated {c['sessions_within_targets']}/{a['sessions']} within targets, "
                      f"reads matched {share(c['request_match'])}; model only {m['sessions_within_targets']}/"
                      f"{a['sessions']}, {share(m['request_match'])}")
    for provider, a in o.get("by_provider", {}).items():
        m, e = a["variants"]["model_only"], a["variants"]["model_only"]["rel_error"]
        out.print(f"  {esc(provider)} caching, model only: cost {pct(e['cost'], 'cost')}, reads {pct(e['cache_read'], 'cache_read')}, {m['sessions_within_targets']}/{a['sessions']} within targets, reads matched {share(m['request_match'])}")
    names = {"calibrated": "calibrated", "model_only": "model only", "raw_bpe": "raw BPE"}
    vs = {k: pub["variants"][k] for k in names if k in pub["variants"]}
    f = Table("corpus-wide", *(names[k] for k in vs), title="Fidelity by cache-model variant")
    f.add_row(f"sessions within targets (input {TARGETS['input_total']:.0%}, reads {TARGETS['cache_read']:.0%}, "
              f"writes {TARGETS['cache_write']:.0%}, cost {TARGETS['cost']:.0%})",
              *(f"{v['sessions_within_targets']}/{v['sessions']}" for v in vs.values()))
    for fig, label in (("input_total", "input"), ("cache_read", "reads"), ("cache_write", "writes"), ("cost", "cost")):
        f.add_row(label, *("n/a" if v["rel_error"][fig] is None else f"{v['rel_error'][fig]:+z.2%}"
                           for v in vs.values()))
    f.add_row(f"requests whose read matches (within max({READ_MATCH_TOKENS} tokens, {READ_MATCH_SHARE:.0%}))",
              *(f"{share(v['request_match'])} of {v['requests']:,}" for v in vs.values()))
    f.add_row("  simulated less / more", *(f"{v['sim_less']:,} / {v['sim_more']:,}" for v in vs.values()))
    print_table(f)
    _print_skill(pub)
    _print_reasons(o.get("provider_reasons") or {})
    out.print(f"  recorded cost ${o['recorded']['cost']:,.2f}, simulated ${o['simulated']['cost']:,.2f}; "
              f"{o['requests_with_residual']:,} of {o['requests']:,} requests carry a residual")
    if plot_path:
        out.print(f"wrote the plot of simulated vs recorded cache reads to {esc(plot_path)} (--plot PATH to choose)")


def _print_skill(pub: dict) -> None:
    """The model-only variant beside the naive predictors given the same recorded input sizes."""
    naive = pub.get("naive") or {}
    if not naive:
        return
    mo = pub["variants"]["model_only"]
    cols = {"model only": mo, "never breaks": naive["never_breaks"], "TTL only": naive["ttl_only"]}
    t = Table("corpus-wide", *cols, title="Skill: model only against naive predictors on the same input sizes "
              "(never breaks: no expiry, no client rule; TTL only: breaks on TTL expiry only)")

    def pct(v, digits=2):
        return "n/a" if v is None else f"{v:+z.{digits}%}"

    t.add_row("sessions within targets", *(f"{v['sessions_within_targets']}/{v['sessions']}" for v in cols.values()))
    t.add_row("cost / writes", *(f"{pct(v['rel_error']['cost'])} / {pct(v['rel_error']['cache_write'])}"
                                 for v in cols.values()))
    t.add_row("requests matched", *("-" if v["request_match"] is None else
                                    f"{v['request_match']:.2%} ({v['requests'] - v['matched']:,} missed)"
                                    for v in cols.values()))
    vs = [naive[k]["vs_model_only"] for k in ("never_breaks", "ttl_only")]
    t.add_row("its misses the model matches", "", *(f"{x['explained']:,} of {x['naive_misses']:,}"
                                                    + ("" if x["explained_share"] is None
                                                       else f" ({x['explained_share']:.0%})") for x in vs))
    t.add_row("its matches the model misses", "", *(f"{x['new_misses']:,}" for x in vs))
    t.add_row("skill: 1 - model misses / its misses", "", *(pct(x["skill"], 0) for x in vs))
    print_table(t)


def _print_reasons(pr: dict) -> None:
    """The predicted misses scored against the provider's stated reasons (Claude Code 2.1.119+)."""
    if not pr.get("requests"):
        return
    names = {"model_only": "model only", "never_breaks": "never breaks", "ttl_only": "TTL only",
             "calibrated": "calibrated"}
    vs = {names[k]: v for k, v in pr["variants"].items() if k in names}
    t = Table("against the provider's reasons", *vs,
              title=f"Predicted misses against the provider's stated reasons ({pr['requests']:,} requests of client "
                    f"{pr['from_version']}+, {pr['provider_misses']:,} reported misses)")

    def share(v):
        return "-" if v is None else f"{v:.1%}"

    t.add_row("requests where both agree", *(share(v["agreement"]) for v in vs.values()))
    t.add_row("reported misses predicted (recall)", *(f"{v['both']:,} ({share(v['recall'])})" for v in vs.values()))
    t.add_row("predicted misses reported (precision)", *(share(v["precision"]) for v in vs.values()))
    t.add_row("predicted misses not reported", *(f"{v['replay_only']:,}" for v in vs.values()))
    reasons = sorted({r for v in vs.values() for r in v["by_reason"]})
    for r in reasons:
        t.add_row(f"  {esc(r)} predicted", *(
            f"{v['by_reason'][r]['predicted']:,} of {v['by_reason'][r]['misses']:,}" if r in v["by_reason"] else "-"
            for v in vs.values()))
    print_table(t)
    out.print("  per client version: --json, overall.provider_reasons.variants.*.by_version")


COMMANDS = [validate]
