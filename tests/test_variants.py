"""`replay --variants` (calibrated, model-only or both) and a report whose answer is "no policy
beats the baseline" when nothing is distinguishable."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from replay.cli import main

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "sample" / "logs"


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory):
    from replay.store.load import ingest

    db = tmp_path_factory.mktemp("variants") / "s.duckdb"
    ingest([SAMPLE], db, dataset="sample", key_file=db.with_suffix(".key"))
    return db


def _variants_of(db, run_ids):
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return [json.loads(con.execute("SELECT cache_config FROM runs WHERE run_id = ?", [r]).fetchone()[0])
                ["observed_evictions"] for r in run_ids]
    finally:
        con.close()


def test_replay_stores_both_variants_by_default(sample_db):
    r = CliRunner().invoke(main, ["replay", "--db", str(sample_db), "--policy", "devboy_lru", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["variant"] == "calibrated" and out["run_id"] == out["variants"]["calibrated"]["run_id"]
    ids = [out["variants"]["calibrated"]["run_id"], out["variants"]["model_only"]["run_id"]]
    assert _variants_of(sample_db, ids) == ["log", "none"]
    assert out["variants"]["model_only"]["totals"]["cost"] != out["variants"]["calibrated"]["totals"]["cost"]


@pytest.mark.parametrize("args, expected", [
    (["--variants", "model-only"], ["none"]),
    (["--variants", "calibrated"], ["log"]),
    (["--observed-evictions", "none"], ["none"]),        # the option's meaning before --variants
    (["--observed-evictions", "log", "--variants", "calibrated"], ["log"]),
])
def test_replay_one_variant(sample_db, args, expected):
    r = CliRunner().invoke(main, ["replay", "--db", str(sample_db), "--policy", "noop", "--json", *args])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert list(out["variants"]) == [{"none": "model_only", "log": "calibrated"}[expected[0]]]
    assert _variants_of(sample_db, [out["run_id"]]) == expected


def test_replay_contradicting_variant_options_fail(sample_db):
    r = CliRunner().invoke(main, ["replay", "--db", str(sample_db), "--observed-evictions", "none",
                                  "--variants", "calibrated"])
    assert r.exit_code == 1 and "contradicts --variants" in r.output


def test_report_says_no_policy_beats_the_baseline(tmp_path):
    from replay.store.load import ingest

    db = tmp_path / "n.duckdb"
    ingest([SAMPLE], db, dataset="sample", key_file=tmp_path / "k")
    runner = CliRunner()
    cfg = tmp_path / "p.toml"
    cfg.write_text('policy = "pipeline"\n[[params.steps]]\npolicy = "noop"\n')  # changes nothing
    for args in (["--policy", "noop"], ["--config", str(cfg)]):
        assert runner.invoke(main, ["replay", "--db", str(db), *args]).exit_code == 0
    r = runner.invoke(main, ["report", "--db", str(db), "--out", str(tmp_path / "rep")])
    assert r.exit_code == 0, r.output
    assert "No policy beats the baseline on these logs" in r.output
    md = (tmp_path / "rep" / "report.md").read_text()
    head = "\n".join(md.splitlines()[:30])
    assert "**No policy beats the baseline on these logs**" in head
    assert "+0.00% of cost ($0.00 of $" in head and "95% interval +0.00% to +0.00%" in head
    assert "Recommended:" not in md
    assert md.index("## Recommendation") < md.index("## Baseline fidelity")
