"""Exact offline token counts (o200k BPE) for block texts.

Anthropic's tokenizer is not public; o200k_base is the closest exact, offline BPE and is
what the trace records. Replay later anchors these counts on the usage the log recorded,
so the counter only has to be consistent, not identical to the provider's.
"""

from __future__ import annotations

import base64
import re
import struct
from collections.abc import Iterator, Sequence

import toktok

ENCODING = "o200k_base"
COUNTER = f"toktok-rs {getattr(toktok, '__version__', '?')} {ENCODING}"

# Anthropic bills an image at about (width * height) / 750 tokens, capped near 1,600 for
# the default 1.15 megapixel limit; used when the size cannot be read from the header.
IMAGE_TOKENS_FALLBACK = 1600
IMAGE_TOKENS_CAP = 1600


# Threads for the Rust counter; 0 = all cores. Benchmarks set 1 to measure one core.
THREADS = 0
# Set in a process that reads files while another loads the tokenizer (its Rust constructor holds
# the GIL for about 1 s, so no thread can read meanwhile): block texts are left uncounted, for the
# process that loaded it (`replay.ingest.trace.SessionTrace.uncounted`).
DEFER = False


# A text longer than this is counted in pieces: toktok's transient memory grows with the text
# (about 160 MB for one 50 MB tool result, measured with `bench/ingest.py --memory`).
PIECE_CHARS = 4 << 20
_CUT = re.compile(r"\n(?=[A-Za-z])|(?<=[A-Za-z])(?= [A-Za-z])")


def pieces(text: str, size: int = PIECE_CHARS) -> Iterator[str]:
    """``text`` cut about every ``size`` characters, after a newline that an ASCII letter follows
    or between an ASCII letter and a space that one follows.

    The count is exact: o200k's pre-tokenizer never joins across such a place (a newline run ends
    its piece where a non-space follows, a word's one optional leading character is never a
    newline, and a word ends at a space, which begins the next word: "a b" is "a", " b"), so BPE
    sees the same pieces either way; a text with no such place stays whole
    (`tests/test_tokens_pieces.py` checks it on the shared corpus and on generated text)."""
    start = 0
    while len(text) - start > size:
        m = _CUT.search(text, start + size)
        if m is None:
            break
        yield text[start:m.end()]
        start = m.end()
    yield text[start:]


def count_many(texts: Sequence[str]) -> list[int]:
    """Token count per text, computed in one batch (the Rust core releases the GIL); a text over
    ``PIECE_CHARS`` is counted piece by piece (`pieces`: one piece held at a time), each count
    the same as the whole's."""
    if not texts:
        return []
    texts = list(texts)
    long = [i for i, t in enumerate(texts) if len(t) > PIECE_CHARS]
    if not long:
        return toktok.batch_count(texts, ENCODING, threads=THREADS)
    counts = toktok.batch_count(["" if len(t) > PIECE_CHARS else t for t in texts], ENCODING, threads=THREADS)
    for i in long:
        counts[i] = sum(toktok.batch_count([p], ENCODING, threads=THREADS)[0] for p in pieces(texts[i]))
    return counts


def preload() -> None:
    """Load the encoding now (about 1 s of CPU, once per process), on one thread: no thread is
    started, so a process may fork after it and its children count without loading it again."""
    toktok.batch_count([""], ENCODING, threads=1)


def image_tokens(b64: str | None) -> int:
    """Estimated tokens of a base64 image: PNG/GIF dimensions from the header, else the cap."""
    if not b64:
        return IMAGE_TOKENS_FALLBACK
    try:
        head = base64.b64decode(b64[:64] + "=" * (-len(b64[:64]) % 4), validate=False)
    except (ValueError, TypeError):
        return IMAGE_TOKENS_FALLBACK
    w = h = 0
    if head[:8] == b"\x89PNG\r\n\x1a\n" and len(head) >= 24:
        w, h = struct.unpack(">II", head[16:24])
    elif head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 10:
        w, h = struct.unpack("<HH", head[6:10])
    if w <= 0 or h <= 0:
        return IMAGE_TOKENS_FALLBACK
    return max(1, min(IMAGE_TOKENS_CAP, (w * h) // 750))
