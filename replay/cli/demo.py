"""`ctxreplay demo`: the whole pipeline on the embedded sample, and where that sample is."""

from __future__ import annotations

import json
import os
from contextlib import contextmanager, redirect_stdout
from pathlib import Path

import click
from rich.table import Table

from replay.cli.common import REPO_ROOT, esc, fail, json_option, open_db, out, print_table, remember_db, warn
from replay.cli.data import print_ingest_summary

SAMPLE_DIR = REPO_ROOT / "datasets" / "sample" / "logs"
DEMO_SWEEP = "devboy_capacity.toml"
DEMO_BOUND_TTLS = ("log", "5m")  # the TTLs the demo sweep uses: every configuration it runs has its bound


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


SYNTHETIC_NOTICE = ("Synthetic data: the embedded sample (datasets/sample/README.md) is generated, not anyone's "
                    "logs; its savings illustrate the pipeline, not what real logs save.")


def mark_synthetic(con, dataset: str) -> None:
    """Mark ``dataset`` as generated data (``datasets.description``: ``{"synthetic": true, ...}``);
    the report reads the marker and says so under its title."""
    con.execute("UPDATE datasets SET description = ? WHERE name = ?",
                [json.dumps({"synthetic": True, "card": "datasets/sample/README.md"}), dataset])


@click.command()
@click.option("--db", type=click.Path(dir_okay=False, path_type=Path), default=Path("out/demo.duckdb"),
              show_default=True, help="Where the demo database goes (recreated each time).", callback=remember_db)
@click.option("--logs", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Log directory to use instead of the embedded sample.")
@click.option("--report", "report_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("out/report"),
              show_default=True, help="Where the report goes.")
@json_option("Print only a JSON summary at the end: {db, report, logs, synthetic, notice, ingest, fidelity, policies, "
             "bounds, sweep, answer, warnings}.")
def demo(db: Path, logs: Path | None, report_dir: Path, as_json: bool) -> None:
    """Run the whole pipeline on the embedded sample dataset (no logs of your own needed).

    Ingests `datasets/sample/`, checks the no-op baseline against the recorded usage,
    replays the no-op baseline and every policy at its source's defaults under both cache-model
    variants (calibrated and model-only), computes the offline-optimal bounds (`ctxreplay bound`)
    under both, sweeps devboy's LRU capacity and writes the policy report (index.html + report.md).

    The sample is synthetic: the demo, its JSON (synthetic, notice) and its report say so; its
    savings illustrate the pipeline, not what real logs save (--logs: your own logs instead).
    """
    synthetic = logs is None  # the embedded sample: generated data, marked so in the database and the report
    logs = logs or sample_logs_dir()
    db.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", ".wal"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    summary: dict = {"db": str(db), "report": str(report_dir / "index.html"), "logs": str(logs),
                     "synthetic": synthetic, "notice": SYNTHETIC_NOTICE if synthetic else None}
    notes = _Warnings()
    with _quiet(as_json), notes:
        if synthetic:
            out.print(f"[bold yellow]{esc(SYNTHETIC_NOTICE)}[/]")
        summary["ingest"] = notes.after(_ingest_sample(logs, db))
        con = open_db(db, read_only=False)
        if synthetic:
            mark_synthetic(con, "sample")
        summary["fidelity"] = notes.after(_baseline_fidelity(con))
        summary["policies"] = notes.after(_every_policy(con))
        summary["bounds"] = notes.after(_bounds(con))
        con.close()
        summary["sweep"] = notes.after(_sweep(db))
        summary["answer"] = notes.after(_report(db, report_dir))
    summary["warnings"] = [{"message": m, "count": n} for m, n in notes.seen.items()]
    if as_json:
        from analysis.compare import strict

        click.echo(json.dumps(strict(summary), indent=2, allow_nan=False, default=str))
        return
    n = len(notes.seen)
    out.print("[green]demo done[/]" + (f" ({n} warning{'s' if n > 1 else ''}, on stderr above)" if n else "")
              + f": {esc(db)}, {esc(report_dir)}/index.html")
    if synthetic:
        out.print(f"[bold yellow]{esc(SYNTHETIC_NOTICE)}[/]")


@contextmanager
def _quiet(on: bool):
    """With --json, the steps' text goes nowhere (stdout carries the JSON only)."""
    if not on:
        yield
        return
    with open(os.devnull, "w") as sink, redirect_stdout(sink):
        yield


class _Warnings:
    """The Python warnings the steps raise (a policy replayed on a model outside its source's list,
    ...), each printed once as the CLI's own `warning:` line on stderr after the step that raised
    it, with how many times it was raised; never Python's raw `file:line: Category` lines."""

    def __init__(self):
        import warnings

        self.seen: dict[str, int] = {}
        self._shown = 0
        self._catch = warnings.catch_warnings(record=True)

    def __enter__(self):
        import warnings

        self._log = self._catch.__enter__()
        warnings.simplefilter("always", UserWarning)  # every occurrence, to count them
        return self

    def __exit__(self, *exc):
        self._catch.__exit__(*exc)
        self.after(None)
        return False

    def after(self, result):
        """Print the warnings raised since the last call (the step that returned ``result``); ``result``."""
        new: dict[str, int] = {}
        for w in self._log[self._shown:]:
            text = " ".join(str(w.message).split())
            new[text] = new.get(text, 0) + 1
        self._shown = len(self._log)
        for text, n in new.items():
            self.seen[text] = self.seen.get(text, 0) + n
            warn(text + (f" (raised {n} times in this step)" if n > 1 else ""))
        return result


def _title(text: str) -> None:
    """A step's title as a rule, or (wider than the console: a pipe is 80 columns) as a plain
    line: a rule would cut it."""
    from rich.cells import cell_len

    if cell_len(text) + 6 <= out.width:
        out.rule(f"[bold]{esc(text)}")
    else:
        out.print(f"[bold]── {esc(text)} ──[/]")


def _table(headers: list[str], rows: list[list[str]]) -> Table:
    """A step's table: the first column (a policy or bound name) wraps rather than being cut, each
    figure stays whole on one line (its column never narrower than it; the headers wrap)."""
    t = Table(*headers)
    for r in rows:
        t.add_row(*(esc(x) for x in r))
    t.columns[0].overflow = "fold"
    for i, c in enumerate(t.columns[1:], start=1):
        c.justify, c.min_width = "right", max((len(r[i]) for r in rows), default=1)
    return t


def _ingest_sample(logs: Path, db: Path) -> dict:
    from replay.store.load import ingest as run_ingest

    _title("1. ingest")
    out.print(f"logs: {esc(logs)}")
    summary = run_ingest([logs], db, dataset="sample", key_file=db.parent / "demo.key")
    print_ingest_summary(summary, db, "sample")
    if summary.failed:
        fail("the sample did not ingest cleanly: " + "; ".join(f"{f}: {r}" for f, r in summary.failed[:3]))
    return summary.as_dict()


def _baseline_fidelity(con) -> dict:
    from analysis.fidelity import variant_fidelity
    from replay.engine import ReplayOptions
    from replay.experiments.validate import validate as run_validate

    _title("2. baseline fidelity")
    rep = run_validate(con, "sample", ReplayOptions())
    found = variant_fidelity(rep)
    for name, v in found.items():
        e = v["rel_error"]
        within = "?" if v["sessions_within_targets"] is None else v["sessions_within_targets"]
        out.print(f"no-op replay vs recorded usage, {name.replace('_', '-')}: {within}/{v['sessions']} sessions "
                  "within targets; " + ", ".join(f"{label} {_pct(e.get(f))}" for f, label in (
                      ("input_total", "input"), ("cache_read", "reads"), ("cache_write", "writes"), ("cost", "cost"))))
    return found


def _pct(v) -> str:
    return "n/a" if v is None else f"{v:+z.2%}"


VARIANTS = (("calibrated", "log"), ("model-only", "none"))


def _every_policy(con) -> dict:
    from replay.engine import ReplayOptions
    from replay.experiments import runs
    from replay.model.cache import CacheConfig
    from replay.policies import REGISTRY, build

    _title("3. the baseline and every policy at its defaults, under both cache-model variants")
    ds = runs.load(con, "sample")
    rows: list[list[str]] = []
    found: dict[str, dict] = {}
    for name in REGISTRY:
        if name == "pipeline":
            continue
        cost, tot = [], {}
        for variant, evictions in VARIANTS:
            opts = ReplayOptions(CacheConfig(observed_evictions=evictions), detail=name == "noop" and not cost)
            run_id, results = runs.run_policy(con, ds, build(name), opts)
            tot = {k: sum(r.figures[k] for r in results) for k in ("cost", "context_tokens", "busts")}
            cost.append(f"{tot['cost']:,.2f}")
            found.setdefault(name, {})[variant.replace("-", "_")] = {"run_id": run_id, **tot}
        rows.append([name, *cost, f"{tot['context_tokens']:,.0f}", f"{tot['busts']:.0f}"])
    print_table(_table(["policy", *(f"{v} cost $" for v, _ in VARIANTS), "context tokens", "busts"], rows))
    return found


def _bounds(con) -> dict:
    """The offline-optimal bounds under both variants and each TTL the demo sweep uses, stored as
    runs (their baselines: step 3's noop runs, and a noop run per TTL the step has none for)."""
    import time

    from replay.engine import ReplayOptions
    from replay.experiments import runs
    from replay.experiments.bound import InsertBound, LosslessBound
    from replay.model.cache import CacheConfig
    from replay.policies import Noop

    _title("3b. offline-optimal bounds (what a policy that knew the whole log could save)")
    ds = runs.load(con, "sample")
    found: dict[str, dict] = {}
    costs: dict[tuple[str, str], list[str]] = {}
    t0 = time.perf_counter()
    for ttl in DEMO_BOUND_TTLS:
        for variant, evictions in VARIANTS:
            opts = ReplayOptions(CacheConfig(ttl=ttl, observed_evictions=evictions))
            if ttl != "log":
                runs.run_policy(con, ds, Noop(), opts)  # the bound's baseline at this TTL
            for policy in (InsertBound(), LosslessBound()):
                run_id, results = runs.run_policy(con, ds, policy, opts)
                cost = sum(r.figures["cost"] for r in results)
                found.setdefault(policy.name, {}).setdefault(ttl, {})[variant.replace("-", "_")] = {
                    "run_id": run_id, "cost": cost}
                costs.setdefault((policy.name, ttl), []).append(f"{cost:,.2f}")
    print_table(_table(["bound", "TTL", *(f"{v} cost $" for v, _ in VARIANTS)],
                       [[name, ttl, *c] for (name, ttl), c in costs.items()]))
    out.print(f"bounds computed in {time.perf_counter() - t0:.1f}s")
    return found


def _sweep(db: Path) -> dict | None:
    from replay.experiments.sweep import load_spec, run_sweep

    _title("4. sweep")
    spec_path = REPO_ROOT / "examples" / DEMO_SWEEP
    if spec_path.exists():
        spec = load_spec(spec_path)
        # the demo studies the capacity: a TTL is a cache what-if (`ctxreplay whatif`; the report's
        # levers), which a calibrated sweep must not rank, so the TTL dimension is left out here and
        # both cache-model variants are stored
        spec.cache = {k: v for k, v in spec.cache.items() if k not in ("ttl", "observed_evictions")}
        spec.cache["observed_evictions"] = ["log", "none"]
        spec.notes = []
        res = run_sweep(db, spec, "sample")
        out.print(f"sweep {res.sweep_id}: {res.points} runs of devboy_lru capacities and their no-op baselines, "
                  f"calibrated and model-only, in {res.seconds:.1f}s (TTLs: `ctxreplay whatif`)")
        return {"sweep_id": res.sweep_id, "points": res.points, "seconds": round(res.seconds, 2)}
    out.print(f"[yellow]{esc(spec_path)} not found (installed without the repository): sweep skipped[/]")
    return None


def _report(db: Path, report_dir: Path) -> dict:
    from analysis.report import build as build_report

    _title("5. report")
    r = build_report(db, "sample", report_dir)
    out.print(f"wrote {esc(report_dir)}/index.html and {esc(report_dir)}/report.md ({r['runs']} runs, "
              f"{r['figures']} figures)")
    out.print(esc(r["answer"]["headline"]))
    return r["answer"]


COMMANDS = [demo]
