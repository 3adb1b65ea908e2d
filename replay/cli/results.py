"""Result commands: `compare` and `report` (`validate` is in `replay.cli.fidelity`)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from replay.cli.common import (
    DB_OPTION, dataset_option, err, esc, fail, fail_on, format_option, json_option, max_risk_option,
    objective_option, open_db, out, out_dir_option, pick_dataset, slice_options
)
from replay.cli.fmt import money, wide_option
from replay.cli.usage import filter_options


SORTS = ("started", "cost", "saved", "context", "delivered", "policy", "run")


def _sort_key(by: str):
    def saved(f):
        def key(r):
            v = (r.get("saved_pct") or {}).get(f)
            return (v is None, -(v or 0.0), r["started_at"])
        return key

    return {
        "started": lambda r: r["started_at"],
        "cost": lambda r: (r["figures"]["cost"] is None, r["figures"]["cost"] or 0.0, r["started_at"]),
        "saved": saved("cost"), "context": saved("context_tokens"), "delivered": saved("tokens_delivered"),
        "policy": lambda r: (r["policy"], r["started_at"]), "run": lambda r: r["run_id"],
    }[by]


@click.command()
@DB_OPTION
@dataset_option()
@click.option("--policy", "policies", metavar="NAME", multiple=True,
              help="Only runs of this policy (repeatable; `noop` shows the baselines).")
@click.option("--sort", type=click.Choice(SORTS), default="started", show_default=True,
              help="Row order: started (run order), cost (lowest first), saved / context / delivered (largest "
              "saving of cost, context tokens or delivered tokens first), policy, run.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Show the first N rows (after --sort).")
@click.option("--run-baselines", is_flag=True,
              help="Run the missing no-op baselines first (one `replay --policy noop` per cache setting that has "
              "runs but no baseline), so every saving can be measured.")
@slice_options
@wide_option
@json_option("Print strict JSON (one object per run; no NaN: missing values are null).")
@format_option
def compare(db, dataset, policies, sort, limit, run_baselines, since, until, projects, models, agents, tz_name,
            key_file, wide, as_json):
    """Compare finished runs: tokens, cost, cache hit rate, busts and risk figures, with
    savings vs the no-op baseline run of the same dataset and cache settings, the baseline's
    own fidelity against the recorded bill, and each configuration's saving under both
    cache-model variants (calibrated and model-only) where both were run.

    Every saving carries a 95% interval: a paired percentile bootstrap over sessions (2,000
    seeded resamples of the sessions with replacement, the saving ratio
    sum(baseline - run) / sum(baseline) recomputed on each). A saving is "not distinguishable"
    when its interval contains 0 or it is smaller than the baseline's own fidelity error.

    A saving needs a no-op run with the same cache and price settings: runs without one are
    listed with the command that makes it (or give --run-baselines).

    A run of a dataset slice (`replay`/`sweep` with --since/--until/--project/--model/--agent)
    is measured only against a no-op baseline of the same slice, never the whole dataset's.
    Without those options every run is listed (a sliced run's settings end with its slice);
    with them, only the runs of exactly that slice."""
    from analysis.compare import compare as run_compare
    from replay.policies import REGISTRY

    unknown = [p for p in policies if p not in REGISTRY]
    if unknown:
        fail(f"--policy {unknown[0]!r}: no such policy; known: {', '.join(sorted(REGISTRY))}")
    con = open_db(db, read_only=not run_baselines)
    dataset = pick_dataset(con, dataset, db)
    slc, sliced = _wanted_slice(con, dataset, (since, until, projects, models, agents, tz_name, key_file))

    def of_slice(rows):
        return [r for r in rows if r["cache_config"].get("slice") == slc] if sliced else rows

    if run_baselines:
        _run_missing_baselines(con, db, dataset, of_slice(run_compare(con, dataset)), quiet=as_json)
    rows = of_slice(run_compare(con, dataset))
    for r in rows:
        if r["policy"] != "noop" and not r.get("baseline_run"):
            r["baseline_missing"] = _baseline_command(db, r)
    shown = [r for r in rows if not policies or r["policy"] in policies]
    shown.sort(key=_sort_key(sort))
    if limit is not None:
        shown = shown[:limit]
    if as_json:
        click.echo(json.dumps(shown, indent=2, allow_nan=False))
        return
    if not rows:
        extra = f" {slice_text(slc)}" if slc else ""
        out.print(f"no finished runs of {esc(dataset)}{' in this slice' if slc else ''} in {esc(db)}; run "
                  f"`ctxreplay replay --db {esc(db)} --policy noop{esc(extra)}` first")
        return
    if not shown:
        out.print(f"no finished runs of {esc(', '.join(policies))} ({len(rows)} runs of other policies)")
        return
    from replay.cli.compare_view import print_runs, print_variants

    print_runs(shown, _sliced_settings, wide)
    print_variants(shown, _sliced_settings, wide)
    if len(shown) < len(rows):
        out.print(f"{len(shown)} of {len(rows)} runs shown")
    seen = set()
    for r in shown:
        fid = r["baseline_fidelity"]
        if fid and r["baseline_run"] not in seen and fid["cost_rel_error"] is not None:
            seen.add(r["baseline_run"])
            out.print(f"baseline {esc(r['baseline_run'])} ({esc(r['dataset'])}, {r['variant'].replace('_', '-')}, "
                      f"TTL {esc(r['cache_config'].get('ttl'))}): simulated {money(fid['baseline_cost'])} vs recorded "
                      f"{money(fid['recorded_cost'])} ({fid['cost_rel_error']:+z.2%})")
    old = [r["run_id"] for r in shown if r.get("before_latest_ingest")]
    if old:
        out.print(f"[yellow]{len(old)} run(s) ({esc(', '.join(old[:4]))}{', ...' if len(old) > 4 else ''}) were stored "
                  "before the latest ingest into this dataset: the sessions added or read again since are not in "
                  "them, and the cache model's system prefix for streams that start cold comes from the whole "
                  "dataset, so a baseline stored since may not describe the same replay; run them again to compare "
                  "like with like[/]")
    for cmd, ids in _missing_baselines(db, shown).items():
        out.print(f"[yellow]no no-op baseline for {len(ids)} run(s) ({esc(', '.join(ids[:4]))}"
                  f"{', ...' if len(ids) > 4 else ''}) with their cache and price settings, so their savings show "
                  f"`-`; measure them with:[/]\n  {esc(cmd)}\n  (or `ctxreplay compare --run-baselines`)")
    out.print("savings are measured against the baseline of the same variant and settings; [95% interval] is a paired "
              "bootstrap over sessions; n.d. = not distinguishable (the interval contains 0, or the saving is smaller "
              "than that baseline's fidelity error)")


def _wanted_slice(con, dataset: str, slice_args: tuple) -> tuple[dict | None, bool]:
    """(the slice the options select, whether any slice option was given)."""
    from replay.cli.usage import sliced
    from replay.experiments import slices

    slc = sliced(slices.make_slice, con, dataset, *slice_args)
    return slc, slc is not None


def slice_text(slc: dict | None) -> str:
    from replay.experiments.slices import slice_text as text

    return text(slc)


# the cache settings a baseline command repeats when they differ from `CacheConfig`'s defaults
CACHE_FLAGS = ("ttl", "breakpoints", "warm_start", "turn_end_write", "thinking_switch", "resume", "task_turns",
               "skill_turns", "tool_search", "warm_prefix", "unknown_times", "system_prefix", "prefix_versions", "clock", "openai_retention",
               "openai_increments", "openai_reasoning", "openai_second_request", "openai_warm_prefix", "openai_routing_miss")


def _cache_fields() -> set[str]:
    import dataclasses

    from replay.model.cache import CacheConfig

    return {f.name for f in dataclasses.fields(CacheConfig)}


def _baseline_command(db: Path, r: dict, variant: str | None = "") -> str:
    """The command that stores the no-op baseline `r` lacks (a sweep's runs: its spec, re-run);
    ``variant`` None: both variants (replay's default); "": the row's own."""
    import shlex

    from replay.model.cache import CacheConfig

    cfg, prices = r["cache_config"], r.get("prices") or {}
    if set(cfg) - _cache_fields() - {"slice"} or cfg.get("lookback_blocks") is not None or cfg.get("min_cacheable") is not None:
        spec = cfg.get("sweep_spec")
        return (f"ctxreplay sweep {shlex.quote(str(spec)) if isinstance(spec, str) and len(spec) < 200 else 'SPEC'} "
                f"--db {shlex.quote(str(db))}   (a sweep stores a no-op baseline per cache setting; re-running it "
                "resumes it)")
    parts = ["ctxreplay", "replay", "--db", str(db), "--dataset", r["dataset"], "--policy", "noop"]
    if variant is not None:
        parts += ["--variants", (variant or r["variant"]).replace("_", "-")]
    defaults = CacheConfig().as_dict()
    for key in CACHE_FLAGS:
        if cfg.get(key, defaults[key]) != defaults[key]:
            parts += ["--" + key.replace("_", "-"), str(cfg[key])]
    if prices.get("override_file"):
        parts += ["--prices", prices["override_file"]]
    if prices.get("price_date"):
        from replay.model.costs import DEFAULT_PRICE_DATE

        if prices["price_date"] != DEFAULT_PRICE_DATE:
            parts += ["--price-date", prices["price_date"]]
    cmd = " ".join(shlex.quote(p) for p in parts)
    return cmd + (" " + slice_text(cfg["slice"]) if cfg.get("slice") else "")


def _missing_baselines(db: Path, rows: list[dict]) -> dict[str, list[str]]:
    """command -> run ids, for the runs without a baseline; one command for both variants when
    both lack theirs."""
    groups: dict[str, dict[str, list[str]]] = {}
    first: dict[str, dict] = {}
    for r in rows:
        if r.get("baseline_missing"):
            both = _baseline_command(db, r, None)
            groups.setdefault(both, {}).setdefault(r["variant"], []).append(r["run_id"])
            first.setdefault(both, r)
    found: dict[str, list[str]] = {}
    for both, by_variant in groups.items():
        if len(by_variant) == 2 and both.startswith("ctxreplay replay"):
            found[both] = [i for ids in by_variant.values() for i in ids]
        else:
            for v, ids in by_variant.items():
                found.setdefault(_baseline_command(db, first[both], v), []).extend(ids)
    return found


def _run_missing_baselines(con, db: Path, dataset: str, rows: list[dict], quiet: bool) -> None:
    """Store a no-op run for every (cache settings, prices) of `rows` that has runs but no baseline."""
    from replay import store
    from replay.engine import ReplayOptions
    from replay.experiments import runs
    from replay.model.cache import CacheConfig
    from replay.model.costs import PriceError, PriceTable
    from replay.policies import build

    todo: dict[str, tuple[dict, dict]] = {}
    for r in rows:
        if r["policy"] == "noop" or r.get("baseline_run") or r["dataset"] != dataset:
            continue
        cfg = r["cache_config"]
        if set(cfg) - _cache_fields() - {"slice"}:
            continue  # a sweep's run: its spec holds the baseline
        todo.setdefault(json.dumps([cfg, r["prices"]], sort_keys=True), (cfg, r["prices"]))
    if not todo:
        return
    loaded: dict[str, object] = {}
    for cfg, prices in todo.values():
        slc = cfg.get("slice")
        key = json.dumps(slc, sort_keys=True)
        if key not in loaded:
            with fail_on(store.StoreError):
                loaded[key] = runs.load(con, dataset, slc)
        with fail_on(PriceError, ValueError):
            table = PriceTable(prices["price_date"], prices.get("overrides") or {}, prices.get("override_file"))
            cache = CacheConfig(**{k: v for k, v in cfg.items() if k != "slice"})
            run_id, _ = runs.run_policy(con, loaded[key], build("noop"), ReplayOptions(cache, table), slice=slc)
        if not quiet:
            err.print(f"ran no-op baseline {esc(run_id)} ({esc(json.dumps(cfg))})")


def _settings(r: dict) -> str:
    from analysis.tables import non_default, show_value

    nd = non_default(r["policy"], r["params"])
    return ", ".join(f"{k}={show_value(r['policy'], k, v)}" for k, v in nd.items()) or "defaults"


def _sliced_settings(r: dict) -> str:
    """The settings, then the run's dataset slice if it has one (`defaults; slice --since 2026-02-03`)."""
    slc = r["cache_config"].get("slice")
    return _settings(r) + (f"; slice {slice_text(slc)}" if slc else "")


@click.command()
@DB_OPTION
@dataset_option()
@out_dir_option("Directory for index.html, report.md and img/.", required=True)
@objective_option("What the recommendation minimizes.")
@max_risk_option("Raise (or set) the limit of one risk counter, or limit another run figure (repeatable), e.g. "
                 "unseen_write_risk=80 or busts=10 [default: every risk counter <= 0].")
@click.option("--min-saving", "min_saving", type=click.FloatRange(min=0), default=None, metavar="AMOUNT",
              help="The saving per replayed session worth acting on, in the objective's units "
              "[default: 0.01 ($) for cost, 1000 (context tokens) for tokens].")
@filter_options
@json_option("Print strict JSON: {out, runs, figures, recommendation, answer}.")
def report(db, dataset, out_dir, objective, max_risk, min_saving, since, until, projects, models, agents, tz_name,
           key_file, prices_file, price_date, as_json):
    """Write the policy report, led by the answer: the recommendation (or "no policy beats the
    baseline on these logs") with its saving in percent and dollars, its 95% interval and the
    runner-up's differing setting; then each configuration's saving under both cache-model
    variants, the baseline's fidelity (calibrated and model-only), dataset overview,
    leaderboard, per-agent table, Pareto plot, sweep heatmaps, cache-price study, per-tool
    breakdown, risk table and a reproducibility footer. index.html is self-contained (works offline). Files are written
    under a temporary name and renamed when the whole report is complete.

    The report covers the runs of one slice of the dataset: without --since/--until/--project/
    --model/--agent the runs of the whole dataset, with them only the runs stored for exactly
    that slice (`replay` or `sweep` with the same options). The dataset overview, baseline
    fidelity check and per-tool breakdown describe the whole dataset either way.

    The recommendation's rules (docs/report.md): a run is measured only against the no-op
    baseline of the same dataset, slice, cache and price settings; a run with any risk
    counter above its limit is dropped and named with the counter and its value (risk
    counters: dangling_refs, stale_refs, trimmed_reread and every policy counter named
    *_risk or *_refs, such as unseen_write_risk; each limited to 0 unless --max-risk says
    otherwise); a saving is acted on only when it is distinguishable and at least
    --min-saving per session, else the answer is "no policy saves enough to act on".

    The fidelity check and the cache breaks price the recorded usage with the prices the
    report's runs were replayed with, or with --prices/--price-date when given (a model
    without a price in either is one `error:` line naming it).

    Without a finished run of the dataset and slice it stops at once, with one `error:` line
    naming the commands that store a no-op baseline and a policy run (or a sweep); without the
    default database yet, it names the ingest to run first (a report compares runs stored after
    the ingest, so it does not read the agents' log folders itself as `usage` does)."""
    from analysis.report import build
    from analysis.rules import parse_limits
    from replay.cli.usage import price_table
    from replay.model.costs import PriceError

    with fail_on(ValueError):
        limits = parse_limits(max_risk) if max_risk else None
    given = _db_given()
    if not db.exists() and not given:
        _no_database_yet(db, out_dir)
    con = open_db(db)
    dataset = pick_dataset(con, dataset, db)
    slc, _ = _wanted_slice(con, dataset, (since, until, projects, models, agents, tz_name, key_file))
    commands = _runs_first(con, db if given else None, dataset, slc)  # before the slow work
    con.close()
    prices = price_table(prices_file, price_date).bind(dataset, key_file) if prices_file or price_date else None
    with fail_on(ValueError, OSError, PriceError):
        res = build(db, dataset, out_dir, objective=objective, max_risk=limits, slice=slc, min_per_session=min_saving,
                    prices=prices)
    if as_json:
        from analysis.compare import strict

        click.echo(json.dumps(strict({"dataset": dataset, "slice": slc, **res}), indent=2, allow_nan=False,
                              default=str))
        return
    out.print(f"wrote {esc(out_dir)}/index.html and report.md ({res['runs']} runs, {res['figures']} figures)")
    out.print(esc(res["answer"]["headline"]))
    if res["answer"].get("verdict") == "no_runs":
        out.print(f"[yellow]for example:[/] {esc(commands)}")
    if res["answer"].get("without_baseline"):
        from analysis.compare import compare as run_compare

        con = open_db(db)
        rows = [r for r in run_compare(con, dataset) if r["policy"] != "noop" and not r.get("baseline_run")
                and r["cache_config"].get("slice") == slc]
        for r in rows:
            r["baseline_missing"] = True
        for cmd, ids in _missing_baselines(db, rows).items():
            out.print(f"[yellow]{len(ids)} run(s) have no no-op baseline, so the report cannot measure their "
                      f"savings; store it with[/]\n  {esc(cmd)}\n  then write the report again")


def _db_given() -> bool:
    """Whether --db named the database (else the default one, or $CTXREPLAY_DB's)."""
    from replay.cli.autoingest import DB_SOURCE

    ctx = click.get_current_context(silent=True)
    return ctx is None or ctx.meta.get(DB_SOURCE, "option") == "option"


def _no_database_yet(db: Path, out_dir: Path) -> None:
    """No default database yet: a report compares stored runs, so reading the logs alone (as
    `usage` does on its own) would not make one; say what to run first, in order."""
    import shlex

    from analysis.report import first_runs
    from replay.ingest.roots import default_log_roots, shown

    try:
        roots = [shown(r.path) for r in default_log_roots()]
    except RuntimeError:  # no home folder
        roots = []
    logs = " ".join(roots) if roots else "PATH"
    fail(f"no database at {db} yet: a report compares policy runs stored in it. First read your logs into it: "
         f"`ctxreplay ingest {logs}`" + (" (the agents' default log folders found here)" if roots else
                                         " (a folder of agent logs)")
         + f"; then store runs: {first_runs(None, None, None)}; then `ctxreplay report --out "
         f"{shlex.quote(str(out_dir))}`")


def _runs_first(con, db: Path | None, dataset: str, slc: dict | None) -> str:
    """Fail at once (before the report's slow work) when the dataset has no finished run of this
    slice, naming the commands that store them; else the commands that store a policy run (the
    report names them when it finds no-op baselines only). ``db`` None: the default database
    (not repeated)."""
    from analysis.report import first_runs, no_runs_text
    from replay import store

    stored = [{"policy": p, "cache_config": json.loads(c)} for p, c in con.execute(
        "SELECT policy, cache_config FROM runs r WHERE dataset = ? AND status = 'finished' AND EXISTS "
        "(SELECT 1 FROM run_sessions s WHERE s.run_id = r.run_id)", [dataset]).fetchall()]
    several = len(store.dataset_names(con)) > 1
    named = dataset if several else None
    mine = [r for r in stored if r["cache_config"].get("slice") == slc]
    if not mine:
        fail(no_runs_text(dataset, slc, stored, first_runs(db, named, slc)))
    return first_runs(db, named, slc, baseline=not any(r["policy"] == "noop" for r in mine))


COMMANDS = [compare, report]
