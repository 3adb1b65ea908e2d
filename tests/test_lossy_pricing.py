"""Lossy pricing (issue 17, item 4): inserted sizes in the stream's units, re-reads of stripped
content priced, and no saving from thinking blocks the provider already dropped.

Every figure below is computed by hand from the trace: overhead 10,000, prices $/Mtok input 3,
5m write 3.75, read 0.30, output 15 (100 output tokens a request), 5-minute TTL.
"""

import pytest

from replay.engine import ReplayOptions, replay_session
from replay.model.cache import CacheConfig
from replay.model.costs import PriceTable
from replay.policies import build
from replay.policies.anthropic_clear_tool_uses import AnthropicClearToolUses
from replay.policies.base import Context
from replay.policies.claude_code_microcompact import ClaudeCodeMicrocompact
from replay.policies.common import keeps_thinking
from replay.policies.cupel_dedup import CupelDedup
from replay.policies.devboy_lru import DevboyLru
from replay.policies.jp_compaction import JpCompaction
from replay.policies.jp_resource_dedup import JpResourceDedup
from replay.policies.supersede import Supersede

from trace_builder import MIN, TraceBuilder

RATES = {"input": 3, "cache_write_5m": 3.75, "cache_write_1h": 6, "cache_read": 0.3, "output": 15,
         "min_cacheable": 1024}
OLD_SONNET, OLD_OPUS, NEW_OPUS = "claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805", "claude-opus-4-5-20251101"
PRICES = PriceTable(overrides={m: RATES for m in ("m", OLD_SONNET, OLD_OPUS, NEW_OPUS)})
OUT = 100 * 15  # output cost of a request, $/Mtok units


def cost(*requests):
    """$ of requests given as (read, write) pairs."""
    return sum(r * 0.3 + w * 3.75 + OUT for r, w in requests) / 1e6


def builder(model="m"):
    return TraceBuilder(overhead=10_000, models=(model,))


def make(cls, **params):
    return cls(cls.make_params(params))


def replay(b, policy, ratio=1.0):
    """The replay's figures and the block sizes after it (the last request's view)."""
    session, vocab = b.build()
    session.streams[0].bpe_ratio = ratio
    seen = []

    class Spy(type(policy)):
        def start_stream(self, ctx):
            super().start_stream(ctx)
            seen.append(ctx)

    r = replay_session(session, vocab, Spy(policy.params), ReplayOptions(CacheConfig(ttl="5m"), PRICES, detail=True))
    return r, seen[0].eff


# --- 1. same units ---------------------------------------------------------------------------------

def test_units_converts_o200k_tokens_with_the_streams_ratio():
    session, vocab = builder().build()
    st = session.streams[0]
    st.bpe_ratio = 1.5
    assert Context(st, vocab, {}).units(11) == 16.5
    st.bpe_ratio = 1.0
    assert Context(st, vocab, {}).units(11) == 11


def test_an_11_token_hint_is_priced_as_16_5_at_ratio_1_5():
    b = builder()
    b.block(500, "user_text", turn=1)
    b.request(ts=0)                                          # 10,500
    b.tool_call("Read", 2000, resource="/a.py", content="A")
    b.request(ts=MIN)                                        # 12,550
    hint = b.tool_call("Read", 2000, resource="/a.py", content="A")
    b.request(ts=2 * MIN)                                    # 12,550 + 50 + 11 x 1.5
    r, eff = replay(b, make(DevboyLru), ratio=1.5)
    assert eff[hint] == 16.5
    assert r.detail["input_total"] == [10_500, 12_550, 12_616.5]
    assert r.detail["cache_read"] == [0, 10_500, 12_550]
    assert r.detail["cache_write_5m"] == [10_500, 2_050, 66.5]
    assert r.figures["tokens_saved"] == 2000 - 16.5
    assert r.figures["cost"] == pytest.approx(cost((0, 10_500), (10_500, 2_050), (12_550, 66.5)))
    r1, _ = replay(b, make(DevboyLru), ratio=1.0)
    assert r1.detail["input_total"][-1] == 12_611


def test_every_inserted_size_is_in_the_streams_units():
    ratio = 1.5

    # jp_resource_dedup: the 82-token reference message
    b = builder()
    b.tool_call("Read", 2000, resource="/a.py", content="A")
    ref = b.tool_call("Read", 2000, resource="/a.py", content="A")
    b.request(ts=0)
    assert replay(b, make(JpResourceDedup), ratio)[1][ref] == 82 * ratio

    # jp_compaction: the 9-token stub, the 2,500-token summary, pruned tool definitions
    b = builder()
    b.block(100, "user_text", turn=1)
    res = b.tool_call("Read", 1000, resource="a", args="a")
    b.block(9000, "assistant_text")
    b.request(ts=0)
    b.block(100, "user_text", turn=2)
    b.request(ts=MIN)
    assert replay(b, make(JpCompaction, strategies="strip-tool-results", trigger_turn=2), ratio)[1][res] == 13.5
    r, eff = replay(b, make(JpCompaction, strategies="summarize", trigger_turn=2), ratio)
    assert eff[0] == 3750 and eff[1:4] == [0, 0, 0] and eff[4] == 100
    r, _ = replay(b, make(JpCompaction, strategies="prune-tools", trigger_turn=2, tool_def_tokens=100,
                          tools_defined=10), ratio)
    assert r.detail["input_total"][0] == 10_000 - 9 * 100 * ratio + 10_150   # 9 of 10 definitions unused

    # claude_code_microcompact: the 7-token placeholder
    b = builder()
    b.block(100, "user_text", turn=1)
    first = b.tool_call("Read", 1000, resource="f0", ts=0)
    for j in range(1, 6):
        b.tool_call("Read", 1000, resource=f"f{j}", ts=0)
    b.request(ts=0)
    b.block(100, "user_text", turn=2, ts=61 * MIN)
    b.request(ts=61 * MIN)
    assert replay(b, make(ClaudeCodeMicrocompact), ratio)[1][first] == 10.5

    # anthropic_clear_tool_uses: the 10-token placeholders
    b = builder()
    use = b.block(50, "tool_use", tool="Read", tool_use="t1")
    res = b.block(1000, "tool_result", tool="Read", tool_use="t1")
    b.tool_call("Read", 1000)
    b.request(ts=0)
    eff = replay(b, make(AnthropicClearToolUses, trigger=1000, keep=1, clear_tool_inputs=True), ratio)[1]
    assert (eff[use], eff[res]) == (15, 15)

    # supersede: a hidden result's (optional) size
    b = builder()
    old = b.tool_call("Read", 1000, resource="a")
    b.tool_call("Read", 1000, resource="a")
    b.request(ts=0)
    assert replay(b, make(Supersede, hidden_tokens=4), ratio)[1][old] == 6


# --- 2. re-reads of stripped content ---------------------------------------------------------------

def reread_trace(model="m"):
    b = builder(model)
    b.block(100, "user_text", turn=1)
    b.request(ts=0)                                          # k0: 10,100
    res = b.tool_call("Read", 1000, resource="a", args="a")
    b.request(ts=MIN)                                        # k1: 11,150
    b.block(100, "user_text", turn=2)
    b.request(ts=2 * MIN)                                    # k2: compaction stubs block 2
    b.tool_call("Read", 1000, resource="a", args="a2")       # the agent re-reads "a"
    b.request(ts=3 * MIN)                                    # k3
    b.block(100, "assistant_text")
    b.request(ts=4 * MIN)                                    # k4
    return b, res


def test_jp_compaction_prices_a_reread_of_a_stripped_result():
    b, res = reread_trace()
    r, eff = replay(b, make(JpCompaction, strategies="strip-tool-results", trigger_turn=2))
    # k2: 10,000 + 100 + 50 + 9 + 100; the stub busts the 11,150 entry, the 10,100 one is read.
    # k3: the re-read gives block 2 its 1,000 tokens back: 10,000 + 100 + 50 + 1,000 + 100 + 50 + 1,000;
    # the change at block 2 busts the 10,259 entry again (159 tokens), the 10,100 one is read.
    assert r.detail["input_total"] == [10_100, 11_150, 10_259, 12_300, 12_400]
    assert r.detail["cache_read"] == [0, 10_100, 10_100, 10_100, 12_300]
    assert r.detail["cache_write_5m"] == [10_100, 1_050, 159, 2_200, 100]
    assert r.figures["busts"] == 2 and r.figures["bust_tokens"] == 1_050 + 159
    assert eff[res] == 1000
    assert r.figures["trimmed_reread"] == 1
    assert r.figures["reread_restored"] == 1 and r.figures["reread_restored_tokens"] == 991
    assert r.figures["tokens_saved"] == 0 and r.figures["blocks_changed"] == 2
    assert r.figures["cost"] == pytest.approx(cost((0, 10_100), (10_100, 1_050), (10_100, 159), (10_100, 2_200),
                                                   (12_300, 100)))

    # reread_cost off: today's behaviour, the re-read is only counted
    off, eff = replay(b, make(JpCompaction, strategies="strip-tool-results", trigger_turn=2, reread_cost=False))
    assert off.detail["input_total"] == [10_100, 11_150, 10_259, 11_309, 11_409]
    assert off.detail["cache_read"] == [0, 10_100, 10_100, 10_259, 11_309]
    assert off.detail["cache_write_5m"] == [10_100, 1_050, 159, 1_050, 100]
    assert eff[res] == 9 and off.figures["trimmed_reread"] == 1 and off.figures["busts"] == 1
    assert off.figures["reread_restored"] == 0
    assert off.figures["cost"] == pytest.approx(cost((0, 10_100), (10_100, 1_050), (10_100, 159), (10_259, 1_050),
                                                     (11_309, 100)))
    assert r.figures["cost"] - off.figures["cost"] == pytest.approx(
        ((2_200 - 1_050) * 3.75 + (10_100 - 10_259) * 0.3 + (12_300 - 11_309) * 0.3) / 1e6)


def test_restored_blocks_are_never_stripped_again():
    # the re-read repeats the call exactly, so at turn 3 dedup-tools finds the restored pair
    # superseded by the newer call; a restored block keeps its size for the rest of the partition
    b = builder()
    b.block(100, "user_text", turn=1)
    b.request(ts=0)
    res = b.tool_call("Read", 1000, resource="a", args="a")
    b.request(ts=MIN)
    b.block(100, "user_text", turn=2)
    b.request(ts=2 * MIN)                                    # stub
    b.tool_call("Read", 1000, resource="a", args="a")
    b.request(ts=3 * MIN)                                    # restored
    b.block(100, "user_text", turn=3)
    b.request(ts=4 * MIN)                                    # dedup would remove the older pair
    p = make(JpCompaction, strategies="dedup-tools,strip-tool-results", trigger_fraction=0.01)
    r, eff = replay(b, p)
    assert eff[res - 1: res + 1] == [50, 1000]
    assert r.figures["step:dedup-tools:blocks"] == 0 and r.figures["reread_restored"] == 1
    assert r.detail["input_total"][-1] == 10_100 + 1_050 + 100 + 50 + 9 + 100   # the re-read result stubbed
    off, eff = replay(b, make(JpCompaction, strategies="dedup-tools,strip-tool-results", trigger_fraction=0.01,
                              reread_cost=False))
    assert eff[res - 1: res + 1] == [0, 0] and off.figures["step:dedup-tools:blocks"] == 2


def test_dedup_of_a_repeat_is_not_charged():
    # dedup-tools removes an older identical call: the newer one is still in context
    b = builder()
    b.block(100, "user_text", turn=1)
    old = b.tool_call("Bash", 1000, resource="a", args="same")
    b.tool_call("Bash", 1000, resource="a", args="same")
    b.request(ts=0)
    b.block(100, "user_text", turn=2)
    b.request(ts=MIN)
    b.tool_call("Read", 1000, resource="a", args="r")
    b.request(ts=2 * MIN)
    r, eff = replay(b, make(JpCompaction, strategies="dedup-tools", trigger_turn=2))
    assert eff[old] == 0 and r.figures["trimmed_reread"] == 0 and r.figures["reread_restored"] == 0
    # supersede hides an older read of a location a newer one restates: neither counted nor charged
    r, eff = replay(b, make(Supersede, read_tools=("Bash",)))
    assert eff[old] == 0 and r.figures["trimmed_reread"] == 0 and r.figures.get("reread_restored", 0) == 0


def test_microcompact_prices_a_reread_of_a_cleared_result():
    b = builder()
    b.block(100, "user_text", turn=1, ts=0)
    first = b.tool_call("Read", 1000, resource="f0", ts=0)
    for j in range(1, 6):
        b.tool_call("Read", 1000, resource=f"f{j}", ts=0)
    b.request(ts=0)                                          # k0: 10,000 + 100 + 6 x 1,050 = 16,400
    b.block(100, "user_text", turn=2, ts=61 * MIN)
    b.request(ts=61 * MIN)                                   # k1: idle > 60 min, result 0 cleared to 7
    b.tool_call("Read", 1000, resource="f0", ts=62 * MIN)
    b.request(ts=62 * MIN)                                   # k2: the re-read restores it
    r, eff = replay(b, make(ClaudeCodeMicrocompact))
    assert r.detail["input_total"] == [16_400, 16_500 - 993, 16_500 + 1_050]
    # k1: the cache expired (61 min): everything is written; k2 busts the 15,507 entry at block 2
    assert r.detail["cache_read"] == [0, 0, 10_000]
    assert r.detail["cache_write_5m"] == [16_400, 15_507, 7_550]
    assert eff[first] == 1000 and r.figures["reread_restored"] == 1
    off, eff = replay(b, make(ClaudeCodeMicrocompact, reread_cost=False))
    assert off.detail["input_total"] == [16_400, 15_507, 16_557]
    assert off.detail["cache_read"] == [0, 0, 15_507] and eff[first] == 7


def test_clear_tool_uses_prices_a_reread_and_never_clears_it_again():
    b = builder()
    b.block(100, "user_text", turn=1)
    first = b.tool_call("Read", 1000, resource="a")
    second = b.tool_call("Read", 1000, resource="b")
    b.request(ts=0)                                          # trigger 1,000, keep 1: result "a" cleared
    b.tool_call("Read", 1000, resource="a")                  # re-read of "a": it comes back
    b.request(ts=MIN)                                        # "b" cleared now (keep 1), "a" stays
    b.tool_call("Read", 1000, resource="c")
    b.request(ts=2 * MIN)
    r, eff = replay(b, make(AnthropicClearToolUses, trigger=1000, keep=1))
    assert r.detail["input_total"] == [10_100 + 50 + 10 + 1_050,
                                       10_100 + 1_050 + 60 + 1_050,
                                       10_100 + 1_050 + 60 + 60 + 1_050]
    assert eff[first] == 1000 and eff[second] == 10 and r.figures["reread_restored"] == 1
    off, eff = replay(b, make(AnthropicClearToolUses, trigger=1000, keep=1, reread_cost=False))
    assert off.detail["input_total"][1:] == [10_100 + 60 + 60 + 1_050, 10_100 + 60 + 60 + 60 + 1_050]
    assert eff[first] == 10


def test_the_lossy_policies_price_rereads_by_default():
    for cls in (JpCompaction, AnthropicClearToolUses, ClaudeCodeMicrocompact):
        assert cls.Params().reread_cost is True
        assert "reread_cost" in (cls.__module__ and __import__(cls.__module__, fromlist=["x"]).__doc__)
    for cls in (Supersede, CupelDedup, DevboyLru, JpResourceDedup):
        assert not hasattr(cls.Params(), "reread_cost")


# --- 4. thinking blocks the provider does not keep -----------------------------------------------

@pytest.mark.parametrize("model,keeps", [
    ("claude-opus-4-1-20250805", False), ("claude-opus-4-20250514", False), ("claude-sonnet-4-20250514", False),
    ("claude-sonnet-4-5-20250929", False), ("claude-haiku-4-5-20251001", False), ("claude-3-7-sonnet-20250219", False),
    ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", False),
    ("claude-opus-4-5-20251101", True), ("claude-opus-4-6", True), ("claude-opus-4-8", True),
    ("claude-sonnet-4-6", True), ("claude-opus-5", True), ("claude-mythos-preview", True), ("gpt-5-codex", True),
])
def test_which_models_keep_earlier_turns_thinking(model, keeps):
    assert keeps_thinking(model) is keeps


def thinking_trace(model):
    b = builder(model)
    b.block(100, "user_text", turn=1)
    th = b.block(2000, "thinking")
    b.block(100, "assistant_text")
    b.request(ts=0)
    b.block(100, "user_text", turn=2)
    b.request(ts=MIN)
    return b, th


@pytest.mark.parametrize("model", [OLD_OPUS, OLD_SONNET])
def test_strip_reasoning_saves_nothing_the_provider_already_dropped(model):
    b, th = thinking_trace(model)
    base, _ = replay(b, build("noop"))
    r, eff = replay(b, make(JpCompaction, strategies="strip-reasoning", trigger_turn=2))
    assert eff[th] == 2000
    assert r.figures["step:strip-reasoning:tokens"] == 0 and r.figures["blocks_changed"] == 0
    assert r.figures["cost"] == base.figures["cost"]
    assert r.detail["input_total"] == base.detail["input_total"] == [12_200, 12_300]


def test_strip_reasoning_still_saves_for_models_that_keep_thinking():
    b, th = thinking_trace(NEW_OPUS)
    r, eff = replay(b, make(JpCompaction, strategies="strip-reasoning", trigger_turn=2))
    assert eff[th] == 0 and r.figures["step:strip-reasoning:tokens"] == 2000
    assert r.detail["input_total"] == [12_200, 10_300]


def test_summarize_leaves_dropped_thinking_out_of_what_it_replaces():
    b, th = thinking_trace(OLD_OPUS)
    r, eff = replay(b, make(JpCompaction, strategies="summarize", trigger_turn=2, summary_tokens=50))
    # the summary replaces the user text (block 0) and the assistant text; the thinking stays
    # (the provider no longer sees it; the anchoring nets it out as for the baseline)
    assert eff == [50, 2000, 0, 100]
    assert r.figures["step:summarize:tokens"] == 150
    b, th = thinking_trace(NEW_OPUS)
    _, eff = replay(b, make(JpCompaction, strategies="summarize", trigger_turn=2, summary_tokens=50))
    assert eff == [50, 0, 0, 100]


def test_cupel_leaves_thinking_alone_where_the_provider_drops_it():
    for model, removed in ((OLD_SONNET, False), (NEW_OPUS, True)):
        b = builder(model)
        b.block(100, "user_text", turn=1)
        first = b.block(500, "thinking", content="same")
        second = b.block(500, "thinking", content="same")
        b.request(ts=0)
        _, eff = replay(b, make(CupelDedup))
        assert eff[first] + eff[second] == (500 if removed else 1000), model
