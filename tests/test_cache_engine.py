"""Hand-computed replays: every number below is worked out by hand from the cache rules."""

import pytest

from replay.model.cache import CacheConfig
from replay.model.costs import PriceTable
from replay.engine import ReplayOptions, replay_session
from replay.policies import build
from replay.policies.base import Policy

from trace_builder import MIN, TraceBuilder

# Sonnet-like prices, $/Mtok: input 3, 5m write 3.75, 1h write 6, read 0.30, output 15; min cacheable 1,024.
PRICES = PriceTable(overrides={"m": {"input": 3, "cache_write_5m": 3.75, "cache_write_1h": 6, "cache_read": 0.3,
                                      "output": 15, "min_cacheable": 1024}})


def run(b: TraceBuilder, policy=None, **cache):
    session, vocab = b.build()
    opts = ReplayOptions(CacheConfig(**cache), PRICES, detail=True)
    return replay_session(session, vocab, policy or build("noop"), opts)


def builder(**kw):
    return TraceBuilder(overhead=kw.pop("overhead", 10_000), models=("m",), **kw)


def test_reads_previous_prefix_and_writes_the_rest():
    b = builder()
    b.block(500, "user_text")
    b.request(ts=0)
    b.block(2000)
    b.request(ts=1 * MIN)
    d = run(b, ttl="5m").detail
    assert d["input_total"] == [10_500, 12_500]
    assert d["cache_read"] == [0, 10_500]
    assert d["cache_write_5m"] == [10_500, 2_000]
    # cost: first 10,500 x 3.75 + 100 x 15; second 10,500 x 0.30 + 2,000 x 3.75 + 100 x 15 ($/Mtok)
    assert d["cost"][0] == pytest.approx((10_500 * 3.75 + 100 * 15) / 1e6)
    assert d["cost"][1] == pytest.approx((10_500 * 0.3 + 2_000 * 3.75 + 100 * 15) / 1e6)


def test_ttl_expiry_and_refresh_on_hit():
    b = builder()
    b.block(500, "user_text")
    b.request(ts=0)                      # writes 10,500, alive until 5:00
    b.block(100)
    b.request(ts=4 * MIN)                # hit (refreshes the 10,500 entry to 9:00), writes 10,600 until 9:00
    b.block(100)
    b.request(ts=8 * MIN + 30_000)       # 8:30: 10,600 entry alive -> read 10,600
    b.block(100)
    b.request(ts=14 * MIN)               # 14:00: last refresh 8:30 + 5 = 13:30 -> everything expired
    d = run(b, ttl="5m").detail
    assert d["cache_read"] == [0, 10_500, 10_600, 0]
    assert d["cache_write_5m"] == [10_500, 100, 100, 10_800]


def test_one_hour_ttl_survives_a_long_gap_and_prices_1h_writes():
    b = builder()
    b.block(500, "user_text")
    b.request(ts=0)
    b.block(100)
    b.request(ts=50 * MIN)
    d = run(b, ttl="1h").detail
    assert d["cache_read"] == [0, 10_500]
    assert d["cache_write_1h"] == [10_500, 100] and d["cache_write_5m"] == [0, 0]
    assert d["cost"][0] == pytest.approx((10_500 * 6 + 100 * 15) / 1e6)


def test_minimum_cacheable_length():
    b = builder(overhead=600)
    b.block(300, "user_text")
    b.request(ts=0)          # 900 < 1,024: nothing cached, all uncached
    b.block(200)
    b.request(ts=MIN)        # 1,100: written now
    b.block(50)
    b.request(ts=2 * MIN)    # reads 1,100
    d = run(b, ttl="5m").detail
    assert d["uncached"] == [900, 0, 0]
    assert d["cache_write_5m"] == [0, 1_100, 50]
    assert d["cache_read"] == [0, 0, 1_100]


def test_compaction_keeps_only_the_system_prefix():
    b = builder()
    b.block(500, "user_text")
    b.request(ts=0)
    b.block(5000)
    b.request(ts=MIN)
    b.compact(800)
    b.request(ts=2 * MIN)    # new partition: messages differ, only the 10,000 system prefix is read
    d = run(b, ttl="5m").detail
    assert d["input_total"] == [10_500, 15_500, 10_800]
    assert d["cache_read"] == [0, 10_500, 10_000]
    assert d["cache_write_5m"] == [10_500, 5_000, 800]


class ClearSecondBlock(Policy):
    """Test policy: at request 2, shrink block 1 to 100 tokens (a retroactive edit)."""

    name = "clear_second"

    def before_request(self, ctx, k):
        if k == 2:
            ctx.set_size(1, 100)


def test_retroactive_edit_busts_the_prefix_from_the_edit_point():
    b = builder()
    b.block(500, "user_text")
    b.request(ts=0)
    b.block(3000)
    b.block(400)
    b.request(ts=MIN)
    b.block(200)
    b.request(ts=2 * MIN)
    base = run(b, ttl="5m")
    r = run(b, ClearSecondBlock(), ttl="5m")
    assert base.detail["cache_read"] == [0, 10_500, 13_900]
    # after the edit only the first request's prefix (10,500, before block 1) is unchanged
    assert r.detail["input_total"] == [10_500, 13_900, 11_200]
    assert r.detail["cache_read"] == [0, 10_500, 10_500]
    assert r.detail["cache_write_5m"] == [10_500, 3_400, 700]
    assert r.figures["busts"] == 1 and r.figures["bust_tokens"] == 13_900 - 10_500
    assert r.figures["tokens_saved"] == 2_900


def test_breakpoints_none_sends_everything_uncached():
    b = builder()
    b.block(500, "user_text")
    b.request(ts=0)
    b.request(ts=MIN)
    d = run(b, breakpoints="none").detail
    assert d["uncached"] == [10_500, 10_500] and d["cache_read"] == [0, 0]


def test_lookback_limit_makes_old_entries_unreachable():
    b = builder()
    b.block(500, "user_text")
    b.request(ts=0)
    for _ in range(25):
        b.block(10)
    b.request(ts=MIN)
    # the entry written at block 1 is 25 blocks behind: reachable without a limit, not with 20
    assert run(b, ttl="5m").detail["cache_read"][1] == 10_500
    assert run(b, ttl="5m", lookback_blocks=20).detail["cache_read"][1] == 10_000


def test_unknown_cache_setting_is_rejected():
    with pytest.raises(ValueError, match="allowed"):
        CacheConfig(ttl="10m")


def test_openai_automatic_caching_in_128_token_steps():
    prices = PriceTable(overrides={"gpt-5": {"input": 1.25, "cache_write_5m": 1.25, "cache_write_1h": 1.25,
                                              "cache_read": 0.125, "output": 10}})
    b = TraceBuilder(overhead=1000, models=("gpt-5",))
    b.block(500, "user_text")
    b.request(ts=0)                   # 1,500: nothing cached yet
    b.block(300)
    b.request(ts=MIN)                 # prefix 1,500 cached -> 1,024 + 3 x 128 = 1,408 read
    b.block(10)
    b.request(ts=20 * MIN)            # 10-minute retention passed: miss
    session, vocab = b.build()
    cfg = CacheConfig(openai_retention="10m")
    d = replay_session(session, vocab, build("noop"), ReplayOptions(cfg, prices, detail=True)).detail
    assert d["input_total"] == [1_500, 1_800, 1_810]
    assert d["cache_read"] == [0, 1_408, 0]
    assert d["uncached"] == [1_500, 392, 1_810]
    assert d["cache_write_5m"] == [0, 0, 0] and d["cache_write_1h"] == [0, 0, 0]
    assert d["cost"][1] == pytest.approx((392 * 1.25 + 1_408 * 0.125 + 100 * 10) / 1e6)


def test_gemini_implicit_caching_minimum_and_no_steps():
    prices = PriceTable(overrides={"gemini-2.5-pro": {"input": 1.25, "cache_write_5m": 1.25, "cache_write_1h": 1.25,
                                                       "cache_read": 0.125, "output": 10}})
    b = TraceBuilder(overhead=1500, models=("gemini-2.5-pro",))
    b.block(400, "user_text")
    b.request(ts=0)          # 1,900 < 2,048: not cached
    b.block(300)
    b.request(ts=MIN)        # 2,200: nothing readable yet, cached now
    b.block(77)
    b.request(ts=2 * MIN)    # reads the exact 2,200 prefix (no 128-token rounding)
    session, vocab = b.build()
    d = replay_session(session, vocab, build("noop"), ReplayOptions(CacheConfig(), prices, detail=True)).detail
    assert d["cache_read"] == [0, 0, 2_200]
    assert d["uncached"] == [1_900, 2_200, 77]
