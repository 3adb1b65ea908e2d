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


def replay_all(ds, points, cache, detail, memo, prices=None):
    """Every point over every session, in one process (so later points find earlier ones' streams priced)."""
    old = engine.MEMO
    engine.MEMO = memo
    try:
        out = []
        for name, params in points:
            opts = ReplayOptions(cache, prices, detail) if prices else ReplayOptions(cache, detail=detail)
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


@pytest.mark.parametrize("corpus", ["synthetic", "claude_code"])
def test_events_then_requests_equal_the_walk(corpus, request):
    from replay.engine.walkers import fast_requests, walk_fast, walk_fast_events
    from replay.policies.base import Context

    ds = request.getfixturevalue(corpus)
    calls = []

    class Spy(build("devboy_lru", {}).__class__):
        def on_compaction(self, ctx, pos):
            calls.append(("compaction", pos))
            super().on_compaction(ctx, pos)

    for params in ({"capacity": 1, "min_body_chars": 0}, {"capacity": 0, "min_body_chars": 500}):
        for s in ds.sessions:
            for st in s.streams:
                runs = []
                for split in (False, True):
                    pol = Spy(Spy.make_params(params))
                    figs = {f: 0.0 for f in SESSION_FIGURES}
                    ctx = Context(st, ds.vocab, figs)
                    pol.start_stream(ctx)
                    calls.clear()
                    if split:
                        changes = []
                        walk_fast_events(st, ctx, pol, changes)
                        reqs = fast_requests(st, changes)
                    else:
                        reqs = list(walk_fast(st, ctx, pol))
                    runs.append((repr(reqs), repr(ctx.eff), repr(figs), list(calls)))
                assert runs[0] == runs[1], (s.session_key, st.stream_id)


def test_a_partition_starting_at_a_request_is_announced_in_the_same_place():
    from replay.engine.walkers import _request_starts, fast_requests, walk_fast, walk_fast_events
    from replay.policies.base import Context
    from trace_builder import MIN, TraceBuilder

    b = TraceBuilder(overhead=20_000, models=("m",))
    t = 0
    for turn in range(1, 7):
        b.block(300, "user_text", turn=turn, content=f"prompt {turn}")
        for j in range(4):
            b.tool_call(("Read", "Grep", "Bash", "Edit")[j], 3_000 + 500 * j, resource=f"/p/f{j % 2}.py",
                        content=f"r{j % 2}", ts=t)
            b.request(ts=t)
            t += 20_000
        t += 2 * MIN
        if turn in (2, 4):
            # a new partition whose first request comes before any of its blocks
            b.partition += 1
            b.part_start[b.partition] = len(b.blocks)
            b.request(ts=t)
    session, vocab = b.build()
    st = session.streams[0]
    assert len(_request_starts(st)) == 2
    pol_cls = build("devboy_lru", {}).__class__
    calls = []

    class Spy(pol_cls):
        def on_compaction(self, ctx, pos):
            calls.append(pos)
            super().on_compaction(ctx, pos)

    runs = []
    for split in (False, True):
        pol = Spy(Spy.make_params({"capacity": 2, "min_body_chars": 0}))
        ctx = Context(st, vocab, {f: 0.0 for f in SESSION_FIGURES})
        pol.start_stream(ctx)
        calls.clear()
        if split:
            changes = []
            walk_fast_events(st, ctx, pol, changes)
            reqs = fast_requests(st, changes)
        else:
            reqs = list(walk_fast(st, ctx, pol))
        runs.append((repr(reqs), repr(ctx.eff), repr(ctx.metrics), list(calls)))
    # each new partition announced at its first request and again at its first block
    assert runs[0] == runs[1] and runs[0][3] == [18, 18, 36, 36]
    assert "0.0, None, 0.0)" in runs[0][0] and eval(runs[0][2])["blocks_changed"] > 0
    from test_cache_engine import PRICES

    one = type("OneSession", (), {"sessions": [session], "vocab": vocab})()
    points = [("devboy_lru", {}), ("noop", {}), ("devboy_lru", {"capacity": 1, "min_body_chars": 0})]
    with_memo = replay_all(one, points, CacheConfig(ttl="5m"), True, True, PRICES)
    without = replay_all(one, points, CacheConfig(ttl="5m"), True, False, PRICES)
    assert exact(with_memo) == exact(without)
