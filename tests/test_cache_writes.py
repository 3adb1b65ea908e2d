"""Claude usage whose TTL split contradicts its cache-write total (hostile-input audit,
2026-11-28): a planted 1-hour figure of 10^9 beside a total of 200 billed $10,000 silently; the
total (what ccusage counts) wins, in the split's proportions, and the line is counted."""

from __future__ import annotations

import pytest

from replay.ingest.checks import InvalidUsage, cache_writes


def _u(total=None, w5=None, w1=None):
    u = {} if total is None else {"cache_creation_input_tokens": total}
    if w5 is not None or w1 is not None:
        u["cache_creation"] = {k: v for k, v in (("ephemeral_5m_input_tokens", w5), ("ephemeral_1h_input_tokens", w1))
                               if v is not None}
    return u


def test_agreeing_split_and_total_are_kept_as_written():
    assert cache_writes(_u(300, 100, 200)) == (100, 200, True, None)
    assert cache_writes(_u(None, 100, 200)) == (100, 200, True, None)  # no total: the split
    assert cache_writes(_u(300)) == (300, 0, False, None)  # before the split existed: 5-minute
    assert cache_writes({}) == (0, 0, False, None)


def test_the_total_wins_in_the_splits_proportions_and_says_why():
    w5, w1, known, why = cache_writes(_u(200, 0, 10 ** 9))
    assert (w5, w1, known) == (0, 200, True) and "1,000,000,000 tokens by TTL but cache_creation_input_tokens is 200" in why
    w5, w1, known, why = cache_writes(_u(10 ** 9, 100, 100))
    assert (w5 + w1, w1, known) == (10 ** 9, 5 * 10 ** 8, True) and why
    assert cache_writes(_u(500, 0, 0))[:3] == (500, 0, False)  # a split of nothing says no TTL


def test_a_bad_count_anywhere_is_invalid():
    with pytest.raises(InvalidUsage):
        cache_writes(_u(-1, 1, 1))
    with pytest.raises(InvalidUsage):
        cache_writes(_u(2, "1", 1))


def test_the_reader_counts_the_mended_line(tmp_path):
    from replay.ingest.keys import Keyring
    from replay.ingest.readers import claude_code
    from replay.ingest.readers.base import ReadReport
    from replay.synth.generate import generate_corpus

    d = tmp_path / "logs"
    generate_corpus(d, sessions=1, seed=5)
    path = next(p for p in d.rglob("*.jsonl") if "subagents" not in p.parts)
    text = path.read_text()
    import re

    planted, n = re.subn(r'"ephemeral_1h_input_tokens":\s*\d+', '"ephemeral_1h_input_tokens": 1000000000', text, count=1)
    assert n == 1
    path.write_text(planted)
    report = ReadReport()
    tr = claude_code.read_session(path, Keyring.for_dataset(b"k" * 32, "t"), "t", "fk", report)
    assert report.repaired["inconsistent_usage"] >= 1
    assert max(tr.requests["cache_write_1h"]) < 10 ** 9
