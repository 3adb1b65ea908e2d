"""server_compaction: Anthropic's server-side compaction, edit ``compact_20260112``.

Source: Anthropic's "Compaction" documentation (platform.claude.com/docs/en/build-with-claude/
compaction; beta header ``compact-2026-01-12``; the same page on Amazon Bedrock's user guide,
claude-messages-compaction). What it says, and how it is replayed:

* "The API: 1. Detects when input tokens exceed your specified trigger threshold. 2. Generates
  a summary of the current conversation. 3. Creates a compaction block containing the summary.
  4. Continues the response with the compacted context." On later requests "the API
  automatically drops all message blocks prior to the compaction block": the conversation
  goes on from the summary. Replayed by ``replay.policies.summary``: when request k's prompt
  exceeds ``trigger``, the blocks before it become one summary block.
* ``trigger``: ``{"type": "input_tokens", "value": N}``, default 150,000, minimum 50,000 (a
  lower value is an error, as the API rejects it).
* ``instructions`` (default null) replaces the default summarization prompt, "You have
  written a partial transcript for the initial task above. Please write a summary of the
  transcript. ..." (95 o200k tokens, counted with the ingest's counter): ``instruction_tokens``
  = 95, the size of the prompt the summarization call adds to the conversation.
* Billing: the summary is an extra sampling step; "the top-level input_tokens and
  output_tokens in the usage field do not include compaction iteration usage ... To calculate
  the total tokens consumed and billed for a request, sum across all entries in the
  usage.iterations array"; "re-applying a previous compaction block incurs no additional
  compaction cost". The compaction iteration is priced as one extra request (``Context.side``):
  input = the prompt + instructions, the part the previous request sent read from the cache
  (``summary_cached``; the docs' example response leaves cache fields out), output = the
  summary.
* Summary size: no default is documented; the docs' example usage reports a compaction
  iteration of ``{"input_tokens": 180000, "output_tokens": 3500}``, so ``summary_tokens``
  defaults to 3,500 (the compaction block's size in the following requests, and the
  iteration's output).
* ``pause_after_compaction`` (default false) lets the client add content before the response
  continues: the replay does not add any, so it changes nothing here.
* Supported models are Claude Opus 4.6/4.7, Sonnet 4.6 and Mythos Preview (``SUPPORTED_MODELS``);
  the replay applies the rule to every request of the logs, whatever its model (a what-if), and
  says so where a model is outside that list: an ``UnsupportedModelWarning`` naming the model
  (once per model, on stderr), and the run's figures ``unsupported_model_requests`` (requests on
  such a model) and ``unsupported_model_compactions`` (firings on them), stored with each
  session's results (``run_sessions.extra``) and in ``replay --json``'s totals. On
  ``entire-cli/`` 7,181 of the 10,513 requests are on Opus 4.5, Sonnet 4.5, Haiku 4.5 or a
  Gemini model, and 32 of the 48 compactions at the default trigger fire on them
  (``ctxreplay replay --policy server_compaction --variants calibrated --json``): the table
  below is mostly a what-if, the API would refuse the edit for those models.

Beyond the source: ``reread_cost`` (on: a later re-read of a summarized result gives it back,
as for every lossy policy here), ``summary_cached`` (on: the previous request's prefix is read
from the cache). Claude Code logs already compact on their own (the log's partitions); this
policy compacts within a partition only, so at its default trigger it fires only where a
session's prompt passed 150,000 tokens before the client's own compaction.

Measured on ``entire-cli/`` (calibrated, TTL as logged, 95% paired bootstrap intervals)::

    ctxreplay replay --db /tmp/e.duckdb --policy noop     # after ingesting ../shared/logs/entire-cli
    ctxreplay sweep examples/compaction_trigger.toml --db /tmp/e.duckdb
    ctxreplay compare --db /tmp/e.duckdb

and the summary requests from the runs' extra figures (``SELECT run_id,
sum(CAST(json_extract(extra, '$.compactions') AS DOUBLE)), sum(CAST(json_extract(extra,
'$.summary_cost') AS DOUBLE)) FROM run_sessions GROUP BY 1`` on the same file):

| trigger | cost saved [95%] | context tokens saved | compactions | summary requests |
|---|---|---|---|---|
| 150,000 (default) | +2.25% [+1.16, +3.50] | 6.04% | 48 | $10.02 |
| 125,000 | +7.98% [+5.43, +10.34] | 18.12% | 97 | $20.77 |
| 100,000 | -2.71% [-15.05, +6.58] | 26.06% | 349 | $73.80 |
| 75,000 | -42.78% [-73.95, -16.25] | 35.65% | 1,130 | $211.54 |
| 50,000 | -182.63% [-219.45, -146.91] | 43.57% | 4,983 | $840.59 |

(no-op: $758.67). Compacting a little before the client does pays; compacting early does not:
after a summary the prompt is the overhead (system prompt and tools, tens of thousands of
tokens) plus the summary, so a low trigger fires again within a few requests, and each firing
pays a summary written at the output price and a rewritten cache.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from typing import Any

from replay.policies.base import Context
from replay.policies.summary import SummaryCompaction

API_MIN_TRIGGER = 50_000
# the models the compaction docs list: Claude Opus 4.6, Opus 4.7, Sonnet 4.6, Mythos Preview
SUPPORTED_MODELS = ("Claude Opus 4.6", "Claude Opus 4.7", "Claude Sonnet 4.6", "Claude Mythos Preview")
_SUPPORTED = re.compile(r"claude-(?:opus-4-[67]|sonnet-4-6|mythos)(?![0-9])")


class UnsupportedModelWarning(UserWarning):
    """server_compaction replayed on a model outside the compaction docs' model list."""


def supported(model: str) -> bool:
    """Is ``model`` (an API model id: claude-opus-4-6, claude-sonnet-4-6-20260101, ...) one the
    compaction docs list?"""
    return bool(_SUPPORTED.search(model or ""))


class ServerCompaction(SummaryCompaction):
    """Anthropic's compact_20260112: when the input exceeds trigger tokens (150,000) the API summarizes the
    conversation (an extra, billed sampling step) and later requests start from the summary."""

    name = "server_compaction"
    source = "Anthropic API server-side compaction, compact_20260112 (docs: build-with-claude/compaction)"

    @dataclass(frozen=True)
    class Params(SummaryCompaction.Params):
        # Size of the summary (compaction block and the iteration's output), o200k tokens; no
        # documented default: the docs' example iteration outputs 3,500.
        summary_tokens: float = 3_500.0
        # Input tokens above which the API compacts (API default 150,000; minimum 50,000).
        trigger: int = 150_000

        def __post_init__(self):
            super().__post_init__()
            if self.trigger < API_MIN_TRIGGER:
                raise ValueError(f"trigger must be >= {API_MIN_TRIGGER:,} (the API's minimum)")

    def setup(self, ctx: Context, s: dict[str, Any]) -> None:
        super().setup(ctx, s)
        for f in ("unsupported_model_requests", "unsupported_model_compactions"):
            ctx.metrics.setdefault(f, 0.0)
        st, models = ctx.stream, ctx.vocab.models
        s["unsupported"] = {m for m in set(st.r_model) if 0 <= m < len(models) and not supported(models[m])}
        for m in sorted(s["unsupported"]):
            warnings.warn(f"server_compaction: model {models[m]!r} is outside compact_20260112's documented models "
                          f"({', '.join(SUPPORTED_MODELS)}); its requests are replayed as a what-if "
                          "(figures unsupported_model_requests, unsupported_model_compactions)",
                          UnsupportedModelWarning, stacklevel=1)

    def before_request(self, ctx: Context, k: int) -> None:
        if ctx.stream.r_model[k] in ctx.state["unsupported"]:
            ctx.metrics["unsupported_model_requests"] += 1
        super().before_request(ctx, k)

    def compact(self, ctx: Context, k: int, pos: int, prompt: float, warm: float) -> None:
        if ctx.stream.r_model[k] in ctx.state["unsupported"]:
            ctx.metrics["unsupported_model_compactions"] += 1
        super().compact(ctx, k, pos, prompt, warm)

    def trigger(self, ctx: Context, k: int) -> float:
        return float(self.params.trigger)
