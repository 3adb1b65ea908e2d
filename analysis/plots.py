"""Plots for reports and notebooks: matplotlib, titled, labelled with units, Okabe-Ito colours.

Every function takes DataFrames from ``analysis.tables`` and returns a Figure; ``save``
writes it as PNG and SVG.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# one minus on a chart: the labels written here use the ASCII hyphen-minus (analysis.answer's
# convention), so the ticks do too (matplotlib's default is the Unicode minus); values that
# round to zero are written without one (the `z` format option)
matplotlib.rcParams["axes.unicode_minus"] = False
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .answer import money  # noqa: E402
from .plot_axes import UNBOUNDED, categories, limits, off_scale, zero_is_unbounded  # noqa: E402

# Okabe-Ito: distinguishable with the common colour-vision deficiencies
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
RETRO = {"cupel_dedup", "jp_compaction", "supersede", "anthropic_clear_tool_uses", "claude_code_microcompact"}


def _style(ax, title: str, xlabel: str, ylabel: str) -> None:
    ax.set_title(title, fontsize=11)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.spines[["top", "right"]].set_visible(False)


def _legend(ax, below: bool = False, **kw) -> None:
    """A legend outside the axes (right, or ``below`` the x label for charts already wide),
    listing only the artists drawn with a label: inside, it hides the data it describes."""
    if not ax.get_legend_handles_labels()[0]:
        return
    where = ({"loc": "upper center", "bbox_to_anchor": (0.5, -0.14), "ncol": 2} if below
             else {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0)})
    ax.legend(fontsize=kw.pop("fontsize", 7), frameon=False, **where, **kw)


def _policy(t: pd.DataFrame) -> str | None:
    return str(t["policy"].iloc[0]) if "policy" in t.columns and len(t) else None


def save(fig, out_dir: Path, name: str) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for ext in ("png", "svg"):
        p = out_dir / f"{name}.{ext}"
        fig.savefig(p, dpi=120 if ext == "png" else None, bbox_inches="tight")
        paths[ext] = p
    plt.close(fig)
    return paths


def _bars(ax, d: pd.DataFrame, intervals: dict | None) -> None:
    y = np.arange(len(d))
    cost = 100 * d["cost_saved_pct"].to_numpy(dtype=float)
    ctx = 100 * d["context_saved_pct"].to_numpy(dtype=float)
    err = None
    if intervals:
        lo = [100 * ((intervals.get(r) or {}).get("low", np.nan)) for r in d["run_id"]]
        hi = [100 * ((intervals.get(r) or {}).get("high", np.nan)) for r in d["run_id"]]
        err = np.array([np.nan_to_num(cost - np.array(lo, dtype=float)), np.nan_to_num(np.array(hi, dtype=float) - cost)])
        err = np.clip(err, 0, None)
    ax.barh(y - 0.2, cost, height=0.4, color=PALETTE[0], label="cost saved" + (" (95% interval)" if err is not None
                                                                               else ""),
            xerr=err, error_kw={"elinewidth": 0.9, "capsize": 2, "ecolor": "#333333"})
    ax.barh(y + 0.2, ctx, height=0.4, color=PALETTE[1], label="context tokens saved")
    ax.set_yticks(y, [f"{p}{' (rewrites history)' if p in RETRO else ''}\ncost {c:+z.2f}%, context {x:+z.2f}%, "
                      f"{int(b)} busts" for p, c, x, b in zip(d["policy"], cost, ctx, d["busts"])], fontsize=8)
    ax.axvline(0, color="black", lw=0.8)


def leaderboard(lb: pd.DataFrame, intervals: dict | None = None):
    """Cost and context tokens saved vs the baseline, one bar pair per policy at its defaults.

    Policies that save and policies that cost more are drawn in separate panels, each on its
    own scale, so a +0.1% saving stays visible beside a -200% loss; every bar is labelled with
    its value. ``intervals`` (run_id -> {low, high} of the cost saving) adds error bars."""
    if lb.empty or "policy" not in lb.columns or not (lb["policy"] != "noop").any():
        return None  # no policy at its defaults to draw
    d = lb[lb["policy"] != "noop"].sort_values("cost_saved_pct")
    gain, loss = d[d["cost_saved_pct"] > 0], d[d["cost_saved_pct"] <= 0]
    panels = [(g, t) for g, t in ((gain, "policies that save"), (loss, "policies that save nothing or cost more"))
              if not g.empty] or [(d, "")]
    heights = [max(2, len(g)) for g, _ in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, 0.55 * sum(heights) + 1.2 * len(panels)),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for ax, (g, title) in zip(axes[:, 0], panels):
        _bars(ax, g, intervals)
        _style(ax, title, "saved vs baseline (%)", "")
    axes[0, 0].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    fig.suptitle("Policies at their sources' defaults vs the no-op baseline (calibrated cache model)", fontsize=11)
    fig.tight_layout()
    return fig


def answer(ranked: list[dict], band: float | None = None, band_model_only: float | None = None,
           unit: str = "cost"):
    """The best configurations' saving with 95% intervals, calibrated (filled) and model only
    (hollow), against the baseline's own fidelity band. The axis fits the configurations that
    save; values beyond it (a loss far larger than the savings shown) are clipped at the edge
    and printed."""
    d = list(reversed(ranked))
    fig, ax = plt.subplots(figsize=(8.5, 0.55 * max(3, len(d)) + 1.4))
    shown = [r for r in d if (r["saved_pct"] or 0) > 0] or d  # losers do not set the scale when others save
    pts = [100 * v for r in shown for v in (r["saved_pct"], (r["interval"] or {}).get("low"),
                                            (r["interval"] or {}).get("high")) if v is not None]
    lo, hi = min(pts + [0.0, -100 * (band or 0)]), max(pts + [0.0, 100 * (band or 0)])
    pad = 0.12 * max(hi - lo, 0.5)
    lo_lim, hi_lim = lo - pad, hi + 2.5 * pad  # room on the right for the printed values
    if band:
        ax.axvspan(-100 * band, 100 * band, color="#999999", alpha=0.25, lw=0,
                   label=f"baseline fidelity error, calibrated (±{100 * band:z.2f}%)")
    if band_model_only:
        edges = [x for x in (-100 * band_model_only, 100 * band_model_only) if lo_lim < x < hi_lim]
        for k, x in enumerate(edges):
            ax.axvline(x, color="#777777", ls=":", lw=1.2, label=None if k else
                       f"baseline fidelity error, model only (±{100 * band_model_only:.2f}%)")
    drawn: set[str] = set()
    for i, r in enumerate(d):
        for off, v, colour, marker, face in ((0.17, r, PALETTE[0], "o", PALETTE[0]),
                                             (-0.17, r.get("model_only"), PALETTE[3], "s", "white")):
            if not v or v.get("saved_pct") is None:
                continue
            # the legend names the first point of each kind (a key for nothing drawn would mislead)
            key = None if marker in drawn else ("calibrated (95% interval)" if marker == "o"
                                                else "model only (95% interval)")
            drawn.add(marker)
            x = 100 * v["saved_pct"]
            iv = v.get("interval") or {"low": v["saved_pct"], "high": v["saved_pct"]}
            a, b = 100 * iv["low"], 100 * iv["high"]
            ax.plot([min(max(a, lo_lim), hi_lim), max(min(b, hi_lim), lo_lim)], [i + off] * 2, color=colour, lw=1.6)
            ax.plot([min(max(x, lo_lim), hi_lim)], [i + off], ls="", ms=6, color=colour, marker=marker, mfc=face,
                    label=key)
            text = f"{x:+z.2f}%" + ("" if v.get("distinguishable") else " n.d.")
            if x < lo_lim or x > hi_lim:
                text += " (off scale)"
            ax.annotate(text, (min(max(b, lo_lim), hi_lim), i + off), fontsize=7, xytext=(4, 0),
                        textcoords="offset points", ha="left", va="center", color=colour)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_xlim(lo_lim, hi_lim)
    ax.set_ylim(-0.6, len(d) - 0.4)
    ax.set_yticks(range(len(d)), [r["name"] for r in d], fontsize=8)
    what = "cost" if unit == "cost" else "context tokens"
    _style(ax, f"Best configurations: {what} saved vs the no-op baseline (n.d. = not distinguishable)",
           f"{what} saved vs baseline (%)", "")
    _legend(ax, below=True)  # the labels on the left already make it the widest chart
    return fig


def _policy_runs(m: pd.DataFrame) -> pd.DataFrame:
    return m[m["policy"] != "noop"] if not m.empty and "policy" in m.columns else m


def pareto(m: pd.DataFrame, front: pd.DataFrame, risk: str = "risk"):
    """Cost saved ($) against risk (dangling + stale references + content re-read after trimming).
    None when the risk axis is degenerate (every run has the same risk, typically 0): the chart
    would be one column of points; ``pareto_sentence`` says so instead."""
    d = _policy_runs(m)
    if d.empty or d[risk].fillna(0).nunique() <= 1:
        return None
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, (pol, g) in enumerate(d.groupby("policy")):  # past 8 policies the colours repeat: the marker differs
        ax.scatter(g[risk], g["cost_saved"], s=22, color=PALETTE[i % len(PALETTE)], label=pol, alpha=0.8,
                   marker="os^D"[(i // len(PALETTE)) % 4])
    f = front[front["policy"] != "noop"].sort_values(risk) if not front.empty else front
    if not f.empty:
        # rings mark the frontier's runs: a frontier of one run has no visible step line
        ax.step(f[risk], f["cost_saved"], where="post", color="black", lw=1,
                label="Pareto frontier" if len(f) > 1 else None)
        ax.plot(f[risk], f["cost_saved"], ls="", marker="o", ms=10, mfc="none", mec="black", mew=0.8,
                label="Pareto frontier" if len(f) == 1 else "on the frontier")
    ax.axhline(0, color="grey", lw=0.8)
    _style(ax, "Cost saved vs risk, every run", "risk (dangling + stale refs + trimmed then re-read)",
           "cost saved vs baseline ($)")
    _legend(ax)
    return fig


def pareto_sentence(m: pd.DataFrame, risk: str = "risk") -> str:
    """What the reader would have seen in a degenerate cost-vs-risk chart, in words."""
    d = _policy_runs(m)
    if d.empty:
        return "No policy run to set against risk: only no-op baselines are stored."
    vals = d[risk].fillna(0).unique()
    if len(vals) > 1:
        return ""
    v = float(vals[0])
    what = ("risk 0: no dangling or stale reference and no trimmed content re-read" if v == 0
            else f"the same risk, {v:,.0f}")
    saved = d["cost_saved"].dropna()
    lo, hi = (money(saved.min(), "cost"), money(saved.max(), "cost")) if len(saved) else (None, None)
    best = d.loc[saved.idxmax()] if len(saved) else None
    name = None if best is None else best["label"] if "label" in d.columns else best["policy"]
    tail = ("" if best is None else f"; each saves {lo}" if lo == hi else
            f"; they differ only in cost saved, from {lo} to {hi} ({name} saves most)")
    return (f"Every one of the {len(d)} policy runs has {what}, so a chart of cost saved against risk would be a "
            f"single column of points (not drawn){tail}.")


def sweep_heatmap(t: pd.DataFrame, x: str, y: str, value: str = "cost_saved_pct", title: str = ""):
    """None when the sweep has no policy runs (not run on this database, or baselines only).
    Parameter values are categories: numbers ascending, "unbounded" (a capacity of 0) last."""
    if t.empty or not {x, y, value} <= set(t.columns):
        return None
    pol = _policy(t)
    xl, xo = categories(t[x], zero_is_unbounded(pol, x))
    yl, yo = categories(t[y], zero_is_unbounded(pol, y))
    piv = t.assign(_x=xl, _y=yl).pivot_table(index="_y", columns="_x", values=value, aggfunc="mean")
    piv = piv.reindex(index=[v for v in yo if v in piv.index], columns=[v for v in xo if v in piv.columns])
    fig, ax = plt.subplots(figsize=(1.6 + 0.8 * len(piv.columns), 1.2 + 0.5 * len(piv.index)))
    data = 100 * piv.to_numpy(dtype=float)
    lim = float(np.nanmax(np.abs(data))) if np.isfinite(data).any() else 1.0
    lim = lim or 1.0
    im = ax.imshow(data, cmap="PuOr", vmin=-lim, vmax=lim, aspect="auto")
    ax.set_xticks(range(len(piv.columns)), list(piv.columns), rotation=45, ha="right")
    ax.set_yticks(range(len(piv.index)), list(piv.index))
    for (i, j), v in np.ndenumerate(data):
        if np.isfinite(v):
            ax.text(j, i, f"{v:z.1f}", ha="center", va="center", fontsize=7,
                    color="white" if abs(v) > 0.55 * lim else "black")
    fig.colorbar(im, ax=ax, label="cost saved vs baseline (%)")
    ax.set_title(title or f"{value} by {x} and {y}", fontsize=10)
    ax.set_xlabel(x.removeprefix("param.").removeprefix("cache."))
    ax.set_ylabel(y.removeprefix("param.").removeprefix("cache."))
    return fig


def sweep_line(t: pd.DataFrame, x: str, title: str = ""):
    """Savings by one parameter (None as sweep_heatmap). The values are categories in order;
    "unbounded" (a capacity of 0) is drawn last, apart, and not joined to the bounded values."""
    if t.empty or x not in t.columns:
        return None
    labels, order = categories(t[x], zero_is_unbounded(_policy(t), x))
    g = t.assign(_x=labels).groupby("_x")[["cost_saved_pct", "context_saved_pct"]].mean().reindex(order)
    bounded = [o for o in order if o != UNBOUNDED]
    pos = {o: float(i) for i, o in enumerate(bounded)}
    if UNBOUNDED in order:
        pos[UNBOUNDED] = len(bounded) + 0.5  # a gap: the distance to the last capacity means nothing
    fig, ax = plt.subplots(figsize=(7, 4))
    for col, colour, marker, lab in (("cost_saved_pct", PALETTE[0], "o", "cost saved"),
                                     ("context_saved_pct", PALETTE[1], "s", "context tokens saved")):
        if bounded:
            ax.plot([pos[o] for o in bounded], 100 * g.loc[bounded, col].to_numpy(dtype=float), marker=marker,
                    color=colour, label=lab)
        if UNBOUNDED in order:
            ax.plot([pos[UNBOUNDED]], [100 * float(g.loc[UNBOUNDED, col])], ls="", marker=marker, color=colour,
                    label=None if bounded else lab)
    if bounded and UNBOUNDED in order:
        ax.axvline(len(bounded) - 0.25, color="#999999", ls=":", lw=1)
    ax.set_xticks([pos[o] for o in order], order)
    _style(ax, title or f"Savings by {x}", x.removeprefix("param.").removeprefix("cache."), "saved vs baseline (%)")
    _legend(ax, fontsize=8)
    return fig


DODGE = 0.12  # sideways step between triangles of policies clipped at the same edge (x units: one per price point)
LABEL_SLOT_PT = 11.0  # height of one row of off-scale value labels: a 7-point label plus the gap to the next row


def _label_slot(ax, span: float, rows: float) -> float:
    """One label row's height in data units on a y axis that holds ``span`` of data plus
    ``rows`` label rows: the rows are added to the axis, so the row's share of it is fixed."""
    fig = ax.get_figure()
    height_pt = ax.get_position().height * fig.get_figheight() * 72
    return LABEL_SLOT_PT * span / max(height_pt - LABEL_SLOT_PT * rows, LABEL_SLOT_PT)


def cache_hit_study(study: pd.DataFrame):
    """Saving as a function of the read/write price ratio: where trimming starts to pay
    (None without a policy run to reprice). A policy whose saving dwarfs the others' (a loss of
    hundreds of percent beside savings of a few) would flatten every other line: it is drawn
    dashed, clipped at the edge of the others' scale (a triangle), with its values written in a
    band beyond that edge, one row per such policy, where no marker is drawn."""
    if study.empty:
        return None
    fig, ax = plt.subplots(figsize=(8, 4.5))
    study = study.copy()
    study["ratio"] = study["read_ratio"].astype(str) + " / " + study["write_ratio"].astype(str)
    order = list(dict.fromkeys(study["ratio"]))
    best = study.groupby("policy")["saved_pct"].max().sort_values(ascending=False).index[:7]
    series = {pol: 100 * study[study["policy"] == pol].groupby("ratio", sort=False)["saved_pct"].max()
              .reindex(order).to_numpy(dtype=float) for pol in best}
    off = off_scale(series)
    lo, hi = limits([v for k, v in series.items() if k not in off])
    below = sorted(p for p in off if (series[p] < lo).any())
    above = sorted(p for p in off if (series[p] > hi).any())
    # half a row between the triangles at the edge and the first label row
    rows = (len(below) + 0.5 if below else 0.0) + (len(above) + 0.5 if above else 0.0)
    slot = _label_slot(ax, hi - lo, rows)
    xs = np.arange(len(order), dtype=float)
    for i, pol in enumerate(best):
        y, colour = series[pol], PALETTE[i % len(PALETTE)]
        if pol not in off:
            ax.plot(xs, y, marker="o", color=colour, label=pol)
            continue
        ax.plot(xs, np.clip(y, lo, hi), ls="--", color=colour, label=f"{pol} (off scale, values written)")
        inside = (y >= lo) & (y <= hi)
        ax.plot(xs[inside], y[inside], ls="", marker="o", color=colour)
        for side, sel, edge in ((above, y > hi, hi), (below, y < lo, lo)):
            if not sel.any():
                continue
            # policies clipped at the same edge would draw their triangles on top of each other:
            # each is moved sideways by its place among them, and its values under its triangle
            dx = DODGE * (side.index(pol) - (len(side) - 1) / 2)
            ax.plot(xs[sel] + dx, [edge] * int(sel.sum()), ls="", marker="^" if side is above else "v", color=colour)
            # this policy's row of the band: beyond every marker, and apart from the other policies' rows
            row = edge + (1 if side is above else -1) * slot * (side.index(pol) + 1)
            for xv, v in zip(xs[sel], y[sel]):
                ax.text(xv + dx, row, f"{v:+z.0f}%", ha="center", va="center", fontsize=7, color=colour)
    ax.set_ylim(lo - (slot * (len(below) + 0.5) if below else 0.0), hi + (slot * (len(above) + 0.5) if above else 0.0))
    ax.set_xticks(xs, order)
    ax.axhline(0, color="black", lw=0.8)
    _style(ax, "Best saving per policy under other cache prices (read / write price as a multiple of input)",
           "read price / write price (x input)", "cost saved vs baseline (%)")
    _legend(ax)
    return fig


def tool_breakdown(tb: pd.DataFrame, top: int = 12):
    d = tb.head(top).iloc[::-1]
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(d) + 1.2))
    y = np.arange(len(d))
    ax.barh(y, d["tokens"] / 1000, color=PALETTE[5], label="tool result tokens")
    ax.barh(y, d["repeat_tokens"] / 1000, color=PALETTE[3], label="of which byte-identical repeats")
    ax.set_yticks(y, [f"{t} ({k})" for t, k in zip(d["tool"], d["kind"])])
    _style(ax, "Tool results by tool: what dedup can target", "tokens (thousands, o200k)", "")
    _legend(ax, fontsize=8)
    return fig


def breaks_by_cause(by_cause: list[dict]):
    """Re-billed dollars of the recorded logs' cache breaks, one bar per cause (inferred causes hatched)."""
    d = [b for b in by_cause if b["count"]][::-1]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(d) + 1.3))
    y = np.arange(len(d))
    bars = ax.barh(y, [b["cost"] for b in d], color=[PALETTE[3] if b["evidence"] == "inferred" else
                                                     PALETTE[7] if b["evidence"] == "none" else PALETTE[0] for b in d])
    for bar, b in zip(bars, d):
        if b["evidence"] == "inferred":
            bar.set_hatch("//")
    ax.set_yticks(y, [f"{b['label']}\n{b['count']} breaks, {b['tokens']:,.0f} tokens" for b in d], fontsize=8)
    _style(ax, "Cache breaks in the recorded logs: re-billed dollars by cause", "re-billed $ (above a cache read)", "")
    return fig


def whatif_costs(scenarios: list[dict], baseline_cost: float | None = None):
    """Saving of each cache what-if scenario (`ctxreplay whatif`) with its 95% interval: the
    headline estimator's (the recorded requests re-priced where the lever allows, else the
    predictive replay), each against its own baseline, so the dashed line is no change."""
    d = sorted(scenarios, key=lambda r: r["saved_pct"]["cost"] or 0.0)
    fig, ax = plt.subplots(figsize=(8, 0.42 * len(d) + 1.4))
    y = np.arange(len(d))
    pct = np.array([r["saved_pct"]["cost"] or 0.0 for r in d])
    lo = np.array([(r["interval_pct"]["cost"] or {}).get("low", np.nan) for r in d])
    hi = np.array([(r["interval_pct"]["cost"] or {}).get("high", np.nan) for r in d])
    err = np.clip(np.array([np.where(np.isnan(lo), 0.0, pct - lo), np.where(np.isnan(hi), 0.0, hi - pct)]), 0, None)
    # points with whiskers, not bars from 0: the differences are a few percent of the cost
    for i, r in enumerate(d):
        ax.errorbar(pct[i], y[i], xerr=err[:, i:i + 1], fmt="o" if r.get("headline") != "predictive" else "s",
                    capsize=3, elinewidth=1.1, color=PALETTE[2] if r["distinguishable"] else "#999999")
    ax.axvline(0.0, color="black", lw=0.9, ls="--", label="no change")
    ax.set_yticks(y, [f"{r['name']}\n" + ("-" if r["saved_pct"]["cost"] is None else f"{r['saved_pct']['cost']:+z.2f}%")
                      + ("" if r["distinguishable"] else ", n.d.") for r in d], fontsize=8)
    _legend(ax, fontsize=8)
    _style(ax, "Saving under each cache scenario (circles: recorded requests re-priced; squares: predictive "
           "replay; whiskers: 95% interval; grey: not distinguishable)", "cost saved (%)", "")
    return fig
