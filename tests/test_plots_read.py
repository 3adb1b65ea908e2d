"""Plots that read: each chart rendered with matplotlib (Agg) on degenerate and off-scale input,
checked on its artists (axis limits, tick labels, legend entries against what is drawn)."""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from analysis import plots  # noqa: E402
from analysis.plot_axes import off_scale  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _drawn_labels(ax) -> list[str]:
    """Labels of the artists that put something on the axes (a line or scatter with data, a bar, a span)."""
    out = []
    for a in [*ax.lines, *ax.collections, *ax.patches, *ax.containers]:
        lab = a.get_label()
        if not lab or lab.startswith("_"):
            continue
        if hasattr(a, "get_xdata") and len(np.atleast_1d(a.get_xdata())) == 0:
            continue
        if hasattr(a, "get_offsets") and len(a.get_offsets()) == 0:
            continue
        out.append(lab)
    return out


def _assert_legend_reads(fig, ax):
    """Every legend entry names an artist that is drawn, and the legend box lies outside the data area
    (right of it or below it)."""
    leg = ax.get_legend()
    assert leg is not None
    entries = [t.get_text() for t in leg.get_texts()]
    drawn = _drawn_labels(ax)
    assert entries and set(entries) <= set(drawn), (entries, drawn)
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    box, data = leg.get_window_extent(r), ax.get_window_extent(r)
    assert box.x0 >= data.x1 - 1 or box.y1 <= data.y0 + 1, (box, data)  # over no data


def _runs(risks, saved, policies=None):
    n = len(risks)
    policies = policies or [f"p{i % 3}" for i in range(n)]
    return pd.DataFrame({"policy": policies, "risk": risks, "cost_saved": saved,
                         "label": [f"{p} #{i}" for i, p in enumerate(policies)]})


def test_pareto_is_a_sentence_when_every_run_has_risk_zero():
    m = pd.concat([_runs([0, 0, 0, 0], [1.5, -0.25, 0.75, 0.1]),
                   pd.DataFrame({"policy": ["noop"], "risk": [5], "cost_saved": [0.0], "label": ["noop"]})])
    assert plots.pareto(m, m.iloc[:0]) is None
    text = plots.pareto_sentence(m)
    assert "4 policy runs has risk 0" in text and "-$0.25 to $1.50" in text and "p0 #0 saves most" in text
    same = plots.pareto_sentence(_runs([0, 0], [1.61, 1.61]))  # one configuration under both cache variants
    assert same.endswith("(not drawn); each saves $1.61.")
    assert plots.pareto_sentence(m[m["policy"] == "noop"]).startswith("No policy run")


def test_pareto_draws_when_risk_varies_with_its_legend_outside():
    m = _runs([0, 3, 1, 7], [1.0, 2.0, 0.5, 2.5])
    front = m.iloc[[0, 1, 3]]
    fig = plots.pareto(m, front)
    assert fig is not None and plots.pareto_sentence(m) == ""
    ax = fig.axes[0]
    _assert_legend_reads(fig, ax)
    assert "Pareto frontier" in [t.get_text() for t in ax.get_legend().get_texts()]


def _study(series: dict[str, list[float]], ratios=((0.1, 1.25), (0.1, 2.0), (0.5, 1.0), (1.0, 1.0))):
    rows = []
    for pol, vals in series.items():
        for (r, w), v in zip(ratios, vals):
            rows.append({"run_id": pol, "label": pol, "policy": pol, "ttl": "log", "read_ratio": r,
                         "write_ratio": w, "hit_rate": 0.9, "saved_pct": v})
    return pd.DataFrame(rows)


def test_cache_hit_study_draws_an_off_scale_policy_clipped_with_its_values_written():
    study = _study({"dedup": [0.021, 0.024, 0.03, 0.035], "lru": [0.008, 0.01, 0.012, 0.02],
                    "trim": [-0.012, -0.004, 0.01, 0.03], "clear": [-2.77, -1.95, -0.6, 0.02]})
    fig = plots.cache_hit_study(study)
    ax = fig.axes[0]
    lo, hi = ax.get_ylim()
    assert -10 < lo < -1.2 and 3.5 < hi < 10  # the scale of the three readable policies, not of -277%
    notes = [t.get_text() for t in ax.texts]
    assert {"-277%", "-195%", "-60%"} <= set(notes)  # every clipped value is written
    assert "+2%" not in notes  # a point on scale is drawn, not written
    entries = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "clear (off scale, values written)" in entries and {"dedup", "lru", "trim"} <= set(entries)
    clipped = [ln for ln in ax.lines if ln.get_marker() == "v"]
    on_scale = [ln for ln in ax.lines if ln.get_label() in ("dedup", "lru", "trim")]
    assert all(lo < y < hi for ln in on_scale for y in ln.get_ydata())
    # the triangles sit at the edge of the readable policies' scale, the written values beyond it
    edge = min(y for ln in clipped for y in ln.get_ydata())
    assert clipped and all(np.allclose(ln.get_ydata(), edge) for ln in clipped)
    assert edge < min(y for ln in on_scale for y in ln.get_ydata())
    assert all(lo < t.get_position()[1] < edge for t in ax.texts)
    _assert_legend_reads(fig, ax)


def _marker_boxes(fig, ax) -> list[tuple[float, float, float, float, str]]:
    """(x0, y0, x1, y1, label) in data coordinates of every marker drawn: its centre +- its size."""
    to_data = ax.transData.inverted()
    out = []
    for ln in ax.lines:
        if ln.get_marker() in (None, "None", "", " ") or not len(ln.get_xdata()):
            continue
        r = ln.get_markersize() / 2 * fig.dpi / 72  # pixels
        for x, y in zip(ln.get_xdata(), ln.get_ydata()):
            cx, cy = ax.transData.transform((x, y))
            (x0, y0), (x1, y1) = to_data.transform([(cx - r, cy - r), (cx + r, cy + r)])
            out.append((x0, y0, x1, y1, ln.get_label()))
    return out


def _label_boxes(fig, ax) -> list[tuple[float, float, float, float, str]]:
    renderer = fig.canvas.get_renderer()
    to_data = ax.transData.inverted()
    out = []
    for t in ax.texts:
        (x0, y0), (x1, y1) = to_data.transform(t.get_window_extent(renderer).get_points())
        out.append((x0, y0, x1, y1, t.get_text()))
    return out


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@pytest.mark.parametrize("sign", [-1, 1])
def test_off_scale_labels_never_sit_on_a_marker(sign):
    # three readable policies, the lowest (or highest) of them at every ratio where three others
    # are off scale: the old placement stacked the second and third labels onto its markers
    readable = {"dedup": [0.021, 0.024, 0.03, 0.035], "lru": [0.008, 0.01, 0.012, 0.02],
                "trim": [-0.03, -0.03, -0.03, -0.03]}
    if sign > 0:
        readable = {k: [-v for v in vals] for k, vals in readable.items()}
    off = {"clear": [-2.77, -1.95, -0.6, 0.02], "cupel": [-4.1, -3.2, -2.5, -1.0], "mask": [-6.0, -5.5, -4.0, -3.3]}
    study = _study({**readable, **{k: [sign * -v for v in vals] for k, vals in off.items()}})
    fig = plots.cache_hit_study(study)
    ax = fig.axes[0]
    fig.canvas.draw()
    labels = _label_boxes(fig, ax)
    assert len(labels) == 11  # every off-scale value written (clear's +2% / -2% is on scale)
    markers = _marker_boxes(fig, ax)
    lo, hi = ax.get_ylim()
    for lab in labels:
        assert lo <= lab[1] and lab[3] <= hi, lab  # inside the axes, not over the tick labels
        for m in markers:
            assert not _overlap(lab, m), (lab, m)
        for other in labels:
            assert other is lab or not _overlap(lab, other), (lab, other)
    # three policies clipped at the same edge and price point: their triangles stand side by side
    tri = [ln for ln in ax.lines if ln.get_marker() in ("v", "^")]
    assert len(tri) == 3
    boxes = {id(ln): [b for b in _marker_boxes(fig, ax) if b[4] == ln.get_label()] for ln in tri}
    for a in tri:
        for b in tri:
            if a is not b:
                assert not any(_overlap(p, q) for p in boxes[id(a)] for q in boxes[id(b)]), (a, b)


def test_cache_hit_study_keeps_every_policy_on_scale_when_none_dwarfs_the_others():
    study = _study({"a": [0.05, 0.06, 0.07, 0.08], "b": [-0.12, -0.08, -0.02, 0.01]})
    fig = plots.cache_hit_study(study)
    ax = fig.axes[0]
    assert not ax.texts and all("off scale" not in t.get_text() for t in ax.get_legend().get_texts())
    lo, hi = ax.get_ylim()
    assert lo < -12 and hi > 8


def test_off_scale_measures_each_series_against_the_typical_one():
    s = {"a": np.array([-300.0]), "b": np.array([40.0]), "c": np.array([2.0]), "d": np.array([1.5])}
    assert off_scale(s) == {"a", "b"}
    # two large losses beside five small savings (the sample's cupel_dedup and supersede): both off scale
    five = {f"p{i}": np.array([v]) for i, v in enumerate((35.0, 19.0, 17.0, 15.0, 13.0))}
    assert off_scale({**five, "cupel": np.array([-254.0, 10.0]), "supersede": np.array([-111.0])}) == {"cupel",
                                                                                                    "supersede"}
    assert off_scale(five) == set()
    assert off_scale({"a": np.array([-300.0]), "b": np.array([-290.0])}) == set()
    assert off_scale({"a": np.array([-300.0]), "b": np.array([2.0])}) == {"a"}
    assert off_scale({"only": np.array([-300.0])}) == set()


def _capacity_sweep(values=(3, 0, 1, 13, 2, 8, 5)):
    rows = []
    for ttl in ("log", "5m"):
        for c in values:
            rows.append({"policy": "devboy_lru", "param.capacity": c, "cache.ttl": ttl,
                         "cost_saved_pct": (0.2 if c == 0 else 0.01 * c) + (0.05 if ttl == "5m" else 0.0),
                         "context_saved_pct": 0.02 * (c or 20)})
    return pd.DataFrame(rows)


def test_sweep_line_places_unbounded_last_and_apart():
    t = _capacity_sweep()
    fig = plots.sweep_line(t[t["cache.ttl"] == "log"], "param.capacity")
    ax = fig.axes[0]
    ticks = [x.get_text() for x in ax.get_xticklabels()]
    assert ticks == ["1", "2", "3", "5", "8", "13", "unbounded"]
    unb_x = ax.get_xticks()[-1]
    lines = [ln for ln in ax.lines if ln.get_label() in ("cost saved", "context tokens saved")]
    assert len(lines) == 2
    for ln in lines:  # the joined line stops at the last capacity
        assert max(ln.get_xdata()) < unb_x and len(ln.get_xdata()) == 6
    cost = next(ln for ln in lines if ln.get_label() == "cost saved")
    assert list(np.round(cost.get_ydata(), 6)) == [1, 2, 3, 5, 8, 13]
    alone = [ln for ln in ax.lines if list(ln.get_xdata()) == [unb_x]]
    assert sorted(round(float(ln.get_ydata()[0]), 6) for ln in alone) == [20.0, 40.0]
    assert "unbounded" not in ax.get_xlabel()
    _assert_legend_reads(fig, ax)


def test_sweep_heatmap_puts_unbounded_last_in_value_order():
    t = _capacity_sweep()
    fig = plots.sweep_heatmap(t, "param.capacity", "cache.ttl")
    ax = fig.axes[0]
    assert [x.get_text() for x in ax.get_xticklabels()] == ["1", "2", "3", "5", "8", "13", "unbounded"]
    assert [y.get_text() for y in ax.get_yticklabels()] == ["log", "5m"]  # as swept, not alphabetical
    data = ax.images[0].get_array()
    assert data[0, -1] == pytest.approx(20.0) and data[1, -1] == pytest.approx(25.0) and data[0, 0] == pytest.approx(1.0)


def test_zero_is_a_value_for_other_parameters():
    t = pd.DataFrame({"policy": "jp_resource_dedup", "param.min_bytes": [256, 0, 1024],
                      "cost_saved_pct": [0.01, 0.02, 0.03], "context_saved_pct": [0.0, 0.0, 0.0]})
    ax = plots.sweep_line(t, "param.min_bytes").axes[0]
    assert [x.get_text() for x in ax.get_xticklabels()] == ["0", "256", "1024"]


def _ranked(model_only: bool):
    out = []
    for i, v in enumerate((0.05, 0.02, -0.4)):
        r = {"name": f"cfg{i}", "saved_pct": v, "interval": {"low": v - 0.01, "high": v + 0.01},
             "distinguishable": True}
        if model_only:
            r["model_only"] = dict(r)
        out.append(r)
    return out


@pytest.mark.parametrize("model_only", [False, True])
def test_answer_legend_lists_only_what_is_drawn(model_only):
    fig = plots.answer(_ranked(model_only), band=0.003, band_model_only=None)
    ax = fig.axes[0]
    entries = [t.get_text() for t in ax.get_legend().get_texts()]
    assert ("model only (95% interval)" in entries) is model_only
    assert "calibrated (95% interval)" in entries
    assert not any(re.match("baseline fidelity error, model only", e) for e in entries)
    _assert_legend_reads(fig, ax)
    assert any("(off scale)" in t.get_text() for t in ax.texts)  # -40% beside +5%: clipped and written


def test_other_legends_are_outside_the_data():
    tb = pd.DataFrame({"tool": ["Read", "Grep"], "kind": ["read", "search"], "tokens": [5000, 800],
                       "repeat_tokens": [1200, 100]})
    fig = plots.tool_breakdown(tb)
    _assert_legend_reads(fig, fig.axes[0])
    sc = [{"name": f"s{i}", "scenario": {"cost": 10 - i}, "interval_pct": {"cost": {"low": 1.0, "high": 3.0}},
           "distinguishable": bool(i), "saved_pct": {"cost": 2.0}} for i in range(3)]
    fig = plots.whatif_costs(sc, 10.5)
    _assert_legend_reads(fig, fig.axes[0])
