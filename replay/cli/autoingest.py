"""Zero-config daily use: the default database, and the ingest of new or grown logs from the
agents' default folders that `usage`, `sessions`, `breaks` and `validate` run before they
answer, so `ctxreplay usage --by day` needs no set-up (as `ccusage daily`).

Which database: --db, else $CTXREPLAY_DB, else the data directory's
(`replay.ingest.roots.default_db_path`). The automatic ingest applies to that default
database only (no --db on the command line; $CTXREPLAY_DB counts as default: it moves the
default, it does not name a one-off file) and to the dataset `default`: a database given
with --db is the user's own experiment and is never written to unless --ingest asks.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import click

from replay.cli.console import clean, err, esc, fail, ingest_progress, warn

DB_SOURCE = "ctxreplay.db_source"  # ctx.meta: "option", "env" or "default"
DATASET = "default"

INGEST_HELP = ("Before answering, ingest the new or grown logs of the default folders (~/.claude/projects or "
               "$CLAUDE_CONFIG_DIR, $CODEX_HOME/sessions or ~/.codex/sessions, ~/.gemini/tmp/*/chats, "
               "~/.copilot/session-state; each if present) into dataset `default` (with --ingest, the --dataset "
               "given); files stored unchanged are skipped. Default: on unless --db or a --dataset other than "
               "`default` is given; --ingest also fills a --db, --no-ingest answers from what is stored.")


def resolve_db(ctx: click.Context, value: Path | None) -> Path:
    """The database a command uses (--db > $CTXREPLAY_DB > the data directory's), with where it
    came from remembered for the automatic ingest."""
    from replay.ingest.roots import db_from_env, default_db_path

    if value is not None:
        ctx.meta[DB_SOURCE] = "option"
        return value
    env = db_from_env()
    if env is not None:
        ctx.meta[DB_SOURCE] = "env"
        return env
    ctx.meta[DB_SOURCE] = "default"
    path = default_db_path() if _xdg_data_home() else _home_db_path()
    try:  # so `ctxreplay ingest LOGS` works on a fresh machine, as the XDG spec expects of its users
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        fail(data_folder_error(path.parent, e))
    return path


INSTEAD = "or choose another data folder with $XDG_DATA_HOME, or a database with --db or $CTXREPLAY_DB"


def _xdg_data_home() -> str | None:
    value = os.environ.get("XDG_DATA_HOME")
    return value if value and os.path.isabs(value) else None  # the XDG spec ignores a relative value


def _home_db_path() -> Path:
    """The default database under ~/.local/share; one `error:` line when there is no home folder
    (never a literal `~` folder in the working directory)."""
    from replay.ingest.keys import NoHomeError, home_dir
    from replay.ingest.roots import default_db_path

    try:
        home = home_dir("the default database (~/.local/share/ctxreplay)", "or $XDG_DATA_HOME, "
                        "or name a database with --db or $CTXREPLAY_DB")
    except NoHomeError as e:
        fail(str(e))
    return default_db_path({**os.environ, "HOME": str(home)})


def data_folder_error(folder: Path, e: OSError) -> str:
    """Why the data folder cannot be made, and what to do: a folder that is not writable is said
    to be so (not "does not exist")."""
    import errno

    where = _first_existing(folder)
    if e.errno in (errno.EACCES, errno.EPERM):
        return f"cannot create the data folder {folder}: {where} is not writable (permission denied); " \
               f"make it writable (chmod u+w {where}), {INSTEAD}"
    if e.errno == errno.EROFS:
        return f"cannot create the data folder {folder}: {where} is on a read-only file system; {INSTEAD[3:]}"
    if e.errno in (errno.ENOTDIR, errno.EEXIST):
        return f"cannot create the data folder {folder}: {where} is a file, not a folder; {INSTEAD[3:]}"
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"cannot create the data folder {folder}: no space left on device; free some space, {INSTEAD}"
    return f"cannot create the data folder {folder}: {e.strerror or e}; {INSTEAD[3:]}"


def _first_existing(folder: Path) -> Path:
    """The nearest of ``folder`` and its parents that exists (what blocks its creation)."""
    return next((p for p in (folder, *folder.parents) if os.path.lexists(p)), folder)


QUIET_HELP = ("No progress nor summary of the automatic ingest on stderr (its warnings and errors still print); "
              "machine-readable output (--json, --csv, --format) is as quiet.")


def auto_ingest_option(f):
    """`--ingest/--no-ingest`, `--quiet` and the automatic ingest before the command runs. Place
    it above `format_option` so the command's --json/--csv/--format quieten it."""

    @functools.wraps(f)
    def run(*args, auto_ingest: bool | None, ingest_quiet: bool, **kw):
        machine = bool(kw.get("as_json") or kw.get("as_csv")) or kw.get("table_format", "table") != "table"
        quiet = ingest_quiet or machine
        ingest_default_roots(kw["db"], kw.get("dataset"), auto_ingest, quiet=quiet)
        return f(*args, **kw)

    run = click.option("--quiet", "-q", "ingest_quiet", is_flag=True, help=QUIET_HELP)(run)
    return click.option("--ingest/--no-ingest", "auto_ingest", default=None, help=INGEST_HELP)(run)


def wanted(source: str, dataset: str | None, flag: bool | None) -> bool:
    """Whether to ingest: --ingest / --no-ingest decide; else only into the default database's
    dataset `default`."""
    if flag is not None:
        return flag
    return source != "option" and dataset in (None, DATASET)


def ingest_default_roots(db: Path, dataset: str | None, flag: bool | None, quiet: bool = False):
    """Ingest the default log folders into ``db`` when `wanted`; the summary, or None when
    nothing was ingested. With no folder present and no database yet, one `error:` line that
    says where it looked."""
    from replay.ingest.roots import candidate_roots, default_log_roots, shown

    ctx = click.get_current_context()
    source = ctx.meta.get(DB_SOURCE, "option")
    if not wanted(source, dataset, flag):
        return None
    try:
        roots = default_log_roots()
    except RuntimeError:  # no home folder (Path.home()): no default folder to read
        if not db.exists():
            fail(f"no database at {db}, and no home folder to find the agents' logs in ($HOME is unset); "
                 "set $HOME, or ingest a folder of logs with `ctxreplay ingest PATH`")
        if flag:
            warn("--ingest: no home folder ($HOME is unset), so no default log folder; nothing ingested")
        return None
    if not roots:
        looked = ", ".join(dict.fromkeys(shown(r.path) for r in candidate_roots()))
        if not db.exists():
            fail(f"no database at {db} and no agent logs in the default folders ({looked}); "
                 f"ingest a folder of logs with `ctxreplay ingest PATH`")
        if flag:
            warn(f"--ingest: none of the default log folders exists ({looked}); nothing ingested")
        return None
    return _ingest(db, dataset or DATASET, [r.path for r in roots], strict=bool(flag), quiet=quiet)


def _ingest(db: Path, dataset: str, paths: list[Path], strict: bool, quiet: bool):
    from replay import store
    from replay.ingest.keys import open_master_key
    from replay.ingest.roots import shown
    from replay.store.load import ingest

    try:
        master = open_master_key(None, warn=warn)
    except (ValueError, OSError) as e:
        fail(f"cannot ingest the default log folders: {e}")
    # a first run (no database yet) says at once what it reads; later ones only if reading takes a while
    progress = ingest_progress("ingest", disable=quiet, eager=not db.exists(),
                               source=f"from {clean(', '.join(shown(p) for p in paths))} into {clean(db)}")
    try:
        with progress:
            summary = ingest(paths, db, dataset=dataset, master_key=master, jobs=None,  # a first run's tree: every core
                             on_total=progress.total, on_progress=progress.advance)
    except (store.StoreError, ValueError, OSError) as e:
        if strict or not db.exists():
            fail(f"cannot ingest the default log folders into {db}: {e}")
        # another ctxreplay holding the file must not stop the answer from what is stored
        warn(f"new logs not ingested ({e}); answering from what {db} holds (--no-ingest skips this step)")
        return None
    if not quiet:
        _report(summary, db, [shown(p) for p in paths], {str(p) for p in paths})
    return summary


def _report(s, db: Path, roots: list[str], root_paths: set[str]) -> None:
    """One line on stderr when something was added; a note when files could not be read.
    Nothing when every file was unchanged: the daily path stays silent."""
    if s.ingested:
        skipped, repaired = sum(s.report.skipped.values()), sum(s.report.repaired.values())
        copies = len(s.duplicate_sessions)
        extra = ", ".join(x for x in (f"{skipped:,} line(s) skipped" if skipped else "",
                                      f"{repaired:,} repaired" if repaired else "",
                                      f"{copies:,} copies of a session stored once" if copies else "") if x)
        err.print(f"ingested {s.ingested:,} new or grown file(s) ({s.sessions:,} sessions, {s.requests:,} requests) "
                  f"from {esc(', '.join(roots))} into {esc(db)} in {s.seconds:.1f} s"
                  + (f"; {esc(extra)} (`ctxreplay ingest` on the same folders names each)" if extra else ""),
                  markup=True, highlight=False)
    # a default folder without logs yet (an agent installed, never run) is not a failure worth a line
    failed = [(f, reason) for f, reason in s.failed if f not in root_paths]
    if failed:
        f, reason = failed[0]
        err.print(f"note: {len(failed):,} file(s) under the default folders could not be read "
                  f"({esc(f)}: {esc(reason)}{', ...' if len(failed) > 1 else ''}); `ctxreplay ingest FOLDER` "
                  "lists each with its reason", highlight=False)
