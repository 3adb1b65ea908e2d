"""`Keyring.short` memoizes its pseudonyms: same answers as the keyed hash itself, per key, bounded."""

from __future__ import annotations

import hashlib

from replay.ingest import keys as keys_mod
from replay.ingest.keys import Keyring


def _direct(ring: Keyring, label: str, value: str, n: int) -> str:
    return hashlib.blake2b(label.encode() + b"\0" + value.encode("utf-8", "surrogatepass"),
                           digest_size=n // 2 if n % 2 == 0 else n // 2 + 1,
                           key=ring.dataset_key[:64]).hexdigest()[:n]


def test_memoized_pseudonyms_equal_the_keyed_hash_and_differ_per_key_label_and_length():
    a, b = Keyring.for_dataset(b"k" * 32, "a"), Keyring.for_dataset(b"k" * 32, "b")
    for _ in range(2):  # the second round answers from the memo
        for ring in (a, b):
            for label, value, n in (("tool_use", "toolu_01", 16), ("path", "src", 10), ("path", "src", 9),
                                    ("message", "toolu_01", 16), ("session", "x" * 300, 12)):
                assert ring.short(label, value, n) == _direct(ring, label, value, n)
    assert a.short("path", "src", 10) != b.short("path", "src", 10)
    assert a.short("path", "src", 10) != a.short("tool_use", "src", 10)


def test_memo_is_bounded_and_skips_long_values(monkeypatch):
    monkeypatch.setattr(keys_mod, "_SHORT_MEMO", {})
    monkeypatch.setattr(keys_mod, "_SHORT_MEMO_MAX", 5)
    ring = Keyring.for_dataset(b"q" * 32, "d")
    ring.short("x", "y" * 257)
    assert len(keys_mod._SHORT_MEMO[ring.dataset_key]) == 0  # a long value is hashed, not kept
    for i in range(12):
        assert ring.short("x", str(i)) == _direct(ring, "x", str(i), 12)
        assert len(keys_mod._SHORT_MEMO[ring.dataset_key]) <= 5
