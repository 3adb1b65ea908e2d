"""server_compaction and claude_code_autocompact: compaction at a trigger, with the summarization
request priced, hand-computed; `ctxreplay policies --json` lists the issue-28 policies."""

import json

import pytest
from click.testing import CliRunner

from replay.cli.main import main
from replay.engine import ReplayOptions, replay_session
from replay.model.cache import CacheConfig
from replay.model.costs import PriceTable
from replay.policies import build
from replay.policies.base import ParamError
from replay.policies.claude_code_autocompact import ClaudeCodeAutocompact
from replay.policies.server_compaction import ServerCompaction

from trace_builder import TraceBuilder

# $ per million tokens: input 3, read 0.30, output 15
PRICES = PriceTable(overrides={"m": {"input": 3, "cache_write_5m": 3.75, "cache_write_1h": 6, "cache_read": 0.3,
                                      "output": 15, "min_cacheable": 1024}})


def spy(cls, **params):
    class Spy(cls):
        def before_request(self, ctx, k):
            super().before_request(ctx, k)
            self.sizes.append(list(ctx.eff[:ctx.stream.r_pos[k]]))
    p = Spy(cls.make_params(params))
    p.sizes = []
    return p


def stream(n):
    """Overhead 10,000 and a 500-token prompt (request 0: 10,500), then n tool calls of 50 + 10,000
    tokens with a request after each, 20 s apart: request j sends 10,500 + 10,050 j before any policy."""
    b = TraceBuilder(overhead=10_000, models=("m",))
    b.block(500, "user_text", ts=0)
    b.request(ts=0)
    for i in range(n):
        b.tool_call("Bash", 10_000, args=f"c{i}", ts=20_000 * (i + 1))
        b.request(ts=20_000 * (i + 1))
    return b


def run(b, policy):
    session, vocab = b.build()
    return replay_session(session, vocab, policy, ReplayOptions(CacheConfig(ttl="5m"), PRICES, detail=True))


def test_server_compaction_fires_past_the_trigger_and_prices_the_summary_request():
    b = stream(5)
    p = spy(ServerCompaction, trigger=50_000)
    r = run(b, p)
    f = r.figures
    # request 4 would send 10,500 + 4 x 10,050 = 50,700 > 50,000: it compacts first
    assert f["compactions"] == 1 and f["summary_requests"] == 1
    # the summary request: the prompt (50,700) + 95 instruction tokens; request 3's 40,650 read
    # from the cache, 10,145 uncached; 3,500 out
    assert f["summary_input"] == 50_795 and f["summary_output"] == 3_500
    cost = (10_145 * 3 + 40_650 * 0.3 + 3_500 * 15) / 1e6           # $0.09513
    assert f["summary_cost"] == pytest.approx(cost) == pytest.approx(0.09513)
    # its dollars are part of the run's cost beside the agent's own requests
    assert f["cost"] - sum(r.detail["cost"]) == pytest.approx(cost)
    # from request 4 on the conversation is the summary (at the first block) and what follows
    assert p.sizes[4][:9] == [3_500.0] + [0.0] * 8
    assert r.detail["input_total"] == [10_500, 20_550, 30_600, 40_650, 13_500, 23_550]
    assert f["input_total"] == sum(r.detail["input_total"]) + 50_795
    assert f["context_tokens"] == sum(r.detail["input_total"])        # the summary call is not context
    assert f["output"] == 6 * 100 + 3_500
    # the rewrite busts the cache after the system prompt once
    assert f["busts"] == 1


def test_a_second_firing_folds_the_old_summary_into_a_new_one():
    b = stream(9)
    p = spy(ServerCompaction, trigger=50_000)
    r = run(b, p)
    # after the first summary: 13,500 + 10,050 per call; request 8 would send 53,700
    assert r.figures["compactions"] == 2
    assert r.detail["input_total"][7:] == [43_650, 13_500, 23_550]
    assert p.sizes[8][0] == 3_500.0 and set(p.sizes[8][1:17]) == {0.0}
    first = (10_145 * 3 + 40_650 * 0.3 + 3_500 * 15) / 1e6
    second = (10_145 * 3 + 43_650 * 0.3 + 3_500 * 15) / 1e6         # request 7's 43,650 cached
    assert r.figures["summary_cost"] == pytest.approx(first + second)
    assert r.figures["busts"] == 2


def test_an_uncached_summary_request_pays_the_whole_input():
    r = run(stream(5), ServerCompaction(ServerCompaction.make_params({"trigger": 50_000, "summary_cached": False})))
    assert r.figures["summary_cost"] == pytest.approx((50_795 * 3 + 3_500 * 15) / 1e6)     # $0.204885


def test_past_the_previous_requests_ttl_the_summary_request_reads_nothing():
    # request 4 comes 6 minutes after request 3, which wrote 5-minute cache: the prefix expired
    b = TraceBuilder(overhead=10_000, models=("m",))
    b.block(500, "user_text", ts=0)
    b.request(ts=0)
    for i in range(4):
        t = 20_000 * (i + 1) + (360_000 if i == 3 else 0)
        b.tool_call("Bash", 10_000, args=f"c{i}", ts=t)
        b.request(ts=t, w5=1)
    r = run(b, ServerCompaction(ServerCompaction.make_params({"trigger": 50_000})))
    assert r.figures["summary_cost"] == pytest.approx((50_795 * 3 + 3_500 * 15) / 1e6)
    # the same gap after a request that wrote 1-hour cache: still warm
    for req in b.requests:
        req["r_w5"], req["r_w1h"] = 0, 1
    r = run(b, ServerCompaction(ServerCompaction.make_params({"trigger": 50_000})))
    assert r.figures["summary_cost"] == pytest.approx((10_145 * 3 + 40_650 * 0.3 + 3_500 * 15) / 1e6)


def test_below_the_trigger_nothing_changes():
    b = stream(5)
    base = run(b, build("noop")).figures
    for policy in (build("server_compaction"), build("claude_code_autocompact")):
        f = run(b, policy).figures
        assert f["compactions"] == 0 and f["summary_requests"] == 0 and f["summary_cost"] == 0
        assert f["cost"] == base["cost"] and f["input_total"] == base["input_total"]


def test_autocompact_fires_at_the_window_minus_the_reserve_with_the_same_pricing():
    assert ClaudeCodeAutocompact().trigger(None, 0) == 167_000
    r = run(stream(5), ClaudeCodeAutocompact(ClaudeCodeAutocompact.make_params(
        {"window_tokens": 60_000, "reserve_tokens": 10_000, "summary_tokens": 3_500})))
    assert r.figures["compactions"] == 1
    assert r.figures["summary_cost"] == pytest.approx((10_145 * 3 + 40_650 * 0.3 + 3_500 * 15) / 1e6)
    assert r.detail["input_total"][4] == 13_500


def test_bad_parameters_are_named():
    with pytest.raises(ParamError, match="50,000"):
        ServerCompaction.make_params({"trigger": 40_000})
    with pytest.raises(ParamError, match="reserve_tokens"):
        ClaudeCodeAutocompact.make_params({"window_tokens": 1000, "reserve_tokens": 1000})
    with pytest.raises(ParamError, match="did you mean 'trigger'"):
        build("server_compaction", {"triger": 60_000})


def test_policies_json_lists_the_issue_28_policies_with_sources_and_defaults():
    res = CliRunner().invoke(main, ["policies", "--json"])
    assert res.exit_code == 0, res.output
    got = {p["name"]: p for p in json.loads(res.output)}
    want = {
        "observation_masking": ({"window": 10, "polling": 0, "placeholder_tokens": 9.0}, "LastNObservations"),
        "server_compaction": ({"trigger": 150_000, "summary_tokens": 3_500.0, "instruction_tokens": 95.0},
                              "compact_20260112"),
        "claude_code_autocompact": ({"window_tokens": 200_000, "reserve_tokens": 33_000, "summary_tokens": 2_792.0},
                                    "compact_boundary"),
    }
    for name, (defaults, source) in want.items():
        params = {p["name"]: p["default"] for p in got[name]["params"]}
        assert {k: params[k] for k in defaults} == defaults
        assert source in got[name]["source"]
        assert got[name]["retroactive"] is True
