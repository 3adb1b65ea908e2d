"""Small parsers of record fields that every reader needs (timestamps, counts, strings, images)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from replay.ingest.blocktext import canonical_json


# a file holding a second session (another id: `cat a b`) is read as one trace, its context continuing the
# first's; counted as ``second_session`` with this detail (Codex, Copilot CLI)
SECOND_SESSION = ("another session's start in the same file: read as the first session's continuation; "
                  "keep each session in a file of its own to replay them apart")

# the years a log's timestamp may fall in: outside them it is damaged, not a date (year 0, 99999, 2999)
TS_MIN = 946_684_800_000  # 2000-01-01 UTC
TS_MAX = 4_102_444_800_000  # 2100-01-01 UTC


def parse_ts(value: Any) -> int | None:
    """ISO-8601 timestamp -> epoch milliseconds (None when absent, unreadable or outside
    2000-2099). One without a zone is UTC, as every agent writes them: taken in the machine's
    own zone, the same log would give other times on another machine."""
    if not isinstance(value, str) or not value:
        return None
    try:
        d = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if d.tzinfo is None:
        d = d.replace(tzinfo=timezone.utc)
    try:
        ms = int(d.timestamp() * 1000)
    except (OverflowError, ValueError, OSError):
        return None
    return ms if TS_MIN <= ms < TS_MAX else None


def record_ts(value: Any, report, path, line: int) -> int | None:
    """`parse_ts` of a record's own timestamp; one that is there but unusable (unreadable, not a
    string, outside 2000-2099) is counted (``bad_timestamp`` in ``report.repaired``): the record
    is kept, without a time. The message never repeats the value (it could be any text)."""
    ts = parse_ts(value)
    if ts is None and value is not None and value != "":
        what = (f"a string of {len(value)} characters that is no date from 2000 to 2099" if isinstance(value, str)
                else f"a JSON {type(value).__name__}, not an ISO-8601 string")
        report.repair("bad_timestamp", path, line, f"timestamp is {what}: the record is kept without a time")
    return ts


def as_list(d: dict, key: str, report, path, line: int) -> list:
    """``d[key]`` when it is a list; [] when absent or null; anything else is counted
    (``malformed_field`` in ``report.repaired``: the record is kept without it) and read as [].
    A string or a number where a list belongs cost the whole file (a TypeError), or was read
    character by character (2026-11-28 audits)."""
    v = d.get(key)
    if v is None or isinstance(v, list):
        return v or []
    report.repair("malformed_field", path, line, f"{key} is a JSON {type(v).__name__}, not a list: left out")
    return []


def num(v: Any) -> int:
    """A token count: a non-negative number as int, anything else 0."""
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 else 0


def opt_str(d: dict, key: str) -> str | None:
    """``d[key]`` when it is a string, else None."""
    v = d.get(key)
    return v if isinstance(v, str) else None


def text_or_json(v: Any) -> str:
    """A string as is, None as "", anything else as canonical JSON."""
    return v if isinstance(v, str) else ("" if v is None else canonical_json(v))


def data_url_payload(url: Any) -> str:
    """The base64 payload of a ``data:image/...;base64,`` URL (else the string itself)."""
    if not isinstance(url, str):
        return ""
    head, sep, tail = url.partition(";base64,")
    return tail if sep and head.startswith("data:") else url


def line_range(offset: Any, limit: Any, *, zero_based: bool = False) -> tuple[int | None, int | None]:
    """(line_start, line_end) of a partial file read given as offset/limit; (None, None) for a whole read."""
    if not (isinstance(offset, int) or isinstance(limit, int)):
        return None, None
    if zero_based:
        start = (offset + 1) if isinstance(offset, int) and offset >= 0 else 1
    else:
        start = offset if isinstance(offset, int) and offset > 0 else 1
    return start, start + limit - 1 if isinstance(limit, int) and limit > 0 else None
