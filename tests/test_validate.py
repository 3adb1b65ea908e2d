import json
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from replay import store
from replay.cli import main
from replay.engine import ReplayOptions
from replay.store.load import ingest
from replay.experiments.validate import TARGETS, validate

from conftest import shared_logs

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "sample" / "logs"


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("sample") / "s.duckdb"
    ingest([SAMPLE], db, dataset="sample", key_file=db.parent / "key")
    return db


def test_sample_noop_reproduces_recorded_usage(sample_db):
    con = store.connect(sample_db, read_only=True)
    rep = validate(con, "sample", ReplayOptions())
    con.close()
    o = rep["overall"]
    assert o["sessions"] == 6 and o["sessions_within_targets"] == 6
    # the generator's usage follows the cache model with exact o200k counts: anchoring is exact
    assert abs(o["rel_error"]["input_total"]) < 1e-9
    assert abs(o["rel_error"]["cache_read"]) < 0.005
    assert abs(rep["variants"]["raw_bpe"]["input_total"]) < 1e-9


def test_validate_cli_json_shape_and_plot(sample_db, tmp_path):
    plot = tmp_path / "v.png"
    r = CliRunner().invoke(main, ["validate", "--db", str(sample_db), "--json", "--plot", str(plot)])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert set(data) >= {"sessions", "overall"}
    s0 = data["sessions"][0]
    assert {"session_id", "recorded", "simulated", "rel_error"} <= set(s0)
    assert set(s0["rel_error"]) == set(TARGETS)
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_replay_cli_stores_a_finished_run(sample_db):
    runner = CliRunner()
    r = runner.invoke(main, ["replay", "--db", str(sample_db), "--policy", "noop", "--detail", "--json"])
    assert r.exit_code == 0, r.output
    run_id = json.loads(r.output)["run_id"]
    r = runner.invoke(main, ["runs", "--db", str(sample_db), "--json"])
    rows = {x["run_id"]: x for x in json.loads(r.output)}
    assert rows[run_id]["status"] == "finished" and rows[run_id]["n_sessions"] == 6
    con = duckdb.connect(str(sample_db), read_only=True)
    n = con.execute("SELECT count(*) FROM run_requests WHERE run_id = ?", [run_id]).fetchone()[0]
    assert n == 492
    cfg = con.execute("SELECT cache_config, prices, git_sha FROM runs WHERE run_id = ?", [run_id]).fetchone()
    assert json.loads(cfg[0])["ttl"] == "log" and "genai-prices" in json.loads(cfg[1])["library"]
    con.close()


def test_replay_cli_errors(sample_db):
    runner = CliRunner()
    r = runner.invoke(main, ["replay", "--db", str(sample_db), "--policy", "nopp"])
    assert r.exit_code == 1 and "did you mean 'noop'" in r.output
    r = runner.invoke(main, ["replay", "--db", str(sample_db), "--set", "x=1"])
    assert r.exit_code == 1 and "has no parameter 'x'" in r.output


def test_unknown_model_price_is_a_clear_error(tmp_path):
    from replay.model.costs import PriceError, PriceTable

    with pytest.raises(PriceError, match=r'\[models\."no-such-model-9"\]'):
        PriceTable().rates("no-such-model-9")
    f = tmp_path / "p.toml"
    f.write_text('[models."no-such-model-9"]\ninput = 1\ncache_write_5m = 1.25\ncache_write_1h = 2\n'
                 'cache_read = 0.1\noutput = 5\n')
    t = PriceTable.from_toml(f)
    assert t.rates("no-such-model-9").cost(1e6, 0, 0, 0, 0) == pytest.approx(1.0)
    f.write_text('[models."x"]\ninput = 1\nbogus = 2\n')
    with pytest.raises(PriceError, match="bogus"):
        PriceTable.from_toml(f)


def test_interrupted_run_never_looks_finished(sample_db):
    from replay.experiments import runs
    from replay.model.arrays import load_dataset
    from replay.policies import build

    con = store.connect(sample_db)
    ds = load_dataset(con, "sample")
    opts = ReplayOptions()

    def boom(_session):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        runs.run_policy(con, ds, build("noop"), opts, on_session=boom)
    rows = runs.list_runs(con)
    assert rows[-1]["status"] == "failed"
    assert con.execute("SELECT count(*) FROM run_sessions WHERE run_id = ?", [rows[-1]["run_id"]]).fetchone()[0] == 0
    con.close()


def test_shared_corpus_fidelity(tmp_path):
    logs = shared_logs("claude-code")
    db = tmp_path / "cc.duckdb"
    ingest([logs], db, key_file=tmp_path / "key")
    con = store.connect(db, read_only=True)
    rep = validate(con, "default", ReplayOptions())
    con.close()
    o = rep["overall"]
    e = o["rel_error"]
    assert o["sessions"] == 27
    assert o["sessions_within_targets"] >= 24
    assert abs(e["input_total"]) <= 0.01 and abs(e["cache_read"]) <= 0.01
    assert abs(e["cache_write"]) <= 0.03 and abs(e["cost"]) <= 0.01


def test_shared_codex_cached_input_reproduced(tmp_path):
    logs = shared_logs("codex")
    db = tmp_path / "cx.duckdb"
    ingest([logs], db, key_file=tmp_path / "key")
    con = store.connect(db, read_only=True)
    rep = validate(con, "default", ReplayOptions())
    con.close()
    codex = rep["overall"]["by_agent"]["codex"]
    assert codex["sessions"] == 5
    assert abs(codex["rel_error"]["input_total"]) < 1e-6
    assert abs(codex["rel_error"]["cache_read"]) <= 0.03  # recorded cached_input_tokens, corpus-wide


def test_all_35_shared_files_ingest_and_every_agent_is_covered(tmp_path):
    root = shared_logs("claude-code").parent
    # entire-cli/ has its own fidelity test; these are the four original folders
    logs = [root / d for d in ("claude-code", "codex", "copilot-cli", "gemini-cli-stream")]
    db = tmp_path / "all.duckdb"
    s = ingest(logs, db, key_file=tmp_path / "key")
    assert s.failed == [] and s.sessions == 35
    assert set(s.report.skipped) <= {"missing_usage"}  # 3 Codex responses cut off before their token_count
    con = store.connect(db, read_only=True)
    agents = dict(con.execute("SELECT agent, count(*) FROM sessions GROUP BY 1").fetchall())
    rep = validate(con, "default", ReplayOptions())
    con.close()
    assert agents == {"claude-code": 27, "codex": 5, "copilot-cli": 2, "gemini-cli": 1}
    by = rep["overall"]["by_agent"]
    assert by["codex"]["sessions"] == 5 and by["claude-code"]["sessions"] == 27
    assert by["gemini-cli"]["sessions"] == 0 and "no input usage" in by["gemini-cli"]["note"]
