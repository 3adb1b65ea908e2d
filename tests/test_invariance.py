"""Every policy decides the same and saves the same on anonymized logs as on the raw ones."""

import pytest

from replay import store
from replay.privacy.anonymize import anonymize_tree
from replay.model.arrays import load_dataset
from replay.engine import ReplayOptions, replay_dataset
from replay.store.load import ingest
from replay.ingest.keys import Keyring, load_or_create_master_key
from replay.policies import REGISTRY, build

from conftest import shared_logs

POLICIES = sorted(n for n in REGISTRY if n != "pipeline")


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    logs = shared_logs("claude-code")
    d = tmp_path_factory.mktemp("inv")
    key = d / "key"
    anon = d / "anon"
    anonymize_tree(logs, anon, Keyring.for_dataset(load_or_create_master_key(key), "default"), path_style="words")
    out = {}
    for name, src in (("raw", logs), ("anon", anon)):
        db = d / f"{name}.duckdb"
        s = ingest([src], db, key_file=key)
        assert s.sessions == 27 and not s.failed
        con = store.connect(db, read_only=True)
        out[name] = load_dataset(con, "default")
        con.close()
    return out


def _totals(ds, name):
    res = replay_dataset(ds, build(name), ReplayOptions())
    return {k: sum(r.figures[k] for r in res) for k in res[0].figures}


@pytest.mark.parametrize("name", POLICIES)
def test_policy_is_invariant_under_anonymization(both, name):
    raw, anon = _totals(both["raw"], name), _totals(both["anon"], name)
    print(name, {f: (raw[f], anon[f]) for f in ("blocks_changed", "hints", "busts", "tokens_saved", "cost")})
    for f in ("requests", "stale_refs"):
        assert anon[f] == raw[f], f
    # Decisions: anonymized texts keep their token counts exactly but their byte sizes only within
    # a size class, so a policy with a byte threshold (JP min_bytes 300, devboy min_body_chars 200)
    # can decide differently for a block right at its threshold.
    for f in ("hints", "blocks_changed", "busts", "dangling_refs"):
        assert anon[f] == pytest.approx(raw[f], rel=0.01, abs=1), f
    for f in ("tokens_delivered", "context_tokens", "tokens_saved", "cost", "cache_read"):
        assert anon[f] == pytest.approx(raw[f], rel=0.01, abs=1e-6), f
