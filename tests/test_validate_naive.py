"""The naive predictors `validate` scores the model-only variant against (issue 25 item 4):
"never breaks" (no expiry, no client rule) and "TTL only" (breaks only on TTL expiry), run on
the same recorded input sizes by the same engine (`replay.experiments.validate.naive_config`).

A hand-built stream where the three differ in a known way; every expected number is worked out
in the comments."""

import pytest

from replay.engine import ReplayOptions, replay_session
from replay.experiments.validate import NAIVE, naive_config, skill, skill_counts
from replay.model.cache import CacheConfig
from replay.model.costs import PriceTable
from replay.policies import build

from trace_builder import MIN, TraceBuilder

OPUS_46 = "claude-opus-4-6"  # adaptive thinking: no thinking-switch rule applies
RATES = {"input": 5, "cache_write_5m": 6.25, "cache_write_1h": 10, "cache_read": 0.5, "output": 25,
         "min_cacheable": 1024}
PRICES = PriceTable(overrides={OPUS_46: RATES})


def stream():
    """10,000 overhead (the system entry: the first request read nothing, no shared prefix).

    r0 0:00  user 500                                   10,500 in, recorded read 0
    r1 1:00  tool call 50 + result 2,000                12,550 in, recorded read 10,500
    r2 2:00  answer 300, user 200, resumed session      13,050 in, recorded read 10,000 (broke)
    r3 12:00 tool call 50 + result 1,000 (10 min idle)  14,100 in, recorded read 0 (expired)
    r4 13:00 tool call 50 + result 500                  14,650 in, recorded read 14,100
    r5 14:00 answer 100, user 100, resumed session      14,850 in, recorded read 14,650 (hit)
    """
    b = TraceBuilder(overhead=10_000, models=(OPUS_46,))
    b.block(500, "user_text")
    b.request(ts=0, read=0, w5=10_500, has_usage=True)
    b.tool_call("Read", 2000)
    b.request(ts=MIN, read=10_500, w5=2_050, has_usage=True)
    b.block(300, "assistant_text")
    b.block(200, "user_text")
    b.request(ts=2 * MIN, read=10_000, w5=3_050, has_usage=True, event="resume")
    b.tool_call("Bash", 1000)
    b.request(ts=12 * MIN, read=0, w5=14_100, has_usage=True)
    b.tool_call("Read", 500)
    b.request(ts=13 * MIN, read=14_100, w5=550, has_usage=True)
    b.block(100, "assistant_text")
    b.block(100, "user_text")
    b.request(ts=14 * MIN, read=14_650, w5=200, has_usage=True, event="resume")
    b.block(50, "assistant_text")
    return b


def reads(b, cfg):
    s, vocab = b.build()
    return replay_session(s, vocab, build("noop"), ReplayOptions(cfg, PRICES, detail=True)).detail["cache_read"]


MODEL_ONLY = CacheConfig(observed_evictions="none")


def test_the_three_predictors_read_what_their_rules_say():
    b = stream()
    # model only: r2 is resumed, so only the 10,000 system entry is read; the 10-minute idle
    # gap before r3 expires everything (read 0); r5 is resumed too: 10,000 although the
    # provider still had 14,650 (the turn-end write at 13:00 had cached 14,650 + 100)
    assert reads(b, MODEL_ONLY) == [0, 10_500, 10_000, 0, 14_100, 10_000]
    # never breaks: each request reads the previous one's whole cacheable input, even after
    # the 10-minute gap
    assert reads(b, naive_config(MODEL_ONLY, "never_breaks")) == [0, 10_500, 12_550, 13_050, 14_100, 14_650]
    # TTL only: as never breaks, but the gap before r3 expires the cache
    assert reads(b, naive_config(MODEL_ONLY, "ttl_only")) == [0, 10_500, 12_550, 0, 14_100, 14_650]


def test_skill_counts_on_the_hand_built_stream():
    rep = skill(stream().dataset(), ReplayOptions(CacheConfig(), PRICES))
    mo, nb, tt = rep["model_only"], rep["naive"]["never_breaks"], rep["naive"]["ttl_only"]
    # recorded reads 0, 10,500, 10,000, 0, 14,100, 14,650 (tolerance 256 tokens)
    # model only misses r5 (reads less); never breaks misses r2 and r3 (reads more); TTL only r2
    assert (mo["matched"], mo["sim_less"], mo["sim_more"]) == (5, 1, 0)
    assert (nb["matched"], nb["sim_less"], nb["sim_more"]) == (4, 0, 2)
    assert (tt["matched"], tt["sim_less"], tt["sim_more"]) == (5, 0, 1)
    assert nb["request_match"] == pytest.approx(4 / 6) and tt["request_match"] == pytest.approx(5 / 6)
    # never breaks: of its 2 misses the model matches both; it loses r5, which never breaks
    # matched: skill (2 - 1) / 2
    assert nb["vs_model_only"] == {"naive_misses": 2, "explained": 2, "new_misses": 1, "model_misses": 1,
                                   "explained_share": 1.0, "skill": 0.5}
    # TTL only: its one miss (r2) the model matches, and it loses r5: no better, skill 0
    assert tt["vs_model_only"] == {"naive_misses": 1, "explained": 1, "new_misses": 1, "model_misses": 1,
                                   "explained_share": 1.0, "skill": 0.0}
    # corpus reads: never breaks reads 0 + 10,500 + 12,550 + 13,050 + 14,100 + 14,650 = 64,850
    # against the recorded 49,250
    assert nb["simulated"]["cache_read"] == pytest.approx(64_850)
    assert nb["rel_error"]["cache_read"] == pytest.approx(64_850 / 49_250 - 1)
    assert tt["simulated"]["cache_read"] == pytest.approx(64_850 - 13_050)
    assert mo["sessions"] == nb["sessions"] == 1


def test_never_expiring_entries_keep_the_recorded_ttl_for_pricing():
    # a 1h stream idle for 3 hours: TTL only expires the cache, never breaks reads it, and both
    # bill the writes as 1h writes (the log's split), so the cost error is not a 5m/1h artefact
    b = TraceBuilder(overhead=10_000, models=(OPUS_46,))
    b.block(500, "user_text")
    b.request(ts=0, read=0, w1h=10_500, has_usage=True)
    b.tool_call("Read", 2000)
    b.request(ts=180 * MIN, read=0, w1h=12_550, has_usage=True)
    s, vocab = b.build()
    for name, expect in (("never_breaks", [0, 10_500]), ("ttl_only", [0, 0])):
        cfg = naive_config(MODEL_ONLY, name)
        d = replay_session(s, vocab, build("noop"), ReplayOptions(cfg, PRICES, detail=True)).detail
        assert d["cache_read"] == expect
        assert d["cache_write_5m"] == [0, 0] and sum(d["cache_write_1h"]) == 10_500 + 12_550 - expect[1]


def test_naive_config_switches_off_exactly_the_rules_that_break_or_write():
    base = CacheConfig(system_prefix="log", clock="response", warm_start="cold", ttl="1h")
    for name in NAIVE:
        c = naive_config(base, name)
        assert (c.observed_evictions, c.turn_end_write, c.thinking_switch, c.resume, c.task_turns,
                c.skill_turns) == ("none", "none", "ignore", "ignore", "ignore", "ignore")
        # what the model is given (and the user chose) is kept
        assert (c.system_prefix, c.clock, c.warm_start, c.ttl, c.unknown_times) == ("log", "response", "cold", "1h",
                                                                                      "log")
    assert naive_config(base, "never_breaks").expiry == "never" and naive_config(base, "ttl_only").expiry == "ttl"
    with pytest.raises(ValueError, match="naive predictor 'x'"):
        naive_config(base, "x")
    with pytest.raises(ValueError, match="cache.expiry"):
        CacheConfig(expiry="forever")


def test_skill_counts_definitions():
    # signs: 0 match, -1 less, +1 more
    c = skill_counts([1, -1, 0, 0, 1, 0], [0, -1, 1, 0, 0, 0])
    assert c == {"naive_misses": 3, "explained": 2, "new_misses": 1, "model_misses": 2,
                 "explained_share": pytest.approx(2 / 3), "skill": pytest.approx(1 / 3)}
    assert skill_counts([0, 0], [1, 0])["skill"] is None  # no naive miss: no share
    with pytest.raises(ValueError):
        skill_counts([0], [0, 0])
