"""What a reader reports about one file: skipped and repaired lines, non-context lines, values pseudonymized."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

# Skip reasons a reader may report. Lines that are simply not model context (progress,
# snapshots, UI-only system lines) are counted separately as "non-context", not as skips.
SKIP_REASONS = (
    "invalid_json",
    "truncated_last_line",
    "not_an_object",
    "unknown_type",
    "duplicate_record",
    "malformed_record",
    "missing_usage",
    "invalid_usage",
)
# Lines kept after a repair (counted, never silently), with what the repair did: the ingest
# summary says it beside each count. missing_model: with no earlier model in the session the
# response keeps none, and pricing it stops with an error.
REPAIRS = {
    "invalid_utf8": "invalid UTF-8 replaced by U+FFFD",
    "multi_object_line": "a line holding several JSON objects, each read",
    "missing_message_id": "a response without an id, keyed by its request id or first line",
    "missing_model": "a response without a model, given the one before it",
    "duplicate_key": "a record with a key written twice, the last value read (as JSON parsers do)",
}
REPAIR_REASONS = tuple(REPAIRS)
MAX_DETAIL = 120


@dataclass
class ReadReport:
    """Counts and the first few messages for one file; merged into the ingest summary.

    ``pseudonymized`` counts, per field, the distinct values that did not match the field's
    grammar and were replaced by a keyed pseudonym (see `replay.ingest.checks`).
    """

    skipped: Counter = field(default_factory=Counter)
    non_context: Counter = field(default_factory=Counter)
    repaired: Counter = field(default_factory=Counter)
    pseudonymized: Counter = field(default_factory=Counter)
    messages: list[str] = field(default_factory=list)
    max_messages: int = 20

    def _message(self, path: Path | str, line: int | None, text: str, detail: str) -> None:
        if len(self.messages) < self.max_messages:
            where = f"{path}:{line}" if line is not None else str(path)
            detail = detail if len(detail) <= MAX_DETAIL else detail[:MAX_DETAIL] + "..."
            self.messages.append(f"{where}: {text}{': ' + detail if detail else ''}")

    def skip(self, reason: str, path: Path | str, line: int | None, detail: str = "") -> None:
        self.skipped[reason] += 1
        self._message(path, line, reason.replace("_", " "), detail)

    def repair(self, reason: str, path: Path | str, line: int | None, detail: str = "") -> None:
        self.repaired[reason] += 1
        self._message(path, line, reason.replace("_", " "), detail)

    def pseudonymize(self, field_name: str, path: Path | str, pseudonym: str) -> None:
        self.pseudonymized[field_name] += 1
        self._message(path, None, f"{field_name} is outside its grammar or vocabulary", f"stored as {pseudonym}")

    def merge(self, other: "ReadReport") -> None:
        self.skipped.update(other.skipped)
        self.non_context.update(other.non_context)
        self.repaired.update(other.repaired)
        self.pseudonymized.update(other.pseudonymized)
        room = self.max_messages - len(self.messages)
        if room > 0:
            self.messages.extend(other.messages[:room])


class FileError(Exception):
    """A whole file cannot be read (empty, binary, not a log). Other files go on."""
