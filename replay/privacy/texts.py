"""Texts awaiting their filler, and the batch that resolves them.

The record walker leaves a ``Text`` wherever a string becomes filler and a ``Block`` for every
model-context block built from several strings. ``TextResolver.resolve()`` then, per file and
in a few token-counting batches: scrubs and seeds each distinct text, builds its filler with
the exact token count, keeps fillers unique per text (a collision is re-drawn), and brings
each block's token count to the raw block's by trimming or growing its longest fillers.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from replay.ingest.keys import Keyring
from replay.ingest.tokens import count_many
from replay.privacy.fillers import Fillers
from replay.privacy.pseudonyms import Pseudonyms
from replay.privacy.scrub import scrub

if TYPE_CHECKING:
    from replay.privacy.summary import AnonymizeSummary


class Text:
    """A text awaiting its filler (resolved in one token-counting batch per file)."""

    __slots__ = ("raw", "override")

    def __init__(self, raw: str):
        self.raw = raw
        self.override: str | None = None  # a block-adjusted filler for this occurrence only


class Pinned(Text):
    """A numbered line of a file read (after its number and the separator ``sep``). Its filler
    must be the same wherever the same line is read (the trace's keyed line hashes compare lines
    across reads), so it is never adjusted to fit one block: instead it is fitted once per
    (separator, line) so that ``sep + filler + newline`` has the token count of ``sep + line +
    newline`` (a newline ends a pre-token of o200k's, so the lines of a read add up)."""

    __slots__ = ("sep",)

    def __init__(self, raw: str, sep: str = ""):
        super().__init__(raw)
        self.sep = sep


class Tail(Text):
    """What follows a file read's numbered lines when the raw result ends with them: nothing, or
    a newline and one-token filler words (``words`` tokens in all) that make up the tokens the
    lines' fillers could not match (a line of its own, without a number: no line of the file)."""

    __slots__ = ("words",)

    def __init__(self) -> None:
        super().__init__("")
        self.words = 0


class Joined:
    """A string made of literal parts and ``Text`` placeholders (a prefix the readers need kept
    as written, then the text's filler)."""

    __slots__ = ("parts",)

    def __init__(self, parts: list):
        self.parts = parts


@dataclass
class Block:
    """A model-context block whose canonical text is built from several strings (tool_use
    input, tool_result parts, attachment, ...): its token count is checked as a whole."""

    raw_text: str
    anon: Any
    render: Callable[[Any], str]


def texts_in(obj: Any, out: list[Text]) -> list[Text]:
    """Every ``Text`` in a record tree, in order, appended to ``out``."""
    if isinstance(obj, Text):
        out.append(obj)
    elif isinstance(obj, Joined):
        texts_in(obj.parts, out)
    elif isinstance(obj, dict):
        for v in obj.values():
            texts_in(v, out)
    elif isinstance(obj, list):
        for v in obj:
            texts_in(v, out)
    return out


def materialize(obj: Any, fill: dict[str, str]) -> Any:
    """A record tree with every ``Text`` replaced by its filler (or its block-adjusted one)."""
    if isinstance(obj, Text):
        if isinstance(obj, Tail):
            return obj.override or ""
        return obj.override if obj.override is not None else fill[obj.raw]
    if isinstance(obj, Joined):
        return "".join(materialize(v, fill) for v in obj.parts)
    if isinstance(obj, dict):
        return {k: materialize(v, fill) for k, v in obj.items()}
    if isinstance(obj, list):
        return [materialize(v, fill) for v in obj]
    return obj


LONG_TEXT = 4 << 20  # texts longer than this are counted in pieces
_PIECE = 1 << 20
# Boundaries of o200k's pre-tokenizer: before a newline that follows an ASCII letter or
# digit (a letter or number pre-token never takes a newline, and the newline run starts
# there), and after a newline before a character that is neither white space nor "/" (only
# white-space runs and punctuation followed by newlines and slashes run past a newline).
# Token counts add up across them (checked on the long strings of the shared corpus and on
# random text: tests/test_hostile_privacy.py), so a 50 MB text is never tokenized whole.
_BOUNDARY_RX = re.compile(r"(?<=[A-Za-z0-9])(?=\n)|\n(?=[^\s/])")


def count_pieces(s: str, size: int | None = None) -> Iterator[str]:
    """``s`` cut at pre-tokenizer boundaries into pieces of about ``size`` characters (default
    ``_PIECE``), lazily: a huge text is never copied whole."""
    size = size or _PIECE
    start = 0
    while len(s) - start > size:
        m = _BOUNDARY_RX.search(s, start + size)
        if not m:
            break
        yield s[start:m.end()]
        start = m.end()
    yield s[start:] if start else s


def count_texts(texts: list[str]) -> list[int]:
    """o200k token counts, like ``count_many``, with memory bounded for huge texts."""
    if all(len(t) <= LONG_TEXT for t in texts):
        return count_many(texts)
    counts = count_many([t if len(t) <= LONG_TEXT else "" for t in texts])
    for i, t in enumerate(texts):
        if len(t) > LONG_TEXT:
            counts[i] = 0
            batch: list[str] = []
            for piece in count_pieces(t):
                batch.append(piece)
                if len(batch) == 8:
                    counts[i] += sum(count_many(batch))
                    batch = []
            counts[i] += sum(count_many(batch))
    return counts


def digest(s: str) -> bytes:
    if len(s) <= _PIECE:
        return hashlib.blake2b(s.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    h = hashlib.blake2b(digest_size=16)  # the same digest, without encoding a huge text whole
    for i in range(0, len(s), _PIECE):
        h.update(s[i:i + _PIECE].encode("utf-8", "surrogatepass"))
    return h.digest()


def utf8_len(s: str) -> int:
    """Byte length of ``s`` in UTF-8, without encoding a huge text whole."""
    if s.isascii():
        return len(s)
    return sum(len(s[i:i + _PIECE].encode("utf-8", "surrogatepass")) for i in range(0, len(s), _PIECE))


class TextResolver:
    """The fillers of the file being written and what keeps them unique over the run."""

    def __init__(self, keys: Keyring, pseudo: Pseudonyms, fillers: Fillers, summary: AnonymizeSummary):
        self.keys = keys
        self.prf = pseudo.prf
        self.fillers = fillers
        self.s = summary
        # raw text -> filler, for the file being written (cleared per file: fillers are
        # deterministic, so the same text in another file gets the same filler again)
        self.fill: dict[str, str] = {}
        self.fill_secrets: dict[str, int] = {}  # raw text -> scrub findings
        self.fill_chars = 0  # size of the cache's raw texts and fillers
        self.huge: list[str] = []  # cached raw texts longer than LONG_TEXT
        # digest(filler) -> digest(raw text), for the whole run: different texts never share
        # a filler (16-byte digests keep memory small on large trees)
        self.used: dict[bytes, bytes] = {}
        self.pending: list[Text] = []
        self.blocks: list[Block] = []
        self.block_owner: dict[bytes, bytes] = {}  # digest(adjusted block text) -> digest(raw block text)
        self.line_fill: dict[tuple[str, str], str] = {}  # (separator, line) -> its fitted filler (`Pinned`)

    def text(self, v: str, line_sep: str | None = None) -> Text | str:
        """A placeholder for ``v``'s filler (the empty string stays empty); with ``line_sep``, a
        numbered line of a file read behind that separator (see `Pinned`)."""
        if v == "":
            return ""
        t = Pinned(v, line_sep) if line_sep is not None else Text(v)
        self.pending.append(t)
        self.s.texts_replaced += 1
        return t

    def filler_now(self, v: str) -> str:
        """``v``'s filler at once, outside the batch (dict keys that are data)."""
        if v not in self.fill:
            self.resolve_texts([Text(v)])
        return self.fill[v]

    def materialize(self, obj: Any) -> Any:
        return materialize(obj, self.fill)

    def end_file(self) -> None:
        self.fill.clear()
        self.line_fill.clear()
        self.fill_secrets.clear()
        self.fill_chars = 0
        self.huge = []

    def forget_huge(self) -> None:
        """Drop the cache entries of huge texts (once their batch is materialized): a text of
        tens of MB is not kept raw while its filler is written."""
        for raw in self.huge:
            self.fill_chars -= len(raw) + len(self.fill.pop(raw, ""))
            self.fill_secrets.pop(raw, None)
        self.huge = []

    def trim(self, max_chars: int) -> None:
        """Bound the raw text -> filler cache of a large file (fillers are deterministic: a
        text met again after a clear gets the same filler, only its distinct count repeats)."""
        if self.fill_chars > max_chars:
            self.end_file()

    # --- fillers of texts ------------------------------------------------------------------
    def resolve_texts(self, texts: list[Text]) -> None:
        """Fillers for every raw text not seen yet: scrub, seed, build, verify counts."""
        todo = list(dict.fromkeys(t.raw for t in texts if t.raw not in self.fill))
        if not todo:
            return
        self.s.unique_texts += len(todo)
        seeds = self._seeds(todo)
        targets = dict(zip(todo, count_texts(todo)))
        attempt = dict.fromkeys(todo, 0)
        work = todo
        made: dict[str, str] = {}
        for _round in range(12):
            made = self._draw(work, seeds, attempt, targets)
            self._fix_counts(made, seeds, targets)
            work = self._claim(work, made, attempt)
            if not work:
                break
        for raw in todo:  # give up on uniqueness after many attempts (only for 1-2 token texts)
            if raw not in self.fill:
                self.fill[raw] = made.get(raw, "")
            self.fill_chars += len(raw) + len(self.fill[raw])
            if len(raw) > LONG_TEXT:
                self.huge.append(raw)

    def _seeds(self, todo: list[str]) -> dict[str, bytes]:
        """Per text, the keyed seed of its filler, from its scrubbed form: a secret never
        seeds a filler."""
        seeds: dict[str, bytes] = {}
        for raw in todo:
            clean, findings = scrub(raw)
            self.fill_secrets[raw] = len(findings)
            seeds[raw] = self.prf(b"filler", bytes.fromhex(self.keys.text_hash(clean)), 32)
        return seeds

    def _draw(self, work: list[str], seeds: dict[str, bytes], attempt: dict[str, int],
              targets: dict[str, int]) -> dict[str, str]:
        """A filler per text, from its seed (or a re-draw seed after a collision)."""
        made = {}
        for raw in work:
            seed = seeds[raw] if attempt[raw] == 0 else self.prf(b"filler-retry", seeds[raw] + bytes([attempt[raw]]), 32)
            made[raw] = self.fillers.make(seed, targets[raw], utf8_len(raw), raw.count("\n"))
        return made

    def _fix_counts(self, made: dict[str, str], seeds: dict[str, bytes], targets: dict[str, int]) -> None:
        """Exact token counts: add or remove words until each filler has its text's count."""
        pending = list(made)
        for _fix in range(8):
            if not pending:
                break
            counts = count_texts([made[r] for r in pending])
            still = []
            for raw, c in zip(pending, counts):
                if c != targets[raw]:
                    made[raw] = self.fillers.adjust(made[raw], c - targets[raw], seeds[raw])
                    still.append(raw)
            pending = still
        if pending:
            counts = count_texts([made[r] for r in pending])
            self.s.filler_mismatch += sum(1 for r, c in zip(pending, counts) if c != targets[r])

    def _claim(self, work: list[str], made: dict[str, str], attempt: dict[str, int]) -> list[str]:
        """Record the fillers no other text uses; return the texts to re-draw."""
        # injectivity: a filler already used by another text is re-drawn
        retry = []
        for raw in work:
            f = made[raw]
            fd, rd = digest(f), digest(raw)
            owner = self.used.get(fd)
            if owner is not None and owner != rd and attempt[raw] < 10:
                attempt[raw] += 1
                retry.append(raw)
                continue
            self.used[fd] = rd
            self.fill[raw] = f
        return retry

    # --- token counts of blocks ------------------------------------------------------------
    def resolve(self) -> None:
        """Fillers for the pending texts, then per-block token checks of composite blocks."""
        self.resolve_texts(self.pending)
        self._fit_lines([t for t in self.pending if isinstance(t, Pinned)])
        for t in self.pending:
            self.s.secrets_removed += self.fill_secrets.get(t.raw, 0)
        self.pending = []
        blocks, self.blocks = self.blocks, []
        if not blocks:
            return
        self.s.blocks_checked += len(blocks)
        raw_counts = count_texts([b.raw_text for b in blocks])
        todo = self._match_block_counts(blocks, raw_counts)
        self._keep_blocks_distinct(blocks)
        if todo:
            texts = [self._render(blocks[i]) for i in todo]
            self.s.blocks_token_mismatch += sum(1 for i, c in zip(todo, count_texts(texts)) if c != raw_counts[i])

    def _fit_lines(self, lines: list[Pinned]) -> None:
        """Every numbered line's filler fitted to its line's token count behind its separator,
        once per (separator, line): equal lines keep equal fillers."""
        keys = list(dict.fromkeys((t.sep, t.raw) for t in lines if (t.sep, t.raw) not in self.line_fill))
        if keys:
            targets = dict(zip(keys, count_texts([sep + raw + "\n" for sep, raw in keys])))
            cur = {k: self.fill[k[1]] for k in keys}
            goal: dict[tuple[str, str], int] = {}  # tokens asked of the filler standing alone
            seeds: dict[str, bytes] = {}
            work = keys
            for _round in range(6):
                counts = count_texts([k[0] + cur[k] + "\n" for k in work])
                nxt = [k for k, c in zip(work, counts) if c != targets[k]]
                if not nxt:
                    break
                seeds.update(self._seeds([k[1] for k in nxt if k[1] not in seeds]))
                alone = dict(zip(nxt, count_texts([cur[k] for k in nxt])))
                for k, c in zip(work, counts):
                    if k in alone:
                        # drawn again with another count, the byte length kept (a word cut
                        # would shrink short lines far below their size)
                        goal[k] = max(1, alone[k] - (c - targets[k]))
                        cur[k] = self.fillers.make(seeds[k[1]], goal[k], utf8_len(k[1]), 0)
                work = nxt
            # still too long (digit-heavy lines, whose fillers are digits and commas): shorter
            # until it is not, the block's tail (`Tail`) makes up a shortfall, never an excess
            for _round in range(4):
                over = [k for k, c in zip(work, count_texts([k[0] + cur[k] + "\n" for k in work])) if c > targets[k]]
                for k in over:
                    goal[k] = max(1, goal.get(k, targets[k]) - 1)
                    cur[k] = self.fillers.make(seeds[k[1]], goal[k], utf8_len(k[1]), 0)
                    if goal[k] == 1:  # one word that may join its separator (a tab), as code does
                        cur[k] = cur[k].lstrip()
                work = over
                if not work:
                    break
            self.line_fill.update(cur)
        for t in lines:
            t.override = self.line_fill[(t.sep, t.raw)]

    def _render(self, b: Block) -> str:
        return b.render(materialize(b.anon, self.fill))

    def _match_block_counts(self, blocks: list[Block], raw_counts: list[int]) -> list[int]:
        """Trim or grow fillers until each block has its raw token count; returns the blocks
        still to check (those left off after 10 rounds and those that cannot match)."""
        todo = list(range(len(blocks)))
        stuck = []  # nothing to absorb the difference (an input with only paths and numbers)
        for _round in range(10):
            if not todo:
                break
            texts = [self._render(blocks[i]) for i in todo]
            counts = count_texts(texts)
            nxt = []
            for i, c in zip(todo, counts):
                delta = c - raw_counts[i]
                if delta == 0:
                    continue
                found = texts_in(blocks[i].anon, [])
                leaves = sorted((t for t in found if not isinstance(t, (Pinned, Tail))),
                                key=lambda t: -len(t.override or self.fill[t.raw]))
                tails = [t for t in found if isinstance(t, Tail)]
                if not leaves and tails:  # a file read: its lines keep their fillers
                    if self._grow_tail(tails[-1], delta):
                        nxt.append(i)
                    else:
                        stuck.append(i)
                    continue
                # each leaf keeps at least one word: an input whose strings cannot absorb the
                # difference (a long path pseudonym next to a short pattern) is left as it is
                spare = sum(max(0, (t.override or self.fill[t.raw]).count(" ") - 1) for t in leaves)
                if not leaves or (delta > 0 and spare < delta):
                    for t in leaves:
                        t.override = None
                    stuck.append(i)
                    continue
                self._absorb(leaves, delta)
                nxt.append(i)
            todo = nxt
        return todo + stuck

    def _keep_blocks_distinct(self, blocks: list[Block]) -> None:
        # different raw blocks must stay different: a block whose adjusted text collides with
        # another block's gets its plain fillers back (those are unique per text)
        for b in blocks:
            rd = digest(b.raw_text)
            owner = self.block_owner.setdefault(digest(self._render(b)), rd)
            if owner != rd:
                for t in texts_in(b.anon, []):
                    if not isinstance(t, (Pinned, Tail)):
                        t.override = None
                self.block_owner.setdefault(digest(self._render(b)), rd)

    def _grow_tail(self, t: Tail, delta: int) -> bool:
        """Take ``delta`` tokens off (or add them to) a file read's tail; False when it cannot
        (the lines alone are already longer than the raw result)."""
        k = max(0, t.words - delta)  # tokens asked of the tail: a newline, then k - 1 words
        if k == t.words:
            return False
        t.words = k
        t.override = "\n" + self.fillers.adjust("", 1 - k, b"\0" * 32) if k > 1 else ("\n" if k else None)
        return True

    def _absorb(self, leaves: list[Text], delta: int) -> None:
        """Shrink (delta > 0) or grow the largest filler leaves of a block by ``delta`` tokens."""
        if delta < 0:
            t = leaves[0]
            cur = t.override if t.override is not None else self.fill[t.raw]
            t.override = self.fillers.adjust(cur, delta, self.prf(b"absorb", t.raw.encode("utf-8", "surrogatepass"), 32))
            return
        for t in leaves:
            cur = t.override if t.override is not None else self.fill[t.raw]
            words = max(0, cur.count(" ") - 1)
            take = min(delta, words)
            if take:
                t.override = self.fillers.adjust(cur, take, b"\0" * 32)
                delta -= take
            if delta <= 0:
                return
