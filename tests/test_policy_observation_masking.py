"""observation_masking: SWE-agent's LastNObservations, hand-computed on small streams."""

import pytest

from replay.engine import ReplayOptions, replay_session
from replay.model.cache import CacheConfig
from replay.model.costs import PriceTable
from replay.policies import build
from replay.policies.base import ParamError
from replay.policies.observation_masking import ObservationMasking, masked_count

from trace_builder import TraceBuilder

PRICES = PriceTable(overrides={"m": {"input": 3, "cache_write_5m": 3.75, "cache_write_1h": 6, "cache_read": 0.3,
                                      "output": 15, "min_cacheable": 1024}})
Cls = ObservationMasking


def spy(**params):
    class Spy(Cls):
        def before_request(self, ctx, k):
            super().before_request(ctx, k)
            self.sizes.append(list(ctx.eff[:ctx.stream.r_pos[k]]))
    p = Spy(Cls.make_params(params))
    p.sizes = []
    return p


def run(b, policy):
    session, vocab = b.build()
    return replay_session(session, vocab, policy, ReplayOptions(CacheConfig(ttl="5m"), PRICES, detail=True))


def stream(n, tool="Bash", resource=None):
    """A task prompt, then n tool calls (result i: 1000 + 100 i tokens), a request after each,
    20 s apart (the cache stays warm)."""
    b = TraceBuilder(overhead=10_000, models=("m",))
    b.block(500, "user_text", ts=0)
    b.request(ts=0)
    res = []
    for i in range(n):
        res.append(b.tool_call(tool, 1000 + 100 * i, args=f"c{i}", ts=20_000 * (i + 1),
                               resource=resource(i) if resource else None))
        b.request(ts=20_000 * (i + 1))
    return b, res


def swe_agent_omitted(n_obs, n, polling):
    """SWE-agent's _get_omit_indices, transcribed: the history's observations are the
    instance template then n_obs tool outputs."""
    observation_indices = list(range(n_obs + 1))
    last_removed_idx = max(0, (len(observation_indices) // polling) * polling - n)
    return len(observation_indices[1:last_removed_idx])


@pytest.mark.parametrize("n,polling", [(10, 1), (10, 5), (5, 3), (20, 10), (1, 1)])
def test_the_cut_is_swe_agents(n, polling):
    for n_obs in range(0, 60):
        assert masked_count(n_obs, n, polling) == swe_agent_omitted(n_obs, n, polling)


def test_polling_zero_is_refused_as_swe_agent_divides_by_it():
    # SWE-agent: (len(observation_indices) // self.polling) -> ZeroDivisionError at polling 0
    with pytest.raises(ZeroDivisionError):
        swe_agent_omitted(5, 10, 0)
    with pytest.raises(ParamError, match="polling = 0: must be >= 1"):
        Cls.make_params({"polling": 0})
    with pytest.raises(ParamError, match="polling"):
        build("observation_masking", {"polling": "0"})
    with pytest.raises(ValueError, match="polling"):
        masked_count(5, 10, 0)
    assert Cls.Params().polling == 1  # SWE-agent's default


def test_fifteen_results_with_window_ten_mask_the_five_oldest():
    b, res = stream(15)
    p = spy(window=10)
    r = run(b, p)
    last = p.sizes[-1]
    # results 1-5 are masked to the 9-token placeholder, 6-15 keep their size
    assert [last[i] for i in res] == [9.0] * 5 + [1000.0 + 100 * i for i in range(5, 15)]
    assert [last[i - 1] for i in res] == [50.0] * 15      # the tool calls stay
    # the cut moves one result per request from the 11th result on
    for k, sizes in enumerate(p.sizes):
        assert sum(1 for i in res if i < len(sizes) and sizes[i] == 9.0) == max(0, k - 10)
    assert r.figures["blocks_changed"] == 5
    assert r.figures["tokens_saved"] == sum(1000 + 100 * i - 9 for i in range(5))   # 5,955
    assert r.figures["masks"] == 5
    base = run(b, build("noop"))
    # context sent: requests 11..15 each miss the results masked by then
    # 991 x 5 + 1,091 x 4 + 1,191 x 3 + 1,291 x 2 + 1,391 = 16,865
    assert base.figures["input_total"] - r.figures["input_total"] == 16_865
    # every mask rewrites the prefix from the masked result on: one bust per request 11..15
    assert r.figures["busts"] == 5 and base.figures["busts"] == 0


def test_polling_batches_the_masks():
    b, res = stream(20)
    p = spy(window=10, polling=5)
    r = run(b, p)
    masked = [sum(1 for i in res if i < len(s) and s[i] == 9.0) for s in p.sizes]
    # request k follows k results; with n=10, p=5 the cut moves when k + 1 is a multiple of 5:
    # at k=14 (results 1-4) and at k=19 (results 1-9); 10 to 14 results are kept in between
    assert masked == [0] * 14 + [4] * 5 + [9] * 2
    kept = [k - m for k, m in enumerate(masked)]
    assert min(kept[10:]) == 10 and max(kept) == 14
    assert r.figures["masks"] == 2 and r.figures["busts"] == 2
    every = run(stream(20)[0], Cls(Cls.make_params({"window": 10})))
    assert every.figures["masks"] == 10 and every.figures["busts"] == 10
    # fewer busts, but more context: polling trades tokens for cache
    assert r.figures["input_total"] > every.figures["input_total"]


def test_only_the_named_tools_are_observations_and_keep_tools_are_never_masked():
    b = TraceBuilder(overhead=10_000, models=("m",))
    b.block(500, "user_text", ts=0)
    res = []
    for i, tool in enumerate(["Bash", "Grep", "Bash", "Bash", "Grep"]):
        res.append(b.tool_call(tool, 1000, args=f"c{i}", ts=1000 * i))
        b.request(ts=1000 * i + 500)
    b.request(ts=10_000)
    p = spy(window=1, tools="Bash")
    run(b, p)
    assert [p.sizes[-1][i] for i in res] == [9.0, 1000.0, 9.0, 1000.0, 1000.0]
    p = spy(window=1, keep_tools="Grep")
    run(b, p)
    assert [p.sizes[-1][i] for i in res] == [9.0, 1000.0, 9.0, 9.0, 1000.0]


def parallel_steps(widths):
    """A task prompt, then one request per step carrying ``len`` parallel tool results (1000 tokens each)."""
    b = TraceBuilder(overhead=10_000, models=("m",))
    b.block(500, "user_text", ts=0)
    b.request(ts=0)
    steps = []
    t = 0
    for s, w in enumerate(widths):
        t += 20_000
        steps.append([b.tool_call("Bash", 1000, args=f"s{s}c{j}", ts=t) for j in range(w)])
        b.request(ts=t)
    return b, steps


def test_a_step_with_several_results_is_one_observation():
    # SWE-agent's agents run one action per step and append one observation per step; a
    # request carrying three parallel results is one observation, so with n = 2 after four
    # steps (N = 4 + 1 template) the oldest 2 steps are elided, all their results together
    b, steps = parallel_steps([3, 1, 2, 1])
    p = spy(window=2)
    r = run(b, p)
    last = p.sizes[-1]
    assert [[last[i] for i in st] for st in steps] == [[9.0] * 3, [9.0], [1000.0] * 2, [1000.0]]
    # the cut moves once per step: after step 3 (N = 4: step 1 masked), after step 4 (step 2)
    assert r.figures["masks"] == 2 and r.figures["blocks_changed"] == 4
    masked = [sum(1 for st in steps for i in st if i < len(sz) and sz[i] == 9.0) for sz in p.sizes]
    assert masked == [0, 0, 0, 3, 4]


def test_observation_result_counts_each_result_as_before():
    # the rule before issue 36: 7 results are 7 observations, so n = 2 keeps the 2 newest results
    b, steps = parallel_steps([3, 1, 2, 1])
    p = spy(window=2, observation="result")
    run(b, p)
    last = p.sizes[-1]
    assert [[last[i] for i in st] for st in steps] == [[9.0] * 3, [9.0], [9.0, 1000.0], [1000.0]]
    # with one result per request the two rules agree
    b1, _ = stream(15)
    a, c = spy(window=10), spy(window=10, observation="result")
    run(b1, a)
    run(b1, c)
    assert a.sizes == c.sizes
    with pytest.raises(ParamError, match="observation"):
        Cls.make_params({"observation": "turn"})


def test_a_reread_of_a_masked_file_is_charged_and_it_is_never_masked_again():
    b, res = stream(3, tool="Read", resource=lambda i: f"/f{i}")
    b.tool_call("Read", 700, resource="/f0", args="again", ts=100_000)
    b.request(ts=100_000)
    p = spy(window=1)
    r = run(b, p)
    assert p.sizes[2][res[0]] == 9.0
    assert p.sizes[-1][res[0]] == 1000.0          # given back at the re-read
    assert r.figures["trimmed_reread"] == 1 and r.figures["reread_restored"] == 1
    assert r.figures["reread_restored_tokens"] == 991
    p = spy(window=1, reread_cost=False)
    r = run(b, p)
    assert p.sizes[-1][res[0]] == 9.0 and r.figures["trimmed_reread"] == 1


def test_a_compaction_of_the_log_starts_a_new_count():
    b, res = stream(3)
    b.compact(800)
    more = [b.tool_call("Bash", 2000, args=f"d{i}", ts=200_000 + i) for i in range(2)]
    b.request(ts=300_000)
    p = spy(window=2)
    run(b, p)
    # 2 results in the new partition: nothing to mask there
    assert [p.sizes[-1][i] for i in more] == [2000.0, 2000.0]


def test_bad_parameters_are_named():
    with pytest.raises(ParamError, match="window"):
        Cls.make_params({"window": 0})
    with pytest.raises(ParamError, match="polling"):
        Cls.make_params({"polling": -1})
    with pytest.raises(ParamError, match="did you mean 'window'"):
        build("observation_masking", {"windw": 5})
