"""supersede (seed 004, ai-experiments deduplicators): the seed's examples and hand-computed replays."""

import pytest

from replay.model.cache import CacheConfig
from replay.model.costs import PriceTable
from replay.engine import ReplayOptions, replay_session
from replay.policies.base import ParamError
from replay.policies.supersede import Supersede, covers

from trace_builder import MIN, TraceBuilder

PRICES = PriceTable(overrides={"m": {"input": 3, "cache_write_5m": 3.75, "cache_write_1h": 6, "cache_read": 0.3,
                                      "output": 15, "min_cacheable": 1024}})


def builder(overhead=10_000):
    return TraceBuilder(overhead=overhead, models=("m",))


def spy(**params):
    """A Supersede that records the block sizes each request sees."""
    class Spy(Supersede):
        def before_request(self, ctx, k):
            super().before_request(ctx, k)
            self.sizes.append(list(ctx.eff[:ctx.stream.r_pos[k]]))
    p = Spy(Supersede.make_params(params))
    p.sizes = []
    return p


def run(b, policy, **cache):
    session, vocab = b.build()
    return replay_session(session, vocab, policy, ReplayOptions(CacheConfig(**cache), PRICES, detail=True))


def test_seed_write_file_example():
    # Message 5: write_file("foo.py") returns the content; message 12 writes foo.py again:
    # message 5's result is stale and trimmed (~50 tokens saved).
    b = builder()
    b.block(300, "user_text")
    first = b.tool_call("Write", 50, resource="foo.py", args="hello-pass")
    b.request(ts=0)
    b.block(100, "assistant_text")
    b.request(ts=MIN)
    second = b.tool_call("Write", 60, resource="foo.py", args="hello-print")
    b.request(ts=2 * MIN)
    p = spy()
    r = run(b, p)
    assert p.sizes[1][first] == 50              # nothing newer yet
    assert p.sizes[2][first] == 0               # hidden, not deleted: the block keeps its place
    assert p.sizes[2][second] == 60
    assert p.sizes[2][first - 1] == 50          # the call (tool_use) stays, only the result is hidden
    assert r.figures["tokens_saved"] == 50 and r.figures["blocks_changed"] == 1


def _listings(args1, args2, **params):
    b = builder()
    b.block(300, "user_text")
    old = b.tool_call("LS", 400, resource="src", args=args1)
    b.request(ts=0)
    b.tool_call("LS", 500, resource="src", args=args2)
    b.request(ts=MIN)
    p = spy(**params)
    run(b, p)
    return p.sizes[-1][old]


def test_seed_list_folder_example():
    # list_folder("src/", ["*.py"]) then list_folder("src/", ["*.py", "*.md"]): the newer one is
    # more inclusive. The trace only has an argument hash, so by default only identical arguments
    # (provably equal filters and recursion) supersede; list_rule="location" accepts the example.
    assert _listings("src *.py", "src *.py *.md") == 400
    assert _listings("src *.py", "src *.py *.md", list_rule="location") == 0
    assert _listings("src *.py", "src *.py") == 0
    assert _listings("src *.py", "src *.py", list_rule="off") == 400


def test_listing_of_another_directory_or_tool_does_not_supersede():
    b = builder()
    b.block(300, "user_text")
    old = b.tool_call("LS", 400, resource="src", args="a")
    b.tool_call("LS", 400, resource="src/sub", args="a")
    b.tool_call("Glob", 400, resource="src", args="a")
    b.request(ts=0)
    p = spy(list_rule="location")
    run(b, p)
    assert p.sizes[0][old] == 400


def _reads(first, second, **params):
    b = builder()
    b.block(300, "user_text")
    old = b.tool_call("Read", 1000, resource="/a.py", lines=first, args=f"a{first}")
    new = b.tool_call("Read", 800, resource="/a.py", lines=second, args=f"a{second}")
    b.request(ts=0)
    p = spy(**params)
    run(b, p)
    return p.sizes[0][old], p.sizes[0][new]


def test_read_supersedes_older_read_of_the_same_location():
    # the source rule compares locations only (ai-experiments' read has no line range)
    assert _reads((1, 100), (300, 310)) == (0, 800)
    assert _reads(None, (2, 5)) == (0, 800)


def test_read_range_covering_and_exact():
    assert _reads((2, 5), (1, 10), read_range="covering") == (0, 800)      # (1,10) covers (2,5)
    assert _reads((1, 10), (2, 5), read_range="covering") == (1000, 800)   # but not the reverse
    assert _reads((2, 5), None, read_range="covering") == (0, 800)         # whole file covers all
    assert _reads(None, (2, 5), read_range="covering") == (1000, 800)
    assert _reads((2, 5), (2, 5), read_range="exact") == (0, 800)
    assert _reads((2, 5), (1, 10), read_range="exact") == (1000, 800)
    assert covers(1, -1, 5, 9) and covers(1, -1, 5, -1) and not covers(1, 10, 5, -1)


def test_read_of_another_file_does_not_supersede():
    b = builder()
    b.block(300, "user_text")
    old = b.tool_call("Read", 1000, resource="/a.py")
    b.tool_call("Read", 1000, resource="/b.py")
    b.request(ts=0)
    p = spy()
    run(b, p)
    assert p.sizes[0][old] == 1000


def test_write_pieces_are_superseded_but_supersede_only_with_return_content():
    b = builder()
    b.block(300, "user_text")
    read = b.tool_call("Read", 1000, resource="/a.py")
    edit = b.tool_call("Edit", 70, resource="/a.py", args="e1")
    b.request(ts=0)
    b.tool_call("Read", 1100, resource="/a.py", args="again")
    b.request(ts=MIN)
    p = spy()
    run(b, p)
    assert p.sizes[0][read] == 1000             # Edit returns a snippet: it supersedes nothing
    assert p.sizes[1][read] == 0 and p.sizes[1][edit] == 0   # the newer read supersedes both
    p = spy(pieces_return_content=True)
    run(b, p)
    assert p.sizes[0][read] == 0 and p.sizes[0][edit] == 70


def test_pinned_results_are_never_hidden_but_still_supersede():
    b = builder()
    b.block(300, "user_text")
    w = b.tool_call("Write", 40, resource="/a.py", args="w")
    r1 = b.tool_call("Read", 1000, resource="/a.py", args="r1")
    b.tool_call("Read", 1000, resource="/a.py", args="r2")
    b.request(ts=0)
    p = spy(pinned_tools=("Read",))
    run(b, p)
    assert p.sizes[0][r1] == 1000 and p.sizes[0][w] == 0


def test_failed_call_supersedes_only_if_asked():
    b = builder()
    b.block(300, "user_text")
    old = b.tool_call("Read", 1000, resource="/a.py", args="r1")
    b.tool_call("Read", 20, resource="/a.py", args="r2", is_error=True)
    b.request(ts=0)
    p = spy()
    run(b, p)
    assert p.sizes[0][old] == 0                  # the source does not look at errors
    p = spy(error_supersedes=False)
    run(b, p)
    assert p.sizes[0][old] == 1000


def test_search_results_are_not_handled():
    b = builder()
    b.block(300, "user_text")
    old = b.tool_call("Grep", 1000, resource="/src", args="g")
    b.tool_call("Grep", 1000, resource="/src", args="g")
    b.request(ts=0)
    p = spy(list_rule="location")
    run(b, p)
    assert p.sizes[0][old] == 1000


def test_trigger_tokens_waits_for_the_full_prompt_to_exceed_it():
    b = builder()
    b.block(300, "user_text")
    old = b.tool_call("Read", 1000, resource="/a.py", args="r1")
    b.tool_call("Read", 1000, resource="/a.py", args="r2")
    b.request(ts=0)                             # full = 10,000 + 300 + 2 x 1,050 = 12,400
    b.block(700, "user_text")
    b.request(ts=MIN)                           # full = 13,100 > 13,000
    b.block(10, "user_text")
    b.request(ts=2 * MIN)
    p = spy(trigger_tokens=13_000)
    run(b, p)
    assert p.sizes[0][old] == 1000
    assert p.sizes[1][old] == 0 and p.sizes[2][old] == 0   # compared on the unhidden prompt: stays hidden


def test_hidden_tokens_placeholder():
    b = builder()
    b.block(300, "user_text")
    old = b.tool_call("Read", 1000, resource="/a.py", args="r1")
    b.tool_call("Read", 1000, resource="/a.py", args="r2")
    b.request(ts=0)
    p = spy(hidden_tokens=12)
    r = run(b, p)
    assert p.sizes[0][old] == 12 and r.figures["tokens_saved"] == 988


def test_trimmed_reread_counts_only_hidden_content_no_newer_read_holds():
    b = builder()
    b.block(300, "user_text")
    b.tool_call("Read", 1000, resource="/a.py", lines=(1, 50), args="r1")
    b.tool_call("Read", 1000, resource="/a.py", lines=(60, 90), args="r2")
    b.request(ts=0)                             # r1 hidden (location rule): lines 1-50 are gone
    b.tool_call("Read", 1000, resource="/b.py", args="b")
    b.request(ts=MIN)
    assert run(b, Supersede()).figures["trimmed_reread"] == 0
    b.tool_call("Read", 1000, resource="/a.py", args="r3")   # the agent reads /a.py again (whole file)
    b.request(ts=2 * MIN)                       # r2 hidden now, restated by r3; r1 counted
    b.tool_call("Read", 1000, resource="/a.py", args="r4")
    b.request(ts=3 * MIN)                       # r3 hidden, restated by r4: not counted
    assert run(b, Supersede()).figures["trimmed_reread"] == 1
    # under the covering rule only restated results are hidden: nothing is lost, nothing counted
    assert run(b, Supersede(Supersede.make_params({"read_range": "covering"}))).figures["trimmed_reread"] == 0


def test_compaction_partition_resets_supersession():
    b = builder()
    b.block(300, "user_text")
    b.tool_call("Read", 1000, resource="/a.py", args="r1")
    b.request(ts=0)
    b.compact(500)
    new = b.tool_call("Read", 1000, resource="/a.py", args="r2")
    b.request(ts=MIN)
    p = spy()
    r = run(b, p)
    assert p.sizes[1][new] == 1000 and r.figures["blocks_changed"] == 0


def test_end_to_end_hiding_busts_the_cache_and_lowers_input():
    b = builder()
    b.block(500, "user_text")
    b.request(ts=0)                             # 10,500
    b.tool_call("Read", 3000, resource="/a.py", args="r1")
    b.request(ts=MIN)                           # 13,550
    b.tool_call("Read", 3000, resource="/a.py", args="r2")
    b.request(ts=2 * MIN)                       # block 2 (3,000) hidden
    base = run(b, Supersede(Supersede.Params(trigger_tokens=20_000)), ttl="5m")
    r = run(b, Supersede(), ttl="5m")
    assert base.detail["input_total"] == [10_500, 13_550, 16_600]    # below the trigger: the noop figures
    assert base.detail["cache_read"] == [0, 10_500, 13_550] and base.figures["busts"] == 0
    assert r.detail["input_total"] == [10_500, 13_550, 13_600]
    # the edit at block 2 invalidates the 13,550 entry (boundary 3): only the 10,500 prefix is read
    assert r.detail["cache_read"] == [0, 10_500, 10_500]
    assert r.detail["cache_write_5m"] == [10_500, 3_050, 3_100]
    assert r.figures["busts"] == 1 and r.figures["bust_tokens"] == 3_050
    assert r.figures["tokens_saved"] == 3_000
    assert r.figures["input_total"] < base.figures["input_total"]


def test_params():
    with pytest.raises(ParamError, match="did you mean 'trigger_tokens'"):
        Supersede.make_params({"trigger_token": 1})
    with pytest.raises(ParamError, match="nope"):
        Supersede.make_params({"nope": 1})
    with pytest.raises(ParamError, match="read_range"):
        Supersede.make_params({"read_range": "lines"})
    with pytest.raises(ParamError, match="list_rule"):
        Supersede.make_params({"list_rule": "wider"})
    with pytest.raises(ParamError, match=">= 0"):
        Supersede.make_params({"trigger_tokens": "-1"})
    with pytest.raises(ParamError, match="more than one role"):
        Supersede.make_params({"write_tools": "Write,Read"})
    p = Supersede.make_params({"pinned_tools": "Read, Glob", "trigger_tokens": "100000"})
    assert p.pinned_tools == ("Read", "Glob") and p.trigger_tokens == 100_000
    assert Supersede.retroactive() and not Supersede.insert_time()
