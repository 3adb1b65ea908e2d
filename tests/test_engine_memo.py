"""Streams priced once per distinct change (`replay.engine.memo`, the sweep's fast path) give
bit-identical figures to pricing every stream of every configuration (the path before it)."""

import pytest

import replay.engine.loop as engine
from replay.engine import SESSION_FIGURES, ReplayOptions, replay_session
from replay.engine.memo import forget_priced
from replay.experiments.sweep import run_task
from replay.model.cache import CacheConfig
from replay.policies import build
from replay.synth.generate import generate_corpus

from conftest import shared_dataset

DEVBOY = [("devboy_lru", {"capacity": c, "min_body_chars": m}) for c in (1, 3, 0) for m in (0, 500)]
OTHERS = [("noop", {}), ("jp_resource_dedup", {}), ("anthropic_clear_tool_uses", {"trigger": 20_000}),
          ("observation_masking", {}), ("server_compaction", {"trigger": 50_000}), ("read_range_dedup", {})]
VARIANTS = [CacheConfig(), CacheConfig(observed_evictions="none")]


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    from replay import store
    from replay.model.arrays import load_dataset
    from replay.store.load import ingest

    d = tmp_path_factory.mktemp("syn")
    generate_corpus(d / "logs", sessions=12, seed=3)
    ingest([d / "logs"], d / "s.duckdb", key_file=d / "key")
    con = store.connect(d / "s.duckdb", read_only=True)
    try:
        return load_dataset(con, "default")
    finally:
        con.close()


@pytest.fixture(scope="module")
def claude_code(tmp_path_factory):
    return shared_dataset(tmp_path_factory, "claude-code")


def replay_all(ds, points, cache, detail, memo):
    """Every point over every session, in one process (so later points find earlier ones' streams priced)."""
    old = engine.MEMO
    engine.MEMO = memo
    try:
        out = []
        for name, params in points:
            opts = ReplayOptions(cache, detail=detail)
            out.append([replay_session(s, ds.vocab, build(name, params), opts) for s in ds.sessions])
        return out
    finally:
        engine.MEMO = old
        forget_priced(ds.sessions)


def exact(results):
    """Every figure and per-request row as the exact text of its value (repr: 1 and 1.0 differ)."""
    return [[(r.session_key, repr(sorted(r.figures.items())),
              repr(sorted(r.detail.items())) if r.detail is not None else None) for r in rs] for rs in results]


@pytest.mark.parametrize("corpus", ["synthetic", "claude_code"])
@pytest.mark.parametrize("detail", [True, False])
def test_streams_priced_once_are_bit_identical_to_pricing_every_one(corpus, detail, request):
    ds = request.getfixturevalue(corpus)
    points = OTHERS[:1] + DEVBOY + OTHERS[1:]
    for cache in VARIANTS:
        fast = replay_all(ds, points, cache, detail, True)
        slow = replay_all(ds, points, cache, detail, False)
        for (name, params), f, s in zip(points, exact(fast), exact(slow)):
            assert f == s, (name, params, cache)
        # the devboy points change something (else the comparison would be vacuous)
        assert any(r.figures["blocks_changed"] > 0 for rs in fast[1:1 + len(DEVBOY)] for r in rs)


def test_streams_are_priced_once_per_distinct_change(synthetic):
    ds = synthetic
    streams = [st for s in ds.sessions for st in s.streams]
    opts = ReplayOptions()
    try:
        for name, params in OTHERS[:1] + DEVBOY:
            pol = build(name, params)
            for s in ds.sessions:
                replay_session(s, ds.vocab, pol, opts)
        priced = sum(len(st.__dict__.get("_price_memo", {})) for st in streams)
        # 7 points: each stream priced at most once per distinct change, and fewer times than
        # it was replayed (the no-op's "nothing changed" recurs, so does a capacity's hints)
        assert 0 < priced < len(streams) * 7
        assert all(len(st.__dict__.get("_price_memo", {})) <= 7 for st in streams)
        forget_priced(ds.sessions)
        assert all("_price_memo" not in st.__dict__ for st in streams)
    finally:
        forget_priced(ds.sessions)


def test_a_sweep_task_gives_the_same_rows_in_any_order(synthetic):
    ds = synthetic
    idx = list(range(len(ds.sessions)))

    def run(points):
        out = {(p["capacity"], p["min_body_chars"]): run_task(ds, "devboy_lru", p, {}, None, idx).values
               for _, p in points}
        forget_priced(ds.sessions)
        return out

    first, again = run(DEVBOY), run(reversed(DEVBOY))
    assert first.keys() == again.keys() and len(first) == len(DEVBOY)
    for k in first:
        assert first[k].tobytes() == again[k].tobytes()
    assert first[(1, 0)].shape == (len(ds.sessions), len(SESSION_FIGURES))


def test_devboy_skips_only_results_it_would_leave_alone(synthetic, monkeypatch):
    from replay.policies.base import Policy
    from replay.policies.devboy_lru import DevboyLru

    points = [("devboy_lru", {"capacity": c, "min_body_chars": m, "mutation_aware": a})
              for c in (1, 0) for m in (0, 1000, 5000) for a in (True, False)]
    for s in synthetic.sessions:
        for st in s.streams:
            st.__dict__.pop("_fast_memo", None)
    filtered = replay_all(synthetic, points, CacheConfig(), True, False)
    streams = [st for s in synthetic.sessions for st in s.streams]
    # per threshold, the events devboy is shown: fewest at the largest
    shown = sorted(sum(len(st._fast_memo[k][1]) for st in streams) for k in streams[0]._fast_memo)
    monkeypatch.setattr(DevboyLru, "append_filter", Policy.append_filter)
    for s in synthetic.sessions:
        for st in s.streams:
            st.__dict__.pop("_fast_memo", None)
    every = replay_all(synthetic, points, CacheConfig(), True, False)
    assert exact(filtered) == exact(every)
    # unfiltered, devboy is shown every result: more than at the largest threshold (the filter is exercised)
    assert len(shown) == 3 and shown[0] < sum(len(st._fast_memo[k][1]) for st in streams for k in st._fast_memo)
    assert any(r.figures["hints"] > 0 for rs in filtered for r in rs)
