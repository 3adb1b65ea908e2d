"""Causal inputs (issue 25, item 3): no input of a session's replay comes from a session that
started later. The one input taken from other sessions is the system prefix a cold stream
borrows (``system_prefix = "earlier"``, the default): the most frequent first warm read of
the sessions that started before it. Ingesting sessions that started later never changes an
earlier session's replay; ``system_prefix = "dataset"`` (every session, later ones included)
does, which is why it is not the default.
"""

import hashlib

import duckdb
import pytest

from replay.engine import ReplayOptions
from replay.experiments.validate import validate
from replay.ingest.keys import Keyring, open_master_key
from replay.model.arrays import load_dataset
from replay.model.cache import CacheConfig
from replay.model.costs import PriceTable
from replay.store.load import ingest

from conftest import shared_logs
from test_model_rules_prefix import OPUS, session


def _start(logs, sid, first_read, minute, **kw):
    session(logs, sid, first_read, **kw)
    # the transcript's stamps start at 10:00:01; move the whole session to 10:<minute>
    p = logs / f"{sid}.jsonl"
    p.write_text(p.read_text().replace('"2026-01-01T10:00:', f'"2026-01-01T10:{minute:02d}:'))


def _names(con):
    """session key -> "<start minute>/<first read>" (session ids are pseudonyms in the store)."""
    rows = con.execute("""SELECT s.session_key, s.started_at, r.cache_read FROM sessions s
                          JOIN requests r USING (session_key) WHERE r.stream_id = 0 AND r.req_idx = 0""").fetchall()
    return {k: f"{(t // 60_000) % 60}/{read}" for k, t, read in rows}


def _prior(path):
    con = duckdb.connect(str(path), read_only=True)
    try:
        ds = load_dataset(con, "default")
        name = _names(con)
    finally:
        con.close()
    return {name[s.session_key]: (s.streams[0].prior_system_prefix, s.streams[0].shared_system_prefix)
            for s in ds.sessions}


def test_a_cold_session_borrows_only_from_sessions_that_started_before_it(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    _start(logs, "cold-first", 0, 1)     # nothing started before it
    _start(logs, "warm-a", 10_000, 2)
    _start(logs, "cold-mid", 0, 3)       # sees warm-a only: 10,000
    _start(logs, "warm-b", 12_000, 4)
    _start(logs, "warm-c", 12_000, 5)
    _start(logs, "cold-last", 0, 6)      # 12,000 twice against 10,000 once
    db = tmp_path / "t.duckdb"
    ingest([logs], db)
    got = _prior(db)
    assert got["1/0"] == ({}, {0: 12_000.0})
    assert got["3/0"] == ({0: 10_000.0}, {0: 12_000.0})
    assert got["6/0"] == ({0: 12_000.0}, {0: 12_000.0})
    # a warm stream keeps its own read (the "log" rule): nothing borrowed
    assert got["4/12000"] == ({}, {})


def test_sessions_with_the_same_start_see_none_of_each_other(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    _start(logs, "warm", 10_000, 3)
    _start(logs, "cold", 0, 3)
    db = tmp_path / "t.duckdb"
    ingest([logs], db)
    assert _prior(db)["3/0"] == ({}, {0: 10_000.0})


def _per_session(db, named=False):
    con = duckdb.connect(str(db), read_only=True)
    try:
        name = _names(con) if named else {}
        out = {}
        for sp in ("earlier", "dataset"):
            rep = validate(con, "default", ReplayOptions(cache=CacheConfig(system_prefix=sp), prices=PriceTable()))
            out[sp] = {name.get(x["session_id"], x["session_id"]): (x["simulated"], x["variants"]["model_only"]["rel_error"],
                                         x["variants"]["model_only"]["matched"]) for x in rep["sessions"]}
        return out
    finally:
        con.close()


def test_ingesting_later_sessions_never_changes_an_earlier_sessions_replay(tmp_path):
    """The issue's test on the real corpus: ingest the sessions that started first (half A),
    replay; ingest the rest (half B) into the same database, replay: every A session's figures
    are identical. Under ``system_prefix = "dataset"`` some are not (the test has teeth)."""
    logs = shared_logs("entire-cli")
    key = tmp_path / "key"
    key.write_text(hashlib.blake2b(b"causal-test", digest_size=32).hexdigest() + "\n")
    key.chmod(0o600)
    # each file's session start, from a scratch ingest of everything
    scratch = tmp_path / "all.duckdb"
    ingest([logs], scratch, key_file=key)
    keys = Keyring.for_dataset(open_master_key(key), "default")
    by_key = {keys.short("file", str(p), 16): p for p in sorted(logs.rglob("*.jsonl"))}
    con = duckdb.connect(str(scratch), read_only=True)
    starts = con.execute("SELECT file_key, min(started_at) FROM sessions GROUP BY 1 ORDER BY 2, 1").fetchall()
    con.close()
    files = [by_key[f] for f, t in starts if f in by_key and t is not None]
    assert len(files) > 100
    half = len(files) // 2
    a, b = files[:half], files[half:]
    db = tmp_path / "t.duckdb"
    ingest(a, db, key_file=key)
    before = _per_session(db)
    ingest(b, db, key_file=key)
    after = _per_session(db)
    assert set(before["earlier"]) < set(after["earlier"])
    for sid, figures in before["earlier"].items():
        assert after["earlier"][sid] == figures, sid
    # the dataset-wide prefix takes later sessions into account: some earlier session moves
    assert any(after["dataset"][sid] != figures for sid, figures in before["dataset"].items())


def test_a_session_replays_the_same_alone_when_nothing_started_before_it(tmp_path):
    # a session that started first sees nothing of the others: alone or with them, the same
    logs = tmp_path / "logs"
    logs.mkdir()
    _start(logs, "cold-first", 0, 1)
    db1 = tmp_path / "one.duckdb"
    ingest([logs], db1)
    for i, m in enumerate((2, 3, 4)):
        _start(logs, f"warm-{i}", 10_000, m)
    db2 = tmp_path / "all.duckdb"
    ingest([logs], db2)
    one, every = _per_session(db1, named=True), _per_session(db2, named=True)
    assert one["earlier"]["1/0"] == every["earlier"]["1/0"]


@pytest.mark.parametrize("value", ["earlier", "dataset", "log", "overhead"])
def test_every_value_is_accepted(value):
    assert CacheConfig(system_prefix=value).system_prefix == value


def test_a_version_no_earlier_session_shows_borrows_the_nearest_one(tmp_path):
    from replay.engine.pricing import _system_prefixes
    from replay.model.prefixes import _nearest_version

    shared = {(OPUS, "2.1.37", True): 10_000.0, (OPUS, "2.1.41", True): 11_000.0,
              (OPUS, "2.1.38", False): 6_000.0, ("other-model", "2.1.39", True): 1.0}
    # the closest earlier version first, then the closest later one; same model and stream kind
    assert _nearest_version(shared, OPUS, "2.1.39", True) == 10_000.0
    assert _nearest_version(shared, OPUS, "2.1.2", True) == 10_000.0
    assert _nearest_version(shared, OPUS, "2.1.50", True) == 11_000.0
    assert _nearest_version(shared, OPUS, "2.1.39", False) == 6_000.0
    assert _nearest_version(shared, OPUS, None, True) is None
    logs = tmp_path / "logs"
    logs.mkdir()
    _start(logs, "warm-old", 10_000, 1, version="2.1.37")
    _start(logs, "cold-new", 0, 2, version="2.1.39")
    db = tmp_path / "t.duckdb"
    ingest([logs], db)
    con = duckdb.connect(str(db), read_only=True)
    try:
        ds = load_dataset(con, "default")
    finally:
        con.close()
    st = next(s.streams[0] for s in ds.sessions if s.streams[0].r_read[0] == 0)
    assert st.prior_system_prefix == {} and st.prior_system_prefix_near == {0: 10_000.0}
    over = [st.overhead[0]]
    assert _system_prefixes(st, over, CacheConfig()) == [10_000.0]
    assert _system_prefixes(st, over, CacheConfig(prefix_versions="same")) == over
