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

* an observation is one *step*'s output (``observation = "step"``, the default): the tool_result
  blocks a request carries that are new since the previous request of the stream (``tools``:
  the tool names that count, default every tool; a tool_result of another tool is not part of
  an observation and never masked; a request with none adds no observation). SWE-agent's agents
  make one action per step and add its output to the history as one ``message_type:
  "observation"`` item (``sweagent/agent/agents.py``, ``DefaultAgent``: "assert
  len(tool_call_ids) == 1, 'This should be ensured by the FunctionCalling parse method'"),
  so ``n`` counts steps; a Claude Code request often carries several results of parallel tool
  calls (on the shared logs 245 of the 2,619 requests with a new tool result on
  ``claude-code/``, 1,290 of 9,562 on ``entire-cli/``), and they count as one observation and
  are masked together. ``observation = "result"`` counts every tool_result block as an
  observation of its own (this replay's rule before issue 36: more observations per request,
  so the cut moves faster and more is masked). The task message is a user_text block, so ``N``
  = observations so far + 1 (the template's place);
* ``window`` = SWE-agent's ``n`` (default 10, the paper's M); ``polling`` = SWE-agent's
  ``polling`` (default 1, every step, as the paper ran it). SWE-agent divides by it, so
  ``polling = 0`` is refused (an error naming ``polling``), as is a negative value;
* ``keep_tools`` (default none) plays SWE-agent's ``always_keep_output_for_tags`` as
  ``TagToolCallObservations`` sets it by function name: those tools' results count towards
  their observation but are never elided (the other results of the same step are);
* the placeholder ``Old environment output: (N lines omitted)`` is 9 o200k tokens for a
  2- or 3-digit ``N`` (10 for 4 digits), counted with the ingest's counter; the trace keeps no
  line count per result, so ``placeholder_tokens`` = 9, converted to the stream's units (x its
  ``bpe_ratio``, ``ctx.units``) where inserted. A masked step keeps one placeholder per
  tool_result block (the API pairs every tool_use with a result);
* masking restarts at a compaction boundary of the log (the partition's history is new);
* the source recomputes from the full history, and the elided set only grows within a
  partition, so a masked result stays masked.

Re-reads (``reread_cost``, on by default; a pessimistic price beyond the source): masking is
lossy. When the agent later re-reads a resource whose result was masked (a read-kind tool_use
naming it), the masked result gets its full size back from that request on (a retroactive
change there, priced by the engine, cache bust included) and is never masked again. Off:
re-reads are only counted (``trimmed_reread``).

Measured on ``entire-cli/`` (143 sessions; calibrated variant, TTL as logged; the saving
against the no-op with its 95% paired bootstrap interval over sessions, as ``compare`` prints)::

    ctxreplay ingest ../shared/logs/entire-cli --db /tmp/e.duckdb
    ctxreplay replay --db /tmp/e.duckdb --policy noop
    ctxreplay replay --db /tmp/e.duckdb --policy observation_masking   # --set reread_cost=false, observation=result
    ctxreplay sweep examples/observation_masking_window_polling.toml --db /tmp/e.duckdb   # polling [1, 5, 10]
    ctxreplay compare --db /tmp/e.duckdb

At the paper's setting (M = 10 steps, every step) the context sent falls 24.77% but the cost
rises from $758.67 to $2,338.74: saving -208.27% [-234.28, -182.94] (model only -261.65%),
with 6,748 cache busts where the no-op has none; without the re-read charge (``reread_cost =
false``) 32.83% fewer context tokens and still -131.95% [-146.36, -116.82]. Counting each
result as an observation (``observation = "result"``, the rule before issue 36) masks more:
26.55% fewer context tokens, -215.17% [-242.13, -189.04], 7,458 busts. Every step moves the cut
past one more step, so every request rewrites the cache from about M steps back at the write
price instead of reading it. Polling batches those rewrites (cost saved, 95% interval, context
tokens saved; the sweep above, steps as observations):

| window \\ polling | 1 | 5 | 10 |
|---|---|---|---|
| 5 | -203.30% [-230.14, -176.63], 28.35% | -41.95% [-50.91, -33.26], 26.80% | -20.74% [-26.95, -14.71], 25.57% |
| 10 | -208.27% [-234.28, -182.94], 24.77% | -42.72% [-50.95, -34.60], 23.51% | -18.28% [-24.36, -12.67], 21.91% |
| 20 | -201.06% [-227.14, -175.02], 19.67% | -40.81% [-48.43, -33.62], 18.66% | -16.94% [-22.39, -12.04], 17.58% |

The cheapest setting with caching is window 20, polling 10, and it still costs a sixth more
than keeping every result: on these Claude Code logs (many requests per turn, a prompt cache
read at a tenth of the input price) masking saves tokens and loses money at every setting tried.

Cost: observations are listed once as they enter context; a pointer marks how many of them the
cut has passed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replay.model.arrays import K_TOOL_RESULT, Stream
from replay.policies.base import Context, as_tuples, non_negative, one_of
from replay.policies.common import ScanningPolicy, codes, shrink

PLACEHOLDER = "Old environment output: ({n} lines omitted)"
# what one observation is: a step's new tool results (SWE-agent: one action, one output per step) or each result
OBSERVATIONS = ("step", "result")


def masked_count(observations: int, window: int, polling: int) -> int:
    """How many of the oldest ``observations`` tool results SWE-agent's ``LastNObservations``
    elides: its ``observation_indices[1:last]`` over a history whose first observation is the
    instance template (so ``N`` = observations + 1)."""
    if polling < 1:
        raise ValueError("polling must be >= 1 (SWE-agent divides the observation count by it)")
    last = max(0, ((observations + 1) // polling) * polling - window)
    return max(0, last - 1)


class ObservationMasking(ScanningPolicy):
    """SWE-agent's LastNObservations: every observation (a step's new tool results) but the window newest is replaced
    by "Old environment output: (N lines omitted)"; with polling p the cut moves p observations at a time."""

    name = "observation_masking"
    source = ("SWE-agent LastNObservations history processor (sweagent/agent/history_processors.py), as run by "
              "'The Complexity Trap' (arXiv 2508.21433) with n = 10")

    @dataclass(frozen=True)
    class Params:
        # Newest observations kept (SWE-agent's n; the Complexity Trap's M = 10).
        window: int = 10
        # Steps between moves of the cut (SWE-agent's polling, default 1 = every step, as the paper); >= 1.
        polling: int = 1
        # Tools whose results are observations (empty = every tool result).
        tools: tuple[str, ...] = ()
        # Tools whose results count as observations but are never masked (always_keep_output_for_tags).
        keep_tools: tuple[str, ...] = ()
        # Size of "Old environment output: (N lines omitted)", o200k tokens (9 for a 2-3 digit N).
        placeholder_tokens: float = 9.0
        # Price a later re-read of a masked result: it gets its full size back from the
        # re-reading request on (pessimistic, beyond the source). False: only counted.
        reread_cost: bool = True
        # What one observation is: "step" (a request's new tool results together, as SWE-agent's one-action
        # steps) or "result" (each tool result on its own; the rule before issue 36).
        observation: str = "step"

        def __post_init__(self):
            as_tuples(self, "tools", "keep_tools")
            non_negative(self, "placeholder_tokens")
            one_of(self, "observation", OBSERVATIONS)
            if self.polling < 1:
                raise ValueError(f"polling = {self.polling}: must be >= 1 (SWE-agent's polling divides the "
                                 "observation count; 1 = every step)")
            if self.window < 1:
                raise ValueError("window must be >= 1 (SWE-agent: n must be a positive integer)")

    def setup(self, ctx: Context, s: dict[str, Any]) -> None:
        p = self.params
        s["tools"] = codes(ctx, p.tools) if p.tools else None
        s["keep"] = codes(ctx, p.keep_tools)
        ctx.metrics.setdefault("masks", 0.0)

    def reset(self, s: dict[str, Any], pos: int) -> None:
        super().reset(s, pos)
        s["obs"] = []       # the partition's observations, in order: each a list of tool_result positions
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
        for step in obs[s["masked"]:target]:
            for i in step:
                if st.tool[i] in keep or i in restored:
                    continue
                if shrink(ctx, i, size, rr, lossy=True):
                    moved = True
        s["masked"] = target
        if moved:
            ctx.metrics["masks"] += 1

    def _scan(self, st: Stream, s: dict[str, Any], lo: int, hi: int) -> None:
        """Blocks [lo, hi) are those appended since the previous request: one step."""
        tools, obs = s["tools"], s["obs"]
        bkind, tool = st.bkind, st.tool
        new = [i for i in range(lo, hi) if bkind[i] == K_TOOL_RESULT and (tools is None or tool[i] in tools)]
        if not new:
            return
        if self.params.observation == "step":
            obs.append(new)
        else:
            obs.extend([i] for i in new)
