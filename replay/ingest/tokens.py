"""Exact offline token counts (o200k BPE) for block texts.

Anthropic's tokenizer is not public; o200k_base is the closest exact, offline BPE and is
what the trace records. Replay later anchors these counts on the usage the log recorded,
so the counter only has to be consistent, not identical to the provider's.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Sequence

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


def count_many(texts: Sequence[str]) -> list[int]:
    """Token count per text, computed in one batch (the Rust core releases the GIL)."""
    if not texts:
        return []
    return toktok.batch_count(list(texts), ENCODING, threads=THREADS)


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
