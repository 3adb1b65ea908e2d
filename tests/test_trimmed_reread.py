"""``trimmed_reread`` counts only lossy removals: a re-read after a removal whose content is still
in context (a byte-identical copy, a read covering it) cannot be caused by the policy, so it is
neither counted nor charged (replay/policies/common.py, TrimmedRereads)."""

from replay.engine import ReplayOptions, replay_session
from replay.model.cache import CacheConfig
from replay.policies.cache_aware_trim import CacheAwareTrim
from replay.policies.common import TrimmedRereads
from replay.policies.jp_compaction import JpCompaction
from replay.policies.supersede import Supersede

from trace_builder import MIN, TraceBuilder

OPTS = ReplayOptions(CacheConfig(observed_evictions="none"), detail=True)
COLD = 5 * MIN + 61_000  # past the 5-minute TTL and cache_aware_trim's 60 s margin: a flush


def run(b: TraceBuilder, policy):
    s, v = b.build()
    return replay_session(s, v, policy, OPTS).figures


def test_the_bookkeeping_remembers_only_lossy_removals():
    b = TraceBuilder()
    b.block(100, "user_text", turn=1)
    kept = b.tool_call("Read", 1000, resource="a", content="A")
    lost = b.tool_call("Read", 1000, resource="b", content="B")
    b.tool_call("Read", 1000, resource="a", content="A2")
    b.tool_call("Read", 1000, resource="b", content="B2")
    st = b.stream()
    rr = TrimmedRereads()
    rr.trimmed(st, kept, lossy=False)
    rr.trimmed(st, lost, lossy=True)
    m = {"trimmed_reread": 0.0}
    due = rr.scan(st, lost + 1, len(b.blocks), m)
    assert m["trimmed_reread"] == 1 and due == [lost]


def _dedup_then_reread(*, lossy: bool) -> TraceBuilder:
    """A 3,000-token read of f, repeated byte for byte; a cold gap flushes cache_aware_trim's
    pending removals; then the agent reads f again."""
    b = TraceBuilder(overhead=10_000)
    b.block(500, "user_text", turn=1)
    b.tool_call("Read", 3000, resource="f", content="A")           # position 2
    b.request(ts=0, w5=100)
    b.tool_call("Read", 3000, resource="f", content="A")           # exact repeat: 2 removable losslessly
    b.request(ts=MIN, w5=100)
    b.block(100, "user_text", turn=2)
    if lossy:
        b.tool_call("Read", 2000, resource="g", content="G")       # turn 2: stripped once turn 3 starts
    b.request(ts=MIN + COLD, w5=100)                               # cold: the removals are applied
    b.block(100, "user_text", turn=3)
    b.request(ts=2 * MIN + COLD, w5=100)
    b.request(ts=2 * MIN + 2 * COLD, w5=100)                       # cold again: the lossy strip of g
    b.tool_call("Read", 3000, resource="f", content="A")           # the agent reads f again
    if lossy:
        b.tool_call("Read", 2000, resource="g", content="G")       # ... and g, whose content is gone
    b.request(ts=3 * MIN + 2 * COLD, w5=100)
    return b


def test_a_lossless_dedup_followed_by_a_reread_is_not_charged():
    f = run(_dedup_then_reread(lossy=False), CacheAwareTrim())
    assert f["flushes_cold"] >= 1 and f["tokens_saved"] > 0  # the duplicate was removed
    assert f["trimmed_reread"] == 0


def test_a_lossy_removal_followed_by_a_reread_counts_once():
    p = CacheAwareTrim(CacheAwareTrim.make_params({"lossy": True, "keep_last": 1}))
    f = run(_dedup_then_reread(lossy=True), p)
    # f's older copy went losslessly (its twin is in context), and the twin, an older turn's
    # result, was stripped too: that strip and g's are lossy, so both re-reads count
    assert f["trimmed_reread"] == 2


def test_jp_compaction_charges_the_strip_not_the_dedup():
    b = TraceBuilder()
    b.block(100, "user_text", turn=1)
    b.tool_call("Bash", 1000, resource="a", args="same")
    b.tool_call("Bash", 1000, resource="a", args="same")
    b.request(ts=0)
    b.block(100, "user_text", turn=2)
    b.request(ts=MIN)                                              # dedup-tools drops the older call
    b.tool_call("Read", 1000, resource="a", args="r")
    b.request(ts=2 * MIN)
    dedup = JpCompaction(JpCompaction.make_params({"strategies": "dedup-tools", "trigger_turn": 2}))
    assert run(b, dedup)["trimmed_reread"] == 0
    strip = JpCompaction(JpCompaction.make_params({"strategies": "strip-tool-results", "trigger_turn": 2,
                                                "unhinted_response": "strip"}))
    assert run(b, strip)["trimmed_reread"] == 2                   # both results were stubbed: gone


def test_supersede_counts_a_hidden_range_the_newer_read_does_not_hold():
    def reread_after(newer_lines):
        b = TraceBuilder()
        b.block(300, "user_text")
        b.tool_call("Read", 1000, resource="/a.py", lines=(100, 200), args="old")
        b.tool_call("Read", 1000, resource="/a.py", lines=newer_lines, args="new")
        b.request(ts=0)                                            # the older read is hidden
        b.block(100, "user_text")
        b.request(ts=MIN)
        b.block(50, "tool_use", tool="Read", resource="/a.py", tool_use="again")
        b.request(ts=2 * MIN)
        return run(b, Supersede())["trimmed_reread"]

    assert reread_after((1, 10)) == 1      # the source's location rule hid lines 100-200: gone
    assert reread_after((50, 300)) == 0    # lines 50-300 contain them: still in context
    assert reread_after(None) == 0         # the whole file
