"""Plots for reports and notebooks: matplotlib, titled, labelled with units, Okabe-Ito colours.

Every function takes DataFrames from ``analysis.tables`` and returns a Figure; ``save``
writes it as PNG and SVG.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

# Okabe-Ito: distinguishable with the common colour-vision deficiencies
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
RETRO = {"cupel_dedup", "jp_compaction", "supersede", "anthropic_clear_tool_uses", "claude_code_microcompact"}


def _style(ax, title: str, xlabel: str, ylabel: str) -> None:
    ax.set_title(title, fontsize=11)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.spines[["top", "right"]].set_visible(False)


def save(fig, out_dir: Path, name: str) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for ext in ("png", "svg"):
        p = out_dir / f"{name}.{ext}"
        fig.savefig(p, dpi=120 if ext == "png" else None, bbox_inches="tight")
        paths[ext] = p
    plt.close(fig)
    return paths


def leaderboard(lb: pd.DataFrame):
    """Cost and context tokens saved vs the baseline, one bar pair per policy at its defaults."""
    d = lb[lb["policy"] != "noop"].sort_values("cost_saved_pct")
    fig, ax = plt.subplots(figsize=(8, 0.5 * max(3, len(d)) + 1.2))
    y = np.arange(len(d))
    ax.barh(y - 0.2, 100 * d["cost_saved_pct"], height=0.4, color=PALETTE[0], label="cost saved")
    ax.barh(y + 0.2, 100 * d["context_saved_pct"], height=0.4, color=PALETTE[1], label="context tokens saved")
    ax.set_yticks(y, [f"{p}{' (rewrites history)' if p in RETRO else ''}" for p in d["policy"]])
    ax.axvline(0, color="black", lw=0.8)
    for yi, (_, r) in zip(y, d.iterrows()):
        ax.annotate(f"{int(r['busts'])} busts", (max(0, 100 * r["cost_saved_pct"]), yi - 0.2), fontsize=7,
                    xytext=(4, -3), textcoords="offset points")
    _style(ax, "Policies at their sources' defaults vs the no-op baseline", "saved vs baseline (%)", "")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    return fig


def pareto(m: pd.DataFrame, front: pd.DataFrame, risk: str = "risk"):
    """Cost saved ($) against risk (dangling + stale references + content re-read after trimming)."""
    fig, ax = plt.subplots(figsize=(8, 5))
    d = m[m["policy"] != "noop"]
    for i, (pol, g) in enumerate(d.groupby("policy")):
        ax.scatter(g[risk], g["cost_saved"], s=22, color=PALETTE[i % len(PALETTE)], label=pol, alpha=0.8)
    if not front.empty:
        f = front[front["policy"] != "noop"].sort_values(risk)
        ax.step(f[risk], f["cost_saved"], where="post", color="black", lw=1, label="Pareto frontier")
    ax.axhline(0, color="grey", lw=0.8)
    _style(ax, "Cost saved vs risk, every run", "risk (dangling + stale refs + trimmed then re-read)",
           "cost saved vs baseline ($)")
    ax.legend(fontsize=7, loc="best")
    return fig


def sweep_heatmap(t: pd.DataFrame, x: str, y: str, value: str = "cost_saved_pct", title: str = ""):
    piv = t.pivot_table(index=y, columns=x, values=value, aggfunc="mean")
    fig, ax = plt.subplots(figsize=(1.0 + 0.8 * len(piv.columns), 1.2 + 0.5 * len(piv.index)))
    data = 100 * piv.to_numpy(dtype=float)
    lim = float(np.nanmax(np.abs(data))) if np.isfinite(data).any() else 1.0
    lim = lim or 1.0
    im = ax.imshow(data, cmap="PuOr", vmin=-lim, vmax=lim, aspect="auto")
    ax.set_xticks(range(len(piv.columns)), [str(c) for c in piv.columns], rotation=45, ha="right")
    ax.set_yticks(range(len(piv.index)), [str(i) for i in piv.index])
    for (i, j), v in np.ndenumerate(data):
        if np.isfinite(v):
            ax.text(j, i, f"{v:.1f}", ha="center", va="center", fontsize=7,
                    color="white" if abs(v) > 0.55 * lim else "black")
    fig.colorbar(im, ax=ax, label="cost saved vs baseline (%)")
    ax.set_title(title or f"{value} by {x} and {y}", fontsize=10)
    ax.set_xlabel(x.removeprefix("param.").removeprefix("cache."))
    ax.set_ylabel(y.removeprefix("param.").removeprefix("cache."))
    return fig


def sweep_line(t: pd.DataFrame, x: str, title: str = ""):
    d = t.sort_values(x, key=lambda s: pd.to_numeric(s, errors="coerce").fillna(1e18))
    fig, ax = plt.subplots(figsize=(7, 4))
    xs = [str(v) for v in d[x]]
    ax.plot(xs, 100 * d["cost_saved_pct"], marker="o", color=PALETTE[0], label="cost saved")
    ax.plot(xs, 100 * d["context_saved_pct"], marker="s", color=PALETTE[1], label="context tokens saved")
    _style(ax, title or f"Savings by {x}", x.removeprefix("param.").removeprefix("cache.") + " (0 = unbounded)",
           "saved vs baseline (%)")
    ax.legend(fontsize=8)
    return fig


def cache_hit_study(study: pd.DataFrame):
    """Saving as a function of the read/write price ratio: where trimming starts to pay."""
    fig, ax = plt.subplots(figsize=(8, 4.5))
    study = study.copy()
    study["ratio"] = study["read_ratio"].astype(str) + " / " + study["write_ratio"].astype(str)
    order = list(dict.fromkeys(study["ratio"]))
    best = study.groupby("policy")["saved_pct"].max().sort_values(ascending=False).index[:7]
    for i, pol in enumerate(best):
        g = study[study["policy"] == pol].groupby("ratio", sort=False)["saved_pct"].max().reindex(order)
        ax.plot(order, 100 * g.to_numpy(), marker="o", color=PALETTE[i % len(PALETTE)], label=pol)
    ax.axhline(0, color="black", lw=0.8)
    _style(ax, "Best saving per policy under other cache prices (read / write price as a multiple of input)",
           "read price / write price (x input)", "cost saved vs baseline (%)")
    ax.legend(fontsize=7)
    return fig


def tool_breakdown(tb: pd.DataFrame, top: int = 12):
    d = tb.head(top).iloc[::-1]
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(d) + 1.2))
    y = np.arange(len(d))
    ax.barh(y, d["tokens"] / 1000, color=PALETTE[5], label="tool result tokens")
    ax.barh(y, d["repeat_tokens"] / 1000, color=PALETTE[3], label="of which byte-identical repeats")
    ax.set_yticks(y, [f"{t} ({k})" for t, k in zip(d["tool"], d["kind"])])
    _style(ax, "Tool results by tool: what dedup can target", "tokens (thousands, o200k)", "")
    ax.legend(fontsize=8, loc="lower right")
    return fig
