"""Issue 38: figures that break. No negative zero in any formatter of the report, its charts or
the CLI; one minus per line (the report: ASCII hyphen-minus); the HTML report's tables never
break a number or a word; CLI tables never split a name mid-word; the validate plot's legends
sit outside the data."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from analysis import answer as A
from analysis import report_md as R

ROOT = Path(__file__).resolve().parents[1]
NEAR_ZERO = [-0.0, -1e-9, -1e-6, -0.000049, -0.004]  # each rounds to zero at the digits shown


@pytest.mark.parametrize("v", NEAR_ZERO)
def test_report_formatters_never_print_negative_zero(v):
    texts = [A.money(v, "cost"), A.money(v, "context_tokens"), A.pct(v / 100), A.pct(v / 100, 1),
             A.interval_text({"low": v / 100, "high": 0.0}), A.per_session_text(v / 100, "cost"),
             A.per_session_text(v, "context_tokens"), R.num(v / 100, 2), R.num(v, 0), R._pts(v / 100),
             R._share_pct(v / 100)]
    for t in texts:
        assert not re.search(r"-\$?0(\.0+)?\b(?!\.\d*[1-9])", t), (v, t)
        assert "$-" not in t and "\u2212" not in t, t
    assert A.money(v, "cost") == "$0.00" and A.pct(v / 100) == "+0.00%"
    assert A.interval_text({"low": v / 100, "high": v / 100}) == "+0.00% to +0.00%"


def test_report_formatters_keep_real_negatives_with_the_ascii_minus():
    assert A.money(-0.006, "cost") == "-$0.01" and A.money(-37.35, "cost") == "-$37.35"
    assert A.pct(-0.79394) == "-79.39%" and A.pct(0.0824) == "+8.24%"
    assert A.interval_text({"low": -0.0066, "high": 0.0158}) == "-0.66% to +1.58%"
    assert A.per_session_text(-0.0573, "cost") == "-$0.0573" and R.num(-1234.5, 1) == "-1,234.5"


@pytest.mark.parametrize("v", NEAR_ZERO)
def test_cli_formatters_never_print_negative_zero(v):
    from replay.cli import fmt

    for t in (fmt.money(v), fmt.money(v, sign=True), fmt.amount(v), fmt.pct(v / 100), fmt.count(v),
              fmt.signed_count(v), fmt.duration(v)):
        assert not re.search(r"[-\u2212]\$?0(\.0+)?(%|\b)(?!\.\d*[1-9])", t), (v, t)


def test_chart_labels_use_one_minus_and_no_negative_zero():
    import matplotlib
    import pandas as pd

    from analysis import plots

    assert matplotlib.rcParams["axes.unicode_minus"] is False  # ticks read "-2", as the labels written beside them
    t = pd.DataFrame({"policy": ["devboy_lru"] * 4, "param.capacity": [1, 2, 1, 2], "cache.ttl": ["log", "log", "5m", "5m"],
                      "cost_saved_pct": [-0.0000001, 0.05, -0.02, -0.0]})
    fig = plots.sweep_heatmap(t, "param.capacity", "cache.ttl")
    texts = [x.get_text() for x in fig.axes[0].texts]
    assert "-0.0" not in texts and texts.count("0.0") == 2 and "-2.0" in texts
    fig.canvas.draw()
    ticks = [x.get_text() for ax in fig.axes for x in ax.get_yticklabels() + ax.get_xticklabels()]
    assert not any("\u2212" in x for x in ticks), ticks


def test_report_css_never_breaks_a_number_or_a_word():
    from analysis.report import CSS

    assert "anywhere" not in CSS and "break-all" not in CSS
    assert "overflow-wrap:normal" in CSS and "word-break:normal" in CSS
    assert "td[style*=right]{white-space:nowrap}" in CSS  # figure columns, right-aligned in the Markdown
    assert re.search(r"div\.table\{[^}]*overflow-x:auto", CSS)  # a table that cannot fit scrolls in its box


def test_report_figure_columns_are_marked_and_render_unbreakable(tmp_path):
    from analysis.report import _html

    assert R.sep("lrc") == "|:---|---:|:---:|"
    md = ["| policy | cost saved | 95% interval | $ saved | run |", R.sep("lrcrr"),
          "| supersede | -79.39% | -90.00% to -60.00% | -$37.35 | 8773e82b15a3-d15c7774 |", ""]
    page = _html(md, [], tmp_path, "ds")
    assert '<td style="text-align:right">-$37.35</td>' in page
    assert '<td style="text-align:right">-79.39%</td>' in page
    assert '<td style="text-align:right">8773e82b15a3-d15c7774</td>' in page
    assert '<td style="text-align:center">-90.00% to -60.00%</td>' in page  # may wrap between its numbers only


def _break(cause: str, kind: str, cost: float) -> dict:
    return {"session": "4e48a8a6a8af0000", "stream": 0, "request": 101, "time": "2026-02-03T07:57:00Z",
            "idle_s": 40_800, "cause_label": cause, "p": 143, "p_kind": kind, "tokens": 112_884, "cost": cost}


def test_breaks_table_at_120_columns_never_splits_a_name(monkeypatch, capsys):
    """A cause too long for its column wraps between words or ends in "…"; it is never folded
    mid-word (it read `first_message_rewri` / `tten`)."""
    from replay.cli import breaks

    monkeypatch.setenv("COLUMNS", "120")
    rows = [_break("first_message_rewritten (inferred)", "compact_summary", 1234.65),
            _break("ttl_5m", "user_text", 0.56)]
    summary = {"requests": 492, "breaks": 2, "sessions_with_breaks": 1, "tokens": 225_768, "cost": 1235.21,
               "named_share": 1.0, "named_share_without_first_message": 0.5, "named_share_direct": 0.5,
               "top_sessions": [], "by_cause": [], "provider": {}}
    breaks._print(rows, rows, summary, 10)
    text = capsys.readouterr().out
    table = text.split("Breaks per session")[0]
    lines = [line for line in table.splitlines() if line.startswith("│")]
    assert len(lines) >= 2 and max(len(line) for line in lines) <= 120, table
    words = {w for r in rows for w in (r["cause_label"].split() + [str(r["p"]), f"({r['p_kind']})"])}
    for line in lines:
        cells = [c.strip() for c in line.strip("│").split("│")]
        for tok in " ".join(cells[4:6]).split():
            assert tok in words or tok.endswith("…"), (tok, table)  # a whole word, or one cut visibly


def test_validate_plot_keeps_every_legend_off_the_data(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from replay import store
    from replay.cli import main
    from replay.engine import ReplayOptions
    from replay.experiments import validate as V
    from replay.ingest.keys import load_or_create_master_key

    db, key = tmp_path / "v.duckdb", tmp_path / "key"
    load_or_create_master_key(key)
    r = CliRunner().invoke(main, ["ingest", str(ROOT / "datasets" / "sample" / "logs"), "--db", str(db),
                                  "--dataset", "sample", "-q", "--key-file", str(key)])
    assert r.exit_code == 0, r.output
    con = store.connect(db, read_only=True)
    try:
        rep = V.validate(con, "sample", ReplayOptions())
    finally:
        con.close()
    seen = {}
    monkeypatch.setattr(V, "_save_atomic", lambda fig, out: (seen.setdefault("fig", fig), fig.savefig(out)))
    V.plot_worst(rep, tmp_path / "v.png")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = seen["fig"]
    canvas = FigureCanvasAgg(fig)  # plot_worst closed the figure: draw it again on a canvas of its own
    canvas.draw()
    renderer = canvas.get_renderer()
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None] + list(fig.legends)
    assert legends and fig.legends, "the session panels share one figure legend"
    for leg in legends:
        box = leg.get_window_extent(renderer)
        for ax in fig.axes:  # no legend overlaps any panel's data area
            assert not box.overlaps(ax.get_window_extent(renderer)), (leg, ax.get_title())


def test_cli_percentages_take_the_line_s_minus_and_intervals_no_negative_zero():
    from replay.cli import fmt

    assert fmt.pct(-0.79394, minus=fmt.MINUS) == f"{fmt.MINUS}79.39%" and fmt.pct(-0.79394) == "-79.39%"
    assert fmt.pct(-1e-9, minus=fmt.MINUS) == "0.00%"
    assert fmt.interval(-1e-9, 0.0) == "[+0.00, +0.00]" and fmt.interval(-0.0066, 0.0158) == "[-0.66, +1.58]"
    assert fmt.interval(-0.0066, 0.0158, minus=fmt.MINUS) == f"[{fmt.MINUS}0.66, +1.58]" and fmt.interval(None, 1) == "-"
