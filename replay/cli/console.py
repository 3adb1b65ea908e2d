"""The consoles, the messages that make hostile text safe to print, and the progress bars every command uses.

It imports nothing else from `replay`: `replay.cli.common` and `replay.cli.autoingest` both
import it (and `common` re-exports its names, which commands import from there).
"""

from __future__ import annotations

import re
import sys

from rich.console import Console
from rich.markup import escape as rich_escape
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)


# --- messages -------------------------------------------------------------------------

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def clean(value) -> str:
    """``value`` as one line of text with control characters (ANSI escapes, newlines, bidi
    overrides, undecodable bytes) shown as \\xNN / \\uNNNN: a hostile file name cannot drive
    the terminal."""
    text = str(value)
    return _UNSAFE.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text)


def esc(value) -> str:
    """``value`` safe inside a Rich markup string: markup escaped, control characters made visible."""
    return rich_escape(clean(value))


def fail(msg: str, code: int = 1, *, console: Console | None = None) -> None:
    """Print `error: MSG` on stderr (MSG is plain text, never markup) and exit with `code`."""
    (console or err).print(f"[bold red]error:[/] {esc(msg)}", soft_wrap=True)
    sys.exit(code)


def warn(msg: str) -> None:
    """Print `warning: MSG` on stderr (MSG is plain text); the command goes on."""
    err.print(f"[yellow]warning:[/] {esc(msg)}", soft_wrap=True)


# --- progress bars --------------------------------------------------------------------

def byte_progress(label: str, disable: bool, console: Console | None = None, auto_refresh: bool = True) -> Progress:
    """A bar over bytes read, with the current file name (ingest, anonymize), shown as plain
    text; none when the console is not a terminal. ``auto_refresh=False``: no refresh thread
    (the caller refreshes on each update), so worker processes can still be forked."""
    console = console or err
    return Progress(
        TextColumn(f"[bold]{esc(label)}"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
        TextColumn("{task.description}", markup=False), console=console, disable=disable or not console.is_terminal,
        transient=True, auto_refresh=auto_refresh,
    )


def count_progress(label: str, counter: str, disable: bool) -> Progress:
    """A bar over counted units (sessions, session-configs, trials)."""
    return Progress(TextColumn(f"[bold]{esc(label)}"), BarColumn(), TextColumn(counter), TimeRemainingColumn(),
                    console=err, disable=disable or not err.is_terminal, transient=True)
