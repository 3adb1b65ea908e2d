"""The mechanics shared by the compaction policies that ask the model for a summary
(``server_compaction``, ``claude_code_autocompact``): when the prompt passes a trigger, a
summarization request is made and priced, and the conversation goes on from its summary.

At request k, the prompt the agent would send is the overhead + the partition's blocks before
k at their sizes under the policy + the anchoring residual (what the engine prices). When it
exceeds the policy's trigger (``SummaryCompaction.trigger``):

* **the summarization request** is one extra API call (``Context.side``, priced by
  ``replay.engine.side`` with the run's price table, at the request's model's rates): its input
  is that whole prompt plus the summarization instructions (``instruction_tokens``), its output
  the summary (``summary_tokens``). With ``summary_cached`` (default) the part of the input the
  previous request of the stream sent (its whole prompt, which it wrote to the cache at its last
  breakpoint) is a cache read and the rest (the blocks appended since, the instructions) is
  uncached input; it writes nothing. The previous request's entry is taken to be alive when
  the summary request comes within its TTL as the log recorded it (1 hour where that request
  wrote 1-hour cache, else 5 minutes; a request without timestamps is taken as warm): a
  compaction usually fires inside a working loop, seconds after it. Past the TTL, or with
  ``summary_cached`` off, the whole input is uncached.
* **the conversation after it** starts from the summary: every block of the partition before
  k is removed and the partition's first block becomes the summary (``summary_tokens``, never
  more than what it replaces), so request k and the ones after it send overhead + summary +
  what comes next. The engine sees a change at the partition's first block: the system prompt
  stays cached, everything after it is written again. A later firing folds the old summary and
  everything since into a new one at the same place.

Thinking blocks the provider already dropped (``common.dropped_thinking_turn``) are left as
they are: the anchoring nets them out, so removing them would save tokens the provider never
saw. Sizes are o200k tokens converted to the stream's units (``ctx.units``).

Re-reads (``reread_cost``, on by default, as for every lossy policy here): when the agent later
re-reads a resource whose result a summary replaced (a read-kind tool_use naming it), that
result gets its full size back from that request on (a change there, priced by the engine,
cache bust included) and is never summarized again. Off: only counted (``trimmed_reread``).

Figures: ``compactions`` (firings) beside the engine's ``summary_requests``, ``summary_input``,
``summary_output`` and ``summary_cost``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replay.model.arrays import Stream
from replay.model.cache import TTL_MS
from replay.policies.base import Context, non_negative
from replay.policies.common import ScanningPolicy, dropped_thinking_turn, overhead_of, provider_drops, shrink


# the engine's figures of the side requests (replay.engine.side), present in every session of a
# summarizing policy's run so that sessions without a compaction sum with the others
SIDE_FIGURES = ("summary_requests", "summary_input", "summary_output", "summary_cost")


class SummaryCompaction(ScanningPolicy):
    """Base of the summarizing compaction policies; a subclass sets ``trigger`` and its Params, a
    subclass of ``SummaryCompaction.Params`` that gives ``summary_tokens`` its source's default."""

    @dataclass(frozen=True)
    class Params:
        # Size of the summary (the block it leaves and the summarization call's output), o200k tokens.
        summary_tokens: float
        # Size of the summarization prompt the call adds, o200k tokens (the API's default prompt: 95;
        # Claude Code's own is unpublished).
        instruction_tokens: float = 95.0
        # The summarization call reads from the cache what the previous request sent (else all uncached).
        summary_cached: bool = True
        # Price a later re-read of a summarized result (pessimistic, beyond the source).
        reread_cost: bool = True

        def __post_init__(self):
            non_negative(self, "summary_tokens", "instruction_tokens")

    def trigger(self, ctx: Context, k: int) -> float:
        """The prompt size (stream units) above which request ``k`` compacts first."""
        raise NotImplementedError

    def setup(self, ctx: Context, s: dict[str, Any]) -> None:
        for f in ("compactions", *SIDE_FIGURES):
            ctx.metrics.setdefault(f, 0.0)
        s["prev"] = 0.0          # the prompt the previous request sent (after any compaction)
        s["prev_part"] = None    # ... and its partition
        s["prev_k"] = -1         # ... and its index

    def reset(self, s: dict[str, Any], pos: int) -> None:
        super().reset(s, pos)
        s["s0"] = pos            # the partition's first block: where the summary goes
        s["done"] = pos + 1      # blocks before this are folded into the summary already
        s["summary_at"] = None

    def _scan(self, st: Stream, s: dict[str, Any], lo: int, hi: int) -> None:
        """Nothing to index: a compaction looks at sizes only."""

    def before_request(self, ctx: Context, k: int) -> None:
        pos = self.catch_up(ctx, k)
        s = ctx.state
        st = ctx.stream
        part = st.r_partition[k]
        res = st.r_residual[k] if st.r_residual else 0.0
        ov = overhead_of(st.overhead, st.r_model[k])
        prompt = ov + ctx.running + res
        # something to summarize: the partition's blocks, or those appended since the last summary
        fresh = pos > (s["s0"] if s["summary_at"] is None else s["done"])
        if fresh and prompt > self.trigger(ctx, k):
            self.compact(ctx, k, pos, prompt, s["prev"] if s["prev_part"] == part and self._warm(st, s["prev_k"], k)
                         else 0.0)
        s["prev"] = ov + ctx.running + res
        s["prev_part"] = part
        s["prev_k"] = k

    @staticmethod
    def _warm(st: Stream, j: int, k: int) -> bool:
        """Is request ``j``'s cache entry still alive at request ``k`` (its TTL as the log recorded it)?"""
        if j < 0:
            return False
        tj, tk = st.r_ts[j], st.r_ts[k]
        if tj < 0 or tk < 0:
            return True
        return tk - tj <= (TTL_MS["1h"] if st.r_w1h[j] > 0 else TTL_MS["5m"])

    def compact(self, ctx: Context, k: int, pos: int, prompt: float, warm: float) -> None:
        """Price the summarization request of request ``k`` and replace the partition's blocks
        before ``pos`` by the summary."""
        s = ctx.state
        st = ctx.stream
        p = self.params
        summary = ctx.units(p.summary_tokens)
        read = min(warm, prompt) if p.summary_cached else 0.0
        ctx.side.append((st.r_model[k], prompt - read + ctx.units(p.instruction_tokens), read, summary))
        ctx.metrics["compactions"] += 1
        s0, rr, restored, eff = s["s0"], s["rr"], s["restored"], ctx.eff
        cut = dropped_thinking_turn(ctx, k)
        region = 0.0
        for i in range(s["done"], pos):
            if i in restored or provider_drops(st, i, cut):
                continue
            region += eff[i]
            shrink(ctx, i, 0.0, rr, lossy=True)
        s["done"] = pos
        old = eff[s0]
        new = min(summary, old + region)
        if new != old:
            ctx.set_size(s0, new)
            if s["summary_at"] is None and new < old:
                rr.trimmed(st, s0, True)
        elif region > 0 and (ctx.changed_from is None or s0 < ctx.changed_from):
            # the summary's text changed though not its size: the prefix is rewritten from it
            ctx.changed_from = s0
        s["summary_at"] = s0
