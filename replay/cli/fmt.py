"""How figures read in every command's text output: durations, money, counts and percentages.

One place, so `breaks`, `bound`, `compare`, `replay` and the rest agree: an idle gap reads
`11 h 20 m` (never `40,794 s`), a loss `−$239.52` (never `$-239.52`), a count `36` (never
`36.0`). JSON output keeps the raw numbers; only text goes through here.

Signs: money, amounts, counts and durations take the Unicode minus (MINUS), percentages the
ASCII hyphen-minus unless the line also shows money (``pct(..., minus=MINUS)``): one sign per
line. Nothing that rounds to zero carries a minus. (The report and its charts use the ASCII
hyphen-minus throughout: ``analysis.answer``.)
"""

from __future__ import annotations

import math
import os

MINUS = "\u2212"  # the typographic minus: `−$1.20` lines up with `+$1.20` and cannot be read as a dash
WIDTH = 120  # what a table should fit by default; `--wide` shows every column
PIPE_WIDTH = 240  # a table's width into a pipe or file without $COLUMNS (`table_width`)


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def duration_cell(seconds: float | None):
    """`duration` as a table cell that carries its exact seconds (``--format csv`` writes those,
    not the text's minutes or hours)."""
    from rich.style import Style
    from rich.text import Text

    return Text(duration(seconds), style=Style(meta={"seconds": None if _missing(seconds) else float(seconds)}))


def duration(seconds: float | None) -> str:
    """`47 s`, `4 m 05 s`, `11 h 20 m`, `3 d 04 h`: two units at most, the second zero-padded
    so that a column of them lines up; `-` when unknown."""
    if _missing(seconds):
        return "-"
    s = int(round(float(seconds)))
    sign = MINUS if s < 0 else ""
    s = abs(s)
    if s < 60:
        return f"{sign}{s} s"
    if s < 3600:
        return f"{sign}{s // 60} m {s % 60:02d} s"
    if s < 86400:
        return f"{sign}{s // 3600} h {s % 3600 // 60:02d} m"
    return f"{sign}{s // 86400} d {s % 86400 // 3600:02d} h"


def money(x: float | None, digits: int = 2, *, sign: bool = False) -> str:
    """`$3.58`, `−$239.52` (`+$3.58` with ``sign``); `-` when unknown. A value that rounds to
    zero prints without a sign, so `−$0.00` never appears."""
    if _missing(x):
        return "-"
    text = f"{abs(x):,.{digits}f}"
    if float(text.replace(",", "")) == 0:
        return f"${text}"
    if x < 0:
        return f"{MINUS}${text}"
    return f"+${text}" if sign else f"${text}"


def amount(x: float | None, digits: int = 2) -> str:
    """A dollar amount in a column headed `$`: `1,234.56`, `−0.42`, without the dollar sign."""
    if _missing(x):
        return "-"
    text = f"{abs(x):,.{digits}f}"
    return f"{MINUS}{text}" if x < 0 and float(text.replace(",", "")) != 0 else text


def count(x: float | int | None) -> str:
    """An integer with thousands separators (`1,603`; a float count such as 36.0 as `36`); `-`
    when unknown."""
    if _missing(x):
        return "-"
    n = int(round(float(x)))
    return f"{MINUS}{-n:,}" if n < 0 else f"{n:,}"


def signed_count(x: float | int | None) -> str:
    """A change in a count: `+1,234`, `−56`, `0`."""
    if _missing(x):
        return "-"
    n = int(round(float(x)))
    return f"+{n:,}" if n > 0 else count(n)


def pct(ratio: float | None, digits: int = 2, *, sign: bool = True, minus: str = "-") -> str:
    """A ratio as a percentage: `+8.24%`, `-79.39%` (``sign`` False: `96.3%`); `-` when unknown;
    one that rounds to zero has no sign (`0.00%`, never `-0.00%`). Percentages keep the ASCII
    minus (`--format csv` readers parse them as numbers); a line that also shows money passes
    ``minus=MINUS`` so that it reads one sign (`−$15.47 (−79.39%)`, not `−$15.47 (-79.39%)`)."""
    if _missing(ratio):
        return "-"
    text = f"{abs(ratio) * 100:.{digits}f}%"
    if float(text[:-1]) == 0:
        return text
    if ratio < 0:
        return minus + text
    return "+" + text if sign else text


def interval(low: float | None, high: float | None, digits: int = 2, *, minus: str = "-") -> str:
    """A 95% interval of a ratio in points: `[-0.66, +1.58]`; never `-0.00` (`[+0.00, +1.58]`)."""
    if _missing(low) or _missing(high):
        return "-"

    def one(x: float) -> str:
        text = f"{100 * x:+z.{digits}f}"
        return minus + text[1:] if text[0] == "-" else text

    return f"[{one(low)}, {one(high)}]"


def table_width() -> int:
    """The width a table is laid out for when stdout is not a terminal: $COLUMNS when set
    (so `COLUMNS=120 ctxreplay compare | less` fits), else wide enough never to wrap a cell."""
    cols = os.environ.get("COLUMNS", "")
    return int(cols) if cols.isdigit() and int(cols) > 0 else PIPE_WIDTH


def natural_width(t) -> int:
    """The width ``t`` takes when nothing limits it."""
    from rich.console import Console

    return Console(width=10_000).measure(t).maximum


def fit(t, wide: bool = False):
    """``t`` laid out within `WIDTH` columns unless ``wide``: when its natural width is larger,
    the table is given that width, so its wrappable columns (names, settings) wrap while the
    figures, set `no_wrap`, stay on one line. Returns ``t``."""
    if wide:
        return t
    if natural_width(t) > WIDTH:
        t.width = WIDTH
    return t


def wide_option(f):
    """`--wide`: every column, at the table's natural width (the default fits `WIDTH` columns)."""
    import click

    return click.option("--wide", is_flag=True,
                        help=f"Show every column at full width (the default shows the essential ones and fits "
                        f"{WIDTH} columns).")(f)
