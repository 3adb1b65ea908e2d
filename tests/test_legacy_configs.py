"""Runs stored before a cache-model setting existed pair with (and re-run as) the behaviour they
were replayed with: `replay.model.cache.stored_settings`."""

from __future__ import annotations

import json

import duckdb
from click.testing import CliRunner

from replay.cli import main
from replay.model.cache import LEGACY_SETTINGS, CacheConfig, stored_settings


def _ok(args):
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r


def test_stored_settings_fill_only_what_a_run_predates():
    new = CacheConfig().as_dict()
    assert stored_settings(new) == new  # a current run is unchanged
    old = {k: v for k, v in new.items() if k not in LEGACY_SETTINGS}
    filled = stored_settings(old)
    assert {k: filled[k] for k in LEGACY_SETTINGS} == LEGACY_SETTINGS
    assert CacheConfig(**filled).thinking_switch == "ignore" and CacheConfig(**filled).clock == "response"


def test_a_legacy_run_gets_one_baseline_with_its_own_rules(tmp_path):
    from replay.cli import sample_logs_dir
    from replay.store.load import ingest

    db = tmp_path / "l.duckdb"
    ingest([sample_logs_dir()], db, dataset="sample", key_file=tmp_path / "key")
    run = json.loads(_ok(["replay", "--db", db, "--policy", "devboy_lru", "--variants", "calibrated", "--json"]).output)
    # make it a run of an older ctxreplay: its stored configuration lacks the newer settings, and
    # it has no baseline
    con = duckdb.connect(str(db))
    cfg = json.loads(con.execute("SELECT cache_config FROM runs WHERE run_id = ?", [run["run_id"]]).fetchone()[0])
    old = {k: v for k, v in cfg.items() if k not in LEGACY_SETTINGS}
    con.execute("UPDATE runs SET cache_config = ? WHERE run_id = ?", [json.dumps(old), run["run_id"]])
    con.execute("DELETE FROM run_sessions WHERE run_id IN (SELECT run_id FROM runs WHERE policy = 'noop')")
    con.execute("DELETE FROM runs WHERE policy = 'noop'")
    con.close()

    def noops():
        c = duckdb.connect(str(db), read_only=True)
        try:
            return [json.loads(t) for (t,) in c.execute("SELECT cache_config FROM runs WHERE policy = 'noop'").fetchall()]
        finally:
            c.close()

    rows = json.loads(_ok(["compare", "--db", db, "--json"]).output)
    legacy = next(r for r in rows if r["run_id"] == run["run_id"])
    assert legacy["baseline_run"] is None
    _ok(["compare", "--db", db, "--json", "--run-baselines"])
    made = noops()
    assert len(made) == 1 and {k: made[0][k] for k in LEGACY_SETTINGS} == LEGACY_SETTINGS
    rows = json.loads(_ok(["compare", "--db", db, "--json", "--run-baselines"]).output)
    assert len(noops()) == 1  # paired now: no second baseline
    legacy = next(r for r in rows if r["run_id"] == run["run_id"])
    assert legacy["baseline_run"] is not None and legacy["saved_pct"]["cost"] is not None


def test_the_cli_options_and_sweep_specs_set_the_new_settings(tmp_path):
    """--thinking-switch, --system-prefix and --clock reach the stored configuration; a sweep
    spec's [cache] table may vary them."""
    from replay.cli import sample_logs_dir
    from replay.experiments.sweep import load_spec
    from replay.store.load import ingest

    db = tmp_path / "o.duckdb"
    ingest([sample_logs_dir()], db, dataset="sample", key_file=tmp_path / "key")
    run = json.loads(_ok(["replay", "--db", db, "--policy", "noop", "--variants", "model-only", "--json",
                          "--thinking-switch", "ignore", "--system-prefix", "overhead", "--clock", "response"]).output)
    con = duckdb.connect(str(db), read_only=True)
    cfg = json.loads(con.execute("SELECT cache_config FROM runs WHERE run_id = ?", [run["run_id"]]).fetchone()[0])
    con.close()
    assert {k: cfg[k] for k in ("thinking_switch", "system_prefix", "clock")} == \
        {"thinking_switch": "ignore", "system_prefix": "overhead", "clock": "response"}
    rep = json.loads(_ok(["validate", "--db", db, "--json", "--clock", "response"]).output)
    assert rep["cache_config"]["clock"] == "response" and rep["cache_config"]["thinking_switch"] == "invalidate"
    spec = tmp_path / "s.toml"
    spec.write_text('policy = "noop"\n[cache]\nthinking_switch = ["invalidate", "ignore"]\nclock = ["send"]\n')
    points = load_spec(spec).points()
    assert sorted(p.cache["thinking_switch"] for p in points) == ["ignore", "invalidate"]


def test_the_client_rule_options_and_sweep_keys(tmp_path):
    """--resume, --task-turns and --unknown-times reach the stored configuration; a sweep
    spec's [cache] table may vary them."""
    from replay.cli import sample_logs_dir
    from replay.experiments.sweep import load_spec
    from replay.store.load import ingest

    db = tmp_path / "o.duckdb"
    ingest([sample_logs_dir()], db, dataset="sample", key_file=tmp_path / "key")
    run = json.loads(_ok(["replay", "--db", db, "--policy", "noop", "--variants", "model-only", "--json",
                          "--resume", "ignore", "--task-turns", "ignore", "--unknown-times", "model"]).output)
    con = duckdb.connect(str(db), read_only=True)
    cfg = json.loads(con.execute("SELECT cache_config FROM runs WHERE run_id = ?", [run["run_id"]]).fetchone()[0])
    con.close()
    assert {k: cfg[k] for k in ("resume", "task_turns", "unknown_times")} == \
        {"resume": "ignore", "task_turns": "ignore", "unknown_times": "model"}
    rep = json.loads(_ok(["validate", "--db", db, "--json", "--unknown-times", "model"]).output)
    assert rep["cache_config"]["unknown_times"] == "model" and rep["cache_config"]["resume"] == "invalidate"
    spec = tmp_path / "s.toml"
    spec.write_text('policy = "noop"\n[cache]\nresume = ["invalidate", "ignore"]\ntask_turns = ["ignore"]\n'
                    'unknown_times = ["model"]\n')
    points = load_spec(spec).points()
    assert sorted(p.cache["resume"] for p in points) == ["ignore", "invalidate"]
    assert {p.cache["task_turns"] for p in points} == {"ignore"} and {p.cache["unknown_times"] for p in points} == {"model"}


def test_runs_stored_before_the_latest_ingest_are_named(tmp_path):
    # a later ingest changes what a baseline stored since covers: compare says which runs predate it
    from replay.cli import sample_logs_dir
    from replay.store.load import ingest

    from cc_records import Transcript, text, usage

    db = tmp_path / "l.duckdb"
    ingest([sample_logs_dir()], db, dataset="sample", key_file=tmp_path / "key")
    _ok(["replay", "--db", db, "--policy", "noop", "--variants", "calibrated"])
    _ok(["replay", "--db", db, "--policy", "devboy_lru", "--variants", "calibrated"])
    rows = json.loads(_ok(["compare", "--db", db, "--json"]).output)
    assert rows and not any(r["before_latest_ingest"] for r in rows)
    r = _ok(["compare", "--db", db])
    assert "before the latest ingest" not in r.output
    t = Transcript(session_id="late-1", version="2.1.37")
    t.user("a session ingested later")
    t.assistant("late-m1", [text("ok")], usage(write=5000), model="claude-opus-4-6")
    t.write_jsonl(tmp_path / "more" / "late.jsonl")
    ingest([tmp_path / "more"], db, dataset="sample", key_file=tmp_path / "key")
    rows = json.loads(_ok(["compare", "--db", db, "--json"]).output)
    assert all(r["before_latest_ingest"] for r in rows)
    r = _ok(["compare", "--db", db])
    assert "2 run(s)" in r.output and "before the latest ingest" in r.output


def test_the_skill_turn_and_system_prefix_options(tmp_path):
    """--skill-turns and --system-prefix reach the stored configuration (defaults: earned,
    earlier); a sweep spec's [cache] table may vary them; an unknown value is refused."""
    from replay.cli import sample_logs_dir
    from replay.experiments.sweep import load_spec
    from replay.store.load import ingest

    db = tmp_path / "o.duckdb"
    ingest([sample_logs_dir()], db, dataset="sample", key_file=tmp_path / "key")
    ids = [json.loads(_ok(["replay", "--db", db, "--policy", "noop", "--variants", "model-only", "--json", *args]
                          ).output)["run_id"]
           for args in ([], ["--skill-turns", "ignore", "--system-prefix", "log"])]
    con = duckdb.connect(str(db), read_only=True)
    cfgs = [json.loads(con.execute("SELECT cache_config FROM runs WHERE run_id = ?", [i]).fetchone()[0]) for i in ids]
    con.close()
    assert [(c["skill_turns"], c["system_prefix"]) for c in cfgs] == [("earned", "earlier"), ("ignore", "log")]
    r = CliRunner().invoke(main, ["replay", "--db", str(db), "--policy", "noop", "--system-prefix", "shared"])
    assert r.exit_code != 0 and "shared" in r.output
    spec = tmp_path / "s.toml"
    spec.write_text('policy = "noop"\n[cache]\nskill_turns = ["invalidate", "ignore"]\nsystem_prefix = ["overhead"]\n')
    points = load_spec(spec).points()
    assert sorted(p.cache["skill_turns"] for p in points) == ["ignore", "invalidate"]
    assert {p.cache["system_prefix"] for p in points} == {"overhead"}
