"""replay/cli/fmt.py: how durations, money, counts and percentages read in text output."""

import pytest
from rich.console import Console
from rich.table import Table

from replay.cli import fmt

M = fmt.MINUS


@pytest.mark.parametrize("seconds, text", [
    (0, "0 s"), (47, "47 s"), (59.4, "59 s"), (60, "1 m 00 s"), (245, "4 m 05 s"), (3599, "59 m 59 s"),
    (3600, "1 h 00 m"), (40_794, "11 h 19 m"), (40_800, "11 h 20 m"), (86_399, "23 h 59 m"),
    (86_400 * 3 + 3600 * 4 + 59, "3 d 04 h"), (None, "-"), (float("nan"), "-"), (-90, f"{M}1 m 30 s"),
])
def test_duration_reads_in_two_units_at_most(seconds, text):
    assert fmt.duration(seconds) == text


def test_no_duration_is_a_five_digit_number_of_seconds():
    for s in range(0, 400_000, 997):
        text = fmt.duration(s)
        number = text.split()[0]
        assert len(number) <= 3 and text.split()[-1] in ("s", "m", "h"), text


@pytest.mark.parametrize("x, text, signed", [
    (239.52, "$239.52", "+$239.52"), (-239.52, f"{M}$239.52", f"{M}$239.52"), (1234.5, "$1,234.50", "+$1,234.50"),
    (0.0, "$0.00", "$0.00"), (-0.001, "$0.00", "$0.00"), (None, "-", "-"),
])
def test_money_never_prints_dollar_minus(x, text, signed):
    assert fmt.money(x) == text and fmt.money(x, sign=True) == signed
    assert "$-" not in fmt.money(x) and "-$" not in fmt.money(x)


@pytest.mark.parametrize("x, text", [(36.0, "36"), (1603, "1,603"), (2.6, "3"), (-4.0, f"{M}4"), (None, "-")])
def test_counts_are_integers(x, text):
    assert fmt.count(x) == text


def test_amount_and_signed_figures():
    assert fmt.amount(-0.42) == f"{M}0.42" and fmt.amount(-0.001) == "0.00" and fmt.amount(1234.567) == "1,234.57"
    assert fmt.signed_count(12) == "+12" and fmt.signed_count(-3) == f"{M}3" and fmt.signed_count(0) == "0"
    assert fmt.pct(0.0824) == "+8.24%" and fmt.pct(-0.79394, 3) == "-79.394%" and fmt.pct(0.963, 1, sign=False) == "96.3%"
    assert fmt.pct(-0.00001) == "0.00%" and fmt.pct(None) == "-"


def _rendered_width(t: Table) -> int:
    c = Console(width=400, record=True, file=open("/dev/null", "w"))
    c.print(t)
    return max(len(line) for line in c.export_text().splitlines())


def test_fit_wraps_names_to_the_width_and_keeps_figures_whole():
    t = Table("name", "figure")
    t.columns[1].no_wrap = True
    t.add_row("a-setting " * 20, "+12.34% [+1.00, +20.00]")
    assert _rendered_width(t) > fmt.WIDTH
    fmt.fit(t)
    assert _rendered_width(t) <= fmt.WIDTH
    c = Console(width=400, record=True, file=open("/dev/null", "w"))
    c.print(t)
    assert "+12.34% [+1.00, +20.00]" in c.export_text()
    wide = Table("name")
    wide.add_row("x " * 100)
    assert fmt.fit(wide, wide=True).width is None
    narrow = Table("name")
    narrow.add_row("short")
    assert fmt.fit(narrow).width is None  # a table that fits keeps its natural width


def test_table_width_follows_columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    assert fmt.table_width() == 120
    monkeypatch.delenv("COLUMNS")
    from replay.cli.common import PIPE_WIDTH

    assert fmt.table_width() == PIPE_WIDTH
