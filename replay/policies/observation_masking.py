"""observation_masking: SWE-agent's ``LastNObservations`` history processor (observation masking).

Sources:

* SWE-agent, ``sweagent/agent/history_processors.py``, class ``LastNObservations``
  (github.com/SWE-agent/SWE-agent). Its docstring: "Elide all but the last n observations";
  elided observations are replaced by the text ``Old environment output: (N lines omitted)``
  (``N`` = the observation's line count; `` (K images omitted)`` is appended when it held
  images), and "using this history processor will break prompt caching (as the history of
  every query will change every time due to the elided observations). There are some
  workarounds possible with the `polling` parameter." ``polling`` (SWE-agent default 1): "How
  many steps to keep between updating the number of observations to keep ... Effectively, we
  will now keep between `n` and `n+polling` observations."
* "The Complexity Trap: Simple Observation Masking Is as Efficient as LLM Summarization for
  Agent Context Management" (Lindenbauer et al., JetBrains Research, arXiv 2508.21433, 2025),
  whose code (github.com/Recursive-Safeguarding/the-complexity-trap, e.g.
  ``config/default_no_demo_N=1_M=10.yaml``: ``history_processors: - type:
  last_n_observations, n: 10``) runs the same processor with M = n = 10 and SWE-agent's
  default polling, so every step masks. The paper reports 50-57% lower cost per SWE-bench
  Verified instance for non-thinking models at M = 10, with prompt caching as each provider
  bills it (the claim ``ctxreplay claims`` tests).

The rule, exactly as the source computes it before every model query (stateless: from the
whole history): the observation indices are every observation message, the first of which is
SWE-agent's instance template (the task) and is never elided; with ``N`` observations in the
history (template included), ``last = max(0, (N // polling) * polling - n)`` and the
observations at list positions ``1 .. last - 1`` are elided. With ``polling = 1`` that keeps
exactly the ``n`` newest; with ``polling = p`` the cut moves only when ``N`` reaches a multiple
of ``p``, by ``p`` observations at once, so between ``n`` and ``n + p - 1`` are kept (the
docstring's "n+polling" is its upper bound) and the cached prefix breaks once per ``p`` steps
instead of every step.

Mapping to the trace:

* an observation is a tool_result block (``tools``: the tool names that count, default every
  tool; a tool_result of another tool is not an observation and never masked). The task
  message is a user_text block, so ``N`` = observations so far + 1 (the template's place);
* ``window`` = SWE-agent's ``n`` (default 10, the paper's M); ``polling`` = SWE-agent's
  ``polling``; 0 (default) means the same as 1, every step, as the paper ran it;
* ``keep_tools`` (default none) plays SWE-agent's ``always_keep_output_for_tags`` as
  ``TagToolCallObservations`` sets it by function name: those tools' results count as
  observations but are never elided;
* the placeholder ``Old environment output: (N lines omitted)`` is 9 o200k tokens for a
  2- or 3-digit ``N`` (10 for 4 digits), counted with the ingest's counter; the trace keeps no
  line count per result, so ``placeholder_tokens`` = 9, converted to the stream's units (x its
  ``bpe_ratio``, ``ctx.units``) where inserted;
* masking restarts at a compaction boundary of the log (the partition's history is new);
* the source recomputes from the full history, and the elided set only grows within a
  partition, so a masked result stays masked.

Re-reads (``reread_cost``, on by default; a pessimistic price beyond the source): masking is
lossy. When the agent later re-reads a resource whose result was masked (a read-kind tool_use
naming it), the masked result gets its full size back from that request on (a retroactive
change there, priced by the engine, cache bust included) and is never masked again. Off:
re-reads are only counted (``trimmed_reread``).

Cost: observations are listed once as they enter context; a pointer marks how many of them the
cut has passed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replay.model.arrays import K_TOOL_RESULT, Stream
from replay.policies.base import Context, as_tuples, non_negative
from replay.policies.common import ScanningPolicy, codes, shrink

PLACEHOLDER = "Old environment output: ({n} lines omitted)"


def masked_count(observations: int, window: int, polling: int) -> int:
    """How many of the oldest ``observations`` tool results SWE-agent's ``LastNObservations``
    elides: its ``observation_indices[1:last]`` over a history whose first observation is the
    instance template (so ``N`` = observations + 1), ``polling`` 0 read as 1."""
    p = polling if polling > 0 else 1
    last = max(0, ((observations + 1) // p) * p - window)
    return max(0, last - 1)


class ObservationMasking(ScanningPolicy):
    """SWE-agent's LastNObservations: every tool result but the window newest is replaced by "Old environment
    output: (N lines omitted)"; with polling p the cut moves p results at a time (masks in batches)."""

    name = "observation_masking"
    source = ("SWE-agent LastNObservations history processor (sweagent/agent/history_processors.py), as run by "
              "'The Complexity Trap' (arXiv 2508.21433) with n = 10")

    @dataclass(frozen=True)
    class Params:
        # Newest observations kept (SWE-agent's n; the Complexity Trap's M = 10).
        window: int = 10
        # Steps between moves of the cut (SWE-agent's polling); 0 or 1 = every step, as the paper.
        polling: int = 0
        # Tools whose results are observations (empty = every tool result).
        tools: tuple[str, ...] = ()
        # Tools whose results count as observations but are never masked (always_keep_output_for_tags).
        keep_tools: tuple[str, ...] = ()
        # Size of "Old environment output: (N lines omitted)", o200k tokens (9 for a 2-3 digit N).
        placeholder_tokens: float = 9.0
        # Price a later re-read of a masked result: it gets its full size back from the
        # re-reading request on (pessimistic, beyond the source). False: only counted.
        reread_cost: bool = True

        def __post_init__(self):
            as_tuples(self, "tools", "keep_tools")
            non_negative(self, "polling", "placeholder_tokens")
            if self.window < 1:
                raise ValueError("window must be >= 1 (SWE-agent: n must be a positive integer)")

    def setup(self, ctx: Context, s: dict[str, Any]) -> None:
        p = self.params
        s["tools"] = codes(ctx, p.tools) if p.tools else None
        s["keep"] = codes(ctx, p.keep_tools)
        ctx.metrics.setdefault("masks", 0.0)

    def reset(self, s: dict[str, Any], pos: int) -> None:
        super().reset(s, pos)
        s["obs"] = []       # positions of the partition's observations, in order
        s["masked"] = 0     # obs[:masked] are past the cut

    def before_request(self, ctx: Context, k: int) -> None:
        self.catch_up(ctx, k)
        s = ctx.state
        p = self.params
        obs = s["obs"]
        target = masked_count(len(obs), p.window, p.polling)
        if target <= s["masked"]:
            return
        st = ctx.stream
        rr, keep, restored = s["rr"], s["keep"], s["restored"]
        size = ctx.units(p.placeholder_tokens)
        moved = False
        for i in obs[s["masked"]:target]:
            if st.tool[i] in keep or i in restored:
                continue
            if shrink(ctx, i, size, rr, lossy=True):
                moved = True
        s["masked"] = target
        if moved:
            ctx.metrics["masks"] += 1

    def _scan(self, st: Stream, s: dict[str, Any], lo: int, hi: int) -> None:
        tools, obs = s["tools"], s["obs"]
        bkind, tool = st.bkind, st.tool
        for i in range(lo, hi):
            if bkind[i] == K_TOOL_RESULT and (tools is None or tool[i] in tools):
                obs.append(i)
