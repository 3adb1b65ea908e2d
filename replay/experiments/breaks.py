"""Cache breaks: at which request did the prompt cache break, why, and what did it cost?

For every request with usage whose recorded cache read is shorter than the prefix the stream
had cached, one row: where (session, stream, request, time), the idle gap before it, the
tokens paid again and their dollars, the cause, and the block position p where the read stops
with the kind of block there. Only the trace arrays are used (block kinds, sizes, timestamps,
partitions, recorded usage, anchoring residuals, overheads), in the log's own anchored sizes.
The rules are documented in docs/replay-model.md, "Cache breaks"; in short:

* ``cached``: the previous request's read + writes, extended to the previous response's
  final assistant text when this request opens a user turn after it (Claude Code's unlogged
  turn-end request cached up to there; `engine.calibration`), unless the request's client
  version is known and outside the versions that send it (``EARNED_VERSIONS``).
* a break: ``read < cached - max(256, 1% of cached)``.
* re-billed tokens: the request's input positions from the read up to ``min(cached, input)``,
  paid as cache writes (then as uncached input); their cost is what was paid for them minus
  what a cache read of them would have cost, at the request's model rates.
* causes, first match wins, in the order of :data:`CAUSES`. Three are inferences (marked
  ``evidence = "inferred"``, labelled "(inferred)"): the log shows where the read stopped
  within the TTL, not why.

Models with automatic caching (OpenAI, Gemini) are not classified: those providers promise
no hit (on the shared Codex logs 397 of 1,020 requests read more than 256 tokens less than
the previous request's whole prompt).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from replay.engine.calibration import (
    base_prefix,
    earned_version,
    rewrite_causes,
    observed_write_position,
    send_times,
    thinking_switches,
    tolerance,
)
from replay.engine.pricing import stream_ttls
from replay.ingest.trace import BLOCK_KINDS
from replay.model.arrays import KIND_CODE, Dataset, Stream, load_dataset
from replay.model.cache import TTL_MS, CacheConfig
from replay.model.costs import PriceTable, Rates, provider_of

USER_KINDS = frozenset(KIND_CODE[k] for k in ("user_text", "attachment", "image"))
ASSISTANT_KINDS = frozenset(KIND_CODE[k] for k in ("assistant_text", "thinking", "tool_use"))
K_ASSISTANT_TEXT = KIND_CODE["assistant_text"]
MIN_TOLERANCE = 256.0  # a read this close to the cached prefix (or 1% of it) is not a break
REL_TOLERANCE = 0.01
RESIDUAL_DROP = 64.0  # the anchoring residual must shrink by more than this to count as content removed


@dataclass(frozen=True)
class Cause:
    name: str
    evidence: str  # "direct": the trace shows it; "inferred": only where the read stopped; "none"
    rule: str

    @property
    def label(self) -> str:
        return f"{self.name} (inferred)" if self.evidence == "inferred" else self.name


CAUSES = (
    Cause("model_switch", "direct", "the model differs from the previous request's (caches are per model)"),
    Cause("compaction", "direct", "a new compaction partition: a summary replaced the conversation, or /clear "
          "emptied it"),
    Cause("ttl_5m", "direct", "idle from the end of the previous response to the send time exceeds 5 minutes "
          "and the entry was written with the 5-minute TTL"),
    Cause("ttl_1h", "direct", "the same with the 1-hour TTL"),
    Cause("thinking_switch", "direct", "a new user turn of a budget-thinking model (Sonnet/Opus 4 to 4.5, Haiku 4.5, "
          "Sonnet 3.7) whose first response thinks where the previous turn's did not, or the reverse: a change "
          "of thinking parameters invalidates the message cache, the system prefix stays (Anthropic)"),
    Cause("resumed", "direct", "the first request after the log records a resumed session (Claude Code's "
          "synthetic \"No response requested.\" answer, or a SessionStart hook with source resume): the "
          "client rebuilt the project context that opens the conversation, the system prefix stays"),
    Cause("task_turn", "direct", "Claude Code 2.1.32 to 2.1.37: a user turn after a turn that called the task "
          "tools (TaskCreate, TaskUpdate) re-renders the conversation from its first message, the system "
          "prefix stays (docs/replay-model.md)"),
    Cause("skill_turn", "direct", "Claude Code: a user turn that loads a skill by slash command, or the turn "
          "after one that loaded a skill, re-renders the conversation from its first message, the system "
          "prefix stays (docs/replay-model.md)"),
    Cause("tool_search", "direct", "Claude Code 2.1.119+: the request after the stream's first ToolSearch call; "
          "the deferred tool definitions it loads change the tools (the provider says tools_changed)"),
    Cause("system_changed", "inferred", "within the TTL, the read is 0 or shorter than every earlier read of the "
          "system prefix in the stream: the system prompt or tool definitions presumably changed"),
    Cause("content_removed", "direct", "the input is smaller than the blocks say (the anchoring residual shrinks "
          "here): the client dropped earlier content, e.g. thinking"),
    Cause("first_message_rewritten", "inferred", "at a new user turn within the TTL, the read stops at the system "
          "prefix although the conversation entry, written and refreshed by the same requests, should be alive: "
          "the first message (context, system reminders) was presumably re-rendered"),
    Cause("history_rewritten", "inferred", "at a new user turn within the TTL, the read stops at block p inside "
          "the conversation: the client presumably changed the history at p"),
    Cause("unexplained", "none", "anything else (e.g. a miss inside a tool loop within the TTL)"),
)
BY_NAME = {c.name: c for c in CAUSES}

# The provider's stated reasons (``trace.MISS_REASONS``, Claude Code 2.1.119+) and the inferred
# causes that name the same kind of change: an entry that expired or was dropped
# (previous_message_not_found), the messages, the system prompt or tools, the model, or the
# provider itself. A break agrees with its reason when its cause is in the reason's family.
REASON_FAMILY = {
    "previous_message_not_found": "expiry",
    "messages_changed": "messages",
    "system_changed": "system",
    "tools_changed": "system",
    "model_changed": "model",
    "unavailable": "provider",
    "other": "other",
}
CAUSE_FAMILY = {
    "ttl_5m": "expiry", "ttl_1h": "expiry",
    "model_switch": "model",
    "system_changed": "system", "tool_search": "system",
    "compaction": "messages", "thinking_switch": "messages", "resumed": "messages", "task_turn": "messages",
    "skill_turn": "messages", "content_removed": "messages", "first_message_rewritten": "messages",
    "history_rewritten": "messages",
    "unexplained": "provider",
}


def agrees(reason: str | None, cause: str) -> bool | None:
    """Whether an inferred cause names the kind of change the provider's reason names (None
    without a reason)."""
    if reason is None:
        return None
    return REASON_FAMILY.get(reason) == CAUSE_FAMILY.get(cause)


def is_auto_cached(model: str) -> bool:
    """Automatic (best-effort) prompt caching: OpenAI and Gemini models, as in the engine."""
    return provider_of(model) in ("openai", "google")


def _turn_start(st: Stream, pj: int, pos: int) -> int:
    """The first of the user blocks that end the span [pj, pos) when they follow a response
    (a new user turn), else -1."""
    u = pos
    while u > pj and st.bkind[u - 1] in USER_KINDS:
        u -= 1
    return u if pj < u < pos else -1


def _cached(st: Stream, j: int, k: int, u: int) -> float:
    """The prefix the stream had cached before request k (j: the previous request with usage)."""
    cached = float(st.r_read[j] + st.r_w5[j] + st.r_w1h[j])
    same = st.r_partition[j] == st.r_partition[k] and st.r_model[j] == st.r_model[k]
    version = st.r_version[k] if st.r_version else None
    # only where the client sends it: a known version outside the earned range does not
    # (replay.model.cache.EARNED_VERSIONS; at 2.1.63-2.1.199 the provider reports no miss at
    # 128 turn starts that read just the previous request's prefix)
    if u > 0 and same and st.bkind[u - 1] == K_ASSISTANT_TEXT and (version is None or earned_version(version)):
        cached = max(cached, base_prefix(st, k, u))  # the turn-end request cached up to the final text
    return cached


_SEND_CLOCK = CacheConfig()


def _idle_ms(st: Stream, j: int, k: int) -> int | None:
    """From the end of the previous response (its last assistant block, or its request time) to
    the send time of request k: its last input block where that is at most ``MAX_LATENCY_MS``
    before its request time (`engine.calibration.send_times`), else its request time."""
    pj, pos, ts = st.r_pos[j], st.r_pos[k], st.ts
    last_use = st.r_ts[j]
    b = pj
    while b < pos and (ts[b] < 0 or st.bkind[b] in ASSISTANT_KINDS):
        if ts[b] >= 0:
            last_use = max(last_use, ts[b])
        b += 1
    send = send_times(st, _SEND_CLOCK)[k]  # the engine's send clock
    if send < 0:  # the request has no time stamp: its last stamped input block
        inputs = [ts[i] for i in range(pj, pos) if ts[i] >= 0 and st.bkind[i] not in ASSISTANT_KINDS]
        if inputs:
            send = max(max(inputs), last_use)
    if send < 0 or last_use < 0:
        return None
    return max(0, send - last_use)


def _cause(st: Stream, j: int, k: int, *, idle: int | None, ttl: int, sys_ref: float, p: int, turn: bool,
           switch: bool = False, rule: str | None = None) -> str:
    read = float(st.r_read[k])
    s0 = st.part_start.get(st.r_partition[k], 0)
    if st.r_model[j] != st.r_model[k]:
        return "model_switch"
    if st.r_partition[j] != st.r_partition[k]:
        return "compaction"
    if idle is not None and idle > ttl:
        return "ttl_1h" if ttl == TTL_MS["1h"] else "ttl_5m"
    keeps_system = read > 0 and read + max(MIN_TOLERANCE, REL_TOLERANCE * sys_ref) >= sys_ref
    if switch and keeps_system:
        return "thinking_switch"  # the switch keeps the system prefix: a shorter read is another cause
    if rule and keeps_system:
        return rule
    if read == 0 or read + max(MIN_TOLERANCE, REL_TOLERANCE * sys_ref) < sys_ref:
        return "system_changed"
    if st.r_residual and st.r_residual[k] < st.r_residual[j] - RESIDUAL_DROP:
        return "content_removed"
    if turn:
        return "first_message_rewritten" if p <= s0 else "history_rewritten"
    return "unexplained"


def rebilled(rates: Rates, uncached: float, w5: float, w1h: float, read: float, cached: float
             ) -> tuple[float, float]:
    """(tokens, dollars) of a request's input positions from its read up to min(cached, input):
    cached before, paid again as writes (5m and 1h in their recorded proportion) and, past the
    writes, as uncached input; dollars = what was paid minus what reading them would have cost."""
    total = uncached + w5 + w1h + read
    tokens = max(0.0, min(cached, total) - read)
    w = w5 + w1h
    from_writes = min(tokens, w)
    r5 = from_writes * w5 / w if w else 0.0
    r1h = from_writes - r5
    from_uncached = tokens - from_writes
    paid = rates.cost(uncached, w5, w1h, read, 0)
    as_read = rates.cost(uncached - from_uncached, w5 - r5, w1h - r1h, read + tokens, 0)
    return tokens, paid - as_read


def _iso(ms: int) -> str | None:
    if ms < 0:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def classify_stream(st: Stream, models: list[str], prices: PriceTable, tool_names: list[str]
                    ) -> tuple[list[dict[str, Any]], int, int]:
    """(break rows, requests classified, requests of automatically cached models skipped) of
    one stream; ``tool_names``: the dataset's tool names (the task-turn rule needs them)."""
    rows: list[dict[str, Any]] = []
    reasons = st.r_miss or [None] * st.n_requests
    ttls = stream_ttls(st, CacheConfig())
    switches = thinking_switches(st, models, CacheConfig())
    rewrites = rewrite_causes(st, list(tool_names), CacheConfig())
    seen = skipped = 0
    prev = None
    sys_level: dict[int, float] = {}  # per model: the shortest system-prefix read so far in this stream
    for k in range(st.n_requests):
        if not st.r_has_usage[k]:
            continue
        model = st.r_model[k]
        if is_auto_cached(models[model]):
            skipped += 1
            prev = None
            continue
        seen += 1
        ov = st.overhead.get(model, 0.0)
        sys_ref = sys_level.get(model, 0.0)
        read = float(st.r_read[k])
        if 0 < read < ov - max(MIN_TOLERANCE, REL_TOLERANCE * ov):  # stops inside system + tools
            sys_level[model] = min(sys_ref or read, read)
        j, prev = prev, k
        if j is None:
            continue
        row = _classify(st, j, k, models, prices, ttls[j], sys_ref, switches[k], rewrites[k])
        if row is not None:
            rows.append(row)
        elif reasons[k] is not None:  # the provider names a miss the read does not show as a break
            rows.append({"session": st.session_key, "stream": st.stream_id, "request": k,
                         "provider_reason": reasons[k], "not_a_break": True})
    return rows, seen, skipped


def _classify(st: Stream, j: int, k: int, models: list[str], prices: PriceTable, ttl: int, sys_ref: float,
              switch: bool = False, rule: str | None = None) -> dict[str, Any] | None:
    """The row of request k if it is a break (j: the previous request with usage), else None."""
    pos = st.r_pos[k]
    u = _turn_start(st, st.r_pos[j], pos)
    cached = _cached(st, j, k, u)
    read = float(st.r_read[k])
    if read >= cached - max(MIN_TOLERANCE, REL_TOLERANCE * cached):
        return None
    s0 = st.part_start.get(st.r_partition[k], 0)
    ov = st.overhead.get(st.r_model[k], 0.0)
    # the last block boundary the read covers (none past the partition start if it misses the overhead)
    p = s0 if read + tolerance(read) < ov else max(s0, min(pos, observed_write_position(st, k, pos)))
    idle = _idle_ms(st, j, k)
    cause = _cause(st, j, k, idle=idle, ttl=ttl, sys_ref=sys_ref, p=p, turn=u >= 0, switch=switch, rule=rule)
    model = models[st.r_model[k]]
    tokens, cost = rebilled(prices.rates(model), st.r_uncached[k], st.r_w5[k], st.r_w1h[k], read, cached)
    c = BY_NAME[cause]
    return {
        "session": st.session_key, "stream": st.stream_id, "request": k, "time": _iso(st.r_ts[k]),
        "idle_s": None if idle is None else round(idle / 1000, 1), "ttl_s": ttl // 1000, "model": model,
        "cause": cause, "cause_label": c.label, "evidence": c.evidence,
        "tokens": round(tokens), "cost": round(cost, 6),
        "cached": round(cached), "read": int(read), "written": int(st.r_w5[k] + st.r_w1h[k]),
        "uncached": int(st.r_uncached[k]), "p": p, "p_kind": BLOCK_KINDS[st.bkind[p]] if p < pos else None,
        "at_system_prefix": p <= s0, "turn_start": u >= 0,
        "provider_reason": st.r_miss[k] if st.r_miss else None,
        "provider_missed": st.r_miss_tokens[k] if st.r_miss_tokens else None,
        "agrees": agrees(st.r_miss[k] if st.r_miss else None, cause),
        "client_version": st.r_version[k] if st.r_version else None,
    }


def find_breaks(ds: Dataset, prices: PriceTable | None = None) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """(rows in session, stream, request order; counts of requests classified and skipped)."""
    prices = prices or PriceTable()
    rows: list[dict[str, Any]] = []
    counts = {"requests": 0, "not_classified": 0}
    counts["reasons_not_breaks"] = 0
    unflagged: dict[str, int] = {}
    for s in ds.sessions:
        for st in s.streams:
            got, seen, skipped = classify_stream(st, ds.vocab.models, prices, ds.vocab.tool_names)
            for r in got:
                if r.get("not_a_break"):
                    unflagged[r["provider_reason"]] = unflagged.get(r["provider_reason"], 0) + 1
                else:
                    rows.append({"session": r["session"], "agent": s.agent, **r})
            counts["requests"] += seen
            counts["not_classified"] += skipped
    counts["reasons_not_breaks"] = sum(unflagged.values())
    counts["reasons_not_breaks_by_reason"] = dict(sorted(unflagged.items()))
    return rows, counts


def provider_agreement(rows: list[dict[str, Any]], counts: dict[str, Any] | None = None) -> dict[str, Any]:
    """The provider's stated reasons beside the inferred causes: per reason, the breaks that
    carry it, how many of their causes name the same kind of change, and the causes given; the
    breaks in client versions that report reasons (a version with at least one reason) that
    carry none; and the reasons on requests the read does not show as a break."""
    with_reason = [r for r in rows if r.get("provider_reason")]
    reporting = {r.get("client_version") for r in with_reason}
    by_reason = []
    for reason in sorted({r["provider_reason"] for r in with_reason}):
        mine = [r for r in with_reason if r["provider_reason"] == reason]
        causes: dict[str, int] = {}
        for r in mine:
            causes[r["cause"]] = causes.get(r["cause"], 0) + 1
        by_reason.append({"reason": reason, "family": REASON_FAMILY.get(reason), "breaks": len(mine),
                          "agree": sum(1 for r in mine if r["agrees"]),
                          "tokens": sum(r["tokens"] for r in mine), "cost": round(sum(r["cost"] for r in mine), 6),
                          "causes": dict(sorted(causes.items()))})
    silent = [r for r in rows if not r.get("provider_reason") and r.get("client_version") in reporting]
    silent_causes: dict[str, int] = {}
    for r in silent:
        silent_causes[r["cause"]] = silent_causes.get(r["cause"], 0) + 1
    counts = counts or {}
    return {
        "breaks_with_reason": len(with_reason), "agree": sum(1 for r in with_reason if r["agrees"]),
        "agreement": _share(sum(1 for r in with_reason if r["agrees"]), len(with_reason)),
        "by_reason": by_reason, "reporting_versions": sorted(v for v in reporting if v),
        "breaks_without_reason_in_reporting_versions": len(silent),
        "causes_without_reason_in_reporting_versions": dict(sorted(silent_causes.items())),
        "reasons_not_breaks": counts.get("reasons_not_breaks", 0),
        "reasons_not_breaks_by_reason": counts.get("reasons_not_breaks_by_reason", {}),
    }


def _share(part: float, whole: float) -> float | None:
    return part / whole if whole else None


def summarize(rows: list[dict[str, Any]], counts: dict[str, int] | None = None, top: int = 10) -> dict[str, Any]:
    """Totals, the split by cause (count, tokens, cost, share of re-billed tokens) and the top
    sessions by cost. ``named_share``: the share of re-billed tokens with a cause other than
    unexplained; ``named_share_without_first_message``: the same counting
    first_message_rewritten as unexplained; ``named_share_direct``: counting every inferred
    cause as unexplained."""
    tokens = sum(r["tokens"] for r in rows)
    cost = sum(r["cost"] for r in rows)
    by_cause = []
    for c in CAUSES:
        mine = [r for r in rows if r["cause"] == c.name]
        t = sum(r["tokens"] for r in mine)
        by_cause.append({"cause": c.name, "label": c.label, "evidence": c.evidence, "count": len(mine),
                         "tokens": t, "cost": round(sum(r["cost"] for r in mine), 6), "share": _share(t, tokens),
                         "rule": c.rule})
    per_session: dict[str, dict[str, Any]] = {}
    for r in rows:
        s = per_session.setdefault(r["session"], {"session": r["session"], "agent": r.get("agent"), "breaks": 0,
                                                  "tokens": 0, "cost": 0.0, "_by": {}})
        s["breaks"] += 1
        s["tokens"] += r["tokens"]
        s["cost"] += r["cost"]
        s["_by"][r["cause"]] = s["_by"].get(r["cause"], 0) + r["tokens"]
    sessions = sorted(per_session.values(), key=lambda s: (-s["cost"], s["session"]))
    for s in sessions:
        s["main_cause"] = max(s.pop("_by").items(), key=lambda kv: kv[1])[0]
        s["cost"] = round(s["cost"], 6)
    direct = sum(b["tokens"] for b in by_cause if b["evidence"] == "direct")
    unexplained = sum(b["tokens"] for b in by_cause if b["evidence"] == "none")
    first = next(b["tokens"] for b in by_cause if b["cause"] == "first_message_rewritten")
    return {
        **(counts or {}), "breaks": len(rows), "sessions_with_breaks": len(sessions), "tokens": tokens,
        "cost": round(cost, 6), "named_share": _share(tokens - unexplained, tokens),
        "named_share_without_first_message": _share(tokens - unexplained - first, tokens),
        "named_share_direct": _share(direct, tokens), "by_cause": by_cause, "top_sessions": sessions[:top],
        "provider": provider_agreement(rows, counts),
    }


def session_keys(con, dataset: str, prefix: str) -> list[str]:
    """The keys of the dataset's sessions that start with ``prefix``; ValueError if none does."""
    keys = [k for (k,) in con.execute(
        "SELECT session_key FROM sessions WHERE dataset = ? AND starts_with(session_key, ?) ORDER BY 1",
        [dataset, prefix]).fetchall()]
    if not keys:
        raise ValueError(f"no session of dataset {dataset!r} starts with {prefix!r}; `ctxreplay sessions` lists them")
    return keys


def breaks(con, dataset: str, *, prices: PriceTable | None = None, session: str | None = None, top: int = 10,
           slice: dict[str, Any] | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(break rows, summary) of a dataset, or of its sessions whose key starts with ``session``
    and that are in ``slice`` (`replay.experiments.slices.slice_session_keys`: a `StoreError`,
    naming the days the logs cover, when it holds none)."""
    keys = session_keys(con, dataset, session) if session else None
    if slice:
        from replay.experiments.slices import slice_session_keys

        inside = slice_session_keys(con, dataset, slice)
        keys = inside if keys is None else sorted(set(keys) & set(inside))
        if not keys:
            raise ValueError(f"no session of dataset {dataset!r} that starts with {session!r} is in the slice; "
                             "`ctxreplay sessions` with the same options lists the slice's sessions")
    ds = load_dataset(con, dataset, session_keys=keys)
    rows, counts = find_breaks(ds, prices)
    return rows, summarize(rows, counts, top)


def breaks_summary(con, dataset: str, prices: PriceTable | None = None, top: int = 10) -> dict[str, Any]:
    """The corpus-wide summary for the report: totals, split by cause, top sessions."""
    return breaks(con, dataset, prices=prices, top=top)[1]
