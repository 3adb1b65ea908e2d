"""Result commands: `compare`, `report` and `validate`."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from replay.cli.common import (
    DB_OPTION, cache_options, dataset_option, echo_json, esc, fail_on, json_option, make_options, max_risk_option,
    objective_option, open_db, out, out_dir_option, pick_dataset
)


@click.command()
@DB_OPTION
@dataset_option("Only runs of this dataset.")
@json_option("Print strict JSON (one object per run; no NaN: missing values are null).")
def compare(db, dataset, as_json):
    """Compare finished runs: tokens, cost, cache hit rate, busts and risk figures, with
    savings vs the no-op baseline run of the same dataset and cache settings, the baseline's
    own fidelity against the recorded bill, and each configuration's saving under both
    cache-model variants (calibrated and model-only) where both were run.

    Every saving carries a 95% interval: a paired percentile bootstrap over sessions (2,000
    seeded resamples of the sessions with replacement, the saving ratio
    sum(baseline - run) / sum(baseline) recomputed on each). A saving is "not distinguishable"
    when its interval contains 0 or it is smaller than the baseline's own fidelity error."""
    from analysis.compare import compare as run_compare

    con = open_db(db)
    rows = run_compare(con, dataset)
    if as_json:
        click.echo(json.dumps(rows, indent=2, allow_nan=False))
        return
    if not rows:
        out.print(f"no finished runs in {esc(db)}; run `ctxreplay replay --db {esc(db)} --policy noop` first")
        return
    _print_runs(rows)
    _print_variants(rows)
    seen = set()
    for r in rows:
        fid = r["baseline_fidelity"]
        if fid and r["baseline_run"] not in seen and fid["cost_rel_error"] is not None:
            seen.add(r["baseline_run"])
            out.print(f"baseline {esc(r['baseline_run'])} ({esc(r['dataset'])}, {r['variant'].replace('_', '-')}, "
                      f"TTL {esc(r['cache_config'].get('ttl'))}): simulated ${fid['baseline_cost']:,.2f} vs recorded "
                      f"${fid['recorded_cost']:,.2f} ({fid['cost_rel_error']:+.2%})")
    out.print("savings are measured against the baseline of the same variant and settings; [95% interval] is a paired "
              "bootstrap over sessions; n.d. = not distinguishable (the interval contains 0, or the saving is smaller "
              "than that baseline's fidelity error)")


def _saving(r: dict, f: str) -> str:
    """'+8.23% [+4.93, +11.09]' with ' n.d.' when not distinguishable; '-' without a baseline."""
    p = (r.get("saved_pct") or {}).get(f)
    if p is None:
        return "-"
    i = (r.get("interval") or {}).get(f)
    text = f"{p:+.2%}" + (f" [{100 * i['low']:+.2f}, {100 * i['high']:+.2f}]" if i else "")
    if r["policy"] != "noop" and not (r.get("distinguishable") or {}).get(f):
        text += " n.d."
    return text


def _settings(r: dict) -> str:
    from analysis.tables import non_default, show_value

    nd = non_default(r["policy"], r["params"])
    return ", ".join(f"{k}={show_value(r['policy'], k, v)}" for k, v in nd.items())[:40] or "defaults"


def _print_table(t: Table) -> None:
    """Full width into a pipe or file (wrapped cells are unreadable there); the terminal's otherwise."""
    if out.is_terminal:
        out.print(t)
    else:
        from rich.console import Console

        Console(soft_wrap=True, width=240).print(t)


def _print_runs(rows: list[dict]) -> None:
    t = Table("run", "policy", "settings", "TTL", "variant", "cost $", "cost saved [95%]", "context saved [95%]",
              "delivered saved [95%]", title="Savings vs the no-op baseline")
    risk = Table("run", "policy", "variant", "hit rate", "busts", "hints", "dangling", "stale", "re-read",
                 title="Cache and risk")
    for r in rows:
        f = r["figures"]
        variant = r["variant"].replace("_", "-")
        t.add_row(esc(r["run_id"]), esc(r["policy"]), esc(_settings(r)), esc(r["cache_config"].get("ttl")), variant,
                  f"{f['cost']:,.2f}", *(esc(_saving(r, k)) for k in ("cost", "context_tokens", "tokens_delivered")))
        risk.add_row(esc(r["run_id"]), esc(r["policy"]), variant,
                     "-" if f["hit_rate"] is None else f"{f['hit_rate']:.1%}", f"{f['busts']:.0f}", f"{f['hints']:.0f}",
                     f"{f['dangling_refs']:.0f}", f"{f['stale_refs']:.0f}", f"{f['trimmed_reread']:.0f}")
    _print_table(t)
    _print_table(risk)


def _print_variants(rows: list[dict]) -> None:
    """One line per configuration run under both variants: how much of the saving rests on calibration."""
    t = Table("policy", "settings", "TTL", "calibrated: cost saved [95%]", "model-only: cost saved [95%]",
              "calibrated - model-only", title="Cost saved under both cache-model variants")
    seen = set()
    for r in rows:
        v = r.get("variants") or {}
        if r["policy"] == "noop" or not {"calibrated", "model_only"} <= set(v):
            continue
        key = (v["calibrated"]["run_id"], v["model_only"]["run_id"])
        if key in seen:
            continue
        seen.add(key)
        gap = (r.get("calibrated_minus_model_only") or {}).get("cost")
        cells = [esc(_saving({"policy": r["policy"], **v[name]}, "cost")) for name in ("calibrated", "model_only")]
        t.add_row(esc(r["policy"]), esc(_settings(r)), esc(r["cache_config"].get("ttl")), *cells,
                  "-" if gap is None else f"{100 * gap:+.2f} points")
    if seen:
        _print_table(t)


@click.command()
@DB_OPTION
@dataset_option("Dataset [default: the only one].")
@out_dir_option("Directory for index.html, report.md and img/.", required=True)
@objective_option("What the recommendation minimizes.")
@max_risk_option("Risk limit of the recommendation [default: stale_refs=0, dangling_refs=0].")
def report(db, dataset, out_dir, objective, max_risk):
    """Write the policy report, led by the answer: the recommendation (or "no policy beats the
    baseline on these logs") with its saving in percent and dollars, its 95% interval and the
    runner-up's differing setting; then each configuration's saving under both cache-model
    variants, the baseline's fidelity (calibrated and model-only), dataset overview,
    leaderboard, per-agent table, Pareto plot, sweep heatmaps, cache-price study, per-tool
    breakdown, risk table and a reproducibility footer. index.html is self-contained (works offline). Files are written
    under a temporary name and renamed when the whole report is complete."""
    from analysis.report import build
    from replay.experiments.tune import parse_limits
    from replay.experiments.sweep import SpecError

    with fail_on(SpecError):
        limits = parse_limits(max_risk) if max_risk else None
    con = open_db(db)
    dataset = pick_dataset(con, dataset, db)
    con.close()
    with fail_on(ValueError, OSError):
        res = build(db, dataset, out_dir, objective=objective, max_risk=limits)
    out.print(f"wrote {esc(out_dir)}/index.html and report.md ({res['runs']} runs, {res['figures']} figures)")
    out.print(esc(res["answer"]["headline"]))


@click.command()
@DB_OPTION
@dataset_option("Dataset to validate [default: the only one].")
@cache_options
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write the PNG of simulated vs recorded cache reads [default: validate-<dataset>.png next to --db].")
@click.option("--worst", type=click.IntRange(1, 20), default=4, show_default=True, help="Sessions in the plot.")
@json_option("Print the full report as JSON.")
def validate(db, dataset, ttl, breakpoints, observed_evictions, prices_file, price_date, plot_path, worst, as_json):
    """Fidelity check: does the no-op replay reproduce the usage the log recorded?

    Per session and overall: recorded vs simulated input total, cache reads, cache writes
    and cost with relative errors, for the calibrated model (the one every run uses), the
    TTL/breakpoint model alone, and raw BPE counts without anchoring.
    """
    from replay.model.costs import PriceError
    from replay.experiments.validate import plot_worst, public
    from replay.experiments.validate import validate as run_validate

    with fail_on(PriceError, ValueError):
        opts = make_options(ttl, breakpoints, observed_evictions, prices_file, price_date)
    con = open_db(db)
    dataset = pick_dataset(con, dataset, db)
    with fail_on(PriceError):
        report = run_validate(con, dataset, opts)
    plot_path = plot_path or db.with_name(f"validate-{dataset}.png")
    plot_worst(report, plot_path, worst)
    pub = public(report)
    pub["plot"] = str(plot_path)
    if as_json:
        echo_json(pub)
        return
    _print_validation(pub, plot_path)


def _print_validation(pub: dict, plot_path: Path) -> None:
    from replay.experiments.validate import TARGETS

    t = Table("session", "agent", "requests", "input", "reads", "writes", "cost", "ok")

    def pct(v, f):
        if v is None:
            return "n/a"
        style = "green" if abs(v) <= TARGETS[f] else "red"
        return f"[{style}]{v:+.2%}[/]"

    for s in pub["sessions"]:
        e = s["rel_error"]
        ok = "no usage" if s["within_targets"] is None else "yes" if s["within_targets"] else "[red]no[/]"
        t.add_row(esc(s["session_id"][:12]), esc(s["agent"]), str(s["requests"]), *(pct(e[f], f) for f in TARGETS), ok)
    out.print(t)
    o = pub["overall"]
    if o["sessions_without_usage"]:
        out.print(f"{o['sessions_without_usage']} session(s) record no input usage (replayed on BPE counts, "
                  "not validated)")
    for agent, a in o["by_agent"].items():
        if a["sessions"]:
            out.print(f"  {esc(agent)}: {a['within_targets']}/{a['sessions']} within targets; " + ", ".join(
                f"{f} {v:+.2%}" for f, v in a["rel_error"].items() if v is not None))
    out.print(f"{o['sessions_within_targets']}/{o['sessions']} sessions within targets "
              f"(input {TARGETS['input_total']:.0%}, reads {TARGETS['cache_read']:.0%}, "
              f"writes {TARGETS['cache_write']:.0%}, cost {TARGETS['cost']:.0%})")
    for name, v in pub["variants"].items():
        errs = v.get("rel_error", v)  # a variant is its errors, or an object holding them
        within = v.get("sessions_within_targets")
        out.print(f"  {name:11s} corpus-wide: " + ", ".join(
            f"{f} {errs[f]:+.2%}" if errs.get(f) is not None else f"{f} n/a" for f in TARGETS)
            + ("" if within is None else f"; {within}/{o['sessions']} sessions within targets"))
    out.print(f"  recorded cost ${o['recorded']['cost']:,.2f}, simulated ${o['simulated']['cost']:,.2f}; "
              f"{o['requests_with_residual']} of {o['requests']} requests carry a residual; plot: {esc(plot_path)}")


COMMANDS = [compare, report, validate]
