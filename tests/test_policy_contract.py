"""Contract every registered policy must honour (parametrized over the registry)."""

import pytest

from replay.model.cache import CacheConfig
from replay.engine import SESSION_FIGURES, ReplayOptions, replay_session
from replay.engine.loop import walker_for
from replay.engine.walkers import walk_blocks, walk_fast
from replay.policies import REGISTRY, build

from test_cache_engine import PRICES
from trace_builder import MIN, TraceBuilder

# Policies whose purpose is removing byte-identical duplicates: on a trace without duplicates they
# must do nothing. (supersede is not one: seed 004 hides an older read of a location whatever its
# content, so a re-read with new content legitimately hides the old one.)
DEDUP = {"devboy_lru", "jp_resource_dedup", "cupel_dedup"}


def policies():
    out = []
    for name in sorted(REGISTRY):
        if name == "pipeline":
            out.append(("pipeline", {"steps": [{"policy": n} for n in sorted(REGISTRY) if n != "pipeline"]}))
        else:
            out.append((name, {}))
    return out


def opts():
    return ReplayOptions(CacheConfig(ttl="5m"), PRICES, detail=True)


def realistic(dup: bool) -> TraceBuilder:
    """A long session: reads, re-reads (identical when dup), edits, greps, bash, idle gaps, a compaction."""
    b = TraceBuilder(overhead=20_000, models=("m",))
    t = 0
    for turn in range(1, 9):
        b.block(300, "user_text", turn=turn, content=f"prompt {turn}")
        for j in range(6):
            name = ("Read", "Grep", "Bash", "Read", "Edit", "Glob")[j]
            content = f"r{j % 3}" if dup else f"t{turn}-{j}"
            b.tool_call(name, 3_000 + 500 * j, resource=f"/p/src/f{j % 3}.py", content=content, ts=t)
            b.request(ts=t)
            t += 20_000
        b.block(200, "assistant_text")
        b.request(ts=t)
        t += (70 if turn == 4 else 2) * MIN
        if turn == 6:
            b.compact(1_500)
    return b


@pytest.mark.parametrize("name,params", policies())
def test_deterministic_and_never_more_tokens_than_baseline(name, params):
    b = realistic(dup=True)
    session, vocab = b.build()
    base = replay_session(session, vocab, build("noop"), opts())
    r1 = replay_session(session, vocab, build(name, params), opts())
    r2 = replay_session(session, vocab, build(name, params), opts())
    assert r1.figures == r2.figures and r1.detail == r2.detail
    assert r1.figures["tokens_delivered"] <= base.figures["tokens_delivered"] + 1e-6
    assert r1.figures["context_tokens"] <= base.figures["context_tokens"] + 1e-6
    for a, c in zip(r1.detail["input_total"], base.detail["input_total"]):
        assert a <= c + 1e-6
    assert r1.figures["stale_refs"] == 0


@pytest.mark.parametrize("name,params", policies())
def test_empty_trace_gives_empty_result(name, params):
    b = TraceBuilder(models=("m",))
    session, vocab = b.build()
    r = replay_session(session, vocab, build(name, params), opts())
    assert r.figures["requests"] == 0 and r.figures["cost"] == 0 and r.figures["tokens_delivered"] == 0


@pytest.mark.parametrize("name", sorted(DEDUP & set(REGISTRY)))
def test_no_duplicates_means_no_savings_and_no_busts(name):
    b = realistic(dup=False)
    session, vocab = b.build()
    base = replay_session(session, vocab, build("noop"), opts())
    r = replay_session(session, vocab, build(name), opts())
    assert r.figures["tokens_delivered"] == base.figures["tokens_delivered"]
    assert r.figures["busts"] == 0 and r.figures["cost"] == pytest.approx(base.figures["cost"])


@pytest.mark.parametrize("name,params", [(n, p) for n, p in policies() if not build(n, p).retroactive()])
def test_insert_time_policies_never_bust(name, params):
    p = build(name, params)
    session, vocab = realistic(dup=True).build()
    assert replay_session(session, vocab, p, opts()).figures["busts"] == 0


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_policy_is_documented(name):
    cls = REGISTRY[name]
    assert cls.source and cls.summary and cls.__module__.startswith("replay.policies.")
    import importlib

    mod = importlib.import_module(cls.__module__)
    assert mod.__doc__ and len(mod.__doc__) > 100


@pytest.mark.parametrize("name,params", [(n, p) for n, p in policies() if not build(n, p).retroactive()])
def test_fast_path_equals_block_by_block(name, params, monkeypatch):
    import replay.engine.loop as engine

    b = realistic(dup=True)
    session, vocab = b.build()
    fast = replay_session(session, vocab, build(name, params), opts())
    session, vocab = realistic(dup=True).build()
    monkeypatch.setattr(engine, "FAST_PATH", False)
    slow = replay_session(session, vocab, build(name, params), opts())
    for k in fast.figures:
        assert fast.figures[k] == pytest.approx(slow.figures[k], rel=1e-12, abs=1e-9), k
    for k in fast.detail:
        assert fast.detail[k] == pytest.approx(slow.detail[k], rel=1e-12, abs=1e-9), k


def assert_same_replay(a, b, figures=SESSION_FIGURES):
    for k in figures:
        assert a.figures[k] == pytest.approx(b.figures[k], rel=1e-12, abs=1e-9), k
    assert (a.detail is None) == (b.detail is None)
    for k in a.detail or ():
        assert a.detail[k] == pytest.approx(b.detail[k], rel=1e-12, abs=1e-9), k


def test_retroactive_policies_always_take_the_block_walker(monkeypatch):
    import replay.engine.loop as engine

    for name, params in policies():
        p = build(name, params)
        assert walker_for(p) is (walk_blocks if p.retroactive() else walk_fast), name
    monkeypatch.setattr(engine, "FAST_PATH", False)
    assert all(walker_for(build(n, p)) is walk_blocks for n, p in policies())


# Retroactive in type, but configured so that they change nothing, beside the policy they must
# then equal. Retroactive policies never take the fast walker (its prefix sums assume sizes
# never change after the append), so this is how the two walkers are compared for them: the
# block walker with before_request hooks, a cache that keeps dominated entries, and the
# retroactive bookkeeping must give exactly the fast walker's figures.
NO_CHANGE = [
    (("claude_code_microcompact", {"idle_minutes": 10**9}), ("noop", {})),
    (("anthropic_clear_tool_uses", {"trigger": 10**12}), ("noop", {})),
    (("supersede", {"trigger_tokens": 10**12}), ("noop", {})),
    (("jp_compaction", {"trigger_turn": 10**6}), ("noop", {})),
    (("cupel_dedup", {"enabled": False}), ("noop", {})),
    (("pipeline", {"steps": [{"policy": "devboy_lru"},
                             {"policy": "claude_code_microcompact", "params": {"idle_minutes": 10**9}}]}),
     ("devboy_lru", {})),
    (("pipeline", {"steps": [{"policy": "jp_resource_dedup"}, {"policy": "cupel_dedup", "params": {"enabled": False}}]}),
     ("jp_resource_dedup", {})),
]


@pytest.mark.parametrize("detail", [True, False])
@pytest.mark.parametrize("retro,same", NO_CHANGE, ids=[f"{r[0]}-as-{s[0]}" for r, s in NO_CHANGE])
def test_block_walker_with_a_retroactive_policy_that_changes_nothing_equals_fast_walker(retro, same, detail):
    r_policy, s_policy = build(*retro), build(*same)
    assert r_policy.retroactive() and not s_policy.retroactive()
    o = ReplayOptions(CacheConfig(ttl="5m"), PRICES, detail=detail)
    session, vocab = realistic(dup=True).build()
    slow = replay_session(session, vocab, r_policy, o)
    session, vocab = realistic(dup=True).build()
    fast = replay_session(session, vocab, s_policy, o)
    assert slow.figures["blocks_changed"] == fast.figures["blocks_changed"]
    assert slow.figures["busts"] == 0
    assert_same_replay(slow, fast)


def test_stream_memos_are_per_configuration():
    """Sweeps replay one loaded stream under many configurations: the per-stream memos (TTLs
    per TTL setting, prefix sums and event lists per append_kinds) must not leak between
    them, for retroactive and insert-time policies alike."""
    shared, vocab = realistic(dup=True).build()
    for ttl in ("5m", "1h", "log"):
        for name, params in policies():
            o = ReplayOptions(CacheConfig(ttl=ttl), PRICES, detail=True)
            fresh, fresh_vocab = realistic(dup=True).build()
            assert_same_replay(replay_session(shared, vocab, build(name, params), o),
                               replay_session(fresh, fresh_vocab, build(name, params), o),
                               figures=list(SESSION_FIGURES))
