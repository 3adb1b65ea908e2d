"""Data commands: `ingest`, `datasets`, `sessions`, `export` and `generate`."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.table import Table

from replay.cli.autoingest import auto_ingest_option
from replay.cli.common import (
    DB_OPTION, clean, dataset_option, echo_json, err, esc, fail, is_stop, fail_on, fmt_ts, format_option,
    ingest_progress, json_option, key_file_option, open_db, out, out_dir_option, pick_dataset, print_table, warn,
    zone_label
)
from replay.cli.fmt import count, fit, wide_option
from replay.cli.usage import filter_options
from replay.ingest.readers.report import REPAIRS as REPAIRED  # what each repair did, said beside its count



@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@DB_OPTION
@dataset_option("Dataset name the sessions are stored under.", default="default", show_default=True)
@key_file_option("Master key for content hashes and pseudonyms [default: $CTXREPLAY_KEY_FILE or ~/.config/ctxreplay/key].")
@click.option("--jobs", type=click.IntRange(min=1), default=None,
              help="Worker processes that read, parse and token-count files (one writer; no short form: -j is --json) "
                   "[default: every core, up to 4, for a new database fed 16 MB of logs or more (on Linux); else 1].")
@json_option("Print the summary as JSON: the counts, the failed files with their reasons, the lines skipped, "
             "repaired and non-context by reason, and the first 20 of them by file and line (line_messages).")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr (a bar on a terminal, else a line when "
              "reading starts, every few seconds and at the end).")
def ingest(paths: tuple[Path, ...], db: Path, dataset: str, key_file: Path | None, jobs: int | None, as_json: bool,
           quiet: bool) -> None:
    """Ingest agent logs (files or directory trees) into content-free traces.

    Reads Claude Code `.jsonl` transcripts, Stop-hook JSON dumps and `subagents/agent-*.jsonl`
    files. No raw text is stored: only sizes, token counts, keyed hashes and path
    pseudonyms. Re-ingesting unchanged files adds nothing; a file that grew is stored as a
    new version, and so is every file after an upgrade that changed what ctxreplay reads from
    logs (the stored hash covers the reader's revision). Bad lines and unreadable files are
    reported and counted, never fatal; FIFOs, devices and sockets are skipped by name, never
    opened; gzip logs (x.jsonl.gz) are read, other compressed logs and archives (.zip, .bz2,
    .xz, .zst) and folders that cannot be listed are named as failed, not read. A file that now holds a different session keeps the one stored
    from it. A --db that is not a DuckDB file (a log, CSV or Parquet file) is refused before
    anything is read. Exits 1 when no given
    file could be used. A --key-file (or $CTXREPLAY_KEY_FILE) must exist: only the default
    key is created on first use. --jobs N reads files in N processes (into a new database, with N > 1, one
    more reads the first files while the tokenizer loads); the result is the same. Without --jobs, a
    new database fed 16 MB of logs or more is read with every core (up to 4; on Linux), anything else with one.
    """
    from replay import store
    from replay.ingest.keys import open_master_key
    from replay.store.load import ingest as run_ingest

    missing = [p for p in paths if not p.exists()]
    if missing and len(missing) == len(paths):  # nothing to read: no database is created for it
        fail(f"{clean(str(missing[0]))}: no such file or directory" + (f" (and {len(missing) - 1} more)"
             if len(missing) > 1 else "") + "; nothing ingested, no database written: check the path "
             "(Claude Code keeps its logs in ~/.claude/projects, Codex in ~/.codex/sessions)")
    with fail_on(ValueError, OSError):
        master = open_master_key(key_file, warn=warn)
    # refreshed per file rather than by a thread: with no other thread running, --jobs workers
    # are forked (they start with every module imported), which is what makes --jobs 2 pay.
    # Without a terminal: plain lines on stderr (where from, every few seconds, done)
    shown = ", ".join(clean(p) for p in paths[:2]) + (f" and {len(paths) - 2:,} more" if len(paths) > 2 else "")
    progress = ingest_progress("ingest", disable=quiet or as_json, source=f"from {shown} into {clean(db)}")
    before = _stored_files(db)
    try:
        with fail_on(store.StoreError, ValueError, OSError), progress:
            summary = run_ingest(list(paths), db, dataset=dataset, master_key=master, jobs=jobs,
                                 on_total=progress.total, on_progress=progress.advance)
    except BaseException as e:  # Ctrl-C, SIGTERM: say what was kept (whole batches of whole files) before the stop
        if not is_stop(e):
            raise
        after = _stored_files(db)
        if before is not None and after is not None:
            err.print(f"ingest stopped: {after - before:,} file version(s) were stored before it (whole files only; "
                      "nothing half-written); run the same command again to read the rest", soft_wrap=True)
        raise
    if as_json:
        echo_json(summary.as_dict(), default=None)
    else:
        print_ingest_summary(summary, db, dataset)
    if summary.nothing_usable:
        sys.exit(1)


def _stored_files(db: Path) -> int | None:
    """File versions stored in ``db`` (0 when there is none yet; None when it cannot be read)."""
    if not Path(db).exists():
        return 0
    try:
        import duckdb

        con = duckdb.connect(str(db), read_only=True)
        try:
            return con.execute("SELECT count(*) FROM source_files").fetchone()[0]
        finally:
            con.close()
    except Exception:  # noqa: BLE001 - a database this cannot read: the interruption says no more
        return None


def print_ingest_summary(summary, db: Path, dataset: str) -> None:
    s = summary
    mbps = s.bytes / 1e6 / s.seconds if s.seconds else 0.0
    out.print(
        f"[bold]{s.files}[/] files"
        + (f" ({s.subagent_files} of them subagent files read with their sessions)" if s.subagent_files else "")
        + f": {s.ingested} ingested ({s.new_versions} as new versions), "
        f"{s.unchanged} unchanged, {s.duplicates} duplicate content, {len(s.failed)} failed"
        + (f", {len(s.skipped_files)} skipped" if s.skipped_files else "") + f" in {s.seconds:.1f}s ({mbps:.1f} MB/s)"
    )
    out.print(
        f"added {s.sessions} sessions, {s.streams} streams, {s.requests} requests, {s.blocks} blocks "
        f"to dataset [cyan]{esc(dataset)}[/] in {esc(db)}"
    )
    rep = s.report
    if rep.skipped:
        out.print("lines skipped: " + ", ".join(f"{esc(k)}={v}" for k, v in sorted(rep.skipped.items())))
    if rep.repaired:
        out.print("lines repaired and kept: " + "; ".join(
            f"{esc(k)}={v}" + (f" ({REPAIRED[k]})" if k in REPAIRED else "") for k, v in sorted(rep.repaired.items())))
    if rep.pseudonymized:
        out.print("values pseudonymized (outside their grammar or vocabulary): "
                  + ", ".join(f"{esc(k)}={v}" for k, v in sorted(rep.pseudonymized.items())))
    if rep.skipped or rep.repaired or rep.pseudonymized:
        for m in rep.messages:
            out.print(f"  [yellow]{esc(m)}[/]")
        more = sum(rep.skipped.values()) + sum(rep.repaired.values()) + sum(rep.pseudonymized.values()) \
            - len(rep.messages)
        if more > 0:
            out.print(f"  … and {more:,} more, counted above by reason (the first {rep.max_messages} are listed, here "
                      "and in --json's line_messages)")
    if s.duplicate_sessions:
        out.print(f"{len(s.duplicate_sessions)} copies of a session stored once (the longest copy is kept):")
        for f, kept in s.duplicate_sessions:
            out.print(f"  [yellow]{esc(f)}[/] copy of {esc(kept)}")
    if s.kept_sessions:
        out.print(f"{len(s.kept_sessions)} files now hold a different session than before; the session each "
                  "held is kept and the new one added:")
        for f in s.kept_sessions:
            out.print(f"  [yellow]{esc(f)}[/]")
    if s.shorter_versions:
        out.print(f"{len(s.shorter_versions)} files shorter than the version stored from them (truncated?); the "
                  "fuller stored version is kept, not replaced:")
        for f, n, m in s.shorter_versions:
            out.print(f"  [yellow]{esc(f)}[/]: {n:,} requests, the stored version {m:,}")
    if s.report.non_context:
        total = sum(s.report.non_context.values())
        out.print(f"non-context lines (progress, snapshots, UI): {total}")
    for f, reason in s.failed:
        out.print(f"  [red]{esc(f)}: {esc(reason)}[/]")
    if s.skipped_files:
        out.print(f"{len(s.skipped_files)} skipped (not regular files, never opened):")
        for f, reason in s.skipped_files:
            out.print(f"  [yellow]{esc(f)}: {esc(reason)}[/]")
    if s.unchanged and not s.ingested:
        out.print("nothing new: every file was already ingested unchanged")


@click.command()
@DB_OPTION
@json_option()
@format_option
def datasets(db: Path, as_json: bool) -> None:
    """List the datasets in a database."""
    from replay import store

    con = open_db(db)
    rows = store.datasets(con)
    if as_json:
        echo_json(rows)
        return
    t = Table("dataset", "sessions", "requests", "blocks", "file versions", "token counter", "created")
    for r in rows:
        t.add_row(esc(r["name"]), count(r["sessions"]), count(r["requests"]), count(r["blocks"]),
                  count(r["file_versions"]),
                  esc(r["token_counter"]), r["created_at"].strftime("%Y-%m-%d %H:%M"))
    print_table(t)


@click.command()
@DB_OPTION
@auto_ingest_option
@dataset_option()
@filter_options
@click.option("--resolve", "resolve_dir", metavar="DIR", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=None, help="Map each session key and project pseudonym back to its log file and folder under "
              "DIR, by recomputing the keyed hashes of the files there with your key (--key-file).")
@wide_option
@json_option("Print strict JSON: one object per session, with its recorded usage and cost (with --resolve, its "
             "`file` and `project_path`).")
@format_option
def sessions(db: Path, dataset: str | None, since, until, projects, models, agents, tz_name, key_file, prices_file,
             price_date, resolve_dir, wide, as_json: bool) -> None:
    """List the sessions of a dataset (one row per session) with their recorded cost.

    cost $ is what the log records, priced per response with its model's rates as `ctxreplay
    usage` does (`+`: part of it has no price; `?`: none). With filters (--since, --until,
    --project, --model, --agent), only sessions with a matching response are listed and their
    tokens and cost cover those responses only.

    Session keys and projects are pseudonyms: --resolve DIR finds, among the log files under
    DIR, the one each session was read from (the database keeps only a keyed hash of its path)
    and the folder its project pseudonym stands for. Only the key that ingested them can do it.
    """
    from replay import store
    from replay.cli.usage import make_filters, money, price_table, recorded_usage
    from replay.experiments.slices import iso_in

    prices = price_table(prices_file, price_date)
    con = open_db(db)
    dataset = pick_dataset(con, dataset, db)
    prices.bind(dataset, key_file)  # a hidden model name in the price file, keyed as this dataset keys it
    filters = make_filters(con, dataset, since, until, projects, models, agents, tz_name, key_file)
    costs = {r["key"]: r for r in recorded_usage(con, dataset, "session", filters, prices)["rows"]}
    rows = []
    for r in store.sessions(con, dataset):
        u = costs.get(r["session_key"])
        if u is None and filters.active():
            continue
        rows.append({**r, "started_at_local": iso_in(r["started_at"], filters.tz),  # in --timezone, with its offset
                     "project": u.get("project") if u else None, "cost": u["cost"] if u else 0.0,
                     "cost_complete": u["cost_complete"] if u else True, "usage": None if u is None else {
            k: u[k] for k in ("requests", "input", "cache_write_5m", "cache_write_1h", "cache_read", "output",
                              "total_tokens", "cost", "cost_complete", "unpriced_models", "requests_without_usage")}})
    found = _resolve(con, dataset, key_file, resolve_dir, rows) if resolve_dir else None
    if as_json:
        echo_json(rows)
        return
    if not rows and filters.active():  # not an empty table: what the logs cover, and how to ask for it
        from replay.experiments.slices import no_match_text

        hint = no_match_text(con, dataset, filters.projects, filters.models, filters.agents, filters.tz,
                             filters.project_names)
        out.print(f"no session of {esc(dataset)} matches these filters; {esc(hint)}")
        return
    extra = ("streams", "blocks", "compactions") if wide else ()
    t = Table("session", "agent", "models", *extra, "requests", "block tokens", f"started ({zone_label(filters.tz)})",
              "cost $",
              title=f"Sessions of {esc(dataset)}" + ("" if wide else " (--wide: streams, blocks, compactions)"))
    for c in t.columns[3:]:
        c.justify, c.no_wrap = "right", True
    t.columns[0].no_wrap = True
    total = 0.0
    for r in rows:
        u = r["usage"]
        total += u["cost"] if u else 0.0
        more = (count(r["n_streams"]), count(r["n_blocks"]), count(r["n_compactions"])) if wide else ()
        t.add_row(esc(r["session_key"]), esc(r["agent"]), esc((r["models"] or "-").replace(",", ", ")), *more,
                  count(r["n_requests"]), count(r["block_tokens"]), fmt_ts(r["started_at"], filters.tz),
                  money(u) if u else "0.00")
    incomplete = any(r["usage"] and not r["usage"]["cost_complete"] for r in rows)
    t.add_section()
    t.add_row(f"{len(rows)} sessions", *[""] * (len(t.columns) - 2), f"{total:,.2f}" + ("+" if incomplete else ""),
              style="bold")
    print_table(fit(t, wide))
    if found is not None:
        _print_resolved(rows, found, resolve_dir)


def _resolve(con, dataset: str, key_file: Path | None, root: Path, rows: list[dict]) -> dict:
    """Give each row its `file` and `project_path` under ``root`` (None when not found there)."""
    from replay.ingest.keys import open_master_key
    from replay.store.resolve import resolve

    with fail_on(ValueError, OSError):
        found = resolve(con, dataset, open_master_key(key_file, warn=warn), root)
    for r in rows:
        hit = found["sessions"].get(r["session_key"], {})
        r["file"], r["project_path"] = hit.get("file"), hit.get("project_path")
    return found


def _print_resolved(rows: list[dict], found: dict, root: Path) -> None:
    t = Table("session", "project", "folder", "file (under the folder given)",
              title=f"Sessions resolved under {esc(root)}")
    t.columns[0].no_wrap = True
    for c in t.columns[1:]:
        c.overflow = "fold"  # a path cut short with an ellipsis could not be opened
    base = root.resolve()
    for r in rows:
        if r["file"]:
            f = Path(r["file"])
            shown = f.relative_to(base) if f.is_relative_to(base) else f
            t.add_row(esc(r["session_key"]), esc(r["project"] or "-"), esc(r["project_path"] or "-"), esc(shown))
    missing = sum(1 for r in rows if not r["file"])
    if len(t.rows):
        print_table(fit(t))
    out.print(f"{len(rows) - missing} of {len(rows)} session(s) found among {found['files_scanned']:,} log file(s) "
              f"under {esc(root)}" + (f"; {missing} not there (read from elsewhere, or ingested with another key)"
                                      if missing else ""))


@click.command()
@DB_OPTION
@dataset_option("Dataset to export [default: the only one in the database; with several, name one].")
@out_dir_option("Directory for the Parquet files.", required=True)
@json_option("Print JSON: {dataset, out, tables: {table: rows}}.")
def export(db: Path, dataset: str | None, out_dir: Path, as_json: bool) -> None:
    """Export a dataset's trace as Parquet (sessions, streams, requests, blocks, compactions).

    The trace holds no raw text, so it can be shared; the key file stays with you. Files are
    written under temporary names and renamed when all are complete.
    """
    from replay import store

    con = open_db(db)
    dataset = pick_dataset(con, dataset, db)
    with fail_on(store.StoreError, OSError):
        counts = store.export_parquet(con, dataset, out_dir)
    if as_json:
        echo_json({"dataset": dataset, "out": str(out_dir), "tables": counts}, default=None)
        return
    out.print(f"wrote {esc(out_dir)}: " + ", ".join(f"{t} {n}" for t, n in counts.items()))


@click.command()
@out_dir_option("Directory to write the Claude Code-format logs into.", default=Path("synthetic-logs"),
                show_default=True)
@click.option("--sessions", "n_sessions", type=click.IntRange(min=1), default=6, show_default=True,
              help="Number of sessions.")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed (same seed, same bytes).")
@json_option("Print JSON: {out, files, bytes, sessions, requests, tool_results}.")
def generate(out_dir: Path, n_sessions: int, seed: int, as_json: bool) -> None:
    """Generate a deterministic synthetic corpus of Claude Code sessions.

    Sessions have file re-reads with and without edits in between, partial reads, greps,
    listings, test runs, compactions, subagents and usage consistent with a prompt cache.
    """
    from replay.synth.generate import generate_corpus

    s = generate_corpus(out_dir, sessions=n_sessions, seed=seed)
    if as_json:
        echo_json({"out": str(out_dir), "files": len(s.files), "bytes": s.bytes, "sessions": s.sessions,
                   "requests": s.requests, "tool_results": s.tool_results, "seed": seed}, default=None)
        return
    out.print(
        f"wrote {len(s.files)} files ({s.bytes / 1e6:.1f} MB) to {esc(out_dir)}: "
        f"{s.sessions} sessions, {s.requests} requests, {s.tool_results} tool results"
    )


COMMANDS = [ingest, datasets, sessions, export, generate]
