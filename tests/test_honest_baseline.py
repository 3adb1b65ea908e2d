"""Nothing changed => nothing saved, on the real shared sessions, in every cache variant.

Every saving ctxreplay reports is `policy - noop`, so the engine's own behaviour must never
show up as a saving: a policy run that changes no block (and no overhead) costs exactly what
the no-op costs, session by session, whether the replay is calibrated from the log or not.
"""

import pytest

from conftest import shared_logs
from replay import store
from replay.engine import ReplayOptions, replay_session
from replay.model.arrays import load_dataset
from replay.model.cache import CacheConfig
from replay.policies import REGISTRY, build
from replay.store.load import ingest

VARIANTS = {"calibrated": CacheConfig(), "model_only": CacheConfig(observed_evictions="none")}

# settings under which a policy's trigger never fires (issue 17's acceptance runs)
NO_CHANGE = [("claude_code_microcompact", {"idle_minutes": 1_000_000_000}), ("jp_compaction", {"trigger_fraction": 100})]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    db = tmp_path_factory.mktemp("honest") / "cc.duckdb"
    ingest([shared_logs("claude-code")], db, key_file=tmp_path_factory.getbasetemp() / "test.key")
    con = store.connect(db, read_only=True)
    ds = load_dataset(con, "default")
    con.close()
    return ds


def _policies():
    out = [(n, {}) for n in sorted(REGISTRY) if n not in ("pipeline", "noop")]
    out.append(("pipeline", {"steps": [{"policy": "devboy_lru"}, {"policy": "claude_code_microcompact"}]}))
    return out + NO_CHANGE


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_session_a_policy_leaves_untouched_has_zero_saving(dataset, variant):
    opts = ReplayOptions(VARIANTS[variant])
    noop = {s.session_key: replay_session(s, dataset.vocab, build("noop"), opts).figures for s in dataset.sessions}
    untouched = 0
    for name, params in _policies():
        for s in dataset.sessions:
            f = replay_session(s, dataset.vocab, build(name, params), opts).figures
            if f["blocks_changed"] == 0 and f["tokens_saved"] == 0:
                untouched += 1
                assert f["cost"] == pytest.approx(noop[s.session_key]["cost"], rel=1e-12, abs=1e-9), (name, s.session_key)
                assert f["cache_read"] == pytest.approx(noop[s.session_key]["cache_read"], rel=1e-12, abs=1e-6)
    assert untouched >= 2 * len(dataset.sessions)  # the two no-change settings at least


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_no_change_settings_save_nothing_corpus_wide(dataset, variant):
    opts = ReplayOptions(VARIANTS[variant])
    base = sum(replay_session(s, dataset.vocab, build("noop"), opts).figures["cost"] for s in dataset.sessions)
    for name, params in NO_CHANGE:
        figs = [replay_session(s, dataset.vocab, build(name, params), opts).figures for s in dataset.sessions]
        assert sum(f["blocks_changed"] for f in figs) == 0
        assert abs(sum(f["cost"] for f in figs) - base) < 0.01, name
