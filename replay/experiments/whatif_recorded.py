"""The second what-if estimator: the recorded requests re-priced with only the events the lever
changes altered (issue 35, item 2; docs/replay-model.md, "Cache what-ifs").

The predictive replay (`replay.experiments.whatif`) rebuilds every hit and miss from the cache
model; on client versions the model was not built on it carries the model's error into every
saving. This estimator takes the log's own usage per request (uncached, 5m and 1h writes,
reads, output) and changes only what the lever changes, by each request's cause:

* a **TTL lever** (``ttl_5m``, ``ttl_1h``, ``online_1h_after_idle``; ``main_1h_sub_5m`` and
  ``main_5m_sub_1h`` per stream kind: the main conversation, every other stream): every write is priced at
  the lever's TTL; an *expiry* miss (the provider's ``previous_message_not_found``, else the
  inferred ``ttl_5m``/``ttl_1h`` cause of `breaks`) whose idle gap the new TTL covers is
  bridged (the tokens it wrote again are read instead); a request whose idle gap the new TTL
  does not cover loses what it read beyond the stream's warm system prefix (the first
  request's recorded read, cached by other sessions), which it writes instead;
* a **keep-alive** (``keepalive_15m``, ``keepalive_60m``: 5-minute TTL, a ping every 270 s of
  idle time up to a limit): gaps the pings cover are bridged as above and every ping is added
  (a read of the prefix the previous request cached, 8 input and 1 output tokens); a longer
  gap still pays its pings and then expires; after the main stream's last request the pings
  run on to the limit (the client cannot know the user is done);
* a **client-break lever** (``no_thinking_switch``, ``no_task_turns``, ``no_skill_turns``,
  ``no_resume_rerender``, ``no_tool_search``): the breaks of that cause are bridged;
* ``rates_sonnet_4_5``: the recorded usage at Sonnet 4.5's rates.

Everything else stays as recorded. Decisions are causal: a request's TTL (the online rule's
switch) and its pings depend only on gaps before it. The idle gap is measured as `breaks`
measures it (end of the previous response to the send time). Scenarios it cannot re-price
without the model (another provider's caching, the mixed layout) give None.
"""

from __future__ import annotations

from typing import Any

from replay.engine.pricing import stream_ttls
from replay.experiments.breaks import _idle_ms, classify_stream
from replay.model.arrays import Dataset, Stream
from replay.model.cache import TTL_MS, CacheConfig
from replay.model.costs import PriceTable, Rates

EXPIRY_CAUSES = frozenset({"ttl_5m", "ttl_1h"})
EXPIRY_REASONS = frozenset({"previous_message_not_found"})
PING_EVERY_MS = 270_000
PING_INPUT, PING_OUTPUT = 8.0, 1.0

# scenario -> (kind, parameter): "ttl" (TTL ms), "keepalive" (limit ms), "online", "break" (cause), "rates" (model)
LEVERS: dict[str, tuple[str, Any]] = {
    "ttl_5m": ("ttl", TTL_MS["5m"]),
    "ttl_1h": ("ttl", TTL_MS["1h"]),
    "main_1h_sub_5m": ("split", (TTL_MS["1h"], TTL_MS["5m"])),
    "main_5m_sub_1h": ("split", (TTL_MS["5m"], TTL_MS["1h"])),
    "keepalive_15m": ("keepalive", 900_000),
    "keepalive_60m": ("keepalive", 3_600_000),
    "online_1h_after_idle": ("online", None),
    "no_thinking_switch": ("break", "thinking_switch"),
    "no_task_turns": ("break", "task_turn"),
    "no_skill_turns": ("break", "skill_turn"),
    "no_resume_rerender": ("break", "resumed"),
    "no_tool_search": ("break", "tool_search"),
    "rates_sonnet_4_5": ("rates", "claude-sonnet-4-5"),
}


def supports(name: str) -> bool:
    return name in LEVERS


def stream_events(st: Stream, models: list[str], prices: PriceTable, tool_names: list[str]) -> dict[int, dict]:
    """Per request index with usage and an earlier one: previous request j, idle ms, the
    recorded TTL of j's entry, and the break's cause/reason and re-billed tokens (if a break)."""
    rows, _, _ = classify_stream(st, models, prices, tool_names)
    brk = {r["request"]: r for r in rows if not r.get("not_a_break")}
    ttls = stream_ttls(st, CacheConfig())
    out: dict[int, dict] = {}
    j = None
    for k in range(st.n_requests):
        if not st.r_has_usage[k]:
            continue
        if j is not None:
            r = brk.get(k)
            out[k] = {"j": j, "idle": _idle_ms(st, j, k), "ttl": ttls[j],
                      "cause": r["cause"] if r else None, "reason": r["provider_reason"] if r else None,
                      "missed": float(r["tokens"]) if r else 0.0}
        j = k
    return out


def _expiry(ev: dict) -> bool:
    return ev["cause"] in EXPIRY_CAUSES or ev["reason"] in EXPIRY_REASONS


def _move_to_reads(u: list[float], missed: float) -> None:
    """``missed`` tokens of the writes (5m and 1h in proportion), then of the uncached input, read instead."""
    w5, w1h = u[1], u[2]
    w = w5 + w1h
    from_w = min(missed, w)
    if w:
        u[1] = w5 - from_w * w5 / w
        u[2] = w1h - from_w * w1h / w
    rest = min(missed - from_w, u[0])
    u[0] -= rest
    u[3] += from_w + rest


def _expire(u: list[float], warm: float) -> None:
    """The entry expired: what was read beyond ``warm`` is written instead (at 5m here; the
    caller prices every write at the lever's TTL)."""
    lost = max(0.0, u[3] - warm)
    u[3] -= lost
    u[1] += lost


def _cost(r: Rates, u: list[float], out: float, ttl_ms: int | None) -> float:
    """Price one request; ``ttl_ms``: every write at that TTL, None: as recorded."""
    if ttl_ms is None:
        return r.cost(u[0], u[1], u[2], u[3], out)
    w = u[1] + u[2]
    return r.cost(u[0], w, 0.0, u[3], out) if ttl_ms == TTL_MS["5m"] else r.cost(u[0], 0.0, w, u[3], out)


def reprice_stream(st: Stream, models: list[str], prices: PriceTable, tool_names: list[str], name: str | None,
                   events: dict[int, dict] | None = None) -> dict[str, float]:
    """A stream's cost (and pings) over its requests with usage: as recorded (``name`` None) or
    under the named lever. ``events``: the stream's `stream_events`, when the caller prices
    several levers (the breaks are classified once)."""
    kind, param = LEVERS[name] if name else ("recorded", None)
    if kind == "split":  # a TTL per stream kind: the main conversation's, every other stream's
        kind, param = "ttl", param[0] if st.kind == "main" else param[1]
    if not name:
        events = {}
    elif events is None:
        events = stream_events(st, models, prices, tool_names)
    first = next((k for k in range(st.n_requests) if st.r_has_usage[k]), None)
    warm = float(st.r_read[first]) if first is not None else 0.0
    cost = pings = 0.0
    last = None
    long_gap_seen = False  # the online rule: 1h writes once a gap over 5 minutes has been seen
    for k in range(st.n_requests):
        if not st.r_has_usage[k] or st.r_model[k] < 0:
            continue
        model = models[st.r_model[k]]
        r = prices.rates(param if kind == "rates" else model)
        u = [float(st.r_uncached[k]), float(st.r_w5[k]), float(st.r_w1h[k]), float(st.r_read[k])]
        out = float(st.r_output[k])
        ev = events.get(k)
        ttl_ms: int | None = None
        if kind in ("ttl", "keepalive", "online"):
            if kind == "online":
                if ev is not None and ev["idle"] is not None and ev["idle"] > TTL_MS["5m"] and not long_gap_seen:
                    alive_ms, long_gap_seen = TTL_MS["5m"], True  # this gap still meets the 5m entry
                else:
                    alive_ms = TTL_MS["1h"] if long_gap_seen else TTL_MS["5m"]
                ttl_ms = TTL_MS["1h"] if long_gap_seen else TTL_MS["5m"]
            elif kind == "ttl":
                alive_ms = ttl_ms = param
            else:
                ttl_ms = TTL_MS["5m"]
                alive_ms = TTL_MS["5m"]
            if ev is not None and ev["idle"] is not None:
                idle = ev["idle"]
                if kind == "keepalive" and idle > PING_EVERY_MS:
                    n_pings = min(idle // PING_EVERY_MS, param // PING_EVERY_MS)
                    j = ev["j"]
                    prefix = float(st.r_read[j] + st.r_w5[j] + st.r_w1h[j])
                    cost += n_pings * r.cost(PING_INPUT, 0.0, 0.0, prefix, PING_OUTPUT)
                    pings += n_pings
                    alive_ms = n_pings * PING_EVERY_MS + TTL_MS["5m"]
                if idle > alive_ms:
                    _expire(u, warm)
                elif _expiry(ev) and ev["missed"] > 0:
                    _move_to_reads(u, ev["missed"])
        elif kind == "break" and ev is not None and ev["cause"] == param and ev["missed"] > 0:
            _move_to_reads(u, ev["missed"])
        cost += _cost(r, u, out, ttl_ms)
        last = k
    if kind == "keepalive" and st.kind == "main" and last is not None:
        # after the main conversation's last request the client pings on to the horizon: it cannot
        # know the user is done (as the predictive replay's KeepAlive(tail=True))
        n_pings = param // PING_EVERY_MS
        r = prices.rates(models[st.r_model[last]])
        prefix = float(st.r_read[last] + st.r_w5[last] + st.r_w1h[last])
        cost += n_pings * r.cost(PING_INPUT, 0.0, 0.0, prefix, PING_OUTPUT)
        pings += n_pings
    return {"cost": cost, "keepalive_pings": pings}


def reprice(ds: Dataset, prices: PriceTable, names: list[str]) -> dict[str, Any]:
    """Per session (in ``ds.sessions`` order) the recorded bill re-priced as recorded and under
    each named lever that has a recorded estimator: ``{"session_keys", "recorded": [...],
    "costs": {name: [...]}, "pings": {name: total}}``."""
    names = [n for n in names if supports(n)]
    keys, base = [], []
    costs: dict[str, list[float]] = {n: [] for n in names}
    pings = {n: 0.0 for n in names}
    models, tools = ds.vocab.models, ds.vocab.tool_names
    for s in ds.sessions:
        keys.append(s.session_key)
        base.append(sum(reprice_stream(st, models, prices, tools, None)["cost"] for st in s.streams))
        events = [stream_events(st, models, prices, tools) for st in s.streams] if names else []
        for n in names:
            c = p = 0.0
            for st, ev in zip(s.streams, events):
                f = reprice_stream(st, models, prices, tools, n, ev)
                c += f["cost"]
                p += f["keepalive_pings"]
            costs[n].append(c)
            pings[n] += p
    return {"session_keys": keys, "recorded": base, "costs": costs, "pings": pings}
