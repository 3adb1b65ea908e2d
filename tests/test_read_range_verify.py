"""read_range_dedup's verified rule (issue 24 item 3): a re-read is hinted only when the earlier
read it points to shows every one of its lines identical (keyed per-line hashes) or is
byte-identical; client previews are never full reads; writes of other streams count."""

import pytest

from replay.engine import ReplayOptions, replay_session
from replay.model.cache import CacheConfig
from replay.policies.common import lines_equal, read_span, verified_cover
from replay.policies.read_range_dedup import HINT_TOKENS, ReadRangeDedup

from test_policy_read_range_dedup import PRICES, replay_sizes as replay
from trace_builder import MIN, TraceBuilder

H = HINT_TOKENS
PATH = "/p/src/a.py"


def file_lines(n: int, tag: str = "") -> list[int]:
    """Stand-ins for the keyed hashes of lines 1..n of a file (equal text, equal number)."""
    return [hash(f"line {k}{tag}") for k in range(1, n + 1)]


def builder():
    return TraceBuilder(overhead=10_000, models=("m",))


def rrd(**params):
    return ReadRangeDedup(ReadRangeDedup.make_params(params))


def read(b, lines, shown, content=None, tokens=2000, path=PATH, **kw):
    """A Read of ``lines`` (requested range, None: no offset/limit) whose result shows the
    hashed lines ``shown`` = (first line, hashes); None: no numbered lines."""
    if content is None:
        content = f"r{len(b.blocks)}"  # results differ unless the test says otherwise
    pos = b.tool_call("Read", tokens, resource=path, lines=lines, content=content, **kw)
    if shown is not None:
        b.lines[pos] = (shown[0], list(shown[1]))
    return pos


F = file_lines(500)


# --- the rule ------------------------------------------------------------------------------------------

def test_a_narrower_reread_with_identical_lines_is_verified():
    b = builder()
    read(b, (1, 500), (1, F))
    read(b, (100, 200), (100, F[99:200]), tokens=400)
    got, figs = replay(b, rrd())
    assert got == [2000, H]
    assert figs["hints"] == 1 and figs["hints_verified"] == 1 and figs["hints_trusted"] == 0


def test_one_changed_line_prevents_the_hint_and_refutes_trust():
    changed = F[99:200]
    changed[50] = hash("edited outside the agent")
    b = builder()
    read(b, (1, 500), (1, F))
    read(b, (100, 200), (100, changed), tokens=400)
    got, figs = replay(b, rrd())
    assert got == [2000, 400] and figs["hints"] == 0
    got, figs = replay(b, rrd(verify="trust"))        # the old rule hints it, and is wrong
    assert got == [2000, H]
    assert figs["hints_trusted"] == 1 and figs["trust_refuted"] == 1 and figs["hints_verified"] == 0


def test_a_changed_line_outside_the_reread_does_not_matter():
    later = list(F)
    later[10] = hash("changed line 11")
    b = builder()
    read(b, (1, 500), (1, later))
    read(b, (100, 200), (100, F[99:200]), tokens=400)
    assert replay(b, rrd())[0] == [2000, H]


def test_the_most_recent_verifying_read_is_the_original_and_an_older_one_may_verify():
    v2 = list(F)
    v2[149] = hash("v2 line 150")
    b = builder()
    read(b, (1, 500), (1, F))                            # v1
    read(b, (1, 500), (1, v2))                           # the file changed unseen: v2 delivered
    read(b, (140, 160), (140, F[139:160]), tokens=400)  # v1's lines again (changed back): only v1 proves it
    read(b, (1, 100), (1, F[:100]), tokens=400)         # both prove it
    got, figs = replay(b, rrd())
    assert got == [2000, 2000, H, H] and figs["hints_verified"] == 2


def test_lines_the_original_did_not_show_are_not_verified():
    b = builder()
    read(b, (1, 500), (1, F[:300]))     # asked 1-500, the file had 300 lines then
    read(b, (250, 350), (250, file_lines(350)[249:350]), tokens=400)  # it grew since
    got, figs = replay(b, rrd())
    assert got == [2000, 400]
    assert replay(b, rrd(verify="trust"))[1]["trust_refuted"] == 1


def test_a_reread_that_stopped_at_a_shorter_end_of_file_is_not_verified():
    # the first read shows lines 1-300 (the whole file), the re-read of 1-2000 shows 1-200:
    # every line it shows is identical, but the file lost its last 100 lines
    b = builder()
    read(b, None, (1, F[:300]))
    read(b, None, (1, F[:200]), tokens=1500)
    assert replay(b, rrd())[0] == [2000, 1500]
    # both stopped at line 200: the same file end, verified (an open read asks for 2000 lines)
    b = builder()
    read(b, None, (1, F[:200]))
    read(b, (50, 2000), (50, F[49:200]), tokens=1500)
    assert replay(b, rrd())[0] == [2000, H]


def test_a_byte_identical_result_is_verified_by_its_hash_without_line_hashes():
    b = builder()
    read(b, (1, 50), None, content="same")
    read(b, (1, 50), None, content="same")
    read(b, (1, 10), None, content="part", tokens=400)  # no lines to check it by: not hinted
    got, figs = replay(b, rrd())
    assert got == [2000, H, 400] and figs["hints_verified"] == 1
    got, figs = replay(b, rrd(verify="trust"))
    assert got == [2000, H, H] and figs["hints_trusted"] == 1 and figs["trust_refuted"] == 0  # unknown, not refuted


def test_verified_hints_still_respect_writes_min_tokens_lookback_and_compaction():
    b = builder()
    read(b, (1, 500), (1, F))
    b.tool_call("Edit", 100, resource=PATH, content="ok")
    read(b, (1, 50), (1, F[:50]), tokens=400)      # identical lines, but a write was seen
    read(b, (1, 50), (1, F[:50]), tokens=99, content="tiny")
    assert replay(b, rrd())[0] == [2000, 100, 400, 99]
    b = builder()
    b.block(10, "user_text", turn=1)
    read(b, (1, 500), (1, F))
    b.block(10, "user_text", turn=5)
    read(b, (1, 50), (1, F[:50]), tokens=400)
    assert replay(b, rrd(lookback_turns=3))[0] == [2000, 400]
    b = builder()
    read(b, (1, 500), (1, F))
    b.request(ts=0)
    b.compact(500)
    read(b, (1, 50), (1, F[:50]), tokens=400)
    assert replay(b, rrd())[0] == [2000, 400]


# --- previews and other streams' writes ----------------------------------------------------------------

def test_a_persisted_output_preview_is_not_a_covering_read():
    for verify in ("lines", "trust"):
        b = builder()
        p = read(b, None, None, content="preview")    # Read of the whole file, kept as a 2 KB preview
        b.previews.add(p)
        read(b, (1, 40), (1, F[:40]), tokens=400)      # lines the preview may even show
        got, figs = replay(b, rrd(verify=verify))
        assert got == [2000, 400] and figs["hints"] == 0, verify
    # nor is a preview hinted as a re-read of an earlier full read (it is not the range it asked for)
    b = builder()
    read(b, None, (1, F[:300]))
    p = read(b, None, None, content="preview", tokens=600)
    b.previews.add(p)
    assert replay(b, rrd(verify="trust"))[0] == [2000, 600]


def test_a_write_by_another_stream_of_the_session_prevents_the_hint():
    def trace(write_at):
        b = builder()
        read(b, (1, 500), (1, F), ts=1 * MIN)
        read(b, (100, 200), (100, F[99:200]), tokens=400, ts=3 * MIN)
        b.other_writes = [(write_at, 0)]  # resource code 0 is PATH
        return b

    for verify in ("lines", "trust"):
        b = trace(2 * MIN)                     # between the reads: no hint
        b.request(ts=10 * MIN)
        session, vocab = b.build()
        session.streams[0].other_writes = b.other_writes
        seen = []

        class Spy(ReadRangeDedup):
            def start_stream(self, ctx):
                super().start_stream(ctx)
                seen.append(ctx)

        replay_session(session, vocab, Spy(ReadRangeDedup.make_params({"verify": verify})),
                       ReplayOptions(CacheConfig(ttl="5m"), PRICES))
        assert seen[0].eff[3] == 400, verify
        for at, hinted in ((4 * MIN, True), (MIN // 2, True)):  # after the re-read, before the original
            b = trace(at)
            b.request(ts=10 * MIN)
            session, vocab = b.build()
            session.streams[0].other_writes = b.other_writes
            seen.clear()
            replay_session(session, vocab, Spy(ReadRangeDedup.make_params({"verify": verify})),
                           ReplayOptions(CacheConfig(ttl="5m"), PRICES))
            assert (seen[0].eff[3] == H) == hinted, (verify, at)


# --- the helper the bound uses -------------------------------------------------------------------------

def test_lines_equal_and_verified_cover():
    b = builder()
    a = read(b, (1, 500), (1, F))
    c = read(b, (100, 200), (100, F[99:200]))
    changed = F[99:200]
    changed[0] = 1
    d = read(b, (100, 200), (100, changed))
    e = read(b, (1, 10), None)
    st = b.stream()
    assert read_span(st, a) == (1, 500) and read_span(st, c) == (100, 200) and read_span(st, e) is None
    assert lines_equal(st, c, a, 100, 200) and lines_equal(st, a, c, 150, 150)
    assert not lines_equal(st, c, a, 99, 200)          # c does not show line 99
    assert not lines_equal(st, c, a, 150, 149)         # an empty range proves nothing
    assert not lines_equal(st, d, a, 100, 200) and lines_equal(st, d, a, 101, 200)
    assert not lines_equal(st, e, a, 1, 10)            # no hashes
    assert verified_cover(st, c, a) and not verified_cover(st, a, c) and not verified_cover(st, d, a)


def test_defaults_and_run_metrics():
    assert ReadRangeDedup.Params().verify == "lines"
    from replay.policies.read_range_dedup import EXTRA_METRICS

    assert {"hints_verified", "hints_trusted", "trust_refuted"} <= set(EXTRA_METRICS)
    with pytest.raises(ValueError):
        ReadRangeDedup.Params(verify="maybe")
