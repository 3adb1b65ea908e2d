"""What an anonymize run counts and reports (`AnonymizeSummary`), filled in by every module that writes a copy."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class AnonymizeSummary:
    files: int = 0
    records: int = 0
    lines_dropped: int = 0  # lines that were not JSON records (cannot be anonymized safely)
    drop_reasons: Counter = field(default_factory=Counter)  # ... by reason
    invalid_utf8: int = 0  # records whose invalid UTF-8 bytes were replaced by U+FFFD (kept)
    texts_replaced: int = 0  # string occurrences replaced by filler
    unique_texts: int = 0  # distinct texts per file, summed over files
    secrets_removed: int = 0  # scrub findings in the strings processed
    ids_replaced: int = 0
    paths_replaced: int = 0
    keys_replaced: int = 0  # distinct dict keys anonymized (secrets or data used as keys)
    enums_replaced: int = 0  # enum-like values outside their key's vocabulary or grammar
    names_replaced: int = 0  # distinct model/tool/server/usage-key names pseudonymized
    blocks_checked: int = 0  # composite context blocks whose token count was verified
    blocks_token_mismatch: int = 0  # ... that could not be brought to the raw count (path-only inputs)
    filler_mismatch: int = 0  # fillers whose token count could not be matched exactly
    bytes_in: int = 0
    bytes_out: int = 0
    seconds: float = 0.0
    skipped_files: list[str] = field(default_factory=list)  # non-log files, not copied
    empty_inputs: list[str] = field(default_factory=list)  # 0-byte or blank logs: nothing to copy (not an error)
    # logs of a format this anonymizer does not write (Codex, Copilot CLI, Gemini CLI stream-json),
    # with the format: refused by name, never run through the Claude Code walker
    refused: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    # inputs with content of which no record could be read: no output was written for them
    empty_outputs: list[str] = field(default_factory=list)
    # (input, output) relative paths; kept out of as_dict(): input names can identify people
    outputs: list[tuple[str, str]] = field(default_factory=list)

    @property
    def incomplete(self) -> bool:
        """Some log file has no anonymized copy (unreadable, or no record could be read):
        the CLI exits non-zero, naming each in ``failed``."""
        return bool(self.failed)

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d.pop("outputs")
        d["skipped_files"] = len(self.skipped_files)
        d["refused"] = [{"file": f, "reason": r} for f, r in self.refused]
        d["failed"] = [{"file": f, "reason": r} for f, r in self.failed]
        d["drop_reasons"] = dict(self.drop_reasons)
        d["seconds"] = round(self.seconds, 3)
        return d
