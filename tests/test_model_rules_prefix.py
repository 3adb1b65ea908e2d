"""The system prefix a stream shares with the rest of its dataset (``system_prefix = "dataset"``,
and ``"earlier"``: with the sessions that started before it, tests/test_causal_prefix.py).

A stream whose first request read nothing from cache does not show where Claude Code's first
breakpoint (tools + system prompt) ends; other streams of the same model and client version
do, through their first warm read (docs/replay-model.md, "System prefix"). Every expected
number is worked out in the comments; each case also runs with the rule off.
"""

import duckdb
import pytest

from replay.engine.pricing import _system_prefixes
from replay.model.arrays import load_dataset, shared_system_prefixes
from replay.model.cache import CacheConfig, stored_settings
from replay.store.load import ingest

from cc_records import Transcript, text, usage
from test_model_rules_thinking import SONNET, LowerOverhead, builder, run
from trace_builder import MIN

OPUS = "claude-opus-4-6"


def session(path, sid, first_read, version="2.1.37", total=30_000, sub_read=None):
    """One session: two short user messages (two blocks before the first request) whose first
    request has ``total`` input tokens of which ``first_read`` were read from cache, then a
    second turn; with ``sub_read``, also a subagent whose first request read that much."""
    t = Transcript(session_id=sid, version=version)
    t.user("first prompt")
    t.user("and a second line")
    t.assistant(f"{sid}-m1", [text("ok")], usage(inp=3, write=total - 3 - first_read, read=first_read), model=OPUS)
    t.user("second prompt")
    t.assistant(f"{sid}-m2", [text("ok")], usage(inp=3, write=100, read=total - 3), model=OPUS)
    t.write_jsonl(path / f"{sid}.jsonl")
    if sub_read is not None:
        sub = Transcript(session_id=sid, version=version, sidechain=True, agent_id=f"a{sid}")
        sub.user("investigate")
        sub.assistant(f"{sid}-s1", [text("found")], usage(inp=3, write=20_000 - 3 - sub_read, read=sub_read),
                      model=OPUS)
        sub.write_jsonl(path / sid / "subagents" / f"agent-a{sid}.jsonl")


@pytest.fixture
def db(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    session(logs, "warm-a", 10_000)
    session(logs, "warm-b", 10_000)
    session(logs, "warm-c", 12_000)
    for i in range(5):  # read past the overhead (into the first message): not a system prefix
        session(logs, f"whole-{i}", 29_995)
    session(logs, "cold", 0, sub_read=0)     # its subagent starts cold too
    session(logs, "sub-a", 10_000, sub_read=6_000)
    session(logs, "sub-b", 10_000, sub_read=6_000)
    session(logs, "cold-other-version", 0, version="2.1.38")
    session(logs, "other-version", 14_000, version="2.1.38")
    session(logs, "other-version-2", 13_000, version="2.1.38")
    path = tmp_path / "t.duckdb"
    ingest([logs], path)
    return path


def _streams(path, keys=None):
    con = duckdb.connect(str(path), read_only=True)
    try:
        ds = load_dataset(con, "default", session_keys=keys)
        sid = dict(con.execute("SELECT session_key, session_id FROM sessions").fetchall())
    finally:
        con.close()
    return ds, sid


def test_shared_prefix_is_the_most_frequent_first_warm_read(db):
    con = duckdb.connect(str(db), read_only=True)
    try:
        got = shared_system_prefixes(con, "default")
    finally:
        con.close()
    # 2.1.37 main streams: 10,000 four times, 12,000 once; the five 29,995 reads go past the
    # overhead (30,000 less the two prompts' tokens) and are left out, else they would win.
    # 2.1.38: 14,000 and 13,000 once each: the tie goes to the shorter.
    # Subagents have their own system prompt and tools: 6,000, apart from the main streams.
    assert got == {(OPUS, "2.1.37", True): 10_000.0, (OPUS, "2.1.38", True): 13_000.0,
                   (OPUS, "2.1.37", False): 6_000.0}


def test_only_cold_streams_take_it(db):
    ds, _ = _streams(db)
    by_first_read = {}
    for s in ds.sessions:
        for st in s.streams:
            by_first_read[(st.kind, st.r_read[0], st.r_version[0])] = st.shared_system_prefix
    assert by_first_read[("main", 0, "2.1.37")] == {0: 10_000.0}
    assert by_first_read[("main", 0, "2.1.38")] == {0: 13_000.0}
    assert by_first_read[("subagent", 0, "2.1.37")] == {0: 6_000.0}
    # a stream with its own warm read keeps it (the "log" rule); nothing shared is stored
    assert by_first_read[("main", 12_000, "2.1.37")] == {} and by_first_read[("main", 29_995, "2.1.37")] == {}


def test_a_subset_of_sessions_sees_the_whole_dataset(db):
    # sweep workers and slices load some sessions: the shared prefix must not change with them
    ds, _ = _streams(db)
    cold = [s for s in ds.sessions if s.streams[0].r_read[0] == 0 and s.streams[0].r_version[0] == "2.1.37"]
    sub, _ = _streams(db, [cold[0].session_key])
    assert [st.shared_system_prefix for s in sub.sessions for st in s.streams] == [{0: 10_000.0}, {0: 6_000.0}]


def test_a_shared_prefix_longer_than_the_overhead_is_not_used():
    from replay.model.arrays import _assign_shared_prefix

    _, st = cold_stream()
    _assign_shared_prefix(st, {(SONNET, "2.1.37", True): 31_000.0}, [SONNET], st.shared_system_prefix)
    assert st.shared_system_prefix == {}
    _assign_shared_prefix(st, {(SONNET, "2.1.37", True): 9_000.0}, [SONNET], st.shared_system_prefix)
    assert st.shared_system_prefix == {0: 9_000.0}


def cold_stream(shared=None, prior=None):
    """30,000 overhead, the first request read nothing; r2 opens a turn after a thinking
    switch (the message entries are dropped, the system prefix is read)."""
    b = builder(overhead=30_000)
    b.block(500, "user_text")
    b.request(ts=0, read=0, w5=30_500, has_usage=True, version="2.1.37")
    b.tool_call("Read", 2000)
    b.request(ts=1 * MIN, read=30_500, w5=2_050, has_usage=True)
    b.block(300, "assistant_text")
    b.block(200, "user_text")
    b.request(ts=2 * MIN, read=10_000, w5=23_050, has_usage=True)
    b.block(100, "thinking")
    b.block(50, "assistant_text")
    if shared is not None:
        b.shared_system_prefix[0] = shared
    if prior is not None:
        b.prior_system_prefix[0] = prior
    return b, b.stream()


def test_system_prefixes_by_hand():
    _, st = cold_stream(10_000.0, prior=12_000.0)
    dataset = CacheConfig(system_prefix="dataset")
    assert _system_prefixes(st, [30_000.0], dataset) == [10_000.0]
    # the default: what the sessions that started earlier show
    assert _system_prefixes(st, [30_000.0], CacheConfig()) == [12_000.0]
    assert _system_prefixes(st, [30_000.0], CacheConfig(system_prefix="log")) == [30_000.0]
    assert _system_prefixes(st, [30_000.0], CacheConfig(system_prefix="overhead")) == [30_000.0]
    # a policy that prunes 5,000 tokens of tools shortens it by as much
    assert _system_prefixes(st, [25_000.0], dataset) == [5_000.0]
    # without a shared prefix the overhead stays
    _, st = cold_stream()
    assert _system_prefixes(st, [30_000.0], dataset) == [30_000.0]
    assert _system_prefixes(st, [30_000.0], CacheConfig()) == [30_000.0]


def test_engine_reads_the_shared_prefix_after_a_switch():
    # model only. r0 writes 30,500 (and the system entry: 10,000 with the shared prefix),
    # r1 reads 30,500. r2 opens a turn whose first response thinks where turn 1's did not:
    # the message entries are dropped, the system entry is read: 10,000 (dataset) or the
    # whole 30,000 overhead (log), and the rest of r2's 33,050 is written.
    b, st = cold_stream(10_000.0)
    d = run(b, observed_evictions="none", system_prefix="dataset")
    assert d["cache_read"] == [0, 30_500, 10_000] and d["cache_write_5m"][2] == 23_050
    d = run(b, observed_evictions="none", system_prefix="log")
    assert d["cache_read"] == [0, 30_500, 30_000] and d["cache_write_5m"][2] == 3_050
    d = run(b, LowerOverhead(), observed_evictions="none", system_prefix="dataset")
    assert d["cache_read"][2] == 5_000
    # no session started earlier: the default ("earlier") has nothing to take
    d = run(b, observed_evictions="none")
    assert d["cache_read"] == [0, 30_500, 30_000]


def test_the_setting():
    # the default; a run stored before the setting existed replayed the whole overhead
    assert CacheConfig().system_prefix == "earlier"
    assert stored_settings({})["system_prefix"] == "overhead"
    with pytest.raises(ValueError, match="system_prefix"):
        CacheConfig(system_prefix="shared")
