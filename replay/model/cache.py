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

from dataclasses import asdict, dataclass

SYS = -1  # partition key of the system+tools prefix entry
OPENAI_MIN = 1024  # OpenAI caches prompts from 1,024 tokens ...
OPENAI_STEP = 128  # ... in 128-token increments
OPENAI_RETENTION_MS = 10 * 60 * 1000  # in-memory retention: 5-10 minutes of inactivity
TTL_MS = {"5m": 5 * 60 * 1000, "1h": 60 * 60 * 1000}
BREAKPOINTS = ("claude-code", "last-message", "none")
TTLS = ("log", "5m", "1h")
WARM_STARTS = ("log", "cold")


@dataclass(frozen=True)
class CacheConfig:
    """How the provider's prompt cache behaves in a replay.

    ttl: "log" takes each request's TTL from the log's recorded 5m/1h write split;
        "5m"/"1h" force one.
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
        request, for every policy alike. "none" ignores them.
    """

    ttl: str = "log"
    breakpoints: str = "claude-code"
    lookback_blocks: int | None = None
    min_cacheable: int | None = None
    warm_start: str = "log"
    observed_evictions: str = "log"

    def __post_init__(self):
        for name, allowed in (("ttl", TTLS), ("breakpoints", BREAKPOINTS), ("warm_start", WARM_STARTS),
                              ("observed_evictions", ("log", "none"))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"cache.{name} = {getattr(self, name)!r}; allowed: {', '.join(allowed)}")
        if self.lookback_blocks is not None and self.lookback_blocks < 0:
            raise ValueError("cache.lookback_blocks must be >= 0")

    def as_dict(self) -> dict:
        return asdict(self)


class StreamCache:
    """Cache state of one stream. ``request`` returns (read, written, uncached, bust_tokens)."""

    __slots__ = ("cfg", "entries", "lookback", "system_bp", "enabled", "keep_dominated")

    def __init__(self, cfg: CacheConfig, keep_dominated: bool = True):
        self.cfg = cfg
        self.keep_dominated = keep_dominated
        # entry: [model, partition, boundary_pos, tokens, expiry_ms, ttl_ms]
        self.entries: list[list] = []
        self.lookback = cfg.lookback_blocks if cfg.lookback_blocks is not None else 1 << 40
        self.system_bp = cfg.breakpoints == "claude-code"
        self.enabled = cfg.breakpoints != "none"

    def warm(self, model: int, tokens: float, t: int, ttl_ms: int) -> None:
        """A system prefix cached outside this stream (another session's identical prompt)."""
        if tokens <= 0 or not self.enabled:
            return
        for e in self.entries:
            if e[0] == model and e[1] == SYS and e[4] >= t and e[3] >= tokens:
                return
        self.entries.append([model, SYS, 0, tokens, t + ttl_ms, ttl_ms])

    def _best(self, model: int, part: int, pos: int, t: int, limit: float) -> list | None:
        best = None
        lb = self.lookback
        for e in self.entries:
            if e[0] != model or e[4] < t or e[3] > limit:
                continue
            if e[1] != SYS and (e[1] != part or e[2] > pos or pos - e[2] > lb):
                continue
            if best is None or e[3] > best[3]:
                best = e
        return best

    def evict(self, model: int, part: int, pos: int, sys_tokens: float, prefix_tokens: float) -> None:
        """Replay an eviction the log shows: the provider still had only ``sys_tokens`` of
        the system prefix, or the prefix up to block ``pos`` (``prefix_tokens`` long).

        Longer entries of this model are cut back to that length (a breakpoint ended there
        in the real request), so every policy faces the same event at the same position.
        """
        kept = []
        cut_expiry = None
        cut_ttl = 0
        for e in self.entries:
            if e[0] == model:
                if e[1] == SYS:
                    if e[3] > sys_tokens:
                        e[3] = sys_tokens
                elif e[1] == part and e[2] > pos:
                    if cut_expiry is None or e[4] > cut_expiry:
                        cut_expiry, cut_ttl = e[4], e[5]
                    continue
            kept.append(e)
        if cut_expiry is not None and pos >= 0:
            kept.append([model, part, pos, prefix_tokens, cut_expiry, cut_ttl])
        self.entries = kept

    def request_auto(self, model: int, part: int, pos: int, t: int, total: float, ttl_ms: int,
                     changed_from: int | None, removed: float = 0.0, min_tokens: int = OPENAI_MIN,
                     step: int = OPENAI_STEP) -> tuple[float, float, float, float]:
        """Automatic (implicit) caching: the whole prompt is cached with no write charge; a later
        request reads the longest cached prefix of at least ``min_tokens``, counted in
        ``step``-token increments (OpenAI: from 1,024 in steps of 128; Gemini: per-model
        minimum, no steps)."""
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
                read = min_tokens + step * ((match - min_tokens) // step)
            best[4] = t + best[5]
        if total >= min_tokens:
            exp = t + ttl_ms
            if not self.keep_dominated:
                self.entries = [e for e in self.entries if e[0] != model or e[1] != part or e[2] > pos or e[4] > exp]
            self.entries.append([model, part, pos, total, exp, ttl_ms])
        if len(self.entries) > 12:
            self.entries = [e for e in self.entries if e[4] >= t]
        return read, 0.0, total - read, bust

    def request(self, model: int, part: int, pos: int, t: int, total: float, uncached: float,
                overhead: float, ttl_ms: int, min_cacheable: int, changed_from: int | None,
                removed: float = 0.0) -> tuple[float, float, float, float]:
        """``removed``: tokens the policy's change took out of this request's input; the
        bust is measured against the entry the unchanged input would have read."""
        if not self.enabled:
            return 0.0, 0.0, total, 0.0
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
            read = best[3]
            best[4] = t + best[5]
        if cacheable >= min_cacheable:
            written = cacheable - read
            if written > 0:
                exp = t + ttl_ms
                if not self.keep_dominated:
                    # without retroactive edits, an entry this one extends and outlives can never win
                    self.entries = [e for e in self.entries
                                    if e[0] != model or e[1] != part or e[2] > pos or e[4] > exp]
                self.entries.append([model, part, pos, cacheable, exp, ttl_ms])
            unc = uncached
        else:
            written = 0.0
            unc = total - read
        if self.system_bp and overhead >= min_cacheable:
            # the system breakpoint is hit (refreshed) or written by every request
            for e in self.entries:
                if e[0] == model and e[1] == SYS and e[3] == overhead:
                    if e[4] >= t:
                        e[4] = t + e[5]
                        break
                    e[4] = t + ttl_ms
                    e[5] = ttl_ms
                    break
            else:
                self.entries.append([model, SYS, 0, overhead, t + ttl_ms, ttl_ms])
        if len(self.entries) > 12:
            self.entries = [e for e in self.entries if e[4] >= t]
        return read, written, unc, bust
