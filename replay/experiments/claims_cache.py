"""The claims register's cache-advice metrics (issue 36, item 3): the field's published advice on
prompt-cache TTLs, measured on the recorded requests with no replay.

Every figure re-prices the log's own usage per request with the recorded estimator of
`replay.experiments.whatif_recorded` (`reprice_stream`: every write at the lever's TTL, the
expiries the TTL covers bridged, the gaps it does not cover expired): nothing here depends on
the cache model's error. A stream is a *subagent* stream when its kind is not ``"main"``
(``subagent``, ``sidechain``, ``progress_subagent``).

``measure`` re-prices each session once under every setting the claims need:

* ``recorded``: the recorded bill;
* ``ttl_1h`` / ``ttl_5m``: every write at 1 hour / 5 minutes (the what-if levers);
* ``split``: main conversation at 1 hour, subagent streams at 5 minutes (the blog's advice):
  `reprice_stream` per stream with ``ttl_1h`` or ``ttl_5m`` by ``st.kind == "main"``;
* ``sub_1h``: the main conversation as recorded, subagent streams at 1 hour (what a subagent
  TTL control would let a user choose);
* ``sub_writes``: the recorded dollars of the subagent streams' cache writes (5m and 1h, at the
  request's rates, long-context tier included);
* ``first_writes``: per subagent stream, its first request with usage (time, model, overhead,
  the system-prefix tokens it wrote): what `subagent_recache` matches across the dataset.

Each metric returns the own-metric dict of the register (``value``, ``interval``, ``unit``,
``sessions``, ``detail``) plus ``cost`` (dollars the claim's setting saves against its baseline,
with the 95% interval) and ``exercised`` (False, with ``why_not``, when the setting changes
nothing on these logs: the verdict is then "not exercised", never "holds").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from replay.model.arrays import Dataset, Stream
from replay.model.costs import PriceTable, Rates

MIN_5 = 5 * 60_000
MIN_60 = 60 * 60_000
SAME_OVERHEAD = 0.01  # two system prefixes of one model within 1% in size: the same prompt (text is not stored)
MOSTLY_1H = 0.5       # a session "recorded with 1-hour writes": more than half its written tokens at 1h


def is_subagent(st: Stream) -> bool:
    return st.kind != "main"


def write_cost(r: Rates, u: float, w5: float, w1h: float, read: float) -> float:
    """The dollars of one request's cache writes at its rates (the tier its whole input falls in)."""
    tier = r.tier_threshold is not None and u + w5 + w1h + read > r.tier_threshold
    r5, r1 = (r.tier_cache_write_5m, r.tier_cache_write_1h) if tier else (r.cache_write_5m, r.cache_write_1h)
    return (w5 * r5 + w1h * r1) / 1e6


def _first_write(st: Stream, models: list[str], prices: PriceTable) -> dict | None:
    """The first request with usage of a subagent stream: when, which model, its overhead (system
    prompt and tools, `Stream.overhead`), the prefix tokens it wrote (the part of the overhead it
    did not read) and their dollars at its recorded write rates."""
    k = next((k for k in range(st.n_requests) if st.r_has_usage[k] and st.r_model[k] >= 0), None)
    if k is None:
        return None
    m = st.r_model[k]
    ov = float(st.overhead.get(m, 0.0))
    u, w5, w1, rd = (float(x) for x in (st.r_uncached[k], st.r_w5[k], st.r_w1h[k], st.r_read[k]))
    wrote = min(w5 + w1, max(0.0, ov - rd))
    usd = 0.0
    if wrote > 0:
        r = prices.rates(models[m])
        usd = write_cost(r, u, w5, w1, rd) * wrote / (w5 + w1)
    return {"ts": int(st.r_ts[k]), "model": int(m), "overhead": ov, "wrote": wrote, "usd": usd}


def measure(ds: Dataset, prices: PriceTable) -> dict[str, Any]:
    """Per session (``ds.sessions`` order) every setting the cache claims need (module docs)."""
    from replay.experiments.whatif_recorded import reprice_stream, stream_events

    models, tools = ds.vocab.models, ds.vocab.tool_names
    cols = ("recorded", "ttl_1h", "ttl_5m", "split", "sub_1h", "sub_writes", "w5", "w1h",
            "sub_requests", "main_requests")
    out: dict[str, Any] = {c: [] for c in cols}
    out["session_keys"], out["first_writes"] = [], []
    for s in ds.sessions:
        acc = dict.fromkeys(cols, 0.0)
        for st in s.streams:
            sub = is_subagent(st)
            rec = reprice_stream(st, models, prices, tools, None)["cost"]
            ev = stream_events(st, models, prices, tools)  # the breaks classified once for both TTLs
            one = reprice_stream(st, models, prices, tools, "ttl_1h", ev)["cost"]
            five = reprice_stream(st, models, prices, tools, "ttl_5m", ev)["cost"]
            acc["recorded"] += rec
            acc["ttl_1h"] += one
            acc["ttl_5m"] += five
            acc["split"] += five if sub else one
            acc["sub_1h"] += one if sub else rec
            n = 0
            for k in range(st.n_requests):
                if not st.r_has_usage[k] or st.r_model[k] < 0:
                    continue
                n += 1
                acc["w5"] += st.r_w5[k]
                acc["w1h"] += st.r_w1h[k]
                if sub:
                    acc["sub_writes"] += write_cost(prices.rates(models[st.r_model[k]]), st.r_uncached[k],
                                                    st.r_w5[k], st.r_w1h[k], st.r_read[k])
            acc["sub_requests" if sub else "main_requests"] += n
            if sub:
                fw = _first_write(st, models, prices)
                if fw is not None:
                    out["first_writes"].append({**fw, "session": len(out["session_keys"])})
        out["session_keys"].append(s.session_key)
        for c in cols:
            out[c].append(float(acc[c]))
    return out


# --- intervals ---------------------------------------------------------------------------------

def _order(base: list[float], keys: list[str]) -> list[int]:
    return sorted(range(len(base)), key=lambda i: (base[i], keys[i]))


def saving(iv, base: list[float], other: list[float], keys: list[str]) -> dict[str, Any]:
    """``other`` against ``base`` summed over sessions: dollars and percent saved (positive = cheaper
    than the baseline) with the 95% paired bootstrap interval (`analysis.intervals`' method)."""
    idx = _order(base, keys)
    b = np.array([base[i] for i in idx], dtype=np.float64)
    o = np.array([other[i] for i in idx], dtype=np.float64)
    out = {"saved_usd": float(b.sum() - o.sum()), "baseline_usd": float(b.sum()), "sessions": len(idx)}
    if not idx or not b.sum():
        return {**out, "saved_pct": None, "interval_pct": None}
    point = (b.sum() - o.sum()) / b.sum()
    ivl = iv.ratio_intervals(b, o[None, :], iv.resample_counts(len(idx)), np.array([point]))[0]
    return {**out, "saved_pct": 100 * float(point),
            "interval_pct": None if not ivl else {"low": 100 * ivl["low"], "high": 100 * ivl["high"]}}


def _same(a: list[float], b: list[float]) -> bool:
    return all(abs(x - y) <= 1e-9 * max(1.0, abs(x)) for x, y in zip(a, b))


def _not_exercised(why: str, sessions: int, unit: str) -> dict[str, Any]:
    return {"value": None, "interval": None, "unit": unit, "sessions": sessions, "detail": {},
            "cost": None, "exercised": False, "why_not": why}


# --- the claims' metrics -------------------------------------------------------------------------

SPLIT_ALTERNATIVES = (("recorded", "the recorded settings"), ("ttl_1h", "every write at 1h"),
                      ("ttl_5m", "every write at 5m"))


def ttl_split(iv, m: dict[str, Any]) -> dict[str, Any]:
    """Main conversation at 1h, subagents at 5m, against each alternative: percent of the
    alternative's cost saved, with its interval. An alternative that prices every session as the
    split does (the recorded settings may be the advice already) is listed as the same, not
    compared. The headline is the alternative it beats least (lowest interval end); the verdict
    (rule ``cheapest``) needs every interval above 0."""
    unit = "% of cost saved by main 1h + subagents 5m against the alternative it beats least"
    keys, n = m["session_keys"], len(m["session_keys"])
    if not sum(m["sub_requests"]):
        return _not_exercised("no subagent request on these logs: main 1h + subagents 5m is every write at 1h", n,
                              unit)
    if not sum(m["main_requests"]):
        return _not_exercised("no main-conversation request on these logs: main 1h + subagents 5m is every "
                              "write at 5m", n, unit)
    same = [label for k, label in SPLIT_ALTERNATIVES if _same(m["split"], m[k])]
    comps = {k: {"against": label, **saving(iv, m[k], m["split"], keys)} for k, label in SPLIT_ALTERNATIVES
             if label not in same}
    if not comps:
        return _not_exercised("every alternative prices each session as the split does: the TTLs change nothing "
                              "on these logs", n, unit)
    worst = min(comps.values(), key=lambda c: (c["interval_pct"] or {"low": float("inf")})["low"])
    return {"value": worst["saved_pct"], "interval": worst["interval_pct"],
            "unit": f"{unit} ({worst['against']})", "sessions": n,
            "detail": {"comparisons": comps, "same_as_split": same},
            "cost": saving(iv, m["recorded"], m["split"], keys), "exercised": True}


def subagent_write_share(iv, m: dict[str, Any]) -> dict[str, Any]:
    """The subagent streams' cache writes as a percent of the recorded cost; cost: what subagents
    at 1h (the main conversation as recorded) would save."""
    from replay.experiments.claims_metrics import ratio

    unit = "% of the recorded cost that is subagent cache writes"
    keys, n = m["session_keys"], len(m["session_keys"])
    if not sum(m["sub_requests"]):
        return _not_exercised("no subagent request on these logs", n, unit)
    r = ratio(iv, m["sub_writes"], m["recorded"])
    return {**r, "unit": unit, "detail": {"subagent_write_usd": sum(m["sub_writes"]),
                                          "recorded_usd": sum(m["recorded"])},
            "cost": saving(iv, m["recorded"], m["sub_1h"], keys), "exercised": True}


def recache_events(m: dict[str, Any], lo_ms: int = MIN_5, hi_ms: int = MIN_60) -> list[dict]:
    """Per subagent first request that wrote its system prefix: the latest earlier subagent first
    request of the dataset with the same model and an overhead within 1%, and whether it came
    ``lo_ms``-``hi_ms`` before (a 5-minute entry has expired, a 1-hour one would still be there)."""
    fws = sorted(m["first_writes"], key=lambda f: f["ts"])
    out = []
    for i, f in enumerate(fws):
        if f["wrote"] <= 0:
            continue
        prev = None
        for g in reversed(fws[:i]):
            if g["model"] == f["model"] and g["ts"] <= f["ts"] and \
                    abs(g["overhead"] - f["overhead"]) <= SAME_OVERHEAD * max(g["overhead"], f["overhead"]):
                prev = g
                break
        gap = None if prev is None else f["ts"] - prev["ts"]
        out.append({**f, "gap_ms": gap, "recache": gap is not None and lo_ms <= gap <= hi_ms})
    return out


def subagent_recache(iv, m: dict[str, Any]) -> dict[str, Any]:
    """The percent of subagent first requests that write a system prefix another subagent of the
    same model (overhead within 1%) wrote 5-60 minutes earlier; cost: subagents at 1h."""
    from replay.experiments.claims_metrics import ratio

    unit = "% of subagent first requests re-writing a prefix another subagent wrote 5-60 min earlier"
    keys, n = m["session_keys"], len(m["session_keys"])
    ev = recache_events(m)
    if not ev:
        return _not_exercised("no subagent first request writes a system prefix on these logs", n, unit)
    num, den = [0.0] * n, [0.0] * n
    for e in ev:
        den[e["session"]] += 1
        num[e["session"]] += e["recache"]
    hits = [e for e in ev if e["recache"]]
    six_ten = [e for e in hits if 6 * 60_000 <= e["gap_ms"] <= 10 * 60_000]
    r = ratio(iv, num, den)
    return {**r, "unit": unit, "detail": {
        "first_requests_writing": len(ev), "recache": len(hits), "recache_6_10_min": len(six_ten),
        "within_5_min": sum(1 for e in ev if e["gap_ms"] is not None and e["gap_ms"] < MIN_5),
        "recache_tokens": sum(e["wrote"] for e in hits), "recache_usd": sum(e["usd"] for e in hits),
        "match": "same model, overhead (system prompt and tools) within 1%: text is not stored"},
        "cost": saving(iv, m["recorded"], m["sub_1h"], keys), "exercised": True}


def ttl_1h_to_5m(iv, m: dict[str, Any]) -> dict[str, Any]:
    """On the sessions recorded with 1-hour writes (more than half their written tokens at 1h),
    every write at 5 minutes: the percent the cost rises (the claim's metric) and the dollars."""
    unit = "% more cost with every write at 5m, sessions recorded with 1-hour writes"
    keys = m["session_keys"]
    pick = [i for i in range(len(keys)) if m["w1h"][i] > MOSTLY_1H * (m["w1h"][i] + m["w5"][i])]
    if not pick:
        return _not_exercised("no session recorded with 1-hour writes", 0, unit)
    base = [m["recorded"][i] for i in pick]
    five = [m["ttl_5m"][i] for i in pick]
    k = [keys[i] for i in pick]
    if _same(base, five):
        return _not_exercised("every write at 5m changes no session's cost", len(pick), unit)
    cost = saving(iv, base, five, k)
    ivl = cost["interval_pct"]
    return {"value": None if cost["saved_pct"] is None else -cost["saved_pct"],
            "interval": None if not ivl else {"low": -ivl["high"], "high": -ivl["low"]}, "unit": unit,
            "sessions": len(pick), "detail": {"sessions_recorded_1h": len(pick), "sessions": len(keys),
                                              "recorded_usd": sum(base), "ttl_5m_usd": sum(five)},
            "cost": cost, "exercised": True}


CACHE_METRICS = {"ttl_split": ttl_split, "subagent_write_share": subagent_write_share,
                 "subagent_recache": subagent_recache, "ttl_1h_to_5m": ttl_1h_to_5m}


# --- the Complexity Trap's own pricing -----------------------------------------------------------

# The paper priced cost per instance at API prices with no cache-write premium: Qwen3-32B with no
# discount on cached input, Qwen3-Coder-480B with cached input at 0.4x the input price.
PAPER_PRICINGS = (("paper: cached input 0.4x, no write premium", 0.4, 1.0),
                  ("paper: no cache discount, no write premium", 1.0, 1.0))


def paper_prices(prices: PriceTable, price_keys: list[str], read_x: float, write_x: float, label: str
                 ) -> PriceTable:
    """``prices`` with every model's cache rates set to ``write_x``/``read_x`` times its input rate
    (input and output unchanged, long-context tiers dropped)."""
    from replay.model.costs import PriceError, split_price_key

    over: dict[str, dict] = {}
    for key in price_keys:
        try:
            r = prices.rates(key)
        except PriceError:
            continue  # a model no request is priced under
        model, fast = split_price_key(key)
        e = {"input": r.input, "cache_write_5m": write_x * r.input, "cache_write_1h": write_x * r.input,
             "cache_read": read_x * r.input, "output": r.output}
        if fast:
            over.setdefault(model, {})["fast"] = e
        else:
            over.setdefault(model, {}).update(e)
    return PriceTable(prices.price_date, over, label)
