"""What every command module shares: error handling, option definitions, table output and the
database helpers (and, re-exported, the consoles and progress bars of `replay.cli.console`).

Only light imports here: `replay.store` (and with it DuckDB) is imported by the helpers
that open a database, so `ctxreplay --version` and `--help` stay fast.
"""

from __future__ import annotations

import errno
import functools
import json
import re
import sys
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import click
from rich.console import Console

# the consoles, safe messages and progress bars live below this module (`replay.cli.autoingest`
# needs them too, and this module needs it); commands import them from here
from replay.cli.console import (  # noqa: F401
    byte_progress, clean, count_progress, err, esc, fail, ingest_progress, out, warn
)
from replay.cli import helpwrap  # noqa: F401  (imported for its effect: help texts wrap only between words)
from replay.cli.fmt import PIPE_WIDTH  # noqa: F401  (re-exported: the width `fmt.table_width` falls back to)

REPO_ROOT = Path(__file__).resolve().parents[2]
CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"]}


# --- errors ---------------------------------------------------------------------------

def os_error_message(e: OSError) -> str:
    """One line for a disk-full, permission or other OS error, naming the file and what to do."""
    name = e.filename if e.filename is not None else ""
    where = f"{name}: " if name != "" else ""
    if e.errno == errno.ENOSPC:
        return f"{where}no space left on device; free some space and run again"
    if e.errno == errno.EDQUOT:
        return f"{where}disk quota exceeded; free some space and run again"
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        what = "read-only file system" if e.errno == errno.EROFS else "permission denied"
        return f"{where}{what}; check the permissions of the file and its folder, or choose another path"
    return f"{where}{e.strerror or e}"


@contextmanager
def fail_on(*errors: type[BaseException], console: Console | None = None):
    """Turn the expected library errors raised in the block into one `error:` line."""
    try:
        yield
    except errors as e:
        fail(os_error_message(e) if isinstance(e, OSError) else str(e), console=console)


EXIT_CODES = """Exit codes: 0 done; 1 an error, printed as one `error: ...` line on stderr (a missing or
damaged database, an unknown dataset, a policy parameter out of range, `ingest` with no usable
file, `check` on a damaged file); 2 a usage error reported by the option parser
(`Error: ...` after a usage line: an unknown option or command, a missing argument, a value
outside the listed choices, a path given to an option that must exist but does not); 130
interrupted (Ctrl-C); 143 or 129 stopped by SIGTERM or SIGHUP (one `terminated (SIGTERM)` line;
`ingest --jobs` stops its workers too).

`--json` (`-j`) prints strict JSON on stdout (no NaN or infinity: missing values are null).
`--format plain|markdown|csv` (the commands that print tables) prints the tables alone on stdout
(titles and notes on stderr); not with `--json`.
`--dataset`: commands that read a dataset default to the database's only one and, when it
holds several, fail listing them; `ingest` and `anonymize` name the dataset they write
(default `default`)."""


class CleanGroup(click.Group):
    """The command group: OS errors (disk full, permissions) and DuckDB errors that escape a
    command end in one `error:` line and exit 1, not a traceback; Ctrl-C ends in one line and
    exit 130."""

    def invoke(self, ctx: click.Context):
        _STOPPED.clear()  # a stop seen by an earlier command of this process (tests) is not this one's
        if not {"-h", "--help"} & {*getattr(ctx, "_protected_args", ()), *ctx.args}:  # a command's help needs no memory
            check_memory_limits()
        try:
            with stop_signals():
                return super().invoke(ctx)
        except OSError as e:
            if e.errno == errno.EPIPE:
                raise
            fail(os_error_message(e))
        except (MemoryError, ImportError) as e:  # an ImportError: a native library that could not be mapped
            if isinstance(e, ImportError) and not re.search("failed to map segment|cannot allocate mem", str(e), re.I):
                raise
            fail(OUT_OF_MEMORY)
        except Terminated as e:
            terminated(e.signum)
        except (KeyboardInterrupt, click.exceptions.Abort):
            interrupted()
        except Exception as e:
            duckdb = sys.modules.get("duckdb")
            if is_stop(e):  # Ctrl-C inside a DuckDB query
                interrupted()
            costs = sys.modules.get("replay.model.costs")
            if costs is not None and isinstance(e, costs.PriceError):  # a model no price covers, found late
                fail(str(e))
            keys = sys.modules.get("replay.ingest.keys")
            if keys is not None and isinstance(e, keys.KeyFileError):  # e.g. no home folder for the default key
                fail(str(e))
            if type(e) is RuntimeError and str(e) == "Could not determine home directory.":  # Path.home()
                fail("no home folder ($HOME unset, no passwd entry for this user); set $HOME or give paths without ~")
            if duckdb is None or not isinstance(e, duckdb.Error):
                raise
            if _STOPPED:
                # the stop signal's `Terminated` was raised inside DuckDB (while it scanned a Python
                # object such as an Arrow table) and came back as DuckDB's own error: report the stop
                terminated(_STOPPED[-1])
            if "KeyboardInterrupt" in str(e):  # Ctrl-C, turned into DuckDB's error the same way
                interrupted()
            from replay import store

            db = ctx.meta.get(DB_META)
            fail(str(store.database_error(db or Path("the database"), e)))


# --- memory limits --------------------------------------------------------------------

# The address space a command needs (`ulimit -v` / `-d`): DuckDB, the tokenizer (Rust: it aborts the
# process when an allocation fails), pyarrow and their threads reserve far more than they touch.
# Measured (entire-cli, 188 MB, new database, 2 cores): the writer's VmPeak is 2.4-2.6 GB; an ingest
# failed at `ulimit -v` 0.4-1.4 GB (Rust abort, exit 134; DuckDB allocation errors; an ImportError of an
# unmappable library) and in 2 runs of 3 at 1.5 GB with --jobs 2; it passed every run at 1.75 and 2 GB.
MIN_ADDRESS_SPACE = 2 << 30
OUT_OF_MEMORY = ("out of memory: an allocation failed (a memory limit such as `ulimit -v`, or a full machine); "
                 "raise the limit or free memory, and run again")


def memory_limit_problem(need: int = MIN_ADDRESS_SPACE) -> str | None:
    """One line naming a soft address-space or data limit below ``need`` bytes and what to do,
    or None when there is none (or the platform has no such limits)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Windows
        return None
    for name, flag in (("RLIMIT_AS", "-v"), ("RLIMIT_DATA", "-d")):
        try:
            soft, hard = resource.getrlimit(getattr(resource, name))
        except (AttributeError, OSError, ValueError):
            continue
        if soft != resource.RLIM_INFINITY and 0 <= soft < need:
            fix = (f"raise it with `ulimit {flag} {need >> 10}` (or `ulimit {flag} unlimited`)"
                   if hard == resource.RLIM_INFINITY or hard >= need else
                   f"its hard limit is {hard >> 20:,} MiB too: run from a shell without it")
            return (f"the memory limit `ulimit {flag}` is {soft >> 20:,} MiB ({name}); ctxreplay needs at least "
                    f"{need >> 20:,} MiB of address space (DuckDB, the tokenizer and their threads reserve it): "
                    f"{fix}, and run again")
    return None


def check_memory_limits() -> None:
    """Fail with one line, before any work, under a memory limit that a command cannot live in:
    a native library would otherwise abort the process mid-way (no Python error to catch)."""
    problem = memory_limit_problem()
    if problem is not None:
        fail(problem)


def is_stop(e: BaseException) -> bool:
    """Ctrl-C or a stop signal, also as DuckDB reports one raised inside a statement (its
    InterruptException, or RuntimeError "Query interrupted")."""
    if isinstance(e, KeyboardInterrupt):
        return True
    db = sys.modules.get("replay.store.db")  # loaded with DuckDB: without it, no DuckDB statement ran
    return db is not None and db.stopped_in_duckdb(e)


def interrupted() -> None:
    """Ctrl-C: one line on stderr, exit 130; after a SIGTERM or SIGHUP whose `Terminated` a
    library swallowed on its way up (DuckDB turns any exception raised by a signal handler
    during a query into its own "interrupted"), as `terminated`."""
    if _STOPPED:
        terminated(_STOPPED[-1])
    err.print("interrupted", soft_wrap=True)
    sys.exit(130)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where Python runs next: a KeyboardInterrupt, so that every
    clean-up written for Ctrl-C (rolled-back batches, stopped worker processes, temporary
    files) runs for them too, instead of the process vanishing with its workers still running."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


STOP_SIGNALS = ("SIGTERM", "SIGHUP")
_STOPPED: list[int] = []  # the stop signals received, so an interrupt they caused is reported as theirs


@contextmanager
def stop_signals():
    """Within the block, SIGTERM and SIGHUP raise `Terminated` (main thread only; restored after)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_terminated(signum, frame):
        _STOPPED.append(signum)
        raise Terminated(signum)

    saved = {}
    try:
        for name in STOP_SIGNALS:
            sig = getattr(signal, name, None)
            if sig is not None and signal.getsignal(sig) is signal.SIG_DFL:  # an ignored SIGHUP (nohup) stays ignored
                saved[sig] = signal.signal(sig, raise_terminated)
        yield
    finally:
        for sig, old in saved.items():
            signal.signal(sig, old)


def terminated(signum: int) -> None:
    """SIGTERM/SIGHUP: one line on stderr, exit 128 + the signal number (as the shell reports a kill)."""
    import signal

    err.print(f"terminated ({signal.Signals(signum).name})", soft_wrap=True)
    sys.exit(128 + signum)


# --- options --------------------------------------------------------------------------

DB_META = "ctxreplay.db"


def remember_db(ctx: click.Context, param, value):
    ctx.meta[DB_META] = value
    return value


def _db_or_default(ctx: click.Context, param, value):
    from replay.cli.autoingest import resolve_db

    return remember_db(ctx, param, resolve_db(ctx, value))


DB_OPTION = click.option(
    "--db", type=click.Path(dir_okay=False, path_type=Path), default=None, callback=_db_or_default,
    help="DuckDB file holding datasets and runs [default: $CTXREPLAY_DB, else "
    "$XDG_DATA_HOME/ctxreplay/ctxreplay.duckdb, ~/.local/share/ctxreplay/ctxreplay.duckdb without XDG_DATA_HOME].",
)
QUIET_OPTION = click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
SPEC_ARGUMENT = click.argument("spec_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))


def json_option(help: str = "Print JSON."):
    """`--json` / `-j` (as in ccusage): strict JSON on stdout, nothing else."""
    return click.option("--json", "-j", "as_json", is_flag=True, help=help)


FORMAT_META = "ctxreplay.format"
FORMAT_HELP = ("How tables print: table (Rich; full width into a pipe), plain (columns aligned with spaces, no "
               "box characters), markdown (GitHub pipe table) or csv. Outside `table`, stdout holds the tables "
               "only (several: an empty line between them); titles and notes go to stderr.")


def format_option(f):
    """`--format table|plain|markdown|csv` for a command that prints its results with
    `print_table`. Not with `--json` (nor, in `usage`, with a `--csv` that says otherwise):
    one `error:` line. The choice reaches `print_table` through the context; outside `table`
    the command's other lines (`out`) go to stderr, so stdout is the tables alone."""
    from replay.cli.formats import FORMATS

    @functools.wraps(f)
    def run(*args, table_format: str, **kw):
        given = f"--format {table_format}"
        if kw.get("as_csv"):  # usage's --csv: an alias of --format csv
            if table_format not in ("table", "csv"):
                fail(f"--csv and {given}: choose one")
            table_format, given = "csv", "--csv"
            kw["as_csv"] = True
        elif "as_csv" in kw:
            kw["as_csv"] = table_format == "csv"
        if table_format != "table" and kw.get("as_json"):
            fail(f"--json and {given}: choose one")
        click.get_current_context().meta[FORMAT_META] = table_format
        if table_format == "table":
            return f(*args, **kw)
        out.stderr = True
        try:
            return f(*args, **kw)
        finally:
            out.stderr = False

    return click.option("--format", "table_format", type=click.Choice(FORMATS), default="table", show_default=True,
                        help=FORMAT_HELP)(run)


DATASET_HELP = "Dataset [default: the only one in the database; with several, name one]."


def dataset_option(help: str = DATASET_HELP, **kw):
    """`--dataset`. Commands that read one default to the database's only dataset and fail,
    listing them, when it holds several (`pick_dataset`)."""
    kw.setdefault("default", None)
    return click.option("--dataset", help=help, **kw)


def out_dir_option(help: str, **kw):
    return click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), help=help, **kw)


def key_file_option(help: str):
    return click.option("--key-file", type=click.Path(dir_okay=False, path_type=Path), default=None, help=help)


def slice_options(f):
    """--since/--until/--project/--model/--agent/--timezone/--key-file: which sessions (or, for
    `usage` and `sessions`, which responses) a command covers. Shared by usage, sessions, replay,
    sweep, compare and report; `replay.experiments.slices.make_filters` turns them into `Filters`."""
    from replay.cli.dates import DATE_HELP, UNTIL_HELP

    opts = [
        click.option("--since", metavar="DATE", default=None, help=DATE_HELP),
        click.option("--until", metavar="DATE", default=None, help=UNTIL_HELP),
        click.option("--project", "projects", metavar="PATH", multiple=True,
                     help="Only sessions of this project (repeatable): a path on this machine (pseudonymized with "
                     "the key, never stored) or a project pseudonym as `--by project` shows it (or as `--by "
                     "session` shortens it, `…/c504243265`, when one project alone ends so); folders below it "
                     "count too. Needs a database that records projects."),
        click.option("--model", "models", metavar="NAME", multiple=True,
                     help="Only responses of this model (repeatable; exact name as `--by model` shows it, without "
                     "` (fast)`: a model's fast-mode responses count under it)."),
        click.option("--agent", "agents", metavar="NAME", multiple=True,
                     help="Only sessions of this agent (repeatable): claude-code, codex, copilot-cli, gemini-cli."),
        click.option("--timezone", "tz_name", metavar="ZONE", default="local", show_default=True,
                     help="Time zone of days, weeks, months, --since/--until and the times shown: `local` "
                     "(this machine's, from $TZ or /etc/localtime, as ccusage counts days), an IANA name "
                     "(Europe/Paris) or UTC."),
        key_file_option("Key used to pseudonymize --project paths [default: $CTXREPLAY_KEY_FILE or "
                        "~/.config/ctxreplay/key]; never created here."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def objective_option(help: str):
    return click.option("--objective", type=click.Choice(["cost", "tokens"]), default="cost", show_default=True,
                        help=help)


def max_risk_option(help: str):
    return click.option("--max-risk", "max_risk", multiple=True, metavar="FIGURE=VALUE", help=help)


# the cache-model options live in their own module; commands import them from here
from replay.cli.cache_flags import cache_options, make_options, price_options  # noqa: E402,F401


# --- output ---------------------------------------------------------------------------

def print_table(t) -> None:
    """A Rich table at full width into a pipe or file (wrapped cells are unreadable there), at
    the terminal's width otherwise; with `--format plain|markdown|csv` (`format_option`) its
    cells in that format on stdout, after an empty line if a table came before, and its title
    on stderr."""
    ctx = click.get_current_context(silent=True)
    fmt = ctx.meta.get(FORMAT_META, "table") if ctx is not None else "table"
    if fmt != "table":
        from replay.cli.formats import RENDER

        if t.title:
            err.print(t.title, soft_wrap=True)
        n = ctx.meta.get("ctxreplay.tables", 0)
        ctx.meta["ctxreplay.tables"] = n + 1
        click.echo(("\n" if n else "") + RENDER[fmt](t), nl=False)
    elif out.is_terminal:
        out.print(t)
    else:
        from replay.cli.fmt import table_width

        Console(soft_wrap=True, width=table_width()).print(t)


def fmt_ts(ms: int | None, tz=None) -> str:
    """Epoch milliseconds as `YYYY-MM-DD HH:MM` in ``tz`` (UTC by default; a column header names
    the zone: `zone_label`); `-` when there is none."""
    from replay.experiments.slices import local_time

    d = local_time(ms, tz or timezone.utc)
    return "-" if d is None else d.strftime("%Y-%m-%d %H:%M")


def zone_label(tz, times=None) -> str:
    """The zone times are shown in, for a header: `started (America/Los_Angeles)`; with
    ``times`` (epoch ms), its abbreviation when they all share one (`started (PST)`), for a
    narrow column."""
    from replay.experiments.slices import local_time, tz_name

    name = tz_name(tz or timezone.utc)
    if times is not None and name != "UTC":
        abbr = {d.tzname() for d in (local_time(ms, tz) for ms in times) if d is not None}
        if len(abbr) == 1 and (one := abbr.pop()) and one.isalpha():
            return one
    return name


def json_default(o):
    if isinstance(o, datetime):
        return o.isoformat()
    return str(o)


def echo_json(obj, default=json_default) -> None:
    click.echo(json.dumps(obj, indent=2, default=default))


# --- database -------------------------------------------------------------------------

def open_db(db: Path, read_only: bool = True):
    """Connect to an existing `db` after reading it fully (a damaged file is refused with one
    line), closed with the click context; a store error is fatal. Only `ingest`-style writers
    create a database: a missing `db` is an error here."""
    from replay import store

    if not db.exists():
        fail(f"{db}: no such database; create it with `ctxreplay ingest LOGS --db {db}`")
    with fail_on(store.StoreError):
        con = store.connect(db, read_only=read_only, verify=True)
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.call_on_close(con.close)  # in-process callers (tests, notebooks) reopen the file
    return con


def verify_db(db: Path) -> None:
    """Fail (one line) unless `db` exists and reads fully, for commands whose library call opens it."""
    open_db(db).close()


def check_dataset(con, dataset: str, db: Path) -> None:
    """Fail unless the database holds `dataset`."""
    from replay import store

    names = store.dataset_names(con)
    if dataset not in names:
        fail(f"no dataset {dataset!r} in {db}; known: {', '.join(names) or 'none'}")


def pick_dataset(con, dataset: str | None, db: Path) -> str:
    """`dataset` if the database holds it, else the database's only dataset."""
    from replay import store

    if dataset:
        check_dataset(con, dataset, db)
        return _noted(con, dataset, db)
    names = store.dataset_names(con)
    if len(names) == 1:
        return _noted(con, names[0], db)
    if not names:
        fail(f"{db} holds no dataset; run `ctxreplay ingest PATH --db {db}` first")
    fail(f"{db} holds several datasets ({', '.join(names)}); choose one with --dataset")


def _noted(con, dataset: str, db: Path) -> str:
    """``dataset``, after a note on stderr if its Claude Code sessions predate the client
    versions and events the cache model's client rules read (schema 7)."""
    from replay import store

    stale = store.sessions_without_client_info(con, dataset)
    if stale:
        err.print(f"note: {stale} Claude Code session(s) in {db} were ingested before ctxreplay "
                  "stored client versions and events, so the client rules (resumes, task and skill turns) "
                  "cannot apply to them; re-ingest: `ctxreplay ingest` on the same logs reads files an "
                  "earlier ctxreplay read again", markup=False, highlight=False)
    return dataset
