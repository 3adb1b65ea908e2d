"""anthropic_clear_tool_uses (clear_tool_uses_20250919): keep/trigger/exclude/clear_at_least and replays."""

import pytest

from replay.model.cache import CacheConfig
from replay.model.costs import PriceTable
from replay.engine import ReplayOptions, replay_session
from replay.policies.anthropic_clear_tool_uses import AnthropicClearToolUses
from replay.policies.base import ParamError

from trace_builder import MIN, TraceBuilder

PRICES = PriceTable(overrides={"m": {"input": 3, "cache_write_5m": 3.75, "cache_write_1h": 6, "cache_read": 0.3,
                                      "output": 15, "min_cacheable": 1024}})
Cls = AnthropicClearToolUses


def builder(overhead=10_000):
    return TraceBuilder(overhead=overhead, models=("m",))


def spy(**params):
    class Spy(Cls):
        def before_request(self, ctx, k):
            super().before_request(ctx, k)
            self.sizes.append(list(ctx.eff[:ctx.stream.r_pos[k]]))
    p = Spy(Cls.make_params(params))
    p.sizes = []
    return p


def run(b, policy, **cache):
    session, vocab = b.build()
    return replay_session(session, vocab, policy, ReplayOptions(CacheConfig(**cache), PRICES, detail=True))


def calls(b, n, tokens=1000, tool="Read"):
    return [b.tool_call(tool, tokens, resource=f"/f{len(b.blocks)}", args=f"a{len(b.blocks)}") for _ in range(n)]


def test_defaults_are_the_documented_ones():
    p = Cls.Params()
    assert (p.trigger, p.keep, p.clear_at_least, p.exclude_tools, p.clear_tool_inputs) == (100_000, 3, None, (), False)


def test_clears_all_but_the_three_most_recent_tool_results_oldest_first():
    b = builder()
    b.block(500, "user_text")
    res = calls(b, 5)
    b.request(ts=0)                              # 10,000 + 500 + 5 x 1,050 = 15,750
    p = spy(trigger=15_000)
    r = run(b, p)
    assert [p.sizes[0][i] for i in res] == [10, 10, 1000, 1000, 1000]
    assert [p.sizes[0][i - 1] for i in res] == [50] * 5           # tool inputs kept by default
    assert r.figures["tokens_saved"] == 2 * 990
    p = spy(trigger=15_000, keep=1)
    run(b, p)
    assert [p.sizes[0][i] for i in res] == [10, 10, 10, 10, 1000]


def test_below_or_at_the_trigger_nothing_is_cleared():
    b = builder()
    b.block(500, "user_text")
    calls(b, 5)
    b.request(ts=0)                              # 15,750
    for trigger in (15_750, 100_000):
        r = run(b, Cls(Cls.make_params({"trigger": trigger})))
        assert r.figures["blocks_changed"] == 0


def test_exclude_tools_are_never_cleared_but_count_as_tool_uses():
    b = builder()
    b.block(500, "user_text")
    a = b.tool_call("mcp__memory__view", 1000, args="m")
    c = calls(b, 4)
    b.request(ts=0)
    p = spy(trigger=1, exclude_tools="mcp__memory__view")
    run(b, p)
    assert p.sizes[0][a] == 1000
    assert [p.sizes[0][i] for i in c] == [10, 1000, 1000, 1000]


def test_clear_tool_inputs_also_clears_the_tool_use():
    b = builder()
    b.block(500, "user_text")
    res = calls(b, 4)
    b.request(ts=0)
    p = spy(trigger=1, clear_tool_inputs=True)
    run(b, p)
    assert p.sizes[0][res[0] - 1] == 10 and p.sizes[0][res[0]] == 10
    assert p.sizes[0][res[1] - 1] == 50


def test_clear_at_least_not_met_means_not_applied():
    b = builder()
    b.block(500, "user_text")
    res = calls(b, 4)
    b.request(ts=0)                              # one candidate: 990 tokens clearable
    calls(b, 1)
    b.request(ts=MIN)                            # two candidates: 1,980
    p = spy(trigger=1, clear_at_least=1_500)
    run(b, p)
    assert p.sizes[0][res[0]] == 1000
    assert p.sizes[1][res[0]] == 10 and p.sizes[1][res[1]] == 10
    p = spy(trigger=1, clear_at_least=990)
    run(b, p)
    assert p.sizes[0][res[0]] == 10


def test_at_least_mode_clears_only_the_oldest_results_reaching_the_minimum():
    b = builder()
    b.block(500, "user_text")
    res = calls(b, 5)
    b.request(ts=0)
    res += calls(b, 3)
    b.request(ts=MIN)
    p = spy(trigger=1, keep=1, clear_at_least=1_500, clear_mode="at_least")
    r = run(b, p)
    # 990 + 990 >= 1,500: the two oldest results, on every request (a stable prefix)
    assert [p.sizes[0][i] for i in res[:5]] == [10, 10, 1000, 1000, 1000]
    assert [p.sizes[1][i] for i in res] == [10, 10] + [1000] * 6
    assert r.figures["blocks_changed"] == 2
    p = spy(trigger=1, keep=1, clear_at_least=5_000, clear_mode="at_least")
    run(b, p)
    assert [p.sizes[0][i] for i in res[:5]] == [1000] * 5          # 4 x 990 < 5,000: not applied
    assert [p.sizes[1][i] for i in res] == [10] * 6 + [1000] * 2   # 6 x 990 >= 5,000
    p = spy(trigger=1, keep=1, clear_mode="at_least")             # no minimum: like "all"
    run(b, p)
    assert [p.sizes[1][i] for i in res] == [10] * 7 + [1000]


def test_stateless_editing_restores_when_the_strategy_stops_applying():
    b = builder()
    b.block(500, "user_text")
    res = calls(b, 4)
    b.request(ts=0)                              # 14,700
    b.block(10, "user_text")
    b.request(ts=MIN)
    session, vocab = b.build()
    session.streams[0].r_residual[1] = -1_000.0  # the provider saw less: 13,710 <= trigger
    p = spy(trigger=14_000)
    replay_session(session, vocab, p, ReplayOptions(CacheConfig(), PRICES))
    assert p.sizes[0][res[0]] == 10 and p.sizes[1][res[0]] == 1000


def test_end_to_end_each_new_tool_use_moves_the_cleared_point_and_busts():
    b = builder()
    b.block(500, "user_text")
    b.request(ts=0)                              # 10,500
    calls(b, 2)
    b.request(ts=MIN)                            # 12,600 <= 14,000
    calls(b, 2)
    b.request(ts=2 * MIN)                        # full 14,700 > 14,000: clear call 1 (block 2)
    calls(b, 1)
    b.request(ts=3 * MIN)                        # full 15,750: clear call 2 (block 4) as well
    base = run(b, Cls(), ttl="5m")               # the default trigger is far away: noop figures
    r = run(b, Cls(Cls.make_params({"trigger": 14_000})), ttl="5m")
    assert base.detail["input_total"] == [10_500, 12_600, 14_700, 15_750] and base.figures["busts"] == 0
    assert r.detail["input_total"] == [10_500, 12_600, 13_710, 13_770]
    assert r.detail["cache_read"] == [0, 10_500, 10_500, 10_500]
    assert r.detail["cache_write_5m"] == [10_500, 2_100, 3_210, 3_270]
    # request 2 loses the 12,600 entry (boundary 5 > block 2), request 3 the 13,710 one (boundary 9 > 4)
    assert r.figures["busts"] == 2 and r.figures["bust_tokens"] == (12_600 - 10_500) + (13_710 - 10_500)
    assert r.figures["tokens_saved"] == 2 * 990
    assert r.figures["input_total"] < base.figures["input_total"]


def test_trimmed_reread():
    b = builder()
    b.block(500, "user_text")
    b.tool_call("Read", 1000, resource="/a", args="a")
    calls(b, 3)
    b.request(ts=0)                              # /a cleared
    b.tool_call("Read", 1000, resource="/a", args="a-again")
    b.request(ts=MIN)
    assert run(b, Cls(Cls.make_params({"trigger": 1}))).figures["trimmed_reread"] == 1


def test_params():
    with pytest.raises(ParamError, match="did you mean 'clear_at_least'"):
        Cls.make_params({"clear_atleast": 5000})
    with pytest.raises(ParamError, match="nope"):
        Cls.make_params({"nope": 1})
    with pytest.raises(ParamError, match="keep"):
        Cls.make_params({"keep": "-1"})
    with pytest.raises(ParamError, match="clear_at_least"):
        Cls.make_params({"clear_at_least": -5})
    p = Cls.make_params({"clear_at_least": "none", "exclude_tools": "memory, Task"})
    assert p.clear_at_least is None and p.exclude_tools == ("memory", "Task")
    assert Cls.make_params({"clear_at_least": "5000"}).clear_at_least == 5000
    with pytest.raises(ParamError, match="clear_mode"):
        Cls.make_params({"clear_mode": "some"})
