"""Cache what-ifs (issue 26): hand-computed scenarios, the offline bound, the CLI.

Prices of the test model "m", $ per million tokens: input 3, 5m write 3.75, 1h write 6, read
0.3, output 15; minimum cacheable prefix 1,024. Every stream below: a 10,000-token system
prefix (overhead) and a 2,000-token prompt (request 0 at t=0: 12,000 tokens), then a tool call
(50 + 1,000 tokens) answered by request 1 (13,050 tokens) after an idle gap; 100 output tokens
per request (0.0015 $). No usage is recorded, so nothing is taken from the log but the sizes.
"""

import json
import math
import random
from dataclasses import replace

import pytest
from click.testing import CliRunner

from replay.cli.main import main
from replay.engine import ReplayOptions, replay_session
from analysis.whatif import whatif
from replay.experiments.whatif import BOUND, FAMILY, SCENARIOS, UnknownScenario, pick
from replay.model.cache import CacheConfig
from replay.model.costs import PriceTable
from replay.model.whatif import ClientCache, KeepAlive, first_idle_ttls
from replay.policies.base import Policy

from conftest import shared_dataset
from trace_builder import MIN, TraceBuilder

PRICES = PriceTable(overrides={"m": {"input": 3, "cache_write_5m": 3.75, "cache_write_1h": 6, "cache_read": 0.3,
                                      "output": 15, "min_cacheable": 1024}})
BASE = ReplayOptions(CacheConfig(observed_evictions="none"), PRICES)
OUT = 100 * 15e-6  # each request's 100 output tokens


def ping(read: float) -> float:
    """A keep-alive ping: the prefix read, 8 uncached input tokens, 1 output token."""
    return read * 0.3e-6 + 8 * 3e-6 + 1 * 15e-6


def two_requests(gap_ms: int, key: str = "s1") -> TraceBuilder:
    b = TraceBuilder(overhead=10_000, models=("m",), session_key=key)
    b.block(2000, "user_text", turn=1)
    b.request(ts=0)
    b.tool_call("Bash", 1000)  # a tool loop: no turn-end write between the requests
    b.request(ts=gap_ms)
    return b


def cost(b: TraceBuilder, scenario: str | None = None, client: ClientCache | None = None, **cache) -> float:
    if scenario is not None:
        opts = SCENARIOS[scenario].options(BASE)
    else:
        from replay.model.whatif import WhatIf

        opts = ReplayOptions(replace(BASE.cache, **cache), PRICES, False,
                             WhatIf(client=client) if client is not None else None)
    s, v = b.build()
    return replay_session(s, v, Policy(), opts).figures["cost"]


def test_six_minute_gap_under_5m_1h_and_a_keepalive_at_4_minutes():
    b = two_requests(6 * MIN)
    # 5m: request 0 writes 12,000 at 3.75; the entry expires at 5:00, so request 1 writes all 13,050
    c5 = (12_000 * 3.75e-6 + OUT) + (13_050 * 3.75e-6 + OUT)
    assert cost(b, ttl="5m") == pytest.approx(c5)
    # 1h: request 0 writes 12,000 at 6; request 1 reads 12,000 and writes the 1,050 new tokens at 6
    c1h = (12_000 * 6e-6 + OUT) + (12_000 * 0.3e-6 + 1_050 * 6e-6 + OUT)
    assert cost(b, ttl="1h") == pytest.approx(c1h)
    # keep-alive every 4 minutes, horizon 10 minutes: a ping at 4:00 reads 12,000 (alive to 9:00),
    # request 1 at 6:00 reads 12,000 and writes 1,050 at 3.75; after it (the stream's last request)
    # pings at 10:00 and 14:00 (within 10 minutes of 6:00) read 13,050 and are charged although
    # nothing uses them
    keep = ClientCache(keepalive=KeepAlive(interval_s=240, horizon_s=600))
    ck = (12_000 * 3.75e-6 + OUT) + ping(12_000) + (12_000 * 0.3e-6 + 1_050 * 3.75e-6 + OUT) + 2 * ping(13_050)
    assert cost(b, ttl="5m", client=keep) == pytest.approx(ck)
    assert ck < c1h < c5
    # without the tail, only the ping that was used is paid
    no_tail = ClientCache(keepalive=KeepAlive(interval_s=240, horizon_s=600, tail=False))
    assert cost(b, ttl="5m", client=no_tail) == pytest.approx(ck - 2 * ping(13_050))


def test_ninety_minute_gap_pings_cost_more_than_they_save():
    b = two_requests(90 * MIN)
    c5 = (12_000 * 3.75e-6 + OUT) + (13_050 * 3.75e-6 + OUT)
    assert cost(b, ttl="5m") == pytest.approx(c5)
    # every 270 s up to 60 minutes: 13 pings (13 x 270 s = 58:30), the entry dies at 63:30 and request 1 at 90:00
    # writes everything again; after it 13 more pings of 13,050 tokens
    sc = cost(b, "keepalive_60m")
    assert sc == pytest.approx(c5 + 13 * ping(12_000) + 13 * ping(13_050))
    # pinging through the whole gap (no horizon): 19 pings (270 s ... 85:30) keep 12,000 alive, which
    # saves a rewrite of 12,000 tokens (at 3.75 instead of 0.3) but costs more than that
    through = ClientCache(keepalive=KeepAlive(interval_s=270, horizon_s=7200, tail=False))
    ct = cost(b, ttl="5m", client=through)
    assert ct == pytest.approx((12_000 * 3.75e-6 + OUT) + 19 * ping(12_000) + (12_000 * 0.3e-6 + 1_050 * 3.75e-6 + OUT))
    assert 19 * ping(12_000) > 12_000 * (3.75e-6 - 0.3e-6)
    assert ct > c5
    # with hindsight the bound does not ping: it pays the cheapest of the family (here the 5m replay)
    got = whatif(b.dataset(), BASE, [*FAMILY, BOUND], n_resamples=50, per_session=True)
    per = got["per_session"]
    assert per[BOUND][0] == pytest.approx(min(per[n][0] for n in ["recorded", *FAMILY]))
    assert per[BOUND][0] == pytest.approx(c5)


def test_mixed_layout_keeps_the_system_prefix_for_an_hour():
    b = two_requests(6 * MIN)
    # request 0 writes the 10,000-token system prefix at the 1h price and the 2,000 after it at the 5m price;
    # at 6:00 the conversation entry is gone, the system entry is alive: read 10,000, write 3,050 at 5m
    c = (10_000 * 6e-6 + 2_000 * 3.75e-6 + OUT) + (10_000 * 0.3e-6 + 3_050 * 3.75e-6 + OUT)
    assert cost(b, "ttl_mixed") == pytest.approx(c)


def test_online_rule_switches_to_1h_after_the_first_long_gap_only():
    assert first_idle_ttls([0, 60_000, 460_000, 470_000]) == [300_000, 300_000, 3_600_000, 3_600_000]
    b = two_requests(6 * MIN)
    b.tool_call("Bash", 500)
    b.request(ts=6 * MIN + 20 * MIN)  # 20 minutes after request 1
    # request 0 (5m) writes 12,000; request 1 sees a 6-minute gap: it misses and writes 13,050 at 1h; request 2
    # 20 minutes later reads them (1h) and writes 550 at 1h
    c = (12_000 * 3.75e-6 + OUT) + (13_050 * 6e-6 + OUT) + (13_050 * 0.3e-6 + 550 * 6e-6 + OUT)
    assert cost(b, "online_1h_after_idle") == pytest.approx(c)


def test_openai_rules_charge_no_writes_and_read_in_128_token_steps():
    b = two_requests(6 * MIN)
    # request 0: 12,000 uncached; request 1 (within the 10-minute retention) reads 1,024 + 128 x 85 = 11,904
    # of the 12,000 cached tokens and sends 1,146 uncached
    c = (12_000 * 3e-6 + OUT) + (11_904 * 0.3e-6 + 1_146 * 3e-6 + OUT)
    assert cost(b, "openai_caching") == pytest.approx(c)


def test_whatif_never_copies_recorded_misses():
    # the calibrated options given to whatif are turned into the model-only variant
    b = two_requests(6 * MIN)
    cal = ReplayOptions(CacheConfig(), PRICES)
    a = whatif(b.dataset(), cal, ["ttl_1h"], n_resamples=20)
    m = whatif(b.dataset(), BASE, ["ttl_1h"], n_resamples=20)
    assert a["scenarios"][0]["scenario"]["cost"] == m["scenarios"][0]["scenario"]["cost"]
    assert a["scenarios"][0]["variant"] == "model-only"


def test_unknown_scenario_says_did_you_mean():
    with pytest.raises(UnknownScenario, match="did you mean 'ttl_1h'"):
        pick(["ttl_1hr"])
    assert pick([]) == [*SCENARIOS, BOUND]


def _random_session(seed: int) -> TraceBuilder:
    rnd = random.Random(seed)
    b = TraceBuilder(overhead=rnd.choice([3_000, 10_000]), models=("m",), session_key=f"r{seed}")
    t = 0
    b.block(rnd.randint(500, 4000), "user_text", turn=1)
    for turn in range(rnd.randint(2, 6)):
        for _ in range(rnd.randint(1, 4)):
            b.request(ts=t)
            b.tool_call("Bash", rnd.randint(100, 3000))
            t += rnd.choice([5_000, 30_000, 200_000])
        b.request(ts=t)
        b.block(200, "assistant_text")
        t += rnd.choice([60_000, 4 * MIN, 7 * MIN, 30 * MIN, 70 * MIN, 3 * 60 * MIN])
        b.block(rnd.randint(50, 500), "user_text", turn=turn + 2, ts=t)
    b.request(ts=t)
    return b


def test_bound_never_beaten_on_random_sessions():
    for seed in range(12):
        got = whatif(_random_session(seed).dataset(), BASE, [*FAMILY, BOUND], n_resamples=20, per_session=True)
        per = got["per_session"]
        for n in ["recorded", *FAMILY]:
            assert per[BOUND][0] <= per[n][0] + 1e-12, (seed, n)


@pytest.fixture(scope="module")
def claude_code(tmp_path_factory):
    return shared_dataset(tmp_path_factory, "claude-code")


def test_bound_never_beaten_on_shared_sessions(claude_code):
    got = whatif(claude_code, ReplayOptions(CacheConfig(), PriceTable()), [*FAMILY, BOUND], n_resamples=50,
                 per_session=True)
    per = got["per_session"]
    for n in ["recorded", *FAMILY]:
        worse = [k for k, b, x in zip(got["session_keys"], per[BOUND], per[n]) if b > x + 1e-9]
        assert not worse, (n, worse[:3])
    bound = next(r for r in got["scenarios"] if r["name"] == BOUND)
    # it saves something on these logs, and at least what every setting of the family saves
    assert bound["saved"]["cost"] > 0
    assert all(bound["saved"]["cost"] >= r["saved"]["cost"] - 1e-9 for r in got["scenarios"])


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory):
    from replay.cli.demo import sample_logs_dir
    from replay.store.load import ingest

    db = tmp_path_factory.mktemp("whatif") / "s.duckdb"
    ingest([sample_logs_dir()], db, dataset="sample", key_file=db.parent / "key")
    return db


def test_cli_json_lists_every_scenario_with_interval_and_variant(sample_db):
    r = CliRunner().invoke(main, ["whatif", "--db", str(sample_db), "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    names = [x["name"] for x in got["scenarios"]]
    assert names == [*SCENARIOS, BOUND]
    for x in got["scenarios"]:
        assert x["variant"].startswith("model-only")
        iv = x["interval_pct"]["cost"]
        assert iv["low"] <= x["saved_pct"]["cost"] <= iv["high"]
        assert math.isclose(x["saved"]["cost"], x["baseline"]["cost"] - x["scenario"]["cost"], abs_tol=1e-9)
    assert set(got["fidelity"]) == {"5m", "1h"}


def test_cli_scenario_pick_text_format_and_errors(sample_db):
    r = CliRunner().invoke(main, ["whatif", "--db", str(sample_db), "--scenario", "ttl_1h", "--scenario", "ttl_5m",
                                  "--json"])
    assert r.exit_code == 0, r.output
    assert [x["name"] for x in json.loads(r.output)["scenarios"]] == ["ttl_1h", "ttl_5m"]
    r = CliRunner().invoke(main, ["whatif", "--db", str(sample_db), "--scenario", "keepalive"])
    assert r.exit_code == 1
    assert "error: unknown scenario 'keepalive'; did you mean" in r.output
    r = CliRunner().invoke(main, ["whatif", "--db", str(sample_db), "--scenario", "ttl_1h", "--format", "csv"])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0].startswith("scenario,cost $,saved,95% interval")
    r = CliRunner().invoke(main, ["whatif", "--db", str(sample_db), "--since", "2099-01-01"])
    assert r.exit_code == 1 and "error:" in r.output
    r = CliRunner().invoke(main, ["whatif", "--list", "--json"])
    assert r.exit_code == 0
    listed = json.loads(r.output)
    assert all(x["source"] and x["rule"] for x in listed)


def test_sweep_and_tune_over_a_ttl_grid_run_model_only(sample_db, tmp_path):
    from replay.experiments.sweep import SpecError, load_spec

    spec_file = tmp_path / "ttl.toml"
    spec_file.write_text('policy = "devboy_lru"\n[cache]\nttl = ["log", "5m", "1h"]\n')
    spec = load_spec(spec_file)
    assert {p.cache["observed_evictions"] for p in spec.points()} == {"none"}  # the "log" point too: like with like
    assert spec.notes and "what-if" in spec.notes[0]
    # asking for the calibrated variant beside a what-if is refused with one line
    spec_file.write_text('policy = "devboy_lru"\n[cache]\nttl = ["log", "1h"]\nobserved_evictions = ["log", "none"]\n')
    with pytest.raises(SpecError, match=r"ttl = 1h is a what-if") as e:
        load_spec(spec_file)
    assert "\n" not in str(e.value)
    # a grid without a what-if setting is left alone
    spec_file.write_text('policy = "devboy_lru"\n[grid]\ncapacity = [2, 5]\n')
    assert all("observed_evictions" not in p.cache for p in load_spec(spec_file).points())


def test_tune_never_picks_a_ttl_the_predictive_replay_says_costs_more(sample_db, tmp_path):
    import shutil

    db = tmp_path / "t.duckdb"
    shutil.copy(sample_db, db)
    spec_file = tmp_path / "ttl.toml"
    spec_file.write_text('policy = "devboy_lru"\n[cache]\nttl = ["log", "5m", "1h"]\n')
    # picked on every session (--split none): the pick must be the cheapest TTL over the same sessions
    r = CliRunner().invoke(main, ["tune", str(spec_file), "--db", str(db), "--trials", "8", "--json",
                                  "--split", "none"])
    assert r.exit_code == 0, r.output
    best = json.loads(r.stdout)["best"]
    # the model-only cost of each TTL for the same policy, from the trials' runs
    from replay import store

    con = store.connect(db, read_only=True)
    try:
        rows = con.execute("SELECT cache_config, cost FROM runs JOIN (SELECT run_id, sum(cost) AS cost FROM run_sessions "
                           "GROUP BY run_id) USING (run_id) WHERE policy = 'devboy_lru'").fetchall()
    finally:
        con.close()
    by_ttl = {json.loads(c)["ttl"]: cost for c, cost in rows}
    assert all(json.loads(c)["observed_evictions"] == "none" for c, _ in rows)
    assert set(by_ttl) == {"log", "5m", "1h"}
    assert by_ttl[best["cache"]["ttl"]] == min(by_ttl.values())
    assert by_ttl[best["cache"]["ttl"]] <= by_ttl["log"]


def test_report_never_ranks_a_calibrated_whatif_and_leads_with_the_levers(sample_db, tmp_path):
    import re
    import shutil

    db = tmp_path / "r.duckdb"
    shutil.copy(sample_db, db)
    run = CliRunner()
    for args in (["--policy", "noop"], ["--policy", "devboy_lru"], ["--policy", "noop", "--ttl", "5m"],
                 ["--policy", "devboy_lru", "--ttl", "5m"]):
        r = run.invoke(main, ["replay", "--db", str(db), "--variants", "calibrated", *args])
        assert r.exit_code == 0, r.output
    r = run.invoke(main, ["report", "--db", str(db), "--out", str(tmp_path / "rep"), "--json"])
    assert r.exit_code == 0, r.output
    md = (tmp_path / "rep" / "report.md").read_text()
    head = "\n".join(md.splitlines()[:40])
    assert re.search(r"Cache breaks re-billed \*\*\$\d+\.\d\d\*\* \(\d+\.\d% of the recorded cost", head), head
    # at least one cache lever (a TTL or keep-alive setting) with dollars and its interval
    assert re.search(r"- `\w+` \(cache\): -?\$\d+\.\d\d \([+-]\d+\.\d\d%, 95% interval [+-]\d+\.\d\d% to "
                     r"[+-]\d+\.\d\d%\)", head), head
    assert head.index("## The levers") < head.index("## Recommendation")
    # a model or provider switch is said apart, never ranked among the cache levers
    levers = md.split("## The levers")[1].split("\n## ")[0]
    ranked = [line for line in levers.splitlines() if line.startswith("- ")]
    assert ranked and not any(x in line for line in ranked for x in ("(price)", "(provider)", "rates_sonnet", "openai_"))
    assert "not cache settings, not ranked" in levers.lower() and "`rates_sonnet_4_5`" in levers
    rec = md.split("## Recommendation")[1].split("\n## ")[0]
    assert "TTL as logged" in rec and "TTL 5m" not in rec
    board = md.split("## Leaderboard")[1].split("\n## ")[0]
    rows = [line for line in board.splitlines() if line.startswith("| devboy_lru") or line.startswith("| noop")]
    marked = [i for i, line in enumerate(rows) if "what-if, calibrated: not ranked" in line]
    assert len(marked) == 2 and marked == [len(rows) - 2, len(rows) - 1]  # listed last


def test_jobs_give_the_same_answer(sample_db):
    def run(*extra):
        r = CliRunner().invoke(main, ["whatif", "--db", str(sample_db), "--json", *extra])
        assert r.exit_code == 0, r.output
        got = json.loads(r.stdout)
        got.pop("seconds")
        return got

    one, two = run(), run("--jobs", "2")
    assert [x["name"] for x in one["scenarios"]] == [x["name"] for x in two["scenarios"]]
    for a, b in zip(one["scenarios"], two["scenarios"]):
        # the same replays summed in another order: equal up to float rounding
        assert a["scenario"]["cost"] == pytest.approx(b["scenario"]["cost"], rel=1e-12)
        assert a["interval_pct"]["cost"]["low"] == pytest.approx(b["interval_pct"]["cost"]["low"], rel=1e-9, abs=1e-9)
        assert a["distinguishable"] == b["distinguishable"] and a["sessions_changed"] == b["sessions_changed"]
    for g in ("5m", "1h"):
        assert one["fidelity"][g]["sessions"] == two["fidelity"][g]["sessions"]
        assert one["fidelity"][g]["model_only_cost"] == pytest.approx(two["fidelity"][g]["model_only_cost"], rel=1e-12)


def test_scenario_option_help_names_every_scenario():
    from replay.cli.whatif import whatif as cmd

    text = next(o.help for o in cmd.params if o.name == "scenarios")
    assert all(f"{n}," in text or f"{n} (" in text for n in [*SCENARIOS, BOUND])
