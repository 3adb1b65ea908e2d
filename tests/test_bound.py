"""The offline-optimal bounds (`replay.experiments.bound`, `ctxreplay bound`)."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner

from replay.cli.bound import bound as bound_cmd
from replay.engine import ReplayOptions, replay_session
from replay.experiments.bound import (
    InsertBound, RetroBound, brute_force, optimal_schedule, removals, retro_policy,
)
from replay.model.cache import CacheConfig
from replay.policies import REGISTRY, build
from replay.policies.noop import Noop
from tests.trace_builder import MIN, TraceBuilder

MODEL_ONLY = ReplayOptions(CacheConfig(observed_evictions="none"))
CALIBRATED = ReplayOptions(CacheConfig())


def figs(b: TraceBuilder, policy, opts=MODEL_ONLY) -> dict:
    s, v = b.build()
    return replay_session(s, v, policy, opts).figures


# --- insert-time bound: hand-computed ---------------------------------------------------------
def test_insert_bound_hand_computed():
    b = TraceBuilder(overhead=10_000)
    b.block(500, "user_text", turn=1)
    b.request(ts=0)                                                   # 10,500
    b.tool_call("Read", 2000, resource="a", content="A")
    b.request(ts=MIN)                                                 # 12,550
    b.tool_call("Read", 2000, resource="a", content="A")              # repeat: 2,000 -> 0
    b.tool_call("Bash", 5, content="tiny")
    b.tool_call("Bash", 5, content="tiny")                            # repeat: 5 -> 0 (8 with a hint: kept)
    b.request(ts=2 * MIN)                                             # 14,660 -> 12,655
    b.compact(300)
    b.tool_call("Read", 2000, resource="a", content="A")              # earlier copy compacted away: kept
    b.request(ts=3 * MIN)
    noop, ins = figs(b, Noop()), figs(b, InsertBound())
    assert ins["hints"] == 2
    assert noop["context_tokens"] - ins["context_tokens"] == pytest.approx(2005)
    assert noop["tokens_delivered"] - ins["tokens_delivered"] == pytest.approx(2005)
    assert ins["busts"] == 0 and ins["cost"] < noop["cost"]
    # the hinted variant (devboy's terse 8-token hint) keeps a block smaller than its hint
    hinted = figs(b, InsertBound(InsertBound.Params(hint_tokens=8.0)))
    assert hinted["hints"] == 1
    assert noop["context_tokens"] - hinted["context_tokens"] == pytest.approx(1992)


def test_insert_bound_hint_in_stream_units():
    b = TraceBuilder()
    b.block(100, "user_text", turn=1)
    b.tool_call("Grep", 1000, content="G")
    b.tool_call("Grep", 1000, content="G")
    b.request(ts=0)
    s, v = b.build()
    s.streams[0].bpe_ratio = 1.5
    got = replay_session(s, v, InsertBound(InsertBound.Params(hint_tokens=8.0)), MODEL_ONLY).figures
    base = replay_session(s, v, Noop(), MODEL_ONLY).figures
    assert base["context_tokens"] - got["context_tokens"] == pytest.approx(1000 - 8 * 1.5)
    removed = replay_session(s, v, InsertBound(), MODEL_ONLY).figures
    assert base["context_tokens"] - removed["context_tokens"] == pytest.approx(1000)


def test_insert_bound_covers_narrower_reread():
    """A narrower re-read of a path still in context (read_range_dedup's class) is in the bound;
    not across a write of the path or a compaction, nor past an open read's 2000-line cap; a
    same-range read with other content drops the path's earlier reads and becomes the original."""
    b = TraceBuilder(overhead=10_000)
    b.block(500, "user_text", turn=1)
    b.tool_call("Read", 4000, resource="f", content="f-1-200", lines=(1, 200))
    b.request(ts=0)
    b.tool_call("Read", 1500, resource="f", content="f-50-120", lines=(50, 120))   # covered: 1,500 -> 8
    b.tool_call("Read", 3000, resource="g", content="g-open", lines=(-1, -1))      # open: covers [1, 2000]
    b.request(ts=MIN)
    b.tool_call("Read", 900, resource="g", content="g-10-90", lines=(10, 90))      # covered: 900 -> 8
    b.tool_call("Read", 900, resource="g", content="g-1900-2100", lines=(1900, 2100))  # past the cap: kept
    b.tool_call("Edit", 60, resource="f", content="edit-f")
    b.tool_call("Read", 700, resource="f", content="f-60-80", lines=(60, 80))      # after a write: kept
    b.request(ts=2 * MIN)
    b.tool_call("Read", 500, resource="f", content="f-60-80b", lines=(60, 80))     # same range, other bytes: kept
    b.tool_call("Read", 400, resource="f", content="f-61-70", lines=(61, 70))      # covered by f-60-80b: 400 -> 8
    b.compact(300)
    b.tool_call("Read", 800, resource="g", content="g-20-30", lines=(20, 30))      # original compacted: kept
    b.request(ts=3 * MIN)
    noop, ins = figs(b, Noop()), figs(b, InsertBound())
    assert ins["hints"] == 3 and ins["busts"] == 0
    assert noop["tokens_delivered"] - ins["tokens_delivered"] == pytest.approx(1500 + 900 + 400)
    for opts in (MODEL_ONLY, CALIBRATED):
        base = figs(b, Noop(), opts)["cost"]
        # this trace holds no line hashes: the bound's coverage rule is read_range_dedup's trust rule
        rrd = figs(b, build("read_range_dedup", {"verify": "trust"}), opts)
        got = figs(b, InsertBound(), opts)
        assert rrd["hints"] == 3  # the same blocks, with its 14-token hint
        assert figs(b, build("read_range_dedup"), opts)["hints"] == 0  # verified: nothing proves them
        assert base - got["cost"] >= base - rrd["cost"] - 1e-12 and got["cost"] < rrd["cost"]


# --- retroactive bound: hand-computed -----------------------------------------------------------
def _retro_stream() -> TraceBuilder:
    b = TraceBuilder(overhead=10_000)
    b.block(500, "user_text", turn=1)
    r0 = b.tool_call("Read", 3000, resource="f", content="f-10-50", lines=(10, 50))
    b.request(ts=0)                                                   # k0
    b.tool_call("Read", 4000, resource="f", content="f-all", lines=None)  # covers r0
    b.request(ts=MIN)                                                 # k1: r0 removable
    b.tool_call("Bash", 1500, content="B")
    b.request(ts=2 * MIN)                                             # k2
    b.tool_call("Bash", 1500, content="B")                            # exact repeat
    b.tool_call("Read", 800, resource="g", content="g1", lines=(1, 20))
    b.tool_call("Edit", 60, resource="g", content="edit-g")
    b.tool_call("Read", 900, resource="g", content="g2", lines=(1, 40))  # after an edit: no supersession
    b.request(ts=3 * MIN)                                             # k3: the first Bash removable
    return b, r0


def test_removals_hand_computed():
    b, r0 = _retro_stream()
    st = b.stream()
    got = removals(st)
    first_bash = 6  # user 0, (use 1, r0 2), (use 3, read-all 4), (use 5, bash 6)
    assert got == [[], [r0], [], [first_bash]]


def test_retro_bound_eager_hand_computed_and_optimal_not_worse():
    b, _ = _retro_stream()
    s, v = b.build()
    st = s.streams[0]
    noop = replay_session(s, v, Noop(), MODEL_ONLY).figures
    eager = replay_session(s, v, RetroBound(flushes={(st.session_key, 0): None}), MODEL_ONLY).figures
    # r0 (3,000) is gone from k1 on (3 requests), the first Bash (1,500) at k3
    assert noop["context_tokens"] - eager["context_tokens"] == pytest.approx(3 * 3000 + 1500)
    sched, cost = optimal_schedule(st, s.agent, v, MODEL_ONLY)
    opt = replay_session(s, v, RetroBound(flushes={(st.session_key, 0): sched}), MODEL_ONLY).figures
    assert opt["cost"] == pytest.approx(cost)
    assert cost <= min(noop["cost"], eager["cost"]) + 1e-12
    assert cost == pytest.approx(brute_force(st, s.agent, v, MODEL_ONLY))


def test_retro_bound_beats_supersede_on_hand_built_stream():
    """supersede (its exact-range rule, lossless here) flushes eagerly; the bound may wait for
    an idle gap that expires the cache anyway."""
    b = TraceBuilder(overhead=10_000)
    b.block(500, "user_text", turn=1)
    b.tool_call("Read", 5_000, resource="f", content="f1", lines=(1, 100))
    b.request(ts=0)
    for i in range(1, 6):
        b.tool_call("Bash", 20_000, content=f"b{i}")
        b.request(ts=i * MIN)
    b.tool_call("Read", 5_000, resource="f", content="f1", lines=(1, 100))
    b.request(ts=6 * MIN)                                             # k6: the first read removable
    b.tool_call("Bash", 200, content="b7")
    b.request(ts=7 * MIN)
    b.block(100, "user_text", turn=2)
    b.request(ts=70 * MIN)                                            # k8: idle, the cache expired
    b.tool_call("Bash", 200, content="b9")
    b.request(ts=71 * MIN)
    s, v = b.build()
    st = s.streams[0]
    for opts in (MODEL_ONLY, CALIBRATED):
        noop = replay_session(s, v, Noop(), opts).figures["cost"]
        sup = replay_session(s, v, build("supersede", {"read_range": "exact"}), opts).figures["cost"]
        sched, cost = optimal_schedule(st, s.agent, v, opts)
        assert noop - cost >= noop - sup - 1e-12
        assert noop - cost >= 0
        assert cost == pytest.approx(brute_force(st, s.agent, v, opts))
    assert sched == frozenset({8})  # the flush waits for the idle gap: no 100k-token re-write
    assert sup > cost


def _random_stream(seed: int) -> TraceBuilder:
    rnd = random.Random(seed)
    b = TraceBuilder(overhead=rnd.choice([2_000, 10_000]), session_key=f"r{seed}")
    b.block(rnd.randint(100, 2000), "user_text", turn=1)
    t = 0
    contents = ["A", "B", "C"]
    for k in range(rnd.randint(4, 7)):
        for _ in range(rnd.randint(1, 2)):
            kind = rnd.random()
            if kind < 0.5:
                b.tool_call("Bash", rnd.choice([500, 3000, 8000]), content=rnd.choice(contents))
            elif kind < 0.85:
                ls = rnd.choice([None, (1, 50), (1, 100), (20, 60)])
                b.tool_call("Read", rnd.choice([1000, 6000]), resource=rnd.choice(["f", "g"]),
                            content=f"read-{rnd.random()}", lines=ls)
            else:
                b.tool_call("Edit", 50, resource=rnd.choice(["f", "g"]), content=f"e-{rnd.random()}")
        if rnd.random() < 0.2:
            b.block(300, "user_text", turn=k + 2)
        t += rnd.choice([MIN, MIN, 3 * MIN, 10 * MIN, 70 * MIN])
        b.request(ts=t)
    return b


@pytest.mark.parametrize("seed", range(25))
def test_dp_equals_brute_force_on_small_sessions(seed):
    b = _random_stream(seed)
    s, v = b.build()
    st = s.streams[0]
    for opts in (MODEL_ONLY, CALIBRATED):
        sched, cost = optimal_schedule(st, s.agent, v, opts)
        assert cost == pytest.approx(brute_force(st, s.agent, v, opts), rel=1e-12, abs=1e-12)
        noop = replay_session(s, v, Noop(), opts).figures["cost"]
        assert cost <= noop + 1e-12


# --- the sample dataset ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    from replay import store
    from replay.cli import sample_logs_dir
    from replay.experiments.runs import load
    from replay.store.load import ingest

    db = tmp_path_factory.mktemp("bound") / "s.duckdb"
    ingest([sample_logs_dir()], db, dataset="sample", key_file=db.parent / "key")
    con = store.connect(db, read_only=True)
    ds = load(con, "sample")
    con.close()
    return db, ds


INSERT_TIME = sorted(n for n, c in REGISTRY.items() if n != "pipeline" and c.insert_time())


@pytest.mark.parametrize("opts", [CALIBRATED, MODEL_ONLY], ids=["calibrated", "model-only"])
def test_insert_bound_beats_every_insert_time_policy_on_sample(sample, opts):
    _, ds = sample
    assert INSERT_TIME  # devboy_lru, jp_resource_dedup
    tot = lambda pol: {f: sum(replay_session(s, ds.vocab, pol, opts).figures[f] for s in ds.sessions)
                       for f in ("cost", "context_tokens")}
    bound = tot(InsertBound())
    for name in INSERT_TIME:
        for params in ([{}, {"capacity": 0, "min_body_chars": 0, "verbosity": "terse"}] if name == "devboy_lru"
                       else [{}]):
            got = tot(build(name, params))
            for f in ("cost", "context_tokens"):
                assert bound[f] <= got[f] + 1e-9, (name, params, f)


@pytest.mark.parametrize("opts", [CALIBRATED, MODEL_ONLY], ids=["calibrated", "model-only"])
def test_insert_bound_saves_at_least_read_range_dedup_on_sample(sample, opts):
    _, ds = sample
    cost = lambda pol: sum(replay_session(s, ds.vocab, pol, opts).figures["cost"] for s in ds.sessions)
    base, bound = cost(Noop()), cost(InsertBound())
    for params in ({}, {"min_tokens": 0}, {"opaque_shell_blocks": True}, {"lookback_turns": 2}):
        rrd = cost(build("read_range_dedup", params))
        assert base - bound >= base - rrd - 1e-9, params


def test_retro_bound_never_worse_than_noop_on_sample(sample):
    _, ds = sample
    for opts in (CALIBRATED, MODEL_ONLY):
        pol = retro_policy(ds, opts)
        for s in ds.sessions:
            got = replay_session(s, ds.vocab, pol, opts).figures["cost"]
            base = replay_session(s, ds.vocab, Noop(), opts).figures["cost"]
            assert got <= base + 1e-9


def test_cli_bound_json_stores_runs(sample, tmp_path):
    import shutil

    from replay import store
    from replay.experiments.runs import list_runs

    db = tmp_path / "b.duckdb"
    shutil.copy(sample[0], db)
    r = CliRunner().invoke(bound_cmd, ["--db", str(db), "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    assert set(got["variants"]) == {"calibrated", "model_only"}
    for v in got["variants"].values():
        for name in ("bound_insert", "bound_retro"):
            x = v["bounds"][name]
            assert x["run_id"] and x["cost"]["saved"] >= -1e-9
        assert v["bounds"]["bound_insert"]["cost"]["saved"] >= v["policies"]["devboy_lru"]["cost"]["saved"] - 1e-9
        # the achievable flush schedule is printed beside the bounds, never above the lossless one
        flush = v["schedules"]["retro_flush"]
        assert "flushes" in flush and flush["cost"]["saved"] <= v["bounds"]["bound_retro"]["cost"]["saved"] + 1e-9
    con = store.connect(db, read_only=True)
    names = [x["policy"] for x in list_runs(con, "sample") if x["status"] == "finished"]
    con.close()
    assert names.count("bound_insert") == 2 and names.count("bound_retro") == 2 and names.count("noop") == 2
    r = CliRunner().invoke(bound_cmd, ["--db", str(db), "--variants", "calibrated", "--no-store"])
    assert r.exit_code == 0 and "bound_retro" in r.output, r.output
