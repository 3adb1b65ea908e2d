"""The fast paths of `replay.ingest.readlines` give what the line-by-line definitions give."""

import hashlib
import re
import struct

from hypothesis import given, settings, strategies as st

from replay.ingest import readlines
from replay.ingest.keys import Keyring
from replay.ingest.readlines import LINE_HASH_PERSON, LineHasher, numbered_lines

_NUMBERED = re.compile(r" *(\d{1,9})(?:→|\t)")


def reference_numbered_lines(text):
    """The definition: line by line, each line's prefix built from its number."""
    m = _NUMBERED.match(text)
    if m is None:
        return None
    first = int(m.group(1))
    if text[m.end() - 1] == "\t":
        prefix = lambda n: f"{n}\t"  # noqa: E731
    else:
        width = m.end() - 1
        prefix = lambda n: f"{n:>{width}}→"  # noqa: E731
    out, n = [], first
    for line in text.split("\n"):
        p = prefix(n)
        if not line.startswith(p):
            m2 = _NUMBERED.match(line)
            if m2 is None or int(m2.group(1)) != n:
                break
            out.append(line[m2.end():])
        else:
            out.append(line[len(p):])
        n += 1
    return first, out


_piece = st.sampled_from(["a", "b", " ", "\t", "→", "1", "9", "<x>", ""])
_line_text = st.lists(_piece, max_size=4).map("".join)


@st.composite
def reads(draw):
    """Read results: numbered runs (either format, padded or not, wide numbers), gaps, tails."""
    first = draw(st.sampled_from([1, 7, 98, 99_998, 999_999, 999_999_998]))
    tab = draw(st.booleans())
    width = draw(st.integers(0, 7))
    lines = []
    n = first
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["ok", "ok", "ok", "gap", "wide", "junk", "zeros", "digits", "sep", "cr"]))
        if kind == "gap":
            n += 2
        sep = "\t" if tab else "→"
        num = f"{n}" if tab else f"{n:>{width}}"
        if kind == "wide":
            num = " " * draw(st.integers(0, 3)) + f"{n}"
        elif kind == "zeros":  # int() reads them, str(n) does not write them
            num = f"{n:0{width + 1}d}"
        elif kind == "digits":  # other decimal digits, which int() reads too
            num = f"{n}".translate(str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩"))
        elif kind == "sep":
            sep = "→" if tab else "\t"
        elif kind == "cr":
            sep += "\r"
        line = f"{num}{sep}{draw(_line_text)}" if kind != "junk" else draw(_line_text)
        lines.append(line)
        n += 1
    tail = draw(st.sampled_from(["", "\n", "\n\n<system-reminder>x</system-reminder>"]))
    return "\n".join(lines) + tail


@settings(max_examples=400, deadline=None)
@given(reads())
def test_numbered_lines_equals_the_line_by_line_definition(text):
    assert numbered_lines(text) == reference_numbered_lines(text)


def test_numbered_lines_examples():
    assert numbered_lines("     1→a\n     2→b\n     4→d") == (1, ["a", "b"])
    assert numbered_lines("    99→a\n   100→b\n   101→c") == (99, ["a", "b", "c"])
    assert numbered_lines("99999→a\n100000→b\n100001→c") == (99999, ["a", "b", "c"])  # wider than the padding
    assert numbered_lines("5\tx\n6\ty\nnot a line") == (5, ["x", "y"])
    assert numbered_lines("no number") is None


def _uncached(keys, lines):
    out = []
    for line in lines:
        h = hashlib.blake2b(line.encode("utf-8", "surrogatepass"), digest_size=8, key=keys.dataset_key[:64],
                            person=LINE_HASH_PERSON)
        out.append(struct.unpack(">q", h.digest())[0])
    return out


def test_cached_line_hashes_equal_hashing_each_line(monkeypatch):
    keys = Keyring.for_dataset(b"k" * 32, "default")
    other = Keyring.for_dataset(b"k" * 32, "other")
    lines = ["a", "b", "a", "", "x" * 100, "\ud800 lone surrogate", "b"]
    assert LineHasher(keys).hashes(lines) == _uncached(keys, lines)
    assert LineHasher(keys).hashes(lines[::-1]) == _uncached(keys, lines[::-1])  # from the cache
    assert LineHasher(other).hashes(lines) == _uncached(other, lines) != _uncached(keys, lines)  # one cache per key
    monkeypatch.setattr(LineHasher, "CACHE_CHARS", 200)  # every call now overflows and empties it
    many = [f"line {i}" for i in range(40)]
    h = LineHasher(keys)
    assert h.hashes(many) == _uncached(keys, many)
    assert h.hashes(lines) == _uncached(keys, lines)
    assert len(readlines.LineHasher._caches[keys.dataset_key[:64]]) < 40


def test_whole_reads_are_remembered_by_their_content_hash(monkeypatch):
    keys = Keyring.for_dataset(b"r" * 32, "reads")
    h = LineHasher(keys)
    text = "\n".join(f"{n:>6}→line {n}" for n in range(1, 30)) + "\n<system-reminder>x</system-reminder>"
    want = (1, _uncached(keys, [f"line {n}" for n in range(1, 30)]))
    calls = []
    monkeypatch.setattr(readlines, "numbered_lines", lambda t: calls.append(t) or numbered_lines(t))
    first = h.numbered(text, "hash-a")
    again = h.numbered(text, "hash-a")
    assert first == again == want and first[1] is not again[1] and len(calls) == 1  # cut once, copies handed out
    assert h.numbered("no numbers", "hash-b") is None and h.numbered("no numbers", "hash-b") is None
    assert h.numbered(text) == want and len(calls) == 3  # no hash given: not remembered
    monkeypatch.setattr(LineHasher, "READS_LINES", 40)  # the next one overflows: the memory starts again
    assert h.numbered(text.replace("line 1\n", "line one\n"), "hash-c")[1][0] == _uncached(keys, ["line one"])[0]
    assert set(LineHasher._reads[keys.dataset_key[:64]]) == {"hash-c"}
