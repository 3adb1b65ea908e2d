"""Duplicate keys in a JSON record: counted, since the parser keeps the last value of each.

orjson (like Python's json) takes the last of two values written under one key in an object
and says nothing. A record written so is rare and odd (a hand-edited or concatenated log, a
planted value): the reader keeps what it read but counts it (``duplicate_key`` in
``report.repaired``, with the file and line), so the choice is never silent.

Cheap first, as it runs on every line: a line no longer than orjson's compact
re-serialization of its value holds no duplicate (Claude Code, Codex and Copilot write compact
JSON); else a key ends where an unescaped quote meets a colon (``"k":``), so the keys of the raw
text and of the re-serialization are counted alike (two byte counts each, a space between the
quote and the colon counted in neither); only when the raw text holds more is the line parsed
again with ``object_pairs_hook`` to count the duplicates exactly.

Every line is checked, however long: the re-serialization of the lines over 4 KB of the shared
entire-cli corpus (6,778 lines, 141 MB) costs 0.12 s of CPU, and none of them is longer than its
re-serialization there, so no byte is counted. (Until 2026-11-28, lines over 4 KB were not
checked, for a cost measured then at 0.7 s; a planted second ``usage`` in a long tool-result
line went unseen.)
"""

from __future__ import annotations

import json

import orjson



def _keys(b: bytes | bytearray) -> int:
    return b.count(b'":') - b.count(b'\\":')


def duplicate_keys(raw: bytes | bytearray | memoryview, value) -> int:
    """How many keys of the objects in ``value`` (parsed from ``raw``) were written more than once."""
    if not isinstance(value, (dict, list)):
        return 0
    dump = orjson.dumps(value)
    if len(raw) <= len(dump):
        return 0
    if isinstance(raw, memoryview):
        raw = raw.tobytes()
    if _keys(raw) <= _keys(dump):
        return 0
    found = 0

    def pairs(items: list[tuple[str, object]]) -> dict:
        nonlocal found
        out = dict(items)
        found += len(items) - len(out)
        return out

    try:
        json.loads(raw, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return 0
    return found
