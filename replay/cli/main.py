"""The ctxreplay command line: a thin click layer over the library."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from replay import __version__
from replay import store

err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)

DB_OPTION = click.option(
    "--db", type=click.Path(dir_okay=False, path_type=Path), default=Path("ctxreplay.duckdb"),
    show_default=True, help="DuckDB file holding datasets and runs.",
)
REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DIR = REPO_ROOT / "datasets" / "sample" / "logs"


def _fail(msg: str, code: int = 1) -> None:
    err.print(f"[bold red]error:[/] {msg}")
    sys.exit(code)


def _open(db: Path, read_only: bool = True):
    try:
        con = store.connect(db, read_only=read_only)
    except store.StoreError as e:
        _fail(str(e))
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.call_on_close(con.close)  # in-process callers (tests, notebooks) reopen the file
    return con


def _fmt_ts(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


def _json_default(o):
    if isinstance(o, datetime):
        return o.isoformat()
    return str(o)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ctxreplay")
def main() -> None:
    """Replay coding-agent logs through context dedup/trimming policies and price them
    with a prompt-cache model.

    Start with `ctxreplay demo`, or `ctxreplay ingest ~/.claude/projects --db my.duckdb`.
    """


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@DB_OPTION
@click.option("--dataset", default="default", show_default=True, help="Dataset name the sessions are stored under.")
@click.option("--key-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Master key for content hashes and pseudonyms [default: $CTXREPLAY_KEY_FILE or ~/.config/ctxreplay/key].")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def ingest(paths: tuple[Path, ...], db: Path, dataset: str, key_file: Path | None, as_json: bool, quiet: bool) -> None:
    """Ingest agent logs (files or directory trees) into content-free traces.

    Reads Claude Code `.jsonl` transcripts, Stop-hook JSON dumps and `subagents/agent-*.jsonl`
    files. No raw text is stored: only sizes, token counts, keyed hashes and path
    pseudonyms. Re-ingesting unchanged files adds nothing; a file that grew is stored as a
    new version. Bad lines and unreadable files are reported and counted, never fatal.
    """
    from replay.store.load import ingest as run_ingest

    progress = Progress(
        TextColumn("[bold]ingest"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
        TextColumn("{task.description}"), console=err, disable=quiet or as_json, transient=True,
    )
    with progress:
        task = progress.add_task("", total=None)
        try:
            summary = run_ingest(
                list(paths), db, dataset=dataset, key_file=key_file,
                on_total=lambda n: progress.update(task, total=n),
                on_progress=lambda n, name: progress.update(task, advance=n, description=name[:40]),
            )
        except store.StoreError as e:
            _fail(str(e))
        except (ValueError, OSError) as e:
            _fail(str(e))
    if as_json:
        click.echo(json.dumps(summary.as_dict(), indent=2))
    else:
        _print_ingest_summary(summary, db, dataset)
    if summary.files == 0 and summary.failed:
        sys.exit(1)


def _print_ingest_summary(summary, db: Path, dataset: str) -> None:
    s = summary
    mbps = s.bytes / 1e6 / s.seconds if s.seconds else 0.0
    out.print(
        f"[bold]{s.files}[/] files: {s.ingested} ingested ({s.new_versions} as new versions), "
        f"{s.unchanged} unchanged, {s.duplicates} duplicate content, {len(s.failed)} failed "
        f"in {s.seconds:.1f}s ({mbps:.1f} MB/s)"
    )
    out.print(
        f"added {s.sessions} sessions, {s.streams} streams, {s.requests} requests, {s.blocks} blocks "
        f"to dataset [cyan]{dataset}[/] in {db}"
    )
    if s.report.skipped:
        out.print("lines skipped: " + ", ".join(f"{k}={v}" for k, v in sorted(s.report.skipped.items())))
        for m in s.report.messages:
            out.print(f"  [yellow]{m}[/]")
    if s.report.non_context:
        total = sum(s.report.non_context.values())
        out.print(f"non-context lines (progress, snapshots, UI): {total}")
    for f, reason in s.failed:
        out.print(f"  [red]{f}: {reason}[/]")
    if s.unchanged and not s.ingested:
        out.print("nothing new: every file was already ingested unchanged")


@main.command()
@DB_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def datasets(db: Path, as_json: bool) -> None:
    """List the datasets in a database."""
    con = _open(db)
    rows = store.datasets(con)
    if as_json:
        click.echo(json.dumps(rows, indent=2, default=_json_default))
        return
    t = Table("dataset", "sessions", "requests", "blocks", "file versions", "token counter", "created")
    for r in rows:
        t.add_row(r["name"], str(r["sessions"]), str(r["requests"]), str(r["blocks"]), str(r["file_versions"]),
                  r["token_counter"], r["created_at"].strftime("%Y-%m-%d %H:%M"))
    out.print(t)


@main.command()
@DB_OPTION
@click.option("--dataset", default=None, help="Only this dataset.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def sessions(db: Path, dataset: str | None, as_json: bool) -> None:
    """List the sessions of a database (one row per session)."""
    con = _open(db)
    if dataset and dataset not in store.dataset_names(con):
        _fail(f"no dataset {dataset!r} in {db}; known: {', '.join(store.dataset_names(con)) or 'none'}")
    rows = store.sessions(con, dataset)
    if as_json:
        click.echo(json.dumps(rows, indent=2, default=_json_default))
        return
    t = Table("dataset", "session", "agent", "models", "streams", "requests", "blocks", "compactions",
              "block tokens", "started")
    for r in rows:
        t.add_row(r["dataset"], r["session_key"], r["agent"], r["models"] or "-", str(r["n_streams"]),
                  str(r["n_requests"]), str(r["n_blocks"]), str(r["n_compactions"]), f"{r['block_tokens']:,}",
                  _fmt_ts(r["started_at"]))
    out.print(t)


@main.command()
@DB_OPTION
@click.option("--dataset", required=True, help="Dataset to export.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory for the Parquet files.")
def export(db: Path, dataset: str, out_dir: Path) -> None:
    """Export a dataset's trace as Parquet (sessions, streams, requests, blocks, compactions).

    The trace holds no raw text, so it can be shared; the key file stays with you.
    """
    con = _open(db)
    try:
        counts = store.export_parquet(con, dataset, out_dir)
    except store.StoreError as e:
        _fail(str(e))
    out.print(f"wrote {out_dir}: " + ", ".join(f"{t} {n}" for t, n in counts.items()))


@main.command()
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("synthetic-logs"),
              show_default=True, help="Directory to write the Claude Code-format logs into.")
@click.option("--sessions", "n_sessions", type=click.IntRange(min=1), default=6, show_default=True,
              help="Number of sessions.")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed (same seed, same bytes).")
def generate(out_dir: Path, n_sessions: int, seed: int) -> None:
    """Generate a deterministic synthetic corpus of Claude Code sessions.

    Sessions have file re-reads with and without edits in between, partial reads, greps,
    listings, test runs, compactions, subagents and usage consistent with a prompt cache.
    """
    from replay.synth.generate import generate_corpus

    s = generate_corpus(out_dir, sessions=n_sessions, seed=seed)
    out.print(
        f"wrote {len(s.files)} files ({s.bytes / 1e6:.1f} MB) to {out_dir}: "
        f"{s.sessions} sessions, {s.requests} requests, {s.tool_results} tool results"
    )


def _cache_options(f):
    """Cache-model and price options shared by replay, validate and friends."""
    opts = [
        click.option("--ttl", type=click.Choice(["log", "5m", "1h"]), default="log", show_default=True,
                     help="Cache TTL: from the log's recorded 5m/1h split, or forced."),
        click.option("--breakpoints", type=click.Choice(["claude-code", "last-message", "none"]),
                     default="claude-code", show_default=True,
                     help="Cache breakpoint placement (claude-code: after system+tools and at the last message)."),
        click.option("--observed-evictions", type=click.Choice(["log", "none"]), default="log", show_default=True,
                     help="Replay cache misses the log records but the model cannot explain."),
        click.option("--prices", "prices_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                     default=None, help="TOML price overrides ([models.\"NAME\"] input/cache_write_5m/"
                     "cache_write_1h/cache_read/output in $/Mtok)."),
        click.option("--price-date", default=None, help="Date the library prices are resolved at [default: 2026-11-01]."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def _make_options(ttl, breakpoints, observed_evictions, prices_file, price_date, detail=False):
    from replay.model.cache import CacheConfig
    from replay.model.costs import DEFAULT_PRICE_DATE, PriceTable
    from replay.engine import ReplayOptions

    date = price_date or DEFAULT_PRICE_DATE
    prices = PriceTable.from_toml(prices_file, date) if prices_file else PriceTable(date)
    return ReplayOptions(CacheConfig(ttl=ttl, breakpoints=breakpoints, observed_evictions=observed_evictions),
                         prices, detail)


def _parse_sets(sets: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for item in sets:
        if "=" not in item:
            _fail(f"--set {item!r}: expected key=value")
        k, v = item.split("=", 1)
        out[k.strip()] = v
    return out


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def policies(as_json: bool) -> None:
    """List the registered policies with their parameters, defaults and sources."""
    import dataclasses

    from replay.policies import REGISTRY

    rows = []
    for name, cls in sorted(REGISTRY.items()):
        params = [{"name": f.name, "type": str(f.type), "default": f.default if f.default is not dataclasses.MISSING
                   else None} for f in cls.param_fields()]
        composite = name == "pipeline"
        rows.append({"name": name, "source": cls.source, "summary": cls.summary,
                     "insert_time": None if composite else cls.insert_time(),
                     "retroactive": None if composite else cls.retroactive(), "params": params})
    if as_json:
        click.echo(json.dumps(rows, indent=2, default=str))
        return
    for r in rows:
        mode = ("composite" if r["insert_time"] is None else "insert-time" if r["insert_time"]
                else "retroactive" if r["retroactive"] else "baseline")
        out.print(f"[bold cyan]{r['name']}[/] ({mode}) — {r['summary']}")
        out.print(f"  source: {r['source']}")
        for p in r["params"]:
            out.print(f"  {p['name']} = {p['default']!r}  [dim]({p['type']})[/]")


@main.command()
@DB_OPTION
@click.option("--dataset", default=None, help="Dataset to replay [default: the only one in the database].")
@click.option("--policy", "policy_name", default="noop", show_default=True, help="Policy name (see `ctxreplay policies`).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Set a policy parameter (repeatable).")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="TOML file with `policy = NAME` and a [params] table.")
@click.option("--detail", is_flag=True, help="Also store one row per request (needed by per-request plots).")
@_cache_options
@click.option("--json", "as_json", is_flag=True, help="Print the run summary as JSON.")
def replay(db, dataset, policy_name, sets, config_file, detail, ttl, breakpoints, observed_evictions, prices_file,
           price_date, as_json):
    """Replay a dataset through a policy and store the run (figures per session, optionally per request)."""
    import tomllib

    from replay.experiments import runs
    from replay.model.costs import PriceError
    from replay.policies import ParamError, build

    params: dict = {}
    if config_file:
        try:
            cfg = tomllib.loads(config_file.read_text())
        except tomllib.TOMLDecodeError as e:
            _fail(f"{config_file}: {e}")
        unknown = set(cfg) - {"policy", "params"}
        if unknown:
            _fail(f"{config_file}: unknown key(s) {', '.join(sorted(unknown))}; expected `policy` and [params]")
        policy_name = cfg.get("policy", policy_name)
        params.update(cfg.get("params", {}))
    params.update(_parse_sets(sets))
    try:
        policy = build(policy_name, params)
        opts = _make_options(ttl, breakpoints, observed_evictions, prices_file, price_date, detail)
    except (ParamError, PriceError, ValueError) as e:
        _fail(str(e))
    con = _open(db, read_only=False)
    dataset = _pick_dataset(con, dataset, db)
    ds = runs.load(con, dataset)
    progress = Progress(TextColumn(f"[bold]replay {policy.name}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                        TimeRemainingColumn(), console=err, disable=as_json, transient=True)
    try:
        with progress:
            task = progress.add_task("", total=len(ds.sessions))
            run_id, results = runs.run_policy(con, ds, policy, opts, on_session=lambda s: progress.advance(task))
    except PriceError as e:
        _fail(str(e))
    tot = {k: sum(r.figures[k] for r in results) for k in results[0].figures} if results else {}
    if as_json:
        click.echo(json.dumps({"run_id": run_id, "policy": policy.name, "dataset": dataset, "totals": tot}, indent=2))
        return
    out.print(f"run [bold]{run_id}[/]: {policy.name} on {dataset} ({len(results)} sessions, {ds.n_requests} requests)")
    if tot:
        out.print(f"  input {tot['input_total']:,.0f} tokens: read {tot['cache_read']:,.0f}, "
                  f"written {tot['cache_write_5m'] + tot['cache_write_1h']:,.0f}, uncached {tot['uncached']:,.0f}; "
                  f"output {tot['output']:,.0f}; cost ${tot['cost']:,.2f}; busts {tot['busts']:.0f}")


def _pick_dataset(con, dataset: str | None, db: Path) -> str:
    names = store.dataset_names(con)
    if dataset:
        if dataset not in names:
            _fail(f"no dataset {dataset!r} in {db}; known: {', '.join(names) or 'none'}")
        return dataset
    if len(names) == 1:
        return names[0]
    if not names:
        _fail(f"{db} holds no dataset; run `ctxreplay ingest PATH --db {db}` first")
    _fail(f"{db} holds several datasets ({', '.join(names)}); choose one with --dataset")


@main.command(name="runs")
@DB_OPTION
@click.option("--dataset", default=None, help="Only this dataset.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def runs_cmd(db, dataset, as_json):
    """List runs with their status (running, finished, failed, interrupted)."""
    from replay.experiments import runs

    con = _open(db)
    rows = runs.list_runs(con, dataset)
    if as_json:
        click.echo(json.dumps(rows, indent=2, default=_json_default))
        return
    t = Table("run", "policy", "params", "dataset", "status", "sessions", "started", "git")
    for r in rows:
        t.add_row(r["run_id"], r["policy"], json.dumps(r["params"])[:40], r["dataset"], r["status"],
                  str(r["n_sessions"] or "-"), r["started_at"].strftime("%Y-%m-%d %H:%M:%S"), (r["git_sha"] or "")[:10])
    out.print(t)


@main.command()
@click.argument("spec_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@DB_OPTION
@click.option("--dataset", default=None, help="Dataset [default: the spec's, or the only one].")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=1, show_default=True,
              help="Local worker processes.")
@click.option("--executor", type=click.Choice(["local", "dask"]), default="local", show_default=True,
              help="local: joblib processes; dask: a Dask distributed cluster (pip install 'ctxreplay[dask]').")
@click.option("--scheduler", default=None, help="Dask scheduler address for --executor dask (tcp://HOST:8786).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def sweep(spec_file, db, dataset, jobs, executor, scheduler, as_json):
    """Run a parameter sweep from a TOML spec (grid and/or random samples over policy
    parameters and cache/price settings). Each point is a run grouped under one sweep id.

    Re-running the same spec resumes it: finished points and already stored sessions are
    skipped. See examples/*.toml.
    """
    from replay.experiments.sweep import SpecError, load_spec, run_sweep

    try:
        spec = load_spec(spec_file)
    except SpecError as e:
        _fail(str(e))
    progress = Progress(TextColumn(f"[bold]sweep {spec.name}"), BarColumn(), TextColumn("{task.completed}/{task.total} "
                        "session-configs"), TimeRemainingColumn(), console=err, disable=as_json, transient=True)
    try:
        with progress:
            task = progress.add_task("", total=None)
            res = run_sweep(db, spec, dataset, jobs=jobs, executor=executor, scheduler=scheduler,
                            on_total=lambda n: progress.update(task, total=n),
                            on_progress=lambda n: progress.advance(task, n))
    except (SpecError, store.StoreError) as e:
        _fail(str(e))
    summary = {"sweep_id": res.sweep_id, "points": res.points, "points_already_finished": res.skipped_points,
               "session_configs_run": res.sessions_done, "session_configs_resumed": res.sessions_skipped,
               "seconds": round(res.seconds, 2),
               "blocks_configs_per_s": round(res.blocks_configs / res.seconds) if res.seconds else None,
               "run_ids": res.run_ids}
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    out.print(f"sweep [bold]{res.sweep_id}[/] ({spec.name}): {res.points} points, {res.skipped_points} already "
              f"finished; {res.sessions_done} session-configs run, {res.sessions_skipped} resumed; "
              f"{res.seconds:.1f}s ({summary['blocks_configs_per_s'] or 0:,} blocks·configs/s)")
    out.print(f"compare them: ctxreplay compare --db {db}")


@main.command()
@click.argument("spec_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@DB_OPTION
@click.option("--dataset", default=None, help="Dataset [default: the spec's, or the only one].")
@click.option("--objective", type=click.Choice(["cost", "tokens"]), default="cost", show_default=True,
              help="Minimize total cost ($) or context tokens summed over requests.")
@click.option("--max-risk", "max_risk", multiple=True, metavar="FIGURE=VALUE",
              help="Upper bound on a run figure, e.g. dangling_refs=0, trimmed_reread=20, busts=10 (repeatable).")
@click.option("--trials", type=click.IntRange(min=1), default=20, show_default=True, help="Configurations to try.")
@click.option("--seed", type=int, default=0, show_default=True, help="Sampler seed (same seed, same trials).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def tune(spec_file, db, dataset, objective, max_risk, trials, seed, as_json):
    """Search a sweep spec's space (its [grid], [cache] and [random.params]) for the best
    configuration under risk limits, with Optuna's TPE sampler. Every trial is stored as a run."""
    from replay.experiments import runs
    from replay.experiments.sweep import SpecError, load_spec
    from replay.experiments.tune import parse_limits
    from replay.experiments.tune import tune as run_tune

    try:
        spec = load_spec(spec_file)
        limits = parse_limits(max_risk)
    except SpecError as e:
        _fail(str(e))
    con = _open(db, read_only=False)
    dataset = _pick_dataset(con, dataset or spec.dataset, db)
    ds = runs.load(con, dataset)
    progress = Progress(TextColumn("[bold]tune"), BarColumn(), TextColumn("{task.completed}/{task.total} trials"),
                        TimeRemainingColumn(), console=err, disable=as_json, transient=True)
    try:
        with progress:
            task = progress.add_task("", total=trials)
            res = run_tune(con, ds, spec, objective=objective, limits=limits, trials=trials, seed=seed,
                           on_trial=lambda t: progress.advance(task))
    except SpecError as e:
        _fail(str(e))
    if as_json:
        click.echo(json.dumps(res, indent=2, default=_json_default))
        return
    unit = "$" if objective == "cost" else "tokens "
    out.print(f"tune [bold]{res['tune_id']}[/]: {res['trials']} trials ({res['feasible_trials']} within limits "
              f"{res['limits'] or 'none'}), objective {res['figure']}")
    if not res["best"]:
        out.print("[red]no configuration met the risk limits[/]")
        return
    b = res["best"]
    out.print(f"best: {json.dumps(b['params'])} {json.dumps(b['cache']) if b['cache'] else ''} -> "
              f"{unit}{b['objective']:,.2f} (run {b['run_id']})")
    if res["runner_up"]:
        out.print(f"  margin over the runner-up {json.dumps(res['runner_up']['params'])}: "
                  f"{unit}{res['runner_up']['margin']:,.2f}")
    if res.get("defaults"):
        out.print(f"  margin over the source's defaults: {unit}{res['defaults']['margin']:,.2f}")


@main.command()
@DB_OPTION
@click.option("--dataset", default=None, help="Only runs of this dataset.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (one object per run).")
def compare(db, dataset, as_json):
    """Compare finished runs: tokens, cost, cache hit rate, busts and risk figures, with
    deltas vs the no-op baseline run of the same dataset and cache settings, and the
    baseline's own fidelity against the recorded bill."""
    from analysis.compare import compare as run_compare

    con = _open(db)
    rows = run_compare(con, dataset)
    if as_json:
        click.echo(json.dumps(rows, indent=2, default=_json_default))
        return
    if not rows:
        out.print(f"no finished runs in {db}; run `ctxreplay replay --db {db} --policy noop` first")
        return
    t = Table("run", "policy", "params", "tokens delivered", "context tokens", "cost $", "saved", "hit rate",
              "busts", "hints", "dangling", "stale", "re-read")
    for r in rows:
        f = r["figures"]
        saved = r.get("saved_pct") or {}
        t.add_row(r["run_id"], r["policy"], json.dumps(r["params"])[:30], f"{f['tokens_delivered']:,.0f}",
                  f"{f['context_tokens']:,.0f}", f"{f['cost']:,.2f}",
                  "-" if saved.get("cost") is None else f"{saved['cost']:+.1%}",
                  "-" if f["hit_rate"] is None else f"{f['hit_rate']:.1%}", f"{f['busts']:.0f}", f"{f['hints']:.0f}",
                  f"{f['dangling_refs']:.0f}", f"{f['stale_refs']:.0f}", f"{f['trimmed_reread']:.0f}")
    out.print(t)
    seen = set()
    for r in rows:
        fid = r["baseline_fidelity"]
        if fid and r["baseline_run"] not in seen and fid["cost_rel_error"] is not None:
            seen.add(r["baseline_run"])
            out.print(f"baseline {r['baseline_run']} ({r['dataset']}): simulated ${fid['baseline_cost']:,.2f} vs "
                      f"recorded ${fid['recorded_cost']:,.2f} ({fid['cost_rel_error']:+.2%}); savings are measured "
                      "against the baseline")


@main.command()
@DB_OPTION
@click.option("--dataset", default=None, help="Dataset [default: the only one].")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory for index.html, report.md and img/.")
@click.option("--objective", type=click.Choice(["cost", "tokens"]), default="cost", show_default=True,
              help="What the recommendation minimizes.")
@click.option("--max-risk", "max_risk", multiple=True, metavar="FIGURE=VALUE",
              help="Risk limit of the recommendation [default: stale_refs=0, dangling_refs=0].")
def report(db, dataset, out_dir, objective, max_risk):
    """Write the policy report: dataset overview, baseline fidelity, leaderboard, Pareto plot,
    sweep heatmaps, cache-price study, per-tool breakdown, risk table, recommendation and a
    reproducibility footer. index.html is self-contained (works offline)."""
    from analysis.report import build
    from replay.experiments.tune import parse_limits
    from replay.experiments.sweep import SpecError

    try:
        limits = parse_limits(max_risk) if max_risk else None
    except SpecError as e:
        _fail(str(e))
    con = _open(db)
    dataset = _pick_dataset(con, dataset, db)
    con.close()
    try:
        res = build(db, dataset, out_dir, objective=objective, max_risk=limits)
    except ValueError as e:
        _fail(str(e))
    out.print(f"wrote {out_dir}/index.html and report.md ({res['runs']} runs, {res['figures']} figures)")
    rec = res["recommendation"]
    if rec.get("best"):
        out.print(f"recommendation ({rec['figure']}, limits {rec['max_risk']}): {rec['best']['label']}")


@main.command()
@DB_OPTION
@click.option("--dataset", default=None, help="Dataset to validate [default: the only one].")
@_cache_options
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write the PNG of simulated vs recorded cache reads [default: validate-<dataset>.png next to --db].")
@click.option("--worst", type=click.IntRange(1, 20), default=4, show_default=True, help="Sessions in the plot.")
@click.option("--json", "as_json", is_flag=True, help="Print the full report as JSON.")
def validate(db, dataset, ttl, breakpoints, observed_evictions, prices_file, price_date, plot_path, worst, as_json):
    """Fidelity check: does the no-op replay reproduce the usage the log recorded?

    Per session and overall: recorded vs simulated input total, cache reads, cache writes
    and cost with relative errors, for the calibrated model (the one every run uses), the
    TTL/breakpoint model alone, and raw BPE counts without anchoring.
    """
    from replay.model.costs import PriceError
    from replay.experiments.validate import TARGETS, plot_worst, public
    from replay.experiments.validate import validate as run_validate

    try:
        opts = _make_options(ttl, breakpoints, observed_evictions, prices_file, price_date)
    except (PriceError, ValueError) as e:
        _fail(str(e))
    con = _open(db)
    dataset = _pick_dataset(con, dataset, db)
    try:
        report = run_validate(con, dataset, opts)
    except PriceError as e:
        _fail(str(e))
    plot_path = plot_path or db.with_name(f"validate-{dataset}.png")
    plot_worst(report, plot_path, worst)
    pub = public(report)
    pub["plot"] = str(plot_path)
    if as_json:
        click.echo(json.dumps(pub, indent=2, default=_json_default))
        return
    t = Table("session", "agent", "requests", "input", "reads", "writes", "cost", "ok")

    def pct(v, f):
        if v is None:
            return "n/a"
        style = "green" if abs(v) <= TARGETS[f] else "red"
        return f"[{style}]{v:+.2%}[/]"

    for s in pub["sessions"]:
        e = s["rel_error"]
        ok = "no usage" if s["within_targets"] is None else "yes" if s["within_targets"] else "[red]no[/]"
        t.add_row(s["session_id"][:12], s["agent"], str(s["requests"]), *(pct(e[f], f) for f in TARGETS), ok)
    out.print(t)
    o = pub["overall"]
    if o["sessions_without_usage"]:
        out.print(f"{o['sessions_without_usage']} session(s) record no input usage (replayed on BPE counts, "
                  "not validated)")
    for agent, a in o["by_agent"].items():
        if a["sessions"]:
            out.print(f"  {agent}: {a['within_targets']}/{a['sessions']} within targets; " + ", ".join(
                f"{f} {v:+.2%}" for f, v in a["rel_error"].items() if v is not None))
    out.print(f"{o['sessions_within_targets']}/{o['sessions']} sessions within targets "
              f"(input {TARGETS['input_total']:.0%}, reads {TARGETS['cache_read']:.0%}, "
              f"writes {TARGETS['cache_write']:.0%}, cost {TARGETS['cost']:.0%})")
    for name, errs in pub["variants"].items():
        out.print(f"  {name:11s} corpus-wide: " + ", ".join(
            f"{f} {errs[f]:+.2%}" if errs[f] is not None else f"{f} n/a" for f in TARGETS))
    out.print(f"  recorded cost ${o['recorded']['cost']:,.2f}, simulated ${o['simulated']['cost']:,.2f}; "
              f"{o['requests_with_residual']} of {o['requests']} requests carry a residual; plot: {plot_path}")


def sample_logs_dir() -> Path:
    """The committed sample, or (installed without the repo) the same sample regenerated."""
    if SAMPLE_DIR.is_dir():
        return SAMPLE_DIR
    from replay.synth.generate import generate_corpus
    from replay.synth.sample import SAMPLE_SEED, SAMPLE_SESSIONS

    tmp = Path.home() / ".cache" / "ctxreplay" / "sample-logs"
    if not tmp.is_dir():
        generate_corpus(tmp, sessions=SAMPLE_SESSIONS, seed=SAMPLE_SEED)
    return tmp


DEMO_SWEEP = "devboy_capacity.toml"


@main.command()
@click.option("--db", type=click.Path(dir_okay=False, path_type=Path), default=Path("out/demo.duckdb"),
              show_default=True, help="Where the demo database goes (recreated each time).")
@click.option("--logs", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Log directory to use instead of the embedded sample.")
@click.option("--report", "report_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("out/report"),
              show_default=True, help="Where the report goes.")
def demo(db: Path, logs: Path | None, report_dir: Path) -> None:
    """Run the whole pipeline on the embedded sample dataset (no logs of your own needed).

    Ingests `datasets/sample/`, checks the no-op baseline against the recorded usage,
    replays every policy at its source's defaults, sweeps devboy's LRU capacity and writes
    the policy report (index.html + report.md).
    """
    from analysis.report import build as build_report

    from replay.experiments import runs
    from replay.engine import ReplayOptions
    from replay.store.load import ingest as run_ingest
    from replay.policies import REGISTRY, build
    from replay.experiments.sweep import load_spec, run_sweep
    from replay.experiments.validate import validate as run_validate

    logs = logs or sample_logs_dir()
    db.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", ".wal"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    key = db.parent / "demo.key"
    out.rule("[bold]1. ingest")
    out.print(f"logs: {logs}")
    summary = run_ingest([logs], db, dataset="sample", key_file=key)
    _print_ingest_summary(summary, db, "sample")
    if summary.failed:
        _fail("the sample did not ingest cleanly; see the messages above")
    con = _open(db, read_only=False)
    out.rule("[bold]2. baseline fidelity")
    opts = ReplayOptions()
    rep = run_validate(con, "sample", opts)
    o = rep["overall"]
    e = o["rel_error"]
    out.print(f"no-op replay vs recorded usage: {o['sessions_within_targets']}/{o['sessions']} sessions within "
              f"targets; input {e['input_total']:+.2%}, reads {e['cache_read']:+.2%}, writes {e['cache_write']:+.2%}, "
              f"cost {e['cost']:+.2%}")
    out.rule("[bold]3. every policy at its defaults")
    ds = runs.load(con, "sample")
    t = Table("policy", "cost $", "context tokens", "busts")
    for name in REGISTRY:
        if name == "pipeline":
            continue
        run_id, results = runs.run_policy(con, ds, build(name), ReplayOptions(detail=name == "noop"))
        tot = {k: sum(r.figures[k] for r in results) for k in ("cost", "context_tokens", "busts")}
        t.add_row(name, f"{tot['cost']:,.2f}", f"{tot['context_tokens']:,.0f}", f"{tot['busts']:.0f}")
    out.print(t)
    con.close()
    out.rule("[bold]4. sweep")
    spec_path = REPO_ROOT / "examples" / DEMO_SWEEP
    if spec_path.exists():
        res = run_sweep(db, load_spec(spec_path), "sample")
        out.print(f"sweep {res.sweep_id}: {res.points} runs of devboy_lru configurations and their no-op baselines "
                  f"in {res.seconds:.1f}s")
    else:
        out.print(f"[yellow]{spec_path} not found (installed without the repository): sweep skipped[/]")
    out.rule("[bold]5. report")
    r = build_report(db, "sample", report_dir)
    out.print(f"wrote {report_dir}/index.html and {report_dir}/report.md ({r['runs']} runs, {r['figures']} figures)")
    rec = r["recommendation"]
    if rec.get("best"):
        out.print(f"recommendation (minimize {rec['figure']}, {rec['max_risk']}): {rec['best']['label']}")
    out.print(f"[green]demo done[/]: {db}, {report_dir}/index.html")


from replay.cli.privacy import anonymize  # noqa: E402

main.add_command(anonymize)

if __name__ == "__main__":  # pragma: no cover
    main()
