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
    # every line's prefix is known once the first one's format is: a startswith per line, not
    # a regex (this runs for every line of every read at ingest)
    if text[m.end() - 1] == "\t":
        prefix = lambda n: f"{n}\t"  # noqa: E731
    else:
        width = m.end() - 1  # the padded number before the arrow
        prefix = lambda n: f"{n:>{width}}→"  # noqa: E731
    out: list[str] = []
    n = first
    for line in text.split("\n"):
        p = prefix(n)
        if not line.startswith(p):
            m2 = _NUMBERED.match(line)  # another padding (a number wider than the padding)
            if m2 is None or int(m2.group(1)) != n:
                break
            out.append(line[m2.end():])
        else:
            out.append(line[len(p):])
        n += 1
    return first, out


class LineHasher:
    """Keyed 64-bit hashes of lines (blake2b with the dataset key, as every content hash), as
    signed integers (a BIGINT list in the store)."""

    def __init__(self, keys: Keyring):
        self._base = hashlib.blake2b(digest_size=8, key=keys.dataset_key[:64], person=LINE_HASH_PERSON)

    def hashes(self, lines: list[str]) -> list[int]:
        base = self._base
        digests = []
        for line in lines:
            h = base.copy()  # the keyed state is set up once, not per line
            h.update(line.encode("utf-8", "surrogatepass"))
            digests.append(h.digest())
        return list(struct.unpack(f">{len(digests)}q", b"".join(digests)))
