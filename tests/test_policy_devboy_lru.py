"""devboy_lru (seed 003, devboy format-pipeline dedup): the seed's rules and hand-computed replays."""

import pytest

from replay.model.arrays import K_TOOL_RESULT, TOOL_KIND_CODE, Session
from replay.model.cache import CacheConfig
from replay.model.costs import PriceTable
from replay.engine import ReplayOptions, replay_session
from replay.policies.base import ParamError
from replay.policies.devboy_lru import HINT_TOKENS, DevboyLru
from replay.policies.noop import Noop

from trace_builder import MIN, TraceBuilder

# Sonnet-like prices, $/Mtok: input 3, 5m write 3.75, 1h write 6, read 0.30, output 15; min cacheable 1,024.
PRICES = PriceTable(overrides={"m": {"input": 3, "cache_write_5m": 3.75, "cache_write_1h": 6, "cache_read": 0.3,
                                      "output": 15, "min_cacheable": 1024}})


def builder(**kw):
    return TraceBuilder(overhead=kw.pop("overhead", 10_000), models=("m",), **kw)


def run(b: TraceBuilder, policy=None, **cache):
    session, vocab = b.build()
    opts = ReplayOptions(CacheConfig(**{"ttl": "5m", **cache}), PRICES, detail=True)
    return replay_session(session, vocab, policy or Noop(), opts)


def devboy(**params):
    return DevboyLru(DevboyLru.make_params(params))


def replay_sizes(b: TraceBuilder, policy) -> tuple[list[float], dict]:
    """Tool-result sizes after the replay (a final request sees every block) and the figures."""
    b.request(ts=10 * MIN)
    session, vocab = b.build()
    seen = []

    class Spy(type(policy)):
        def start_stream(self, ctx):
            super().start_stream(ctx)
            seen.append(ctx)

    r = replay_session(session, vocab, Spy(policy.params), ReplayOptions(CacheConfig(ttl="5m"), PRICES))
    st, eff = session.streams[0], seen[0].eff
    return [eff[i] for i in range(st.n_blocks) if st.bkind[i] == K_TOOL_RESULT], r.figures


def sizes(b: TraceBuilder, policy) -> list[float]:
    return replay_sizes(b, policy)[0]


# --- the cache itself ------------------------------------------------------------------------

def test_repeat_becomes_a_standard_hint_end_to_end():
    # Seed, Usage: a response whose hash is cached is emitted as a reference hint instead of
    # its body; the first one is emitted normally and cached. Insert-time: no cache bust.
    b = builder()
    b.block(500, "user_text", turn=1)
    b.request(ts=0)
    b.tool_call("Read", 2000, resource="/p/a.py", content="A")
    b.request(ts=MIN)
    b.tool_call("Read", 2000, resource="/p/a.py", content="A")
    b.request(ts=2 * MIN)
    base, r = run(b), run(b, devboy())
    assert base.detail["input_total"] == [10_500, 12_550, 14_600]
    assert r.detail["input_total"] == [10_500, 12_550, 12_611]          # 2,000 -> 11 tokens
    assert r.detail["cache_read"] == [0, 10_500, 12_550]
    assert r.detail["cache_write_5m"] == [10_500, 2_050, 61]
    assert r.figures["busts"] == 0 and r.figures["bust_tokens"] == 0
    assert r.figures["hints"] == 1 and r.figures["hint_distance"] == 0
    assert r.figures["tokens_delivered"] == 500 + 50 + 2000 + 50 + 11
    assert r.figures["tokens_saved"] == 1_989 and r.figures["blocks_changed"] == 1
    assert r.figures["dangling_refs"] == 0 and r.figures["stale_refs"] == 0
    cost = (10_500 * 3.75 + 1500) + (10_500 * 0.3 + 2_050 * 3.75 + 1500) + (12_550 * 0.3 + 61 * 3.75 + 1500)
    assert r.figures["cost"] == pytest.approx(cost / 1e6)
    assert base.figures["cost"] > r.figures["cost"]


@pytest.mark.parametrize("verbosity,tokens", [("terse", 8), ("standard", 11), ("verbose", 15)])
def test_the_three_hint_forms(verbosity, tokens):
    # Seed, HintVerbosity: terse "> [ref: tc_42]" ~8, standard "..., byte-identical]" ~11 (default),
    # verbose adds the origin ~15.
    assert HINT_TOKENS[verbosity] == tokens
    b = builder()
    b.tool_call("Read", 2000, resource="/a", content="A")
    b.tool_call("Read", 2000, resource="/a", content="A")
    assert sizes(b, devboy(verbosity=verbosity)) == [2000, tokens]


def test_default_is_standard_and_capacity_five():
    p = DevboyLru.Params()
    assert p.verbosity == "standard" and p.capacity == 5 and p.min_body_chars == 200
    assert p.mutation_aware and p.reset_on_compaction and p.cacheable == "all"
    assert DevboyLru.insert_time() and not DevboyLru.retroactive()


def _results(b, contents, tool="Bash"):
    for c in contents:
        b.tool_call(tool, 1000, content=c)


def test_lru_evicts_the_least_recent_when_full():
    # Seed, Bounded LRU: with capacity 2, after one, two, three only two and three are cached.
    b = builder()
    _results(b, ["one", "two", "three", "two", "one"])
    assert sizes(b, devboy(capacity=2)) == [1000, 1000, 1000, 11, 1000]


def test_a_hit_moves_the_entry_to_most_recent():
    # DESIGN 4: a hit moves the entry to most-recent. A, B, A(hit: A is now newest), C evicts B
    # (not A), so A hits again and B misses.
    b = builder()
    _results(b, ["A", "B", "A", "C", "A", "B"])
    assert sizes(b, devboy(capacity=2)) == [1000, 1000, 11, 1000, 11, 1000]


def test_fifo_eviction_does_not_refresh_on_a_hit():
    # devboy's published simulator (scripts/simulate_paper2_pipeline.py): a FIFO. A, B, A (hit:
    # A stays oldest), C evicts A (not B), so A misses (re-inserted, evicting B) and B misses.
    b = builder()
    _results(b, ["A", "B", "A", "C", "A", "B"])
    assert sizes(b, devboy(capacity=2, eviction="fifo")) == [1000, 1000, 11, 1000, 1000, 1000]


def test_fifo_with_verbose_hints_is_the_simulator_setting_and_lru_stays_default():
    # The simulator's setting: FIFO of 5, 15-token hints. Defaults unchanged: LRU, 11 tokens.
    assert DevboyLru.make_params({}).eviction == "lru"
    b = builder()
    _results(b, ["A", "B", "C", "D", "E", "A", "F", "A"])
    # FIFO(5): A hits at 6th (no refresh); F evicts A; the last A misses.
    assert sizes(b, devboy(eviction="fifo", verbosity="verbose")) == [1000] * 5 + [15, 1000, 1000]
    # LRU(5): the hit refreshes A, F evicts B instead; the last A hits.
    assert sizes(b, devboy()) == [1000] * 5 + [11, 1000, 11]


def test_default_capacity_five_and_unbounded_extension():
    b = builder()
    _results(b, ["A", "1", "2", "3", "4", "5", "A"])    # five newer entries push A out of an LRU of 5
    assert sizes(b, devboy())[-1] == 1000
    for cap in (None, 0):
        b = builder()
        _results(b, ["A", "1", "2", "3", "4", "5", "A"])
        assert sizes(b, devboy(capacity=cap))[-1] == 11
    b = builder()
    _results(b, ["A", "1", "2", "3", "4", "A"])         # four newer: A still cached
    assert sizes(b, devboy())[-1] == 11


def test_min_body_chars_uses_the_byte_size():
    # Pipeline: a body shorter than min_body_chars (200) passes through and is not cached.
    b = builder()
    for _ in range(2):
        b.tool_call("Bash", 60, content="short", use_tokens=10)
        b.blocks[-1]["nbytes"] = 199
    for _ in range(2):
        b.tool_call("Bash", 60, content="exact", use_tokens=10)
        b.blocks[-1]["nbytes"] = 200
    assert sizes(b, devboy()) == [60, 60, 60, 11]


def test_a_zero_threshold_still_skips_empty_results():
    # the seed clamps min_body_chars to at least 1
    b = builder()
    for _ in range(2):
        b.tool_call("Bash", 3, content="", use_tokens=10)
        b.blocks[-1]["nbytes"] = 0
    for _ in range(2):
        b.tool_call("Bash", 60, content="x", use_tokens=10)
        b.blocks[-1]["nbytes"] = 1
    assert sizes(b, devboy(min_body_chars=0)) == [3, 3, 60, 11]


def test_only_tool_results_are_hinted():
    b = builder()
    b.block(1000, "user_text", content="same")
    b.block(1000, "user_text", content="same")
    b.block(1000, "assistant_text", content="same")
    b.request(ts=0)
    r = run(b, devboy())
    assert r.figures["hints"] == 0 and r.figures["tokens_saved"] == 0


def test_every_tool_is_cacheable_by_default_reads_only_as_an_option():
    # Seed, Usage: a Bash result (ToolKind::Other) is cached; MCP polls and status checks are the
    # motivating repeats. cacheable="reads" restricts to Read/Grep/Glob/NotebookRead.
    b = builder()
    _results(b, ["status", "status"], tool="Bash")
    _results(b, ["poll", "poll"], tool="mcp__ci__pipeline_status")
    b.tool_call("Grep", 1000, resource="/p", content="hits")
    b.tool_call("Grep", 1000, resource="/p", content="hits")
    assert sizes(b, devboy()) == [1000, 11, 1000, 11, 1000, 11]
    b = builder()
    _results(b, ["status", "status"], tool="Bash")
    b.tool_call("Grep", 1000, resource="/p", content="hits")
    b.tool_call("Grep", 1000, resource="/p", content="hits")
    assert sizes(b, devboy(cacheable="reads")) == [1000, 1000, 1000, 11]


# --- mutation awareness ----------------------------------------------------------------------

def _read_edit_read(mutated="/p/a.py", tool="Edit", edit_bytes=800):
    """Read lines 1-50 of a.py, an edit (of another range), the same range read again: the same bytes."""
    b = builder()
    b.block(100, "user_text", turn=1)
    b.tool_call("Read", 2000, resource="/p/a.py", lines=(1, 50), content="A1-50")
    b.tool_call(tool, 200, resource=mutated, content="edit ok")
    b.blocks[-1]["nbytes"] = edit_bytes
    b.block(100, "user_text", turn=2)
    b.tool_call("Read", 2000, resource="/p/a.py", lines=(1, 50), content="A1-50")
    return b


@pytest.mark.parametrize("tool", ["Edit", "Write", "MultiEdit", "NotebookEdit"])
def test_a_mutation_invalidates_reads_of_that_path(tool):
    # Seed, Mutation-aware: FileRead entries whose path is later mutated by FileMutate are
    # invalidated immediately, which prevents stale hints after an Edit or Write.
    got, figs = replay_sizes(_read_edit_read(tool=tool), devboy())
    assert got == [2000, 200, 2000]
    assert figs["hints"] == 0 and figs["stale_refs"] == 0


def test_stale_refs_appear_when_mutation_awareness_is_off():
    # The bytes of lines 1-50 are identical after an edit elsewhere in the file, so without
    # invalidation a hint is emitted; per the seed's notion it is stale (it points the agent at
    # a pre-edit read of a file that has since changed).
    got, figs = replay_sizes(_read_edit_read(), devboy(mutation_aware=False))
    assert got == [2000, 200, 11]
    assert figs["hints"] == 1 and figs["stale_refs"] == 1
    assert figs["hint_distance"] == 1


def test_a_tiny_mutation_result_still_invalidates():
    # Pipeline: invalidation fires before the min_body_chars short-circuit.
    b = _read_edit_read(edit_bytes=20)
    assert sizes(b, devboy()) == [2000, 200, 2000]


def test_a_mutation_of_another_path_keeps_the_entry():
    got, figs = replay_sizes(_read_edit_read(mutated="/p/b.py"), devboy())
    assert got == [2000, 200, 11]
    assert figs["stale_refs"] == 0


def test_mutations_do_not_invalidate_other_tools_entries():
    # Seed, ToolKind::Other: no implicit cross-tool invalidation (only FileRead entries of the path).
    b = builder()
    b.tool_call("Bash", 1000, resource=None, content="cat a.py output")
    b.tool_call("Edit", 200, resource="/p/a.py", content="edit ok")
    b.tool_call("Bash", 1000, resource=None, content="cat a.py output")
    assert sizes(b, devboy()) == [1000, 200, 11]


def test_classify_by_trace_kind_for_other_agents():
    # classify="kind": tool names the seed does not know (another agent's apply_patch) mutate by
    # the trace's tool kind.
    def trace():
        b = _read_edit_read(tool="apply_patch")
        edit = [i for i, x in enumerate(b.blocks) if x["bkind"] == K_TOOL_RESULT][1]
        b.blocks[edit]["tool_kind"] = TOOL_KIND_CODE["mutate"]
        return b

    assert sizes(trace(), devboy())[-1] == 11                 # by name, apply_patch is "Other"
    assert sizes(trace(), devboy(classify="kind"))[-1] == 2000


# --- compaction ------------------------------------------------------------------------------

def _read_compact_read():
    b = builder()
    b.block(100, "user_text", turn=1)
    b.tool_call("Read", 2000, resource="/p/a.py", content="A")
    b.request(ts=0)
    b.compact(500)
    b.block(100, "user_text", turn=2)
    b.tool_call("Read", 2000, resource="/p/a.py", content="A")
    return b


def test_compaction_clears_the_cache():
    # Seed, Partition-scoped: cleared on on_compaction_boundary(); older references are no longer
    # reachable from the agent's context.
    got, figs = replay_sizes(_read_compact_read(), devboy())
    assert got == [2000, 2000] and figs["dangling_refs"] == 0


def test_without_the_reset_hints_dangle():
    got, figs = replay_sizes(_read_compact_read(), devboy(reset_on_compaction=False))
    assert got == [2000, 11]
    assert figs["dangling_refs"] == 1 and figs["hints"] == 1


def test_streams_have_their_own_cache():
    b = builder()
    b.tool_call("Read", 2000, resource="/a", content="A")
    b.request(ts=0)
    main = b.stream(0)
    sub = builder()
    sub.tool_call("Read", 2000, resource="/a", content="A")
    sub.request(ts=0)
    s = Session("s1", "claude-code", [main, sub.stream(1, "subagent")])
    r = replay_session(s, b.vocab, devboy(), ReplayOptions(CacheConfig(ttl="5m"), PRICES))
    assert r.figures["hints"] == 0


# --- params ----------------------------------------------------------------------------------

def test_unknown_param_suggests_the_closest():
    with pytest.raises(ParamError, match="did you mean 'capacity'"):
        DevboyLru.make_params({"capacty": 3})
    with pytest.raises(ParamError, match="no parameter 'nope'"):
        DevboyLru.make_params({"nope": 1})


@pytest.mark.parametrize("bad", [{"capacity": -1}, {"min_body_chars": -5}, {"verbosity": "loud"},
                                 {"cacheable": "some"}, {"classify": "magic"}, {"capacity": "x"},
                                 {"eviction": "random"}])
def test_invalid_values_raise(bad):
    with pytest.raises(ParamError):
        DevboyLru.make_params(bad)


def test_params_from_strings():
    p = DevboyLru.make_params({"capacity": "none", "verbosity": "terse", "mutation_aware": "false"})
    assert p.capacity is None and p.verbosity == "terse" and p.mutation_aware is False
    assert DevboyLru.make_params({"capacity": "0"}).capacity == 0
