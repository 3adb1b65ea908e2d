"""jp_compaction: JP RFD 036 conversation compaction, replayed offline.

Source: seed 001, JP RFD 036 "Conversation Compaction" (``jp conversation compact`` and
``jp query --compact``). Strategies are applied left to right; every one respects
``keep_last`` (default 1): the last N user turns are untouched, only events before the
first block of turn ``current - keep_last + 1`` are changed.

* ``strip-reasoning``: reasoning (thinking blocks) is removed (``reasoning_tokens`` = 0),
  except where the provider no longer keeps it: for Claude Opus < 4.5, Sonnet < 4.6 and
  Haiku <= 4.5 the API strips earlier turns' thinking at each new user turn
  (``common.keeps_thinking`` cites the docs), so removing it would save tokens the provider
  never saw (the anchoring nets them out of the baseline). ``summarize`` skips it too.
* ``dedup-tools``: of the tool calls with the same name and identical arguments only the
  newest is kept; an older call pair (tool_use + tool_result) is removed entirely. It
  includes the tool-aware ``Subsumes`` rule of ``fs_read_file``: a newer read of the same
  file whose line range contains an older one's (``read_file(1,10)`` covers
  ``read_file(2,5)``; a whole-file read covers every partial one) removes the older pair.
  The newer call may sit in the kept turns; only the older pair must be before the boundary.
  Per the RFD's default hints (below), file-mutating tools (``fs_create_file``/
  ``fs_modify_file``) and ``git_commit`` have ``dedup = false``: they are not deduplicated.
* ``strip-tool-results``: a tool_result whose tool's hint is ``response = "strip"`` becomes
  ``[compacted] name: success|error``; its size ``stub_tokens`` defaults to 9, the o200k
  count of the RFD's example ``[compacted] fs_read_file: success``. (The prose also
  mentions "the first line of output", which the example omits and the trace cannot size;
  the example is followed.) Tools whose hint is ``keep`` are left as they are.
* ``strip-attachments``: attachment blocks before the boundary are removed.
* ``prune-tools``: tool definitions never used in the stream leave the system prompt. The
  trace does not record the definitions, so their size is a parameter: ``tool_def_tokens``
  per definition and ``tools_defined`` definitions (both 0 by default = nothing pruned).
  The engine fixes a stream's overhead before its first request (``overhead()`` hook), so
  the pruned share leaves the overhead from the start of every stream that compacts at all,
  and the system-prefix cache bust it would cause at the compaction is not modelled; "never
  used" looks at the whole stream (the agent is assumed to act the same afterwards).
* ``summarize``: offline, no model call: everything before the boundary is replaced by one
  summary of ``summary_tokens`` (default 2,500 o200k tokens, about the median Claude Code
  compaction summary on the shared corpus: 2,477 o200k), placed at the start of the
  conversation, and never longer than the tokens it replaces. A later summarize folds the
  old summary into the new one (the prefix is rewritten from the start).
* ``auto`` (default) = strip-reasoning -> dedup-tools -> strip-tool-results -> prune-tools ->
  summarize, the last only when the context still exceeds ``summarize_threshold`` (0.5) of
  the window. The RFD runs every mechanical step; ``auto_target`` (default None) optionally
  stops the pipeline as soon as the context is at or below that fraction of the window.
* ``classify-tangents`` needs a model and a person to confirm the removals: not implemented;
  asking for it is an error.

Per-tool defaults: the RFD's "Default Compaction Hints" for JP's built-in tools, applied
when ``tool_hints`` is on (``TOOL_HINTS``):

| tool | response | dedup | subsumes |
|---|---|---|---|
| fs_read_file | strip | true | yes (line range containment) |
| fs_grep_files | strip | true | no |
| fs_list_files | strip | true | no |
| cargo_check | strip | true | no (each run may differ) |
| cargo_test | strip | true | no |
| fs_create_file | strip | false | no |
| fs_modify_file | strip | false | no |
| git_diff | strip | true | no |
| git_commit | keep | false | no |

A tool named like a row (or an MCP tool ending in one, ``mcp__git__git_commit``) takes that
row; otherwise the trace's tool kind stands for JP's file tools: ``read`` = fs_read_file
(Read, NotebookRead), ``search`` = fs_grep_files (Grep), ``list`` = fs_list_files (Glob, LS),
``mutate`` = fs_create/modify_file (Write, Edit, MultiEdit). Any other tool has no hint: the
RFD's default response ``keep`` ("default for most tools"; ``unhinted_response``) and plain
dedup. So is Claude Code's Bash: JP's command tools (cargo_*, git_diff, git_commit) are
separate tools, and the trace hashes the command (a ``git commit`` looks like a ``cargo
test``); ``unhinted_response = "strip"`` stubs every unhinted tool. ``tool_hints = False``:
the plain strategies (every result stubbed, every tool but ``dedup_exclude_kinds``
deduplicated). The RFD's ``remove`` response is used by no default and not offered.

When it runs: compaction is an explicit user action in the RFD (``jp query --compact``
compacts before sending the next query), so it is considered only at the first request of
a user turn, and fires there when the turn number reaches ``trigger_turn`` (once) or, if
that is unset, when the request's input exceeds ``trigger_fraction`` (0.5, the RFD's
summarize threshold) of ``window_tokens`` (200,000). Compacted blocks stay compacted (the
conversation is rewritten). Each step keeps its own position, so a firing only looks at
blocks that became compactable since the previous one.

Units: ``stub_tokens``, ``reasoning_tokens``, ``summary_tokens`` and ``tool_def_tokens``
are o200k tokens; each is converted to the stream's units (provider tokens: x the stream's
``bpe_ratio``, ``ctx.units``) where it is inserted, like the blocks it replaces.

Re-reads (``reread_cost``, on by default; a pessimistic price beyond the source, which says
only that compaction is "lossy by design"): strip-tool-results, strip-attachments and
summarize remove content that is no repeat; when the agent later re-reads a resource whose
content one of them removed (a read-kind tool_use naming it), the block gets its full size
back from that request on (a retroactive change there, priced by the engine, bust included)
and is never compacted again. dedup-tools removes repeats (the newer call stays) and
prune-tools unused definitions: not charged. Off: re-reads are only counted.

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
from replay.policies.base import Context, as_tuples, did_you_mean, non_negative, one_of
from replay.policies.common import (ScanningPolicy, codes, covers, dropped_thinking_turn, overhead_of,
                                    provider_drops, shrink)

STRATEGIES = ("strip-reasoning", "dedup-tools", "strip-tool-results", "strip-attachments", "prune-tools", "summarize")
AUTO = ("strip-reasoning", "dedup-tools", "strip-tool-results", "prune-tools", "summarize")
NOT_IMPLEMENTED = {
    "classify-tangents": "classify-tangents asks a model which turns are tangents and a person to confirm "
                         "their removal; it cannot be replayed offline and is not implemented",
}
_READ_KIND = TOOL_KIND_CODE["read"]

# RFD 036 "Default Compaction Hints": JP's built-in tools -> (response, dedup, subsumes).
TOOL_HINTS: dict[str, tuple[str, bool, bool]] = {
    "fs_read_file": ("strip", True, True), "fs_grep_files": ("strip", True, False),
    "fs_list_files": ("strip", True, False), "cargo_check": ("strip", True, False),
    "cargo_test": ("strip", True, False), "fs_create_file": ("strip", False, False),
    "fs_modify_file": ("strip", False, False), "git_diff": ("strip", True, False),
    "git_commit": ("keep", False, False),
}
# The trace's tool kinds standing for JP's file tools (any agent's tools of that kind).
KIND_HINTS = {"read": "fs_read_file", "search": "fs_grep_files", "list": "fs_list_files", "mutate": "fs_modify_file"}
RESPONSES = ("keep", "strip")


def hint_row(tool_name: str | None) -> str | None:
    """The hint row a tool is named after: the name itself, or an MCP tool's last segment."""
    name = tool_name or ""
    name = name.rsplit("__", 1)[-1] if name.lower().startswith("mcp__") else name
    return name if name in TOOL_HINTS else None


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
        # Size of a stripped reasoning block, o200k tokens (the RFD removes it: 0).
        reasoning_tokens: float = 0.0
        # Size of a stripped tool result, "[compacted] fs_read_file: success" in o200k tokens.
        stub_tokens: float = 9.0
        # Apply the RFD's Default Compaction Hints per tool (strip/keep, dedup); off: every
        # tool's result is stripped and every tool deduplicated (but dedup_exclude_kinds).
        tool_hints: bool = True
        # Response of a tool without a hint row (RFD: "keep", the default for most tools;
        # "strip" stubs them too, e.g. Claude Code's Bash).
        unhinted_response: str = "keep"
        # Tools whose results strip-tool-results keeps (a per-tool `response = "keep"`).
        strip_exclude_tools: tuple[str, ...] = ()
        # Tool kinds dedup-tools never touches (RFD defaults: file create/modify have dedup = false).
        dedup_exclude_kinds: tuple[str, ...] = ("mutate",)
        # Apply fs_read_file's line-range subsumption inside dedup-tools (RFD: yes).
        subsumption: bool = True
        # Size of the summary replacing everything before the boundary, o200k tokens.
        summary_tokens: float = 2_500.0
        # Tokens of one tool definition in the system prompt, o200k (prune-tools; unknown from the trace).
        tool_def_tokens: float = 0.0
        # Number of tool definitions the agent sends (prune-tools; 0 = nothing to prune).
        tools_defined: int = 0
        # Price a later re-read of content a lossy step (strip-tool-results, strip-attachments,
        # summarize) removed: the block gets its full size back from the re-reading request on
        # (pessimistic, beyond the source). False: re-reads are only counted (trimmed_reread).
        reread_cost: bool = True

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
            one_of(self, "unhinted_response", RESPONSES)
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
        # per tool code / tool kind code: the hint row (None: no hint)
        named = {c: hint_row(n) for c, n in enumerate(ctx.vocab.tool_names)} if p.tool_hints else {}
        s["row_by_tool"] = {c: r for c, r in named.items() if r is not None}
        s["row_by_kind"] = {TOOL_KIND_CODE[k]: r for k, r in KIND_HINTS.items()} if p.tool_hints else {}
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
            s["pruned"] = (n, n * ctx.units(p.tool_def_tokens)) if self._will_fire(st) else (0, 0.0)
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
        s["cut"] = dropped_thinking_turn(ctx, k)
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
        by_tool, by_kind = s["row_by_tool"], s["row_by_kind"]
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
            row = by_tool.get(st.tool[i]) or by_kind.get(st.tool_kind[i])
            if row is not None and not TOOL_HINTS[row][1]:
                continue  # the tool's hint says dedup = false
            u = use_pos.get(st.tool_use[i], -1)
            a = st.args[i]
            if a >= 0:
                key = (st.tool[i], a)
                old = bykey.get(key)
                if old is not None:
                    heapq.heappush(heap, (old[1], old[0]))
                bykey[key] = (u, i)
            subsumes = TOOL_HINTS[row][2] if p.tool_hints and row is not None else (
                not p.tool_hints and st.tool_kind[i] == _READ_KIND)
            if p.subsumption and subsumes and st.resource[i] >= 0:
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
        restored = s["restored"]
        cut = s["cut"]
        n = 0
        saved = 0.0
        if step == "dedup-tools":
            heap = s["superseded"]
            while heap and heap[0][0] < boundary:
                r, u = heapq.heappop(heap)
                if r in restored:
                    continue  # a re-read gave the result back: the pair stays
                for q in (u, r):
                    if q >= 0:
                        d = shrink(ctx, q, 0.0, rr)   # a repeat: the newer call stays in context
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
                if i in restored or provider_drops(st, i, cut):
                    continue
                region += eff[i]
                d = shrink(ctx, i, 0.0, rr, lossy=True)
                if d:
                    n += 1
                    saved += d
            s["done"][step] = max(lo, boundary)
            old = eff[s0]
            summary = ctx.units(p.summary_tokens)
            if s["summary_at"] is None:
                # the summary replaces block s0 too; it is never longer than what it replaces
                s["summary_at"] = s0
                new = min(summary, old + region)
                if new != old:
                    ctx.set_size(s0, new)
                    rr.trimmed(st, s0)
                n += 1
                saved += old - new
            elif region > 0:
                # the new summary folds in the old one: the prefix is rewritten from its start
                new = min(summary, old + region)
                if new != old:
                    ctx.set_size(s0, new)
                saved += old - new
                if ctx.changed_from is None or s0 < ctx.changed_from:
                    ctx.changed_from = s0
        else:
            s0 = s["s0"]
            lo = max(s["done"].get(step, s0), s0)
            bkind = st.bkind
            eff = ctx.eff
            if step == "strip-reasoning":
                size = ctx.units(p.reasoning_tokens)
                for i in range(lo, boundary):
                    if bkind[i] == K_THINKING and eff[i] > size and st.user_turn[i] >= cut:
                        saved += shrink(ctx, i, size, rr)
                        n += 1
            else:
                tr = step == "strip-tool-results"
                kind, size = (K_TOOL_RESULT, ctx.units(p.stub_tokens)) if tr else (K_ATTACHMENT, 0.0)
                for i in range(lo, boundary):
                    if bkind[i] == kind and eff[i] > size and i not in restored and not (tr and self._kept(s, st, i)):
                        saved += shrink(ctx, i, size, rr, lossy=True)
                        n += 1
            s["done"][step] = max(lo, boundary)
        m[f"step:{step}:blocks"] += n
        m[f"step:{step}:tokens"] += saved

    def _kept(self, s: dict[str, Any], st: Stream, i: int) -> bool:
        """Does strip-tool-results keep result ``i`` (strip_exclude_tools, or its tool's hint)?"""
        if st.tool[i] in s["strip_excl"]:
            return True
        if not self.params.tool_hints:
            return False
        row = s["row_by_tool"].get(st.tool[i]) or s["row_by_kind"].get(st.tool_kind[i])
        return self.params.unhinted_response == "keep" if row is None else TOOL_HINTS[row][0] == "keep"

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
