"""Which setting of a sweep is cheapest once prompt caching is priced, with its 95% interval.

The report's Sweeps section charts every point; a user tuning a policy (masking window x
polling, a compaction trigger) wants the answer first: the setting with the largest cost saving
against the no-op baseline (calibrated variant, or the only variant a what-if sweep has), its
paired-bootstrap interval (`analysis.compare`), and beside it the setting that sends the fewest
context tokens, because the two differ exactly when a policy saves tokens by breaking the cache.
Then every point, cheapest first.
"""

from __future__ import annotations

import json
from typing import Any

from replay.policies import REGISTRY

from .answer import interval_text, pct, ttl_text
from .tables import show_value


def _runs(rows: list[dict], sid: str) -> list[dict]:
    runs = [r for r in rows if r.get("sweep_id") == sid and r["policy"] != "noop"
            and (r.get("saved_pct") or {}).get("cost") is not None]
    cal = [r for r in runs if r.get("variant") == "calibrated"]
    return cal or runs


def _varying(runs: list[dict]) -> tuple[list[str], bool]:
    """The parameters whose values differ between the runs, and whether the cache settings do."""
    cls = REGISTRY.get(runs[0]["policy"])
    declared = [f.name for f in cls.param_fields()] if cls is not None else []
    seen = {k for r in runs for k in r["params"]}
    keys = [k for k in declared if k in seen] + sorted(seen - set(declared))  # the policy's parameter order
    vary = [k for k in keys if len({json.dumps(r["params"].get(k), sort_keys=True) for r in runs}) > 1]
    cache = len({json.dumps(r["cache_config"], sort_keys=True) for r in runs}) > 1
    return vary, cache


def _label(r: dict, keys: list[str], cache: bool) -> str:
    text = ", ".join(f"{k}={show_value(r['policy'], k, r['params'].get(k))}" for k in keys) or "defaults"
    return f"{text}, {ttl_text(r['cache_config'])}" if cache else text


def _saved(r: dict, fig: str) -> float:
    v = (r.get("saved_pct") or {}).get(fig)
    return v if v is not None else float("-inf")


def _interval(r: dict, fig: str) -> str:
    return interval_text((r.get("interval") or {}).get(fig))


def _count(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def best_lines(rows: list[dict], sid: str) -> list[str]:
    """Markdown: the cheapest setting of sweep ``sid`` with caching, the one sending the fewest
    context tokens, and a table of every point (empty when the sweep has no policy runs)."""
    runs = _runs(rows, sid)
    if not runs:
        return []
    keys, cache = _varying(runs)
    variant = runs[0].get("variant", "calibrated").replace("_", "-")
    ranked = sorted(runs, key=lambda r: -_saved(r, "cost"))
    best = ranked[0]
    tok = max(runs, key=lambda r: _saved(r, "context_tokens"))
    out = ["", f"Cheapest with caching ({variant}): **{best['policy']} ({_label(best, keys, cache)})**, cost saved "
               f"{pct(_saved(best, 'cost'))} (95% interval {_interval(best, 'cost')}), context tokens saved "
               f"{pct(_saved(best, 'context_tokens'))}."]
    if _saved(best, "cost") < 0:
        out[-1] += " Every setting of this sweep costs more than the no-op baseline."
    rr = (best.get("risk") or {}).get("trimmed_reread")
    if rr:
        # the recommendation above ranks only runs within the risk limits (0 by default)
        out[-1] += (f" It removed content the agent read again {rr:,.0f} times, over the recommendation's default "
                    f"risk limit (`--max-risk trimmed_reread={rr:.0f}` admits it).")
    if tok is not best:
        out += ["", f"Fewest context tokens: {_label(tok, keys, cache)}, context tokens saved "
                   f"{pct(_saved(tok, 'context_tokens'))}, but cost saved {pct(_saved(tok, 'cost'))} "
                   f"(95% interval {_interval(tok, 'cost')}): fewer tokens are not fewer dollars here."]
    out += ["", "| setting | cost saved | 95% interval | context tokens saved | cache busts | re-reads of removed "
                "content |", "|---|---|---|---|---|---|"]
    for r in ranked:
        busts = (r.get("figures") or {}).get("busts")
        rr = (r.get("risk") or {}).get("trimmed_reread")
        out.append(f"| {_label(r, keys, cache)} | {pct(_saved(r, 'cost'))} | {_interval(r, 'cost')} | "
                   f"{pct(_saved(r, 'context_tokens'))} | {_count(busts)} | {_count(rr)} |")
    return out + [""]


def best_of(rows: list[dict], sid: str) -> dict[str, Any] | None:
    """The cheapest run of sweep ``sid`` (the row as ``compare`` gives it), or None."""
    runs = _runs(rows, sid)
    return max(runs, key=lambda r: _saved(r, "cost")) if runs else None
