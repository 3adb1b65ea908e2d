"""jp_resource_dedup (seed 000, JP RFD 067): the seed's identity table, thresholds and replays."""

import pytest

from replay.model.arrays import K_ATTACHMENT, K_TOOL_RESULT
from replay.model.cache import CacheConfig
from replay.model.costs import PriceTable
from replay.engine import ReplayOptions, replay_session
from replay.policies.base import ParamError
from replay.policies.jp_resource_dedup import (ATTACHMENT_REF_TOKENS, ATTACHMENT_TEMPLATE, REF_TOKENS,
                                               TOOL_TEMPLATE, JpResourceDedup)
from replay.policies.noop import Noop

from trace_builder import MIN, TraceBuilder

PRICES = PriceTable(overrides={"m": {"input": 3, "cache_write_5m": 3.75, "cache_write_1h": 6, "cache_read": 0.3,
                                      "output": 15, "min_cacheable": 1024}})
REF, ATT = REF_TOKENS, ATTACHMENT_REF_TOKENS


def builder(**kw):
    return TraceBuilder(overhead=kw.pop("overhead", 10_000), models=("m",), **kw)


def run(b: TraceBuilder, policy=None):
    session, vocab = b.build()
    return replay_session(session, vocab, policy or Noop(), ReplayOptions(CacheConfig(ttl="5m"), PRICES, detail=True))


def jp(**params):
    return JpResourceDedup(JpResourceDedup.make_params(params))


def replay_sizes(b: TraceBuilder, policy) -> tuple[list[float], dict]:
    """Sizes of tool results and attachments after the replay (a final request sees all) and the figures."""
    b.request(ts=10 * MIN)
    session, vocab = b.build()
    seen = []

    class Spy(type(policy)):
        def start_stream(self, ctx):
            super().start_stream(ctx)
            seen.append(ctx)

    r = replay_session(session, vocab, Spy(policy.params), ReplayOptions(CacheConfig(ttl="5m"), PRICES))
    st, eff = session.streams[0], seen[0].eff
    return [eff[i] for i in range(st.n_blocks) if st.bkind[i] in (K_TOOL_RESULT, K_ATTACHMENT)], r.figures


def sizes(b, policy=None):
    return replay_sizes(b, policy or jp())[0]


def read(b, path="/p/src/main.rs", content="v1", tokens=2000, lines=None, tool="Read", nbytes=None, **kw):
    pos = b.tool_call(tool, tokens, resource=path, content=content, lines=lines, **kw)
    if nbytes is not None:
        b.blocks[pos]["nbytes"] = nbytes
    return pos


# --- the seed's identity table ("How matching handles identity correctly") ----------------------

def test_same_file_same_content_dedups():
    # file unchanged between two reads: URI and checksum both match
    b = builder()
    read(b)
    read(b)
    assert sizes(b) == [2000, REF]


def test_same_file_different_content_does_not():
    # the file was edited between reads: URI matches, checksum does not
    b = builder()
    read(b, content="v1")
    read(b, content="v2")
    assert sizes(b) == [2000, 2000]


def test_different_files_same_content_do_not():
    # two identical files: checksums match, URIs do not (the LLM asked for different resources)
    b = builder()
    read(b, path="/p/a.rs", content="same")
    read(b, path="/p/b.rs", content="same")
    assert sizes(b) == [2000, 2000]


def test_attachment_then_tool_read_of_the_same_file_dedups():
    # the primary use case: the user attached foo.rs, the LLM reads foo.rs; the reference names
    # the attachment (its shorter template)
    b = builder()
    b.block(2000, "attachment", resource="/p/foo.rs", content="foo", turn=1)
    b.block(50, "user_text")
    read(b, path="/p/foo.rs", content="foo")
    got, figs = replay_sizes(b, jp())
    assert got == [2000, ATT]
    assert figs["hints"] == 1 and figs["hint_distance"] == 0


def test_same_line_range_same_content_dedups():
    b = builder()
    read(b, lines=(10, 200), content="L10-200")
    read(b, lines=(10, 200), content="L10-200")
    assert sizes(b) == [2000, REF]


def test_line_range_never_matches_the_full_file_or_another_range():
    # fragment URIs (#L10-200) are distinct strings from the full-file URI and from other ranges,
    # even where the bytes happen to be equal
    b = builder()
    read(b, content="X")                       # full file
    read(b, lines=(1, 400), content="X")       # a range covering it, same bytes
    read(b, lines=(1, 399), content="X")
    read(b, lines=(1, None), content="X")      # open-ended range (offset only)
    assert sizes(b) == [2000, 2000, 2000, 2000]


def test_attachments_are_never_replaced():
    # dedup runs in the tool coordinator, after a tool returns: attachment handlers are not deduped
    b = builder()
    b.block(2000, "attachment", resource="/p/foo.rs", content="foo")
    b.block(2000, "attachment", resource="/p/foo.rs", content="foo")
    assert sizes(b) == [2000, 2000]


# --- thresholds and configuration ---------------------------------------------------------------

def test_min_bytes_must_be_exceeded():
    # "Dedup only applies to resource blocks whose raw content exceeds 300 bytes"
    b = builder()
    read(b, content="a", tokens=80, nbytes=300)
    read(b, content="a", tokens=80, nbytes=300)
    read(b, content="b", tokens=80, nbytes=301)
    read(b, content="b", tokens=80, nbytes=301)
    assert sizes(b) == [80, 80, 80, REF]


def test_lookback_window_in_user_turns():
    # "Dedup only matches against resource deliveries within a configurable number of recent turns":
    # the original at turn 1 matches at turn 31 (30 turns back), not at turn 32; the turn-32 full
    # delivery is then the original for later references.
    b = builder()
    b.block(10, "user_text", turn=1)
    read(b)
    b.block(10, "user_text", turn=31)
    read(b)
    got, figs = replay_sizes(b, jp())
    assert got == [2000, REF] and figs["hint_distance"] == 30
    b = builder()
    b.block(10, "user_text", turn=1)
    read(b)
    b.block(10, "user_text", turn=32)
    read(b)
    b.block(10, "user_text", turn=33)
    read(b)
    got, figs = replay_sizes(b, jp())
    assert got == [2000, 2000, REF] and figs["hint_distance"] == 1
    b = builder()
    b.block(10, "user_text", turn=1)
    read(b)
    b.block(10, "user_text", turn=500)
    read(b)
    assert sizes(b, jp(lookback_turns=None)) == [2000, REF]


def test_references_point_at_full_deliveries_only():
    # A reference tells the LLM where the full content is, so a turn-20 reference (to turn 1) is
    # no original: at turn 40 the turn-1 delivery is 39 turns back and the content is delivered.
    b = builder()
    for turn in (1, 20, 40):
        b.block(10, "user_text", turn=turn)
        read(b)
    assert sizes(b) == [2000, REF, 2000]


def test_per_tool_opt_out():
    # [tools.X] deduplicate = false: that tool's results are delivered in full, and still are
    # deliveries a later read by another tool can point at
    b = builder()
    read(b, tool="Read")
    read(b, tool="NotebookRead")
    read(b, tool="Read")
    assert sizes(b, jp(no_dedup_tools=("NotebookRead",))) == [2000, 2000, REF]
    b = builder()
    read(b, tool="Read")
    read(b, tool="Read")
    assert sizes(b, jp(no_dedup_tools=("Read",))) == [2000, 2000]


def test_conversation_toggle():
    b = builder()
    read(b)
    read(b)
    assert sizes(b, jp(enabled=False)) == [2000, 2000]


def test_text_blocks_pass_through():
    # only resource blocks are deduplicated; command output, search results and edit confirmations
    # are text (no URI for their content), as are results without a path
    b = builder()
    for _ in range(2):
        b.tool_call("Bash", 2000, content="make test output")
    for _ in range(2):
        b.tool_call("Grep", 2000, resource="/p", content="grep hits")
    for _ in range(2):
        b.tool_call("Read", 2000, resource=None, content="no path")
    assert sizes(b) == [2000] * 6
    # treating search output as a resource of its path is an opt-in extension
    b = builder()
    for _ in range(2):
        b.tool_call("Grep", 2000, resource="/p", content="grep hits")
    assert sizes(b, jp(resource_tool_kinds=("read", "search"))) == [2000, REF]


def test_error_results_are_not_resources():
    b = builder()
    read(b, content="error: not found", is_error=True)
    read(b, content="error: not found", is_error=True)
    assert sizes(b) == [2000, 2000]


def test_replacement_message_sizes_follow_the_templates():
    # the message names the URI, where the original is and the checksum; the seed's template with
    # a typical URI and a 64-hex checksum, counted in o200k tokens by the ingest's own counter
    from replay.ingest.tokens import count_many
    from replay.policies.jp_resource_dedup import TYPICAL

    for template in (TOOL_TEMPLATE, ATTACHMENT_TEMPLATE):
        assert "{uri}" in template and "{checksum}" in template and "{turn}" in template
    assert "{call}" in TOOL_TEMPLATE
    assert (REF, ATT) == (82, 62)
    assert count_many([TOOL_TEMPLATE.format(**TYPICAL), ATTACHMENT_TEMPLATE.format(**TYPICAL)]) == [REF, ATT]
    b = builder()
    read(b)
    read(b)
    assert sizes(b, jp(ref_tokens=45)) == [2000, 45]


# --- compaction, staleness, streams --------------------------------------------------------------

def _read_compact_read():
    b = builder()
    b.block(10, "user_text", turn=1)
    read(b)
    b.request(ts=0)
    b.compact(500)
    b.block(10, "user_text", turn=2)
    read(b)
    return b


def test_compacted_originals_fall_through_to_full_delivery():
    # Risks, compaction: if the referenced content was compacted, JP delivers in full
    got, figs = replay_sizes(_read_compact_read(), jp())
    assert got == [2000, 2000] and figs["dangling_refs"] == 0


def test_matching_across_compaction_dangles():
    got, figs = replay_sizes(_read_compact_read(), jp(reset_on_compaction=False))
    assert got == [2000, REF] and figs["dangling_refs"] == 1


def test_stale_refs_count_a_mutation_between_original_and_reference():
    # The checksum matches (lines 1-50 untouched by an edit further down), so the content is
    # right, but the message's "the file has not changed" is false: counted as stale.
    b = builder()
    read(b, lines=(1, 50), content="head")
    b.tool_call("Edit", 100, resource="/p/src/main.rs", content="edit ok")
    read(b, lines=(1, 50), content="head")
    read(b, lines=(1, 50), content="head")   # the original is still the pre-edit read
    got, figs = replay_sizes(b, jp())
    assert got == [2000, 100, REF, REF]
    assert figs["hints"] == 2 and figs["stale_refs"] == 2


# --- end to end ----------------------------------------------------------------------------------

def test_end_to_end_figures_and_no_busts():
    b = builder()
    b.block(500, "user_text", turn=1)
    b.block(3000, "attachment", resource="/p/foo.rs", content="foo")
    b.request(ts=0)
    read(b, path="/p/foo.rs", content="foo", tokens=3000)      # matches the attachment
    b.request(ts=MIN)
    b.block(100, "user_text", turn=2)
    read(b, path="/p/bar.rs", content="bar", tokens=1000)
    read(b, path="/p/bar.rs", content="bar", tokens=1000)      # matches the tool call
    b.request(ts=2 * MIN)
    base, r = run(b), run(b, jp())
    assert base.detail["input_total"] == [13_500, 16_550, 18_750]
    assert r.detail["input_total"] == [13_500, 13_500 + 50 + ATT, 13_500 + 50 + ATT + 100 + 1050 + 50 + REF]
    assert (ATT, REF) == (62, 82)
    assert r.detail["cache_read"] == [0, 13_500, 13_612]
    assert r.detail["cache_write_5m"] == [13_500, 112, 1_282]
    assert r.figures["busts"] == 0 and r.figures["hints"] == 2 and r.figures["hint_distance"] == 0
    assert r.figures["tokens_saved"] == (3000 - ATT) + (1000 - REF)
    cost = (13_500 * 3.75 + 1500) + (13_500 * 0.3 + 112 * 3.75 + 1500) + (13_612 * 0.3 + 1_282 * 3.75 + 1500)
    assert r.figures["cost"] == pytest.approx(cost / 1e6)


# --- params --------------------------------------------------------------------------------------

def test_defaults_are_the_seeds():
    p = JpResourceDedup.Params()
    assert (p.enabled, p.min_bytes, p.lookback_turns, p.no_dedup_tools) == (True, 300, 30, ())
    assert JpResourceDedup.insert_time() and not JpResourceDedup.retroactive()


def test_unknown_param_suggests_the_closest():
    with pytest.raises(ParamError, match="did you mean 'min_bytes'"):
        JpResourceDedup.make_params({"min_byte": 3})
    with pytest.raises(ParamError, match="no parameter 'nope'"):
        JpResourceDedup.make_params({"nope": 1})


@pytest.mark.parametrize("bad", [{"min_bytes": -1}, {"lookback_turns": -2}, {"resource_tool_kinds": ("files",)},
                                 {"ref_tokens": -1}, {"min_bytes": "many"}])
def test_invalid_values_raise(bad):
    with pytest.raises(ParamError):
        JpResourceDedup.make_params(bad)


def test_params_from_strings():
    p = JpResourceDedup.make_params({"no_dedup_tools": "Read, NotebookRead", "lookback_turns": "none",
                                     "enabled": "off"})
    assert p.no_dedup_tools == ("Read", "NotebookRead") and p.lookback_turns is None and p.enabled is False
