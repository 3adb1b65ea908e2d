"""What a cache what-if changes, in two separable parts the engine combines.

``CacheConfig`` describes the provider's cache and the client's recorded behaviour as the log
shows them. A what-if (`replay.experiments.whatif`) swaps one part and keeps the other:

* ``ProviderRules``: the provider's caching mechanism — Anthropic's explicit breakpoints
  (each model's own rules) or OpenAI's automatic caching (writes free, 1,024-token minimum,
  128-token increments, idle retention) applied to every model of the log.
* ``ClientCache``: what the client chooses within those rules and the log does not fix —
  the TTL each write asks for (one for every write, a separate TTL for the system/tools
  breakpoint, a rule that switches TTL as the session goes, or a per-request plan), and
  keep-alive pings.

Rates (another model's prices) are a third part, the ``PriceTable``. Client *breaks* (a
thinking switch, a re-rendered conversation) stay in ``CacheConfig`` (``thinking_switch``,
``resume``, ``task_turns``, ``skill_turns``): a scenario that avoids one sets it to ``ignore``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from replay.model.arrays import Stream

FIVE_MIN_MS = 5 * 60 * 1000
ONE_HOUR_MS = 60 * 60 * 1000
PROVIDER_CACHING = ("model", "openai")
TTL_RULES = ("fixed", "first_idle", "plan")


@dataclass(frozen=True)
class KeepAlive:
    """Pings that keep the cached prefix alive while the user is idle.

    After every request (and after the turn-end write that follows an answer), a ping is sent
    every ``interval_s`` seconds of idle time, up to ``horizon_s`` seconds after the last real
    request: it resends the cached prefix (read, which refreshes the entry) with
    ``ping_input`` new uncached tokens and asks for ``ping_output`` output tokens, and writes
    nothing. Its cost is always charged, also for pings after a stream's last request that
    nothing used (the client cannot know that no request follows). Pings stop once nothing is
    cached. ``tail``: ping after the stream's last request too (the main conversation: the
    client cannot know the user is done; a subagent's stream ends when its task returns)."""

    interval_s: float = 270.0
    horizon_s: float = 3600.0
    ping_input: float = 8.0
    ping_output: float = 1.0
    tail: bool = True

    def __post_init__(self):
        if not self.interval_s > 0 or self.horizon_s < 0 or self.ping_input < 0 or self.ping_output < 0:
            raise ValueError("keepalive: interval_s must be > 0, horizon_s, ping_input and ping_output >= 0")


# A per-stream plan (the hindsight bound): per request, the TTL in ms of the entry it writes,
# and per request whether to ping through the idle gap before it.
Plan = Callable[["Stream"], tuple[list[int], list[bool]]]


@dataclass(frozen=True)
class ClientCache:
    """The client's cache choices.

    system_ttl: "1h" writes the system/tools breakpoint with a 1-hour TTL while the
        conversation's breakpoints keep ``CacheConfig.ttl`` (Anthropic allows mixing TTLs in
        one request as long as 1-hour entries come before 5-minute ones: the system prefix
        is first). None: every breakpoint uses the request's TTL.
    ttl_rule: "fixed": ``CacheConfig.ttl``; "first_idle": 5-minute writes until the stream's
        first idle gap over 5 minutes, 1-hour writes from that request on (an online rule: it
        uses only what the client has seen); "plan": per request from ``plan``.
    keepalive: pings (``KeepAlive``) or None.
    plan: for ``ttl_rule = "plan"``, per stream the TTLs and the gaps to ping through.
    main_ttl, subagent_ttl: "5m" / "1h": every write of the main conversation / of every other
        stream (Task subagents, sidechains) with that TTL, over ``CacheConfig.ttl`` (Claude Code's
        ``promptCacheTtl`` and ``subagentPromptCacheTtl`` settings); None: ``CacheConfig.ttl``.
    """

    system_ttl: str | None = None
    ttl_rule: str = "fixed"
    keepalive: KeepAlive | None = None
    plan: Plan | None = None
    main_ttl: str | None = None
    subagent_ttl: str | None = None

    def __post_init__(self):
        for name in ("system_ttl", "main_ttl", "subagent_ttl"):
            if getattr(self, name) not in (None, "5m", "1h"):
                raise ValueError(f"client.{name} = {getattr(self, name)!r}; allowed: 5m, 1h")
        if self.ttl_rule not in TTL_RULES:
            raise ValueError(f"client.ttl_rule = {self.ttl_rule!r}; allowed: {', '.join(TTL_RULES)}")
        if (self.ttl_rule == "plan") != (self.plan is not None):
            raise ValueError("client.plan is given with ttl_rule = \"plan\", and only then")


@dataclass(frozen=True)
class ProviderRules:
    """caching: "model": each model's provider rules (Anthropic breakpoints, OpenAI or Gemini
    automatic caching); "openai": OpenAI's automatic caching for every model (writes free,
    cached from 1,024 tokens in 128-token increments, retained as ``CacheConfig.openai_retention``
    says unless ``CacheConfig.ttl`` forces a TTL, with the other ``openai_*`` rules), at the
    model's own rates."""

    caching: str = "model"

    def __post_init__(self):
        if self.caching not in PROVIDER_CACHING:
            raise ValueError(f"provider.caching = {self.caching!r}; allowed: {', '.join(PROVIDER_CACHING)}")


@dataclass(frozen=True)
class WhatIf:
    provider: ProviderRules = ProviderRules()
    client: ClientCache = ClientCache()


# CacheConfig settings, with the value that describes the world the log was recorded in: any
# other value is a what-if (a recorded miss it would change must not be copied from the log).
# (skill_turns "earned" and "invalidate" both model the recorded client, in other version ranges)
RECORDED_WORLD = {"ttl": ("log",), "thinking_switch": ("invalidate",), "resume": ("invalidate",),
                  "task_turns": ("invalidate",), "skill_turns": ("earned", "invalidate"),
                  "tool_search": ("invalidate",)}


def whatif_settings(cache: dict) -> list[str]:
    """The settings of a cache configuration that make it a what-if, as ``key = value``."""
    return [f"{k} = {cache[k]}" for k, v in RECORDED_WORLD.items() if k in cache and cache[k] not in v]


def first_idle_ttls(send: list[int], idle_ms: int = FIVE_MIN_MS) -> list[int]:
    """Per request: 5 minutes until the first request sent more than ``idle_ms`` after the
    previous one, 1 hour from it on. Online: request k's TTL depends on requests <= k only."""
    out, long_ttl = [], False
    prev = None
    for t in send:
        if prev is not None and t >= 0 and prev >= 0 and t - prev > idle_ms:
            long_ttl = True
        out.append(ONE_HOUR_MS if long_ttl else FIVE_MIN_MS)
        prev = t
    return out
