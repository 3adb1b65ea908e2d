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

from . import __version__, store

err = Console(stderr=True)
out = Console()

DB_OPTION = click.option(
    "--db", type=click.Path(dir_okay=False, path_type=Path), default=Path("ctxreplay.duckdb"),
    show_default=True, help="DuckDB file holding datasets and runs.",
)
REPO_ROOT = Path(__file__).resolve().parents[1]
SAMPLE_DIR = REPO_ROOT / "datasets" / "sample" / "logs"


def _fail(msg: str, code: int = 1) -> None:
    err.print(f"[bold red]error:[/] {msg}")
    sys.exit(code)


def _open(db: Path, read_only: bool = True):
    try:
        return store.connect(db, read_only=read_only)
    except store.StoreError as e:
        _fail(str(e))


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
    from .ingest import ingest as run_ingest

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
    from .generate import generate_corpus

    s = generate_corpus(out_dir, sessions=n_sessions, seed=seed)
    out.print(
        f"wrote {len(s.files)} files ({s.bytes / 1e6:.1f} MB) to {out_dir}: "
        f"{s.sessions} sessions, {s.requests} requests, {s.tool_results} tool results"
    )


def sample_logs_dir() -> Path:
    """The committed sample, or (installed without the repo) the same sample regenerated."""
    if SAMPLE_DIR.is_dir():
        return SAMPLE_DIR
    from .generate import generate_corpus
    from .sample import SAMPLE_SEED, SAMPLE_SESSIONS

    tmp = Path.home() / ".cache" / "ctxreplay" / "sample-logs"
    if not tmp.is_dir():
        generate_corpus(tmp, sessions=SAMPLE_SESSIONS, seed=SAMPLE_SEED)
    return tmp


@main.command()
@click.option("--db", type=click.Path(dir_okay=False, path_type=Path), default=Path("out/demo.duckdb"),
              show_default=True, help="Where the demo database goes (recreated each time).")
@click.option("--logs", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Log directory to use instead of the embedded sample.")
def demo(db: Path, logs: Path | None) -> None:
    """Run the whole pipeline on the embedded sample dataset (no logs of your own needed).

    Ingests `datasets/sample/`, then lists what was stored.
    """
    from .ingest import ingest as run_ingest

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
    con = _open(db)
    out.rule("[bold]2. sessions")
    t = Table("session", "streams", "requests", "blocks", "compactions", "block tokens")
    for r in store.sessions(con, "sample"):
        t.add_row(r["session_key"], str(r["n_streams"]), str(r["n_requests"]), str(r["n_blocks"]),
                  str(r["n_compactions"]), f"{r['block_tokens']:,}")
    out.print(t)
    con.close()
    out.print(f"[green]demo done[/]: {db}")


if __name__ == "__main__":  # pragma: no cover
    main()
