"""The replay gives, for every request, the same floats as the engine did before the per-request
step was made fast (issue 29, item 5): goldens computed with the code of main at 9fbd476; the
what-if points (first_idle_sys_1h, plan, keepalive, keepalive_short_notail) regenerated on
2026-11-28 for two causal fixes meant to alter them: a turn-end write takes the TTL and model of
the answer it follows, not of the request after the idle gap, and a keep-alive ping refreshes the
entry used last (the live conversation), not the longest one; the server_compaction points
regenerated the same day for two counters it adds (unsupported_model_requests and
unsupported_model_compactions): every other figure of those points is unchanged.

Every point (dataset, cache setting or what-if, policy, detail on or off) is replayed from
freshly loaded arrays, and the exact text (repr) of each session's figures and of every
per-request row is hashed; `tests/golden/replay_step.json` holds the hashes the code before the
change gave. A mismatch names the point. Regenerate only for a change meant to alter figures:

    .venv/bin/python tests/test_replay_golden.py --write
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden" / "replay_step.json"
KEY = bytes(range(32))  # a fixed master key: the same session keys and hashes at every run

RETRO = [("anthropic_clear_tool_uses", {"trigger": 20_000}), ("claude_code_microcompact", {"idle_minutes": 5.0}),
         ("server_compaction", {"trigger": 50_000})]
INSERT = [("devboy_lru", {"capacity": 3}), ("jp_resource_dedup", {}), ("read_range_dedup", {})]
FEW = [("noop", {}), ("devboy_lru", {"capacity": 3}), ("anthropic_clear_tool_uses", {"trigger": 20_000})]
ALL = [("noop", {}), *INSERT, *RETRO]


def _plan(st):
    """A fixed per-request plan: 1-hour writes at every third request, pings before every other."""
    n = st.n_requests
    return [3_600_000 if k % 3 == 0 else 300_000 for k in range(n)], [k % 2 == 1 for k in range(n)]


def settings() -> dict[str, tuple]:
    """name -> (CacheConfig, WhatIf or None, policies). The client rules are those the goldens
    were computed with (the defaults before 2026-11-28: the turn-end write and skill turns in
    every 2.x version, no ToolSearch rule), so that the goldens keep testing the step itself;
    the version-earned rules have tests of their own (tests/test_rules_earned.py)."""
    from replay.model import cache

    def CacheConfig(**kw):
        return cache.CacheConfig(**{"turn_end_write": "v2", "skill_turns": "invalidate", "tool_search": "ignore",
                                    **kw})
    from replay.model.whatif import ClientCache, KeepAlive, ProviderRules, WhatIf

    model_only = CacheConfig(observed_evictions="none")
    return {
        "calibrated": (CacheConfig(), None, ALL),
        "model_only": (model_only, None, ALL),
        "ttl_1h": (CacheConfig(ttl="1h"), None, FEW),
        "ttl_5m_send_always": (CacheConfig(ttl="5m", clock="send", turn_end_write="always", system_prefix="dataset"),
                               None, FEW),
        "rules_off_cold": (CacheConfig(thinking_switch="ignore", resume="ignore", task_turns="ignore",
                                       skill_turns="ignore", unknown_times="model", clock="response",
                                       warm_start="cold", system_prefix="overhead", turn_end_write="none"), None, FEW),
        "last_message_never": (CacheConfig(breakpoints="last-message", expiry="never", min_cacheable=2048,
                                           lookback_blocks=20, prefix_versions="same"), None, FEW),
        "no_breakpoints": (CacheConfig(breakpoints="none"), None, FEW[:1]),
        "openai_rules": (replace(model_only, openai_routing_miss=0.25, openai_increments="documented",
                                 openai_reasoning="keep", openai_second_request="model", openai_warm_prefix="ttl",
                                 openai_retention="10m"), None, FEW),
        "keepalive": (model_only, WhatIf(client=ClientCache(keepalive=KeepAlive())), FEW),
        "keepalive_short_notail": (CacheConfig(ttl="5m"), WhatIf(client=ClientCache(
            keepalive=KeepAlive(interval_s=120.0, horizon_s=900.0, tail=False))), FEW[:2]),
        "first_idle_sys_1h": (model_only, WhatIf(client=ClientCache(system_ttl="1h", ttl_rule="first_idle")), FEW),
        "plan": (model_only, WhatIf(client=ClientCache(ttl_rule="plan", plan=_plan)), FEW[:2]),
        "provider_openai": (model_only, WhatIf(provider=ProviderRules(caching="openai")), FEW),
    }


def load(corpus: str, tmp: Path):
    """A corpus ingested with the fixed key and loaded as replay arrays."""
    from replay import store
    from replay.model.arrays import load_dataset
    from replay.store.load import ingest
    from replay.synth.generate import generate_corpus

    if corpus == "synthetic":
        src = tmp / "logs"
        generate_corpus(src, sessions=12, seed=3)
    else:
        sys.path.insert(0, str(HERE))
        from conftest import shared_logs
        src = shared_logs(corpus)
    ingest([src], tmp / "g.duckdb", master_key=KEY)
    con = store.connect(tmp / "g.duckdb", read_only=True)
    try:
        return load_dataset(con, "default")
    finally:
        con.close()


def digests(ds, only: set[str] | None = None) -> dict[str, str]:
    """point -> sha256 of the exact text of every session's figures and per-request rows
    (``only``: of these settings)."""
    from replay.engine import ReplayOptions, replay_session
    from replay.engine.memo import forget_priced
    from replay.policies import build

    out = {}
    for name, (cfg, whatif, policies) in settings().items():
        if only is not None and name not in only:
            continue
        for policy, params in policies:
            for detail in (True, False):
                forget_priced(ds.sessions)  # every point prices its streams itself
                opts = ReplayOptions(cfg, detail=detail, whatif=whatif)
                rows = []
                for s in ds.sessions:
                    r = replay_session(s, ds.vocab, build(policy, params), opts)
                    rows.append(repr((sorted(r.figures.items()),
                                      sorted(r.detail.items()) if r.detail is not None else None)))
                # sorted: session keys (and so the sessions' order) follow where the logs lie
                out[f"{name}/{policy}/{'detail' if detail else 'sums'}"] = hashlib.sha256(
                    "\n".join(sorted(rows)).encode()).hexdigest()
    return out


CORPORA = ["synthetic", "claude-code", "codex"]


@pytest.fixture(scope="module", params=CORPORA)
def corpus(request, tmp_path_factory):
    return request.param, load(request.param, tmp_path_factory.mktemp(request.param))


def test_every_request_prices_as_before(corpus):
    name, ds = corpus
    want = json.loads(GOLDEN.read_text())[name]
    got = digests(ds)
    assert set(got) == set(want)
    wrong = [p for p in want if got[p] != want[p]]
    assert not wrong, f"{len(wrong)} of {len(want)} points differ from the goldens: {wrong[:10]}"


def test_the_cache_request_taken_in_the_loop_prices_as_the_cache_method(corpus, monkeypatch):
    """The step takes the cache's common request itself; `StreamCache.request` (the reference it
    copies) gives the goldens too."""
    import replay.engine.pricing as pricing

    name, ds = corpus
    monkeypatch.setattr(pricing, "INLINE", False)
    only = {"calibrated", "model_only", "last_message_never", "keepalive", "ttl_1h"}
    want = {p: h for p, h in json.loads(GOLDEN.read_text())[name].items() if p.split("/")[0] in only}
    assert digests(ds, only) == want


def test_an_eviction_keeps_the_entries_in_the_order_a_stable_sort_gives():
    """Shortened system entries go back where a stable sort by length puts them: before the
    entries as long as they now are, in their own order."""
    from replay.model.cache import SYS, CacheConfig, StreamCache

    c = StreamCache(CacheConfig())
    T = 10 ** 6
    # longest first (ties: oldest first), as the cache keeps them
    c.entries = [[0, 0, 5, 20_000.0, T, 1], [0, SYS, 0, 15_000.0, T, 2], [1, SYS, 0, 12_000.0, T, 3],
                 [0, SYS, 0, 9_000.0, T, 4], [0, 0, 3, 8_000.0, T, 5], [1, 0, 2, 8_000.0, T, 6],
                 [0, 0, 2, 5_000.0, T, 7]]
    c.sys = [e for e in c.entries if e[1] == SYS]
    want = [list(e) for e in c.entries]
    for e in want:
        if e[0] == 0 and e[1] == SYS and e[3] > 8_000.0:
            e[3] = 8_000.0
    want.sort(key=lambda e: -e[3])
    c.evict(0, 0, 10, 8_000.0, 30_000.0, 0)
    assert c.entries == want
    assert [e[5] for e in c.entries] == [1, 3, 2, 4, 5, 6, 7]


if __name__ == "__main__":
    import tempfile

    if sys.argv[1:] != ["--write"]:
        sys.exit(__doc__)
    out = {}
    for corpus in CORPORA:
        with tempfile.TemporaryDirectory() as d:
            out[corpus] = digests(load(corpus, Path(d)))
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
