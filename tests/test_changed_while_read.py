"""A log that changes between being hashed and being read (hostile-input audit, 2026-11-28): a
file truncated during a 58 MB ingest was stored with the hashed size and a third of its
requests, and once whole again was "unchanged" for good. Now a file shorter than hashed fails
alone ("it shrank ... while being read") and is read again by the next run; a file that only
grew is read up to what was hashed, as before."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from replay.store import load, statsig


@pytest.fixture
def logs(tmp_path):
    from replay.synth.generate import generate_corpus

    d = tmp_path / "logs"
    generate_corpus(d, sessions=2, seed=3)
    files = sorted(p for p in d.rglob("*.jsonl") if "subagents" not in p.parts)
    assert len(files) == 2
    return d, files


def _ingest_changing(monkeypatch, d: Path, db: Path, change, jobs: int = 1):
    """An ingest whose first file is changed by ``change(path)`` right after it is parsed."""
    real = load.parse_unit
    first = sorted(p for p in d.rglob("*.jsonl") if "subagents" not in p.parts)[0]

    def parse(unit, *a, **k):
        got = real(unit, *a, **k)
        if unit.main == first:
            change(first)
        return got

    monkeypatch.setattr(load, "parse_unit", parse)
    return load.ingest([d], db, master_key=b"k" * 32, jobs=jobs), first


def test_a_file_that_shrank_while_read_fails_alone_and_the_next_run_reads_it(monkeypatch, tmp_path, logs):
    d, files = logs
    whole = files[0].read_bytes()
    s, first = _ingest_changing(monkeypatch, d, tmp_path / "a.duckdb",
                                lambda p: p.write_bytes(whole[: len(whole) // 3]))
    assert s.ingested == 1 and len(s.failed) == 1
    path, why = s.failed[0]
    import re

    m = re.fullmatch(r"it shrank from ([\d,]+) to ([\d,]+) bytes while being read; nothing of it is stored: run "
                     r"the ingest again once it is written", why)
    assert path == str(first) and m, why  # the unit's bytes: the main file's and its subagent files'
    assert int(m.group(1).replace(",", "")) - int(m.group(2).replace(",", "")) == len(whole) - len(whole) // 3
    first.write_bytes(whole)  # whole again: read, not "unchanged"
    monkeypatch.undo()
    again = load.ingest([d], tmp_path / "a.duckdb", master_key=b"k" * 32)
    assert again.ingested == 1 and not again.failed and again.unchanged == 1


def test_a_file_appended_between_its_stat_and_its_hash_is_stored(monkeypatch, tmp_path, logs):
    """Review (2026-11-28): a check for files "rewritten in place" (same length, another stat)
    failed a live session written to between its stat and its hashing: it had only grown."""
    from replay.store import readunit

    d, files = logs
    monkeypatch.setattr(statsig, "RACY_NS", 0)  # the files were written just now: give them a signature
    real = readunit.hash_unit
    first = files[0]

    def hash_after_append(unit, keys):
        if unit.main == first:
            with open(first, "a") as fh:
                fh.write('{"type": "summary"}\n')
        return real(unit, keys)

    monkeypatch.setattr(load, "hash_unit", hash_after_append)
    s = load.ingest([d], tmp_path / "b.duckdb", master_key=b"k" * 32)
    assert s.ingested == 2 and not s.failed


def test_a_file_that_only_grew_is_stored_up_to_what_was_hashed(monkeypatch, tmp_path, logs):
    d, files = logs
    whole = files[0].read_bytes()
    s, _ = _ingest_changing(monkeypatch, d, tmp_path / "c.duckdb",
                            lambda p: p.write_bytes(whole + b'{"type": "summary"}\n'))
    assert s.ingested == 2 and not s.failed


def test_changed_while_read_says_nothing_of_an_unchanged_unit(tmp_path):
    from replay.ingest.keys import Keyring
    from replay.store.discovery import Unit

    p = tmp_path / "s.jsonl"
    p.write_bytes(b"x" * 100)
    old = 1_000_000_000_000_000_000
    os.utime(p, ns=(old, old))
    unit = Unit(p)
    keys = Keyring.for_dataset(b"k" * 32, "default")
    assert statsig.changed_while_read(unit, 100, keys) is None
    assert statsig.changed_while_read(unit, 99, keys) is None  # grew by a byte
    assert "shrank from 101 to 100" in statsig.changed_while_read(unit, 101, keys)
    p.unlink()
    assert "removed while being read" in statsig.changed_while_read(unit, 100, keys)


def test_gzip_logs_are_judged_by_their_stat_not_their_size_on_disk(tmp_path, logs):
    """A gzip log is hashed decompressed: its smaller size on disk is no shrinking."""
    import gzip

    d, _ = logs
    plain = load.ingest([d], tmp_path / "p.duckdb", master_key=b"k" * 32)
    for f in d.rglob("*.jsonl"):
        f.with_name(f.name + ".gz").write_bytes(gzip.compress(f.read_bytes()))
        f.unlink()
    s = load.ingest([d], tmp_path / "g.duckdb", master_key=b"k" * 32)
    assert not s.failed and s.ingested == plain.ingested == 2 and s.blocks == plain.blocks
    assert s.subagent_files == plain.subagent_files > 0  # gzipped subagent files stay with their gzipped session
