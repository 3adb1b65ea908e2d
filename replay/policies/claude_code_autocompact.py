"""claude_code_autocompact: Claude Code's auto-compact, which summarizes the conversation when its
context nears the window minus a reserve.

Source: measured, not documented: no trigger figure was found in Claude Code's documentation
(DESIGN.md section 4 notes "auto-compact near 167k of a 200k window"). The trigger here is measured from the logs' own records: Claude
Code writes a ``compact_boundary`` system line with ``compactMetadata: {trigger: "auto",
preTokens: N}`` where it compacted (N = the context size then), followed by the
``isCompactSummary`` user line holding the summary. On the shared corpus
(``.venv/bin/python bench/autocompact_trigger.py ../shared/logs/claude-code
../shared/logs/entire-cli``): 42 auto compactions, whose smallest preTokens per client version
(the first request past its trigger) are 123,067 (2.0.76), 155,031 - 155,577 (2.1.1 - 2.1.20)
and 167,038 - 167,094 (2.1.29 - 2.1.49; opus-4-6 median 167,998): the trigger moved from about
155,000 to 167,000 tokens of a 200,000 window between 2.1.20 and 2.1.29. The default is the
current one: ``window_tokens`` 200,000 - ``reserve_tokens`` 33,000 = 167,000. For an earlier
client set ``reserve_tokens = 45000``; for a model run with a larger window, ``window_tokens``.

The 48 summaries after those boundaries (auto and manual) count 1,461 - 5,889 o200k tokens,
median 2,792 (same command): ``summary_tokens`` = 2,792. Claude Code's summarization prompt is
not published; ``instruction_tokens`` takes the API's default prompt's 95 tokens (an
assumption; it moves the price by well under a cent per compaction). What Claude Code attaches
after a compaction besides the summary (recently read files, the todo list) is not modelled.

Replay: the same mechanics as ``server_compaction`` (``replay.policies.summary``): at a
request whose prompt exceeds the trigger, one summarization request is priced (input = the
prompt + instructions, the previous request's prefix read from the cache; output = the
summary) and the conversation goes on from the summary. The logs themselves compact (their
partitions), at the trigger of the client that wrote them, and the log does not record the
cost of its own summarization calls; this policy compacts within a partition, so at its
default it fires only where a prompt passed 167,000 tokens before the log's compaction, and a
larger reserve (``examples/autocompact_reserve.toml``) asks when compacting earlier pays.

Measured on ``entire-cli/`` as for ``server_compaction`` (``ctxreplay sweep
examples/autocompact_reserve.toml``; calibrated, 95% paired bootstrap intervals; compactions
and summary dollars from ``run_sessions.extra``):

| reserve (trigger) | cost saved [95%] | context tokens saved | compactions | summary requests |
|---|---|---|---|---|
| 33,000 (167,000, default) | -0.15% [-0.27, -0.05] | 0.10% | 8 | $1.70 |
| 50,000 (150,000) | +2.50% [+1.41, +3.76] | 6.10% | 48 | $8.86 |
| 75,000 (125,000) | +8.84% [+6.47, +11.16] | 18.36% | 91 | $17.47 |
| 100,000 (100,000) | +2.00% [-7.79, +9.47] | 26.43% | 306 | $57.79 |
| 133,000 (67,000) | -56.15% [-87.11, -28.06] | 39.31% | 1,671 | $262.56 |

At its default the policy repeats what the logs' client already did (8 extra compactions where
a prompt passed 167,000 first); a trigger near 125,000 is the cheapest of those tried.
"""

from __future__ import annotations

from dataclasses import dataclass

from replay.policies.base import Context, non_negative
from replay.policies.summary import SummaryCompaction


class ClaudeCodeAutocompact(SummaryCompaction):
    """Claude Code's auto-compact: when the prompt exceeds the window (200,000) minus a reserve (33,000, measured
    from the logs' compact_boundary records), the conversation is summarized (a billed request) and goes on from
    the summary."""

    name = "claude_code_autocompact"
    source = ("Claude Code auto-compact, trigger measured from the logs' compact_boundary records "
              "(bench/autocompact_trigger.py: 167k of 200k since 2.1.29)")

    @dataclass(frozen=True)
    class Params:
        # The model's context window, tokens (200,000 for the logs' models).
        window_tokens: int = 200_000
        # Tokens kept free below the window: auto-compact fires above window - reserve (measured 33,000).
        reserve_tokens: int = 33_000
        # Size of the summary, o200k tokens (median of the logs' compact summaries: 2,792).
        summary_tokens: float = 2_792.0
        # Size of the summarization prompt, o200k tokens (unpublished; the API's default prompt: 95).
        instruction_tokens: float = 95.0
        # The summarization call reads from the cache what the previous request sent (else all uncached).
        summary_cached: bool = True
        # Price a later re-read of a summarized result (pessimistic, beyond the source).
        reread_cost: bool = True

        def __post_init__(self):
            non_negative(self, "reserve_tokens", "summary_tokens", "instruction_tokens")
            if self.window_tokens <= self.reserve_tokens:
                raise ValueError("window_tokens must be > reserve_tokens")

    def trigger(self, ctx: Context, k: int) -> float:
        return float(self.params.window_tokens - self.params.reserve_tokens)
