"""cache_aware_trim: trim history only when the prompt cache makes it pay (this project's own policy).

Source: ctxreplay (issue 14 item 1), not a seed. The sources decide *what* to trim; none decides
*when* from the cache's state, and on the shared Claude Code logs every eager history rewrite
costs more in cache re-writes than it saves (supersede, cupel_dedup, clear_tool_uses). This
policy collects removals as they become available and applies them only when that is cheap.

Candidates
    * lossless (always): the class ``bound_retro`` optimizes over (`replay.policies.lossless`):
      a tool result exactly repeated later in the partition, or a read superseded by a later
      non-error read of the same resource covering its line range with no mutation between.
      Its size becomes 0 (its bytes are still in context). Available from the first request
      after the block that makes it redundant.
    * lossy (``lossy``, off by default): every tool result of a user turn older than the last
      ``keep_last`` turns is replaced by a ``placeholder_tokens`` placeholder. When the agent
      later re-reads the resource of a stripped result, the result gets its size back from that
      request on (priced, cache bust included: the pessimistic ``reread_cost`` of the sources)
      and is never stripped again.

Triggers: before request k (k > 0), all pending removals are applied at once when
    (a) the prefix is cold anyway (no extra write): a compaction started a new partition, the
        model changed, or the idle gap ``r_ts[k] - r_ts[k-1]`` exceeds the TTL of the cache
        entry plus ``ttl_margin_s``. The TTL is that of the newest request <= k-1 that recorded
        a cache write (1 h when its 1h write is the larger, else 5 min); 1 h when none did (the
        cautious guess: a cold trigger that is wrong busts a warm cache); or
    (b) the estimated saving exceeds the estimated cost, and at least ``min_pending_tokens``
        are pending:
            saving = P x read_ratio x (1 + N)
            cost   = S x (write_ratio - read_ratio)
        P: pending tokens (size now - size after); N: the expected number of requests after
        k (``estimator``: "so_far" = k, the requests so far in the stream, a Lindy estimate
        that a session is about half over; "partition" = the requests so far in the current
        compaction partition; "none" = never trigger (b)); S: the tokens, after the removal,
        from the first changed block to the end of what the previous request sent (what the
        previous request cached and must now be written again; blocks appended since are
        written anyway). write_ratio is ``write_ratio_1h`` when the entry's TTL is 1 h.
The policy uses only requests <= k (timestamps, recorded cache writes, models, partitions)
and blocks before request k: a session truncated after request k gets the same decisions
for requests <= k (tests/test_policy_cache_aware_trim.py).

Defaults (chosen on the 27 shared Claude Code logs, both cache-model variants; issue 14):
* ``min_pending_tokens`` 10,000: lossless, 2,000 and 10,000 give the same cost (the cost test
  rejects the small flushes anyway) while 0 turns +0.02% into -0.36% (model-only): many small
  flushes that each re-write the suffix; with ``lossy`` on, 10,000 is the best of 2k/10k/30k/100k.
* ``estimator`` "so_far": the Lindy estimate; "partition" is within 0.03 points of it.
* ``lossy`` off: lossless removals cannot cost a re-read. On, it is the only setting that
  saves much (keep_last 1: +15% calibrated, +12% model-only, re-reads priced); it changes
  what the model sees, a choice the user makes.
* ``keep_last`` 1: the best of 1/2/3/5/8 turns with ``lossy`` on, at every floor.
* ``ttl_margin_s`` 60: request timestamps are those of the logged responses, not of the
  cache refresh. On the shared Claude logs, 18 of the 20 requests after a gap beyond the TTL
  read no more than the system prefix (the nearest: TTL + 35 s); the other 2 come over 10 min
  after expiry (a request the log does not show refreshed the entry: no margin helps).
  entire-cli: warm reads up to TTL + 34 s, cold from TTL + 41 s on. On the Claude logs,
  margins 0 and 60 s give the same cost.

Cost: removals are computed once per stream (memoized); each request sums the pending sizes
and, when a flush is considered, the suffix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replay.model.arrays import K_TOOL_RESULT, Stream
from replay.policies.base import Context, non_negative, one_of
from replay.policies.common import ScanningPolicy, shrink
from replay.policies.lossless import removals_memo

MS_5M = 5 * 60 * 1000
MS_1H = 60 * 60 * 1000
ESTIMATORS = ("so_far", "partition", "none")


class CacheAwareTrim(ScanningPolicy):
    """Lossless removals (exact repeats, covering re-reads; optionally old tool results) held back until the
    cache is cold anyway or the estimated saving over the expected remaining requests exceeds the re-write."""

    name = "cache_aware_trim"
    source = "ctxreplay (this project, issue 14): cache-aware trim timing, not from a seed"

    @dataclass(frozen=True)
    class Params:
        # Least pending tokens (stream units) for the cost-estimate trigger (b); cold triggers ignore it.
        min_pending_tokens: float = 10000.0
        # Expected requests after this one: "so_far" (= requests so far in the stream),
        # "partition" (= so far in the compaction partition), "none" (cold triggers only).
        estimator: str = "so_far"
        # Also strip tool results of user turns older than the last keep_last turns (lossy).
        lossy: bool = False
        # User turns whose tool results lossy stripping keeps (the current one included).
        keep_last: int = 1
        # Size of the lossy placeholder, tokens (o200k; Claude Code's "[Old tool result content cleared]").
        placeholder_tokens: float = 7.0
        # Seconds beyond the entry's TTL before an idle gap counts as a cold cache.
        ttl_margin_s: float = 60.0
        # Cache read price / input price (Anthropic: 0.1).
        read_ratio: float = 0.1
        # Cache write price / input price, 5-minute entries (Anthropic: 1.25).
        write_ratio: float = 1.25
        # Cache write price / input price, 1-hour entries (Anthropic: 2.0).
        write_ratio_1h: float = 2.0

        def __post_init__(self):
            one_of(self, "estimator", ESTIMATORS)
            non_negative(self, "min_pending_tokens", "keep_last", "placeholder_tokens", "ttl_margin_s",
                         "read_ratio", "write_ratio", "write_ratio_1h")

    def setup(self, ctx: Context, s: dict[str, Any]) -> None:
        s["avail"] = removals_memo(ctx.stream)
        s["ttl"] = MS_1H         # TTL of the newest recorded cache write (1 h until one is seen)
        s["part_k0"] = 0         # first request of the current partition
        for f in ("flushes_cold", "flushes_estimate"):
            ctx.metrics.setdefault(f, 0.0)

    def reset(self, s: dict[str, Any], pos: int) -> None:
        super().reset(s, pos)
        s["pending"] = {}        # block -> (size after the removal, lossy?)
        s["results"] = []        # tool results of the partition (lossy candidates), in order
        s["lossy_next"] = 0      # results[:lossy_next] were made pending or stripped already

    def decided(self, ctx: Context, k: int, why: str) -> None:
        """Called for every flush (why: "cold" or "estimate"); tests record the decisions here."""

    def before_request(self, ctx: Context, k: int) -> None:
        self.catch_up(ctx, k)
        s = ctx.state
        st = ctx.stream
        p = self.params
        eff = ctx.eff
        pending: dict[int, tuple[float, bool]] = s["pending"]
        restored = s["restored"]
        if k and st.r_partition[k] != st.r_partition[k - 1]:
            s["part_k0"] = k
        for i in s["avail"][k]:
            if i not in restored:
                pending[i] = (0.0, False)
        if p.lossy:
            self._lossy_candidates(ctx, s, k, pending)
        if k:  # the TTL of the entry the previous request left (its recorded write, else an earlier one)
            a, b = st.r_w1h[k - 1], st.r_w5[k - 1]
            if a > 0 or b > 0:
                s["ttl"] = MS_1H if a > 0 and a >= b else MS_5M
        if not pending or k == 0:
            return
        saved = sum(max(eff[i] - size, 0.0) for i, (size, _) in pending.items())
        if saved <= 0:
            pending.clear()
            return
        if self._cold(st, s, k):
            why = "cold"
        elif self._pays(ctx, s, k, pending, saved):
            why = "estimate"
        else:
            return
        rr = s["rr"]
        for i in sorted(pending):
            size, lossy = pending[i]
            shrink(ctx, i, size, rr, lossy=lossy)
        pending.clear()
        ctx.metrics["flushes_" + why] += 1
        self.decided(ctx, k, why)

    # triggers --------------------------------------------------------------------------
    def _cold(self, st: Stream, s: dict[str, Any], k: int) -> bool:
        if st.r_partition[k] != st.r_partition[k - 1] or st.r_model[k] != st.r_model[k - 1]:
            return True
        t0, t1 = st.r_ts[k - 1], st.r_ts[k]
        return t0 >= 0 and t1 >= 0 and t1 - t0 > s["ttl"] + self.params.ttl_margin_s * 1000

    def _pays(self, ctx: Context, s: dict[str, Any], k: int, pending: dict[int, tuple[float, bool]], saved: float) -> bool:
        p = self.params
        if p.estimator == "none" or saved < p.min_pending_tokens:
            return False
        n_after = k if p.estimator == "so_far" else k - s["part_k0"]
        st, eff = ctx.stream, ctx.eff
        first = min(pending)
        end = st.r_pos[k - 1]
        suffix = sum(eff[first:end]) - sum(max(eff[i] - size, 0.0) for i, (size, _) in pending.items() if i < end)
        w = p.write_ratio_1h if s["ttl"] == MS_1H else p.write_ratio
        return saved * p.read_ratio * (1 + n_after) > max(suffix, 0.0) * (w - p.read_ratio)

    # lossy candidates --------------------------------------------------------------------
    def _lossy_candidates(self, ctx: Context, s: dict[str, Any], k: int, pending: dict[int, tuple[float, bool]]) -> None:
        st = ctx.stream
        results = s["results"]
        oldest_kept = st.r_user_turn[k] - self.params.keep_last + 1
        j = s["lossy_next"]
        size = ctx.units(self.params.placeholder_tokens)
        restored = s["restored"]
        while j < len(results) and st.user_turn[results[j]] < oldest_kept:
            i = results[j]
            if i not in restored and i not in pending and ctx.eff[i] > size:
                pending[i] = (size, True)
            j += 1
        s["lossy_next"] = j

    def _scan(self, st: Stream, s: dict[str, Any], lo: int, hi: int) -> None:
        if self.params.lossy:
            bkind = st.bkind
            s["results"].extend(i for i in range(lo, hi) if bkind[i] == K_TOOL_RESULT)
