"""The consoles, the messages that make hostile text safe to print, and the progress bars every command uses.

It imports nothing else from `replay`: `replay.cli.common` and `replay.cli.autoingest` both
import it (and `common` re-exports its names, which commands import from there).
"""

from __future__ import annotations

import os
import re
import sys
import time

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


# --- ingest progress: a bar on a terminal, plain lines elsewhere -------------------------

PROGRESS_SECONDS = 2.0  # without a terminal: a progress line at most this often ($CTXREPLAY_PROGRESS_SECONDS)


def progress_seconds() -> float:
    try:
        return max(0.0, float(os.environ.get("CTXREPLAY_PROGRESS_SECONDS") or PROGRESS_SECONDS))
    except ValueError:
        return PROGRESS_SECONDS


def live_terminal(console: Console) -> bool:
    """Whether a live bar can be drawn: Rich sees a terminal and the file is one (or
    $TTY_COMPATIBLE=1 says so); $FORCE_COLOR colours a CI log, it does not make a bar's
    cursor movements readable there."""
    if not console.is_terminal:
        return False
    try:
        return os.environ.get("TTY_COMPATIBLE") == "1" or console.file.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def ingest_progress(label: str, disable: bool, source: str, eager: bool = True, console: Console | None = None):
    """Progress over the bytes an ingest reads (``total(n)``, then ``advance(n, name)`` per file).
    On a terminal, `byte_progress`'s bar; elsewhere (a pipe, a file, CI) plain lines on stderr:
    one when reading starts (``source`` says from where into what), one every
    `progress_seconds`, one at the end. ``eager=False``: the lines start only once reading
    has taken `progress_seconds` (an unchanged tree is checked silently)."""
    console = console or err
    if disable:
        return _Lines(label, source, console, eager, silent=True)
    if live_terminal(console):
        return _Bar(byte_progress(label, disable=False, console=console, auto_refresh=False))
    return _Lines(label, source, console, eager)


class _Bar:
    def __init__(self, progress: Progress):
        self.progress, self.task = progress, None

    def __enter__(self):
        self.progress.__enter__()
        self.task = self.progress.add_task("", total=None)
        return self

    def __exit__(self, *exc):
        return self.progress.__exit__(*exc)

    def total(self, n: int) -> None:
        self.progress.update(self.task, total=n, refresh=True)

    def advance(self, n: int, name: str) -> None:
        self.progress.update(self.task, advance=n, description=clean(name[:40]), refresh=True)


class _Lines:
    """Plain progress lines (no markup, no control codes), driven by the caller's updates: no thread."""

    def __init__(self, label: str, source: str, console: Console, eager: bool, silent: bool = False):
        self.label, self.source, self.console, self.eager, self.silent = clean(label), source, console, eager, silent
        self.every = progress_seconds()
        self.size = self.done = 0
        self.started = False

    def __enter__(self):
        self.t0 = self.last = time.monotonic()
        return self

    def __exit__(self, exc_type, *exc):
        if self.started and exc_type is None:
            self._line(f"done in {time.monotonic() - self.t0:.1f} s")

    def _line(self, text: str) -> None:
        self.console.print(f"{self.label}: {text}", markup=False, highlight=False, emoji=False, soft_wrap=True)

    def _start(self) -> None:
        if not self.started and not self.silent:
            self.started = True
            self._line(f"{_mb(self.size)} of logs {self.source}")

    def total(self, n: int) -> None:
        self.size = n
        if self.eager or time.monotonic() - self.t0 >= self.every:
            self._start()

    def advance(self, n: int, name: str) -> None:
        self.done += n
        now = time.monotonic()
        if now - self.last < self.every or self.silent:
            return
        self._start()
        self.last = now
        share = f"{100 * self.done // self.size}% ({_mb(self.done, unit=False)} of {_mb(self.size)})" if self.size \
            else _mb(self.done)
        self._line(f"{share} after {now - self.t0:.1f} s")


def _mb(n: int, unit: bool = True) -> str:
    return f"{n / 1e6:,.1f}" + (" MB" if unit else "")
