"""The ``high_entropy`` rule of the scrubber: random-looking base64/base62 runs.

A run of 20-300 token characters is random when it mixes upper and lower case, switches
character class often, is not made of words, digits or path segments, is not a known public
id or hash, and has high Shannon entropy for its length (``replay.privacy.scrub`` explains
what is deliberately not flagged). Texts are scanned in windows of about 1 MB, so a huge
text never becomes millions of run objects at once.
"""

from __future__ import annotations

import math
import re
from collections import Counter

import re2

__all__ = ["HIGH_ENTROPY", "MIN_ENTROPY_LEN", "MAX_ENTROPY_LEN", "entropy_spans", "entropy_threshold", "has_digit",
           "has_lower", "has_upper", "looks_random"]

_DIGITS = b"0123456789"
_UPPER = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LOWER = b"abcdefghijklmnopqrstuvwxyz"


def has_digit(v: bytes) -> bool:
    return len(v.translate(None, _DIGITS)) != len(v)


def has_upper(v: bytes) -> bool:
    return len(v.translate(None, _UPPER)) != len(v)


def has_lower(v: bytes) -> bool:
    return len(v.translate(None, _LOWER)) != len(v)


HIGH_ENTROPY = "high_entropy"
MIN_ENTROPY_LEN = 20
MAX_ENTROPY_LEN = 300
_SKIP_PREFIX = (b"sha1-", b"sha224-", b"sha256-", b"sha384-", b"sha512-", b"md5-",
                b"iVBORw0KGgo", b"/9j/", b"R0lGOD", b"UklGR", b"PHN2Zy", b"PD94bWwg", b"JVBERi0", b"AAAA")
# Public object ids with a type prefix (Anthropic, OpenAI, Stripe objects, ...): random, not secret.
_ID_PREFIX_RX = re2.compile(
    rb"^(?:msg|msgbatch|toolu|srvtoolu|req|call|chatcmpl|resp|file|run|asst|thread|step|batch|evt|cus|ch|pi|pm|in|"
    rb"sub|prod|price|acct|org|proj|user|item|fc|ws|rs|cs|seti|src|tok|txn|po|re|cl)[_-]"
    # Anthropic-style typed ids (agent_msg_01..., toolu_01...), GitHub GraphQL node ids
    # (PRRT_kwDO..., MDQ6VXNlcj...), libp2p/IPFS peer ids and keys (12D3KooW..., Qm..., CAES...)
    rb"|^[a-z][a-z_]*_01[A-Za-z0-9]{16,}$|^[A-Z]{1,10}_(?:kw|lA|lQ|lg|kg)[A-Za-z0-9_\-]+$|^M[DT][A-Za-z0-9]{1,3}[Oo6]|^12D3KooW|^Qm[1-9A-HJ-NP-Za-km-z]{44}$|^CAES"
)
_ID_LEADS = (b"12D3KooW", b"Qm", b"CAES", b"MD", b"MT")  # id prefixes without '_' or '-'
_SKIP_BEFORE = (b'W/"', b'W/\\"', b"base64,", b"h1:", b"sha256:", b"sha512:", b"sha1:", b"md5:", b"sha384:")
_CLASS = bytes(
    (1 if 65 <= c <= 90 else 2 if 97 <= c <= 122 else 3 if 48 <= c <= 57 else 4) for c in range(256)
)


def _entropy(s: bytes) -> float:
    n = len(s)
    return -sum((k / n) * math.log2(k / n) for k in Counter(s).values())


def entropy_threshold(n: int) -> float:
    """Minimum Shannon entropy (bits/char) for a run of length n to count as random.

    A random base62/base64 run of n characters has an empirical entropy close to
    log2(min(n, 62)); identifiers and words sit below it. The threshold is 80% of
    log2(n), capped at 4.2 bits, so short tokens are not asked for more than they can carry.
    """
    return min(4.2, 0.8 * math.log2(max(n, 2)))


# For each character class (1 upper, 2 lower, 3 digit, 4 other): that class -> 'x', the rest -> ' '.
_RUN_MAPS = tuple(bytes(120 if _CLASS[c] == k else 32 for c in range(256)) for k in (1, 2, 3, 4))


def _class_switch_rate(s: bytes) -> float:
    """Changes of character class (upper/lower/digit/other) per character, counted in C:
    the number of runs of each class, via translate and split."""
    runs = sum(len(s.translate(m).split()) for m in _RUN_MAPS)
    return (runs - 1) / max(1, len(s) - 1)


_LOWMAP = bytes(97 if 97 <= c <= 122 else 32 for c in range(256))


def _word_fraction(s: bytes) -> float:
    """Share of characters in word-like runs (3+ lower-case letters and the capital before
    them): about 0.2 for random base62, 0.6-1.0 for identifiers, paths and prose."""
    runs = s.translate(_LOWMAP).split()
    return sum(len(r) + 1 for r in runs if len(r) >= 3) / len(s)


def looks_random(tok: bytes) -> bool:
    """Is this base64/base62-alphabet run a random secret rather than code or a hash?"""
    core = tok.rstrip(b"=")
    n = len(core)
    if n < MIN_ENTROPY_LEN or n > MAX_ENTROPY_LEN:
        return False
    if not (has_upper(core) and has_lower(core)):
        return False  # hex digests, UUIDs, snake_case and CONSTANTS never qualify
    digits = n - len(core.translate(None, _DIGITS))
    if (n < 28 and not digits) or digits * 2 >= n:
        return False  # short and digit-free, or mostly digits (timestamps, versions, numeric ids)
    if core.count(b"/") + core.count(b"-") + core.count(b"_") >= 3:
        # paths, slugs, dated run ids: most segments are words, numbers or hex, while the
        # segments of a random base64url string mix cases
        segs = [s for s in core.replace(b"-", b"/").replace(b"_", b"/").split(b"/") if len(s) >= 4]
        mixed = sum(1 for s in segs if has_upper(s) and has_lower(s) and _word_fraction(s) < 0.55)
        if mixed * 2 < len(segs):
            return False
    if _word_fraction(core) >= 0.55:
        return False  # made of words: Fleet-Connect-1/build, toHaveBeenCalledWith2
    if core.startswith(_SKIP_PREFIX):
        return False
    head = core[:14]
    if (b"_" in head or b"-" in head or core.startswith(_ID_LEADS)) and _ID_PREFIX_RX.match(core):
        return False
    if _class_switch_rate(core) < 0.30:  # identifiers switch character class every few chars
        return False
    return _entropy(core) >= entropy_threshold(n)


_TOKEN_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-")
_TOKMAP = bytes(c if c in _TOKEN_CHARS else 32 for c in range(256))


_WINDOW = 1 << 20
_NON_TOKEN_RX = re.compile(rb"[^A-Za-z0-9+/_\-]")


def entropy_spans(b: bytes) -> list[tuple[int, int]]:
    """Spans of random-looking runs, window by window (about 1 MB, cut between runs), so that
    a huge text never becomes millions of run objects at once."""
    if len(b) <= _WINDOW:
        return _entropy_spans_window(b, 0, len(b))
    out: list[tuple[int, int]] = []
    start = 0
    while start < len(b):
        m = _NON_TOKEN_RX.search(b, start + _WINDOW) if start + _WINDOW < len(b) else None
        end = m.start() + 1 if m else len(b)
        out += _entropy_spans_window(b, start, end)
        start = end
    return out


def _entropy_spans_window(b: bytes, start: int, end: int) -> list[tuple[int, int]]:
    """Spans of random-looking runs in ``b[start:end]`` (cut between runs). Runs are cut with
    bytes.translate/split (C speed) rather than a regex, because most texts hold many runs
    and few secrets."""
    out = []
    cursor = start
    window = b if (start, end) == (0, len(b)) else b[start:end]
    for tok in window.translate(_TOKMAP).split():
        n = len(tok)
        if n < MIN_ENTROPY_LEN or n > MAX_ENTROPY_LEN or not looks_random(tok):
            continue
        s = b.find(tok, cursor, end)
        while s >= 0 and ((s > 0 and b[s - 1] in _TOKEN_CHARS) or (s + n < len(b) and b[s + n] in _TOKEN_CHARS)):
            s = b.find(tok, s + 1, end)  # a substring of a longer run: not this token
        if s < 0:
            continue
        cursor = s + n
        if b[max(0, s - 8):s].endswith(_SKIP_BEFORE):
            continue
        out.append((s, s + n))
    return out
