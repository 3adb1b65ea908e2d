"""The tables of `--format plain|markdown|csv`: a Rich table's header, rows and footer as text,
without boxes, styles or markup, each cell's text as the Rich table shows it (numbers keep
their thousands separators, percent signs and `+`/`?` marks; CSV drops the separators)."""

from __future__ import annotations

import csv
import io
import re

from rich.cells import cell_len
from rich.text import Text

FORMATS = ("table", "plain", "markdown", "csv")


def cell_text(cell) -> str:
    """The text a cell shows: markup strings rendered (`\\[` back to `[`, styles dropped)."""
    if isinstance(cell, Text):
        return cell.plain
    if isinstance(cell, str):
        return Text.from_markup(cell).plain
    return "" if cell is None else str(cell)


def table_cells(t) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of a rich.table.Table; the footer, when the table shows one, is the last row."""
    header = [cell_text(c.header) for c in t.columns]
    rows = [list(r) for r in zip(*([cell_text(x) for x in c.cells] for c in t.columns))]
    if t.show_footer:
        rows.append([cell_text(c.footer) for c in t.columns])
    return header, rows


def _one_line(s: str) -> str:
    return " ".join(s.splitlines())


def plain(t) -> str:
    """Columns aligned with spaces (numbers right-aligned where the table aligns them), a header line."""
    header, rows = table_cells(t)
    lines = [[_one_line(c) for c in r] for r in [header, *rows]]
    widths = [max(cell_len(r[i]) for r in lines) for i in range(len(header))]
    right = [c.justify == "right" for c in t.columns]

    def pad(s: str, i: int) -> str:
        fill = " " * (widths[i] - cell_len(s))
        return fill + s if right[i] else s + fill

    return "".join("  ".join(pad(s, i) for i, s in enumerate(r)).rstrip() + "\n" for r in lines)


def markdown(t) -> str:
    """A GitHub pipe table (`|` in a cell escaped as `\\|`)."""
    header, rows = table_cells(t)

    def line(cells) -> str:
        return "| " + " | ".join(_one_line(c).replace("|", "\\|") for c in cells) + " |\n"

    sep = "| " + " | ".join("---:" if c.justify == "right" else "---" for c in t.columns) + " |\n"
    return line(header) + sep + "".join(line(r) for r in rows)


# a whole number with thousands separators ("151,182", "+1,234", "$1,255.98", "-12,000.5%"): a
# spreadsheet reads it as text, so CSV writes it without them
_GROUPED = re.compile(r"([+-]?\$?)(\d{1,3}(?:,\d{3})+)((?:\.\d+)?%?)")
_NUMBER = re.compile(r"[+-]?\$?\d+(?:\.\d+)?%?")


def csv_number(cell: str) -> str:
    """``cell`` without its thousands separators when it is a grouped number, else as it is."""
    ascii_minus = "-" + cell[1:] if cell[:1] == "\u2212" else cell  # money's typographic minus (`−$239.52`)
    m = _GROUPED.fullmatch(ascii_minus)
    if m:
        return m.group(1) + m.group(2).replace(",", "") + m.group(3)
    return ascii_minus if ascii_minus is not cell and _NUMBER.fullmatch(ascii_minus) else cell


# `replay.cli.fmt.duration`'s text ("47 s", "4 m 05 s", "1 h 46 m", "3 d 04 h"), possibly negative
_DURATION = re.compile(r"([-\u2212]?)(\d+) ([dhms])(?: (\d+) ([hms]))?")
_UNIT_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}


def duration_seconds(cell: str) -> int | None:
    """The seconds a duration cell shows (to its precision: "1 h 46 m" is 6360), None when it is not one."""
    m = _DURATION.fullmatch(cell)
    if m is None:
        return None
    secs = int(m.group(2)) * _UNIT_SECONDS[m.group(3)]
    if m.group(4) is not None:
        secs += int(m.group(4)) * _UNIT_SECONDS[m.group(5)]
    return -secs if m.group(1) else secs


def _seconds_of(cell) -> float | None:
    """The exact seconds a `replay.cli.fmt.duration_cell` carries, else None."""
    if isinstance(cell, Text) and cell.style and not isinstance(cell.style, str):
        return (cell.style.meta or {}).get("seconds")
    return None


def _duration_columns(rows: list[list[str]], width: int) -> set[int]:
    """The columns whose every shown cell is a duration (`-` for unknown), at least one of them."""
    out = set()
    for i in range(width):
        shown = [r[i] for r in rows if r[i] not in ("", "-")]
        if shown and all(duration_seconds(c) is not None for c in shown):
            out.add(i)
    return out


def to_csv(t) -> str:
    """CSV (the csv module's quoting, RFC 4180): the header, then one line per row; a number
    drops its thousands separators and a duration is written in seconds (exact where the cell
    carries them, else to the text's precision), its header marked ``(s)`` (the other formats
    keep the table's text)."""
    header, rows = table_cells(t)
    durations = _duration_columns(rows, len(header))
    exact = [[_seconds_of(x) for x in c.cells] for c in t.columns]  # a `fmt.duration_cell`'s own seconds

    def cell(i: int, c: str, k: int) -> str:
        if i in durations:
            secs = exact[i][k] if k < len(exact[i]) and exact[i][k] is not None else duration_seconds(c)
            return "" if secs is None else f"{secs:g}" if isinstance(secs, float) else str(secs)
        return csv_number(c)

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([f"{h} (s)" if i in durations else h for i, h in enumerate(header)])
    w.writerows([[cell(i, c, k) for i, c in enumerate(r)] for k, r in enumerate(rows)])
    return buf.getvalue()


RENDER = {"plain": plain, "markdown": markdown, "csv": to_csv}
