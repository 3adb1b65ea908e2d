"""read_range_dedup (this project's range-aware insert-time dedup): coverage, invalidation, risk figures."""

import pytest

from replay.model.arrays import K_TOOL_RESULT, TOOL_KIND_CODE
from replay.model.cache import CacheConfig
from replay.model.costs import PriceTable
from replay.engine import ReplayOptions, replay_session
from replay.policies import REGISTRY
from replay.policies.base import ParamError
from replay.policies.noop import Noop
from replay.policies.read_range_dedup import HINT_TEMPLATE, HINT_TOKENS, TYPICAL, ReadRangeDedup

from trace_builder import MIN, TraceBuilder

PRICES = PriceTable(overrides={"m": {"input": 3, "cache_write_5m": 3.75, "cache_write_1h": 6, "cache_read": 0.3,
                                      "output": 15, "min_cacheable": 1024}})
H = HINT_TOKENS
PATH = "/p/src/a.py"


def builder():
    return TraceBuilder(overhead=10_000, models=("m",))


def rrd(**params):
    # these traces hold no line hashes: they test the coverage rule itself, which verify="trust"
    # applies alone (tests/test_read_range_verify.py tests the verification)
    params.setdefault("verify", "trust")
    return ReadRangeDedup(ReadRangeDedup.make_params(params))


def run(b, policy=None):
    session, vocab = b.build()
    return replay_session(session, vocab, policy or Noop(), ReplayOptions(CacheConfig(ttl="5m"), PRICES, detail=True))


def replay_sizes(b, policy):
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


def sizes(b, policy=None):
    return replay_sizes(b, policy or rrd())[0]


def read(b, lines=None, content="A", tokens=2000, path=PATH, **kw):
    return b.tool_call("Read", tokens, resource=path, lines=lines, content=content, **kw)


# --- coverage --------------------------------------------------------------------------------------

def test_exact_repeat_is_hinted_and_provably_identical():
    b = builder()
    read(b, lines=(10, 60))
    read(b, lines=(10, 60))
    got, figs = replay_sizes(b, rrd())
    assert got == [2000, H]
    assert figs["hints"] == 1 and figs["hints_trusted"] == 0 and figs["unseen_write_risk"] == 0


def test_narrower_range_inside_an_earlier_wider_read_is_hinted_but_unproven():
    b = builder()
    read(b, lines=(1, 500), content="wide")
    read(b, lines=(100, 200), content="narrow", tokens=400)
    got, figs = replay_sizes(b, rrd())
    assert got == [2000, H]
    assert figs["hints"] == 1 and figs["hints_trusted"] == 1


def test_wider_or_overlapping_reread_is_not_hinted():
    b = builder()
    read(b, lines=(100, 200), content="narrow", tokens=400)
    read(b, lines=(1, 500), content="wide")
    read(b, lines=(150, 300), content="overlap", tokens=600)
    assert sizes(b) == [400, 2000, H]     # the third is inside the second (1-500), not the first
    b = builder()
    read(b, lines=(100, 200), content="narrow", tokens=400)
    read(b, lines=(150, 300), content="overlap", tokens=600)
    read(b, content="whole")
    assert sizes(b) == [400, 600, 2000]


def test_an_unbounded_read_covers_up_to_the_open_read_cap():
    b = builder()
    read(b, content="whole")                       # lines 1-2000 (Read's default limit)
    read(b, lines=(1500, 1999), content="in")
    read(b, lines=(1990, 2100), content="past", tokens=500)
    assert sizes(b) == [2000, H, 500]
    b = builder()
    read(b, content="whole")
    read(b, lines=(1990, 2100), content="past", tokens=500)
    assert sizes(b, rrd(open_read_lines=None)) == [2000, H]   # an unbounded read covers everything


def test_other_paths_errors_and_small_results_are_not_hinted():
    b = builder()
    read(b, lines=(1, 100))
    read(b, lines=(1, 100), path="/p/other.py")
    read(b, lines=(1, 100), is_error=True, content="err")
    read(b, lines=(1, 100), is_error=True, content="err")
    read(b, lines=(1, 10), tokens=99, content="tiny")
    assert sizes(b) == [2000, 2000, 2000, 2000, 99]
    b = builder()
    read(b, lines=(1, 100))
    read(b, lines=(1, 10), tokens=99, content="tiny")
    assert sizes(b, rrd(min_tokens=0)) == [2000, H]


# --- invalidation ---------------------------------------------------------------------------------

def test_read_after_an_edit_of_that_path_is_not_hinted():
    b = builder()
    read(b, lines=(1, 500))
    b.tool_call("Edit", 100, resource=PATH, content="ok")
    read(b, lines=(1, 500))
    read(b, lines=(10, 20), content="post-edit part", tokens=300)   # covered by the post-edit read
    got, figs = replay_sizes(b, rrd())
    assert got == [2000, 100, 2000, H] and figs["stale_refs"] == 0
    # an edit of another path does not matter
    b = builder()
    read(b, lines=(1, 500))
    b.tool_call("Edit", 100, resource="/p/other.py", content="ok")
    read(b, lines=(1, 500))
    assert sizes(b) == [2000, 100, H]


def test_crossing_an_edit_is_an_unsafe_what_if_counted_stale():
    b = builder()
    read(b, lines=(1, 500))
    b.tool_call("Write", 100, resource=PATH, content="ok")
    read(b, lines=(1, 500))
    got, figs = replay_sizes(b, rrd(require_no_mutation=False))
    assert got == [2000, 100, H] and figs["stale_refs"] == 1


def test_read_after_a_compaction_is_not_hinted():
    b = builder()
    b.block(10, "user_text", turn=1)
    read(b, lines=(1, 500))
    b.request(ts=0)
    b.compact(500)
    b.block(10, "user_text", turn=2)
    read(b, lines=(1, 500))
    read(b, lines=(1, 500))
    got, figs = replay_sizes(b, rrd())
    assert got == [2000, 2000, H] and figs["dangling_refs"] == 0


def test_same_range_with_other_content_proves_an_unseen_change():
    b = builder()
    read(b, lines=(1, 500), content="v1")
    read(b, lines=(1, 500), content="v2")     # changed: delivered, and the v1 read is dropped
    read(b, lines=(5, 50), content="part", tokens=300)
    read(b, lines=(1, 500), content="v2")
    assert sizes(b) == [2000, 2000, H, H]


def test_opaque_shell_calls_are_a_risk_figure_or_block_unproven_hints():
    def trace():
        b = builder()
        read(b, lines=(1, 500))
        b.tool_call("Bash", 100, content="ran a script")          # no path: it might have written a.py
        read(b, lines=(1, 500))                                  # proven: same range, same hash
        read(b, lines=(10, 20), content="part", tokens=300)       # unproven
        return b
    got, figs = replay_sizes(trace(), rrd())
    assert got == [2000, 100, H, H]
    assert figs["hints"] == 2 and figs["hints_trusted"] == 1 and figs["unseen_write_risk"] == 1
    # the proven repeat was a hint, not a delivery: the original stays the pre-shell read. A full
    # delivery after the shell call (changed content) is the original instead: no risk.
    b = builder()
    read(b, lines=(1, 500))
    b.tool_call("Bash", 100, content="ran a script")
    read(b, lines=(1, 500), content="B")
    read(b, lines=(10, 20), content="part", tokens=300)
    got, figs = replay_sizes(b, rrd())
    assert got == [2000, 100, 2000, H] and figs["hints_trusted"] == 1 and figs["unseen_write_risk"] == 0
    b = builder()
    read(b, lines=(1, 500))
    b.tool_call("Bash", 100, content="ran a script")
    read(b, lines=(10, 20), content="part", tokens=300)
    read(b, lines=(1, 500))
    got, figs = replay_sizes(b, rrd(opaque_shell_blocks=True))
    assert got == [2000, 100, 300, H] and figs["unseen_write_risk"] == 0
    # a shell command the ingest resolved to a write of the path is a mutation
    b = builder()
    read(b, lines=(1, 500))
    b.tool_call("Bash", 100, resource=PATH, content="sed -i")
    b.blocks[-1]["tool_kind"] = TOOL_KIND_CODE["mutate"]   # as the ingest classifies `sed -i PATH`
    read(b, lines=(1, 500))
    assert sizes(b) == [2000, 100, 2000]


def test_lookback_turns():
    b = builder()
    b.block(10, "user_text", turn=1)
    read(b, lines=(1, 500))
    b.block(10, "user_text", turn=4)
    read(b, lines=(1, 50), content="part", tokens=300)
    assert sizes(b, rrd(lookback_turns=2)) == [2000, 300]
    b = builder()
    b.block(10, "user_text", turn=1)
    read(b, lines=(1, 500))
    b.block(10, "user_text", turn=4)
    read(b, lines=(1, 50), content="part", tokens=300)
    got, figs = replay_sizes(b, rrd(lookback_turns=3))
    assert got == [2000, H] and figs["hint_distance"] == 3


# --- end to end, hand computed ---------------------------------------------------------------------

def test_hand_computed_saving_and_no_busts():
    b = builder()
    b.block(500, "user_text", turn=1)
    b.request(ts=0)
    read(b, lines=(1, 400), content="wide", tokens=3000)
    b.request(ts=MIN)
    read(b, lines=(100, 180), content="part", tokens=800)
    b.request(ts=2 * MIN)
    base, r = run(b), run(b, rrd())
    assert base.detail["input_total"] == [10_500, 13_550, 14_400]
    assert r.detail["input_total"] == [10_500, 13_550, 13_550 + 50 + H]
    assert r.detail["cache_read"] == [0, 10_500, 13_550]
    assert r.detail["cache_write_5m"] == [10_500, 3_050, 50 + H]
    assert r.figures["busts"] == 0 and r.figures["hints"] == 1 and r.figures["hints_trusted"] == 1
    assert r.figures["tokens_saved"] == 800 - H and r.figures["blocks_changed"] == 1
    assert r.figures["tokens_delivered"] == base.figures["tokens_delivered"] - (800 - H)
    cost = (10_500 * 3.75 + 1500) + (10_500 * 0.3 + 3_050 * 3.75 + 1500) + (13_550 * 0.3 + (50 + H) * 3.75 + 1500)
    assert r.figures["cost"] == pytest.approx(cost / 1e6)
    assert base.figures["cost"] - r.figures["cost"] == pytest.approx((800 - H) * 3.75 / 1e6)


def test_no_duplicates_means_no_change():
    b = builder()
    for j in range(4):
        read(b, lines=(1, 100), path=f"/p/f{j}.py", content=f"c{j}")
        b.request(ts=j * MIN)
    base, r = run(b), run(b, rrd())
    assert r.figures["tokens_delivered"] == base.figures["tokens_delivered"] and r.figures["hints"] == 0
    assert r.figures["cost"] == pytest.approx(base.figures["cost"])


# --- hint size, params, registry ---------------------------------------------------------------------

def test_hint_size_is_the_rendered_template_in_o200k_tokens():
    from replay.ingest.tokens import count_many

    assert count_many([HINT_TEMPLATE.format(**TYPICAL)]) == [HINT_TOKENS] == [14]


def test_hint_is_converted_to_provider_units():
    b = builder()
    read(b, lines=(1, 500))
    read(b, lines=(1, 500))
    b.request(ts=10 * MIN)
    session, vocab = b.build()
    session.streams[0].bpe_ratio = 1.5
    seen = []

    class Spy(ReadRangeDedup):
        def start_stream(self, ctx):
            super().start_stream(ctx)
            seen.append(ctx)

    replay_session(session, vocab, Spy(), ReplayOptions(CacheConfig(ttl="5m"), PRICES))
    assert seen[0].eff[3] == pytest.approx(H * 1.5)


def test_defaults_registry_and_source():
    p = ReadRangeDedup.Params()
    assert (p.min_tokens, p.lookback_turns, p.require_no_mutation, p.verify, p.opaque_shell_blocks,
            p.open_read_lines) == (100, None, True, "lines", False, 2000)
    assert REGISTRY["read_range_dedup"] is ReadRangeDedup
    assert "this project" in ReadRangeDedup.source and "seed" not in ReadRangeDedup.source.replace("not a seed", "")
    assert ReadRangeDedup.insert_time() and not ReadRangeDedup.retroactive()


@pytest.mark.parametrize("bad", [{"min_tokens": -1}, {"lookback_turns": -2}, {"open_read_lines": 0},
                                 {"hint_tokens": -1}, {"min_token": 3}, {"verify": "hash"}])
def test_invalid_values_raise(bad):
    with pytest.raises(ParamError):
        ReadRangeDedup.make_params(bad)


def test_params_from_strings():
    p = ReadRangeDedup.make_params({"require_no_mutation": "off", "lookback_turns": "none", "open_read_lines": "none"})
    assert p.require_no_mutation is False and p.lookback_turns is None and p.open_read_lines is None
