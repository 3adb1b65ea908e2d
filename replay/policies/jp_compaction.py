"""jp_compaction: JP RFD 036 conversation compaction, replayed offline.

Source: seed 001, JP RFD 036 "Conversation Compaction" (``jp conversation compact`` and
``jp query --compact``). Strategies are applied left to right; every one respects
``keep_last`` (default 1): the last N user turns are untouched, only events before the
first block of turn ``current - keep_last + 1`` are changed.

* ``strip-reasoning``: reasoning (thinking blocks) is removed (``reasoning_tokens`` = 0).
* ``dedup-tools``: of the tool calls with the same name and identical arguments only the
  newest is kept; an older call pair (tool_use + tool_result) is removed entirely. It
  includes the tool-aware ``Subsumes`` rule of ``fs_read_file``: a newer read of the same
  file whose line range contains an older one's (``read_file(1,10)`` covers
  ``read_file(2,5)``; a whole-file read covers every partial one) removes the older pair.
  The newer call may sit in the kept turns; only the older pair must be before the boundary.
  Per the RFD's default hints, file-mutating tools (``fs_create_file``/``fs_modify_file``:
  ``dedup = false``) are not deduplicated: ``dedup_exclude_kinds = ("mutate",)``.
* ``strip-tool-results``: a tool_result becomes ``[compacted] name: success|error``;
  its size ``stub_tokens`` defaults to 9, the o200k count of the RFD's example
  ``[compacted] fs_read_file: success``. (The prose also mentions "the first line of output",
  which the example omits and the trace cannot size; the example is followed.)
* ``strip-attachments``: attachment blocks before the boundary are removed.
* ``prune-tools``: tool definitions never used in the stream leave the system prompt. The
  trace does not record the definitions, so their size is a parameter: ``tool_def_tokens``
  per definition and ``tools_defined`` definitions (both 0 by default = nothing pruned).
  The engine fixes a stream's overhead before its first request (``overhead()`` hook), so
  the pruned share leaves the overhead from the start of every stream that compacts at all,
  and the system-prefix cache bust it would cause at the compaction is not modelled; "never
  used" looks at the whole stream (the agent is assumed to act the same afterwards).
* ``summarize``: offline, no model call: everything before the boundary is replaced by one
  summary of ``summary_tokens`` (default 2,500, about the median Claude Code compaction
  summary on the shared corpus: 2,477), placed at the start of the conversation, and never
  longer than the tokens it replaces. A later summarize folds the old summary into the new
  one (the prefix is rewritten from the start).
* ``auto`` (default) = strip-reasoning -> dedup-tools -> strip-tool-results -> prune-tools ->
  summarize, the last only when the context still exceeds ``summarize_threshold`` (0.5) of
  the window. The RFD runs every mechanical step; ``auto_target`` (default None) optionally
  stops the pipeline as soon as the context is at or below that fraction of the window.
* ``classify-tangents`` needs a model and a person to confirm the removals: not implemented;
  asking for it is an error.

When it runs: compaction is an explicit user action in the RFD (``jp query --compact``
compacts before sending the next query), so it is considered only at the first request of
a user turn, and fires there when the turn number reaches ``trigger_turn`` (once) or, if
that is unset, when the request's input exceeds ``trigger_fraction`` (0.5, the RFD's
summarize threshold) of ``window_tokens`` (200,000). Compacted blocks stay compacted (the
conversation is rewritten). Each step keeps its own position, so a firing only looks at
blocks that became compactable since the previous one.

Report: like the RFD's ``CompactionReport`` per-step breakdown, the figures dict
(``ctx.metrics``) gets ``step:<strategy>:blocks`` (events removed or stubbed) and
``step:<strategy>:tokens`` (estimated tokens saved at the change) for each step of the
pipeline, plus ``step:compactions`` (firings); ``JpCompaction.report(figures)`` turns a
figures dict (one session's or summed) into that structure. For ``prune-tools`` the tokens
are those removed from the overhead, once per stream (saved again on every request).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from dataclasses import dataclass
from typing import Any

from replay.model.arrays import K_ATTACHMENT, K_THINKING, K_TOOL_RESULT, K_TOOL_USE, TOOL_KIND_CODE, TOOL_KINDS, Stream
from replay.policies.base import Context, as_tuples, did_you_mean, non_negative
from replay.policies.common import ScanningPolicy, codes, covers, overhead_of, shrink

STRATEGIES = ("strip-reasoning", "dedup-tools", "strip-tool-results", "strip-attachments", "prune-tools", "summarize")
AUTO = ("strip-reasoning", "dedup-tools", "strip-tool-results", "prune-tools", "summarize")
NOT_IMPLEMENTED = {
    "classify-tangents": "classify-tangents asks a model which turns are tangents and a person to confirm "
                         "their removal; it cannot be replayed offline and is not implemented",
}
_READ_KIND = TOOL_KIND_CODE["read"]


class JpCompaction(ScanningPolicy):
    """Compacts everything before the last keep_last user turns: strip reasoning, dedup/subsume tool calls (newest
    kept), stub tool results, prune unused tools, summarize; rewrites history."""

    name = "jp_compaction"
    source = "seed 001: JP RFD 036 Conversation Compaction (strategies, keep_last, auto pipeline)"

    @dataclass(frozen=True)
    class Params:
        # Strategies applied left to right, or ("auto",) for the RFD's default pipeline.
        strategies: tuple[str, ...] = ("auto",)
        # Number of most recent user turns left untouched (RFD default 1).
        keep_last: int = 1
        # Compact once, at the first request of this user turn (None = use trigger_fraction).
        trigger_turn: int | None = None
        # Otherwise compact at a user turn's first request when its input exceeds this
        # fraction of the window (replay's choice: the RFD's summarize threshold).
        trigger_fraction: float = 0.5
        # Context window of the model, tokens.
        window_tokens: int = 200_000
        # auto summarizes only if the context still exceeds this fraction of the window (RFD: 0.5).
        summarize_threshold: float = 0.5
        # auto stops as soon as the context is <= this fraction of the window (None = run all steps).
        auto_target: float | None = None
        # Size of a stripped reasoning block (the RFD removes it: 0).
        reasoning_tokens: float = 0.0
        # Size of a stripped tool result, "[compacted] fs_read_file: success" in o200k tokens.
        stub_tokens: float = 9.0
        # Tools whose results strip-tool-results keeps (the RFD's per-tool `response = "keep"`).
        strip_exclude_tools: tuple[str, ...] = ()
        # Tool kinds dedup-tools never touches (RFD defaults: file create/modify have dedup = false).
        dedup_exclude_kinds: tuple[str, ...] = ("mutate",)
        # Apply fs_read_file's line-range subsumption inside dedup-tools (RFD: yes).
        subsumption: bool = True
        # Size of the summary replacing everything before the boundary, tokens.
        summary_tokens: float = 2_500.0
        # Tokens of one tool definition in the system prompt (prune-tools; unknown from the trace).
        tool_def_tokens: float = 0.0
        # Number of tool definitions the agent sends (prune-tools; 0 = nothing to prune).
        tools_defined: int = 0

        def __post_init__(self):
            as_tuples(self, "strategies", "strip_exclude_tools", "dedup_exclude_kinds")
            strategies = self.strategies
            if not strategies:
                raise ValueError("strategies is empty; use 'auto' or a list of: " + ", ".join(STRATEGIES))
            for s in strategies:
                if s in NOT_IMPLEMENTED:
                    raise ValueError(NOT_IMPLEMENTED[s])
                if s != "auto" and s not in STRATEGIES:
                    raise ValueError(f"unknown strategy {s!r}{did_you_mean(s, [*STRATEGIES, 'auto'])} "
                                     f"(known: auto, {', '.join(STRATEGIES)})")
            if "auto" in strategies and len(strategies) > 1:
                raise ValueError("'auto' is a whole pipeline; it cannot be combined with other strategies")
            if len(set(strategies)) != len(strategies):
                raise ValueError("a strategy is listed twice")
            bad = [k for k in self.dedup_exclude_kinds if k not in TOOL_KINDS]
            if bad:
                raise ValueError(f"dedup_exclude_kinds: unknown kind(s) {', '.join(bad)}; "
                                 f"known: {', '.join(TOOL_KINDS)}")
            non_negative(self, "keep_last")
            if self.trigger_turn is not None and self.trigger_turn < 1:
                raise ValueError("trigger_turn must be >= 1 (or None)")
            if not 0 < self.trigger_fraction:
                raise ValueError("trigger_fraction must be > 0")
            if self.window_tokens <= 0:
                raise ValueError("window_tokens must be > 0")
            if not 0 <= self.summarize_threshold:
                raise ValueError("summarize_threshold must be >= 0")
            if self.auto_target is not None and self.auto_target < 0:
                raise ValueError("auto_target must be >= 0 (or None)")
            non_negative(self, "reasoning_tokens", "stub_tokens", "summary_tokens", "tool_def_tokens", "tools_defined")

    # ------------------------------------------------------------------------------------
    @property
    def pipeline(self) -> tuple[str, ...]:
        return AUTO if self.params.strategies == ("auto",) else self.params.strategies

    @property
    def auto(self) -> bool:
        return self.params.strategies == ("auto",)

    def setup(self, ctx: Context, s: dict[str, Any]) -> None:
        p = self.params
        m = ctx.metrics
        for step in self.pipeline:
            m.setdefault(f"step:{step}:blocks", 0.0)
            m.setdefault(f"step:{step}:tokens", 0.0)
        m.setdefault("step:compactions", 0.0)
        s["strip_excl"] = codes(ctx, p.strip_exclude_tools)
        s["dedup_excl"] = {TOOL_KIND_CODE[x] for x in p.dedup_exclude_kinds}
        s["ov"] = {}
        s["ov0"] = dict(ctx.stream.overhead)
        s["last_turn"] = None
        s["fired_turn"] = False
        s["fired"] = False
        s["pruned"] = None

    def reset(self, s: dict[str, Any], pos: int) -> None:
        super().reset(s, pos)
        s["s0"] = pos                # first block of the partition
        s["turns"] = []              # user turns in block order (first block of each)
        s["turn_pos"] = []
        s["done"] = {}               # step -> blocks before this were processed
        s["use_pos"] = {}            # tool_use code -> position of the tool_use block
        s["bykey"] = {}              # (tool, args) -> newest pair (use, result)
        s["reads"] = {}              # resource -> alive read pairs [(use, result, ls, le)]
        s["superseded"] = []         # heap of (result, use) pairs a newer call made obsolete
        s["summary_at"] = None       # position of the summary (summarize ran)

    # overhead: prune-tools ------------------------------------------------------------------
    def overhead(self, ctx: Context, overhead: float) -> float:
        s = ctx.state
        p = self.params
        if "prune-tools" not in self.pipeline or p.tool_def_tokens <= 0 or p.tools_defined <= 0:
            return overhead
        if s["pruned"] is None:
            st = ctx.stream
            used = {st.tool[i] for i in range(st.n_blocks) if st.bkind[i] == K_TOOL_USE and st.tool[i] >= 0}
            n = max(0, p.tools_defined - len(used))
            s["pruned"] = (n, n * p.tool_def_tokens) if self._will_fire(st) else (0, 0.0)
            if s["pruned"][0]:
                ctx.metrics["step:prune-tools:blocks"] += s["pruned"][0]
                ctx.metrics["step:prune-tools:tokens"] += s["pruned"][1]
        new = max(0.0, overhead - s["pruned"][1])
        # the engine asks once per model, in the order of stream.overhead
        models = list(ctx.stream.overhead)
        idx = len(s["ov"])
        if idx < len(models):
            s["ov"][models[idx]] = new
        return new

    def _will_fire(self, st: Stream) -> bool:
        """Does compaction fire at all in this stream? (Its first firing sees the uncompacted
        context, so this is exact.)"""
        p = self.params
        last = None
        if p.trigger_turn is not None:
            return any(t >= p.trigger_turn for t in st.r_user_turn)
        limit = p.trigger_fraction * p.window_tokens
        csum = [0.0]
        for x in st.tokens:
            csum.append(csum[-1] + x)
        res = st.r_residual or [0.0] * st.n_requests
        for k in range(st.n_requests):
            t = st.r_user_turn[k]
            if t == last:
                continue
            last = t
            s0 = st.part_start.get(st.r_partition[k], 0)
            total = overhead_of(st.overhead, st.r_model[k]) + csum[st.r_pos[k]] - csum[s0] + res[k]
            if total > limit:
                return True
        return False

    # the request hook --------------------------------------------------------------------
    def before_request(self, ctx: Context, k: int) -> None:
        pos = self.catch_up(ctx, k)
        s = ctx.state
        st = ctx.stream
        p = self.params
        turn = st.r_user_turn[k]
        if turn == s["last_turn"]:
            return
        s["last_turn"] = turn
        res = st.r_residual[k] if st.r_residual else 0.0
        model = st.r_model[k]
        if p.trigger_turn is not None:
            if s["fired_turn"] or turn < p.trigger_turn:
                return
            s["fired_turn"] = True
        else:
            ov = overhead_of((s["ov"] if s["fired"] else s["ov0"]) or st.overhead, model)
            if ov + ctx.running + res <= p.trigger_fraction * p.window_tokens:
                return
        s["fired"] = True
        if p.keep_last == 0:
            boundary = pos
        else:
            i = bisect_left(s["turns"], turn - p.keep_last + 1)
            boundary = s["turn_pos"][i] if i < len(s["turns"]) else pos
        if boundary <= s["s0"]:
            return
        ctx.metrics["step:compactions"] += 1
        ov = overhead_of(s["ov"] or st.overhead, model)
        window = p.window_tokens
        for step in self.pipeline:
            if self.auto and p.auto_target is not None and ov + ctx.running + res <= p.auto_target * window:
                break
            if step == "summarize" and self.auto and ov + ctx.running + res <= p.summarize_threshold * window:
                continue
            self._apply(ctx, s, step, boundary)

    def _scan(self, st: Stream, s: dict[str, Any], lo: int, hi: int) -> None:
        p = self.params
        turns, turn_pos = s["turns"], s["turn_pos"]
        use_pos, bykey, reads, heap = s["use_pos"], s["bykey"], s["reads"], s["superseded"]
        excl = s["dedup_excl"]
        dedup = "dedup-tools" in self.pipeline
        bkind, ut = st.bkind, st.user_turn
        for i in range(lo, hi):
            t = ut[i]
            if not turns or t > turns[-1]:
                turns.append(t)
                turn_pos.append(i)
            if not dedup:
                continue
            bk = bkind[i]
            if bk == K_TOOL_USE:
                tu = st.tool_use[i]
                if tu >= 0:
                    use_pos[tu] = i
                continue
            if bk != K_TOOL_RESULT or st.tool_kind[i] in excl:
                continue
            u = use_pos.get(st.tool_use[i], -1)
            a = st.args[i]
            if a >= 0:
                key = (st.tool[i], a)
                old = bykey.get(key)
                if old is not None:
                    heapq.heappush(heap, (old[1], old[0]))
                bykey[key] = (u, i)
            if p.subsumption and st.tool_kind[i] == _READ_KIND and st.resource[i] >= 0:
                r = st.resource[i]
                ls, le = st.line_start[i], st.line_end[i]
                alive = reads.get(r)
                if alive:
                    keep = []
                    for e in alive:
                        if covers(ls, le, e[2], e[3]):
                            heapq.heappush(heap, (e[1], e[0]))
                        else:
                            keep.append(e)
                    keep.append((u, i, ls, le))
                    reads[r] = keep
                else:
                    reads[r] = [(u, i, ls, le)]

    def _apply(self, ctx: Context, s: dict[str, Any], step: str, boundary: int) -> None:
        st = ctx.stream
        p = self.params
        rr = s["rr"]
        m = ctx.metrics
        n = 0
        saved = 0.0
        if step == "dedup-tools":
            heap = s["superseded"]
            while heap and heap[0][0] < boundary:
                r, u = heapq.heappop(heap)
                for q in (u, r):
                    if q >= 0:
                        d = shrink(ctx, q, 0.0, rr)
                        if d:
                            n += 1
                            saved += d
        elif step == "prune-tools":
            return  # applied to the overhead (see overhead())
        elif step == "summarize":
            s0 = s["s0"]
            lo = max(s["done"].get(step, s0 + 1), s0 + 1)
            eff = ctx.eff
            region = 0.0
            for i in range(lo, boundary):
                region += eff[i]
                d = shrink(ctx, i, 0.0, rr)
                if d:
                    n += 1
                    saved += d
            s["done"][step] = max(lo, boundary)
            old = eff[s0]
            if s["summary_at"] is None:
                # the summary replaces block s0 too; it is never longer than what it replaces
                s["summary_at"] = s0
                new = min(p.summary_tokens, old + region)
                if new != old:
                    ctx.set_size(s0, new)
                    rr.trimmed(st, s0)
                n += 1
                saved += old - new
            elif region > 0:
                # the new summary folds in the old one: the prefix is rewritten from its start
                new = min(p.summary_tokens, old + region)
                if new != old:
                    ctx.set_size(s0, new)
                saved += old - new
                if ctx.changed_from is None or s0 < ctx.changed_from:
                    ctx.changed_from = s0
        else:
            s0 = s["s0"]
            lo = max(s["done"].get(step, s0), s0)
            bkind = st.bkind
            if step == "strip-reasoning":
                kind, size, excl = K_THINKING, p.reasoning_tokens, None
            elif step == "strip-attachments":
                kind, size, excl = K_ATTACHMENT, 0.0, None
            else:  # strip-tool-results
                kind, size, excl = K_TOOL_RESULT, p.stub_tokens, s["strip_excl"]
            eff = ctx.eff
            tool = st.tool
            for i in range(lo, boundary):
                if bkind[i] == kind and eff[i] > size and not (excl and tool[i] in excl):
                    saved += shrink(ctx, i, size, rr)
                    n += 1
            s["done"][step] = max(lo, boundary)
        m[f"step:{step}:blocks"] += n
        m[f"step:{step}:tokens"] += saved

    # report --------------------------------------------------------------------------------
    def report(self, figures: dict[str, float]) -> dict[str, Any]:
        """The RFD's CompactionReport from a figures dict (one session's, or summed over many)."""
        steps = []
        for step in self.pipeline:
            steps.append({"strategy": step, "events_removed": int(figures.get(f"step:{step}:blocks", 0)),
                          "estimated_tokens_saved": figures.get(f"step:{step}:tokens", 0.0)})
        return {"compactions": int(figures.get("step:compactions", 0)),
                "events_removed": sum(x["events_removed"] for x in steps if x["strategy"] != "prune-tools"),
                "estimated_tokens_saved": sum(x["estimated_tokens_saved"] for x in steps),
                "steps": steps}
