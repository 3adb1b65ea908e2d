"""A log file as a stream of records: JSONL, a JSON array of records, or one JSON document.

Memory stays bounded by the largest record, not the file: lines are read and parsed one at
a time. The format is sniffed from the content, never from the file name:

* **JSONL** (one record per line) unless the first non-empty line is only ``[`` or ``{``.
  A first line that parses alone as something else (``[1,2,3]``) is skipped with a reason,
  not taken for a whole-file array; a file whose only line is a JSON array (a compact dump)
  is an array;
* **a JSON array** (Claude Code Stop-hook dumps): its elements are the records;
* **a JSON object** (Gemini CLI chat files): the elements of its ``messages`` array are the
  records, its other top-level fields are in :attr:`Records.meta`.

Pretty-printed documents are streamed element by element (a string can hold no raw newline,
so brackets outside strings tell where an element ends); a compact document on one line is
parsed whole. A line with invalid UTF-8 or a lone surrogate escape is repaired (the bad
bytes become U+FFFD) and counted in ``report.repaired``, so one bad byte never costs a
record. Bad lines are skipped and counted; a last line without its newline that fails to
parse is reported as truncated (a session still being written). A JSONL line that holds
several complete JSON objects one after another (Claude Code sometimes appends a record to a
line) yields each of them, counted as ``multi_object_line``; a tail after them that does not
parse is still skipped with its line number.
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from replay.ingest.readers.dupkeys import duplicate_keys
from replay.ingest.readers.jsonbytes import Buffer, DocumentError, close_at, depth_of, repair, split_values
from replay.ingest.readers.report import FileError, ReadReport

Record = tuple[int, dict[str, Any]]
BOM = b"\xef\xbb\xbf"
DOCUMENT_ARRAYS = ("messages",)  # top-level arrays of a JSON object document that hold its records
_OPEN = (b"[", b"{", b"[{", b"[ {")


_PARSED_BYTES = 8 << 20  # of lines `head` keeps parsed for the next pass
_SPACE = b" \t\n\r\x0b\x0c"  # what bytes.isspace() is made of

COMPRESSED_SUFFIXES = (".gz", ".zip", ".bz2", ".xz", ".zst")
LOG_NAMES = (".jsonl", ".json")


def compressed_log(p: Path) -> bool:
    """Whether ``p`` is a compressed log (``x.jsonl.gz``, ``x.json.zst``) or an archive that may
    hold logs (``.zip``). Ingest reads gzip logs (`gzip_log`); anything else is not read, so it
    is named rather than passed over in silence."""
    suffixes = [s.lower() for s in p.suffixes[-2:]]
    if not suffixes or suffixes[-1] not in COMPRESSED_SUFFIXES:
        return False
    return suffixes[-1] == ".zip" or (len(suffixes) == 2 and suffixes[0] in LOG_NAMES)


def gzip_log(p: Path) -> bool:
    """``x.jsonl.gz`` or ``x.json.gz``: a log rotated or archived with gzip, which ingest reads as is."""
    suffixes = [s.lower() for s in p.suffixes[-2:]]
    return len(suffixes) == 2 and suffixes[1] == ".gz" and suffixes[0] in LOG_NAMES


def open_log(path: Path) -> IO[bytes]:
    """`open_regular`, decompressed when ``path`` is a gzip log (the decompressed bytes are what
    is hashed, measured and parsed)."""
    fh = open_regular(path)
    if not gzip_log(path):
        return fh
    import gzip

    gz = gzip.GzipFile(fileobj=fh, mode="rb")
    gz.myfileobj = fh  # closed with it, as gzip.open(filename) arranges
    return gz


def damaged_gzip(path: Path, e: Exception) -> OSError:
    """A gzip log that cannot be decompressed, as the OSError every reader path reports per file."""
    import errno

    return OSError(errno.EIO, f"damaged gzip data ({e})", str(path))


def compressed_reason(p: Path) -> str:
    kind = "an archive" if p.suffix.lower() == ".zip" else "a compressed log"
    return f"{kind} ({p.suffix}), not read: extract or decompress it and give the result"


def walk_files(root: Path) -> tuple[list[Path], list[tuple[str, str]]]:
    """Every entry under ``root`` that is not a directory (sorted), and the folders that could
    not be listed, each with why. Path.rglob passes over an unreadable folder without a word;
    its logs would then be missing from an ingest or an anonymized tree with nobody told."""
    found: list[Path] = []
    problems: list[tuple[str, str]] = []

    def unreadable(e: OSError) -> None:
        problems.append((str(e.filename or root), f"cannot read this folder ({e.strerror or e}); "
                                                  "the logs in it were not read"))

    for top, dirs, files in os.walk(root, onerror=unreadable):
        base = Path(top)
        found.extend(base / f for f in files)  # links to folders are in ``dirs``: not followed, as by rglob
    return sorted(found), sorted(problems)


def open_regular(path: Path) -> IO[bytes]:
    """A binary file object of a regular file; anything else is refused (OSError), never waited on."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "not a regular file"
            raise OSError(0, f"{kind}, not read", str(path))
        return os.fdopen(fd, "rb", buffering=1 << 20)
    except BaseException:
        os.close(fd)
        raise


class Records:
    """The records of one log file, read as a stream; iterate (again and again) for (line, record) pairs.

    ``data`` reads from memory instead of ``path``; ``limit`` reads only the first ``limit``
    bytes (what was hashed, when the file is still growing). Iterating reports skipped and
    repaired lines into ``report``; :meth:`iter` with ``quiet=True`` (a first pass) does not.
    For arrays and documents the "line" of a record is its index (1-based), as for JSONL.
    """

    def __init__(self, path: Path, report: ReadReport, data: bytes | None = None, limit: int | None = None):
        self.path = path
        self.report = report
        self.data = data
        self.limit = limit
        self.meta: dict[str, Any] = {}
        self.bom = False
        # JSONL lines parsed by `head` (line -> its values), taken by the next pass instead of parsed
        # again: the format and the reader are sniffed from the first records, up to three times
        self._parsed: dict[int, list] = {}
        self._parsed_bytes = 0  # of the lines kept there (at most _PARSED_BYTES)
        self._keep = False  # in `head`
        with self._open() as fh:
            self.bom = fh.read(len(BOM)) == BOM
        if self.bom and limit is not None:
            self.limit = max(0, limit - len(BOM))
        self.kind = self._sniff_kind()

    # --- opening ----------------------------------------------------------------------------
    def _open(self) -> IO[bytes]:
        """The file, past a UTF-8 byte order mark (an editor's; JSON parsers refuse it, which
        would cost the first line)."""
        fh = io.BytesIO(self.data) if self.data is not None else open_log(self.path)
        if self.bom:
            fh.seek(len(BOM))
        return fh

    def _lines(self) -> Iterator[tuple[int, bytes]]:
        limit = self.limit
        with self._open() as fh:
            pos = 0
            for i, raw in enumerate(fh, 1):
                if limit is not None:
                    if pos >= limit:
                        return
                    if pos + len(raw) > limit:
                        raw = raw[: limit - pos]
                pos += len(raw)
                yield i, raw

    def _sniff_kind(self) -> str:
        with self._open() as fh:
            head = fh.read(8192)
            self.nul = b"\x00" in head  # costs its line, as anywhere (no record at all: `read_records` says binary)
            while head and not head.strip():
                head = fh.read(1 << 20)
        if not head.strip():
            raise FileError("empty file")
        first = head.lstrip().split(b"\n", 1)[0].strip()  # the first non-empty line, or its beginning
        if first in _OPEN:
            self.kind = "array" if first[:1] == b"[" else "document"
            return self.kind if self._document_opens() else "jsonl"
        if first[:1] != b"[":
            return "jsonl"
        first = None  # a line that starts like an array: read it whole
        for _, raw in self._lines():
            if raw.strip():
                if first is not None:
                    return "jsonl"  # a second non-empty line: the first one was a line of its own
                first = raw.strip()
                try:
                    if not isinstance(orjson.loads(first), list):
                        return "jsonl"
                except orjson.JSONDecodeError:
                    return "jsonl"
        return "array"  # a file whose only line is a JSON array (a compact dump)

    # --- iteration --------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Record]:
        return self.iter()

    def iter(self, quiet: bool = False) -> Iterator[Record]:
        report = None if quiet else self.report
        if self.kind == "jsonl":
            return self._jsonl(report)
        return self._document(report)

    def head(self, n: int = 50) -> list[Record]:
        """The first ``n`` records (for sniffing the format), nothing reported."""
        out = []
        self._keep = True
        try:
            for item in self.iter(quiet=True):
                out.append(item)
                if len(out) >= n:
                    break
        finally:
            self._keep = False
        return out

    def _skip(self, report: ReadReport | None, reason: str, line: int | None, detail: str) -> None:
        if report is not None:
            report.skip(reason, self.path, line, detail)

    def _load(self, raw: bytes, report: ReadReport | None, line: int) -> Any:
        """Parse one line or element (repairing bad UTF-8); JSONDecodeError when it is not JSON."""
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            value = repair(raw, e)
            if value is None:
                raise
            if report is not None:
                report.repair("invalid_utf8", self.path, line, "invalid UTF-8 or a lone surrogate replaced by U+FFFD")
            return value

    def _jsonl(self, report: ReadReport | None) -> Iterator[Record]:
        """The records of a JSONL file, read in blocks: a line is parsed, then freed, before its record is yielded.

        Blocks are read into one buffer and a line is parsed where it lies (no copy of each line,
        no new block's memory to fault in); a line longer than a block grows in one bytearray (no
        second copy), so a 50 MB line costs about its size plus its parsed value.
        """
        with self._open() as fh:
            left = self.limit
            carry = bytearray()
            buf = bytearray(Buffer.BLOCK)
            view = memoryview(buf)
            i = 0
            while True:
                n = Buffer.BLOCK if left is None else min(Buffer.BLOCK, left)
                got = fh.readinto(view[:n]) if n > 0 else 0
                if left is not None:
                    left -= got
                if not got:
                    break
                start, end = 0, buf.find(b"\n", 0, got)
                if end < 0:  # inside a long line
                    carry += view[:got]
                    continue
                while end >= 0:
                    if carry:
                        carry += view[:end]
                        raw, carry = carry, bytearray()
                    else:
                        raw = view[start:end]
                    i += 1
                    recs = self._line(raw, report, i, True)
                    del raw
                    for rec in recs:
                        yield i, rec
                    del recs
                    start, end = end + 1, buf.find(b"\n", end + 1, got)
                carry += view[start:got]
            if carry:
                i += 1
                recs = self._line(carry, report, i, False)
                del carry
                for rec in recs:
                    yield i, rec

    def _line(self, raw: bytes | bytearray | memoryview, report: ReadReport | None, i: int, newline: bool) -> list[dict]:
        """The records on one JSONL line: usually one; none when blank or skipped (with its
        reason); several when complete objects follow one another on the line (counted in
        ``report.repaired`` as ``multi_object_line``)."""
        if not raw or (raw[0] in _SPACE and bytes(raw).isspace()):  # not strip(): no copy of a long line
            return []
        values = self._parsed.pop(i, None) if report is not None else self._parsed.get(i)
        try:
            if values is None:
                values = [orjson.loads(raw)]  # what parsed at once reports nothing: `head` may keep it
                if self._keep and self._parsed_bytes + len(raw) <= _PARSED_BYTES:
                    self._parsed[i] = values
                    self._parsed_bytes += len(raw)
            if report is not None and (dup := duplicate_keys(raw, values[0])):
                report.repair("duplicate_key", self.path, i, f"{dup} keys written twice; the last value of each read")
        except orjson.JSONDecodeError as e:
            error, value = e, repair(bytes(raw), e)
            if value is not None:
                if report is not None:
                    report.repair("invalid_utf8", self.path, i, "invalid UTF-8 or a lone surrogate replaced by U+FFFD")
                values = [value]
        if values is None:
            values, tail, fixed = split_values(raw)
            if not values or (len(values) == 1 and tail is None):
                # no complete value, or one orjson refuses (a huge integer): broken as orjson said
                if not newline:
                    self._skip(report, "truncated_last_line", i, "incomplete record at end of file")
                else:  # with bad UTF-8 replaced, what is still wrong (a line cut inside a character says "surrogates")
                    self._skip(report, "invalid_json", i, (f"invalid UTF-8, and then {tail}" if fixed and tail
                                                             else str(error))[:80])
                return []
            if report is not None:
                if len(values) > 1:
                    report.repair("multi_object_line", self.path, i, f"{len(values)} JSON values on one line")
                if fixed:
                    report.repair("invalid_utf8", self.path, i, "invalid UTF-8 replaced by U+FFFD")
            if tail is not None:  # what follows the last complete value does not parse
                reason = "invalid_json" if newline else "truncated_last_line"
                self._skip(report, reason, i, f"after {len(values)} complete values: {tail[:60]}")
        out = []
        for rec in values:
            if isinstance(rec, dict):
                out.append(rec)
            else:
                self._skip(report, "not_an_object", i, f"line holds a JSON {type(rec).__name__}")
        return out

    # --- documents ----------------------------------------------------------------------------
    def _document(self, report: ReadReport | None) -> Iterator[Record]:
        count = [0]
        with self._open() as fh:
            buf = Buffer(fh, self.limit)
            try:
                if not buf.skip_root():
                    return
                body = self._array_body if self.kind == "array" else self._object_body
                if (yield from body(buf, report, count)):
                    buf.expect_end()
            except DocumentError as e:
                self._skip(report, "invalid_json", e.line, str(e)[:80])

    def _document_opens(self) -> bool:
        """Whether the file really is a JSON document: its first record or field parses."""
        try:
            for _ in self._document(None):
                return True
        except DocumentError:
            return False
        return bool(self.meta)

    def _items(self, body: bytes, line: int, report: ReadReport | None, count: list[int],
               balanced_only: bool = False) -> Iterator[Record]:
        """The elements of ``body`` (one or more array elements with their commas).

        Returns False (yielding nothing) when ``balanced_only`` and ``body`` neither parses
        nor closes every bracket it opens (the element goes on), else True.
        """
        body = body.strip().strip(b",").strip()
        if not body:
            return True
        try:
            items = self._load(b"[" + body + b"]", report, line)
        except orjson.JSONDecodeError as e:
            if balanced_only and depth_of(body) != 0:
                return False
            count[0] += 1
            self._skip(report, "invalid_json", count[0], f"element at line {line}: {str(e)[:60]}")
            return True
        yield from self._elements(items, report, count)
        return True

    def _elements(self, items: list, report: ReadReport | None, count: list[int]) -> Iterator[Record]:
        for item in items:
            count[0] += 1
            if isinstance(item, dict):
                yield count[0], item
            else:
                self._skip(report, "not_an_object", count[0], f"element {count[0]} is {type(item).__name__}")

    def _array_body(self, buf: Buffer, report: ReadReport | None, count: list[int]):
        """Yield the elements of an array whose opening bracket was read, up to its closing one.

        A pretty-printed element (an opening ``{`` alone on its line) is read up to the next
        line holding only its closing ``}`` at the same indentation (a search in the bytes,
        checked by parsing); anything else line by line, counting brackets. Returns True
        when the array closed (the rest of that line stays in ``buf``), False at the end of
        the file (a document still being written: a partial last element is reported).
        """
        return (yield from self._body(buf, report, count, b"]", self._items, self._pretty_element, "record"))

    def _object_body(self, buf: Buffer, report: ReadReport | None, count: list[int]):
        """The fields of an object document (into ``meta``) and the records of its ``messages``.

        Returns True when the object closed (the rest of that line stays in ``buf``), False
        at the end of the file."""
        return (yield from self._body(buf, report, count, b"}", self._fields, self._messages_field, "field"))

    def _body(self, buf: Buffer, report: ReadReport | None, count: list[int], closer: bytes,
              take, streamed, what: str):
        """The members of an array or object whose opening bracket was read, up to ``closer``.

        Each member is read line by line, counting brackets, and handed to ``take``; at the
        start of a member ``streamed`` may read it itself (returning True, False at the end
        of the file, None when it does not apply). Returns True when the container closed
        (the rest of that line stays in ``buf``), False at the end of the file.
        """
        depth, acc, start = 0, [], 0
        while True:
            start_line = buf.line
            raw = buf.readline()
            if raw is None:
                break
            if depth == 0 and not acc:
                s = raw.strip()
                if not s or s == b",":
                    continue
                start = start_line
                done = yield from streamed(raw, s, start, buf, report, count)
                if done is False:
                    return False
                if done:
                    continue
            d = depth_of(raw)
            if depth + d < 0:
                pos = close_at(raw, depth)
                if pos < 0 or raw[pos:pos + 1] != closer:
                    raise DocumentError(start_line, "brackets do not match")
                acc.append(raw[:pos])
                yield from take(b"".join(acc), start, report, count)
                buf.push(raw[pos + 1:])
                return True
            acc.append(raw)
            depth += d
            if depth == 0:
                yield from take(b"".join(acc), start, report, count)
                acc = []
        if acc:
            self._skip(report, "truncated_last_line", count[0] + 1, f"the JSON document ends inside a {what}")
        return False

    def _pretty_element(self, raw: bytes, s: bytes, start: int, buf: Buffer, report: ReadReport | None,
                        count: list[int]):
        """An array element opened by a ``{`` alone on its line, read up to its closing ``}``."""
        if s != b"{":
            return None
        closer = b"\n" + raw[: len(raw) - len(raw.lstrip())] + b"}"
        parts = [raw[:-1]]  # the closer's search starts at this line's newline
        while True:
            more, found = buf.until(closer, keep_from=-1)
            parts.append(more)
            body = b"".join(parts)
            if not found:
                self._skip(report, "truncated_last_line", count[0] + 1, "the JSON document ends inside a record")
                return False
            if (yield from self._items(body, start, report, count, balanced_only=True)):
                return True

    def _messages_field(self, raw: bytes, s: bytes, start: int, buf: Buffer, report: ReadReport | None,
                        count: list[int]):
        """A ``"messages": [`` line of an object document: its records, streamed."""
        if not self._array_field(s):
            return None
        return bool((yield from self._array_body(buf, report, count)))

    @staticmethod
    def _array_field(s: bytes) -> bool:
        """Whether a line is ``"messages": [`` (it opens a streamed array of records)."""
        if not s.endswith(b"[") or not s.startswith(b'"'):
            return False
        head = s[:-1].rstrip()
        if not head.endswith(b":"):
            return False
        try:
            return orjson.loads(head[:-1]) in DOCUMENT_ARRAYS
        except orjson.JSONDecodeError:
            return False

    def _fields(self, body: bytes, line: int, report: ReadReport | None, count: list[int]) -> Iterator[Record]:
        """Top-level fields of an object document into ``meta``; a compact ``messages`` array yields its records."""
        body = body.strip().strip(b",").strip()
        if not body:
            return
        try:
            fields = self._load(b"{" + body + b"}", report, line)
        except orjson.JSONDecodeError as e:
            # its brackets balance (that is how its end was found): it alone is skipped, and the
            # messages after it are read (2026-11-28: one field nested too deep cost the whole file)
            self._skip(report, "invalid_json", line, f"top-level field does not parse: {str(e)[:60]}")
            return
        for k, v in fields.items():
            if k in DOCUMENT_ARRAYS and isinstance(v, list):
                yield from self._elements(v, report, count)
            else:
                self.meta[k] = v
