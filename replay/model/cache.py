"""Prompt-cache model, one instance per stream.

A request reads from cache the longest prefix that an earlier request wrote, that is
unchanged, still alive (TTL 5 min or 1 h, refreshed on every hit), ends at a breakpoint
the request can reach, and is at least the model's minimum cacheable length. The rest of
its cacheable input is written at the last breakpoint (or sent uncached when shorter than
the minimum). Claude Code's placement — one breakpoint after system prompt + tools, one at
the last message — is the default; the API also finds entries up to ``lookback_blocks``
blocks before a breakpoint.

Entries are identified by (model, partition, boundary position): a boundary is the number
of blocks of the partition the prefix covers; a retroactive change at position p
invalidates every entry whose boundary lies beyond p. The system-prefix entry (overhead
only) belongs to no partition, so it survives compactions.
"""

from __future__ import annotations

import re
from bisect import bisect_left, insort
from operator import itemgetter
from dataclasses import asdict, dataclass

SYS = -1  # partition key of the system+tools prefix entry
OPENAI_MIN = 1024  # OpenAI caches prompts from 1,024 tokens ...
OPENAI_STEP = 128  # ... in 128-token increments
NEVER = 1 << 62  # the expiry of an entry that never expires (``expiry = "never"``)
OPENAI_RETENTION_MS = 10 * 60 * 1000  # in-memory retention: 5-10 minutes of inactivity ...
OPENAI_MAX_RETENTION_MS = 60 * 60 * 1000  # ... "always removed within one hour"
OPENAI_EXTENDED_RETENTION_MS = 24 * 60 * 60 * 1000  # extended retention (prompt_cache_retention = 24h)
OPENAI_RETENTIONS = {"1h": OPENAI_MAX_RETENTION_MS, "10m": OPENAI_RETENTION_MS, "24h": OPENAI_EXTENDED_RETENTION_MS}
# GPT-5.5: every cached count on the shared Codex logs (1,017 of 1,017) is 384 + a multiple of
# 512, and a request reads the previous prompt down to that grid (docs/replay-model.md)
GPT55_STEP, GPT55_BASE = 512, 384
_GPT55 = re.compile(r"(?:^|/)gpt-5\.5(?:$|[-@:])")
TTL_MS = {"5m": 5 * 60 * 1000, "1h": 60 * 60 * 1000}
BREAKPOINTS = ("claude-code", "last-message", "none")
TTLS = ("log", "5m", "1h")
# The client versions the Claude Code rules derived on entire-cli (2.0.x-2.1.42) were earned on;
# on 2.1.63-2.1.199 (claude-code-2026) the turn-end write and skill-turn rules lose against the
# naive predictors, so "earned" applies them only here (inclusive bounds; docs/replay-model.md,
# "Rules earned on later versions").
EARNED_VERSIONS = ((2, 0, 0), (2, 1, 42))
# From this version the first ToolSearch call of a stream changes the tools (tool_search rule).
TOOL_SEARCH_FROM = (2, 1, 119)
WARM_STARTS = ("log", "cold")


@dataclass(frozen=True)
class CacheConfig:
    """How the provider's prompt cache behaves in a replay.

    ttl: "log" takes each request's TTL from the log's recorded 5m/1h write split;
        "5m"/"1h" force one.
    expiry: "ttl": an entry expires when its TTL has passed since its last use. "never": no
        entry ever expires (the TTL still decides whether a write is billed as a 5m or a 1h
        write); no provider behaves so: it is the naive "never breaks" predictor that
        ``validate`` scores the model against.
    breakpoints: "claude-code" (after system+tools and at the last message),
        "last-message" (only at the end), "none" (no caching at all).
    lookback_blocks: how many blocks before a breakpoint the API searches for an entry;
        None = any distance. The API documents about 20, but the shared Claude Code logs
        record hits 30+ blocks behind the last breakpoint (Claude Code marks more than one
        recent message), and a 20-block limit turns them into misses: None fits the logs.
    min_cacheable: minimum cacheable prefix in tokens; None = the model's (1,024 or 4,096).
    warm_start: "log" lets a stream's first request read the prefix the log says was
        already cached (by an earlier session); "cold" starts with an empty cache.
    observed_evictions: "log" replays the cache misses the log records but the model
        cannot explain (the provider evicted or the client changed something invisible):
        entries beyond the block position the recorded read covers are dropped before the
        request, for every policy alike; and where the recorded read covers more than the
        no-op replay holds, the prefix it covers is written (an observed write: a request the
        log does not show). "none" ignores both: the model-only variant.
    turn_end_write: "earned": when a request of a client version within
        ``EARNED_VERSIONS`` (2.0.0 to 2.1.42, the versions the rule was derived and held on)
        opens a user turn after a response that ended in assistant text, the conversation up to
        that text was cached when the response ended (Claude Code sends an unlogged request
        there, its prompt suggestion; 1.0.x did not, and from 2.1.63 the logs show it at 1-3%
        of turn starts outside 2.1.150-2.1.183, docs/replay-model.md, "Rules earned on later
        versions"); with observed evictions on, only where the next recorded read reaches that
        prefix. "v2": every version 2.x or later (the default until 2026-11-28). "always": every
        client and version. "none": no such write.
    thinking_switch: "invalidate": a request that opens a user turn with extended thinking
        switched on or off since the previous turn (visible for models with budget thinking:
        the turn's first response has a thinking block or not) cannot read the message
        entries, which are dropped; the system-prefix entries stay (Anthropic: "changes to
        thinking parameters (enabled/disabled or budget allocation) invalidate message cache
        breakpoints; system prompts and tools remain cached"). "ignore": no such rule.
    resume: "invalidate": the first request after the log records a resumed session (Claude
        Code's synthetic "No response requested." answer, written when it resumes a
        conversation that ended on a user message, as after ``/exit``, or the progress record
        of a SessionStart hook with source "resume") cannot read the message entries; the
        system-prefix entries stay. A new client process rebuilds the project context that
        opens the conversation (Claude Code's docs: it changes when the session starts).
        "ignore": no such rule. (/clear starts a new partition in the trace.)
    task_turns: "invalidate": in Claude Code 2.1.32 to 2.1.37, the first request of a user turn
        after a turn that called the task tools (TaskCreate, TaskUpdate) cannot read the
        message entries; the system-prefix entries stay (evidence: docs/replay-model.md).
        "ignore": no such rule.
    skill_turns: "earned": in Claude Code within ``EARNED_VERSIONS``, the first request of a
        user turn that loads a skill by slash command, and of the turn after one that loaded a
        skill (by slash command or the Skill tool), cannot read the message entries; the
        system-prefix entries stay (evidence: docs/replay-model.md). "invalidate": in every
        version (the default until 2026-11-28; it hurts on 2.1.63-2.1.199). "ignore": no such rule.
    warm_prefix: "kept": the system prefix a stream's first request read warm (cached by other
        sessions of the same client: its system prompt and tools) stays readable however long
        the stream idles, as other sessions keep it warm; "ttl": it expires like the stream's
        own entries. Anthropic (and Gemini) models; OpenAI's is ``openai_warm_prefix``.
    tool_search: "invalidate": from Claude Code 2.1.119 (``TOOL_SEARCH_FROM``), the request
        after the stream's first ToolSearch call cannot read the message entries: the loaded
        tool definitions change the tools (the provider says tools_changed at 24 of the 25
        such requests of claude-code-2026; before 2.1.119 the same call hit 25 of 31 times).
        "ignore": no such rule.
    unknown_times: "log": at a request whose time the log does not give (its stamp is shared
        with another request of the stream: the client rewrote the stamps, as Claude Code
        1.0.x did on a copied conversation) the model cannot judge idle gaps and TTLs, so the
        recorded read decides: its observed eviction applies in every variant. "model": the
        model judges it as if no time had passed.
    system_prefix: where the system-prefix breakpoint ends. "dataset": as "log", and where
        the stream's first request read nothing, at the system prefix other streams of the
        dataset show for the same model and client version (their most frequent first warm
        read), when that is shorter than the overhead. "log": at the part of the overhead the
        stream's first request read from cache when that is less than the whole overhead (the
        rest is first-message context the transcript does not record), else at the overhead;
        "overhead": always at the overhead (tools, system prompt and that context).
    prefix_versions: which client versions a cold stream may borrow its system prefix from
        (``system_prefix`` "earlier" or "dataset"). "nearest": its own, and where no other
        session shows one for its version, the nearest version's (the closest earlier one
        first; a client's system prompt changes little between versions, docs/replay-model.md,
        "System prefix"). "same": its own version only.
    clock: when a request looks up and refreshes the cache. "send": both when it was sent,
        the time of its last input block (the log stamps a request with its response, which
        can come minutes later after long thinking); "end": looked up when sent, and what it
        read or wrote expires a TTL after its response ended (its last logged block: the
        idle gaps of the shared logs split hits from misses at 300 s measured from there,
        docs/replay-model.md, "TTL edge"); "response": both at the request's own time.
    OpenAI automatic caching (models of provider "openai"; evidence: docs/replay-model.md,
    "OpenAI automatic caching"):
    openai_retention: how long an OpenAI prefix stays cached after its last use when ``ttl`` is
        "log": "1h" (in-memory retention is always removed within one hour), "10m" (the
        typical 5-10 minutes of inactivity), "24h" (extended retention).
    openai_increments: "observed": GPT-5.5 reads end at 384 + a multiple of 512 tokens (every
        cached count of the shared Codex logs), other models at 1,024 + a multiple of 128;
        "documented": 1,024 + a multiple of 128 for every model.
    openai_reasoning: "turn": at a request that opens a user turn, the reasoning items of the
        earlier turns are no longer in the prompt (OpenAI discards reasoning after each turn),
        so no entry reaches past the previous turn's first reasoning block; "keep": no rule.
    openai_second_request: "system_only": the second request of a stream reads only the prefix
        other sessions kept warm (its first request's warm read), as on every shared Codex
        log; "model": no rule.
    openai_warm_prefix: "kept": the prefix a stream's first request read warm (cached by other
        sessions: the client's instructions and tools) stays readable however long the stream
        idles; "ttl": it expires like the stream's own entries.
    openai_routing_miss: the share of a request's predicted read beyond the warm prefix that
        is lost to requests routed to a machine without the prefix (an expected value, in the
        model-only variant only: the calibrated one replays the recorded misses); 0 = off.
    """

    ttl: str = "log"
    expiry: str = "ttl"
    breakpoints: str = "claude-code"
    lookback_blocks: int | None = None
    min_cacheable: int | None = None
    warm_start: str = "log"
    observed_evictions: str = "log"
    turn_end_write: str = "earned"
    thinking_switch: str = "invalidate"
    resume: str = "invalidate"
    task_turns: str = "invalidate"
    skill_turns: str = "earned"
    tool_search: str = "invalidate"
    warm_prefix: str = "ttl"
    unknown_times: str = "log"
    system_prefix: str = "earlier"
    prefix_versions: str = "nearest"
    clock: str = "end"
    # OpenAI automatic caching (provider "openai" only)
    openai_retention: str = "1h"
    openai_increments: str = "observed"
    openai_reasoning: str = "turn"
    openai_second_request: str = "system_only"
    openai_warm_prefix: str = "kept"
    openai_routing_miss: float = 0.0

    def __post_init__(self):
        for name, allowed in (("ttl", TTLS), ("expiry", ("ttl", "never")), ("breakpoints", BREAKPOINTS),
                              ("warm_start", WARM_STARTS),
                              ("observed_evictions", ("log", "none")), ("turn_end_write", ("earned", "v2", "always", "none")),
                              ("thinking_switch", ("invalidate", "ignore")), ("resume", ("invalidate", "ignore")),
                              ("task_turns", ("invalidate", "ignore")), ("skill_turns", ("earned", "invalidate", "ignore")),
                              ("tool_search", ("invalidate", "ignore")), ("warm_prefix", ("ttl", "kept")),
                              ("unknown_times", ("log", "model")),
                              ("system_prefix", ("dataset", "earlier", "log", "overhead")),
                              ("prefix_versions", ("nearest", "same")),
                              ("clock", ("send", "end", "response")),
                              ("openai_retention", tuple(OPENAI_RETENTIONS)),
                              ("openai_increments", ("observed", "documented")),
                              ("openai_reasoning", ("turn", "keep")),
                              ("openai_second_request", ("system_only", "model")),
                              ("openai_warm_prefix", ("kept", "ttl"))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"cache.{name} = {getattr(self, name)!r}; allowed: {', '.join(allowed)}")
        if not 0.0 <= self.openai_routing_miss < 1.0:
            raise ValueError("cache.openai_routing_miss must be >= 0 and < 1")
        if self.lookback_blocks is not None and self.lookback_blocks < 0:
            raise ValueError("cache.lookback_blocks must be >= 0")

    def as_dict(self) -> dict:
        return asdict(self)


# What a run stored before a setting existed was replayed with: the behaviour from before its
# rule (runs store their full configuration, so a missing key means an older ctxreplay).
LEGACY_SETTINGS = {"prefix_versions": "same", "turn_end_write": "none", "thinking_switch": "ignore", "system_prefix": "overhead",
                   "clock": "response", "resume": "ignore", "task_turns": "ignore", "unknown_times": "model",
                   "skill_turns": "ignore", "tool_search": "ignore", "warm_prefix": "ttl", "expiry": "ttl", "openai_retention": "10m",
                   "openai_increments": "documented", "openai_reasoning": "keep", "openai_second_request": "model",
                   "openai_warm_prefix": "ttl", "openai_routing_miss": 0.0}


def openai_grid(model: str, cfg: CacheConfig) -> tuple[int, int]:
    """(step, base) of the token counts an OpenAI model reads from cache: a read is the
    largest ``base + step * n`` not above the matched prefix (and at least 1,024)."""
    if cfg.openai_increments == "observed" and _GPT55.search((model or "").lower()):
        return GPT55_STEP, GPT55_BASE
    return OPENAI_STEP, OPENAI_MIN


def stored_settings(cfg: dict) -> dict:
    """A run's stored cache configuration with the settings it predates filled in with the
    behaviour it was replayed with, so that it pairs with (and re-runs as) that behaviour."""
    return {**{k: v for k, v in LEGACY_SETTINGS.items() if k not in cfg}, **cfg}


def _neg_tokens(e: list) -> float:
    return -e[3]


_expiry = itemgetter(4)


class StreamCache:
    """Cache state of one stream. ``request`` returns (read, written, uncached, bust_tokens)."""

    __slots__ = ("cfg", "entries", "sys", "next_expiry", "lookback", "system_bp", "enabled", "forever")

    def __init__(self, cfg: CacheConfig):
        self.cfg = cfg
        # entry: [model, partition, boundary_pos, tokens, expiry_ms, ttl_ms], longest first
        self.entries: list[list] = []
        self.sys: list[list] = []  # the system-prefix entries among them (the same lists)
        self.next_expiry = 1 << 62  # no entry expires before this: nothing to prune until then
        self.lookback = cfg.lookback_blocks if cfg.lookback_blocks is not None else 1 << 40
        self.system_bp = cfg.breakpoints == "claude-code"
        self.enabled = cfg.breakpoints != "none"
        self.forever = cfg.expiry == "never"

    def warm(self, model: int, tokens: float, t: int, ttl_ms: int) -> None:
        """A system prefix cached outside this stream (another session's identical prompt)."""
        if tokens <= 0 or not self.enabled:
            return
        for e in self.sys:
            if e[0] == model and e[4] >= t and e[3] >= tokens:
                return
        self._add([model, SYS, 0, tokens, t + ttl_ms, ttl_ms])

    def _add(self, entry: list) -> None:
        if self.forever:
            # every expiry and refresh is computed from these two fields
            entry[4] = entry[5] = NEVER
        # entries are kept longest first (ties: oldest first), so the first eligible is the best;
        # a request's write is most often the longest so far (the conversation grows) and a
        # system-prefix entry the shortest: both ends are placed without a search
        entries = self.entries
        if not entries or entries[0][3] < entry[3]:
            entries.insert(0, entry)
        elif entries[-1][3] >= entry[3]:
            entries.append(entry)
        else:
            insort(entries, entry, key=_neg_tokens)
        if entry[1] == SYS:
            self.sys.append(entry)
        if entry[4] < self.next_expiry:
            self.next_expiry = entry[4]

    def _prune(self, t: int) -> None:
        """Drop expired entries (an expired entry is never read again; a rewrite is a new entry).
        Refreshes only move expiries later, so ``next_expiry`` stays a lower bound."""
        if t <= self.next_expiry:
            return
        self.entries = [e for e in self.entries if e[4] >= t]
        self.sys = [e for e in self.sys if e[4] >= t]
        self.next_expiry = min(map(_expiry, self.entries), default=1 << 62)

    def _best(self, model: int, part: int, pos: int, t: int, limit: float) -> list | None:
        lb = self.lookback
        # an entry as long as the limit, computed along another path of float sums (a prefix
        # from the front, the cacheable part from the tail), is not longer than it
        limit += 1e-6
        for e in self.entries:
            if e[3] > limit or e[0] != model or e[4] < t:
                continue
            if e[1] != SYS and (e[1] != part or e[2] > pos or pos - e[2] > lb):
                continue
            return e
        return None

    def evict(self, model: int, part: int, pos: int, sys_tokens: float, prefix_tokens: float, t: int) -> None:
        """Replay an eviction the log shows: the provider still had only ``sys_tokens`` of
        the system prefix, or the prefix up to block ``pos`` (``prefix_tokens`` long).

        Entries of this model that reach beyond it are cut back to that length (a breakpoint
        ended there in the real request), so every policy faces the same event at the same
        position. The cut-back entry exists only where an entry alive at ``t`` reached beyond
        it, and is never longer than that entry: an eviction removes cache, it never creates
        cache the replay did not have.
        """
        kept = []
        cut = []
        src = None
        for e in self.entries:
            if e[0] == model:
                if e[1] == SYS:
                    if e[3] > sys_tokens:
                        e[3] = sys_tokens
                        cut.append(e)
                        continue
                elif e[1] == part and (e[2] > pos or (e[2] == pos and e[3] > prefix_tokens + 1.0)):
                    if e[4] >= t and (src is None or e[4] > src[4]):
                        src = e
                    continue
            kept.append(e)
        if cut:
            # the shortened system entries go back where a stable sort by length puts them: before
            # the entries as long as they now are (every one of those came after them: it was
            # shorter than they were), in their order; the rest stays in order
            i = bisect_left(kept, -sys_tokens, key=_neg_tokens)
            kept[i:i] = cut
        self.entries = kept
        if src is not None and pos >= 0:
            self._add([model, part, pos, min(prefix_tokens, src[3]), src[4], src[5]])

    def drop_messages(self, model: int) -> None:
        """The request's parameters changed in a way that invalidates the message entries of
        ``model`` (a thinking switch): only its system-prefix entries stay readable."""
        self.entries = [e for e in self.entries if e[0] != model or e[1] == SYS]

    def cut_after(self, part: int, pos: int) -> None:
        """The prompt changed at block ``pos`` of partition ``part`` (automatic caching: an
        entry is the whole earlier prompt, so one that reaches past the change is not a prefix
        of the new prompt; OpenAI's earlier reasoning leaving the prompt)."""
        self.entries = [e for e in self.entries if e[1] != part or e[2] <= pos]

    def warm_length(self, model: int, t: int) -> float:
        """The longest system-prefix entry of ``model`` alive at ``t`` (kept warm by other sessions)."""
        return max((e[3] for e in self.sys if e[0] == model and e[4] >= t), default=0.0)

    def write(self, model: int, part: int, pos: int, tokens: float, t: int, ttl_ms: int) -> None:
        """An entry written by a request the log does not show, just before ``t`` (it lives
        until ``t`` unless a request reads and so refreshes it)."""
        if self.enabled and tokens > 0:
            self._add([model, part, pos, tokens, t, ttl_ms])

    def ping(self, model: int, part: int, pos: int, t: int) -> float:
        """A keep-alive request at ``t`` that resends the conversation the client holds now and
        writes nothing: it reads (and so refreshes) the entry a request at ``pos`` could read that
        was used last (the live conversation; the longest of those used at the same time), and
        hits the system breakpoint. Not simply the longest: a longer entry used earlier (a
        resumed session's old prefix) is not what the client resends, and refreshing it let the
        live conversation expire. Returns the tokens read (0: nothing alive, no ping is worth
        sending)."""
        lb = self.lookback
        best, best_key = None, None
        for e in self.entries:
            if e[0] != model or e[4] < t or e[1] == SYS:
                continue
            if e[1] != part or e[2] > pos or pos - e[2] > lb:
                continue
            key = (e[4] - e[5], e[3])  # (last use, length)
            if best_key is None or key > best_key:
                best, best_key = e, key
        if best is None:
            best = self._best(model, part, pos, t, float("inf"))  # only the system entry is alive
        if best is None:
            return 0.0
        best[4] = t + best[5]
        for e in self.sys:
            if e[0] == model and e[4] >= t:
                e[4] = t + e[5]
        return best[3]

    def longest(self, model: int, part: int, pos: int, t: int, limit: float) -> float | None:
        """Length of the longest entry a request at ``pos`` could read now (None: none)."""
        best = self._best(model, part, pos, t, limit)
        return None if best is None else best[3]

    def request_auto(self, model: int, part: int, pos: int, t: int, total: float, ttl_ms: int,
                     changed_from: int | None, removed: float = 0.0, min_tokens: int = OPENAI_MIN,
                     step: int = OPENAI_STEP, base: int | None = None) -> tuple[float, float, float, float]:
        """Automatic (implicit) caching: the whole prompt is cached with no write charge; a later
        request reads the longest cached prefix of at least ``min_tokens``, counted in
        ``step``-token increments from ``base`` (default ``min_tokens``; OpenAI: from 1,024 in
        steps of 128, GPT-5.5 at 384 + multiples of 512; Gemini: per-model minimum, no steps)."""
        bust = 0.0
        if changed_from is not None:
            before = self._best(model, part, pos, t, float("inf"))
            self.entries = [e for e in self.entries if e[1] != part or e[2] <= changed_from]
            after = self._best(model, part, pos, t, float("inf"))
            b0 = min(before[3], total + removed) if before is not None else 0.0
            b1 = min(after[3], total) if after is not None else 0.0
            bust = max(0.0, b0 - b1)
            best = after
        else:
            best = self._best(model, part, pos, t, float("inf"))
        read = 0.0
        if best is not None:
            match = min(best[3], total)
            if match >= min_tokens:
                # token counts are fractional after anchoring: without steps the match is read whole
                if step <= 1:
                    read = match
                else:
                    b = min_tokens if base is None else base
                    # a prefix summed along another path of floats may fall a hair short of a
                    # grid point it reaches
                    read = b + step * ((match - b + 1e-6) // step)
                    if read > match:
                        read = match
                    if read < min_tokens:
                        read = 0.0
            best[4] = t + best[5]
        if total >= min_tokens:
            self._add([model, part, pos, total, t + ttl_ms, ttl_ms])
        if t > self.next_expiry:
            self._prune(t)
        return read, 0.0, total - read, bust

    def request(self, model: int, part: int, pos: int, t: int, total: float, uncached: float,
                overhead: float, ttl_ms: int, min_cacheable: int, changed_from: int | None,
                removed: float = 0.0, t_ref: int | None = None,
                sys_ttl_ms: int | None = None) -> tuple[float, float, float, float]:
        """``removed``: tokens the policy's change took out of this request's input; the
        bust is measured against the entry the unchanged input would have read. The cache is
        looked up at ``t``; what the request reads or writes expires ``ttl`` after ``t_ref``
        (default ``t``; ``clock = "end"``: the end of its response). ``sys_ttl_ms``: the TTL of
        the system-prefix breakpoint when the client gives it its own (a mixed layout: 1h there,
        ``ttl_ms`` on the conversation); None: ``ttl_ms``."""
        if not self.enabled:
            return 0.0, 0.0, total, 0.0
        tr = t if t_ref is None or t_ref < t else t_ref
        cacheable = total - uncached
        bust = 0.0
        if changed_from is not None:
            before = self._best(model, part, pos, t, cacheable + removed)
            self.entries = [e for e in self.entries if e[1] != part or e[2] <= changed_from]
            after = self._best(model, part, pos, t, cacheable)
            b0 = before[3] if before is not None else 0.0
            b1 = after[3] if after is not None else 0.0
            if b1 < b0:
                bust = b0 - b1
            best = after
        else:
            best = self._best(model, part, pos, t, cacheable)
        read = 0.0
        if best is not None and best[3] >= min_cacheable:
            read = best[3] if best[3] < cacheable else cacheable
            best[4] = tr + best[5]
        if cacheable >= min_cacheable:
            written = cacheable - read
            if written > 0:
                # shorter entries this one extends are kept, for every policy alike: a later
                # request with a shorter cacheable prefix (a larger uncached tail), or one after
                # a retroactive edit, may need them
                self._add([model, part, pos, cacheable, tr + ttl_ms, ttl_ms])
            unc = uncached
        else:
            written = 0.0
            unc = total - read
        if self.system_bp and overhead >= min_cacheable:
            # the system breakpoint is hit (refreshed) or written by every request
            if sys_ttl_ms is not None:
                ttl_ms = sys_ttl_ms
            for e in self.sys:
                if e[0] == model and e[3] == overhead:
                    if e[4] >= t:
                        e[4] = tr + e[5]
                        break
                    e[4] = tr + ttl_ms
                    e[5] = ttl_ms
                    break
            else:
                self._add([model, SYS, 0, overhead, tr + ttl_ms, ttl_ms])
        if t > self.next_expiry:
            self._prune(t)
        return read, written, unc, bust
