"""Filler text: keyed words with a given o200k token count, byte size and newline count.

``Fillers`` draws from the filler vocabulary (less any word holding a sensitive term). A
filler is built from one-token units, so its token count is right by construction except at
unit boundaries, where ``adjust`` then adds or removes whole words:

* ordinary text: words whose lengths sum to the original's byte size;
* dense text (hashes, CJK, short strings), fewer bytes than the shortest words allow:
  one-byte units (digits, commas) between short words;
* sparse text (indentation, rulers), more bytes than the longest words allow: space runs
  that are one token before a word;
* newlines (one token, one byte each) spread between the words.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from replay.privacy.vocabulary import filler_vocabulary

if TYPE_CHECKING:
    import re2

_ONE_CHAR = "abcdefghijklmnopqrstuvwxyz0123456789"  # one byte, one token each


class Fillers:
    """The filler vocabulary of one run and the constructions on it."""

    # Long texts repeat one filler block of this many tokens: building it word by word once
    # is what costs, and the token count of a repeat is exact.
    BLOCK = 2048

    def __init__(self, deny_rx: re2._Regexp | None):
        vocab, runs = filler_vocabulary()
        self.vocab = {L: tuple(w for w in ws if not (deny_rx and deny_rx.search(w))) for L, ws in vocab.items()}
        self.vocab = {L: ws for L, ws in self.vocab.items() if ws}
        self.lengths = tuple(sorted(self.vocab))
        self.lmin, self.lmax = self.lengths[0], self.lengths[-1]
        self.nearest = {L: min(self.lengths, key=lambda x: abs(x - L)) for L in range(self.lmin, self.lmax + 1)}
        self.gaps = any(self.nearest[L] != L for L in self.nearest)
        self.space_runs = runs
        self.kmax = runs[-1] if runs else 0

    def word_lengths(self, n: int, total: int, rng: random.Random) -> list[int]:
        """n word lengths within the vocabulary's range summing to ``total`` (as near as possible)."""
        lo, hi = self.lmin, self.lmax
        total = max(lo * n, min(hi * n, total))
        base, extra = divmod(total, n)
        lengths = [base + 1] * extra + [base] * (n - extra)
        if n > 1:  # variety without changing the sum: move 1-2 bytes between neighbours
            for i, r in zip(range(0, n - 1, 2), rng.randbytes(n // 2)):
                d = r % 5 - 2
                a, b = lengths[i] + d, lengths[i + 1] - d
                if lo <= a <= hi and lo <= b <= hi:
                    lengths[i], lengths[i + 1] = a, b
            if extra:
                k = rng.randrange(n)
                lengths = lengths[k:] + lengths[:k]
        if self.gaps:
            lengths = [self.nearest[L] for L in lengths]
        return lengths

    def pick(self, lengths: list[int], rng: random.Random) -> list[str]:
        """One random word per length (keyed, fast: two random bytes per word)."""
        idx = memoryview(rng.randbytes(2 * len(lengths))).cast("H")
        vocab = self.vocab
        return [vocab[L][x % len(vocab[L])] for L, x in zip(lengths, idx)]

    def construct(self, tokens: int, nbytes: int, newlines: int, rng: random.Random) -> str:
        """Filler of ``tokens`` one-token units (words, newlines, digit/comma runs, space runs)."""
        if tokens <= 0:
            return ""
        nl = min(newlines, tokens // 4)
        r_tok = tokens - nl
        budget = max(nbytes - nl, r_tok)
        if budget < self.lmin * r_tok:
            pieces = self._dense(r_tok, budget, rng)
        elif budget <= self.lmax * r_tok or not self.kmax:
            pieces = self.pick(self.word_lengths(r_tok, budget, rng), rng)
        else:
            pieces = self._sparse(r_tok, budget, rng)
        if nl:
            self._add_newlines(pieces, nl, rng)
        return "".join(pieces)

    def _dense(self, r_tok: int, budget: int, rng: random.Random) -> list[str]:
        """Dense text (hashes, CJK, 1-3 characters): ``r_tok`` units in ``budget`` bytes, with
        1-byte units where words would be too long."""
        n_w = max(0, min(r_tok, (budget - r_tok) // max(1, self.lmin - 1)))
        n_lo = r_tok - n_w
        digits = rng.randbytes(n_lo + 1)
        if n_w == 0:  # only 1-byte tokens: "7", "q", "7,3,1"
            if n_lo == 1:
                return [_ONE_CHAR[digits[0] % len(_ONE_CHAR)]]
            return ["".join(chr(48 + digits[j] % 10) if j % 2 == 0 else "," for j in range(n_lo))]
        # short words, each followed by ",7,3" runs
        words = self.pick([self.lmin] * n_w, rng)
        per, rest = divmod(n_lo, n_w)
        pieces, pos = [], 0
        for i, w in enumerate(words):
            k = per + (1 if i < rest else 0)
            lo = "".join("," if j % 2 == 0 else chr(48 + digits[pos + j] % 10) for j in range(k))
            pos += k
            pieces.append(w + lo)
        return pieces

    def _sparse(self, r_tok: int, budget: int, rng: random.Random) -> list[str]:
        """Sparse text (indentation, rulers): half the units are space runs before words."""
        n_sp = r_tok // 2
        n_w = r_tok - n_sp
        lengths = self.word_lengths(n_w, min(budget - n_sp, n_w * (self.lmax - 1)), rng)
        pieces = self.pick(lengths, rng)
        spare = budget - sum(lengths)
        per, rest = divmod(spare, max(1, n_sp))
        for i in range(n_sp):
            k = max(1, min(self.kmax, per + (1 if i < rest else 0)))
            pieces[i] = " " * k + pieces[i]
        return pieces

    def _add_newlines(self, pieces: list[str], nl: int, rng: random.Random) -> None:
        """Spread ``nl`` newlines over ``pieces`` (in place)."""
        # a newline before a word costs one token and one byte; never two in a row
        n = len(pieces)
        if n > 1:
            m = min(nl, n - 1)
            step = (n - 1) / m
            off = rng.random() * step
            for j in range(m):
                i = 1 + min(n - 2, int(off + j * step))
                pieces[i] = "\n" + pieces[i]
            missing = nl - m
        else:
            missing = nl
        if missing > 0:  # too few words to carry the newlines: words instead
            pieces.extend(self.pick([self.lmin] * missing, rng))

    def make(self, seed: bytes, tokens: int, nbytes: int, newlines: int) -> str:
        """The filler for a text of ``tokens`` tokens, ``nbytes`` bytes and ``newlines`` newlines."""
        rng = random.Random(int.from_bytes(seed[:16], "big"))
        if tokens <= 2 * self.BLOCK:
            return self.construct(tokens, nbytes, newlines, rng)
        # long texts: one block of BLOCK tokens repeated, plus the remainder (fast, exact)
        q, rem = divmod(tokens, self.BLOCK)
        per_b = nbytes * self.BLOCK // tokens
        per_nl = newlines * self.BLOCK // tokens
        block = self.construct(self.BLOCK, per_b, per_nl, rng)
        tail_bytes = max(rem, nbytes - q * len(block.encode()))
        tail = self.construct(rem, tail_bytes, max(0, newlines - q * per_nl), rng)
        return "".join([block] * q + [tail])  # one allocation: a filler can be 50 MB

    def adjust(self, text: str, delta: int, seed: bytes) -> str:
        """Remove (delta > 0) or append (delta < 0) one-token words at the end."""
        if delta > 0:
            parts = text.rsplit(" ", delta)
            if len(parts) > delta:
                return parts[0].rstrip()  # no dangling newline: it would merge with what follows
            return ""
        rng = random.Random(int.from_bytes(seed[16:32], "big") + len(text))
        return text + "".join(rng.choice(self.vocab[self.lmin + 2 if self.lmin + 2 in self.vocab else self.lmin])
                              for _ in range(-delta))
