"""A long text counted in pieces (`replay.ingest.tokens.pieces`) gives the count of the whole,
on real text (every long string of the shared Claude Code logs) and on generated text; the cut
is only ever after a newline that an ASCII letter follows, or between a letter and a space
that a letter follows."""

from __future__ import annotations

import json

import toktok
from hypothesis import given, settings, strategies as st

from conftest import shared_logs
from replay.ingest import tokens


def _count(texts):
    return toktok.batch_count(list(texts), tokens.ENCODING, threads=1)


def _strings(v, out):
    if isinstance(v, str):
        if len(v) > 300:
            out.append(v)
    elif isinstance(v, dict):
        for x in v.values():
            _strings(x, out)
    elif isinstance(v, list):
        for x in v:
            _strings(x, out)


def test_pieces_of_real_text_count_as_the_whole():
    texts = []
    for f in sorted(shared_logs("claude-code").glob("*.jsonl")):
        for line in f.read_text(errors="replace").splitlines():
            try:
                _strings(json.loads(line), texts)
            except ValueError:
                continue
    cut = [list(tokens.pieces(t, 256)) for t in texts]  # small pieces: many cuts in every long string
    assert sum(len(c) > 1 for c in cut) > 1000
    whole = _count(texts)
    parts = _count([p for c in cut for p in c])
    k = 0
    for t, c, w in zip(texts, cut, whole):
        assert "".join(c) == t
        assert sum(parts[k:k + len(c)]) == w
        k += len(c)


_ALPHABET = st.sampled_from(list("ab Zq\n\n\r\t  .,;:'\"/\\-_(){}[]0123456789é日本🙂\u00a0\u200b's've"))


@settings(max_examples=300, deadline=None)
@given(st.lists(_ALPHABET, min_size=1, max_size=400).map("".join), st.integers(1, 40))
def test_pieces_of_generated_text_count_as_the_whole(text, size):
    cut = list(tokens.pieces(text, size))
    assert "".join(cut) == text
    for p, q in zip(cut, cut[1:]):
        assert p.endswith("\n") or (p[-1:].isascii() and p[-1:].isalpha() and q[:1] == " ")
    assert sum(_count(cut)) == _count([text])[0]


def test_count_many_cuts_only_long_texts(monkeypatch):
    monkeypatch.setattr(tokens, "PIECE_CHARS", 64)
    texts = ["short", ("word and more\nNext line here\n" * 20), "x" * 500]
    assert tokens.count_many(texts) == _count(texts)
