"""The report's "Published claims" section: the claims register (`ctxreplay claims`) from the
runs already stored, nothing replayed (the report opens the database read-only)."""

from __future__ import annotations

from typing import Any

from . import intervals as iv


def claims_md(con, dataset: str, rows: list[dict]) -> list[str]:
    """Markdown lines of the register over ``rows`` (compare rows of the report's runs)."""
    from replay.experiments import claims_register as reg
    from replay.experiments.runs import load

    ds = load(con, dataset)
    claims = reg.evaluate(con, ds, iv, reg.stored_runs(rows), prices=_prices(rows))
    return section(claims, len(ds.sessions))


def _prices(rows: list[dict]):
    """The price table of the runs' no-op baseline (the cache-advice claims re-price the recorded
    requests with it), else the library's."""
    from replay.model.costs import PriceTable

    p = next((r.get("prices") for r in rows if r["policy"] == "noop" and r.get("prices")), None)
    return PriceTable() if not p else PriceTable(p["price_date"], p.get("overrides") or {}, p.get("override_file"))


def _usd(v: float) -> str:
    return f"{'-' if round(v, 2) < 0 else ''}${abs(v):,.2f}"  # never "-$0.00"


def _span(ivl: dict | None) -> str:
    return "" if not ivl else f" [{ivl['low']:z,.2f}, {ivl['high']:z,.2f}]"


def parts(c: dict[str, Any], sessions: int | None = None) -> dict[str, str]:
    """One claim's figures and words, each a separate string so that a narrow table can keep a
    figure on one line and wrap only the words: published, own (value [95%]), unit, cost_pct
    (percent saved [95%]), cost_usd, baseline and baseline_usd (what the saving is measured
    against when it is not the no-op replay, and its cost; else ""), noop_pct, noop_usd and
    noop_base_usd (a claim comparing two settings: its saving against the no-op replay, and the
    no-op's cost; else ""), verdict, reason (with the dollar verdict of a cost claim).
    ``sessions``: the dataset's, so that a baseline over fewer sessions says how many."""
    fig, m, cost = c["figure"], c["own_metric"], c["cost"]
    pub = "-" if not fig else (f"{fig['low']:,.4g}" if fig["low"] == fig["high"]
                               else f"{fig['low']:,.4g}-{fig['high']:,.4g}")
    measured = m and m["value"] is not None
    saved = cost and cost["saved_pct"] is not None
    reason = f": {c['reason']}"
    if c.get("cost_verdict"):
        reason += f"; {c['cost_verdict']['verdict']} {c['cost_verdict']['reason']}"
    for q in c.get("cost_paper_prices") or ():
        got = "-" if q["saved_pct"] is None else f"{q['saved_pct']:+z.2f}%{_span(q['interval_pct'])}"
        reason += f"; {q['pricing']}: {got}, {q['verdict']}"
    base = baseline_name(c, sessions) if saved else None
    noop = c.get("cost_vs_noop") if saved else None
    noop_saved = bool(noop and noop.get("saved_pct") is not None)
    return {"published": pub,
            "own": f"{m['value']:,.2f}{_span(m['interval'])}" if measured else "-",
            "unit": m["unit"] if measured else "",
            "cost_pct": f"{cost['saved_pct']:+z.2f}%{_span(cost['interval_pct'])}" if saved else "-",
            "cost_usd": _usd(cost["saved_usd"]) if saved else "-",
            # a saving measured against something else than the no-op replay: what, and its cost
            "baseline": base or "",
            "baseline_usd": _usd(cost["baseline_usd"]) if base and cost.get("baseline_usd") is not None else "",
            "noop_pct": f"{noop['saved_pct']:+z.2f}%{_span(noop['interval_pct'])}" if noop_saved else "",
            "noop_usd": _usd(noop["saved_usd"]) if noop_saved else "",
            "noop_base_usd": _usd(noop["baseline_usd"]) if noop_saved and noop.get("baseline_usd") is not None
            else "",
            "verdict": c["verdict"] or "not measured", "reason": reason}


def baseline_name(c: dict[str, Any], sessions: int | None = None) -> str | None:
    """What a claim's cost saving is measured against when it is not the no-op replay
    (`observation_masking (window=10, polling=1)`, `the recorded settings re-priced`, with its
    number of sessions when fewer than ``sessions``), else None."""
    b = c.get("baseline") or {}
    if not b or b.get("name") == "noop":
        return None
    if c.get("lever") is not None:
        n = (c.get("cost") or {}).get("sessions")
        return "the recorded settings re-priced" + (f" ({n:,} sessions)" if n and n != sessions else "")
    params = ", ".join(f"{k}={v}" for k, v in (b.get("params") or {}).items())
    return b["name"] + (f" ({params})" if params else "")


def against(p: dict[str, str]) -> str:
    """`against X ($2,338.74); against the no-op: -$324.09 (-42.72% [...])`: the saving's
    baseline when it is not the no-op replay, and the saving against the no-op beside it ("" when
    the baseline is the no-op)."""
    if not p["baseline"]:
        return ""
    text = f"against {p['baseline']}" + (f" ({p['baseline_usd']})" if p["baseline_usd"] else "")
    if p["noop_pct"]:
        base = f" ({p['noop_base_usd']})" if p["noop_base_usd"] else ""
        text += f"; against the no-op{base}: {p['noop_usd']} ({p['noop_pct']})"
    return text


def cells(c: dict[str, Any], sessions: int | None = None) -> tuple[str, str, str, tuple[str, str]]:
    """One claim's cells as the report and `ctxreplay claims --wide` print them: the published
    figure, the own-metric figure [95%], the cost saved with caching [95%] (with its baseline
    when that is not the no-op replay), and the verdict (word, reason)."""
    p = parts(c, sessions)
    got = "-" if p["own"] == "-" else f"{p['own']} {p['unit']}"
    usd = "-" if p["cost_pct"] == "-" else f"{p['cost_usd']} ({p['cost_pct']})"
    if p["baseline"]:
        usd += f" {against(p)}"
    return p["published"], got, usd, (p["verdict"], p["reason"])


def section(claims: list[dict[str, Any]], sessions: int | None = None) -> list[str]:
    md = ["## Published claims", "",
          "Each published claim measured on these logs in its own metric, then as billed cost with prompt caching "
          "priced (95% paired bootstrap intervals over sessions; method and sources: `docs/claims.md`). Claims whose "
          "runs are not stored say so: `ctxreplay claims` replays them.", "",
          "| claim | published | measured here (own metric) | cost saved with caching | verdict |",
          "|---|---|---|---|---|"]
    for c in claims:
        pub, got, usd, verdict = cells(c, sessions)
        text = f"{c['source']}: {c['claim']}"
        md.append("| " + " | ".join(x.replace("|", "/") for x in (text, pub, got, usd, f"**{verdict[0]}**{verdict[1]}"))
                  + " |")
    return md + [""]
