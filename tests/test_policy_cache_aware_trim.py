"""cache_aware_trim (replay/policies/cache_aware_trim.py): hand-computed triggers, no peeking,
never above the lossless retroactive bound."""

from __future__ import annotations

import dataclasses

import pytest

from replay.engine import ReplayOptions, replay_session
from replay.experiments.bound import optimal_schedule, retro_policy
from replay.model.arrays import Session, Stream
from replay.model.cache import CacheConfig
from replay.policies import REGISTRY, build
from replay.policies.cache_aware_trim import CacheAwareTrim
from replay.policies.noop import Noop
from tests.test_bound import _random_stream
from tests.trace_builder import MIN, TraceBuilder

MODEL_ONLY = ReplayOptions(CacheConfig(observed_evictions="none"), detail=True)
CALIBRATED = ReplayOptions(CacheConfig(), detail=True)


class Recording(CacheAwareTrim):
    """The policy, recording its flushes as (request, trigger)."""

    def __init__(self, params=None):
        super().__init__(params)
        self.log: list[tuple[int, str]] = []

    def decided(self, ctx, k, why):
        self.log.append((k, why))


def run(b_or_session, params=None, opts=MODEL_ONLY):
    if isinstance(b_or_session, TraceBuilder):
        s, v = b_or_session.build()
    else:
        s, v = b_or_session
    pol = Recording(CacheAwareTrim.make_params(params or {}))
    res = replay_session(s, v, pol, opts)
    return pol.log, res


def test_registered_as_this_projects_policy():
    assert REGISTRY["cache_aware_trim"] is CacheAwareTrim
    assert "this project" in CacheAwareTrim.source
    p = CacheAwareTrim.Params()
    assert (p.min_pending_tokens, p.estimator, p.lossy, p.ttl_margin_s) == (10000.0, "so_far", False, 60.0)


# --- cold-cache trigger -------------------------------------------------------------------------
def _cold_stream(gap_ms: int, *, w1h: bool = False, model2: bool = False) -> TraceBuilder:
    """A 3,000-token read repeated at k1 (pending from k1 on); k2 comes after ``gap_ms``."""
    b = TraceBuilder(overhead=10_000, models=("claude-sonnet-4-5", "claude-opus-4-1"))
    w = dict(w1h=100) if w1h else dict(w5=100)
    b.block(500, "user_text", turn=1)
    b.tool_call("Read", 3000, resource="f", content="A")            # result at position 2
    b.request(ts=0, **w)                                             # k0
    b.tool_call("Read", 3000, resource="f", content="A")            # exact repeat: 2 removable at k1
    b.request(ts=MIN, **w)                                           # k1: warm, 3,000 < 10,000 pending
    b.block(100, "user_text", turn=2)
    b.request(ts=MIN + gap_ms, model=1 if model2 else 0, **w)        # k2
    b.tool_call("Bash", 200, content="B")
    b.request(ts=MIN + gap_ms + MIN, model=1 if model2 else 0, **w)  # k3
    return b


def test_cold_trigger_after_ttl_plus_margin():
    log, res = run(_cold_stream(5 * MIN + 61_000))                   # 5 min TTL + 61 s > + 60 s margin
    assert log == [(2, "cold")]
    noop = replay_session(*_cold_stream(5 * MIN + 61_000).build(), Noop(), MODEL_ONLY)
    # position 2 (3,000 tokens) is gone at k2 and k3
    assert [a - b for a, b in zip(noop.detail["input_total"], res.detail["input_total"])] == [0, 0, 3000, 3000]
    assert res.figures["cost"] < noop.figures["cost"]
    assert res.figures["flushes_cold"] == 1 and res.figures["flushes_estimate"] == 0


def test_cold_trigger_respects_margin_and_ttl():
    assert run(_cold_stream(5 * MIN + 59_000))[0] == []             # within the 60 s margin: warm
    assert run(_cold_stream(5 * MIN + 30_000), {"ttl_margin_s": 0})[0] == [(2, "cold")]
    assert run(_cold_stream(30 * MIN, w1h=True))[0] == []           # a 1 h entry is still warm
    assert run(_cold_stream(62 * MIN, w1h=True))[0] == [(2, "cold")]


def test_cold_trigger_on_model_switch_and_compaction():
    assert run(_cold_stream(MIN, model2=True))[0] == [(2, "cold")]
    b = TraceBuilder(overhead=10_000)
    b.block(500, "user_text", turn=1)
    b.request(ts=0, w5=100)
    b.compact(300)
    b.tool_call("Read", 3000, resource="f", content="A")
    b.tool_call("Read", 3000, resource="f", content="A")            # removable at the partition's first request
    b.request(ts=MIN, w5=100)                                        # k1: new partition, cold
    assert run(b)[0] == [(1, "cold")]


# --- cost-estimate trigger ----------------------------------------------------------------------
def _estimate_stream(bash_tokens: float) -> TraceBuilder:
    b = TraceBuilder(overhead=10_000)
    b.block(500, "user_text", turn=1)                                # 0
    b.tool_call("Read", 4000, resource="f", content="A")            # 1, 2
    b.request(ts=0, w5=100)                                          # k0 (r_pos 3)
    b.tool_call("Bash", bash_tokens, content="B")                   # 3, 4
    b.request(ts=MIN, w5=100)                                        # k1 (r_pos 5)
    b.tool_call("Read", 4000, resource="f", content="A")            # 5, 6: position 2 removable at k2
    b.request(ts=2 * MIN, w5=100)                                    # k2
    b.tool_call("Bash", 10, content="C")
    b.request(ts=3 * MIN, w5=100)                                    # k3
    return b


def test_estimate_trigger_hand_computed():
    # At k2: P = 4,000 pending; saving = P x 0.1 x (1 + 2 requests so far) = 1,200.
    # Suffix after the removal: blocks 2..4 the previous request cached, 4,000 + 50 + B - 4,000.
    # B = 900: cost = 950 x (1.25 - 0.1) = 1,092.5 < 1,200 -> flush at k2.
    log, res = run(_estimate_stream(900), {"min_pending_tokens": 2000})
    assert log == [(2, "estimate")]
    noop = replay_session(*_estimate_stream(900).build(), Noop(), MODEL_ONLY)
    assert [a - b for a, b in zip(noop.detail["input_total"], res.detail["input_total"])] == [0, 0, 4000, 4000]
    # B = 1,000: cost = 1,050 x 1.15 = 1,207.5 > 1,200 -> held back; at k3 the suffix is 5,100
    # (cost 5,865) and the saving 1,600: held back again.
    assert run(_estimate_stream(1000), {"min_pending_tokens": 2000})[0] == []
    # the floor and the estimator switch it off
    assert run(_estimate_stream(900), {"min_pending_tokens": 4001})[0] == []
    assert run(_estimate_stream(900), {"min_pending_tokens": 0, "estimator": "none"})[0] == []
    # the 1 h write premium (2.0) makes the same flush too dear: 950 x 1.9 = 1,805 > 1,200
    b = _estimate_stream(900)
    for r in b.requests:
        r["r_w5"], r["r_w1h"] = 0, 100
    assert run(b, {"min_pending_tokens": 2000})[0] == []


def test_lossy_strips_old_turns_and_prices_rereads():
    b = TraceBuilder(overhead=10_000)
    b.block(100, "user_text", turn=1)
    b.tool_call("Grep", 5000, resource="g", content="G1")
    b.request(ts=0, w5=100)
    b.block(100, "user_text", turn=2)
    b.request(ts=MIN, w5=100)
    b.block(100, "user_text", turn=3)
    b.request(ts=20 * MIN, w5=100)                                   # k2: cold; turn 1 is outside keep_last=1
    log, res = run(b, {"lossy": True, "keep_last": 1})
    assert log == [(2, "cold")]
    assert res.figures["tokens_saved"] == pytest.approx(5000 - 7)
    assert run(b, {"lossy": True, "keep_last": 3})[0] == []
    assert run(b)[0] == []                                           # lossless only: nothing to remove


# --- no peeking ------------------------------------------------------------------------------
def truncate(st: Stream, k: int) -> Stream:
    """The stream as it stands at request k: requests < k and the blocks they sent."""
    nb = st.r_pos[k - 1]
    vals = {}
    for f in dataclasses.fields(st):
        v = getattr(st, f.name)
        if isinstance(v, list) and f.name.startswith("r_"):
            v = v[:k]
        elif isinstance(v, list):
            v = v[:nb]
        vals[f.name] = v
    return Stream(**vals)


PARAMS = [{}, {"min_pending_tokens": 0}, {"min_pending_tokens": 0, "estimator": "partition"},
          {"lossy": True, "keep_last": 1, "min_pending_tokens": 0}]


def _check_no_peeking(session: Session, vocab, params, opts=CALIBRATED):
    for si, st in enumerate(session.streams):
        full_log, full = run((Session(session.session_key, session.agent, [st]), vocab), params, opts)
        for k in sorted({1, 2, st.n_requests // 3, st.n_requests // 2, st.n_requests - 1}):
            if k < 1 or k >= st.n_requests:
                continue
            t = truncate(st, k)
            log, res = run((Session(session.session_key, session.agent, [t]), vocab), params, opts)
            assert log == [d for d in full_log if d[0] < k], (si, k)
            assert res.detail["input_total"] == full.detail["input_total"][:k], (si, k)


@pytest.mark.parametrize("params", PARAMS)
@pytest.mark.parametrize("seed", range(6))
def test_no_peeking_on_random_streams(seed, params):
    s, v = _random_stream(seed).build()
    _check_no_peeking(s, v, params)


@pytest.mark.parametrize("params", PARAMS)
def test_no_peeking_on_sample(sample, params):
    _, ds = sample
    for s in ds.sessions:
        _check_no_peeking(s, ds.vocab, params)


# --- never above the bound ----------------------------------------------------------------------
def test_never_above_bound_on_hand_built_stream():
    b = TraceBuilder(overhead=10_000)
    b.block(500, "user_text", turn=1)
    b.tool_call("Read", 5_000, resource="f", content="f1", lines=(1, 100))
    b.request(ts=0, w5=100)
    for i in range(1, 6):
        b.tool_call("Bash", 20_000, content=f"b{i}")
        b.request(ts=i * MIN, w5=100)
    b.tool_call("Read", 5_000, resource="f", content="f1", lines=(1, 100))
    b.request(ts=6 * MIN, w5=100)                                    # k6: the first read removable
    b.tool_call("Bash", 200, content="b7")
    b.request(ts=7 * MIN, w5=100)
    b.block(100, "user_text", turn=2)
    b.request(ts=70 * MIN, w5=100)                                   # k8: idle, cold
    b.tool_call("Bash", 200, content="b9")
    b.request(ts=71 * MIN, w5=100)
    s, v = b.build()
    for opts in (MODEL_ONLY, CALIBRATED):
        _, bound_cost = optimal_schedule(s.streams[0], s.agent, v, opts)
        log, res = run(b, opts=opts)
        assert log == [(8, "cold")]                                  # the bound's own schedule
        assert res.figures["cost"] == pytest.approx(bound_cost)
        for params in PARAMS[:3]:
            assert run(b, params, opts)[1].figures["cost"] >= bound_cost - 1e-9


@pytest.mark.parametrize("opts", [CALIBRATED, MODEL_ONLY], ids=["calibrated", "model-only"])
def test_never_above_bound_on_sample(sample, opts):
    _, ds = sample
    bound = retro_policy(ds, opts)
    for params in PARAMS[:3]:
        pol = build("cache_aware_trim", params)
        for s in ds.sessions:
            got = replay_session(s, ds.vocab, pol, opts).figures["cost"]
            ref = replay_session(s, ds.vocab, bound, opts).figures["cost"]
            assert got >= ref - 1e-9, (s.session_key, params)


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    from replay import store
    from replay.cli import sample_logs_dir
    from replay.experiments.runs import load
    from replay.store.load import ingest

    db = tmp_path_factory.mktemp("cat") / "s.duckdb"
    ingest([sample_logs_dir()], db, dataset="sample", key_file=db.parent / "key")
    con = store.connect(db, read_only=True)
    ds = load(con, "sample")
    con.close()
    return db, ds
