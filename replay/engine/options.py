"""The engine's shared vocabulary: a replay's options, the figures it reports per session and per
request, and the request a block walker hands the per-request step.

Every other module of `replay.engine` imports this one; it imports none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from replay.model.cache import CacheConfig
from replay.model.costs import PriceTable
from replay.model.whatif import WhatIf
from replay.policies.base import METRICS

SESSION_FIGURES = (
    "requests", "input_total", "uncached", "cache_read", "cache_write_5m", "cache_write_1h", "output", "cost",
    "busts", "bust_tokens", "tokens_delivered", "context_tokens",
) + METRICS

REQUEST_FIGURES = ("input_total", "uncached", "cache_read", "cache_write_5m", "cache_write_1h", "output", "cost",
                   "bust_tokens")

# What a walker yields per request: (k, running, changed_from, removed): request k's context
# (the blocks of the current partition before it) is `running` tokens; `changed_from` is the
# first block a retroactive policy changed since the previous request (None: none) and
# `removed` the tokens that change removed.
Request = tuple[int, float, int | None, float]


@dataclass
class SessionResult:
    session_key: str
    figures: dict[str, float]
    # per-request detail: stream_id, req_idx and REQUEST_FIGURES as parallel lists
    detail: dict[str, list] | None = None


@dataclass
class ReplayOptions:
    cache: CacheConfig = field(default_factory=CacheConfig)
    prices: PriceTable = field(default_factory=PriceTable)
    detail: bool = False
    # a cache what-if (another provider's rules, the client's TTL choices, keep-alive pings);
    # None: the log's world
    whatif: WhatIf | None = None
