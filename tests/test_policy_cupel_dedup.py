"""cupel_dedup (seed 002, Cupel stage 3 Deduplicate): the seed's rules and hand-computed replays."""

import pytest

from replay.model.cache import CacheConfig
from replay.model.costs import PriceTable
from replay.engine import ReplayOptions, replay_session
from replay.policies.base import ParamError
from replay.policies.cupel_dedup import KIND_WEIGHTS, CupelDedup
from replay.policies.noop import Noop
from replay.ingest.trace import BLOCK_KINDS

from trace_builder import MIN, TraceBuilder

PRICES = PriceTable(overrides={"m": {"input": 3, "cache_write_5m": 3.75, "cache_write_1h": 6, "cache_read": 0.3,
                                      "output": 15, "min_cacheable": 1024}})


def builder(**kw):
    return TraceBuilder(overhead=kw.pop("overhead", 10_000), models=("m",), **kw)


def run(b: TraceBuilder, policy=None):
    session, vocab = b.build()
    return replay_session(session, vocab, policy or Noop(), ReplayOptions(CacheConfig(ttl="5m"), PRICES, detail=True))


def cupel(**params):
    return CupelDedup(CupelDedup.make_params(params))


def final_sizes(b: TraceBuilder, policy) -> tuple[list[float], dict]:
    """Every block's size after the replay (a final request sees all) and the figures."""
    b.request(ts=100 * MIN)
    session, vocab = b.build()
    seen = []

    class Spy(type(policy)):
        def start_stream(self, ctx):
            super().start_stream(ctx)
            seen.append(ctx)

    r = replay_session(session, vocab, Spy(policy.params), ReplayOptions(CacheConfig(ttl="5m"), PRICES))
    return list(seen[0].eff), r.figures


def items(contents, kind="tool_result", tokens=100, ts_step=MIN):
    """A trace whose blocks have the given contents (equal string = byte-identical), one per minute."""
    b = builder()
    for n, c in enumerate(contents):
        b.block(tokens, kind, content=c, ts=n * ts_step)
    return b


# --- the seed's algorithm and edge cases -------------------------------------------------------

def test_highest_score_survives_recency_keeps_the_newest():
    # "keeping only the highest-scoring instance of each unique content string"; with the recency
    # scorer the newest copy scores highest
    got, figs = final_sizes(items(["A", "B", "A"]), cupel())
    assert got == [0, 100, 100]
    assert figs["blocks_changed"] == 1 and figs["tokens_saved"] == 100


def test_tie_goes_to_the_lowest_index():
    # Tiebreaking: equal scores keep the earlier item (same timestamp -> same recency score)
    got, _ = final_sizes(items(["A", "A", "A"], ts_step=0), cupel())
    assert got == [100, 0, 0]


def test_survivors_keep_their_input_order():
    # Conformance: survivors at indices 2, 3 and 4 stay in that order; nothing moves, the removed
    # ones just drop out
    got, _ = final_sizes(items(["A", "B", "A", "C", "B"]), cupel())
    assert got == [0, 0, 100, 100, 100]


def test_all_items_identical_only_one_survives():
    got, _ = final_sizes(items(["A"] * 4), cupel())
    assert got == [0, 0, 0, 100]
    got, _ = final_sizes(items(["A"] * 4), cupel(score="size"))
    assert got == [100, 0, 0, 0]


def test_no_duplicates_and_empty_input_are_unchanged():
    got, figs = final_sizes(items(["A", "B", "C"]), cupel())
    assert got == [100, 100, 100] and figs["blocks_changed"] == 0
    got, figs = final_sizes(builder(), cupel())
    assert got == [] and figs["blocks_changed"] == 0


def test_disabled_returns_the_input_unchanged():
    b = items(["A", "B", "A", "A"])
    got, figs = final_sizes(b, cupel(enabled=False))
    assert got == [100, 100, 100, 100] and figs["blocks_changed"] == 0
    b = items(["A", "B", "A", "A"])
    b.request(ts=200 * MIN)
    assert run(b, cupel(enabled=False)).figures == run(b).figures


def test_comparison_is_byte_exact():
    # Identity: no normalization; a trailing space or a case change makes a distinct item
    got, _ = final_sizes(items(["A", "A ", "a", "A"]), cupel())
    assert got == [0, 100, 100, 100]


def test_same_content_different_kind_is_a_duplicate():
    # "Duplicate content, different metadata": only content is compared
    b = builder()
    b.block(100, "user_text", content="X", ts=0)
    b.block(100, "tool_result", content="X", ts=MIN)
    got, _ = final_sizes(b, cupel())
    assert got == [0, 100]


def test_kind_scorer_uses_cupel_weights():
    # KindScorer defaults: Memory 0.8 > ToolOutput 0.6 > Document 0.4 > Message 0.2
    assert KIND_WEIGHTS["compact_summary"] > KIND_WEIGHTS["tool_result"] > KIND_WEIGHTS["attachment"] \
        > KIND_WEIGHTS["user_text"] == KIND_WEIGHTS["tool_use"]
    b = builder()
    b.block(100, "tool_result", content="X", ts=0)
    b.block(100, "user_text", content="X", ts=MIN)       # newer, but a Message scores below ToolOutput
    b.block(100, "tool_result", content="Y", ts=0)
    b.block(100, "tool_result", content="Y", ts=MIN)     # same kind: tie -> the earlier stays
    got, _ = final_sizes(b, cupel(score="kind"))
    assert got == [100, 0, 100, 0]


def test_blocks_without_timestamp_score_lowest_under_recency():
    b = builder()
    b.block(100, "tool_result", content="A", ts=5 * MIN)
    b.block(100, "tool_result", content="A", ts=-1)
    got, _ = final_sizes(b, cupel())
    assert got == [100, 0]


def test_kinds_limits_the_eligible_blocks():
    b = builder()
    b.block(100, "user_text", content="continue", ts=0)
    b.block(100, "tool_result", content="R", ts=MIN)
    b.block(100, "user_text", content="continue", ts=2 * MIN)
    b.block(100, "tool_result", content="R", ts=3 * MIN)
    got, _ = final_sizes(b, cupel(kinds=("tool_result",)))
    assert got == [100, 0, 100, 100]
    assert CupelDedup.Params().kinds == BLOCK_KINDS


def test_only_the_current_partition_is_in_context():
    b = builder()
    b.block(100, "tool_result", content="A", ts=0)
    b.request(ts=0)
    b.compact(50)
    b.block(100, "tool_result", content="A", ts=MIN)
    b.block(100, "tool_result", content="A", ts=2 * MIN)
    got, _ = final_sizes(b, cupel())
    assert got == [100, 50, 0, 100]


def test_a_survivor_is_replaced_when_a_newer_copy_arrives():
    # the pipeline reruns on every request: a copy that survived request 0 is removed at request 1
    b = builder()
    b.block(100, "tool_result", content="A", ts=0)
    b.request(ts=0)
    b.block(100, "tool_result", content="A", ts=MIN)
    b.block(100, "tool_result", content="A", ts=2 * MIN)
    got, figs = final_sizes(b, cupel())
    assert got == [0, 0, 100]
    assert figs["blocks_changed"] == 2


# --- end to end: the bust --------------------------------------------------------------------

def _read_twice():
    b = builder()
    b.block(500, "user_text", turn=1, ts=0)
    b.request(ts=0)
    b.tool_call("Read", 3000, resource="/p/a.py", content="A", ts=MIN)
    b.request(ts=MIN)
    b.tool_call("Read", 3000, resource="/p/a.py", content="A", ts=2 * MIN)
    b.request(ts=2 * MIN)
    return b


def test_removing_the_older_copy_busts_the_cache():
    # blocks: 0 user 500 | 1 use 50, 2 result 3000 | 3 use 50, 4 result 3000 (same bytes as 2).
    # At request 2 the newer copy wins, block 2 is removed: the prefix written at request 1
    # (13,550, boundary 3) contains it and is lost; only the 10,500 entry (boundary 1) is read.
    b = _read_twice()
    base, r = run(b), run(b, cupel())
    assert base.detail["input_total"] == [10_500, 13_550, 16_600]
    assert r.detail["input_total"] == [10_500, 13_550, 13_600]
    assert r.detail["cache_read"] == [0, 10_500, 10_500]
    assert r.detail["cache_write_5m"] == [10_500, 3_050, 3_100]
    assert r.figures["busts"] == 1 and r.figures["bust_tokens"] == 3_050
    assert r.figures["tokens_saved"] == 3_000 and r.figures["blocks_changed"] == 1
    cost = (10_500 * 3.75 + 1500) + (10_500 * 0.3 + 3_050 * 3.75 + 1500) + (10_500 * 0.3 + 3_100 * 3.75 + 1500)
    assert r.figures["cost"] == pytest.approx(cost / 1e6)
    assert base.figures["busts"] == 0


def test_a_small_duplicate_far_back_saves_tokens_but_costs_more():
    # blocks: 0 user 500 | 1 use 50, 2 result "A" 200 | 3 assistant 20,000 | 4 use 50, 5 result "A" 200.
    # Removing block 2 saves 200 tokens but rewrites the 20,250 tokens cached after it.
    b = builder()
    b.block(500, "user_text", turn=1, ts=0)
    b.request(ts=0)
    b.tool_call("Bash", 200, content="A", ts=MIN)
    b.block(20_000, "assistant_text", ts=MIN)
    b.request(ts=MIN)
    b.tool_call("Bash", 200, content="A", ts=2 * MIN)
    b.request(ts=2 * MIN)
    base, r = run(b), run(b, cupel())
    assert base.detail["cache_read"][2] == 30_750 and base.detail["cache_write_5m"][2] == 250
    assert r.detail["input_total"][2] == 30_800
    assert r.detail["cache_read"][2] == 10_500 and r.detail["cache_write_5m"][2] == 20_300
    assert r.figures["busts"] == 1 and r.figures["bust_tokens"] == 20_250
    req2_base = (30_750 * 0.3 + 250 * 3.75 + 1500) / 1e6
    req2_cupel = (10_500 * 0.3 + 20_300 * 3.75 + 1500) / 1e6
    assert r.figures["cost"] - base.figures["cost"] == pytest.approx(req2_cupel - req2_base)
    assert r.figures["cost"] > base.figures["cost"]


def test_keeping_the_earliest_copy_does_not_bust():
    # score="size": identical bytes tie, the earliest survives and the newcomer is dropped before
    # any request saw it: append-only
    r = run(_read_twice(), cupel(score="size"))
    assert r.detail["input_total"] == [10_500, 13_550, 13_600]
    assert r.detail["cache_read"] == [0, 10_500, 13_550]
    assert r.detail["cache_write_5m"] == [10_500, 3_050, 50]
    assert r.figures["busts"] == 0 and r.figures["tokens_saved"] == 3_000


# --- params ----------------------------------------------------------------------------------

def test_defaults_and_hooks():
    p = CupelDedup.Params()
    assert p.enabled and p.score == "recency"
    assert CupelDedup.retroactive() and not CupelDedup.insert_time()


def test_unknown_param_suggests_the_closest():
    with pytest.raises(ParamError, match="did you mean 'score'"):
        CupelDedup.make_params({"scores": "size"})
    with pytest.raises(ParamError, match="no parameter 'nope'"):
        CupelDedup.make_params({"nope": 1})


@pytest.mark.parametrize("bad", [{"score": "relevance"}, {"kinds": ("tool_result", "message")}, {"enabled": "maybe"}])
def test_invalid_values_raise(bad):
    with pytest.raises(ParamError):
        CupelDedup.make_params(bad)


def test_params_from_strings():
    p = CupelDedup.make_params({"kinds": "tool_result,attachment", "score": "kind", "enabled": "true"})
    assert p.kinds == ("tool_result", "attachment") and p.score == "kind" and p.enabled
