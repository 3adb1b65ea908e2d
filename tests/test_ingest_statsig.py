"""An unchanged file is recognized by its stat (`replay.store.statsig`) and not read again;
any change that could hide behind an equal size is read again."""

import os

import duckdb
import pytest

from replay.ingest.keys import load_or_create_master_key
from replay.store import load, statsig
from replay.store.load import ingest

from cc_records import basic_session


@pytest.fixture
def hashed(monkeypatch):
    """The units hashed in this process (the files an ingest read bytes of)."""
    calls = []
    real = load.hash_unit

    def counting(unit, keys):
        calls.append(unit.main.name)
        return real(unit, keys)

    monkeypatch.setattr(load, "hash_unit", counting)
    monkeypatch.setattr(statsig, "RACY_NS", 0)  # files written by the test are signed at once
    return calls


def _tree(tmp_path):
    logs = tmp_path / "logs"
    basic_session().write_jsonl(logs / "a.jsonl")
    basic_session(session_id="other", cwd="/home/bob/x").write_jsonl(logs / "b.jsonl")
    basic_session(session_id="sess-3").write_jsonl(logs / "p" / "c.jsonl")
    return logs, load_or_create_master_key(tmp_path / "key")


def _counts(s):
    return s.ingested, s.unchanged, s.new_versions, s.bytes


def test_an_unchanged_tree_is_not_hashed_again(tmp_path, hashed):
    logs, key = _tree(tmp_path)
    db = tmp_path / "x.duckdb"
    first = ingest([logs], db, master_key=key)
    assert first.ingested == 3 and len(hashed) == 3
    hashed.clear()
    again = ingest([logs], db, master_key=key)
    assert hashed == []
    assert _counts(again) == (0, 3, 0, first.bytes)
    for jobs in (1, 2):  # the writer skips them before any worker sees them
        assert _counts(ingest([logs], db, master_key=key, jobs=jobs)) == (0, 3, 0, first.bytes)
    assert hashed == []


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_file_replaced_by_another_of_the_same_size_and_time_is_read_again(tmp_path, hashed, jobs):
    logs, key = _tree(tmp_path)
    db = tmp_path / "x.duckdb"
    ingest([logs], db, master_key=key)
    f = logs / "a.jsonl"
    st = f.stat()
    data = f.read_bytes()
    assert b"SECRETPROMPT_alpha" in data
    f.write_bytes(data.replace(b"SECRETPROMPT_alpha", b"SECRETPROMPT_omega"))  # same size
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the same mtime: only the ctime tells
    assert (f.stat().st_size, f.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    hashed.clear()
    s = ingest([logs], db, master_key=key, jobs=jobs)
    assert hashed == ([] if jobs > 1 else ["a.jsonl"])  # with jobs, a worker hashes it
    assert (s.ingested, s.new_versions, s.unchanged) == (1, 1, 2)
    s = ingest([logs], db, master_key=key, jobs=jobs)  # the new version was signed
    assert hashed == ([] if jobs > 1 else ["a.jsonl"]) and (s.ingested, s.unchanged) == (0, 3)


def test_a_moved_in_copy_with_the_same_stat_is_read_again(tmp_path, hashed):
    logs, key = _tree(tmp_path)
    db = tmp_path / "x.duckdb"
    ingest([logs], db, master_key=key)
    f = logs / "b.jsonl"
    new = tmp_path / "new.jsonl"
    basic_session(session_id="other2").write_jsonl(new)
    st = f.stat()
    os.replace(new, f)  # another inode under the same name
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    hashed.clear()
    s = ingest([logs], db, master_key=key)
    assert hashed == ["b.jsonl"] and s.ingested == 1


def test_signatures_missing_from_an_older_database_are_added_by_the_next_run(tmp_path, hashed):
    logs, key = _tree(tmp_path)
    db = tmp_path / "x.duckdb"
    ingest([logs], db, master_key=key)
    con = duckdb.connect(str(db))
    con.execute("UPDATE source_files SET stat_sig = NULL")  # as ingested before schema 9
    con.close()
    hashed.clear()
    s = ingest([logs], db, master_key=key)
    assert len(hashed) == 3 and _counts(s)[:3] == (0, 3, 0)
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM source_files WHERE stat_sig IS NULL").fetchone()[0] == 0
    con.close()
    hashed.clear()
    assert _counts(ingest([logs], db, master_key=key))[:3] == (0, 3, 0) and hashed == []


def test_a_file_written_just_before_it_is_read_is_hashed_again_next_time(tmp_path, hashed, monkeypatch):
    monkeypatch.setattr(statsig, "RACY_NS", 10**18)  # every file counts as just written
    logs, key = _tree(tmp_path)
    db = tmp_path / "x.duckdb"
    ingest([logs], db, master_key=key)
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM source_files WHERE stat_sig IS NOT NULL").fetchone()[0] == 0
    con.close()
    hashed.clear()
    assert _counts(ingest([logs], db, master_key=key))[:3] == (0, 3, 0) and len(hashed) == 3


def test_the_signature_covers_subagent_files_and_the_trace_revision(tmp_path, monkeypatch):
    logs, key = _tree(tmp_path)
    monkeypatch.setattr(statsig, "RACY_NS", 0)
    from replay.ingest.keys import Keyring
    from replay.store.discovery import Unit

    keys = Keyring.for_dataset(key, "default")
    unit = Unit(logs / "a.jsonl")
    sig = statsig.signature(unit, keys)
    assert sig == statsig.signature(Unit(logs / "a.jsonl"), keys)
    assert statsig.signature(Unit(logs / "a.jsonl", [logs / "b.jsonl"]), keys) != sig
    monkeypatch.setattr(statsig, "TRACE_REVISION", statsig.TRACE_REVISION + 1)
    assert statsig.signature(unit, keys) != sig
    assert statsig.signature(Unit(logs / "gone.jsonl"), keys) is None


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_whole_database_check_runs_only_before_a_write(tmp_path, hashed, monkeypatch, jobs):
    """Reading every table (`verify_store`) is for a run that writes: an unchanged tree skips it,
    a changed file gets it before its session is written."""
    from replay import store

    logs, key = _tree(tmp_path)
    db = tmp_path / "x.duckdb"
    ingest([logs], db, master_key=key, jobs=jobs)
    events = []
    real_verify, real_write = store.verify_store, store.write_sessions
    monkeypatch.setattr(store, "verify_store", lambda con, path: (events.append("verify"), real_verify(con, path)))
    monkeypatch.setattr(store, "write_sessions", lambda con, batch: (events.append("write"), real_write(con, batch))[1])
    assert _counts(ingest([logs], db, master_key=key, jobs=jobs))[:2] == (0, 3)
    assert events == []
    basic_session(session_id="sess-4").write_jsonl(logs / "d.jsonl")
    assert ingest([logs], db, master_key=key, jobs=jobs).ingested == 1
    assert events[:2] == ["verify", "write"]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_byte_copy_is_remembered_and_not_hashed_again(tmp_path, hashed, jobs):
    logs, master = _tree(tmp_path)
    db = tmp_path / "t.duckdb"
    ingest([logs], db, master_key=master, jobs=jobs)
    backup = tmp_path / "backup"  # a second folder holding byte copies (a backup, a second config folder)
    backup.mkdir()
    for name in ("a.jsonl", "b.jsonl"):
        (backup / name).write_bytes((logs / name).read_bytes())
    first = ingest([logs, backup], db, master_key=master, jobs=jobs)
    assert (first.duplicates, first.unchanged, first.ingested) == (2, 3, 0)
    hashed.clear()
    again = ingest([logs, backup], db, master_key=master, jobs=jobs)
    assert (again.duplicates, again.unchanged, again.ingested) == (0, 5, 0) and hashed == []
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT status, count(*), count(stat_sig), count(duplicate_of) FROM source_files "
                       "GROUP BY status ORDER BY status").fetchall()
    assert rows == [("duplicate", 2, 2, 2), ("ok", 3, 3, 0)]
    assert con.execute("SELECT count(*) FROM sessions").fetchone()[0] == 3  # the copies add no session
    con.close()
    # a copy that then changes is read as that file's next version (a session stored once)
    with open(backup / "a.jsonl", "a") as fh:
        fh.write("\n")
    grown = ingest([logs, backup], db, master_key=master, jobs=jobs)
    assert grown.unchanged == 4 and grown.failed == []
