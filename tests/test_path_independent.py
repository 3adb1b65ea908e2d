"""A replay's figures do not depend on where the logs lie.

Session keys are keyed hashes of the source file's path (docs/trace-format.md), so the same
logs in another folder load their sessions in another order. Codes (models, tools, resources)
must not follow that order: per-model figures are added in code order, and a float sum in
another order differs in the last bit (CI's clone at another path got different digests in
tests/test_replay_golden.py before codes were sorted)."""

from __future__ import annotations

import shutil

from test_replay_golden import KEY, settings


def _figures(src, db):
    from replay import store
    from replay.engine import ReplayOptions, replay_session
    from replay.model.arrays import load_dataset
    from replay.policies import build
    from replay.store.load import ingest

    ingest([src], db, master_key=KEY)
    con = store.connect(db, read_only=True)
    try:
        ds = load_dataset(con, "default")
    finally:
        con.close()
    rows = []
    for name in ("calibrated", "keepalive", "keepalive_short_notail"):
        cfg, whatif, policies = settings()[name]
        for policy, params in policies:
            opts = ReplayOptions(cfg, detail=False, whatif=whatif)
            for s in ds.sessions:
                rows.append(repr((name, policy, sorted(replay_session(s, ds.vocab, build(policy, params), opts)
                                                       .figures.items()))))
    return ds, sorted(rows)


def test_the_same_logs_in_two_folders_give_the_same_figures(tmp_path):
    from conftest import shared_logs

    src = shared_logs("claude-code")
    a, b = tmp_path / "a" / "logs", tmp_path / "elsewhere" / "other-name"
    shutil.copytree(src, a)
    shutil.copytree(src, b)
    ds_a, got_a = _figures(a, tmp_path / "a.duckdb")
    ds_b, got_b = _figures(b, tmp_path / "b.duckdb")
    assert {s.session_key for s in ds_a.sessions}.isdisjoint({s.session_key for s in ds_b.sessions})
    assert got_a == got_b
    assert ds_a.vocab.models == ds_b.vocab.models == sorted(ds_a.vocab.models)
    assert ds_a.vocab.tool_names == ds_b.vocab.tool_names
    assert len(ds_a.vocab.models) > 1
