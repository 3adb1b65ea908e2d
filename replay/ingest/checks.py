"""What a value from a log must look like before the trace keeps it.

Logs are untrusted input. Numbers go into fixed-width columns and strings that the trace
keeps *as written* (model names, tool names, agent versions, compaction triggers) end up
in `report` and `export`, the documented shareable outputs. So:

* a **usage count** is a non-negative integer below ``MAX_COUNT`` (2^40, about 10^12
  tokens: far above any real request); an integral float (``12.0``) is accepted, anything
  else (``1.5``, ``1e300``, ``2**64 + 5``, ``-3``, ``"12"``, ``true``) raises
  :class:`InvalidUsage` and the record holding it is skipped and counted, never stored as 0;
  an absent or null field is 0;
* **line numbers** and other small ints that are not billed (``pre_tokens``, read offsets)
  are kept only in range, else dropped (None);
* a **kept string** is kept only when it matches the strict grammar of its field (see
  ``GRAMMARS``; no spaces, no path such as ``/home/...``, no e-mail address, no long
  secret-like token), else replaced by a keyed pseudonym ``<field>-<8 hex>`` (equal values
  get equal pseudonyms within a dataset, so grouping by model or tool still works) and
  counted. ``docs/trace-format.md`` states the rules.
"""

from __future__ import annotations

import re
from typing import Any

MAX_COUNT = 2**40
MAX_INT32 = 2**31 - 1

_NAME = r"[A-Za-z0-9][A-Za-z0-9._:@/+\[\]-]{0,100}"
GRAMMARS: dict[str, re.Pattern[str]] = {
    # claude-sonnet-4-5-20250929, gpt-5.1-codex, models/gemini-2.5-pro, claude-opus-4@20250514,
    # anthropic.claude-3-5-sonnet-20241022-v2:0, claude-opus-4-6[1m]
    "model": re.compile(_NAME),
    # Read, mcp__github__get_issue, container.exec, read_file, github-mcp-server/get_issue
    "tool_name": re.compile(r"[A-Za-z0-9_.:/-]{1,128}"),
    # 2.1.50, 0.140.0: major.minor.patch only (the builder cuts 1.0.0-beta.3 to 1.0.0 first;
    # identifiers.kept_version), several joined by commas in sessions
    "agent_version": re.compile(r"\d{1,6}(?:\.\d{1,6}){0,2}"),
}
# Vocabularies: the only values kept for enum-like fields.
VOCABULARIES: dict[str, frozenset[str]] = {
    "trigger": frozenset({"auto", "manual", "clear"}),
}
_PATHLIKE = re.compile(
    r"(?:^|/)(?:home|Users|root|tmp|var|etc|mnt|opt|private|Volumes|usr|srv|media|proc|dev)(?:/|$)"
    r"|^[/~.]|//|\.\.|\\|[A-Za-z]:/",
    re.I,
)
# a model's "@" suffix is a date (claude-opus-4@20250514, as Vertex names them), never a word: claude@alice
_AT_SUFFIX = re.compile(r"@(?!\d{6,8}$)")
_EMAIL = re.compile(r"@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
# a run of 16+ letters and digits holding both: API keys, tokens, hashes (AKIA..., ghp_..., sk-...)
_SECRETISH = re.compile(r"(?=[A-Za-z0-9]{16})(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z0-9]{16,}")
_SECRET_PREFIX = re.compile(r"(?:^|[^A-Za-z0-9])(?:AKIA|ASIA|gh[oprsu]_|github_pat_|sk-|xox[abpr]-)")


class InvalidUsage(ValueError):
    """A usage count that is not a non-negative integer below MAX_COUNT."""


def usage_count(usage: dict, key: str) -> int:
    """``usage[key]`` as a token count: 0 when absent or null, else it must be valid (InvalidUsage)."""
    v = usage.get(key)
    if v is None:
        return 0
    if type(v) is int and 0 <= v < MAX_COUNT:  # the usual case, without a call
        return v
    n = valid_count(v)
    if n is None:
        raise InvalidUsage(f"usage.{key} is {describe(v)}, not a token count (a non-negative integer below 2^40)")
    return n


def valid_count(v: Any, bound: int = MAX_COUNT) -> int | None:
    """``v`` as a non-negative int below ``bound`` (an integral float is accepted), else None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v if 0 <= v < bound else None
    if isinstance(v, float) and v.is_integer() and 0 <= v < bound:
        return int(v)
    return None


def small_int(v: Any) -> int | None:
    """An int that fits an INTEGER column (line numbers), else None."""
    return v if isinstance(v, int) and not isinstance(v, bool) and -MAX_INT32 <= v <= MAX_INT32 else None


def describe(v: Any) -> str:
    """A short, content-free description of a bad value (its type, and its magnitude for numbers)."""
    if isinstance(v, bool):
        return f"a boolean ({v})"
    if isinstance(v, int):
        return "negative" if v < 0 else f"too large ({v.bit_length()} bits)"
    if isinstance(v, float):
        return f"a fraction ({v:.3g})" if abs(v) < 1e15 and not v.is_integer() else (
            "negative" if v < 0 else f"not a count ({v:.3g})")
    if isinstance(v, str):
        return f"a string of {len(v)} characters"
    return f"a JSON {type(v).__name__}"


def acceptable(field: str, value: str) -> bool:
    """True when ``value`` may be kept as written in ``field``."""
    vocab = VOCABULARIES.get(field)
    if vocab is not None:
        return value in vocab
    grammar = GRAMMARS[field]
    if not grammar.fullmatch(value):
        return False
    if field == "model" and _AT_SUFFIX.search(value):
        return False
    if field == "agent_version":
        return True
    return not (_PATHLIKE.search(value) or _EMAIL.search(value) or _SECRETISH.search(value)
                or _SECRET_PREFIX.search(value))


def cache_writes(usage: dict) -> tuple[int, int, bool, str | None]:
    """(5-minute, 1-hour cache-write tokens, whether the log splits them by TTL, why they were
    mended or None) of a Claude usage object (InvalidUsage on a bad count).

    ``cache_creation_input_tokens`` is the total billed (what ccusage counts); the split
    ``cache_creation.ephemeral_{5m,1h}_input_tokens`` only says which TTL. They agree on every
    line of the shared corpora (44,747 lines); where they do not (a hand-edited or damaged
    log), the total wins, divided in the split's proportions, and the caller counts it: one
    planted 1-hour figure of 10^9 beside a total of 200 otherwise bills $10,000."""
    cc = usage.get("cache_creation")
    if not (isinstance(cc, dict) and ("ephemeral_5m_input_tokens" in cc or "ephemeral_1h_input_tokens" in cc)):
        return usage_count(usage, "cache_creation_input_tokens"), 0, False, None  # before the split: 5-minute
    w5, w1 = usage_count(cc, "ephemeral_5m_input_tokens"), usage_count(cc, "ephemeral_1h_input_tokens")
    if usage.get("cache_creation_input_tokens") is None:
        return w5, w1, True, None
    total = usage_count(usage, "cache_creation_input_tokens")
    if w5 + w1 == total:
        return w5, w1, True, None
    why = (f"cache_creation splits {w5 + w1:,} tokens by TTL but cache_creation_input_tokens is {total:,}: the total "
           "taken, in the split's proportions")
    if w5 + w1 == 0:
        return total, 0, False, why
    one_hour = total * w1 // (w5 + w1)
    return total - one_hour, one_hour, True, why
