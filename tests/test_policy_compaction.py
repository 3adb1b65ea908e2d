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
from replay.policies.claude_code_autocompact import TRIGGERS, ClaudeCodeAutocompact, derive, trigger_for
from replay.policies.server_compaction import ServerCompaction, UnsupportedModelWarning, supported

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
    assert ClaudeCodeAutocompact().reserve(None) == 33_000  # an unknown client version: the documented default
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
        "observation_masking": ({"window": 10, "polling": 1, "placeholder_tokens": 9.0, "observation": "step"},
                                "LastNObservations"),
        "server_compaction": ({"trigger": 150_000, "summary_tokens": 3_500.0, "instruction_tokens": 95.0},
                              "compact_20260112"),
        "claude_code_autocompact": ({"window_tokens": 200_000, "reserve_tokens": None, "summary_tokens": 2_792.0},
                                    "compact_boundary"),
    }
    for name, (defaults, source) in want.items():
        params = {p["name"]: p["default"] for p in got[name]["params"]}
        assert {k: params[k] for k in defaults} == defaults
        assert source in got[name]["source"]
        assert got[name]["retroactive"] is True


# --- issue 36: the auto-compact trigger per client version --------------------------------------

# the measured per-version figures of the module doc (auto compactions' preTokens, sustained context)
MEASURED = {
    "2.0.76": ([123_067, 123_258, 123_332], 148_926),
    "2.1.1": ([155_301, 155_539], 154_524),
    "2.1.7": ([155_241, 155_413, 155_598, 155_830, 156_699, 156_822], 154_803),
    "2.1.17": ([155_031, 155_099, 155_333, 155_472, 157_692], 154_959),
    "2.1.22": ([], 159_319),
    "2.1.29": ([167_094, 167_174, 167_335, 167_369], 166_762),
    "2.1.39": ([167_361, 167_370, 167_389, 167_998], 166_630),
}


def test_derive_splits_where_a_client_carried_a_context_past_the_rows_compactions():
    rows = derive(MEASURED)
    assert [(r["first"], r["last"], r["trigger"], r["compactions"]) for r in rows] == [
        ("2.0.76", "2.0.76", None, 3),       # thin (and contradicted: 148,926 carried on): the default
        ("2.1.1", "2.1.17", 155_000, 13),
        ("2.1.22", "2.1.39", 167_000, 8),    # starts where 159,319 was carried past 155k
    ]


def test_thin_evidence_falls_back_to_the_default_rather_than_fitting_a_few_points():
    # 2.0.76's three compactions at 123k: fewer than 5, so no row of its own trigger
    assert derive({"2.0.76": (MEASURED["2.0.76"][0], 0)})[0]["trigger"] is None
    assert trigger_for("2.0.76") == 167_000
    five = [123_067, 123_258, 123_332, 123_400, 123_500]
    assert derive({"2.0.76": (five, 0)})[0]["trigger"] == 123_000
    # and a row whose sustained context passes its own compactions contradicts itself
    assert derive({"2.0.76": (five, 148_926)})[0]["trigger"] is None


def test_the_table_by_client_version():
    assert [trigger_for(v) for v in ("2.1.1", "2.1.7", "2.1.20", "2.1.22", "2.1.29", "2.1.49", "2.1.199")] == [
        155_000, 155_000, 155_000, 167_000, 167_000, 167_000, 167_000]
    assert [trigger_for(v) for v in (None, "", "x.y", "0.2.9", "1.0.45", "2.0.76")] == [167_000] * 6
    assert ClaudeCodeAutocompact().reserve("2.1.7") == 45_000
    fixed = ClaudeCodeAutocompact(ClaudeCodeAutocompact.make_params({"reserve_tokens": 50_000}))
    assert fixed.reserve("2.1.7") == fixed.reserve("2.1.29") == 50_000
    assert ClaudeCodeAutocompact.make_params({"reserve_tokens": "none"}).reserve_tokens is None


@pytest.mark.parametrize("version,first", [("2.1.7", 1), ("2.1.29", 2), (None, 2)])
def test_the_replay_fires_at_its_clients_trigger(version, first):
    # window 60,000: 2.1.7 keeps 45,000 free (trigger 15,000), 2.1.29 and an unknown client 33,000
    # (27,000); request j sends 10,500 + 10,050 j, so 2.1.7 compacts at request 1, the others at 2
    b = TraceBuilder(overhead=10_000, models=("m",), version=version)
    b.block(500, "user_text", ts=0)
    b.request(ts=0)
    for i in range(3):
        b.tool_call("Bash", 10_000, args=f"c{i}", ts=20_000 * (i + 1))
        b.request(ts=20_000 * (i + 1))
    p = spy(ClaudeCodeAutocompact, window_tokens=60_000, summary_tokens=3_500)
    r = run(b, p)
    assert r.figures["compactions"] >= 1
    assert r.detail["input_total"][first] < 10_500 + 10_050 * first
    assert all(r.detail["input_total"][k] == 10_500 + 10_050 * k for k in range(first))


def _bench():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "bench" / "autocompact_trigger.py"
    spec = importlib.util.spec_from_file_location("autocompact_trigger_bench", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_table_is_derived_from_the_shared_logs_and_holds_on_later_versions():
    from conftest import shared_logs

    bench = _bench()
    roots = [str(shared_logs(d)) for d in ("claude-code-2026", "entire-cli", "claude-code")]
    events, _, sustained, big = bench.scan(roots)
    vers = bench.per_version(events, sustained)
    rows = derive(vers)
    assert tuple((r["first"], r["trigger"], r["compactions"]) for r in rows) == TRIGGERS
    # derived on the versions up to 2.1.49 only: the same rows up to there
    early = {v: x for v, x in vers.items() if tuple(map(int, v.split("."))) <= (2, 1, 49)}
    t_early = tuple((r["first"], r["trigger"], r["compactions"]) for r in derive(early))
    assert t_early == TRIGGERS[:4]
    checks = bench.holds(t_early, vers, big, "2.1.49")
    assert len(checks) == 60 and [c[0] for c in checks if not c[4]] == ["2.1.104", "2.1.110"]


# --- issue 36: server_compaction on a model outside the documented list -----------------------

def test_supported_models_are_the_docs_list():
    assert all(supported(m) for m in ("claude-opus-4-6", "claude-opus-4-7", "claude-sonnet-4-6",
                                      "claude-sonnet-4-6-20260101", "claude-mythos-preview"))
    assert not any(supported(m) for m in ("claude-opus-4-5-20251101", "claude-sonnet-4-5-20250929",
                                          "claude-haiku-4-5", "claude-opus-4-8", "claude-opus-4-60", "m", ""))


def _priced(model):
    rates = {"input": 3, "cache_write_5m": 3.75, "cache_write_1h": 6, "cache_read": 0.3, "output": 15,
             "min_cacheable": 1024}
    b = TraceBuilder(overhead=10_000, models=(model,))
    b.block(500, "user_text", ts=0)
    b.request(ts=0)
    for i in range(5):
        b.tool_call("Bash", 10_000, args=f"c{i}", ts=20_000 * (i + 1))
        b.request(ts=20_000 * (i + 1))
    session, vocab = b.build()
    return session, vocab, ReplayOptions(CacheConfig(ttl="5m"), PriceTable(overrides={model: rates}))


def test_an_unsupported_model_is_named_in_a_warning_and_in_the_figures(recwarn):
    session, vocab, opts = _priced("claude-opus-4-5-20251101")
    with pytest.warns(UnsupportedModelWarning, match="claude-opus-4-5-20251101.*outside compact_20260112"):
        r = replay_session(session, vocab, build("server_compaction", {"trigger": 50_000}), opts)
    assert r.figures["unsupported_model_requests"] == 6
    assert r.figures["unsupported_model_compactions"] == r.figures["compactions"] == 1


def test_a_supported_model_is_replayed_without_a_warning():
    import warnings

    session, vocab, opts = _priced("claude-opus-4-6")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnsupportedModelWarning)
        r = replay_session(session, vocab, build("server_compaction", {"trigger": 50_000}), opts)
    assert r.figures["compactions"] == 1
    assert r.figures["unsupported_model_requests"] == r.figures["unsupported_model_compactions"] == 0
