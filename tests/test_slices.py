"""Dataset slices (issue 15, item 2): `replay`, `sweep`, `compare` and `report` take the
filters of `usage` (--since/--until/--model/--agent/--project); a slice is a filter over the
ingested sessions, stored in each run's configuration, and a sliced run is measured only
against a no-op baseline of the same slice."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from replay.cli import main

# the embedded sample: 6 Claude Code sessions; 2 of them have requests on 2026-02-03 (UTC)
SINCE = "2026-02-03"


def _ok(args):
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r.output


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    from replay.cli import sample_logs_dir
    from replay.store.load import ingest

    path = tmp_path_factory.mktemp("slices") / "s.duckdb"
    ingest([sample_logs_dir()], path, dataset="sample", key_file=path.parent / "key")
    return path


def _sessions(db, *opts) -> set[str]:
    return {r["session_key"] for r in json.loads(_ok(["sessions", "--db", db, "--json", *opts]))}


def _stored_sessions(db, run_id: str) -> set[str]:
    from replay import store

    con = store.connect(db, read_only=True)
    try:
        return {k for (k,) in con.execute("SELECT session_key FROM run_sessions WHERE run_id = ?",
                                          [run_id]).fetchall()}
    finally:
        con.close()


def _compare(db, *opts) -> list[dict]:
    return json.loads(_ok(["compare", "--db", db, "--json", *opts]))


def test_sliced_replay_stores_the_slice_sessions_only(db):
    everything = _sessions(db)
    wanted = _sessions(db, "--since", SINCE)
    assert 0 < len(wanted) < len(everything)
    full = json.loads(_ok(["replay", "--db", db, "--policy", "noop", "--variants", "calibrated", "--json"]))
    sliced = json.loads(_ok(["replay", "--db", db, "--policy", "noop", "--variants", "calibrated", "--since", SINCE,
                             "--json"]))
    assert full["slice"] is None and sliced["slice"] == {"since": SINCE, "timezone": "UTC"}
    assert _stored_sessions(db, full["run_id"]) == everything
    assert _stored_sessions(db, sliced["run_id"]) == wanted
    assert sliced["sessions"] == len(wanted)


def test_slice_semantics_model_agent_until(db):
    from replay import store
    from replay.experiments.runs import slice_session_keys

    con = store.connect(db, read_only=True)
    try:
        every = set(slice_session_keys(con, "sample", {"agents": ["claude-code"]}))
        assert every == _sessions(db)
        haiku = set(slice_session_keys(con, "sample", {"models": ["claude-haiku-4-5-20251001"]}))
        assert haiku == _sessions(db, "--model", "claude-haiku-4-5-20251001")
        before = set(slice_session_keys(con, "sample", {"until": "2026-02-02", "timezone": "UTC"}))
        assert before == _sessions(db, "--until", "2026-02-02")
        with pytest.raises(store.StoreError, match="no session"):
            slice_session_keys(con, "sample", {"agents": ["codex"]})
    finally:
        con.close()


def test_compare_pairs_sliced_runs_with_the_sliced_baseline_only(db):
    _ok(["replay", "--db", db, "--policy", "noop", "--variants", "calibrated"])
    _ok(["replay", "--db", db, "--policy", "noop", "--variants", "calibrated", "--since", SINCE])
    sliced = json.loads(_ok(["replay", "--db", db, "--policy", "supersede", "--variants", "calibrated",
                             "--since", SINCE, "--json"]))["run_id"]
    full = json.loads(_ok(["replay", "--db", db, "--policy", "supersede", "--variants", "calibrated",
                           "--json"]))["run_id"]
    rows = {r["run_id"]: r for r in _compare(db)}
    base_of = {r["run_id"]: r for r in rows.values() if r["policy"] == "noop"}
    sb, fb = rows[sliced]["baseline_run"], rows[full]["baseline_run"]
    assert sb and fb and sb != fb
    assert base_of[sb]["cache_config"]["slice"] == {"since": SINCE, "timezone": "UTC"}
    assert "slice" not in base_of[fb]["cache_config"]
    assert rows[sliced]["sessions"] == base_of[sb]["sessions"] < base_of[fb]["sessions"]
    # the sliced baseline's fidelity is over the slice's sessions only
    assert rows[sliced]["baseline_fidelity"]["recorded_cost"] < rows[full]["baseline_fidelity"]["recorded_cost"]
    # the sliced and the full run are not the same configuration (no cross-slice variant pairing)
    assert all(v["run_id"] != full for v in (rows[sliced].get("variants") or {}).values())
    # --since on compare: only the runs of exactly that slice
    only = _compare(db, "--since", SINCE)
    assert only and all(r["cache_config"].get("slice") == {"since": SINCE, "timezone": "UTC"} for r in only)
    assert sliced in {r["run_id"] for r in only} and full not in {r["run_id"] for r in only}


def test_missing_sliced_baseline_is_named_and_run_with_its_slice(db):
    run = json.loads(_ok(["replay", "--db", db, "--policy", "supersede", "--variants", "calibrated",
                          "--agent", "claude-code", "--json"]))["run_id"]
    text = _ok(["compare", "--db", db, "--agent", "claude-code"])
    assert "--policy noop" in text and "--agent claude-code" in text
    rows = json.loads(_ok(["compare", "--db", db, "--agent", "claude-code", "--run-baselines", "--json"]))
    row = next(r for r in rows if r["run_id"] == run)
    base = next(r for r in rows if r["run_id"] == row["baseline_run"])
    assert base["policy"] == "noop" and base["cache_config"]["slice"] == {"agents": ["claude-code"]}


def test_report_on_a_slice(db, tmp_path):
    _ok(["replay", "--db", db, "--policy", "noop", "--since", SINCE])
    _ok(["replay", "--db", db, "--policy", "supersede", "--since", SINCE])
    res = json.loads(_ok(["report", "--db", db, "--out", tmp_path / "r", "--since", SINCE, "--json"]))
    assert res["slice"] == {"since": SINCE, "timezone": "UTC"}
    sliced_runs = [r for r in _compare(db, "--since", SINCE)]
    assert res["runs"] == len(sliced_runs)
    assert '"since": "2026-02-03"' in (tmp_path / "r" / "report.md").read_text()
    r = CliRunner().invoke(main, ["report", "--db", str(db), "--out", str(tmp_path / "none"), "--until",
                                  "2020-01-01"])
    assert r.exit_code != 0 and "no finished runs" in r.output and "slice" in r.output


def test_sweep_on_a_slice(db, tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text('name = "tiny"\npolicy = "supersede"\n[grid]\ntrigger_tokens = [0, 100000]\n')
    wanted = _sessions(db, "--model", "claude-haiku-4-5-20251001")
    assert 0 < len(wanted) < len(_sessions(db))
    res = json.loads(_ok(["sweep", spec, "--db", db, "--model", "claude-haiku-4-5-20251001", "--json"]))
    assert res["slice"] == {"models": ["claude-haiku-4-5-20251001"]}
    assert res["session_configs_run"] == len(wanted) * res["points"]
    full = json.loads(_ok(["sweep", spec, "--db", db, "--json"]))
    assert full["sweep_id"] != res["sweep_id"] and full["points_already_finished"] == 0
    again = json.loads(_ok(["sweep", spec, "--db", db, "--model", "claude-haiku-4-5-20251001", "--json"]))
    assert again["sweep_id"] == res["sweep_id"] and again["points_already_finished"] == again["points"]
    rows = {r["run_id"]: r for r in _compare(db, "--model", "claude-haiku-4-5-20251001")}
    for rid in res["run_ids"]:
        assert _stored_sessions(db, rid) == wanted
        base = rows[rows[rid]["baseline_run"]]
        assert base["sweep_id"] == res["sweep_id"] and base["cache_config"]["slice"] == res["slice"]


def test_slice_by_project(db):
    """A project slice matches the session's keyed working-directory pseudonym or a folder above it."""
    from replay import store
    from replay.experiments.runs import slice_session_keys

    con = store.connect(db, read_only=True)
    try:
        rows = con.execute("SELECT session_key, project FROM sessions WHERE dataset = 'sample'").fetchall()
        assert rows and all(p and p.startswith("/") for _, p in rows)
        key, project = sorted(rows)[0]
        want = {k for k, p in rows if p == project or p.startswith(project + "/")}
        assert set(slice_session_keys(con, "sample", {"projects": [project]})) == want
        top = "/" + project.strip("/").split("/")[0]
        under = {k for k, p in rows if p == top or p.startswith(top + "/")}
        assert set(slice_session_keys(con, "sample", {"projects": [top]})) == under
    finally:
        con.close()
    got = json.loads(_ok(["replay", "--db", db, "--policy", "noop", "--variants", "calibrated", "--project", project,
                          "--json"]))
    assert _stored_sessions(db, got["run_id"]) == want
