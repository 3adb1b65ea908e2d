"""The policy registry: one module per policy, registered here by name."""

from __future__ import annotations

from typing import Any

from replay.policies.base import Context, ParamError, Policy, did_you_mean
from replay.policies.anthropic_clear_tool_uses import AnthropicClearToolUses
from replay.policies.cache_aware_trim import CacheAwareTrim
from replay.policies.claude_code_microcompact import ClaudeCodeMicrocompact
from replay.policies.cupel_dedup import CupelDedup
from replay.policies.devboy_lru import DevboyLru
from replay.policies.jp_compaction import JpCompaction
from replay.policies.jp_resource_dedup import JpResourceDedup
from replay.policies.noop import Noop
from replay.policies.observation_masking import ObservationMasking
from replay.policies.pipeline import Pipeline
from replay.policies.read_range_dedup import ReadRangeDedup
from replay.policies.supersede import Supersede

REGISTRY: dict[str, type[Policy]] = {
    cls.name: cls
    for cls in (Noop, DevboyLru, JpResourceDedup, CupelDedup, JpCompaction, Supersede, AnthropicClearToolUses,
                ClaudeCodeMicrocompact, ReadRangeDedup, Pipeline)
}
REGISTRY[CacheAwareTrim.name] = CacheAwareTrim  # this project's own policy (issue 14)
# the field's context policies with published claims (issue 28)
REGISTRY[ObservationMasking.name] = ObservationMasking


def get(name: str) -> type[Policy]:
    try:
        return REGISTRY[name]
    except KeyError:
        raise ParamError(f"unknown policy {name!r}{did_you_mean(name, list(REGISTRY))} "
                         f"(known: {', '.join(sorted(REGISTRY))})") from None


def build(name: str, params: dict[str, Any] | None = None) -> Policy:
    cls = get(name)
    return cls(cls.make_params(params or {}))


__all__ = ["REGISTRY", "Context", "ParamError", "Policy", "build", "get"]
