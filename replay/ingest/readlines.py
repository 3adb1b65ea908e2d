"""The numbered lines of a file read's result, and client previews that are not whole results.

Claude Code's ``Read`` returns the lines of a file each behind its line number: ``   120→text``
(``cat -n`` style padded, the arrow U+2192) in most versions, ``120<TAB>text`` in some 2.1.x
ones. A trace that keeps a keyed hash of every numbered line (never the line) can tell whether
line N of one read equals line N of another, which a hash of the whole result cannot when the
two ranges differ: the proof a range-aware dedup needs before it points a re-read at an earlier
read (``replay.policies.read_range_dedup``, ``verify = "lines"``).

When a tool result is too large, Claude Code keeps only a preview in context::

    <persisted-output>
    Output too large (80.1KB). Full output saved to: /home/.../x.txt

    Preview (first 2KB):
         1→...
    ...
    </persisted-output>

Such a preview is never the range the call asked for, however many numbered lines it shows.
"""

from __future__ import annotations

import hashlib
import re
import struct
from itertools import compress, repeat
from operator import getitem, is_

from replay.ingest.keys import Keyring

PREVIEW_OPEN = "<persisted-output>"
# a line number, then the arrow or a tab; the line's text follows
_NUMBERED = re.compile(r" *(\d{1,9})(?:→|\t)")
LINE_HASH_PERSON = b"ctxreplay/line"  # separates line hashes from every other keyed hash


def is_preview(text: str) -> bool:
    """Claude Code's preview of a tool result too large to keep (``<persisted-output>``)."""
    return text[:256].lstrip().startswith(PREVIEW_OPEN)  # no copy of a long result


def numbered_parts(text: str) -> tuple[list[tuple[str, str]], str] | None:
    """(per numbered line (its number and separator as written, its text), what follows the
    run from its newline on) of a read's result, None when it does not open with a numbered
    line: what the anonymizer keeps (the numbers) and fills (each line alone)."""
    if _NUMBERED.match(text) is None:
        return None
    out: list[tuple[str, str]] = []
    pos, expect = 0, None
    while pos <= len(text):
        end = text.find("\n", pos)
        line = text[pos:] if end < 0 else text[pos:end]
        m = _NUMBERED.match(line)
        if m is None or (expect is not None and int(m.group(1)) != expect):
            break
        expect = int(m.group(1)) + 1
        out.append((line[:m.end()], line[m.end():]))
        if end < 0:
            return out, ""
        pos = end + 1
    return out, text[pos - 1:]


def numbered_lines(text: str) -> tuple[int, list[str]] | None:
    """(number of the first line, the texts of the consecutively numbered lines from there) of a
    read's result, None when it does not open with a numbered line. What follows the run (a
    ``<system-reminder>`` Claude Code appends, a blank end) is not a line of the file."""
    m = _NUMBERED.match(text)
    if m is None:
        return None
    first = int(m.group(1))
    lines = text.split("\n")
    # every line's prefix is known once the first one's format is: the lines that carry theirs are
    # found by one map over all of them, not a regex or a call per line (this runs for every line of
    # every read at ingest); the rest goes line by line from the first that does not
    sep = text[m.end() - 1]
    prefixes, cuts = _prefixes(0 if sep == "\t" else m.end() - 1, sep, first, len(lines))
    ok = list(map(str.startswith, lines, prefixes))
    k = ok.index(False) if False in ok else len(lines)
    out = list(map(getitem, lines[:k], cuts[:k]))
    n = first + k
    for line in lines[k:]:
        p = prefixes[n - first]
        if not line.startswith(p):
            m2 = _NUMBERED.match(line)  # another padding (a number wider than the padding)
            if m2 is None or int(m2.group(1)) != n:
                break
            out.append(line[m2.end():])
        else:
            out.append(line[len(p):])
        n += 1
    return first, out


# the line prefixes of each format (padding width, separator), and the slices that cut them off,
# for the line numbers below _CACHED_LINES: made once per process, not once per read
_PREFIX_CACHE: dict[tuple[int, str], tuple[list[str], list[slice]]] = {}
_CACHED_LINES = 4096  # Claude Code's Read returns 2,000 lines unless asked for more
_CACHED_WIDTH = 12


def _prefixes(width: int, sep: str, first: int, n: int) -> tuple[list[str], list[slice]]:
    """The prefixes of lines ``first`` to ``first + n - 1`` (the number padded to ``width``, then
    ``sep``) and a slice that cuts each off its line."""
    end = first + n
    fmt = f"{{:>{width}}}{sep}".format if width else f"{{}}{sep}".format
    if end > _CACHED_LINES or width > _CACHED_WIDTH:
        prefixes = list(map(fmt, range(first, end)))
        return prefixes, list(map(slice, map(len, prefixes), repeat(None)))
    prefixes, cuts = _PREFIX_CACHE.setdefault((width, sep), ([], []))
    if len(prefixes) < end:
        more = list(map(fmt, range(len(prefixes), min(_CACHED_LINES, max(end, 2 * len(prefixes))))))
        prefixes += more
        cuts += map(slice, map(len, more), repeat(None))
    return prefixes[first:end], cuts[first:end]


class LineHasher:
    """Keyed 64-bit hashes of lines (blake2b with the dataset key, as every content hash), as
    signed integers (a BIGINT list in the store).

    A line is hashed once per process and key: files are read again and again in a session
    (the shared entire-cli corpus has 578,130 numbered lines, 54,673 of them distinct). The
    cache is emptied when it would hold over ``CACHE_CHARS`` characters (counting 50 more per
    line for its entry), which bounds its memory."""

    CACHE_CHARS = 16_000_000
    _caches: dict[bytes, dict[str, int]] = {}
    _chars: dict[bytes, int] = {}
    # whole read results (by their content hash) -> what `numbered` answered, up to READS_LINES
    # line hashes per key: a result read again unchanged (about a fifth of entire-cli's read
    # lines) is neither cut into lines nor looked up line by line
    READS_LINES = 2_000_000
    _reads: dict[bytes, dict[str, tuple[int, list[int]] | None]] = {}
    _reads_lines: dict[bytes, int] = {}

    def __init__(self, keys: Keyring):
        self._key = keys.dataset_key[:64]
        self._base = hashlib.blake2b(digest_size=8, key=self._key, person=LINE_HASH_PERSON)
        self._cache = self._caches.setdefault(self._key, {})

    def numbered(self, text: str, content_hash: str | None = None) -> tuple[int, list[int]] | None:
        """(first line number, the hashes of the consecutively numbered lines) of a read's result
        (`numbered_lines`), None when it shows none; remembered by ``content_hash`` (the keyed hash
        of ``text``) when given."""
        reads = self._reads.setdefault(self._key, {})
        if content_hash is not None and content_hash in reads:
            got = reads[content_hash]
            return None if got is None else (got[0], list(got[1]))
        lines = numbered_lines(text)
        got = None if lines is None or not lines[1] else (lines[0], self.hashes(lines[1]))
        if content_hash is not None:
            n = self._reads_lines.get(self._key, 0) + 1 + (len(got[1]) if got else 0)
            if n > self.READS_LINES:
                reads.clear()
                n = 1 + (len(got[1]) if got else 0)
            self._reads_lines[self._key] = n
            reads[content_hash] = None if got is None else (got[0], list(got[1]))
        return got

    def hashes(self, lines: list[str]) -> list[int]:
        cache = self._cache
        out = list(map(cache.get, lines))
        if None in out:
            # C-level maps over every line; the Python loop below runs once per line never seen
            new = list(dict.fromkeys(compress(lines, map(is_, out, repeat(None)))))
            chars = self._chars.get(self._key, 0) + sum(map(len, new)) + 50 * len(new)  # with each entry's overhead
            if chars > self.CACHE_CHARS:
                cache.clear()
                new = list(dict.fromkeys(lines))
                chars = sum(map(len, new)) + 50 * len(new)
            self._chars[self._key] = chars
            base = self._base
            digests = []
            for line in new:
                h = base.copy()  # the keyed state is set up once, not per line
                h.update(line.encode("utf-8", "surrogatepass"))
                digests.append(h.digest())
            cache.update(zip(new, struct.unpack(f">{len(digests)}q", b"".join(digests))))
            out = list(map(cache.__getitem__, lines))
        return out
