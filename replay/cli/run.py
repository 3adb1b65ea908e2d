"""Run commands: `policies`, `replay`, `runs`, `sweep` and `tune`."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from replay.cli.common import (
    DB_OPTION, SPEC_ARGUMENT, cache_options, count_progress, dataset_option, echo_json, err, esc, fail, fail_on,
    format_option, json_option, make_options, max_risk_option, objective_option, open_db, out, pick_dataset,
    print_table, slice_options
)
from replay.cli.fmt import count, fit, money, pct, wide_option

SPEC_DATASET_HELP = "Dataset [default: the spec's, or the only one]."


def _parse_sets(sets: tuple[str, ...]) -> dict[str, str]:
    parsed = {}
    for item in sets:
        if "=" not in item:
            fail(f"--set {item!r}: expected key=value")
        k, v = item.split("=", 1)
        parsed[k.strip()] = v
    return parsed


def _load_dataset(db: Path, dataset: str | None, slice_args: tuple | None = None):
    """Open `db` for writing runs and load the chosen dataset: (connection, name, dataset, slice);
    ``slice_args``: the slice options' values (None or none given: the whole dataset)."""
    from replay.cli.usage import sliced
    from replay.experiments import slices

    con = open_db(db, read_only=False)
    dataset = pick_dataset(con, dataset, db)
    if not slice_args:
        slice_args = (None, None, (), (), (), "UTC", None)  # the whole dataset
    slc, ds = sliced(slices.load_slice, con, dataset, *slice_args)
    return con, dataset, ds, slc


def _warn_calibrated_whatif(opts: dict) -> None:
    """A calibrated run under a cache what-if setting prices the log's recorded misses: say so once."""
    from replay.model.whatif import whatif_settings

    cal = opts.get("calibrated")
    found = whatif_settings(cal.cache.as_dict()) if cal is not None else []
    if found:
        err.print(f"warning: {', '.join(found)} is a cache what-if: the calibrated run copies the log's recorded cache "
                  "misses, which that setting would change, so the report does not rank it; the model-only run is "
                  "the prediction (`ctxreplay whatif` compares cache settings)", markup=False, highlight=False)


def _notes(spec) -> None:
    """What load_spec changed (a what-if grid runs model-only), on stderr once the command has
    succeeded (a failure stays one `error:` line); --json puts them in `notes`."""
    for note in spec.notes:
        err.print(f"note: {note}", markup=False, highlight=False)


def _slice(con, dataset: str, slice_args: tuple | None) -> dict | None:
    """The stored form of the slice options (`replay.experiments.slices.make_slice`); None: whole dataset."""
    if not slice_args:
        return None
    from replay.cli.usage import sliced
    from replay.experiments import slices

    return sliced(slices.make_slice, con, dataset, *slice_args)


@click.command()
@json_option()
def policies(as_json: bool) -> None:
    """List the registered policies with their parameters, defaults and sources (details:
    docs/policies.md)."""
    import dataclasses

    from replay.policies import REGISTRY

    rows = []
    for name, cls in sorted(REGISTRY.items()):
        params = [{"name": f.name, "type": str(f.type), "default": f.default if f.default is not dataclasses.MISSING
                   else None} for f in cls.param_fields()]
        composite = name == "pipeline"
        rows.append({"name": name, "source": _source(cls.source), "summary": cls.summary,
                     "insert_time": None if composite else cls.insert_time(),
                     "retroactive": None if composite else cls.retroactive(), "params": params})
    if as_json:
        echo_json(rows, default=str)
        return
    for r in rows:
        mode = ("composite" if r["insert_time"] is None else "insert-time" if r["insert_time"]
                else "retroactive" if r["retroactive"] else "baseline")
        out.print(f"[bold cyan]{r['name']}[/] ({mode}) — {r['summary']}")
        out.print(f"  source: {r['source']}")
        for p in r["params"]:
            out.print(f"  {p['name']} = {p['default']!r}  [dim]({p['type']})[/]")
    out.print("Each policy's algorithm, the facts it rests on and its parameters: docs/policies.md. "
              "Run one with `ctxreplay replay --policy NAME --set key=value`.")


def _source(text: str) -> str:
    """A policy's source line, its design-note citation pointed at docs/policies.md (the
    repository has no DESIGN.md)."""
    import re

    return re.sub(r"DESIGN\.md section \d+", "docs/policies.md", text)


def _policy_params(policy_name: str, config_file: Path | None, sets: tuple[str, ...]) -> tuple[str, dict]:
    """The policy name and parameters from --config (if any) overridden by --set."""
    import tomllib

    params: dict = {}
    if config_file:
        try:
            cfg = tomllib.loads(config_file.read_text())
        except tomllib.TOMLDecodeError as e:
            fail(f"{config_file}: {e}")
        unknown = set(cfg) - {"policy", "params"}
        if unknown:
            fail(f"{config_file}: unknown key(s) {', '.join(sorted(unknown))}; expected `policy` and [params]")
        policy_name = cfg.get("policy", policy_name)
        params.update(cfg.get("params", {}))
    params.update(_parse_sets(sets))
    return policy_name, params


VARIANT_EVICTIONS = {"calibrated": "log", "model-only": "none"}


def _variants(variants: str | None, observed_evictions: str) -> list[str]:
    """The cache-model variants to run: `--variants`, or the one `--observed-evictions` names
    when only that is given (its meaning before `--variants` existed)."""
    ctx = click.get_current_context()
    explicit = ctx.get_parameter_source("observed_evictions") not in (
        click.core.ParameterSource.DEFAULT, click.core.ParameterSource.DEFAULT_MAP)
    named = "calibrated" if observed_evictions == "log" else "model-only"
    if variants is None:
        return [named] if explicit else ["calibrated", "model-only"]
    chosen = ["calibrated", "model-only"] if variants == "both" else [variants]
    if explicit and chosen != [named]:
        fail(f"--observed-evictions {observed_evictions} is the {named} variant; it contradicts --variants {variants}"
             " (give one of the two)")
    return chosen


@click.command()
@DB_OPTION
@dataset_option("Dataset to replay [default: the only one in the database].")
@click.option("--policy", "policy_name", default="noop", show_default=True, help="Policy name (see `ctxreplay policies`).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Set a policy parameter (repeatable).")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="TOML file with `policy = NAME` and a [params] table.")
@click.option("--detail", is_flag=True, help="Also store one row per request (needed by per-request plots).")
@cache_options
@click.option("--variants", type=click.Choice(["both", "calibrated", "model-only"]), default=None,
              help="Cache-model variants to store a run for: calibrated (observed evictions replayed from the log), "
              "model-only (not), or both, so `compare` shows how much of a saving rests on the calibration "
              "[default: both, or the one --observed-evictions names].")
@slice_options
@json_option("Print the run summary as JSON.")
def replay(db, dataset, policy_name, sets, config_file, detail, ttl, breakpoints, observed_evictions, prices_file,
           price_date, variants, since, until, projects, models, agents, tz_name, key_file, as_json):
    """Replay a dataset through a policy and store the run (figures per session, optionally per request).

    By default one run is stored per cache-model variant (calibrated and model-only), each
    compared by `ctxreplay compare` with the no-op baseline of the same variant.

    --since/--until/--project/--model/--agent replay a slice of the dataset (nothing is
    re-ingested): the sessions with at least one recorded request on a day in [--since,
    --until] (inclusive, days in --timezone: this machine's zone by default) of one of the
    --model names, whose agent is one of --agent and whose project is --project or a folder
    below it. A session in the slice is replayed whole. The slice is stored in the run's configuration, so `compare`
    measures the run only against a no-op baseline of the same slice."""
    from replay.experiments import reuse, runs
    from replay.model.costs import PriceError
    from replay.policies import ParamError, build

    chosen = _variants(variants, observed_evictions)
    policy_name, params = _policy_params(policy_name, config_file, sets)
    with fail_on(ParamError, PriceError, ValueError):
        policy = build(policy_name, params)
        opts = {v: make_options(ttl, breakpoints, VARIANT_EVICTIONS[v], prices_file, price_date, detail)
                for v in chosen}
    con, dataset, ds, slc = _load_dataset(db, dataset, (since, until, projects, models, agents, tz_name, key_file))
    for o in opts.values():
        o.prices.bind(dataset, key_file)
    progress = count_progress(f"replay {policy.name}", "{task.completed}/{task.total}", disable=as_json)
    done: dict[str, dict] = {}
    with fail_on(PriceError), progress:
        task = progress.add_task("", total=len(ds.sessions) * len(chosen))
        for v in chosen:
            same = _identical_noop(con, policy, opts[v], dataset, slc)
            if same is not None:  # a deterministic replay already stored: a second copy would be listed twice
                n, totals = reuse.run_totals(con, same)
                done[v] = {"run_id": same, "sessions": n, "totals": totals if n else {}, "reused": True}
                progress.advance(task, len(ds.sessions))
                continue
            run_id, results = runs.run_policy(con, ds, policy, opts[v], on_session=lambda s: progress.advance(task),
                                              slice=slc)
            done[v] = {"run_id": run_id, "sessions": len(results), "reused": False,
                       "totals": {k: sum(r.figures[k] for r in results) for k in results[0].figures} if results else {}}
    _warn_calibrated_whatif(opts)  # once the runs are stored: a failure stays one error line
    first = done[chosen[0]]
    if as_json:
        echo_json({"run_id": first["run_id"], "policy": policy.name, "dataset": dataset, "slice": slc,
                   "sessions": first["sessions"], "variant": chosen[0],
                   "totals": first["totals"],
                   "variants": {v.replace("-", "_"): {"run_id": d["run_id"], "reused": d["reused"],
                                                      "totals": d["totals"], "saving": _saving_json(con, d, policy)}
                                for v, d in done.items()}}, default=None)
        return
    for v, d in done.items():
        tot = d["totals"]
        on = dataset + (f" (slice {_slice_text(slc)})" if slc else "")
        if d["reused"]:
            out.print(f"run [bold]{esc(d['run_id'])}[/] re-used: an identical {esc(policy.name)} run of {esc(on)}, {v} "
                      f"(same settings, dataset revision and ctxreplay) is already stored; nothing new stored")
        else:
            out.print(f"run [bold]{esc(d['run_id'])}[/]: {esc(policy.name)} on {esc(on)}, {v} ({count(d['sessions'])} "
                      f"sessions, {count(ds.n_requests)} requests)")
        if tot:
            # "input" alone is `usage`'s uncached input: the prompt's whole size is named apart
            out.print(f"  prompt tokens (cached or not) {count(tot['input_total'])}: read {count(tot['cache_read'])}, "
                      f"written {count(tot['cache_write_5m'] + tot['cache_write_1h'])}, uncached (`usage`'s input) "
                      f"{count(tot['uncached'])}; output {count(tot['output'])}; cost {money(tot['cost'])}; "
                      f"busts {count(tot['busts'])}")
    if policy.name != "noop":
        from replay.cli.savings import print_savings

        _say_sessions(con, print_savings(con, {v: d["run_id"] for v, d in done.items()}, db, dataset), db, dataset)


def _say_sessions(con, got: dict[str, dict | None], db, dataset: str) -> None:
    """Under the savings, on which sessions they were measured: all, or those both runs replayed
    alike (a baseline stored before the latest ingest lacks some), with the command that stores a
    baseline of every session."""
    from analysis.saving import left_out_text

    for v, s in got.items():
        if s is None:
            continue
        if not s.get("left_out"):
            out.print(f"  ({v}: {left_out_text(s)})")
            continue
        from replay.cli.results import _baseline_command

        cfg, prices = con.execute("SELECT cache_config, prices FROM runs WHERE run_id = ?",
                                  [s["baseline_run"]]).fetchone()
        row = {"cache_config": json.loads(cfg), "prices": json.loads(prices), "dataset": dataset, "variant": v.replace("-", "_")}
        out.print(f"  [yellow]({v}: measured {esc(left_out_text(s))}: the baseline {esc(s['baseline_run'])} was "
                  f"stored before the latest ingest; to measure every session, store a new one with[/]\n"
                  f"  {esc(_baseline_command(db, row, ''))}[yellow])[/]")


def _identical_noop(con, policy, opts, dataset: str, slc: dict | None) -> str | None:
    """A stored no-op run identical to the one about to be made (only the no-op is re-used: it is
    every saving's baseline, and a duplicate would be listed twice)."""
    if policy.name != "noop":
        return None
    from replay.experiments import reuse, runs

    return reuse.identical_run(con, policy, opts, dataset, runs.git_sha(), slc)


def _saving_json(con, d: dict, policy) -> dict | None:
    """The run's saving against its matching baseline for --json (None: the no-op itself, or no baseline)."""
    if policy.name == "noop":
        return None
    from analysis.saving import run_saving

    return run_saving(con, d["run_id"])


def _slice_text(slc: dict | None) -> str:
    from replay.experiments.slices import slice_text

    return slice_text(slc)


def _pairs(policy: str, params: dict) -> str:
    """The parameters that differ from the policy's defaults as `k=v, k=v` (`defaults` when none)."""
    from replay.cli.results import _settings

    return _settings({"policy": policy, "params": params})


@click.command(name="runs")
@DB_OPTION
@dataset_option()
@wide_option
@json_option()
@format_option
def runs_cmd(db, dataset, wide, as_json):
    """List runs with their status (running, finished, failed, interrupted) and the parameters
    that differ from the policy's defaults (--json: all of them)."""
    from replay.experiments import runs

    con = open_db(db)
    dataset = pick_dataset(con, dataset, db)
    rows = runs.list_runs(con, dataset)
    if as_json:
        echo_json(rows)
        return
    more = ("git",) if wide else ()
    t = Table("run", "policy", "settings (vs defaults)", "status", "sessions", "started", *more,
              title=f"Runs of {esc(dataset)}" + ("" if wide else " (--wide: git commit)"))
    for c in t.columns:
        c.no_wrap = True
    t.columns[2].no_wrap, t.columns[2].overflow = False, "fold"  # settings wrap; ids and figures do not
    t.columns[4].justify = "right"
    for r in rows:
        t.add_row(esc(r["run_id"]), esc(r["policy"]), esc(_pairs(r["policy"], r["params"])), esc(r["status"]),
                  count(r["n_sessions"]), r["started_at"].strftime("%Y-%m-%d %H:%M"),
                  *((esc((r["git_sha"] or "")[:10]),) if wide else ()))
    print_table(fit(t, wide))


@click.command()
@SPEC_ARGUMENT
@DB_OPTION
@dataset_option(SPEC_DATASET_HELP)
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Local worker processes (no short form: -j is --json).")
@click.option("--executor", type=click.Choice(["local", "dask"]), default="local", show_default=True,
              help="local: joblib processes; dask: a Dask distributed cluster (pip install 'ctxreplay[dask]').")
@click.option("--scheduler", default=None, help="Dask scheduler address for --executor dask (tcp://HOST:8786).")
@slice_options
@json_option("Print the summary as JSON.")
def sweep(spec_file, db, dataset, jobs, executor, scheduler, since, until, projects, models, agents, tz_name,
          key_file, as_json):
    """Run a parameter sweep from a TOML spec (grid and/or random samples over policy
    parameters and cache/price settings). Each point is a run grouped under one sweep id.

    Re-running the same spec resumes it: finished points and already stored sessions are
    skipped. See examples/*.toml. The spec is checked whole before any run starts: an unknown
    key, policy or parameter, or a value of the wrong type (true where an integer belongs, a
    [random.params] range with low > high) is one error line naming it.

    --since/--until/--project/--model/--agent sweep a slice of the dataset, chosen as
    `replay` chooses it; the slice is part of the sweep id (the same spec on another slice is
    another sweep) and stored in every run's configuration, its no-op baselines included.
    """
    from replay import store
    from replay.experiments.sweep import SpecError, load_spec, run_sweep

    with fail_on(SpecError):
        spec = load_spec(spec_file)
    con = open_db(db)
    dataset = pick_dataset(con, dataset or spec.dataset, db)
    slc = _slice(con, dataset, (since, until, projects, models, agents, tz_name, key_file))
    con.close()
    progress = count_progress(f"sweep {spec.name}", "{task.completed}/{task.total} session-configs", disable=as_json)
    with fail_on(SpecError, store.StoreError), progress:
        task = progress.add_task("", total=None)
        res = run_sweep(db, spec, dataset, jobs=jobs, executor=executor, scheduler=scheduler,
                        on_total=lambda n: progress.update(task, total=n),
                        on_progress=lambda n: progress.advance(task, n), slice=slc, key_file=key_file)
    summary = {"sweep_id": res.sweep_id, "points": res.points, "points_already_finished": res.skipped_points,
               "session_configs_run": res.sessions_done, "session_configs_resumed": res.sessions_skipped,
               "seconds": round(res.seconds, 2),
               "blocks_configs_per_s": round(res.blocks_configs / res.seconds) if res.seconds else None,
               "run_ids": res.run_ids, "slice": slc, "notes": spec.notes}
    if as_json:
        echo_json(summary, default=None)
        return
    _notes(spec)
    out.print(f"sweep [bold]{esc(res.sweep_id)}[/] ({esc(spec.name)}): {res.points} points, {res.skipped_points} "
              f"already finished; {res.sessions_done} session-configs run, {res.sessions_skipped} resumed; "
              f"{res.seconds:.1f}s ({summary['blocks_configs_per_s'] or 0:,} blocks·configs/s)")
    out.print(f"compare them: ctxreplay compare --db {esc(db)}")


@click.command()
@SPEC_ARGUMENT
@DB_OPTION
@dataset_option(SPEC_DATASET_HELP)
@objective_option("Minimize total cost ($) or context tokens summed over requests.")
@max_risk_option("Upper bound on a run figure or a policy's risk counter, e.g. dangling_refs=0, trimmed_reread=20, "
                 "busts=10, unseen_write_risk=0 (repeatable; the names `report --max-risk` takes).")
@click.option("--trials", type=click.IntRange(min=1), default=20, show_default=True, help="Configurations to try.")
@click.option("--seed", type=int, default=0, show_default=True, help="Sampler seed (same seed, same trials).")
@click.option("--split", type=click.Choice(["time", "none"]), default="time", show_default=True,
              help="time: pick on the earlier sessions (by start time) and report the saving on the later ones, "
              "beside the in-sample figure; none: pick and report on every session.")
@click.option("--train-fraction", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.7,
              show_default=True, help="With --split time: the share of sessions, earliest first, the pick is made on.")
@json_option("Print the result as JSON.")
def tune(spec_file, db, dataset, objective, max_risk, trials, seed, split, train_fraction, as_json):
    """Search a sweep spec's space (its [grid], [cache] and [random.params]) for the best
    configuration under risk limits, with Optuna's TPE sampler. Every trial is stored as a run.

    The pick is made on the earlier sessions only (--split time, the first --train-fraction of
    them by start time) and its saving is reported on the later ones, with a 95% interval,
    beside the in-sample figure (the difference is the optimism of picking and measuring on the
    same sessions). The saving is against a reference that is always replayed: the no-op policy
    with the cache settings the spec fixes, [cache] keys it tunes at their default (the log's)."""
    from analysis.rules import parse_limits
    from analysis.sweep_best import holdout
    from replay.experiments.sweep import SpecError, load_spec
    from replay.experiments.tune import tune as run_tune

    with fail_on(ValueError):  # the report's parser: the same names, errors and "did you mean"
        limits = parse_limits(max_risk)
    with fail_on(SpecError):
        spec = load_spec(spec_file)
    con, dataset, ds, _ = _load_dataset(db, dataset or spec.dataset)
    progress = count_progress("tune", "{task.completed}/{task.total} trials", disable=as_json)
    from replay.model.costs import PriceError

    with fail_on(SpecError, PriceError), progress:
        task = progress.add_task("", total=trials)
        res = run_tune(con, ds, spec, objective=objective, limits=limits, trials=trials, seed=seed,
                       on_trial=lambda t: progress.advance(task), split=split, train_fraction=train_fraction)
    train, test = res["split"].pop("train"), res["split"].pop("test")
    ref = res["reference"]["run_id"]
    res.update({"in_sample": None, "out_of_sample": None, "optimism": None})
    if res["best"]:
        rid = res["best"]["run_id"]
        res.update(holdout(con, rid, ref, train, test, res["figure"], held_out=split != "none"))
        whole = holdout(con, rid, ref, sorted({*train, *test}), [], "cost", held_out=False)["in_sample"]
        # against the reference, never against a baseline that may be the pick itself
        res["best"]["saving"] = None if whole is None else {
            "baseline_run": ref, "baseline_cost": whole["baseline_cost"], "cost": whole["cost"],
            "saved_usd": whole["saved"], "saved_pct": whole["saved_pct"],
            "interval": None if whole["interval_pct"] is None else dict(zip(("low", "high"), whole["interval_pct"]))}
    if as_json:
        echo_json({**res, "notes": spec.notes})
        return
    _notes(spec)
    _print_tune(res, objective)


def _print_tune(res: dict, objective: str) -> None:
    limits = ", ".join(f"{k} <= {v:g}" for k, v in (res["limits"] or {}).items())
    sp = res["split"]
    picked_on = (f"picked on every session ({sp['train_sessions']:,}, --split none)" if sp["kind"] == "none" else
                 f"picked on the earlier {sp['train_sessions']:,} of {sp['train_sessions'] + sp['test_sessions']:,} "
                 f"sessions by start time (--train-fraction {sp['train_fraction']:g})")
    out.print(f"tune [bold]{esc(res['tune_id'])}[/]: {res['trials']} trials ("
              + (f"{res['feasible_trials']} within {esc(limits)}" if limits else
                 "no risk limit: `report` holds every risk counter at 0 unless told, so give --max-risk to pick as "
                 "it would")
              + f"), objective {esc(res['figure'])}, {picked_on}")
    ref = res["reference"]
    ref_text = "no-op" + (f" {esc(json.dumps(ref['cache']))}" if ref["cache"] else ", cache as logged")
    if not res["best"]:
        out.print("[red]no configuration met the risk limits[/]")
        out.print(f"  reference ({ref_text}, run {esc(ref['run_id'])}): {_objective(ref['objective'], objective)}")
        return
    b = res["best"]
    where = "" if sp["kind"] == "none" else " on the earlier sessions"
    out.print(f"best: {esc(json.dumps(b['params']))} {esc(json.dumps(b['cache'])) if b['cache'] else ''} -> "
              f"{_objective(b['objective'], objective)}{where} (run {esc(b['run_id'])})")
    if res["runner_up"]:
        ru = res["runner_up"]
        # name the cache setting too: runs that differ only in it would otherwise read as the same configuration
        out.print(f"  margin over the runner-up {esc(json.dumps(ru['params']))}"
                  f"{' ' + esc(json.dumps(ru['cache'])) if ru.get('cache') else ''}: {_objective(ru['margin'], objective)}")
    if res.get("defaults"):
        out.print(f"  margin over the source's defaults: {_objective(res['defaults']['margin'], objective)}")
    # the reference is always replayed, so this line is always there (and never the pick against itself)
    unit = "cost" if res["figure"] == "cost" else "context tokens"
    label = {"in_sample": "in sample", "out_of_sample": "out of sample"}
    for side in ("out_of_sample", "in_sample"):
        h = res.get(side)
        if not h:
            continue
        which = ("every session" if sp["kind"] == "none" else
                 "the later sessions, not used to pick" if side == "out_of_sample" else
                 "the earlier sessions it was picked on")
        ci = h["interval_pct"]
        verb = "saves" if h["saved"] >= 0 else "loses"
        lead = (f"{label[side]} over the reference" if sp["kind"] != "none" else
                "margin over the reference, vs the no-op baseline")
        out.print(f"  {lead} ({ref_text}, run {esc(ref['run_id'])}) on {which} ({h['sessions']:,}): {verb} "
                  f"{_objective(abs(h['saved']), objective)} of {_objective(h['baseline'], objective)} {unit} ("
                  f"{pct(h['saved_pct'])}" + (f", 95% interval {pct(ci[0])} to {pct(ci[1])}" if ci else "") + ")")
    if res.get("optimism") is not None:
        out.print(f"  optimism (in sample minus out of sample): {100 * res['optimism']:+.2f} points")
    if sp["kind"] != "none" and b.get("saving"):
        from replay.cli.savings import saving_text

        out.print(f"  vs the no-op baseline {esc(ref['run_id'])} on every session "
                  f"({sp['train_sessions'] + sp['test_sessions']:,}): {esc(saving_text(b['saving']))}")


def _objective(x: float, objective: str) -> str:
    return money(x) if objective == "cost" else f"{count(x)} tokens"


COMMANDS = [policies, replay, runs_cmd, sweep, tune]
