"""anthropic_clear_tool_uses: Anthropic API context editing, strategy ``clear_tool_uses_20250919``.

Source: Anthropic's "Context editing" documentation (docs.claude.com / platform.claude.com,
build-with-claude/context-editing; beta header ``context-management-2025-06-27``), and
DESIGN.md section 4. What the documentation says, and how it is replayed:

* "When activated, the API automatically clears the oldest tool results in chronological
  order, replacing them with placeholder text to let Claude know the tool result was
  removed. By default, only tool results are cleared"; ``clear_tool_inputs`` (default
  false) also clears the tool calls' parameters.
* ``trigger`` (default 100,000 input tokens): once the prompt exceeds it, clearing begins.
* ``keep`` (default 3 tool uses): the most recent tool use/result pairs that are kept;
  "the API removes the oldest tool interactions first". Here the 3 most recent tool
  results of any tool are kept (excluded tools count towards them) and every older one
  is cleared.
* ``clear_at_least`` (no default): a minimum number of tokens each activation must clear,
  so that the cache invalidation is worth it; when that much cannot be cleared the strategy
  is not applied. Unset = any amount. Whether an activation then clears every older result
  or stops once that minimum is reached is not documented: ``clear_mode="all"`` (default,
  the plain reading of ``keep``) clears all but the ``keep`` newest; ``"at_least"`` clears
  the oldest results only until ``clear_at_least`` tokens are cleared, as LangChain's
  ``ClearToolUsesEdit`` middleware (which mirrors this API) does. With a stateless server,
  "all" moves the cleared point on every request (each new tool use pushes one more result
  out of the kept window), which invalidates every cache entry past it; "at_least" clears
  the same oldest results on every request, so the prefix stays stable after the first
  activation (and the context grows again).
* ``exclude_tools`` (default none): tools whose uses and results are never cleared.
* "Context editing is applied server-side before the prompt reaches Claude. Your client
  application maintains the full, unmodified conversation history." So it is stateless:
  every request is edited afresh from the full history. The trigger therefore compares the
  full prompt (overhead + every block of the partition at its original size); once above it,
  every request clears all tool results but the 3 newest, and each new tool use moves that
  point forward (a cache bust just behind the newest tool uses, as the docs warn: clearing
  "invalidates cached prompt prefixes"). If ``clear_at_least`` is not met, nothing is
  cleared (a result cleared by the previous request comes back at full size).
* The placeholder's text is not published: ``placeholder_tokens`` (default 10 o200k tokens)
  is the size of a cleared result, ``cleared_input_tokens`` (default 10) that of a tool_use
  whose input was cleared (name and id remain). Both are assumptions, in o200k tokens,
  converted to the stream's units (x its ``bpe_ratio``, ``ctx.units``) where inserted.
* Re-reads (``reread_cost``, on by default; a pessimistic price beyond the source): clearing
  is lossy (the result is gone, not repeated elsewhere). When the agent later re-reads a
  resource whose result was cleared (a read-kind tool_use naming it), the cleared result gets
  its full size back from that request on, a retroactive change at that block which the
  engine prices (cache bust included), and is never cleared again (its saving leaves
  ``clear_at_least``'s count). Off: re-reads are only counted (``trimmed_reread``).
* Not modelled: a ``tool_uses`` trigger type, ``clear_tool_inputs`` as a list of tool names,
  and the separate ``clear_thinking_20251015`` strategy.

Cost: tool results are listed once as they enter context; the cleared prefix only grows
(except when ``clear_at_least`` switches the strategy off), so each request touches only the
newly cleared results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replay.model.arrays import K_TOOL_RESULT, K_TOOL_USE, Stream
from replay.policies.base import Context, as_tuples, non_negative, one_of
from replay.policies.common import ScanningPolicy, codes, full_prompt, restore_rereads, shrink

CLEAR_MODES = ("all", "at_least")


class AnthropicClearToolUses(ScanningPolicy):
    """Server-side: when the prompt exceeds trigger tokens, every tool result but the keep newest is replaced by a
    placeholder, oldest first; recomputed on each request from the full history."""

    name = "anthropic_clear_tool_uses"
    source = "Anthropic API context editing, clear_tool_uses_20250919 (docs: build-with-claude/context-editing)"

    @dataclass(frozen=True)
    class Params:
        # Input tokens above which clearing applies (API default 100,000).
        trigger: int = 100_000
        # Most recent tool uses whose results are kept (API default 3).
        keep: int = 3
        # Minimum tokens an activation must clear, else nothing is cleared (API: no default).
        clear_at_least: int | None = None
        # Tool names whose uses and results are never cleared (API default none).
        exclude_tools: tuple[str, ...] = ()
        # Also clear the tool_use inputs of cleared results (API default false).
        clear_tool_inputs: bool = False
        # "all": clear every result but the keep newest; "at_least": oldest first, stop once
        # clear_at_least tokens are cleared (LangChain's reading; = "all" when clear_at_least unset).
        clear_mode: str = "all"
        # Size of a cleared tool result, o200k tokens (placeholder text unpublished: assumption).
        placeholder_tokens: float = 10.0
        # Size of a tool_use whose input was cleared, o200k tokens (assumption).
        cleared_input_tokens: float = 10.0
        # Price a later re-read of a cleared result: it gets its full size back from the
        # re-reading request on (pessimistic, beyond the source). False: only counted.
        reread_cost: bool = True

        def __post_init__(self):
            as_tuples(self, "exclude_tools")
            non_negative(self, "trigger", "keep")
            if self.clear_at_least is not None and self.clear_at_least < 0:
                raise ValueError("clear_at_least must be >= 0 (or None)")
            one_of(self, "clear_mode", CLEAR_MODES)
            non_negative(self, "placeholder_tokens", "cleared_input_tokens")

    def setup(self, ctx: Context, s: dict[str, Any]) -> None:
        s["excl"] = codes(ctx, self.params.exclude_tools)

    def reset(self, s: dict[str, Any], pos: int) -> None:
        super().reset(s, pos)
        s["full"] = 0.0        # original tokens of the partition's blocks so far
        s["use_pos"] = {}      # tool_use code -> position
        s["calls"] = []        # (use position or -1, result position, excluded) per tool result
        s["cand"] = 0          # calls[:cand] are candidates (all but the keep newest)
        s["saving"] = 0.0      # tokens clearing all candidates would remove
        s["applied"] = 0       # calls[:applied] are cleared now
        s["stop"] = 0          # "at_least": calls[:stop] are the fewest oldest reaching clear_at_least

    def reread(self, ctx: Context, s: dict[str, Any], due: list[int]) -> None:
        restore_rereads(ctx, s, due)
        # a restored result is never cleared again: its saving no longer counts
        ph = ctx.units(self.params.placeholder_tokens)
        tokens = ctx.stream.tokens
        for r in due:
            s["saving"] -= max(0.0, tokens[r] - ph)

    def before_request(self, ctx: Context, k: int) -> None:
        self.catch_up(ctx, k)
        s = ctx.state
        st = ctx.stream
        p = self.params
        calls = s["calls"]
        restored = s["restored"]
        cand = max(0, len(calls) - p.keep)
        cal = p.clear_at_least
        at_least = p.clear_mode == "at_least" and bool(cal)
        ph, ci = ctx.units(p.placeholder_tokens), ctx.units(p.cleared_input_tokens)
        if cand > s["cand"]:
            tokens = st.tokens
            saving = s["saving"]
            for j in range(s["cand"], cand):
                u, r, ex = calls[j]
                if ex:
                    continue
                saving += max(0.0, tokens[r] - ph)
                if p.clear_tool_inputs and u >= 0:
                    saving += max(0.0, tokens[u] - ci)
                if at_least and not s["stop"] and saving >= cal:
                    s["stop"] = j + 1
            s["saving"] = saving
            s["cand"] = cand
        if at_least:
            target = s["stop"]
            ok = target > 0
        else:
            target = cand
            ok = s["saving"] > 0 and (cal is None or s["saving"] >= cal)
        applied = s["applied"]
        if full_prompt(st, k, s["full"]) > p.trigger and ok:
            if target > applied:
                rr = s["rr"]
                for u, r, ex in calls[applied:target]:
                    if ex:
                        continue
                    if r not in restored:
                        shrink(ctx, r, ph, rr, lossy=True)
                    if p.clear_tool_inputs and u >= 0:
                        shrink(ctx, u, ci, rr)
                s["applied"] = target
        elif applied:
            # stateless server-side editing: not applied this time, the full history is sent
            tokens = st.tokens
            for u, r, ex in calls[:applied]:
                if ex:
                    continue
                ctx.set_size(r, tokens[r])
                if p.clear_tool_inputs and u >= 0:
                    ctx.set_size(u, tokens[u])
            s["applied"] = 0

    def _scan(self, st: Stream, s: dict[str, Any], lo: int, hi: int) -> None:
        excl, use_pos, calls = s["excl"], s["use_pos"], s["calls"]
        tokens, bkind = st.tokens, st.bkind
        full = s["full"]
        for i in range(lo, hi):
            full += tokens[i]
            bk = bkind[i]
            if bk == K_TOOL_USE:
                tu = st.tool_use[i]
                if tu >= 0:
                    use_pos[tu] = i
            elif bk == K_TOOL_RESULT:
                calls.append((use_pos.get(st.tool_use[i], -1), i, st.tool[i] in excl))
        s["full"] = full
