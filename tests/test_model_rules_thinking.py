"""Hand-computed tests of three cache-model rules: thinking switches, the system prefix taken
from the warm read, and the send clock (docs/replay-model.md; `replay.engine.calibration`,
`replay.engine.pricing`).

Every expected number is worked out in the comments from the rules, not taken from a run.
Each case also runs with the rule switched off (or the opposite setting), where the number
changes, so a test fails if the rule is wrong or not applied.
"""

import pytest

from replay.engine import ReplayOptions, replay_session
from replay.engine.calibration import MAX_LATENCY_MS, budget_thinking, send_times, thinking_switches
from replay.engine.pricing import _system_prefixes
from replay.experiments.breaks import classify_stream
from replay.model.cache import SYS, TTL_MS, CacheConfig, StreamCache
from replay.model.costs import PriceTable
from replay.policies import build
from replay.policies.base import Policy

from trace_builder import MIN, TraceBuilder

SONNET = "claude-sonnet-4-5"  # budget thinking
OPUS_46 = "claude-opus-4-6"  # adaptive thinking
RATES = {"input": 3, "cache_write_5m": 3.75, "cache_write_1h": 6, "cache_read": 0.3, "output": 15,
         "min_cacheable": 1024}
PRICES = PriceTable(overrides={SONNET: RATES, OPUS_46: RATES})
SEC = 1000


def builder(overhead=10_000, models=(SONNET,)):
    # Claude Code 2.x: its turn-end write (the prompt suggestion) is part of these hand counts
    return TraceBuilder(overhead=overhead, models=models, version="2.1.37")


def run(b, policy=None, **cache):
    session, vocab = b.build()
    return replay_session(session, vocab, policy or build("noop"),
                          ReplayOptions(CacheConfig(**cache), PRICES, detail=True)).detail


def switches(b, **cache):
    st = b.stream()
    return thinking_switches(st, b.models, CacheConfig(**cache))


# --- budget_thinking ------------------------------------------------------------------------

@pytest.mark.parametrize("model", [
    "claude-opus-4-5-20251101", "claude-opus-4-5", "claude-sonnet-4-5", "claude-sonnet-4-5-20250929",
    "claude-sonnet-4-20250514", "claude-sonnet-4", "claude-opus-4-20250514", "claude-opus-4",
    "claude-opus-4-1-20250805", "claude-opus-4-1", "claude-haiku-4-5-20251001", "claude-haiku-4-5",
    "claude-3-7-sonnet-20250219", "claude-3-7-sonnet-latest",
    # provider spellings: Bedrock, Vertex, a provider/ prefix
    "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-opus-4@20250514", "anthropic/claude-sonnet-4",
])
def test_budget_thinking_models(model):
    assert budget_thinking(model) is True


@pytest.mark.parametrize("model", [
    "claude-opus-4-6", "claude-sonnet-4-6", "claude-opus-4-7", "claude-opus-4-8", "claude-opus-5",
    "claude-3-5-sonnet-20241022", "claude-haiku-4-6", "gpt-5", "gemini-2.5-pro", "", None,
])
def test_adaptive_and_other_models_are_not_budget_thinking(model):
    assert budget_thinking(model) is False


# --- thinking_switches on hand-built streams ------------------------------------------------

def _turn(b, thinks: bool, *, tokens=200, ts=-1):
    """A user prompt, then the request, then its response (thinking? + text)."""
    b.block(tokens, "user_text", ts=ts)
    k = b.request(ts=ts)
    if thinks:
        b.block(100, "thinking")
    b.block(50, "assistant_text")
    return k


def test_switch_on_at_a_turn_start():
    b = builder()
    _turn(b, False)
    _turn(b, True)      # on: switch
    _turn(b, True)      # still on: none
    _turn(b, False)     # off again: switch
    assert switches(b) == [False, True, False, True]


def test_no_switch_inside_a_tool_loop():
    # turn 1 thinks at its first response, then a tool_result continuation answers without
    # thinking (Claude Code's interleaved responses): not a turn start, so no switch; the turn's
    # state stays "on", so turn 2 (thinking) is no switch and turn 3 (no thinking) is one
    b = builder()
    b.block(200, "user_text")
    b.request(ts=-1)
    b.block(100, "thinking")
    b.tool_call("Read", 1000)
    b.request(ts=-1)                 # continuation: its response does not think
    b.block(50, "assistant_text")
    _turn(b, True)
    _turn(b, False)
    assert switches(b) == [False, False, False, True]


def test_an_attachment_does_not_open_a_turn():
    # hook output / reminders (attachment) arrive inside a turn: only user_text or image open one
    b = builder()
    _turn(b, False)
    b.block(30, "attachment")
    b.request(ts=-1)
    b.block(100, "thinking")
    b.block(50, "assistant_text")
    assert switches(b) == [False, False]
    b.block(40, "image")
    b.request(ts=-1)
    b.block(50, "assistant_text")
    # the image opens a turn; the previous turn's state is still "off" (set by request 0): no switch
    assert switches(b) == [False, False, False]


def test_adaptive_model_never_switches():
    b = builder(models=(OPUS_46,))
    _turn(b, False)
    _turn(b, True)
    _turn(b, False)
    assert switches(b) == [False, False, False]


def test_model_change_is_not_a_switch():
    b = builder(models=(SONNET, "claude-opus-4-5"))
    _turn(b, False)
    b.block(200, "user_text")
    b.request(ts=-1, model=1)        # another model (a break of its own), which thinks
    b.block(100, "thinking")
    b.block(50, "assistant_text")
    b.block(200, "user_text")
    b.request(ts=-1, model=1)        # same model, thinks as the previous turn did: no switch
    b.block(100, "thinking")
    b.block(50, "assistant_text")
    b.block(200, "user_text")
    b.request(ts=-1, model=1)        # same model, thinking off: switch
    b.block(50, "assistant_text")
    assert switches(b) == [False, False, False, True]


def test_compaction_is_not_a_switch():
    b = builder()
    _turn(b, False)
    b.compact(2000)
    _turn(b, True)                   # a new partition: a break of its own
    _turn(b, False)                  # same partition, thinking off: switch
    assert switches(b) == [False, False, True]


def test_ignore_turns_the_rule_off():
    b = builder()
    _turn(b, False)
    _turn(b, True)
    _turn(b, False)
    assert switches(b) == [False, True, True]
    assert switches(b, thinking_switch="ignore") == [False, False, False]
    assert switches(b, breakpoints="none") == [False, False, False]


def test_a_turn_without_response_blocks_keeps_the_previous_state():
    b = builder()
    _turn(b, False)
    b.block(200, "user_text")
    b.request(ts=-1)                 # opens a turn, the log holds no response: state stays "off"
    _turn(b, True)                   # compared with "off": switch
    assert switches(b) == [False, False, True]
    b = builder()
    _turn(b, False)
    b.block(200, "user_text")
    b.request(ts=-1)
    _turn(b, False)                  # "off" as before: no switch
    assert switches(b) == [False, False, False]


def test_the_first_known_response_of_a_turn_sets_its_state():
    # turn 1: off. Turn 2: request 1 has no response in the log, request 2 (a retry at the same
    # position, no new user block) thinks: turn 2's first known response thinks. Turn 3 thinks:
    # the same as turn 2's first known response, so by the rule no switch at request 3.
    b = builder()
    _turn(b, False)
    b.block(200, "user_text")
    b.request(ts=-1)                 # no response blocks
    b.request(ts=-1)                 # the retry: same position, thinks
    b.block(100, "thinking")
    b.block(50, "assistant_text")
    _turn(b, True)
    assert switches(b)[3] is False


# --- the engine: a switch drops the message entries ------------------------------------------

def test_drop_messages_keeps_the_system_prefix_and_other_models():
    c = StreamCache(CacheConfig())
    c.entries = [[0, 0, 4, 15_000.0, 10 * MIN, TTL_MS["5m"]], [0, SYS, 0, 10_000.0, 10 * MIN, TTL_MS["5m"]],
                 [1, 0, 4, 14_000.0, 10 * MIN, TTL_MS["5m"]], [0, 1, 2, 12_000.0, 10 * MIN, TTL_MS["5m"]]]
    c.drop_messages(0)
    assert c.entries == [[0, SYS, 0, 10_000.0, 10 * MIN, TTL_MS["5m"]], [1, 0, 4, 14_000.0, 10 * MIN, TTL_MS["5m"]]]


def switch_stream(recorded=(0, 10_500, 10_000), thinks=True, r2_ts=2 * MIN):
    """10,000 overhead. r0: user 500, answers with a tool call (no thinking); r1: the tool
    result (2,000), answers in text 300 (no thinking); r2: the user's 200 opens a turn, and its
    response thinks (a switch) or not."""
    b = builder()
    b.block(500, "user_text")                      # 0
    b.request(ts=0, read=recorded[0], w5=10_500 - recorded[0], has_usage=True)
    b.tool_call("Read", 2000)                      # 1 (tool_use 50), 2 (result 2,000)
    b.request(ts=1 * MIN, read=recorded[1], w5=12_550 - recorded[1], has_usage=True)
    b.block(300, "assistant_text")                 # 3
    b.block(200, "user_text")                      # 4
    b.request(ts=r2_ts, read=recorded[2], w5=13_050 - recorded[2], has_usage=True)
    b.block(100, "thinking" if thinks else "assistant_text")
    b.block(50, "assistant_text")
    return b


def test_switch_stream_is_a_switch_at_request_2():
    assert switches(switch_stream()) == [False, False, True]
    assert switches(switch_stream(thinks=False)) == [False, False, False]


def test_engine_switch_model_only():
    # r0 (0:00): 10,500 in, nothing cached: writes 10,500 and the 10,000 system entry.
    # r1 (1:00): 12,550 in: reads 10,500, writes 2,050.
    # r2 (2:00): the turn-end write at 1:00 (the response ended in text) cached 10,000 + 2,850 =
    # 12,850; thinking switched on: every message entry is dropped, the system entry stays:
    # r2 reads 10,000 and writes 13,050 - 10,000 = 3,050.
    d = run(switch_stream(), observed_evictions="none")
    assert d["cache_read"] == [0, 10_500, 10_000]
    assert d["cache_write_5m"] == [10_500, 2_050, 3_050]
    # without the rule r2 reads the turn-end entry, 12,850, and writes the user's 200
    d = run(switch_stream(), observed_evictions="none", thinking_switch="ignore")
    assert d["cache_read"] == [0, 10_500, 12_850]
    assert d["cache_write_5m"] == [10_500, 2_050, 200]
    # no switch (r2 does not think): the same as ignoring the rule
    d = run(switch_stream(thinks=False), observed_evictions="none")
    assert d["cache_read"] == [0, 10_500, 12_850]


def test_engine_switch_calibrated():
    # the log records r2 reading the system prefix (10,000): with the rule the replay agrees;
    # the turn-end write is not replayed (the recorded read does not reach 12,850), so without
    # the rule r2 reads r1's entry, 12,550, and writes 500
    d = run(switch_stream())
    assert d["cache_read"] == [0, 10_500, 10_000]
    assert d["cache_write_5m"] == [10_500, 2_050, 3_050]
    d = run(switch_stream(), thinking_switch="ignore")
    assert d["cache_read"] == [0, 10_500, 12_550]
    assert d["cache_write_5m"] == [10_500, 2_050, 500]


def test_engine_switch_calibrated_the_log_wins():
    # where the log records a read of the whole prefix (12,850 with the turn-end text) despite
    # the switch, the calibrated replay's observed write restores it (the rule is a model rule;
    # calibration replays what the log shows): r2 reads 12,850 either way
    for rule in ("invalidate", "ignore"):
        d = run(switch_stream(recorded=(0, 10_500, 12_850)), thinking_switch=rule)
        assert d["cache_read"] == [0, 10_500, 12_850], rule


def test_engine_switch_is_the_same_for_a_policy_that_changes_nothing():
    class ChangesNothing(Policy):
        name = "changes_nothing"

        def before_request(self, ctx, k):
            pass

    for variant in ("log", "none"):
        assert run(switch_stream(), ChangesNothing(), observed_evictions=variant)["cost"] == \
            run(switch_stream(), observed_evictions=variant)["cost"]


# --- the system prefix from the warm read ---------------------------------------------------

def warm_stream(after: str):
    """30,000 overhead; the first request read 10,000 from cache (another session's system
    prompt). r0: user 500; r1: tool result 2,000; r2: after a thinking switch or a compaction."""
    b = builder(overhead=30_000)
    b.block(500, "user_text")
    b.request(ts=0, read=10_000, w5=20_500, has_usage=True)
    b.tool_call("Read", 2000)
    b.request(ts=1 * MIN, read=30_500, w5=2_050, has_usage=True)
    if after == "compaction":
        b.compact(1000)
        b.block(200, "user_text")
        b.request(ts=2 * MIN, read=10_000, w5=21_200, has_usage=True)
        b.block(50, "assistant_text")
    else:
        b.block(300, "assistant_text")
        b.block(200, "user_text")
        b.request(ts=2 * MIN, read=10_000, w5=23_050, has_usage=True)
        b.block(100, "thinking")
        b.block(50, "assistant_text")
    return b


@pytest.mark.parametrize("after", ["switch", "compaction"])
def test_system_prefix_from_the_warm_read(after):
    # model only. r0 reads the warm 10,000 (the log's read) and writes 20,500; r1 reads 30,500.
    # At r2 the message entries are gone (dropped by the switch, or in another partition): r2
    # reads the system-prefix entry, 10,000 with system_prefix="log" (the breakpoint the warm
    # read shows), 30,000 with "overhead" (every request refreshed a 30,000 entry)
    d = run(warm_stream(after), observed_evictions="none")
    assert d["cache_read"] == [10_000, 30_500, 10_000]
    d = run(warm_stream(after), observed_evictions="none", system_prefix="overhead")
    assert d["cache_read"] == [10_000, 30_500, 30_000]


class LowerOverhead(Policy):
    """Prunes 5,000 tokens of tool definitions: the overhead is 5,000 lower."""

    name = "lower_overhead"

    def overhead(self, ctx, overhead):
        return overhead - 5_000


def test_a_lower_overhead_lowers_the_system_prefix_under_overhead_mode():
    # "overhead": the system entry is the policy's 25,000; after the switch r2 reads it
    d = run(warm_stream("switch"), LowerOverhead(), observed_evictions="none", system_prefix="overhead")
    assert d["cache_read"][2] == 25_000


def test_a_lower_overhead_lowers_the_system_prefix_read_after_a_switch():
    d = run(warm_stream("switch"), LowerOverhead(), observed_evictions="none")
    assert d["cache_read"][2] == 5_000


@pytest.mark.parametrize("after", ["switch", "compaction"])
def test_calibrated_warm_prefixes_follow_the_log(after):
    """Calibrated, a later request's recorded read re-warms the system prefix up to the whole
    overhead (the log says that much was cached), so without an observed eviction the request
    after the switch or compaction reads the 30,000-token overhead: the calibrated variant
    follows the log, the rule applies to the model-only one."""
    d = run(warm_stream(after))
    assert d["cache_read"] == [10_000, 30_500, 30_000]


def test_system_prefixes_by_hand():
    st = warm_stream("switch").stream()
    log, ovh = CacheConfig(), CacheConfig(system_prefix="overhead")
    assert _system_prefixes(st, [30_000.0], log) == [10_000.0]
    assert _system_prefixes(st, [30_000.0], ovh) == [30_000.0]
    # a policy that lowers the overhead by 5,000 lowers the breakpoint by as much
    assert _system_prefixes(st, [25_000.0], log) == [5_000.0]
    assert _system_prefixes(st, [25_000.0], ovh) == [25_000.0]
    # ... never below 0
    assert _system_prefixes(st, [8_000.0], log) == [0.0]


@pytest.mark.parametrize("read,has_usage,want", [(0, True, 30_000.0), (30_000, True, 30_000.0),
                                                  (31_000, True, 30_000.0), (10_000, False, 12_000.0)])
def test_system_prefix_is_the_overhead_unless_the_first_read_is_inside_it(read, has_usage, want):
    # only the stream's first request with usage counts (the one the overhead is inferred at):
    # without usage on the first, the second's warm read of 12,000 decides
    b = builder(overhead=30_000)
    b.block(500, "user_text")
    b.request(ts=0, read=read, has_usage=has_usage)
    b.block(200, "user_text")
    b.request(ts=MIN, read=12_000, has_usage=True)
    assert _system_prefixes(b.stream(), [30_000.0], CacheConfig()) == [want]


def test_system_prefix_is_per_model():
    b = builder(overhead=30_000, models=(SONNET, OPUS_46))
    b.block(500, "user_text")
    b.request(ts=0, read=10_000, has_usage=True)
    b.block(200, "user_text")
    b.request(ts=MIN, model=1, read=12_000, has_usage=True)   # model 1's first request
    b.block(200, "user_text")
    b.request(ts=2 * MIN, model=1, read=20_000, has_usage=True)
    assert _system_prefixes(b.stream(), [30_000.0, 30_000.0], CacheConfig()) == [10_000.0, 12_000.0]


# --- the send clock -------------------------------------------------------------------------

def clock_stream(prompt_after_end: int, response_after_prompt: int):
    """r0: prompt at 0:55, response stamped 1:00, its text ends at 1:10; the user's next prompt
    follows ``prompt_after_end`` later and r1's response is stamped ``response_after_prompt``
    after the prompt."""
    end = 70 * SEC
    prompt = end + prompt_after_end
    b = builder()
    b.block(500, "user_text", ts=55 * SEC)
    b.request(ts=60 * SEC)
    b.block(300, "assistant_text", ts=end)
    b.block(200, "user_text", ts=prompt)
    b.request(ts=prompt + response_after_prompt)
    b.block(50, "assistant_text", ts=prompt + response_after_prompt)
    return b


def test_send_times_by_hand():
    st = clock_stream(290 * SEC, 20 * SEC).stream()
    assert send_times(st, CacheConfig()) == [55 * SEC, 360 * SEC]
    assert send_times(st, CacheConfig(clock="response")) == [60 * SEC, 380 * SEC]
    # a prompt stamped exactly 5 minutes before its response is taken; a millisecond more is not
    st = clock_stream(290 * SEC, MAX_LATENCY_MS).stream()
    assert send_times(st, CacheConfig())[1] == 360 * SEC
    st = clock_stream(290 * SEC, MAX_LATENCY_MS + 1).stream()
    assert send_times(st, CacheConfig())[1] == 360 * SEC + MAX_LATENCY_MS + 1


def test_send_times_ignores_missing_and_later_stamps():
    b = builder()
    b.block(500, "user_text")                   # no stamp (-1)
    b.request(ts=MIN)
    b.block(200, "user_text", ts=0)             # stamp 0: not a time
    b.request(ts=2 * MIN)
    b.block(200, "user_text", ts=4 * MIN)       # after the request's own time
    b.request(ts=3 * MIN)
    b.request(ts=5 * MIN)                       # no block of its own: block 2 (4:00) is its last input
    assert send_times(b.stream(), CacheConfig()) == [MIN, 2 * MIN, 3 * MIN, 4 * MIN]


def test_send_clock_reads_what_the_response_clock_has_expired():
    # r0 is sent at 0:55: writes 10,500 and the 10,000 system entry, alive until 5:55. Its text
    # ends at 1:10: the turn-end write reads 10,500 and caches 10,800 until 6:10 (refreshing
    # the others to 6:10). The user's prompt comes 290 s later (6:00), r1's response 20 s
    # after it (6:20).
    b = clock_stream(290 * SEC, 20 * SEC)
    # send clock: looked up at 6:00, before 6:10: reads 10,800, writes 200
    d = run(b, ttl="5m", observed_evictions="none", clock="send")
    assert d["cache_read"] == [0, 10_800] and d["cache_write_5m"] == [10_500, 200]
    # response clock: at 6:20 everything expired: 11,000 written
    d = run(b, ttl="5m", observed_evictions="none", clock="response")
    assert d["cache_read"] == [0, 0] and d["cache_write_5m"] == [10_500, 11_000]


def test_a_prompt_stamped_more_than_5_minutes_before_its_response_is_not_the_send_time():
    # the prompt at 1:20 (10 s after the response ended, every entry alive until 6:10):
    # its response 5:00 later (6:20) -> the prompt's stamp is the send time: a hit;
    # 5:00.001 later -> the stamp is ignored, the request's 6:20.001 is used: expired
    d = run(clock_stream(10 * SEC, MAX_LATENCY_MS), ttl="5m", observed_evictions="none", clock="send")
    assert d["cache_read"] == [0, 10_800]
    d = run(clock_stream(10 * SEC, MAX_LATENCY_MS + 1), ttl="5m", observed_evictions="none", clock="send")
    assert d["cache_read"] == [0, 0]


# --- breaks: the thinking_switch cause -------------------------------------------------------

def _breaks(b):
    rows, seen, skipped = classify_stream(b.stream(), b.models, PRICES, b.vocab.tool_names)
    return rows


def test_break_classified_as_thinking_switch():
    # r2 reads only the 10,000 system prefix where 12,850 was cached (r1's 12,550 extended to the
    # final text by the turn-end request): a break of 2,850 tokens, 1:00 after r1, at a turn start
    # where thinking switched on
    rows = _breaks(switch_stream())
    assert [(r["request"], r["cause"], r["cached"], r["read"], r["tokens"], r["p"]) for r in rows] == \
        [(2, "thinking_switch", 12_850, 10_000, 2_850, 0)]
    assert rows[0]["evidence"] == "direct" and rows[0]["turn_start"] is True
    # the same break without the switch: the first message was presumably re-rendered
    assert [r["cause"] for r in _breaks(switch_stream(thinks=False))] == ["first_message_rewritten"]
    # idle past the 5-minute TTL comes first
    assert [r["cause"] for r in _breaks(switch_stream(r2_ts=7 * MIN))] == ["ttl_5m"]


@pytest.mark.parametrize("name", ["claude-sonnet-4-0", "claude-opus-4-0", "claude-opus-4.5", "claude-sonnet-4.5",
                                  "claude-opus-4.1"])
def test_budget_thinking_aliases_and_dotted_names(name):
    assert budget_thinking(name)
    assert not budget_thinking(name.replace("4.5", "4.6").replace("4-0", "4-6").replace("4.1", "4.7"))


def _idle_stream(prompt_ts: int, r2_ts: int):
    """As switch_stream without the switch, with the r2 prompt's own time stamp."""
    b = builder()
    b.block(500, "user_text", ts=0)
    b.request(ts=0, read=0, w5=10_500, has_usage=True)
    b.tool_call("Read", 2000)
    b.request(ts=1 * MIN, read=10_500, w5=2_050, has_usage=True)
    b.block(300, "assistant_text", ts=1 * MIN)
    b.block(200, "user_text", ts=prompt_ts)
    b.request(ts=r2_ts, read=10_000, w5=3_050, has_usage=True)
    b.block(50, "assistant_text")
    return b


def test_breaks_measure_idle_to_the_send_time_as_the_engine_does():
    # the prompt at 5:30, its response stamped 6:30: sent at 5:30, 4:30 after the response that
    # ended at 1:00, within the 5-minute TTL: not an expiry
    rows = _breaks(_idle_stream(prompt_ts=5 * MIN + 30_000, r2_ts=6 * MIN + 30_000))
    assert [(r["cause"], r["idle_s"]) for r in rows] == [("first_message_rewritten", 270.0)]
    # a prompt stamped 5:30 before its response (7:00) is a rewritten stamp: the request's time
    # is the send time, 6:00 after the previous response: an expiry
    rows = _breaks(_idle_stream(prompt_ts=1 * MIN + 30_000, r2_ts=7 * MIN))
    assert [(r["cause"], r["idle_s"]) for r in rows] == [("ttl_5m", 360.0)]



def test_a_model_switch_resets_the_thinking_state():
    """An Opus turn that thinks, then a Sonnet turn whose first request has no logged response and
    whose retry does not think: the Sonnet turn starts from its own state, so no switch."""
    b = builder(models=(SONNET, OPUS_46))
    b.block(200, "user_text")
    b.request(ts=-1, model=1)
    b.block(100, "thinking")
    b.block(50, "assistant_text")
    b.block(200, "user_text")
    b.request(ts=-1)                 # Sonnet, no response in the log
    b.request(ts=-1)                 # its retry: no thinking
    b.block(50, "assistant_text")
    assert switches(b) == [False, False, False]


def test_a_switch_that_reads_less_than_the_system_prefix_is_not_named_a_switch():
    """The switch keeps the system prefix: a read of 0 at a switching turn is another cause."""
    rows = _breaks(switch_stream(recorded=(0, 10_500, 0)))
    assert [r["cause"] for r in rows] == ["system_changed"]
