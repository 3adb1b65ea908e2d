"""Hand-computed tests of the calibration rules (docs/replay-model.md, "What comes from the log").

Every expected number is worked out in the comments from the rules, not taken from a run:
observed evictions (`eviction_positions`, `StreamCache.evict`), warm start, TTL assignment,
and the invariant that a policy which changes nothing costs exactly what the no-op costs.
"""

import numpy as np
import pytest

from replay.engine import ReplayOptions, replay_session
from replay.model.arrays import eviction_positions
from replay.model.cache import SYS, TTL_MS, CacheConfig, StreamCache
from replay.model.costs import PriceTable
from replay.policies import build
from replay.policies.base import Policy

from trace_builder import MIN, TraceBuilder

PRICES = PriceTable(overrides={"m": {"input": 3, "cache_write_5m": 3.75, "cache_write_1h": 6, "cache_read": 0.3,
                                      "output": 15, "min_cacheable": 1024}})
NEVER = 1 << 30


def _req(pos, read, has=True, part=0):
    return pos, read, has, part


def _r(rows, model=0):
    pos, read, has, part = (np.array(c) for c in zip(*rows))
    n = len(rows)
    z = np.zeros(n, dtype=np.int64)
    return {"r_pos": pos.astype(np.int64), "r_partition": part.astype(np.int64), "r_read": read.astype(np.int64),
            "r_has_usage": has.astype(bool), "r_model": np.full(n, model, dtype=np.int64), "r_uncached": z,
            "r_w5": z, "r_w1h": z}


def test_eviction_positions_by_hand():
    # blocks 1,000 / 2,000 / 3,000 / 4,000 tokens after a 5,000-token system prefix;
    # prefix sums over blocks: 0, 1,000, 3,000, 6,000, 10,000; tolerance max(64, 0.2% of the read)
    tokens = np.array([1000.0, 2000.0, 3000.0, 4000.0])
    r = _r([
        _req(1, 0),        # first request, read 0 < 5,000 system prefix -> -1 (even the system prefix missed)
        _req(2, 6000),     # read 6,000 = 5,000 + block 0 -> covers p=1 = previous position -> no eviction
        _req(4, 5000),     # read only the system prefix (5,000 + 64 < 5,000 + block 0) -> evicted back to 0
        _req(4, 8000),     # read 8,000 + 64 -> blocks 0-1 (3,000) fit, block 2 does not -> p=2 < previous 4
        _req(4, 0, has=False),  # no usage: no information
        _req(4, 15000),    # read everything: p=4 = previous position -> nothing to evict
    ])
    out = eviction_positions(tokens, {0: 5000.0}, r, {0: 0}, np.zeros(6))
    assert out.tolist() == [-1, NEVER, 0, 2, NEVER, NEVER]


def test_eviction_positions_respect_residual_and_tolerance():
    tokens = np.array([1000.0, 2000.0])
    # a residual of -500 (the provider dropped 500 tokens we cannot see) shifts what a read covers:
    # read 5,600: 5,600 + 64 - 5,000 - (-500) = 1,164 -> block 0 fits (1,000), block 1 does not -> p=1 < 2
    # (a stream's first request has no earlier request to compare with: its covered position is
    # returned, 2 here, and the engine ignores an "eviction" at or beyond the request's own position)
    r = _r([_req(2, 8000), _req(2, 5600)])
    out = eviction_positions(tokens, {0: 5000.0}, r, {0: 0}, np.array([0.0, -500.0]))
    assert out.tolist() == [2, 1]
    # 63 tokens short of the whole prefix is within the 64-token tolerance: no eviction
    r = _r([_req(2, 8000), _req(2, 8000 - 63)])
    assert eviction_positions(tokens, {0: 5000.0}, r, {0: 0}, np.zeros(2)).tolist() == [2, NEVER]


def _cache():
    return StreamCache(CacheConfig())


def test_evict_cuts_an_alive_entry_back_to_the_observed_position():
    c = _cache()
    c.entries = [[0, SYS, 0, 5000.0, 10 * MIN, TTL_MS["5m"]], [0, 0, 4, 15000.0, 10 * MIN, TTL_MS["5m"]]]
    # at t=1 min the log shows a read up to block 2 (8,000 tokens): the 15,000 entry is cut to 8,000 at position 2
    c.evict(0, 0, 2, sys_tokens=8064.0, prefix_tokens=8000.0, t=1 * MIN)
    assert sorted(map(tuple, c.entries)) == [(0, SYS, 0, 5000.0, 10 * MIN, TTL_MS["5m"]),
                                             (0, 0, 2, 8000.0, 10 * MIN, TTL_MS["5m"])]


def test_evict_does_not_revive_an_expired_entry():
    c = _cache()
    c.entries = [[0, 0, 4, 15000.0, 5 * MIN, TTL_MS["5m"]]]
    # the entry expired at 5:00; an eviction observed at 7:00 must not create a live cut-back entry
    c.evict(0, 0, 2, sys_tokens=8064.0, prefix_tokens=8000.0, t=7 * MIN)
    assert all(e[4] < 7 * MIN for e in c.entries)


def test_evict_never_creates_an_entry_longer_than_the_entry_it_cuts():
    # in a policy's world the cut entry can only be as long as the prefix the policy really cached there:
    # a policy whose blocks before position 2 are now 8,000 tokens but whose only live entry beyond is
    # 7,000 tokens long (written after it shrank a block) keeps at most 7,000
    c = _cache()
    c.entries = [[0, 0, 4, 7000.0, 10 * MIN, TTL_MS["5m"]]]
    c.evict(0, 0, 2, sys_tokens=8064.0, prefix_tokens=8000.0, t=1 * MIN)
    assert max(e[3] for e in c.entries) <= 7000.0


def builder(**kw):
    return TraceBuilder(overhead=kw.pop("overhead", 10_000), models=("m",), **kw)


def run(b, policy=None, **cache):
    session, vocab = b.build()
    return replay_session(session, vocab, policy or build("noop"), ReplayOptions(CacheConfig(**cache), PRICES,
                                                                                 detail=True))


def test_warm_start_reads_the_system_prefix_the_log_says_was_cached():
    b = builder()
    b.block(500, "user_text")
    # the log: the first request read the 10,000-token system prefix (cached by another session)
    b.request(ts=0, read=10_000, w5=500, has_usage=True)
    assert run(b, ttl="5m").detail["cache_read"] == [10_000]
    # cold: nothing cached; 10,500 written
    d = run(b, ttl="5m", warm_start="cold").detail
    assert d["cache_read"] == [0] and d["cache_write_5m"] == [10_500]


def test_ttl_of_each_request_comes_from_its_recorded_write():
    b = builder()
    b.block(500, "user_text")
    b.request(ts=0, w1h=10_500, has_usage=True)          # wrote 1h -> 1h entry, priced at the 1h rate
    b.block(100)
    b.request(ts=30 * MIN, read=10_500, w1h=100, has_usage=True)   # 30 min later: alive only under 1h
    b.block(100)
    b.request(ts=31 * MIN, read=10_600, has_usage=True)  # wrote nothing: the stream's majority TTL (1h)
    d = run(b, observed_evictions="none").detail
    assert d["cache_read"] == [0, 10_500, 10_600]
    assert d["cache_write_1h"] == [10_500, 100, 100] and d["cache_write_5m"] == [0, 0, 0]


class ChangesNothing(Policy):
    """Retroactive in type (the engine walks it block by block) but never edits anything."""

    name = "changes_nothing"

    def before_request(self, ctx, k):
        pass


def test_a_shorter_entry_is_kept_for_a_request_with_a_larger_uncached_tail():
    # r0 writes 10,500 (and the 10,000 system entry); r1 reads it and writes 12,500, which extends it;
    # r2 (14,100 in, recorded uncached tail 2,000) may read at most 12,100 tokens: the 12,500 entry is
    # too long, the 10,500 one fits. Dropping the shorter entry as "dominated" (as the no-op once did)
    # reads only the 10,000 system prefix, and a policy that changes nothing would then look cheaper.
    b = builder()
    b.block(500, "user_text")
    b.request(ts=0)
    b.block(2000)
    b.request(ts=1 * MIN)
    b.block(1600)
    b.request(ts=2 * MIN, uncached=2_000, has_usage=True, read=10_500, w5=1_600 + 2_000)
    d = run(b, ttl="5m", observed_evictions="none").detail
    assert d["cache_read"] == [0, 10_500, 10_500]
    assert d["cache_write_5m"][2] == pytest.approx(12_100 - 10_500)
    nothing = run(b, ChangesNothing(), ttl="5m", observed_evictions="none").detail
    assert nothing["cost"] == d["cost"]


def test_turn_end_write_is_timed_at_the_end_of_the_response():
    # r0 at 0:00 writes 10,500 (5-minute TTL, alive until 5:00). The response ends in assistant text
    # at 2:00; the user answers at 6:00. Claude Code's unlogged turn-end request at 2:00 read the
    # 10,500 entry (refreshing it to 7:00) and cached 10,500 + 300 = 10,800 until 7:00, so at 6:00
    # the request reads 10,800 and writes the user's 200 tokens.
    def session(recorded_read, version="2.1.37"):
        b = builder()
        b.block(500, "user_text")
        b.request(ts=0, w5=10_500, has_usage=True)
        b.block(300, "assistant_text", ts=2 * MIN)
        b.block(200, "user_text", ts=6 * MIN)
        b.request(ts=6 * MIN, read=recorded_read, w5=11_000 - recorded_read, has_usage=True, version=version)
        return b

    # a model rule: applied without calibration whatever the log says
    for recorded in (10_800, 0):
        d = run(session(recorded), ttl="5m", observed_evictions="none", clock="send").detail
        assert d["cache_read"] == [0, 10_800] and d["cache_write_5m"] == [10_500, 200]
    # calibrated: only where the recorded read reaches the prefix it wrote
    d = run(session(10_800), ttl="5m", clock="send").detail
    assert d["cache_read"] == [0, 10_800] and d["cache_write_5m"] == [10_500, 200]
    d = run(session(0), ttl="5m", clock="send").detail
    assert d["cache_read"] == [0, 0] and d["cache_write_5m"] == [10_500, 11_000]
    # without the rule everything expired at 5:00: 11,000 written again
    d = run(session(10_800), ttl="5m", turn_end_write="none", observed_evictions="none", clock="send").detail
    assert d["cache_read"] == [0, 0] and d["cache_write_5m"] == [10_500, 11_000]
    # Claude Code 1.0.x sent no prompt suggestion, and a client that gives no version is not
    # Claude Code 2.x: no turn-end write by default; "always" writes whatever the version
    for version in ("1.0.80", None):
        d = run(session(10_800, version), ttl="5m", observed_evictions="none", clock="send").detail
        assert d["cache_read"] == [0, 0] and d["cache_write_5m"] == [10_500, 11_000]
        d = run(session(10_800, version), ttl="5m", observed_evictions="none", clock="send",
                turn_end_write="always").detail
        assert d["cache_read"] == [0, 10_800] and d["cache_write_5m"] == [10_500, 200]


def test_clock_end_starts_the_ttl_when_the_response_ended():
    # r0 is looked up at 0:00; its response's blocks are stamped 0:30 (the request's own time),
    # then 2:00 (its last block). The next request is sent at 6:30, 6:30 after r0 was sent but 4:30
    # after its response ended: with the TTL measured from the response's end, the 5-minute entry
    # is still there; measured from the send time, it expired at 5:00.
    def session(last_block_ms):
        b = builder()
        b.block(500, "user_text", ts=0)
        b.request(ts=MIN // 2, w5=10_500, has_usage=True)
        b.block(300, "thinking", ts=MIN // 2)
        b.block(100, "tool_use", ts=last_block_ms)
        b.block(200, "tool_result", ts=6 * MIN + MIN // 2)
        b.request(ts=7 * MIN, read=10_900, w5=200, has_usage=True)
        return b

    d = run(session(2 * MIN), ttl="5m", observed_evictions="none", clock="end").detail
    assert d["cache_read"] == [0, 10_500] and d["cache_write_5m"] == [10_500, 600]
    d = run(session(2 * MIN), ttl="5m", observed_evictions="none", clock="send").detail
    assert d["cache_read"] == [0, 0] and d["cache_write_5m"] == [10_500, 11_100]
    # a response block stamped more than 5 minutes after its request is a rewritten stamp, not
    # the response's end: the TTL runs from the request's own time (0:30), expired at 5:30
    d = run(session(6 * MIN), ttl="5m", observed_evictions="none", clock="end").detail
    assert d["cache_read"] == [0, 0]


def test_observed_write_replays_a_prefix_the_log_read_but_no_logged_request_wrote():
    # r0 writes 10,500 at 0:00 (expires 5:00). At 10:00 the log records a read of 12,500: the whole
    # prefix including the 2,000-token tool result, which no logged request sent. Calibrated: an
    # unlogged request (an interrupted prompt, a retry) cached it: read 12,500, write 0.
    # Model only: everything expired, 12,500 written.
    b = builder()
    b.block(500, "user_text")
    b.request(ts=0, w5=10_500, has_usage=True)
    b.block(2000)
    b.request(ts=10 * MIN, read=12_500, has_usage=True)
    d = run(b, ttl="5m").detail
    assert d["cache_read"] == [0, 12_500] and d["cache_write_5m"] == [10_500, 0]
    d = run(b, ttl="5m", observed_evictions="none").detail
    assert d["cache_read"] == [0, 0] and d["cache_write_5m"] == [10_500, 12_500]


def test_calibration_events_are_the_same_for_a_policy_that_changes_nothing():
    b = builder()
    b.block(500, "user_text")
    b.request(ts=0, w5=10_500, has_usage=True)
    b.block(2000)
    b.request(ts=10 * MIN, read=12_500, has_usage=True)
    b.block(300, "assistant_text", ts=11 * MIN)
    b.block(200, "user_text", ts=12 * MIN)
    b.request(ts=12 * MIN, read=10_000, w5=3_000, has_usage=True)
    for variant in ("log", "none"):
        assert run(b, ChangesNothing(), ttl="5m", observed_evictions=variant).detail["cost"] == \
            run(b, ttl="5m", observed_evictions=variant).detail["cost"]


def test_warm_start_and_turn_end_write_are_cli_options(tmp_path):
    import json

    from click.testing import CliRunner

    from replay.cli import main, sample_logs_dir

    db = str(tmp_path / "s.duckdb")
    r = CliRunner().invoke(main, ["ingest", str(sample_logs_dir()), "--db", db, "-q"])
    assert r.exit_code == 0, r.output
    writes = {}
    for flags in ([], ["--warm-start", "cold"], ["--turn-end-write", "none"], ["--turn-end-write", "v2"]):
        r = CliRunner().invoke(main, ["validate", "--db", db, "--json", "--observed-evictions", "none", *flags])
        assert r.exit_code == 0, r.output
        writes[" ".join(flags)] = json.loads(r.output)["overall"]["simulated"]["cache_write"]
    # a cold start writes the system prefix the log says was warm; without turn-end writes more is rewritten
    assert writes["--warm-start cold"] > writes[""]
    assert writes["--turn-end-write none"] != writes["--turn-end-write v2"]
