"""claude_code_microcompact: idle gap > 60 min clears all but the 5 most recent clearable tool results."""

import pytest

from replay.model.cache import CacheConfig
from replay.model.costs import PriceTable
from replay.engine import ReplayOptions, replay_session
from replay.policies.base import ParamError
from replay.policies.claude_code_microcompact import ClaudeCodeMicrocompact

from trace_builder import MIN, TraceBuilder

PRICES = PriceTable(overrides={"m": {"input": 3, "cache_write_5m": 3.75, "cache_write_1h": 6, "cache_read": 0.3,
                                      "output": 15, "min_cacheable": 1024}})
Cls = ClaudeCodeMicrocompact


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


def session(gap_min, n_calls=7, tool="Read", user_at=None):
    """A user prompt, n tool calls at 1 min, the assistant's answer at 2 min, the next prompt
    ``gap_min`` minutes after that answer."""
    b = builder()
    b.block(500, "user_text", ts=0)
    b.request(ts=0)
    res = [b.tool_call(tool, 1000, resource=f"/f{i}", args=f"a{i}", ts=MIN) for i in range(n_calls)]
    b.request(ts=2 * MIN)
    b.block(20, "assistant_text", ts=2 * MIN)
    t = 2 * MIN + gap_min * MIN if user_at is None else user_at
    b.block(100, "user_text", ts=t)
    b.request(ts=t + 1000)
    return b, res


def test_idle_gap_over_60_minutes_clears_all_but_the_5_most_recent():
    b, res = session(61)
    p = spy()
    r = run(b, p)
    assert [p.sizes[2][i] for i in res] == [7, 7, 1000, 1000, 1000, 1000, 1000]
    assert [p.sizes[2][i - 1] for i in res] == [50] * 7          # the tool_use blocks stay
    assert r.figures["tokens_saved"] == 2 * 993 and r.figures["blocks_changed"] == 2


def test_gap_of_60_minutes_or_less_changes_nothing():
    for gap in (60, 30):
        b, _ = session(gap)
        assert run(b, Cls()).figures["blocks_changed"] == 0


def test_gap_is_measured_from_the_last_assistant_message():
    # the previous request was long ago, but the assistant answered 10 minutes before the prompt
    b = builder()
    b.block(500, "user_text", ts=0)
    b.request(ts=0)
    res = [b.tool_call("Bash", 1000, args=f"c{i}", ts=MIN) for i in range(6)]
    b.request(ts=2 * MIN)
    b.block(20, "assistant_text", ts=100 * MIN)
    b.block(100, "user_text", ts=110 * MIN)
    b.request(ts=110 * MIN)
    p = spy()
    run(b, p)
    assert p.sizes[2][res[0]] == 1000
    p = spy(idle_minutes=5)
    run(b, p)
    assert p.sizes[2][res[0]] == 7


def test_only_file_shell_search_web_tools_are_cleared_or_counted():
    b = builder()
    b.block(500, "user_text", ts=0)
    b.request(ts=0)
    todo = b.tool_call("TodoWrite", 1000, args="t", ts=MIN)
    mcp = b.tool_call("mcp__playwright__browser_snapshot", 1000, args="s", ts=MIN)
    ls = b.tool_call("LS", 1000, resource="/d", args="l", ts=MIN)
    kinds = [b.tool_call(t, 1000, resource="/f", args=t, ts=MIN)
             for t in ("Read", "Edit", "Write", "Bash", "Grep", "Glob", "WebFetch", "WebSearch")]
    b.block(20, "assistant_text", ts=2 * MIN)
    b.block(100, "user_text", ts=90 * MIN)
    b.request(ts=90 * MIN)
    p = spy()
    run(b, p)
    assert p.sizes[1][todo] == 1000 and p.sizes[1][mcp] == 1000 and p.sizes[1][ls] == 1000
    assert [p.sizes[1][i] for i in kinds] == [7, 7, 7, 1000, 1000, 1000, 1000, 1000]


def test_cleared_results_stay_cleared_and_a_later_gap_clears_more():
    b, res = session(61)
    more = [b.tool_call("Read", 1000, resource=f"/g{i}", args=f"g{i}", ts=70 * MIN) for i in range(2)]
    b.request(ts=71 * MIN)                       # no gap: nothing new cleared, old ones stay cleared
    b.block(20, "assistant_text", ts=72 * MIN)
    b.block(100, "user_text", ts=200 * MIN)
    b.request(ts=200 * MIN)
    p = spy()
    run(b, p)
    assert [p.sizes[3][i] for i in res] == [7, 7] + [1000] * 5
    assert [p.sizes[4][i] for i in res + more] == [7] * 4 + [1000] * 5


def test_end_to_end_after_expiry_there_is_nothing_to_bust():
    b, _ = session(68)
    base = run(b, Cls(Cls.make_params({"idle_minutes": 1_000})), ttl="5m")
    r = run(b, Cls(), ttl="5m")
    # 10,000 + 500 + 7 x 1,050 + 20 + 100 = 17,970; two results cleared: -1,986
    assert base.detail["input_total"] == [10_500, 17_850, 17_970]
    assert r.detail["input_total"] == [10_500, 17_850, 15_984]
    # after 68 idle minutes the 5-minute entries are gone: no read either way, no bust counted
    assert base.detail["cache_read"][2] == 0 and r.detail["cache_read"][2] == 0
    assert r.figures["busts"] == 0
    assert r.figures["cost"] < base.figures["cost"]


def test_end_to_end_with_a_live_cache_the_clear_busts():
    # 1-hour TTL and a 30-minute threshold: the prefix is still cached when it is rewritten
    b, _ = session(38)
    base = run(b, Cls(), ttl="1h")
    r = run(b, Cls(Cls.make_params({"idle_minutes": 30})), ttl="1h")
    assert base.detail["cache_read"] == [0, 10_500, 17_850]
    assert r.detail["input_total"] == [10_500, 17_850, 15_984]
    # block 2 changed: the 17,850 entry (boundary 15) is invalid, the 10,500 one (boundary 1) is read
    assert r.detail["cache_read"] == [0, 10_500, 10_500]
    assert r.detail["cache_write_1h"] == [10_500, 7_350, 5_484]
    assert r.figures["busts"] == 1 and r.figures["bust_tokens"] == 17_850 - 10_500


def test_trimmed_reread():
    b, res = session(61)
    b.tool_call("Read", 1000, resource="/f0", args="again", ts=64 * MIN)
    b.request(ts=65 * MIN)
    assert run(b, Cls()).figures["trimmed_reread"] == 1


def test_params():
    with pytest.raises(ParamError, match="did you mean 'keep_recent'"):
        Cls.make_params({"keep_recnt": 5})
    with pytest.raises(ParamError, match="nope"):
        Cls.make_params({"nope": 1})
    with pytest.raises(ParamError, match="idle_minutes"):
        Cls.make_params({"idle_minutes": "-1"})
    with pytest.raises(ParamError, match="keep_recent"):
        Cls.make_params({"keep_recent": -2})
    p = Cls.Params()
    assert (p.idle_minutes, p.keep_recent, p.placeholder_tokens) == (60, 5, 7)
    assert Cls.make_params({"tools": "Read,Bash"}).tools == ("Read", "Bash")
