import json

import pytest
from click.testing import CliRunner

from replay.model.cache import CacheConfig
from replay.engine import ReplayOptions, replay_session
from replay.policies import REGISTRY, ParamError, build
from replay.policies.base import Policy
from replay.cli import main

from test_cache_engine import PRICES, builder
from trace_builder import MIN


class HalveResults(Policy):
    """Insert-time test step: every tool result costs half."""

    name = "halve_results"

    def on_append(self, ctx, i, size):
        return size / 2 if ctx.stream.bkind[i] == 5 else size


class DropFirstResult(Policy):
    """Retroactive test step: before request 1, drop block 1."""

    name = "drop_first"

    def before_request(self, ctx, k):
        if k == 1 and ctx.eff[1] > 0:
            ctx.set_size(1, 0)


@pytest.fixture
def test_steps(monkeypatch):
    monkeypatch.setitem(REGISTRY, "halve_results", HalveResults)
    monkeypatch.setitem(REGISTRY, "drop_first", DropFirstResult)


def test_pipeline_chains_steps_and_reports_each(test_steps):
    b = builder()
    b.block(500, "user_text")
    b.block(4000)          # tool_result: halved to 2,000 on append, dropped before request 1
    b.request(ts=0)
    b.block(1000)          # halved to 500
    b.request(ts=MIN)
    session, vocab = b.build()
    p = build("pipeline", {"steps": [{"policy": "halve_results"}, {"policy": "drop_first"}]})
    assert p.insert_time() and p.retroactive()
    r = replay_session(session, vocab, p, ReplayOptions(CacheConfig(ttl="5m"), PRICES, detail=True))
    assert r.detail["input_total"] == [12_500, 11_000]
    f = r.figures
    assert f["step:0:halve_results:blocks_changed"] == 2 and f["step:0:halve_results:tokens_saved"] == 2_500
    assert f["step:1:drop_first:blocks_changed"] == 1 and f["step:1:drop_first:tokens_saved"] == 2_000
    assert f["busts"] == 1


def test_pipeline_errors():
    with pytest.raises(ParamError, match="did you mean 'noop'"):
        build("pipeline", {"steps": [{"policy": "nop"}]})
    with pytest.raises(ParamError, match="at least one step"):
        build("pipeline", {})
    with pytest.raises(ParamError, match="did you mean 'params'"):
        build("pipeline", {"steps": [{"policy": "noop", "parms": {}}]})
    with pytest.raises(ParamError, match="did you mean 'steps'"):
        build("pipeline", {"step": []})


def _strict_json(text: str):
    def refuse(c):
        raise ValueError(f"not strict JSON: {c}")

    return json.loads(text, parse_constant=refuse)


def test_compare_json_has_baseline_deltas_fidelity_intervals_and_both_variants(tmp_path):
    from pathlib import Path

    from replay.store.load import ingest

    sample = Path(__file__).resolve().parents[1] / "datasets" / "sample" / "logs"
    db = tmp_path / "s.duckdb"
    ingest([sample], db, dataset="sample")
    runner = CliRunner()
    cfg = tmp_path / "p.toml"
    cfg.write_text('policy = "pipeline"\n[[params.steps]]\npolicy = "noop"\n')
    for args in (["--policy", "noop"], ["--config", str(cfg)]):
        r = runner.invoke(main, ["replay", "--db", str(db), *args])  # default: both variants
        assert r.exit_code == 0, r.output
        assert "calibrated" in r.output and "model-only" in r.output
    r = runner.invoke(main, ["compare", "--db", str(db), "--json"])
    assert r.exit_code == 0, r.output
    rows = _strict_json(r.output)
    assert "NaN" not in r.output
    assert [(x["policy"], x["variant"]) for x in rows] == [
        ("noop", "calibrated"), ("noop", "model_only"), ("pipeline", "calibrated"), ("pipeline", "model_only")]
    assert all(x["sweep_id"] is None for x in rows)
    base, base_mo, pipe, pipe_mo = rows
    assert pipe["baseline_run"] == base["run_id"] and pipe_mo["baseline_run"] == base_mo["run_id"]
    assert pipe["delta"]["cost"] == pytest.approx(0.0, abs=1e-9)
    assert base["baseline_fidelity"]["cost_rel_error"] == pytest.approx(
        (base["figures"]["cost"] - base["baseline_fidelity"]["recorded_cost"]) / base["baseline_fidelity"]["recorded_cost"])
    # a policy that changes nothing: interval [0, 0], not distinguishable, in every figure
    for row in (pipe, pipe_mo):
        for f in ("cost", "context_tokens", "tokens_delivered"):
            assert row["interval"][f] == {"low": 0.0, "high": 0.0}
            assert row["distinguishable"][f] is False
        assert row["bootstrap"]["resamples"] >= 2000
    # both variants side by side on every row of the configuration
    assert set(pipe["variants"]) == {"calibrated", "model_only"}
    assert pipe["variants"]["model_only"]["run_id"] == pipe_mo["run_id"]
    assert pipe["calibrated_minus_model_only"]["cost"] == pytest.approx(0.0, abs=1e-12)
    assert base_mo["baseline_fidelity"]["cost_rel_error"] != base["baseline_fidelity"]["cost_rel_error"]
    text = runner.invoke(main, ["compare", "--db", str(db)]).output
    assert "[+0.00, +0.00] n.d." in text and "Cost saved under both cache-model variants" in text
    bad = tmp_path / "bad.toml"
    bad.write_text('policy = "noop"\nparamz = {}\n')
    r = runner.invoke(main, ["replay", "--db", str(db), "--config", str(bad)])
    assert r.exit_code == 1 and "paramz" in r.output
