"""Reading logs and writing their anonymized copies, for ``replay.privacy.anonymize``.

* reading: JSONL line by line (a huge line is read once and let go before its record is
  processed), invalid UTF-8 and lone surrogate escapes repaired in place
  (``loads_repairing``), a Stop-hook JSON array whole; every dropped line is counted by reason;
* anonymizing: records in batches (``FileRun``), each batch one token-counting round, written
  as it goes, so memory is bounded by the batch and the largest record, not by the file;
* writing: ``Writer`` writes to ``.<name>.<pid>.partial`` beside the final name and renames
  when complete, so no truncated copy ever carries a log's name.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import orjson

from replay.ingest.readers.source import BOM
from replay.privacy.gemini_chat import ChatWalker, is_chat

if TYPE_CHECKING:
    from replay.privacy.summary import AnonymizeSummary
    from replay.privacy.records import Anonymizer

PARTIAL_SUFFIX = ".partial"  # an output being written: ``.<name>.<pid>.partial`` beside the final name
BATCH_BYTES = 8 << 20
BATCH_RECORDS = 4096
FILL_CACHE_CHARS = 64 << 20  # raw text -> filler cache of one file, cleared past this size
_CHUNK = 8 << 20

_SURROGATE_RX = re.compile("[\ud800-\udfff]")


def _fix_surrogates(o: Any) -> Any:
    """Lone surrogates (``"\\ud800"`` escapes the stdlib parser lets through) become U+FFFD."""
    if isinstance(o, str):
        return _SURROGATE_RX.sub("\ufffd", o)
    if isinstance(o, list):
        return [_fix_surrogates(x) for x in o]
    if isinstance(o, dict):
        return {_fix_surrogates(k): _fix_surrogates(v) for k, v in o.items()}
    return o


def loads_repairing(raw: bytes | str) -> tuple[Any, bool]:
    """Parse one JSON document; invalid UTF-8 bytes and lone surrogate escapes are replaced
    by U+FFFD (only them: the rest of the record is kept). Returns (value, repaired)."""
    try:
        return orjson.loads(raw), False
    except orjson.JSONDecodeError as first:
        err = first
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", "replace")
            try:
                return orjson.loads(text), True
            except orjson.JSONDecodeError as e:
                err = e
    else:
        text = raw
    if "\\u" in text and "surrogate" in str(err):
        try:
            return _fix_surrogates(json.loads(text)), True
        except (ValueError, RecursionError):
            pass
    raise err


def chunks(p: Path) -> Iterator[bytes]:
    """The file in pieces of about 8 MB; a piece that ends inside a line is followed by the rest
    of the line, starting with the piece's last 4 KB (a searched name is never cut in two, and a
    huge line is never copied whole)."""
    with open(p, "rb") as f:
        while True:
            chunk = f.read(_CHUNK)
            if not chunk:
                return
            while not chunk.endswith(b"\n"):
                more = f.read(_CHUNK)
                if not more:
                    break
                nl = more.find(b"\n")
                if nl >= 0:
                    f.seek(nl + 1 - len(more), os.SEEK_CUR)
                    more = more[:nl + 1]
                yield chunk
                chunk = chunk[-4096:] + more
            yield chunk


def open_log(p: Path) -> BinaryIO:
    """A log opened for reading past a UTF-8 byte order mark (an editor's: JSON parsers refuse
    it, which would cost the first line); the copy is written without it."""
    f = open(p, "rb")
    if f.read(len(BOM)) != BOM:
        f.seek(0)
    return f


def read_log(p: Path) -> bytes:
    """The whole log, without a byte order mark."""
    data = p.read_bytes()
    return data[len(BOM):] if data.startswith(BOM) else data


def first_byte(p: Path) -> tuple[bytes, bool]:
    """The first non-blank byte of the file (b"" for a blank file) and whether a NUL byte is
    in its first 8 KB (a binary file)."""
    with open_log(p) as f:
        head = f.read(8192)
        nul = b"\x00" in head
        while head and not head.strip():
            head = f.read(1 << 20)
        return head.lstrip()[:1], nul


class Writer:
    """An output written to ``.<name>.<pid>.partial`` beside its final name and renamed when
    complete, so a crash or a full disk never leaves a truncated file that looks complete."""

    def __init__(self, out: Path):
        self.out = out
        self.tmp = out.with_name(f".{out.name}.{os.getpid()}{PARTIAL_SUFFIX}")
        self.f: BinaryIO | None = None
        self.n = 0

    def __enter__(self) -> Writer:
        return self

    def write(self, b: bytes) -> None:
        if self.f is None:  # opened on the first write: nothing to write, no file and no folder
            self.out.parent.mkdir(parents=True, exist_ok=True)
            self.f = open(self.tmp, "wb")
        self.f.write(b)
        self.n += len(b)

    def commit(self) -> None:
        assert self.f is not None
        self.f.flush()
        os.fsync(self.f.fileno())
        self.f.close()
        self.f = None
        os.replace(self.tmp, self.out)

    def __exit__(self, *exc) -> None:
        if self.f is not None:  # not committed: an error, an interrupt, or nothing to write
            self.f.close()
            self.f = None
        if self.tmp.exists():
            self.tmp.unlink()


def drop_line(summary: AnonymizeSummary, reason: str) -> None:
    summary.lines_dropped += 1
    summary.drop_reasons[reason] += 1


class FileRun:
    """Anonymizes one log file into one output, record batch by record batch."""

    def __init__(self, anon: Anonymizer, summary: AnonymizeSummary, w: Writer,
                 progress: Callable[[int], None] | None):
        self.anon, self.s, self.w, self.progress = anon, summary, w, progress
        self.batch: list[Any] = []
        self.batch_bytes = 0
        self.records = 0
        self.drops = Counter()

    def add(self, rec: Any, nbytes: int) -> None:
        if not isinstance(rec, dict):
            self.drop("not_an_object")
            return
        try:
            self.batch.append(self.anon.record(rec))
        except RecursionError:  # nested deeper than the walker recurses
            self.drop("too_deep")
            return
        self.batch_bytes += nbytes

    def full(self) -> bool:
        return self.batch_bytes >= BATCH_BYTES or len(self.batch) >= BATCH_RECORDS

    def drop(self, reason: str) -> None:
        drop_line(self.s, reason)
        self.drops[reason] += 1

    def anonymized(self) -> list[Any]:
        """The batch's records with their fillers. The raw texts are let go before anything is
        serialized: a huge text is not held raw, as filler and as output at once."""
        self.anon.resolve()
        batch, self.batch = self.batch, []
        out, rec = [], None
        for i in range(len(batch)):
            rec, batch[i] = batch[i], None
            try:
                out.append(self.anon.texts.materialize(rec))
            except RecursionError:
                self.drop("too_deep")
        del batch, rec
        self.anon.texts.forget_huge()
        return out

    def flush(self) -> None:
        """Fillers for the batch, then its records written as JSONL."""
        out = self.anonymized()
        for i in range(len(out)):
            rec, out[i] = out[i], None
            try:
                line = orjson.dumps(rec)
            except (orjson.JSONEncodeError, RecursionError):  # nested deeper than JSON writers allow
                self.drop("too_deep")
                continue
            self.w.write(line)
            self.w.write(b"\n")
            self.records += 1
        self.anon.texts.trim(FILL_CACHE_CHARS)
        if self.progress:
            self.progress(self.batch_bytes)
        self.batch_bytes = 0


def read_jsonl(run: FileRun, f: BinaryIO) -> None:
    while True:
        raw = f.readline()
        if not raw:
            break
        if not raw.strip():
            continue
        n = len(raw)
        try:
            rec, repaired = loads_repairing(raw)
        except orjson.JSONDecodeError as e:
            if not raw.endswith(b"\n"):
                run.drop("truncated_last_line")
            elif "depth" in str(e) or "recursion" in str(e):
                run.drop("too_deep")
            else:
                run.drop("invalid_json")
            continue
        raw = b""  # a huge line is not kept while its record is processed
        run.s.invalid_utf8 += repaired
        run.add(rec, n)
        rec = None
        if run.full():
            run.flush()
    run.flush()


def read_array(run: FileRun, p: Path) -> bool:
    """A Stop-hook dump (one JSON array); False when it is not one (then it is read as JSONL:
    a JSONL file whose first line is an array)."""
    data = read_log(p)
    try:
        arr, repaired = loads_repairing(data)
    except orjson.JSONDecodeError:
        # one element nested deeper than the parser allows, or broken: the array is read element by
        # element (as ingest reads it), so its good records are kept and the bad one alone dropped
        del data
        arr, repaired = _array_elements(run, p)
        if arr is None:
            return False
    if not isinstance(arr, list):
        return False
    run.s.invalid_utf8 += repaired
    data = None
    for rec in arr:
        if isinstance(rec, dict):
            try:
                run.batch.append(run.anon.record(rec))
            except RecursionError:
                run.drop("too_deep")
        else:
            run.drop("not_an_object")
    rec = arr = None
    out = run.anonymized()
    if out:
        try:
            run.w.write(orjson.dumps(out, option=orjson.OPT_INDENT_2))
        except (orjson.JSONEncodeError, RecursionError):
            run.drop("too_deep")
            return True
        run.records = len(out)
    return True


def _array_elements(run: FileRun, p: Path) -> tuple[list | None, int]:
    """The records of a JSON array read element by element (None if the file is not an array),
    each element that cannot be read dropped with its reason, and the lines repaired."""
    from replay.ingest.readers.base import ReadReport, Records

    report = ReadReport()
    records = Records(p, report)
    if records.kind != "array":
        return None, 0
    arr = [rec for _, rec in records]
    for reason, n in report.skipped.items():  # an element too deep to parse is "invalid_json" here
        for _ in range(n):
            run.drop(reason)
    return arr, sum(report.repaired.values())


def read_chat(run: FileRun, p: Path) -> bool:
    """A Gemini CLI chat file (one JSON object with a ``messages`` array, whatever the file's
    name ends with), written back as one object: pretty-printed when the input was, else on
    one line. False when the file is not one (then it is read as JSONL). Its records are its
    messages; a chat with no message counts as one record (its header is still copied)."""
    with open_log(p) as f:
        line = f.readline()
    if line.strip() == b"{":  # pretty-printed: the object opens on a line of its own
        compact = False
    else:
        try:
            head, _ = loads_repairing(line)
        except orjson.JSONDecodeError:
            return False  # a JSONL log with a bad first line: never read whole
        if not is_chat(head):
            return False  # a JSONL log: never read whole
        compact = True
        del head
    del line
    data = read_log(p)
    try:
        doc, repaired = loads_repairing(data)
    except orjson.JSONDecodeError:
        return False
    del data
    if not is_chat(doc):
        return False
    run.s.invalid_utf8 += repaired
    try:
        anon = ChatWalker(run.anon).document(doc)
    except RecursionError:
        run.drop("too_deep")
        return True
    n = max(1, len(doc["messages"]))
    doc = None
    run.batch.append(anon)
    out = run.anonymized()
    if out:
        try:
            blob = orjson.dumps(out[0], option=0 if compact else orjson.OPT_INDENT_2)
        except (orjson.JSONEncodeError, RecursionError):
            run.drop("too_deep")
            return True
        run.w.write(blob + b"\n")
        run.records = n
    return True
