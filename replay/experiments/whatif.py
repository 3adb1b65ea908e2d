"""Cache what-ifs (issue 26): what would the same sessions have cost under another cache setting?

Every scenario is replayed on the **predictive (model-only) variant** — no observed eviction or
observed write is copied from the log, because a recorded miss is a fact of the recorded
world (a 5-minute TTL expiry does not happen under a 1-hour TTL) — and compared, session by
session, with the model-only replay of the recorded settings (the log's TTL per request, the
client's recorded breaks), so both sides carry the model's own error alike. Which log events
a scenario still takes from the log is tabulated in docs/replay-model.md ("Cache what-ifs").

A scenario is a named, documented parameter set (``SCENARIOS``), each citing the provider or
client rule it rests on. It changes one of three separable parts: the provider's caching
rules (`replay.model.whatif.ProviderRules`), the client's cache choices (TTL per write,
keep-alive pings: `ClientCache`) or behaviour (a client break avoided: a ``CacheConfig``
rule set to ``ignore``), or the rates (another model's prices).

The offline-optimal cache bound (``bound``) is, per stream, the cheapest of (a) a hindsight
schedule — per write the cheaper of 5m and 1h given the idle gaps the entry must survive, per
idle gap the cheaper of pinging through it and letting the cache expire, both valued from the
5m and 1h replays of that stream — and (b) every scenario of the TTL/keep-alive family (the
recorded TTLs, every write 5m or 1h, the mixed layout, the keep-alives, the online rule), so
no setting of that family beats it on any stream. It is achievable with hindsight (each
stream's cache is its own, so a per-stream choice is a schedule a client knowing the future
could run), not a proof that no cleverer schedule exists. The online rule
(``online_1h_after_idle``) never peeks: 5-minute writes until the stream's first idle gap over
5 minutes, 1-hour writes from then on.

Trust: the what-if is only as good as the model. ``fidelity`` gives the model-only baseline's
cost error against the recorded bill separately for sessions the log recorded with 5m and with
1h writes, and the forced-TTL replay of each group (every write 1h on the 1h-recorded
sessions must reproduce their bill). A scenario's saving on the sessions it changes that is
smaller than the model-only error on those same sessions is "not distinguishable", as is one
whose 95% interval (paired bootstrap over sessions, `analysis.intervals`) contains 0: the
comparison is `analysis.whatif` (this room replays; it does not import the analysis).
"""

from __future__ import annotations

import difflib
import math
import time
from dataclasses import dataclass, field, replace
from typing import Any

from replay.engine import ReplayOptions
from replay.engine.calibration import send_times
from replay.engine.loop import SESSION_FIGURES, replay_stream
from replay.engine.pricing import REQUEST_FIGURES
from replay.model.arrays import Dataset, Stream, Vocab
from replay.model.cache import TTL_MS, CacheConfig
from replay.model.costs import PriceTable, Rates, provider_of, split_price_key
from replay.model.whatif import FIVE_MIN_MS, ONE_HOUR_MS, ClientCache, KeepAlive, ProviderRules, WhatIf
from replay.policies.base import Policy

ANTHROPIC_CACHING = "https://platform.claude.com/docs/en/build-with-claude/prompt-caching"
ANTHROPIC_THINKING = "https://platform.claude.com/docs/en/build-with-claude/extended-thinking"
OPENAI_CACHING = "https://developers.openai.com/api/docs/guides/prompt-caching"
REPLAY_MODEL = "docs/replay-model.md"
VARIANT = "model-only"
# What a write costs beyond a read, and a ping's margin before the TTL, for the hindsight plan.
PING_MARGIN_MS = 30_000


class RepricedTable(PriceTable):
    """Every Claude request priced at another model's rates and minimum cacheable length; other
    providers' models keep their own."""

    def __init__(self, base: PriceTable, model: str):
        super().__init__(base.price_date, base.overrides, base.override_file)
        self.base, self.target = base, model

    def rates(self, model: str) -> Rates:
        if provider_of(split_price_key(model)[0]) != "anthropic":
            return self.base.rates(model)
        return replace(self.base.rates(self.target), model=model)

    def describe(self) -> dict[str, Any]:
        return {**self.base.describe(), "repriced_as": self.target}


@dataclass(frozen=True)
class Scenario:
    """A named what-if. ``cache``: ``CacheConfig`` fields set over the model-only recorded
    settings; ``client``/``provider``: the what-if parts; ``rates_as``: price every Claude
    request at this model's rates. ``family``: "cache" for the TTL/keep-alive settings the bound
    bounds; "client", "provider", "price" otherwise. ``carries``: the log events it takes."""

    name: str
    family: str
    summary: str
    rule: str
    source: str
    carries: str
    cache: dict = field(default_factory=dict)
    client: ClientCache = ClientCache()
    provider: ProviderRules = ProviderRules()
    rates_as: str | None = None

    def options(self, base: ReplayOptions, detail: bool = False) -> ReplayOptions:
        prices = RepricedTable(base.prices, self.rates_as) if self.rates_as else base.prices
        whatif = WhatIf(self.provider, self.client) if (self.client != ClientCache()
                                                        or self.provider != ProviderRules()) else None
        return ReplayOptions(replace(base.cache, **self.cache), prices, detail, whatif)


TTL_CARRIES = "input totals, uncached tails, outputs, first warm read, client breaks; not the log's TTLs"
_TTL_RULE = ("Anthropic: entries live 5 minutes (write 1.25x input) or 1 hour (write 2x input), refreshed at no "
             "cost on every hit; reads 0.1x input")
_BREAK_CARRIES = "everything the recorded-settings replay takes, less this one client break"

SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario("ttl_5m", "cache", "every write with a 5-minute TTL", _TTL_RULE, ANTHROPIC_CACHING, TTL_CARRIES,
             {"ttl": "5m"}),
    Scenario("ttl_1h", "cache", "every write with a 1-hour TTL", _TTL_RULE, ANTHROPIC_CACHING, TTL_CARRIES,
             {"ttl": "1h"}),
    Scenario("main_1h_sub_5m", "cache", "the main conversation's writes with a 1-hour TTL, subagents' with 5 minutes",
             _TTL_RULE + "; Claude Code: promptCacheTtl and subagentPromptCacheTtl (reported for 2.1.243)",
             ANTHROPIC_CACHING, TTL_CARRIES, {"ttl": "5m"}, ClientCache(main_ttl="1h", subagent_ttl="5m")),
    Scenario("main_5m_sub_1h", "cache", "the main conversation's writes with a 5-minute TTL, subagents' with 1 hour",
             _TTL_RULE + "; Claude Code: promptCacheTtl and subagentPromptCacheTtl (reported for 2.1.243)",
             ANTHROPIC_CACHING, TTL_CARRIES, {"ttl": "5m"}, ClientCache(main_ttl="5m", subagent_ttl="1h")),
    Scenario("ttl_mixed", "cache", "1-hour TTL on the system/tools breakpoint, 5 minutes on the conversation",
             "Anthropic: up to 4 breakpoints per request; TTLs may be mixed when 1-hour entries come before "
             "5-minute ones (the system prefix is first)", ANTHROPIC_CACHING, TTL_CARRIES,
             {"ttl": "5m"}, ClientCache(system_ttl="1h")),
    Scenario("keepalive_15m", "cache",
             "5-minute TTL and a keep-alive ping every 270 s of idle time, for up to 15 minutes after a request",
             "Anthropic: a hit refreshes the entry's lifetime at no cost; a ping is a real request (cache read + "
             "8 input + 1 output tokens), charged even when no request follows", ANTHROPIC_CACHING, TTL_CARRIES,
             {"ttl": "5m"}, ClientCache(keepalive=KeepAlive(270.0, 900.0))),
    Scenario("keepalive_60m", "cache",
             "5-minute TTL and a keep-alive ping every 270 s of idle time, for up to 60 minutes after a request",
             "as keepalive_15m", ANTHROPIC_CACHING, TTL_CARRIES,
             {"ttl": "5m"}, ClientCache(keepalive=KeepAlive(270.0, 3600.0))),
    Scenario("online_1h_after_idle", "cache",
             "online rule: 5-minute writes until the stream's first idle gap over 5 minutes, 1-hour writes after",
             _TTL_RULE + "; the rule uses only gaps already seen", ANTHROPIC_CACHING, TTL_CARRIES,
             {"ttl": "5m"}, ClientCache(ttl_rule="first_idle")),
    Scenario("no_thinking_switch", "client", "the client never switches extended thinking on or off mid-session",
             "Anthropic: changing thinking parameters invalidates message cache breakpoints (system and tools "
             "stay cached)", ANTHROPIC_THINKING, _BREAK_CARRIES, {"thinking_switch": "ignore"}),
    Scenario("no_task_turns", "client", "Claude Code 2.1.32-2.1.37 does not re-render after task-tool turns",
             "client behaviour seen in the logs (docs/replay-model.md, \"Task turns\")", REPLAY_MODEL,
             _BREAK_CARRIES, {"task_turns": "ignore"}),
    Scenario("no_skill_turns", "client", "the client does not re-render the conversation around skill loads",
             "client behaviour seen in the logs (docs/replay-model.md, \"Skill turns\")", REPLAY_MODEL,
             _BREAK_CARRIES, {"skill_turns": "ignore"}),
    Scenario("no_tool_search", "client", "Claude Code 2.1.119+ loads deferred tools without changing the tools "
             "(a stream's first ToolSearch call)", "client behaviour seen in the logs: the provider reports "
             "tools_changed after it (docs/replay-model.md, \"Rules earned on later versions\")", REPLAY_MODEL,
             _BREAK_CARRIES, {"tool_search": "ignore"}),
    Scenario("no_resume_rerender", "client", "a resumed session keeps the conversation's cached prefix",
             "Claude Code renders project context again when a session starts (code.claude.com/docs/en/"
             "prompt-caching); docs/replay-model.md, \"Resumed sessions\"", REPLAY_MODEL, _BREAK_CARRIES,
             {"resume": "ignore"}),
    Scenario("openai_caching", "provider",
             "OpenAI's automatic caching on the same requests, at each model's own rates",
             "OpenAI: caching is automatic for prompts of 1,024 tokens or more, in 128-token increments, with no "
             "write charge; cached prefixes stay 5-10 minutes idle, at most an hour (the project's OpenAI rules: "
             "`openai_retention`, an hour by default, docs/replay-model.md)",
             OPENAI_CACHING, "input totals and outputs only (no breakpoints, so no uncached tail; no client breaks)",
             {"ttl": "log", "thinking_switch": "ignore", "resume": "ignore", "task_turns": "ignore",
              "skill_turns": "ignore", "tool_search": "ignore"}, provider=ProviderRules("openai")),
    Scenario("rates_sonnet_4_5", "price",
             "every Claude request at Claude Sonnet 4.5's rates and 1,024-token minimum",
             "Anthropic pricing: Sonnet 4.5 $3 input / $3.75 5m write / $6 1h write / $0.30 read / $15 output per "
             "MTok; minimum cacheable prompt 1,024 tokens (4,096 for Opus 4.5+ and Haiku 4.5)", ANTHROPIC_CACHING,
             "everything the recorded-settings replay takes; output tokens repriced too", rates_as="claude-sonnet-4-5"),
)}
FAMILY = [n for n, s in SCENARIOS.items() if s.family == "cache"]
BOUND = "bound_offline"


class UnknownScenario(ValueError):
    pass


def pick(names: list[str] | tuple[str, ...]) -> list[str]:
    """The scenarios to run (all of them when none is named); an unknown name is an error that
    says which known name it resembles."""
    if not names:
        return [*SCENARIOS, BOUND]
    known = [*SCENARIOS, BOUND]
    for n in names:
        if n not in known:
            close = difflib.get_close_matches(n, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UnknownScenario(f"unknown scenario {n!r}{hint} (known: {', '.join(known)})")
    return list(dict.fromkeys(names))


def model_only(opts: ReplayOptions) -> ReplayOptions:
    """The recorded settings on the predictive variant: no observed evictions or writes."""
    return ReplayOptions(replace(opts.cache, observed_evictions="none"), opts.prices, False, None)


def _stream_figs(st: Stream, vocab: Vocab, opts: ReplayOptions, detail: bool = False):
    figs = {f: 0.0 for f in SESSION_FIGURES}
    det = {c: [] for c in ("stream_id", "req_idx", *REQUEST_FIGURES)} if detail else None
    replay_stream(st, vocab, Policy(), opts, figs, det)
    return figs, det


# --- the hindsight plan --------------------------------------------------------------------

def hindsight_plan(st: Stream, vocab: Vocab, prices: PriceTable, d5: dict, d1h: dict, cfg: CacheConfig):
    """Per request the TTL of its write and whether to ping through the idle gap before it,
    chosen with hindsight from the stream's replays with every write 5m (``d5``) and 1h
    (``d1h``, per-request detail).

    For the gap before request k (idle ``g`` since request k-1 was sent), keeping the cache
    alive saves ``v_k`` = (what request k pays with 5m writes) - (with 1h writes, less the 1h
    write premium) — the rewrite an expiry causes. Pinging through costs a read of the prefix
    every TTL less 30 s. A write's 1-hour premium (1h - 5m write price on the tokens it wrote)
    pays when the gaps its entry must survive (up to the next write) are worth more than the
    cheaper of pinging and expiring for each. Gaps longer than an hour are pinged through only
    where that is cheaper than the rewrite."""
    n = st.n_requests
    send = send_times(st, cfg)
    models = vocab.models
    ttls = [FIVE_MIN_MS] * n
    pings = [False] * n
    c5, c1h = d5["cost"], d1h["cost"]
    value, p5, p1h = [0.0] * n, [math.inf] * n, [math.inf] * n
    for k in range(1, n):
        m = st.r_model[k]
        if m < 0 or st.r_model[k - 1] != m or send[k] < 0 or send[k - 1] < 0:
            continue
        r = prices.rates(models[m])
        g = send[k] - send[k - 1]
        w1 = d1h["cache_write_1h"][k]
        # request k under 1h writes, priced as if its own write were 5m: the premium is the write's choice
        hit = c1h[k] - w1 * (r.cache_write_1h - r.cache_write_5m) / 1e6
        value[k] = max(0.0, c5[k] - hit)
        prefix = d1h["cache_read"][k] + d1h["cache_write_5m"][k] + w1
        ping = r.cost(8.0, 0.0, 0.0, prefix, 1.0)
        p5[k] = max(0, math.ceil(g / (TTL_MS["5m"] - PING_MARGIN_MS)) - 1) * ping if g > FIVE_MIN_MS else 0.0
        p1h[k] = max(0, math.ceil(g / (TTL_MS["1h"] - PING_MARGIN_MS)) - 1) * ping if g > ONE_HOUR_MS else 0.0
    writers = [k for k in range(n) if d1h["cache_write_1h"][k] > 0] + [n]
    for j, nxt in zip(writers, writers[1:]):
        m = st.r_model[j]
        r = prices.rates(models[m])
        premium = d1h["cache_write_1h"][j] * (r.cache_write_1h - r.cache_write_5m) / 1e6
        gaps = range(j + 1, min(nxt + 1, n))
        short = sum(min(value[k], p5[k]) for k in gaps)
        long = premium + sum(min(value[k], p1h[k]) for k in gaps)
        if long < short:
            # the requests up to the next write share the choice: the turn-end writes between
            # them (free in the model: the client's unlogged request) take their request's TTL
            for k in range(j, min(nxt, n)):
                ttls[k] = ONE_HOUR_MS
            for k in gaps:
                pings[k] = 0 < p1h[k] < value[k]
        else:
            for k in gaps:
                pings[k] = 0 < p5[k] < value[k]
    return ttls, pings


# --- the run ----------------------------------------------------------------------------

def _session_groups(ds: Dataset) -> dict[str, str]:
    """Per session, the TTL its log recorded writes with: "1h" where most written tokens are 1h
    writes, "5m" where most are 5m, "none" without writes."""
    out = {}
    for s in ds.sessions:
        w5 = sum(sum(st.r_w5) for st in s.streams)
        w1h = sum(sum(st.r_w1h) for st in s.streams)
        out[s.session_key] = "none" if w5 + w1h == 0 else "1h" if w1h > w5 else "5m"
    return out


def _recorded(ds: Dataset, prices: PriceTable) -> dict[str, float]:
    from replay.experiments.validate import recorded_cost

    return {k: v["cost"] for k, v in recorded_cost(ds, None, prices)["per_session"].items()}


def _usage_cost(s, det: dict) -> float:
    """A session's simulated cost over the requests with recorded usage (as ``validate``)."""
    usage = [st.r_has_usage[k] for st in s.streams for k in range(st.n_requests)]
    if not any(usage):
        return float(sum(det["cost"]))
    return float(sum(c for c, ok in zip(det["cost"], usage) if ok))


def replay_scenarios(ds: Dataset, opts: ReplayOptions, names: list[str] | None = None,
                     on_step=None, jobs: int = 1) -> dict[str, Any]:
    """Replay ``ds`` under the recorded settings and each named scenario (all by default) and the
    offline bound, every one model-only. ``opts``: the recorded settings (its
    ``observed_evictions`` is ignored). Returns per session (in the order of ``session_keys``)
    each setting's cost and cache-write tokens, the totals, the recorded bill, the recorded TTL
    group and the model-only cost over the requests with usage of the recorded settings and of
    every write 5m / 1h (the fidelity check's inputs); `analysis.whatif` compares them.
    ``jobs`` > 1: sessions are replayed in that many local worker processes (joblib), in
    contiguous chunks merged in session order, so the result is the same as with one."""
    if jobs > 1 and len(ds.sessions) > 1:
        return _parallel(ds, opts, names, on_step, jobs)
    t0 = time.perf_counter()
    chosen = pick(names or [])
    base_opts = model_only(opts)
    vocab = ds.vocab
    keys = [s.session_key for s in ds.sessions]
    need_bound = BOUND in chosen
    # the scenarios to replay: the chosen ones, and the family and both TTLs for the bound
    run = [n for n in chosen if n != BOUND]
    if need_bound:
        run = list(dict.fromkeys([*run, *FAMILY]))
    costs: dict[str, list[float]] = {n: [] for n in ["recorded", *run]}
    writes: dict[str, list[float]] = {n: [] for n in costs}
    totals: dict[str, dict[str, float]] = {n: dict.fromkeys(("cost", "cache_read", "cache_write", "uncached",
                                                             "input_total", "output", "keepalive_pings"), 0.0)
                                           for n in [*costs, BOUND]}
    bound_cost, bound_writes = [], []
    picked = {n: 0 for n in ["plan", "recorded", *FAMILY]}
    base_usage_cost: dict[str, float] = {}
    forced_usage_cost: dict[str, dict[str, float]] = {"5m": {}, "1h": {}}
    scen_opts = {n: SCENARIOS[n].options(base_opts) for n in run}
    det_opts = {t: SCENARIOS[f"ttl_{t}"].options(base_opts, detail=True) for t in ("5m", "1h")}
    base_det = replace(base_opts, detail=True)
    for s in ds.sessions:
        sess = {n: dict.fromkeys(totals["recorded"], 0.0) for n in [*costs, BOUND]}
        dets_sess: dict[str, list] = {"recorded": [], "5m": [], "1h": []}
        for st in s.streams:
            per: dict[str, dict] = {}
            f, d = _stream_figs(st, vocab, base_det, detail=True)
            per["recorded"] = f
            dets_sess["recorded"].append(d)
            d5 = d1h = None
            for t in ("5m", "1h"):
                f, d = _stream_figs(st, vocab, det_opts[t], detail=True)
                dets_sess[t].append(d)
                if f"ttl_{t}" in scen_opts:
                    per[f"ttl_{t}"] = f
                d5, d1h = (d, d1h) if t == "5m" else (d5, d)
            for n in run:
                if n not in per:
                    per[n] = _stream_figs(st, vocab, scen_opts[n])[0]
            if need_bound:
                plan = hindsight_plan(st, vocab, base_opts.prices, d5, d1h, base_opts.cache)
                popts = ReplayOptions(replace(base_opts.cache, ttl="5m"), base_opts.prices, False,
                                      WhatIf(client=ClientCache(ttl_rule="plan", plan=lambda _st, p=plan: p)))
                cand = {"plan": _stream_figs(st, vocab, popts)[0], "recorded": per["recorded"],
                        **{n: per[n] for n in FAMILY}}
                best = min(cand, key=lambda n: cand[n]["cost"])
                picked[best] += 1
                per[BOUND] = cand[best]
            for n, f in per.items():
                _add(sess[n], f)
        for n in costs:
            costs[n].append(sess[n]["cost"])
            writes[n].append(sess[n]["cache_write"])
        if need_bound:
            bound_cost.append(sess[BOUND]["cost"])
            bound_writes.append(sess[BOUND]["cache_write"])
        for n in totals:
            for f in totals[n]:
                totals[n][f] += sess[n][f]
        base_usage_cost[s.session_key] = _usage_cost(s, _merge(dets_sess["recorded"]))
        for t in ("5m", "1h"):
            forced_usage_cost[t][s.session_key] = _usage_cost(s, _merge(dets_sess[t]))
        if on_step:
            on_step(s)
    if need_bound:
        costs[BOUND], writes[BOUND] = bound_cost, bound_writes
    return {"names": chosen, "session_keys": keys, "requests": ds.n_requests, "costs": costs, "writes": writes,
            "totals": totals, "chosen_per_stream": picked if need_bound else None,
            "recorded": _recorded(ds, base_opts.prices), "groups": _session_groups(ds),
            "usage_cost": {"recorded": base_usage_cost, **forced_usage_cost},
            "seconds": time.perf_counter() - t0}


def _add(acc: dict, f: dict) -> None:
    acc["cost"] += f["cost"]
    acc["cache_read"] += f["cache_read"]
    acc["cache_write"] += f["cache_write_5m"] + f["cache_write_1h"]
    acc["uncached"] += f["uncached"]
    acc["input_total"] += f["input_total"]
    acc["output"] += f["output"]
    acc["keepalive_pings"] += f.get("keepalive_pings", 0.0)


def _merge(dets: list[dict]) -> dict:
    return {"cost": [c for d in dets for c in d["cost"]]}


def _chunk(ds: Dataset, opts: ReplayOptions, names: list[str] | None) -> dict[str, Any]:
    return replay_scenarios(ds, opts, names)


def _parallel(ds: Dataset, opts: ReplayOptions, names: list[str] | None, on_step, jobs: int) -> dict[str, Any]:
    """``replay_scenarios`` over contiguous chunks of sessions in ``jobs`` worker processes.
    A session's replay depends on no other session (the dataset's shared system prefixes are in
    its arrays already), so the chunks' results only need concatenating in order."""
    from joblib import Parallel, delayed

    t0 = time.perf_counter()
    n = len(ds.sessions)
    size = max(1, math.ceil(n / (jobs * 4)))  # a few chunks per worker: long sessions do not idle the others
    chunks = [ds.sessions[i:i + size] for i in range(0, n, size)]
    par = Parallel(n_jobs=jobs, return_as="generator", batch_size=1)
    parts = []
    for chunk, part in zip(chunks, par(delayed(_chunk)(Dataset(ds.name, c, ds.vocab), opts, names) for c in chunks)):
        parts.append(part)
        if on_step:
            for sess in chunk:
                on_step(sess)
    out = {k: parts[0][k] for k in ("names",)}
    out["session_keys"] = [k for p in parts for k in p["session_keys"]]
    out["requests"] = sum(p["requests"] for p in parts)
    for key in ("costs", "writes"):
        out[key] = {name: [v for p in parts for v in p[key][name]] for name in parts[0][key]}
    out["totals"] = {name: {f: sum(p["totals"][name][f] for p in parts) for f in fig}
                     for name, fig in parts[0]["totals"].items()}
    picked = parts[0]["chosen_per_stream"]
    out["chosen_per_stream"] = None if picked is None else {
        k: sum(p["chosen_per_stream"][k] for p in parts) for k in picked}
    out["recorded"] = {k: v for p in parts for k, v in p["recorded"].items()}
    out["groups"] = {k: v for p in parts for k, v in p["groups"].items()}
    out["usage_cost"] = {g: {k: v for p in parts for k, v in p["usage_cost"][g].items()}
                         for g in parts[0]["usage_cost"]}
    out["seconds"] = time.perf_counter() - t0
    return out
