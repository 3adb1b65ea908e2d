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


def test_memoized_path_pseudonyms_equal_the_unmemoized_ones(monkeypatch):
    monkeypatch.setattr(keys_mod, "_PATH_MEMO", {})
    ring = Keyring.for_dataset(b"p" * 32, "d")
    cases = [("/home/a/src/x.py", None), ("src/x.py", "/home/a"), ("src/x.py", "/home/b"), ("../y.PY", "/home/a/src"),
             ("~/z", "/w"), ("a\\b.txt", "C:\\w"), ("/" + "d/" * 600, None)]
    for _ in range(2):  # the second round answers from the memo (but for the long path)
        assert [ring.path(p, c) for p, c in cases] == [ring._path(p, c) for p, c in cases]
    assert ring.path("src/x.py", "/home/a") != ring.path("src/x.py", "/home/b")
    assert len(keys_mod._PATH_MEMO[ring.dataset_key]) == len(cases) - 1  # the long one is not kept
    for bad in ({"x": 1}, ["x"]):  # a cwd that is no string fails as it did (the record is skipped)
        try:
            ring.path("rel", bad)
        except AttributeError:
            pass
        else:
            raise AssertionError("a non-string cwd is not a folder")
    assert ring.path("/abs", 5) == ring._path("/abs", None)  # an absolute path never reads the cwd
