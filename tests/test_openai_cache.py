"""OpenAI automatic caching rules (``CacheConfig.openai_*``), on hand-computed streams.

Every expected figure is worked out by hand from the rule under test (docs/replay-model.md,
"OpenAI automatic caching")."""

from dataclasses import replace

import pytest

from replay.engine import ReplayOptions, replay_session
from replay.model.cache import LEGACY_SETTINGS, CacheConfig, stored_settings
from replay.model.costs import PriceTable
from replay.policies import build

from trace_builder import MIN, TraceBuilder

RATES = {"input": 5, "cache_write_5m": 5, "cache_write_1h": 5, "cache_read": 0.5, "output": 30}
PRICES = PriceTable(overrides={"gpt-5": RATES, "gpt-5.5": RATES})
# the behaviour before these rules (what a run stored without them was replayed with)
BEFORE = {k: v for k, v in LEGACY_SETTINGS.items() if k.startswith("openai_")}


def reads(b: TraceBuilder, **cache) -> list[float]:
    session, vocab = b.build()
    opts = ReplayOptions(CacheConfig(**cache), PRICES, detail=True)
    return replay_session(session, vocab, build("noop"), opts).detail["cache_read"]


def two_prompts(model: str, first: float, second_extra: float = 100) -> TraceBuilder:
    b = TraceBuilder(overhead=0, models=(model,))
    b.block(first, "user_text", turn=1)
    b.request(ts=0)
    b.block(second_extra)
    b.request(ts=MIN)
    return b


def test_documented_minimum_and_128_token_steps():
    assert reads(two_prompts("gpt-5", 1_000)) == [0, 0]          # below 1,024: never cached
    assert reads(two_prompts("gpt-5", 1_100)) == [0, 1_024]      # 1,024 + 0 x 128
    assert reads(two_prompts("gpt-5", 3_100)) == [0, 3_072]      # 1,024 + 16 x 128


def test_gpt55_reads_on_the_observed_512_grid():
    # 384 + 5 x 512 = 2,944 <= 3,100 < 3,456; the documented steps would read 3,072
    assert reads(two_prompts("gpt-5.5", 3_100)) == [0, 2_944]
    assert reads(two_prompts("gpt-5.5", 3_100), openai_increments="documented") == [0, 3_072]
    # 1,300 is cached (>= 1,024) but its grid point 384 + 512 = 896 is below the minimum
    assert reads(two_prompts("gpt-5.5", 1_300)) == [0, 0]
    assert reads(two_prompts("gpt-5.5", 1_300), openai_increments="documented") == [0, 1_280]
    # the grid is the observed one for GPT-5.5 only
    assert reads(two_prompts("gpt-5", 3_100)) == [0, 3_072]


def idle(gap_ms: int) -> TraceBuilder:
    b = TraceBuilder(overhead=0, models=("gpt-5",))
    b.block(2_000, "user_text", turn=1)
    b.request(ts=0)
    b.block(100)
    b.request(ts=gap_ms)
    return b


def test_retention_after_idle():
    hit = 1_024 + 7 * 128  # 2,000 read in 128-token steps
    assert reads(idle(59 * MIN)) == [0, hit]            # in memory up to an hour (the default)
    assert reads(idle(61 * MIN)) == [0, 0]
    assert reads(idle(11 * MIN), openai_retention="10m") == [0, 0]
    assert reads(idle(9 * MIN), openai_retention="10m") == [0, hit]
    assert reads(idle(120 * MIN), openai_retention="24h") == [0, hit]
    # a forced TTL still overrides the retention
    assert reads(idle(6 * MIN), ttl="5m") == [0, 0]


def reasoning_turns(has_usage=(False, False, False), read2: int = 0) -> TraceBuilder:
    b = TraceBuilder(overhead=2_000, models=("gpt-5",))
    b.block(500, "user_text", turn=1)
    b.request(ts=0, has_usage=has_usage[0])          # 2,500
    b.block(300, "thinking")
    b.block(50, "tool_use")
    b.block(650, "tool_result")
    b.request(ts=MIN, has_usage=has_usage[1])        # 3,500: reads the first prompt
    b.block(100, "thinking")
    b.block(200, "assistant_text")
    b.block(300, "user_text", turn=2)
    b.request(ts=2 * MIN, has_usage=has_usage[2], read=read2)   # 4,100: a new user turn
    return b


def test_reasoning_leaves_the_prompt_at_a_new_user_turn():
    first = 1_024 + 11 * 128    # 2,500 in steps
    second = 1_024 + 19 * 128   # 3,500 in steps
    # the turn's reasoning (from block 1 on) is gone: only the first prompt is still a prefix
    assert reads(reasoning_turns()) == [0, first, first]
    assert reads(reasoning_turns(), openai_reasoning="keep") == [0, first, second]
    # a tool-loop request keeps the reasoning: the second request read the whole first prompt
    # calibrated: a recorded read past the reasoning shows it was kept, so nothing is cut
    calibrated = reasoning_turns(has_usage=(False, False, True), read2=second)
    assert reads(calibrated, observed_evictions="log")[2] == second
    assert reads(calibrated, observed_evictions="none")[2] == first


def test_second_request_reads_only_the_warm_prefix():
    b = TraceBuilder(overhead=2_000, models=("gpt-5",))
    b.block(1_000, "user_text", turn=1)
    b.request(ts=0, has_usage=True, read=1_536)      # 3,000: 1,536 warm from other sessions
    b.block(500)
    b.request(ts=MIN, has_usage=True)                # 3,500
    b.block(500)
    b.request(ts=2 * MIN, has_usage=True)            # 4,000: reads the second prompt
    got = reads(b, observed_evictions="none")
    assert got == [1_536, 1_536, 1_024 + 19 * 128]
    assert reads(b, observed_evictions="none", openai_second_request="model") == [1_536, 1_024 + 15 * 128,
                                                                                   1_024 + 19 * 128]


def claude_stream() -> TraceBuilder:
    b = TraceBuilder(overhead=12_000, models=("claude-sonnet-4-5",))
    b.block(800, "user_text", turn=1)
    b.request(ts=0, has_usage=True, read=12_000, w5=800, uncached=3)
    b.block(400, "thinking")
    b.block(60, "tool_use")
    b.block(3_000, "tool_result")
    b.request(ts=MIN, has_usage=True, read=12_800, w5=3_460, uncached=3)
    b.block(200, "thinking")
    b.block(150, "assistant_text")
    b.block(600, "user_text", turn=2)
    b.request(ts=90 * MIN, has_usage=True, read=12_000, w5=5_210, uncached=3)
    return b


@pytest.mark.parametrize("evictions", ["log", "none"])
def test_defaults_leave_anthropic_unchanged(evictions):
    prices = PriceTable(overrides={"claude-sonnet-4-5": {"input": 3, "cache_write_5m": 3.75, "cache_write_1h": 6,
                                                          "cache_read": 0.3, "output": 15}})
    session, vocab = claude_stream().build()
    now = replay_session(session, vocab, build("noop"),
                         ReplayOptions(CacheConfig(observed_evictions=evictions), prices, detail=True))
    session, vocab = claude_stream().build()
    before = replay_session(session, vocab, build("noop"),
                            ReplayOptions(CacheConfig(observed_evictions=evictions, **BEFORE), prices, detail=True))
    assert now.detail == before.detail
    assert now.detail["cache_read"][1] > 0  # the stream does use the cache


def test_runs_stored_before_the_rules_keep_their_behaviour():
    cfg = stored_settings({"ttl": "log"})
    assert cfg["openai_retention"] == "10m" and cfg["openai_increments"] == "documented"
    assert cfg["openai_reasoning"] == "keep" and cfg["openai_second_request"] == "model"
    assert replace(CacheConfig(), **BEFORE).openai_retention == "10m"
    with pytest.raises(ValueError, match="allowed"):
        CacheConfig(openai_retention="2h")


def warm_then_idle() -> TraceBuilder:
    b = TraceBuilder(overhead=3_000, models=("gpt-5",))
    b.block(2_000, "user_text", turn=1)
    b.request(ts=0, has_usage=True, read=2_432)      # 5,000: 2,432 warm from other sessions
    b.block(500)
    b.request(ts=MIN, has_usage=True)                # the second request: the warm prefix only
    b.block(500)
    b.request(ts=71 * MIN, has_usage=True)           # 70 minutes idle: the stream's own entries are gone
    return b


def test_warm_prefix_outlives_the_streams_idle():
    assert reads(warm_then_idle(), observed_evictions="none") == [2_432, 2_432, 2_432]
    # expiring like the stream's entries (5 minutes: the stream wrote no TTL), nothing is left
    assert reads(warm_then_idle(), observed_evictions="none", openai_warm_prefix="ttl") == [2_432, 2_432, 0]


def test_routing_miss_is_an_expected_loss_beyond_the_warm_prefix():
    b = TraceBuilder(overhead=2_000, models=("gpt-5",))
    b.block(1_000, "user_text", turn=1)
    b.request(ts=0, has_usage=True, read=1_536)      # 3,000: the warm 1,536 is all it reads, nothing lost
    b.block(500)
    b.request(ts=MIN, has_usage=True)                # 3,500: reads 1,024 + 15 x 128 = 2,944 of the first prompt
    session, vocab = b.build()
    cfg = CacheConfig(observed_evictions="none", openai_second_request="model", openai_routing_miss=0.1)
    d = replay_session(session, vocab, build("noop"), ReplayOptions(cfg, PRICES, detail=True)).detail
    # 10% of the 2,944 - 1,536 = 1,408 tokens beyond the warm prefix are expected to miss
    assert d["cache_read"] == pytest.approx([1_536, 2_944 - 140.8])
    assert d["uncached"] == pytest.approx([3_000 - 1_536, 3_500 - 2_944 + 140.8])
    assert d["cost"][1] == pytest.approx(((3_500 - 2_944 + 140.8) * 5 + (2_944 - 140.8) * 0.5 + 100 * 30) / 1e6)
    # the calibrated variant replays the recorded misses instead
    assert reads(b, openai_second_request="model", openai_routing_miss=0.1)[1] == 2_944


def test_naive_predictors_switch_the_openai_break_rules_off():
    from replay.experiments.validate import naive_config

    for name in ("never_breaks", "ttl_only"):
        cfg = naive_config(CacheConfig(openai_routing_miss=0.2), name)
        assert (cfg.openai_reasoning, cfg.openai_second_request, cfg.openai_routing_miss) == ("keep", "model", 0.0)
    # a naive predictor breaks nowhere the rules would: on the turn stream it reads the whole previous prompt
    session, vocab = reasoning_turns().build()
    cfg = naive_config(CacheConfig(), "ttl_only")
    d = replay_session(session, vocab, build("noop"), ReplayOptions(cfg, PRICES, detail=True)).detail
    assert d["cache_read"] == [0, 1_024 + 11 * 128, 1_024 + 19 * 128]
