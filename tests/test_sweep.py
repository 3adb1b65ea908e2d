import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from replay.cli import main
from replay.store.load import ingest
from replay.experiments.sweep import SpecError, load_spec, run_sweep

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "sample" / "logs"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

SPEC = """
name = "t"
policy = "devboy_lru"
[grid]
capacity = [1, 3, 0]
[cache]
ttl = ["log", "5m"]
"""


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory):
    d = tmp_path_factory.mktemp("sweep")
    db = d / "base.duckdb"
    ingest([SAMPLE], db, dataset="sample", key_file=d / "key")
    return db


def _copy(db: Path, tmp_path: Path) -> Path:
    out = tmp_path / "s.duckdb"
    out.write_bytes(db.read_bytes())
    return out


def _results(db: Path) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT run_id, session_key, cost, input_total, cache_read, tokens_delivered, hints, busts "
                       "FROM run_sessions WHERE run_id IN (SELECT run_id FROM runs WHERE sweep_id IS NOT NULL) "
                       "ORDER BY 1, 2").fetchall()
    con.close()
    return rows


def test_grid_points_and_resume_skip_finished(sample_db, tmp_path):
    spec_file = tmp_path / "s.toml"
    spec_file.write_text(SPEC)
    spec = load_spec(spec_file)
    assert len(spec.points()) == 6
    assert [p.policy for p in spec.baselines()] == ["noop", "noop"]  # one per TTL setting
    db = _copy(sample_db, tmp_path)
    r1 = run_sweep(db, spec)
    assert (r1.points, r1.skipped_points, r1.sessions_done) == (8, 0, 48)
    r2 = run_sweep(db, spec)
    assert (r2.skipped_points, r2.sessions_done) == (8, 0)
    con = duckdb.connect(str(db), read_only=True)
    statuses = con.execute("SELECT status, count(*) FROM runs WHERE sweep_id = ? GROUP BY 1", [r1.sweep_id]).fetchall()
    cfg = json.loads(con.execute("SELECT cache_config FROM runs WHERE sweep_id = ? LIMIT 1", [r1.sweep_id]).fetchone()[0])
    con.close()
    assert statuses == [("finished", 8)] and cfg["ttl"] in ("log", "5m")


def test_partial_sweep_never_looks_finished_and_resumes_to_the_same_result(sample_db, tmp_path):
    spec_file = tmp_path / "s.toml"
    spec_file.write_text(SPEC)
    spec = load_spec(spec_file)
    full = tmp_path / "a.duckdb"
    full.write_bytes(sample_db.read_bytes())
    run_sweep(full, spec, chunk_sessions=2)
    part = tmp_path / "b.duckdb"
    part.write_bytes(sample_db.read_bytes())
    run_sweep(part, spec, chunk_sessions=2, batch_rows=1, stop_after=4)
    con = duckdb.connect(str(part), read_only=True)
    stored = con.execute("SELECT run_id, count(*) FROM run_sessions GROUP BY 1").fetchall()
    finished = con.execute("SELECT run_id FROM runs WHERE status = 'finished'").fetchall()
    con.close()
    # a point is finished only with all 6 sessions stored
    counts = dict(stored)
    assert all(counts.get(r[0]) == 6 for r in finished)
    assert len(finished) < 6
    r = run_sweep(part, spec, chunk_sessions=2)
    # sessions stored for unfinished points are resumed, not replayed again
    assert r.sessions_skipped == sum(counts.values()) - sum(counts[f[0]] for f in finished)
    assert _results(part) == _results(full)


def test_jobs_1_and_2_give_identical_results(sample_db, tmp_path):
    spec = load_spec(EXAMPLES / "devboy_capacity.toml")
    a = tmp_path / "a.duckdb"
    b = tmp_path / "b.duckdb"
    a.write_bytes(sample_db.read_bytes())
    b.write_bytes(sample_db.read_bytes())
    run_sweep(a, spec, jobs=1)
    run_sweep(b, spec, jobs=2)
    assert _results(a) == _results(b) and len(_results(a)) == 16 * 6


def test_kill_midway_and_rerun_equals_uninterrupted(sample_db, tmp_path):
    spec = EXAMPLES / "devboy_capacity.toml"
    ref = tmp_path / "ref.duckdb"
    ref.write_bytes(sample_db.read_bytes())
    run_sweep(ref, load_spec(spec))
    db = tmp_path / "k.duckdb"
    db.write_bytes(sample_db.read_bytes())
    cmd = [sys.executable, "-m", "replay.cli", "sweep", str(spec), "--db", str(db), "--json"]
    trace = tmp_path / "trace.txt"
    env = {**os.environ, "CTXREPLAY_SWEEP_SLOW_MS": "100", "CTXREPLAY_SWEEP_TRACE": str(trace)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 90
    # wait until two batches are committed, then kill -9 in the middle of the sweep
    while time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
        if trace.exists() and len(trace.read_text().splitlines()) >= 2:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    con = duckdb.connect(str(db), read_only=True)
    done = con.execute("SELECT count(*) FROM run_sessions").fetchone()[0]
    finished = con.execute("SELECT run_id FROM runs WHERE status = 'finished'").fetchall()
    bad = [r for r in finished
           if con.execute("SELECT count(*) FROM run_sessions WHERE run_id = ?", [r[0]]).fetchone()[0] != 6]
    con.close()
    assert 0 < done < 16 * 6, "the kill must land midway"
    assert bad == []
    r = subprocess.run(cmd, env={**os.environ}, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["points_already_finished"] > 0 and out["points_already_finished"] < 16
    assert _results(db) == _results(ref)


def test_spec_errors_name_the_key(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text('policy = "devboy_lru"\n[gird]\ncapacity = [1]\n')
    with pytest.raises(SpecError, match="did you mean 'grid'"):
        load_spec(f)
    f.write_text('policy = "devboy_lru"\n[grid]\ncapacty = [1]\n')
    with pytest.raises(SpecError, match="did you mean 'capacity'"):
        load_spec(f)
    f.write_text('policy = "devboy_lru"\n[cache]\nttl = ["2h"]\n')
    with pytest.raises(SpecError, match="allowed"):
        load_spec(f)


@pytest.mark.parametrize("body,message", [
    (b'policy = "devboy_lru"\n[grid]\ncapacity = [true]\n', "'capacity' must be an integer or none, got True"),
    (b'policy = "devboy_lru"\n[params]\nmutation_aware = 1\n', "'mutation_aware' must be true or false, got 1"),
    (b'policy = "jp_resource_dedup"\n[grid]\nmin_bytes = [2.5]\n', "'min_bytes' must be an integer, got 2.5"),
    (b'policy = ["devboy_lru"]\n', "policy must be a string"),
    (b'name = 3\npolicy = "devboy_lru"\n', "name must be a string"),
    (b'policy = "devboy_lru"\ngrid = 3\n', "grid must be a table"),
    (b'\xff\xfepolicy', "not UTF-8 text"),
    (b'policy = "devboy_lru"\n[random]\nsamples = "a"\n', "samples must be an integer >= 0"),
    (b'policy = "devboy_lru"\n[random]\nsamples = 2\n[random.params]\ncapacity = {low = 5, high = 1}\n',
     "low <= high"),
    (b'policy = "devboy_lru"\n[random]\nsamples = 2\n[random.params]\ncapacity = {choices = []}\n',
     "choices must be a non-empty list"),
    (b'policy = "devboy_lru"\n[random]\nsamples = 2\n[random.params]\ncapacity = 3\n', "{choices = [...]}"),
    # hostile-input audit, 2026-11-28: an unknown key in a range was not named; a numeric range for a
    # parameter of words failed at a sampled value ("got 4.03181761176121")
    (b'policy = "devboy_lru"\n[random]\nsamples = 2\n[random.params]\ncapacity = {low = 1, high = 5, step = 2}\n',
     "[random.params] capacity: unknown key(s) step"),
    (b'policy = "devboy_lru"\n[random]\nsamples = 2\n[random.params]\nverbosity = {low = 1, high = 5}\n',
     "[random.params] verbosity takes str values (its default: 'standard'): give {choices = [...]}"),
    # second audit: nan, inf and a misspelt name ended in tracebacks at tune's first trial; a fraction with
    # int = true was cut silently
    (b'policy = "devboy_lru"\n[random]\nsamples = 0\n[random.params]\ncapacity = {low = nan, high = 5}\n',
     "low and high must be finite numbers"),
    (b'policy = "devboy_lru"\n[random]\nsamples = 0\n[random.params]\ncapacity = {low = 1, high = inf}\n',
     "low and high must be finite numbers"),
    (b'policy = "devboy_lru"\n[random]\nsamples = 0\n[random.params]\ncapacityy = {low = 1, high = 5}\n',
     "[random.params] capacityy: devboy_lru has no such parameter; did you mean 'capacity'?"),
    (b'policy = "devboy_lru"\n[random]\nsamples = 0\n[random.params]\ncapacity = {low = 1.5, high = 3.7, int = true}\n',
     "int = true needs whole numbers for low and high"),
])
def test_a_spec_value_of_the_wrong_type_is_one_error_naming_it(tmp_path, body, message):
    """Each ended in a traceback, or ran: `capacity = true` as capacity 1, `mutation_aware = 1` as true."""
    f = tmp_path / "bad.toml"
    f.write_bytes(body)
    with pytest.raises(SpecError) as e:
        load_spec(f)
    assert str(e.value).startswith(str(f)) and message in str(e.value)
    r = CliRunner().invoke(main, ["sweep", str(f), "--db", str(tmp_path / "none.duckdb")])
    assert r.exit_code == 1 and message in r.output and "Traceback" not in r.output


def test_every_example_spec_loads():
    from replay.policies import REGISTRY

    for f in sorted(EXAMPLES.glob("*.toml")):
        spec = load_spec(f)
        assert spec.policy in REGISTRY and spec.points()


def test_sweep_cli(sample_db, tmp_path):
    db = _copy(sample_db, tmp_path)
    r = CliRunner().invoke(main, ["sweep", str(EXAMPLES / "devboy_random.toml"), "--db", str(db), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["points"] == 13 and out["session_configs_run"] == 78  # 12 points + 1 baseline


def test_dask_executor_matches_local(sample_db, tmp_path):
    distributed = pytest.importorskip("distributed") if os.environ.get("CI") != "true" else __import__("distributed")
    spec = load_spec(EXAMPLES / "devboy_capacity.toml")
    a = tmp_path / "a.duckdb"
    b = tmp_path / "b.duckdb"
    a.write_bytes(sample_db.read_bytes())
    b.write_bytes(sample_db.read_bytes())
    run_sweep(a, spec, jobs=1)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        run_sweep(b, spec, executor="dask", scheduler=cluster.scheduler_address)
    assert _results(a) == _results(b)


def test_dask_executor_needs_a_scheduler(sample_db, tmp_path):
    db = _copy(sample_db, tmp_path)
    with pytest.raises(SpecError, match="--scheduler"):
        run_sweep(db, load_spec(EXAMPLES / "devboy_capacity.toml"), executor="dask")


def test_second_sweep_on_the_same_file_gets_a_clear_error(sample_db, tmp_path):
    from replay import store

    db = _copy(sample_db, tmp_path)
    trace = tmp_path / "trace.txt"
    env = {**os.environ, "CTXREPLAY_SWEEP_SLOW_MS": "200", "CTXREPLAY_SWEEP_TRACE": str(trace)}
    cmd = [sys.executable, "-m", "replay.cli", "sweep", str(EXAMPLES / "devboy_capacity.toml"), "--db", str(db),
           "--json"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not trace.exists():
            time.sleep(0.05)
        with pytest.raises(store.StoreError, match="locked by another process"):
            run_sweep(db, load_spec(EXAMPLES / "devboy_capacity.toml"))
        r = CliRunner().invoke(main, ["sweep", str(EXAMPLES / "devboy_capacity.toml"), "--db", str(db)])
        assert r.exit_code == 1 and "locked by another process" in r.output
    finally:
        proc.wait(timeout=120)
    assert proc.returncode == 0
    assert len(_results(db)) == 16 * 6  # the first sweep completed untouched


def test_a_pipeline_spec_with_random_choices_loads(tmp_path):
    """Review (2026-11-28): the range check built the policy with no parameters, which a pipeline
    cannot (its steps), and refused every pipeline spec with [random.params]."""
    f = tmp_path / "pipe.toml"
    f.write_text('name = "p"\npolicy = "pipeline"\n[[params.steps]]\npolicy = "devboy_lru"\n[random]\nsamples = 2\n'
                 '[random.params]\nsteps = { choices = [[{policy = "devboy_lru"}], '
                 '[{policy = "anthropic_clear_tool_uses"}]] }\n')
    assert len(load_spec(f).points()) >= 1
