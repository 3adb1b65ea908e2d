"""Pricing of the extra API calls a policy makes beside the agent's requests.

A compaction policy asks the model for a summary (`replay.policies.summary`): a request the
log does not hold. The policy records each as (model code, uncached input, cache read,
output) in ``Context.side``; after the stream's own requests are priced, each is priced here
on its own (tiers apply per request) with the run's price table, and its tokens join the
session's figures: ``input_total``, ``uncached``, ``cache_read``, ``output`` and ``cost``
(so cost stays the price of the token categories), with ``summary_requests``,
``summary_input``, ``summary_output`` and ``summary_cost`` beside them. ``context_tokens``
and ``requests`` stay the agent's own: a summary request is not context the agent works in.
They are not rows of the per-request detail.
"""

from __future__ import annotations

from replay.engine.options import ReplayOptions
from replay.model.arrays import Vocab
from replay.policies.summary import SIDE_FIGURES


def price_side_requests(side: list[tuple[int, float, float, float]], vocab: Vocab, opts: ReplayOptions,
                        figs: dict[str, float]) -> None:
    """Add the side requests' tokens and dollars to ``figs`` (a session's figures)."""
    for f in SIDE_FIGURES:
        figs.setdefault(f, 0.0)
    for model, uncached, read, output in side:
        cost = opts.prices.rates(vocab.models[model]).cost(uncached, 0.0, 0.0, read, output)
        figs["input_total"] += uncached + read
        figs["uncached"] += uncached
        figs["cache_read"] += read
        figs["output"] += output
        figs["cost"] += cost
        figs["summary_requests"] += 1
        figs["summary_input"] += uncached + read
        figs["summary_output"] += output
        figs["summary_cost"] += cost
