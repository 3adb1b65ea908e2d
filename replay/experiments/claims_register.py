"""The claims register (issue 28 item 2): every published claim ctxreplay can test, one entry each.

A claim is one `Claim` in ``REGISTER``: the claim as published (text, figure, where), the
conditions it was made under, the metric that states it (``claims_metrics``: a run metric
comparing a policy run with its baseline, or a trace metric read from the trace arrays), the
policy and parameters that replay it, and the rule that turns the measurement into a verdict.
Evaluating it (`evaluate`) gives, on the user's logs:

* ``own_metric``: the figure in the claim's own metric (tokens sent with no cache, devboy's
  chars/4 accounting, tokens per 500 lines, ...), with its 95% paired bootstrap interval;
* ``cost``: the billed cost the policy saves against its baseline with prompt caching priced,
  in dollars and percent, with its 95% interval (for a run against the no-op, the interval of
  ``ctxreplay compare``);
* ``verdict``: "holds", "does not hold here" or "not testable offline", with the reason; and
  ``with_caching``: what the cost figure says ("saves", "costs more", "no distinguishable
  change"). A claim whose published figure is a cost saving (``cost_claim``) is judged in
  dollars as well (``cost_verdict``); a claim comparing two settings also gives the cost of
  its setting against the no-op (``cost_vs_noop``).

Rules (the published figure is a range [low, high]; a point figure has low = high):
    at_least      holds when the interval's high end reaches the published low (the logs
                  cannot reject a saving that large); else does not hold here.
    range         holds when the interval overlaps the published range.
    positive      holds when the interval's low end is above 0 (a distinguishable effect in
                  the claimed direction).
    negative      holds when the interval's high end is below 0.
    not_positive  holds unless the interval's low end is above 0 (no distinguishable increase).
    not_testable  solve rates, agent behaviour: a replay keeps the agent's actions fixed.

A claim whose policy is not registered in this build keeps its entry with verdict None.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from replay.experiments import claims_cache as cc
from replay.experiments import claims_metrics as cm

NOOP = ("noop", {})
CT = "arXiv 2508.21433 (Lindenbauer et al., \"The Complexity Trap\", JetBrains Research, NeurIPS 2025 DL4C)"
CT_CONDITIONS = ("SWE-agent on SWE-bench Verified (500 instances), cost per instance in dollars at the models' "
                 "API prices with no cache-write premium (Qwen3-32B: no discount on cached input; Qwen3-Coder-480B: "
                 "cached input at 0.4x), non-thinking models Qwen3-32B, Qwen3-Coder-480B, Gemini 2.5 Flash")
NOT_OFFLINE = ("a replay keeps the agent's actions fixed: it cannot see whether the agent would solve the task, "
               "or take other steps, with a different context")


@dataclass(frozen=True)
class Claim:
    id: str
    source: str
    claim: str                        # as published (quoted or closely paraphrased)
    published: str                    # where
    conditions: str                   # the corpus/model/setting the figure was measured under
    rule: str                         # see the module docstring
    metric: str | None = None         # a key of cm.RUN_METRICS or cm.TRACE_METRICS
    figure: tuple[float, float] | None = None   # published figure in the metric's unit
    policy: str | None = None         # the policy that replays it (its cost figure)
    params: dict = field(default_factory=dict)
    baseline: tuple[str, dict] = NOOP  # what the run is compared with
    note: str = ""                    # the metric's relation to the claim, caveats
    cost_claim: bool = False          # the published figure is a cost saving: judged in dollars too
    paper_prices: bool = False        # also priced as the source priced it (claims_cache.PAPER_PRICINGS)
    lever: str | None = None          # a cache-advice claim: the re-priced setting (metric in CACHE_METRICS)



def _subagent_ttl_claim(id: str, claim: str, rule: str, metric: str, figure: tuple[float, float] | None = None,
                        *, note: str) -> Claim:
    """A claim of the feature request for subagent TTL control, its cost re-priced with subagents at 1h."""
    return Claim(id, "subagent_ttl_request", claim, "a Claude Code feature request for subagent TTL control",
                 "the requester's Claude Code usage", rule, metric, figure, lever="sub_1h", note=note)


REGISTER: tuple[Claim, ...] = (
    Claim("devboy_l0_dedup", "devboy",
          "L0 content-hash dedup recovers about 33% of total tokens on anonymized Claude Code logs (35.01% saved "
          "with L1/L2, L0 hit rate 29.9% of events)",
          "docs.rs devboy_format_pipeline::dedup module docs (seed 003); meteora-pro/devboy-tools "
          "docs/research/paper-2-mckp-format-adaptive.md", "1,529 Claude Code sessions, 144,658 tool-result "
          "events, each result counted once, chars/4 tokens, no cache pricing", "at_least", "devboy_l0",
          (33.0, 35.01), "devboy_lru", {"eviction": "fifo", "verbosity": "verbose"},
          note="own metric: devboy's simulator accounting (FIFO of 5 per session log, >= 200 chars, 15-token "
               "hints; replay/experiments/claims_own.py); cost: devboy_lru at the simulator's setting"),
    Claim("devboy_recent_3", "devboy",
          "95% of real-world savings concentrate in the most recent 3 responses (why the LRU holds 5)",
          "docs.rs devboy_format_pipeline::dedup module docs (seed 003)", "devboy's Claude Code corpus",
          "at_least", "devboy_recent", (95.0, 95.0), "devboy_lru", {"capacity": 3},
          note="own metric: devboy's accounting with a FIFO of 3 against an unbounded cache; cost: devboy_lru "
               "with capacity 3"),
    Claim("jp067_500_lines", "jp_067",
          "Each redundant delivery of a 500-line source file costs roughly 2,000-3,000 tokens",
          "JP RFD 067 resource deduplication (seed 000)", "JP's tokenizer-agnostic estimate, no cache pricing",
          "range", "tokens_per_500_lines", (2000.0, 3000.0), "jp_resource_dedup", {},
          note="own metric: 500 x the token-weighted tokens per line of the ranged file reads; cost: "
               "jp_resource_dedup at its defaults"),
    Claim("jp036_compaction", "jp_036",
          "Higher cost: every cached and uncached input token is billed; compaction reduces the conversation "
          "(strip reasoning, dedup tools, strip tool results, summarize above 50% of the window)",
          "JP RFD 036 conversation compaction, Motivation (seed 001)", "JP conversations, no figure published",
          "positive", "context_tokens_saved", None, "jp_compaction", {},
          note="own metric: context tokens sent (no cache); the claim's money side is the cost figure"),
    Claim("cupel_dedup", "cupel",
          "Deduplication prevents the same content from appearing multiple times in the context window",
          "Cupel context pipeline specification, stage 3 Deduplicate (seed 002)", "any context pipeline; no "
          "figure published", "positive", "context_tokens_saved", None, "cupel_dedup", {}),
    Claim("ai_experiments_bust", "ai_experiments",
          "Using deduplicators busts the cache: trimming stale results on every request costs more than it "
          "saves while the conversation is short (cache hits ~90% cheaper)",
          "ai-experiments deduplicator analysis, Critical Tradeoff (seed 004)", "Anthropic/OpenAI prefix "
          "caching; a worked example, no corpus", "negative", "cost_saved", None, "supersede",
          {"trigger_tokens": 0}, note="supersede with no size trigger (the seed's deduplicators)"),
    Claim("ai_experiments_large", "ai_experiments",
          "Add deduplicators later, when conversations grow large (exceed 50-75% of the context window) and "
          "token costs exceed cache-miss costs",
          "ai-experiments deduplicator analysis, Recommendation (seed 004)", "a 200k window: trim only above "
          "100,000 tokens (50%)", "positive", "cost_saved", None, "supersede", {"trigger_tokens": 100_000}),
    Claim("anthropic_84pct_tokens", "anthropic",
          "In a 100-turn web search evaluation, context editing enabled agents to complete workflows that would "
          "otherwise fail due to context exhaustion, while reducing token consumption by 84%",
          "Anthropic, \"Managing context on the Claude Developer Platform\" (2025-09-29)",
          "a 100-turn web-search agent evaluation; a token figure, not a cost figure", "at_least",
          "context_tokens_saved", (84.0, 84.0), "anthropic_clear_tool_uses", {},
          note="clear_tool_uses_20250919 at its documented defaults (trigger 100,000, keep 3)"),
    Claim("anthropic_cache_invalidation", "anthropic",
          "Clearing tool results invalidates cached prompt prefixes (clear_at_least exists so an activation "
          "clears enough to be worth the invalidation)", "Anthropic context editing docs "
          "(build-with-claude/context-editing)", "Anthropic prompt caching", "positive", "cache_writes_added",
          None, "anthropic_clear_tool_uses", {}),
    Claim("claude_code_microcompact_cold", "claude_code",
          "Microcompact clears old tool results only after an idle gap of more than 60 minutes, when the prompt "
          "cache has expired anyway, so the clearing costs no cache re-write",
          "Claude Code time-based microcompact (DESIGN.md section 4, docs/policies.md)",
          "Claude Code with 5-minute or 1-hour cache entries", "not_positive", "cache_writes_added", None,
          "claude_code_microcompact", {}),
    Claim("complexity_trap_cost", "complexity_trap",
          "Observation masking with the last M = 10 observations cuts cost per instance by 50.9-56.1% for "
          "non-thinking models (Qwen3-32B $1.12 -> $0.55, 50.9%; Qwen3-Coder-480B $1.29 -> $0.61, 52.7%; Gemini "
          "2.5 Flash $0.41 -> $0.18, 56.1%; the 57.1% sometimes quoted is Gemini 2.5 Flash with thinking)",
          CT + "; Table 1, reference/paper_results.py", CT_CONDITIONS, "at_least", "context_tokens_saved",
          (50.9, 56.1), "observation_masking", {"window": 10, "polling": 1}, cost_claim=True, paper_prices=True,
          note="own metric: context tokens sent with no cache (what masking shrinks); the published figure is "
               "dollars per instance priced with no cache-write premium, so cost_verdict judges the same rule on "
               "the dollars saved with prompt caching priced, and cost_paper_prices under the paper's own pricing "
               "(cache writes at 1.0x input, cached input at 0.4x or at 1.0x)"),
    Claim("swe_agent_masking_breaks_cache", "swe_agent",
          "LastNObservations will break prompt caching: every time the history changes, everything after it "
          "must be cached again", "SWE-agent sweagent/agent/history_processors.py, LastNObservations docstring",
          "Anthropic prompt caching with cache_control on the last messages", "positive", "cache_writes_added",
          None, "observation_masking", {"window": 10, "polling": 1}),
    Claim("swe_agent_polling", "swe_agent",
          "polling keeps between n and n + polling observations so the history changes less often: fewer "
          "cache re-writes", "SWE-agent sweagent/agent/history_processors.py, LastNObservations.polling",
          "Anthropic prompt caching", "positive", "cache_writes_saved", None, "observation_masking",
          {"window": 10, "polling": 5}, baseline=("observation_masking", {"window": 10, "polling": 1}),
          note="masking every 5 steps against masking every step (both M = 10)"),
    Claim("ttl_main_1h_sub_5m", "ttl_blog",
          "Set promptCacheTtl to 1h and leave subagents on 5m: the main conversation is resumed after long "
          "pauses, subagents finish within minutes", "a blog post on Claude Code's cache TTL setting "
          "(October 2026)", "Claude Code with Anthropic prompt caching (1-hour writes 2x input, 5-minute 1.25x)",
          "cheapest", "ttl_split", lever="main_1h_sub_5m",
          note="re-priced recorded requests (replay/experiments/whatif_recorded.py): main streams at ttl_1h, "
               "subagent streams (kind not main) at ttl_5m, against the recorded settings, every write at 1h and "
               "every write at 5m; holds when it is cheaper than all three (every interval above 0); cost: "
               "against the recorded settings"),
    _subagent_ttl_claim(
        "subagent_writes_share",
        "Subagent cache writes are 33% of cost (a feature request for control over the subagents' cache TTL)",
        "at_least", "subagent_write_share", (33.0, 33.0),
        note="own metric: recorded dollars of the cache writes of streams whose kind is not main (subagent, "
             "sidechain, progress_subagent) over the recorded cost; cost: subagents at 1h, main as recorded "
             "(re-priced recorded requests)"),
    _subagent_ttl_claim(
        "subagent_recache_prefix",
        "Same-type agents launched 6-10 minutes apart re-cache identical system prompts (their 5-minute "
        "entries have expired)", "positive", "subagent_recache",
        note="own metric: share of subagent first requests writing a system prefix that another subagent's "
             "first request (same model, overhead within 1%: text is not stored) wrote 5-60 minutes earlier; "
             "cost: subagents at 1h, main as recorded"),
    Claim("ttl_march_2026_5m", "ttl_change_2026",
          "The March 2026 move from 1-hour to 5-minute cache TTLs raised costs by 20-32%",
          "reports of Claude Code's March 2026 default TTL change", "users' Claude Code bills before and after",
          "range", "ttl_1h_to_5m", (20.0, 32.0), lever="ttl_5m",
          note="the sessions recorded with 1-hour writes (more than half their written tokens) re-priced with "
               "every write at 5 minutes (ttl_5m); own metric: percent more cost; cost: dollars saved (negative = "
               "costs more)"),
    Claim("complexity_trap_solve_rate", "complexity_trap",
          "Observation masking matches, and sometimes slightly exceeds, the solve rate of LLM summarization "
          "(Qwen3-Coder-480B: 53.4% raw -> 54.8% masked)", CT, CT_CONDITIONS, "not_testable"),
    Claim("complexity_trap_hybrid", "complexity_trap",
          "Combining LLM summarization with observation masking cuts cost by a further 7% (vs masking) and 11% "
          "(vs summarization)", CT, "Qwen3-Coder-480B on a 50-instance subset", "not_testable",
          note="needs the trajectories the agent takes under summarization (the paper's trajectory elongation)"),
    Claim("anthropic_memory_performance", "anthropic",
          "Memory tool with context editing improved agentic-search performance by 39% over baseline; context "
          "editing alone by 29%", "Anthropic, \"Managing context on the Claude Developer Platform\" "
          "(2025-09-29)", "Anthropic's internal agentic-search evaluation", "not_testable"),
)


def specs(register=REGISTER) -> list[tuple[str, dict]]:
    """Every (policy, params) the register replays, baselines included, registered policies only."""
    from replay.policies import REGISTRY

    out: list[tuple[str, dict]] = []
    for c in register:
        for s in ((c.policy, c.params), c.baseline):
            if s[0] and s[0] != "noop" and s[0] in REGISTRY and s not in out:
                out.append(s)
    return out


NOT_EXERCISED = "not exercised"


def judge(rule: str, figure: tuple[float, float] | None, ivl: dict | None) -> tuple[str | None, str]:
    """(verdict, reason) from the own metric's 95% interval."""
    if rule == "not_testable":
        return "not testable offline", NOT_OFFLINE
    if ivl is None:
        return None, "no figure: the metric has nothing to measure on these logs"
    lo, hi = ivl["low"], ivl["high"]
    span = f"95% interval [{lo:,.2f}, {hi:,.2f}]"
    if rule == "at_least":
        ok = hi >= figure[0]
        return _v(ok), f"{span} {'reaches' if ok else 'stays below'} the published {_fig(figure)}"
    if rule == "range":
        ok = lo <= figure[1] and hi >= figure[0]
        side = "overlaps" if ok else ("lies below" if hi < figure[0] else "lies above")
        return _v(ok), f"{span} {side} the published {_fig(figure)}"
    if rule == "positive":
        return _v(lo > 0), f"{span} " + ("is above 0" if lo > 0 else "includes 0" if hi >= 0 else "is below 0")
    if rule == "cheapest":
        return _v(lo > 0), f"{span} " + ("is above 0: cheaper than every alternative" if lo > 0 else
                                        "includes 0: not distinguishably cheaper" if hi >= 0 else
                                        "is below 0: the alternative is cheaper")
    if rule == "negative":
        return _v(hi < 0), f"{span} " + ("is below 0" if hi < 0 else "includes 0" if lo <= 0 else "is above 0")
    if rule == "not_positive":
        return _v(lo <= 0), f"{span} " + ("shows no increase" if lo <= 0 else "shows an increase")
    raise ValueError(f"unknown rule {rule!r}")


def _v(ok: bool) -> str:
    return "holds" if ok else "does not hold here"


def _fig(f: tuple[float, float]) -> str:
    return f"{f[0]:,.2f}" if f[0] == f[1] else f"{f[0]:,.2f}-{f[1]:,.2f}"


def with_caching(ivl: dict | None) -> str | None:
    if ivl is None:
        return None
    return "saves" if ivl["low"] > 0 else "costs more" if ivl["high"] < 0 else "no distinguishable change"


def _entry(c: Claim) -> dict[str, Any]:
    return {
        "id": c.id, "source": c.source, "claim": c.claim, "published": c.published, "conditions": c.conditions,
        "figure": None if c.figure is None else {"low": c.figure[0], "high": c.figure[1]}, "rule": c.rule,
        "metric": c.metric, "note": c.note or None,
        "policy": None if c.policy is None else {"name": c.policy, "params": c.params},
        "lever": c.lever,
        "baseline": {"name": c.baseline[0], "params": c.baseline[1]} if c.lever is None else
        {"name": "recorded settings (re-priced recorded requests)", "params": {}},
        "own_metric": None, "cost": None, "verdict": None, "reason": None, "with_caching": None,
        "cost_verdict": None, "cost_vs_noop": None, "cost_paper_prices": None}


def _cache_claim(x: dict, c: Claim, got: dict) -> None:
    """Fill a cache-advice claim's entry from its `claims_cache` metric (``got``)."""
    x["cost"] = got.get("cost")
    x["with_caching"] = with_caching((got.get("cost") or {}).get("interval_pct"))
    if not got.get("exercised"):
        x["own_metric"] = {k: got[k] for k in ("value", "interval", "unit", "sessions", "detail")}
        x["verdict"], x["reason"] = NOT_EXERCISED, got.get("why_not") or "the setting changes nothing on these logs"
        return
    x["own_metric"] = {k: got[k] for k in ("value", "interval", "unit", "sessions", "detail")}
    if x["own_metric"]["interval"] is None:
        x["verdict"], x["reason"] = NOT_EXERCISED, "no figure: nothing to measure on these logs"
        return
    x["verdict"], x["reason"] = judge(c.rule, c.figure, x["own_metric"]["interval"])
    comps = (got.get("detail") or {}).get("comparisons")
    if comps:
        x["reason"] += "; " + "; ".join(
            f"vs {v['against']}: {v['saved_pct']:+.2f}% [{v['interval_pct']['low']:+.2f}, "
            f"{v['interval_pct']['high']:+.2f}]" for v in comps.values() if v["saved_pct"] is not None)
    same = (got.get("detail") or {}).get("same_as_split")
    if same:
        x["reason"] += "; priced as the split (not compared): " + ", ".join(same)


def _paper_priced(c: Claim, paper: dict | None, x: dict) -> None:
    """The cost figure under the source's own pricing (``paper``: label -> saving), judged by the claim's rule."""
    if not c.paper_prices or not paper:
        return
    x["cost_paper_prices"] = []
    for label, p in paper.items():
        v, why = judge(c.rule, c.figure, p.get("interval_pct"))
        if x["verdict"] == NOT_EXERCISED:
            v, why = NOT_EXERCISED, x["reason"]
        x["cost_paper_prices"].append({"pricing": label, **p, "verdict": v, "reason": why})


def unchanged(con, base_run: str, run: str) -> bool:
    """True when ``run`` equals ``base_run`` in every session's cost, tokens and cache figures: the
    policy changed nothing on these logs."""
    cols = ("cost", "context_tokens", "tokens_delivered", "uncached", "cache_read", "cache_write_5m",
            "cache_write_1h")
    have = {r[0] for r in con.execute("DESCRIBE run_sessions").fetchall()}
    cols = [c for c in cols if c in have]
    diff = " OR ".join(f"abs(coalesce(b.{c}, 0) - coalesce(r.{c}, 0)) > 1e-9 * greatest(1, abs(coalesce(b.{c}, 0)))"
                       for c in cols)
    n, changed = con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE {diff}) FROM run_sessions b JOIN run_sessions r USING "
        "(session_key) WHERE b.run_id = ? AND r.run_id = ?", [base_run, run]).fetchone()
    return bool(n) and not changed


def evaluate(con, ds, iv, run_ids: dict[tuple, dict], register=REGISTER, *, prices=None,
             paper: dict[str, dict] | None = None) -> list[dict[str, Any]]:
    """Every claim of ``register`` measured on ``ds``. ``run_ids``: (policy, params as JSON) ->
    {"run_id", "baseline_run"} of the stored runs (`run_key`); ``iv``: `analysis.intervals`;
    ``prices``: the PriceTable the cache-advice claims re-price the recorded requests with (None:
    the library's); ``paper``: claim id -> {pricing label: saving} under the source's own pricing.

    A claim whose policy run equals its baseline in every session, or whose cache setting changes
    nothing, reads "not exercised" (never "holds"), in dollars as well."""
    from replay.policies import REGISTRY

    out = []
    measured = None
    for c in register:
        x = _entry(c)
        out.append(x)
        if c.rule == "not_testable":
            x["verdict"], x["reason"] = judge(c.rule, None, None)
            x["reason"] = "; ".join(filter(None, [x["reason"], c.note]))
            continue
        if c.lever is not None:
            if measured is None:
                from replay.model.costs import PriceTable

                measured = cc.measure(ds, prices or PriceTable())
            _cache_claim(x, c, cc.CACHE_METRICS[c.metric](iv, measured))
            continue
        missing = [p for p in (c.policy, c.baseline[0]) if p not in REGISTRY]
        if missing:
            x["reason"] = f"policy {missing[0]} is not registered in this build: measured once it is"
            continue
        run = run_ids.get(run_key(c.policy, c.params))
        base = run_ids.get(run_key(*c.baseline)) if c.baseline != NOOP else None
        base_run = (base or {}).get("run_id") if c.baseline != NOOP else (run or {}).get("baseline_run")
        if c.metric in cm.TRACE_METRICS:
            x["own_metric"] = cm.TRACE_METRICS[c.metric](iv, ds)
        elif run and base_run:
            x["own_metric"] = cm.run_metric(con, iv, c.metric, base_run, run["run_id"])
        idle = bool(run and base_run and unchanged(con, base_run, run["run_id"]))
        if run and base_run:
            p = cm.paired(con, iv, base_run, run["run_id"], ("cost",))
            x["cost"] = {"saved_usd": p["baseline_total"] - p["run_total"], "baseline_usd": p["baseline_total"],
                         "saved_pct": p["saved_pct"], "interval_pct": p["interval_pct"], "run_id": run["run_id"],
                         "baseline_run": base_run}
            x["with_caching"] = with_caching(p["interval_pct"])
            if c.cost_claim:
                v, why = judge(c.rule, c.figure, p["interval_pct"])
                if idle:
                    v, why = NOT_EXERCISED, "the policy changed nothing on these logs"
                x["cost_verdict"] = {"verdict": v, "reason": "in dollars with caching: " + why}
            if c.baseline != NOOP and run.get("baseline_run"):
                # a comparison of two settings: where the better one stands against doing nothing
                q = cm.paired(con, iv, run["baseline_run"], run["run_id"], ("cost",))
                x["cost_vs_noop"] = {"saved_usd": q["baseline_total"] - q["run_total"], "saved_pct": q["saved_pct"],
                                     "interval_pct": q["interval_pct"], "baseline_run": run["baseline_run"],
                                     "baseline_usd": q["baseline_total"]}
        if x["own_metric"] is None:
            x["reason"] = "not run yet: `ctxreplay claims` replays it"
            continue
        if idle:
            x["verdict"], x["reason"] = NOT_EXERCISED, (
                f"{c.policy} changed nothing on these logs: every session's cost, tokens and cache figures equal "
                f"its baseline's ({c.baseline[0]})")
        elif x["own_metric"].get("interval") is None:
            x["verdict"], x["reason"] = NOT_EXERCISED, "no figure: the metric has nothing to measure on these logs"
        else:
            x["verdict"], x["reason"] = judge(c.rule, c.figure, x["own_metric"]["interval"])
        _paper_priced(c, (paper or {}).get(c.id), x)
    return out


def run_key(policy: str, params: dict) -> tuple:
    import json

    return policy, json.dumps(params, sort_keys=True)


def stored_runs(rows: list[dict], register=REGISTER) -> dict[tuple, dict]:
    """The run ids `evaluate` needs, from stored runs only (``rows``: `analysis.compare.compare`'s):
    per (policy, params) of the register the latest calibrated run with exactly those settings."""
    import json
    from dataclasses import asdict

    from replay.policies import REGISTRY, build

    out: dict[tuple, dict] = {}
    for name, params in specs(register):
        full = json.loads(json.dumps(asdict(build(name, params).params), default=list))
        hits = [r for r in rows if r["policy"] == name and r["params"] == full and r.get("variant") == "calibrated"
                and r.get("baseline_run")]
        if name in REGISTRY and hits:
            out[run_key(name, params)] = {"run_id": hits[-1]["run_id"], "baseline_run": hits[-1]["baseline_run"]}
    return out
