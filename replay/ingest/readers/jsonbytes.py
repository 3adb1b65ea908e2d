"""JSON text at the byte level: brackets outside strings, a block reader, repairs of bad encodings.

Used by `replay.ingest.readers.source` to cut a pretty-printed JSON document into its
elements without parsing all of it at once.
"""

from __future__ import annotations

import json
import re
from typing import IO, Any

import orjson

_STR = re.compile(rb'"(?:[^"\\]|\\.)*"')
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def depth_of(line: bytes) -> int:
    """Brackets opened minus closed on a line, strings left out."""
    if not (b"{" in line or b"[" in line or b"}" in line or b"]" in line):
        return 0
    s = _STR.sub(b"", line) if b'"' in line else line
    return s.count(b"{") + s.count(b"[") - s.count(b"}") - s.count(b"]")


def close_at(line: bytes, depth: int) -> int:
    """Offset of the bracket that closes the container ``depth`` levels up from the line's start."""
    for m in _TOKEN.finditer(line):
        c = m.group()
        if c in (b"[", b"{"):
            depth += 1
        elif c in (b"]", b"}"):
            depth -= 1
            if depth < 0:
                return m.start()
    return -1


class DocumentError(Exception):
    """A JSON document whose structure breaks at ``line``."""

    def __init__(self, line: int, why: str):
        super().__init__(why)
        self.line = line


def repair(raw: bytes | str, err: Exception) -> Any:
    """The value of a line that fails only for invalid UTF-8 or a lone surrogate (U+FFFD for each), else None."""
    text = raw if isinstance(raw, str) else None
    if text is None:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", "replace")
            try:
                return orjson.loads(text)
            except orjson.JSONDecodeError as e:
                err = e
    if "surrogate" not in str(err):
        return None
    try:
        value = json.loads(text if text is not None else raw.decode("utf-8", "replace"), parse_constant=_no_constant)
        return _fix_surrogates(value)
    except (ValueError, RecursionError):
        return None


def split_values(raw: bytes | bytearray) -> tuple[list[Any], str | None, bool]:
    """The complete JSON values written one after another on one line (Claude Code sometimes
    appends a record to a line that already holds one), whatever follows the last of them that
    does not parse (a genuinely truncated or garbled tail) described, or None, and whether bad
    UTF-8 was replaced. Slow (Python's decoder finds where a value ends, orjson cannot): only
    for lines orjson refused."""
    try:
        text, fixed = bytes(raw).decode("utf-8"), False
    except UnicodeDecodeError:
        text, fixed = bytes(raw).decode("utf-8", "replace"), True
    dec = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite)
    values: list[Any] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i >= n:
            return values, None, fixed
        try:
            value, i = dec.raw_decode(text, i)
        except (ValueError, RecursionError) as e:
            return values, f"{type(e).__name__}: {e}", fixed
        values.append(_fix_surrogates(value))


def _finite(s: str) -> float:
    v = float(s)
    if v in (float("inf"), float("-inf")):  # orjson refuses these: so does the slow path
        raise ValueError(f"number {s[:20]} is infinity when parsed as double")
    return v


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _fix(s: str) -> str:
    return s.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _fix_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _fix(value)
    if isinstance(value, list):
        return [_fix_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_fix(k): _fix_surrogates(v) for k, v in value.items()}
    return value



class Buffer:
    """The bytes of an open file read in blocks (at most ``limit`` in all): lines, or runs up to a pattern."""

    BLOCK = 1 << 20

    def __init__(self, fh: IO[bytes], limit: int | None):
        self.fh, self.left = fh, limit
        self.buf, self.pos = b"", 0
        self.line = 1  # line number at ``pos``

    def _read(self) -> bytes:
        n = self.BLOCK if self.left is None else min(self.BLOCK, self.left)
        data = self.fh.read(n) if n > 0 else b""
        if self.left is not None:
            self.left -= len(data)
        return data

    def until(self, pat: bytes, keep_from: int = 0) -> tuple[bytes, bool]:
        """The bytes from the current position through the first ``pat`` (True), or to the end (False).

        ``keep_from=-1`` starts the search one byte before the current position (already returned).
        """
        parts = []
        search = max(0, self.pos + keep_from)
        while True:
            i = self.buf.find(pat, search)
            if i >= 0:
                end = i + len(pat)
                parts.append(self.buf[self.pos:end])
                self.pos = end
                break
            keep = max(self.pos, len(self.buf) - len(pat) + 1)  # a pattern may straddle two blocks
            parts.append(self.buf[self.pos:keep])
            data = self._read()
            if not data:
                parts.append(self.buf[keep:])
                self.buf, self.pos = b"", 0
                out = b"".join(parts)
                self.line += out.count(b"\n")
                return out, False
            self.buf, self.pos, search = self.buf[keep:] + data, 0, 0
        out = b"".join(parts)
        self.line += out.count(b"\n")
        return out, True

    def readline(self) -> bytes | None:
        """The next line with its newline (the last one may have none); None at the end."""
        out, _ = self.until(b"\n")
        return out or None

    def push(self, data: bytes) -> None:
        """Put back bytes just taken (the rest of a line)."""
        self.buf = data + self.buf[self.pos:]
        self.pos = 0
        self.line -= data.count(b"\n")

    def skip_root(self) -> bool:
        """Consume leading whitespace and the root's opening bracket; False when there is none."""
        while True:
            raw = self.readline()
            if raw is None:
                return False
            if raw.strip():
                rest = raw.lstrip()[1:]
                self.push(rest)
                return True

    def expect_end(self) -> None:
        while (raw := self.readline()) is not None:
            if raw.strip():
                raise DocumentError(self.line - 1, "data after the end of the JSON document")
