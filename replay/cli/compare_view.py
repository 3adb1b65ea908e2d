"""The tables `ctxreplay compare` prints: essential columns within 120 columns by default,
every column with `--wide`."""

from __future__ import annotations

from rich.table import Table

from replay.cli.common import esc, print_table
from replay.cli.fmt import amount, count, fit, pct


def saving(r: dict, f: str) -> str:
    """'+8.23% [+4.93, +11.09]' with ' n.d.' when not distinguishable; '-' without a baseline."""
    p = (r.get("saved_pct") or {}).get(f)
    if p is None:
        return "-"
    i = (r.get("interval") or {}).get(f)
    text = f"{p:+z.2%}" + (f" [{100 * i['low']:+z.2f}, {100 * i['high']:+z.2f}]" if i else "")
    if r["policy"] != "noop" and not (r.get("distinguishable") or {}).get(f):
        text += " n.d."
    return text


def _policy_cell(r: dict, settings: str) -> str:
    """`devboy_lru (capacity=8)`, or the policy alone at its defaults, with a TTL other than the
    logged one (`--wide` gives it a column): one wrappable cell."""
    ttl = r["cache_config"].get("ttl")
    parts = ([] if settings == "defaults" else [settings]) + ([] if ttl in (None, "log") else [f"TTL {ttl}"])
    return f"{r['policy']} ({'; '.join(parts)})" if parts else r["policy"]


def _figure_columns(t: Table, first: int) -> None:
    """Figures right-aligned and never wrapped: only the name and settings cells may wrap."""
    for c in t.columns[first:]:
        c.justify, c.no_wrap = "right", True


def print_runs(rows: list[dict], settings, wide: bool = False) -> None:
    """The savings and the cache/risk figures of each run; ``settings(r)`` names its non-default
    parameters (and slice)."""
    if wide:
        t = Table("run", "policy", "settings", "TTL", "variant", "cost $", "cost saved [95%]", "context saved [95%]",
                  "delivered saved [95%]", title="Savings vs the no-op baseline")
        _figure_columns(t, 5)
    else:
        t = Table("run", "policy (settings)", "variant", "cost $", "cost saved [95%]", "context saved",
                  title="Savings vs the no-op baseline (--wide: TTL, intervals of every figure, delivered tokens)")
        _figure_columns(t, 3)
    t.columns[0].no_wrap = True
    t.columns[1].overflow = "fold"
    risk = Table("run", "policy", "variant", "hit rate", "busts", "hints", "dangling", "stale", "re-read",
                 title="Cache and risk")
    _figure_columns(risk, 3)
    risk.columns[0].no_wrap = True
    for r in rows:
        f = r["figures"]
        variant = r["variant"].replace("_", "-")
        if wide:
            t.add_row(esc(r["run_id"]), esc(r["policy"]), esc(settings(r)), esc(r["cache_config"].get("ttl")), variant,
                      amount(f["cost"]), *(esc(saving(r, k)) for k in ("cost", "context_tokens", "tokens_delivered")))
        else:
            t.add_row(esc(r["run_id"]), esc(_policy_cell(r, settings(r))), variant, amount(f["cost"]),
                      esc(saving(r, "cost")), pct((r.get("saved_pct") or {}).get("context_tokens")))
        risk.add_row(esc(r["run_id"]), esc(r["policy"]), variant, pct(f["hit_rate"], 1, sign=False), count(f["busts"]),
                     count(f["hints"]), count(f["dangling_refs"]), count(f["stale_refs"]), count(f["trimmed_reread"]))
    print_table(fit(t, wide))
    print_table(fit(risk, wide))


def print_variants(rows: list[dict], settings, wide: bool = False) -> None:
    """One line per configuration run under both variants: how much of the saving rests on calibration."""
    if wide:
        t = Table("policy", "settings", "TTL", "calibrated: cost saved [95%]", "model-only: cost saved [95%]",
                  "calibrated - model-only", title="Cost saved under both cache-model variants")
        _figure_columns(t, 3)
    else:
        t = Table("policy (settings)", "calibrated [95%]", "model-only [95%]", "difference",
                  title="Cost saved under both cache-model variants")
        _figure_columns(t, 1)
    seen = set()
    for r in rows:
        v = r.get("variants") or {}
        if r["policy"] == "noop" or not {"calibrated", "model_only"} <= set(v):
            continue
        key = (v["calibrated"]["run_id"], v["model_only"]["run_id"])
        if key in seen:
            continue
        seen.add(key)
        gap = (r.get("calibrated_minus_model_only") or {}).get("cost")
        cells = [esc(saving({"policy": r["policy"], **v[name]}, "cost")) for name in ("calibrated", "model_only")]
        diff = "-" if gap is None else f"{100 * gap:+z.2f} points"
        if wide:
            t.add_row(esc(r["policy"]), esc(settings(r)), esc(r["cache_config"].get("ttl")), *cells, diff)
        else:
            t.add_row(esc(_policy_cell(r, settings(r))), *cells, diff)
    if seen:
        print_table(fit(t, wide))
