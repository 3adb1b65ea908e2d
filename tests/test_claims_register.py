"""The claims register (issue 28 item 2): verdict rules, the metrics' intervals by hand, and the
register in `ctxreplay claims --json` on the synthetic sample (the shared-corpus check is in
tests/test_claims.py, beside the sources' own metrics, so the corpus is replayed once)."""

import json
import shutil

import duckdb
import pytest
from click.testing import CliRunner

from analysis import intervals as iv
from replay.cli.claims import claims as claims_cmd
from replay.experiments import claims_cache as cc
from replay.experiments import claims_metrics as cm
from replay.experiments import claims_register as reg
from replay.model.arrays import Dataset

from trace_builder import TraceBuilder


def test_rules_hand_computed():
    at_least = lambda lo, hi: reg.judge("at_least", (84.0, 84.0), {"low": lo, "high": hi})[0]
    assert at_least(20, 30) == "does not hold here" and at_least(80, 84) == "holds" and at_least(90, 95) == "holds"
    rng = lambda lo, hi: reg.judge("range", (2000.0, 3000.0), {"low": lo, "high": hi})
    assert rng(6000, 7000) == ("does not hold here", "95% interval [6,000.00, 7,000.00] lies above the published "
                               "2,000.00-3,000.00")
    assert rng(1000, 1999)[0] == "does not hold here" and rng(2500, 9000)[0] == "holds" and rng(1000, 2000)[0] == "holds"
    pos = lambda lo, hi: reg.judge("positive", None, {"low": lo, "high": hi})[0]
    assert pos(0.1, 2) == "holds" and pos(0.0, 2) == "does not hold here" and pos(-2, -1) == "does not hold here"
    neg = lambda lo, hi: reg.judge("negative", None, {"low": lo, "high": hi})[0]
    assert neg(-3, -0.5) == "holds" and neg(-3, 0.0) == "does not hold here"
    notpos = lambda lo, hi: reg.judge("not_positive", None, {"low": lo, "high": hi})[0]
    assert notpos(-5, 0) == "holds" and notpos(-1, 3) == "holds" and notpos(0.5, 3) == "does not hold here"
    assert reg.judge("not_testable", None, None)[0] == "not testable offline"
    assert reg.judge("positive", None, None)[0] is None
    assert reg.with_caching({"low": 0.1, "high": 1}) == "saves"
    assert reg.with_caching({"low": -3, "high": -1}) == "costs more"
    assert reg.with_caching({"low": -1, "high": 1}) == "no distinguishable change"


def test_register_entries_are_whole():
    ids = [c.id for c in reg.REGISTER]
    assert len(ids) == len(set(ids))
    for c in reg.REGISTER:
        assert c.claim and c.published and c.conditions
        if c.rule == "not_testable":
            assert c.policy is None and c.metric is None
            continue
        if c.lever is not None:  # a cache-advice claim: the recorded requests re-priced, no policy run
            assert c.policy is None and c.metric in cc.CACHE_METRICS
        else:
            assert c.policy and c.metric in {**cm.RUN_METRICS, **cm.TRACE_METRICS}
        assert (c.figure is not None) == (c.rule in ("at_least", "range")), c.id
    ct = next(c for c in reg.REGISTER if c.id == "complexity_trap_cost")
    assert ct.params["window"] == 10 and ct.figure == (50.9, 56.1) and ct.metric == "context_tokens_saved"


def _runs_db(rows):
    con = duckdb.connect()
    con.execute("CREATE TABLE run_sessions (run_id VARCHAR, session_key VARCHAR, cost DOUBLE, context_tokens DOUBLE, "
                "tokens_delivered DOUBLE, cache_write_5m DOUBLE, cache_write_1h DOUBLE, cache_read DOUBLE, "
                "busts DOUBLE, bust_tokens DOUBLE)")
    con.executemany("INSERT INTO run_sessions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    return con


def test_paired_and_run_metric_by_hand():
    # the policy run halves every session's context and cost and writes 30% more: zero-width intervals
    rows = []
    for k, base in enumerate((100.0, 300.0, 600.0)):
        rows.append(("b", f"s{k}", base, 10 * base, base, base, 0.0, 5 * base, 0.0, 0.0))
        rows.append(("r", f"s{k}", base / 2, 5 * base, base, 1.3 * base - 20, 20.0, 4 * base, 1.0, base))
    con = _runs_db(rows)
    p = cm.paired(con, iv, "b", "r", ("cost",))
    assert p["saved_pct"] == pytest.approx(50.0) and p["baseline_total"] == 1000 and p["run_total"] == 500
    assert p["interval_pct"]["low"] == pytest.approx(50.0) and p["interval_pct"]["high"] == pytest.approx(50.0)
    w = cm.run_metric(con, iv, "cache_writes_added", "b", "r")
    assert w["value"] == pytest.approx(30.0)
    assert w["interval"]["low"] == pytest.approx(30.0) and w["interval"]["high"] == pytest.approx(30.0)
    assert w["detail"]["cache_reads_lost_pct"] == pytest.approx(20.0)
    assert w["detail"]["busts"] == 3 and w["detail"]["bust_tokens"] == 1000
    assert cm.run_metric(con, iv, "cache_writes_saved", "b", "r")["value"] == pytest.approx(-30.0)
    assert cm.run_metric(con, iv, "context_tokens_saved", "b", "r")["value"] == pytest.approx(50.0)


def test_paired_interval_is_the_bootstrap_of_compare():
    # unequal savings: the interval is the one analysis.intervals gives for the same pair
    rows = []
    for k, (base, run) in enumerate(((100.0, 90.0), (200.0, 40.0), (50.0, 55.0), (400.0, 300.0), (80.0, 80.0))):
        rows += [("b", f"s{k}", base, base, base, 0, 0, 0, 0, 0), ("r", f"s{k}", run, run, base, 0, 0, 0, 0, 0)]
    con = _runs_db(rows)
    p = cm.paired(con, iv, "b", "r", ("cost",))
    ref = iv.saving_intervals(con, {"r": "b"})["r"]["cost"]
    assert p["saved_pct"] == pytest.approx(100 * (830 - 565) / 830)
    assert p["interval_pct"]["low"] == pytest.approx(100 * ref["low"])
    assert p["interval_pct"]["high"] == pytest.approx(100 * ref["high"])
    assert p["interval_pct"]["low"] < p["saved_pct"] < p["interval_pct"]["high"]


def test_ratio_and_median_by_hand():
    r = cm.ratio(iv, [10.0, 20.0, 30.0], [100.0, 200.0, 300.0])
    assert r["value"] == pytest.approx(10.0) and r["interval"] == {"low": pytest.approx(10.0), "high": pytest.approx(10.0)}
    m = cm.median(iv, [[1.0, 2.0, 9.0], [4.0], [5.0, 6.0]], scale=10)
    assert m["value"] == pytest.approx(45.0)   # median of 1, 2, 4, 5, 6, 9 is 4.5
    assert 10 <= m["interval"]["low"] <= 45 <= m["interval"]["high"] <= 90
    assert cm.median(iv, [[], []])["value"] is None


def test_tokens_per_500_lines_by_hand():
    b = TraceBuilder()
    b.tool_call("Read", 2500, resource="/a.py", content="P", lines=(1, 500))   # 5 tokens per line
    b.tool_call("Read", 1000, resource="/c.py", content="Q", lines=(1, 100))   # 10
    b.tool_call("Read", 800, resource="/d.py", content="R", lines=(1, 100))    # 8
    b.tool_call("Read", 900, resource="/e.py", content="S", lines=(1, 10), is_error=True)  # an error: left out
    b.tool_call("Read", 700, resource="/f.py", content="T")                    # whole file: no line count
    m = cm.tokens_per_lines(iv, b.dataset())
    assert m["value"] == 500 * 8 and m["sessions"] == 1


def test_devboy_metrics_are_the_sources_accounting():
    from replay.experiments.claims import devboy_own_metric
    from test_claims import _devboy_dataset

    ds = _devboy_dataset()
    own = devboy_own_metric(ds)
    m = cm.devboy_l0(iv, ds)
    assert m["value"] == pytest.approx(own["saved_pct"])
    r = cm.devboy_recent(iv, ds, capacity=3)
    three = devboy_own_metric(ds, capacity=3)
    assert r["value"] == pytest.approx(100 * three["saved_tokens"] / three["ceiling_saved_tokens"])


def test_a_policy_missing_from_the_build_keeps_its_claim_without_a_verdict():
    c = reg.Claim("x", "s", "claimed", "there", "then", "at_least", "context_tokens_saved", (10.0, 10.0),
                  "no_such_policy", {})
    got = reg.evaluate(None, Dataset("t", [], None), iv, {}, register=(c,))
    assert got[0]["verdict"] is None and "not registered" in got[0]["reason"] and got[0]["cost"] is None


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory):
    from replay.cli import sample_logs_dir
    from replay.store.load import ingest

    db = tmp_path_factory.mktemp("register") / "s.duckdb"
    ingest([sample_logs_dir()], db, dataset="sample", key_file=db.parent / "key")
    return db


def test_cli_claims_register_json_on_the_sample(sample_db, tmp_path):
    from analysis.compare import compare
    from replay import store
    from replay.policies import REGISTRY

    db = tmp_path / "c.duckdb"
    shutil.copy(sample_db, db)
    r = CliRunner().invoke(claims_cmd, ["--db", str(db), "--json"])
    assert r.exit_code == 0, r.output
    claims = json.loads(r.stdout)["claims"]
    assert [c["id"] for c in claims] == [c.id for c in reg.REGISTER]
    con = store.connect(db, read_only=True)
    every = compare(con, "sample")
    rows = {x["run_id"]: x for x in every}
    # the report's section reads the same runs back (read-only, nothing replayed): the same verdicts
    from analysis.report_claims import claims_md
    md = claims_md(con, "sample", every)
    con.close()
    assert md[0] == "## Published claims"
    table = [line for line in md if line.startswith("| ") and not line.startswith("| claim |")]
    assert len(table) == len(claims)
    for line, c in zip(table, claims):
        assert f"**{c['verdict'] or 'not measured'}**" in line and c["claim"] in line
    measured = 0
    for c in claims:
        if c["rule"] == "not_testable":
            assert c["verdict"] == "not testable offline" and c["cost"] is None and c["reason"]
            continue
        if c["lever"] is not None:  # the cache-advice claims: re-priced recorded requests, no run
            assert c["verdict"] in ("holds", "does not hold here", "not exercised") and c["reason"], c
            if c["verdict"] != "not exercised":
                assert c["reason"].startswith("95% interval") and c["cost"]["interval_pct"]
            continue
        if c["policy"]["name"] not in REGISTRY:
            assert c["verdict"] is None and "not registered" in c["reason"]
            continue
        measured += 1
        m, cost = c["own_metric"], c["cost"]
        if c["verdict"] == "not exercised":  # the policy changed nothing on the sample
            assert "changed nothing" in c["reason"] or "nothing to measure" in c["reason"]
            continue
        assert c["verdict"] in ("holds", "does not hold here") and c["reason"].startswith("95% interval")
        if c["id"] == "complexity_trap_cost":  # also priced as the paper priced it
            paper = {q["pricing"]: q for q in c["cost_paper_prices"]}
            assert set(paper) == {p[0] for p in cc.PAPER_PRICINGS}
            assert paper["paper: no cache discount, no write premium"]["saved_pct"] > 0  # input shrinks, no cache
        if m["value"] is not None:
            assert m["interval"]["low"] <= m["value"] <= m["interval"]["high"], c
        assert cost["interval_pct"]["low"] <= cost["saved_pct"] <= cost["interval_pct"]["high"]
        row = rows[cost["run_id"]]
        assert row["params"] == {**row["params"], **c["policy"]["params"]}
        if c["baseline"]["name"] == "noop":
            # the same figures and interval `ctxreplay compare` shows for that run
            assert cost["baseline_run"] == row["baseline_run"]
            assert cost["saved_pct"] == pytest.approx(100 * row["saved_pct"]["cost"])
            assert cost["interval_pct"]["low"] == pytest.approx(100 * row["interval"]["cost"]["low"])
            assert cost["interval_pct"]["high"] == pytest.approx(100 * row["interval"]["cost"]["high"])
            assert cost["saved_usd"] == pytest.approx(-row["delta"]["cost"])
            if c["metric"] == "context_tokens_saved":
                assert m["value"] == pytest.approx(100 * row["saved_pct"]["context_tokens"])
        assert c["with_caching"] == reg.with_caching(cost["interval_pct"])
    assert measured >= 8
    # the text form prints the register first (--wide: the ids unfolded)
    r = CliRunner().invoke(claims_cmd, ["--db", str(db), "--wide"])
    assert r.exit_code == 0 and "Claims register" in r.output and "anthropic_84pct_tokens" in r.output, r.output


def test_report_section_formats_a_claim():
    from analysis.report_claims import section

    c = {"source": "anthropic", "claim": "84% fewer tokens", "figure": {"low": 84.0, "high": 84.0},
         "own_metric": {"value": 25.5, "interval": {"low": 21.0, "high": 30.5}, "unit": "% of context tokens"},
         "cost": {"saved_usd": -291.75, "saved_pct": -96.3, "interval_pct": {"low": -158.7, "high": -56.4}},
         "verdict": "does not hold here", "reason": "below | the figure", "cost_verdict": None}
    row = [line for line in section([c]) if line.startswith("| anthropic")]
    assert row == ["| anthropic: 84% fewer tokens | 84 | 25.50 [21.00, 30.50] % of context tokens | "
                   "-$291.75 (-96.30% [-158.70, -56.40]) | **does not hold here**: below / the figure |"]
