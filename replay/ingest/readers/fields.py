"""Small parsers of record fields that every reader needs (timestamps, counts, strings, images)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from replay.ingest.blocktext import canonical_json


def parse_ts(value: Any) -> int | None:
    """ISO-8601 timestamp -> epoch milliseconds (None when absent or unreadable)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


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
