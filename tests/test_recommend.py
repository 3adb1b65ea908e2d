"""The recommendation's rules (analysis.rules, analysis.answer, tables.recommend): like with
like (a run only against the baseline of its own slice and cache settings), every risk counter
alike, "too small to act on", no repeated margin line, and odd-but-valid databases."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from replay.cli import main

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "datasets" / "sample" / "logs"
SLICE = ["--since", "2026-02-03"]  # the sample's last day: a strict subset of its sessions
NOOP_SWEEP = 'name = "baselines per TTL"\npolicy = "noop"\n\n[cache]\nttl = ["log", "5m", "1h"]\n'


def _ok(*args: str) -> str:
    r = CliRunner().invoke(main, list(args))
    assert r.exit_code == 0, r.output
    return r.output


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    """The sample with full-dataset runs, and a slice run of devboy_lru without a slice baseline."""
    path = tmp_path_factory.mktemp("recommend") / "r.duckdb"
    _ok("ingest", str(SAMPLE), "--db", str(path), "-q")
    for args in (["--policy", "noop"], ["--policy", "devboy_lru"], ["--policy", "devboy_lru", "--set", "capacity=0"],
                 ["--policy", "read_range_dedup"], ["--policy", "devboy_lru", "--set", "capacity=0", *SLICE]):
        _ok("replay", "--db", str(path), "--variants", "calibrated", *args)
    return path


def _tables():
    from analysis import tables

    return tables


def _slice_of(con, run_id: str):
    return json.loads(con.execute("SELECT cache_config FROM runs WHERE run_id = ?", [run_id]).fetchone()[0]).get("slice")


def _named_runs(rec: dict) -> list[str]:
    """Every run a recommendation names, with the baselines its figures come from."""
    out = []
    for k in ("best", "closest", "runner_up", "best_source_default"):
        if rec.get(k):
            out += [rec[k]["run_id"], rec[k]["baseline_run"]]
    return out + [d["run_id"] for d in rec.get("dropped", [])]


def test_recommend_never_pairs_a_slice_run_with_the_full_baseline(db):
    tables = _tables()
    con = tables.connect(db)
    try:
        df = tables.runs(con)
        sliced = df[df["cache_dict"].map(lambda c: bool(c.get("slice")))]
        assert len(sliced) == 1 and sliced["sessions"].iloc[0] < df["sessions"].max()
        # the slice run is the cheapest run in raw dollars: ranking by raw cost across slices would pick it
        assert sliced["cost"].iloc[0] == df[df["policy"] != "noop"]["cost"].min()

        every = tables.recommend(con, df, max_risk={"unseen_write_risk": 1e9})
        assert every["slice"] is None and every["other_slices"] == 1
        assert every["verdict"] == "recommended", every["headline"]
        named = _named_runs(every)
        assert sliced["run_id"].iloc[0] not in named and all(_slice_of(con, r) is None for r in named)
        # the margin is the difference of two savings over the same sessions
        b, ru = every["best"], every["runner_up"]
        assert every["margin_over_runner_up"]["value"] == pytest.approx(b["saved"] - ru["saved"])
        assert b["sessions"] == ru["sessions"] == int(df["sessions"].max())

        # the slice alone: it has no baseline of its own, so no saving and no margin at all
        alone = tables.recommend(con, sliced)
        assert alone["slice"] == sliced["cache_dict"].iloc[0]["slice"]
        assert alone["verdict"] == "no_baseline" and alone["best"] is None
        assert not any(k.startswith("margin") for k in alone), alone
        assert alone["without_baseline"] == [sliced["run_id"].iloc[0]]
    finally:
        con.close()


def test_a_slice_is_measured_against_its_own_baseline(db, tmp_path):
    import shutil

    tables = _tables()
    copy_db = tmp_path / "s.duckdb"
    shutil.copy(db, copy_db)
    _ok("replay", "--db", str(copy_db), "--variants", "calibrated", "--policy", "noop", *SLICE)
    con = tables.connect(copy_db)
    try:
        df = tables.runs(con)
        sliced = df[df["cache_dict"].map(lambda c: bool(c.get("slice")))]
        run = sliced[sliced["policy"] != "noop"].iloc[0]
        base = sliced[sliced["policy"] == "noop"].iloc[0]
        rec = tables.recommend(con, sliced)
        lead = rec.get("best") or rec.get("closest")
        assert lead["run_id"] == run["run_id"] and lead["baseline_run"] == base["run_id"]
        assert lead["saved"] == pytest.approx(base["cost"] - run["cost"])
        assert lead["sessions"] == run["sessions"] == base["sessions"]
    finally:
        con.close()


def test_answer_refuses_rows_of_two_session_sets(db):
    from analysis.answer import answer
    from analysis.compare import compare

    tables = _tables()
    con = tables.connect(db)
    try:
        rows = compare(con)
        with pytest.raises(ValueError, match="different session sets"):
            answer(con, rows)
    finally:
        con.close()


def _full_rows(con):
    from analysis.compare import compare

    return [r for r in compare(con) if not r["cache_config"].get("slice")]


def test_every_risk_counter_is_treated_alike(db):
    from analysis import rules
    from analysis.answer import answer

    base = {"figures": {"dangling_refs": 0.0, "stale_refs": 0.0, "trimmed_reread": 0.0, "busts": 3.0}}
    stale = copy.deepcopy(base)
    stale["figures"]["stale_refs"] = 1.0
    unseen = {**copy.deepcopy(base), "risk": {"dangling_refs": 0.0, "stale_refs": 0.0, "trimmed_reread": 0.0,
                                              "unseen_write_risk": 70.0}}
    assert rules.over_limits(stale, None) == [{"counter": "stale_refs", "value": 1.0, "limit": 0.0}]
    assert rules.over_limits(unseen, None) == [{"counter": "unseen_write_risk", "value": 70.0, "limit": 0.0}]
    assert rules.over_limits(unseen, {"unseen_write_risk": 70}) == []
    assert rules.over_limits(base, None) == []  # busts are priced in the cost, not a risk counter
    assert rules.over_limits(base, {"busts": 2}) == [{"counter": "busts", "value": 3.0, "limit": 2.0}]
    assert rules.is_risk_counter("unseen_write_risk") and not rules.is_risk_counter("range_unproven")

    tables = _tables()
    con = tables.connect(db)
    try:
        rows = _full_rows(con)
        # read_range_dedup's own counter reaches compare's rows from run_sessions.extra
        rrd = next(r for r in rows if r["policy"] == "read_range_dedup")
        stored = con.execute("SELECT sum(CAST(json_extract(extra, '$.unseen_write_risk') AS DOUBLE)) FROM run_sessions "
                             "WHERE run_id = ?", [rrd["run_id"]]).fetchone()[0] or 0.0
        assert rrd["risk"]["unseen_write_risk"] == stored
        if stored:  # the sample has such hints: the default limit drops the run and says why
            got = answer(con, rows, min_per_session=0)
            assert {"run_id": rrd["run_id"], "over": [{"counter": "unseen_write_risk", "value": stored, "limit": 0.0}]} \
                in [{"run_id": d["run_id"], "over": d["over"]} for d in got["dropped"]]
        rows = [r for r in rows if r["policy"] != "read_range_dedup"]
        free = answer(con, rows, min_per_session=0)
        lead = free["best"]
        assert lead and not free["dropped"]
        # the same saving with one policy-specific counter above 0 is dropped like a stale ref would be
        for counter in ("unseen_write_risk", "stale_refs"):
            hurt = copy.deepcopy(rows)
            for r in hurt:
                if r["run_id"] == lead["run_id"]:
                    r["risk"][counter] = 70.0
            got = answer(con, hurt, min_per_session=0)
            assert got["best"]["run_id"] != lead["run_id"]
            assert got["dropped"][0]["run_id"] == lead["run_id"]
            assert got["dropped"][0]["over"] == [{"counter": counter, "value": 70.0, "limit": 0.0}]
            kept = answer(con, hurt, max_risk={counter: 70}, min_per_session=0)
            assert kept["best"]["run_id"] == lead["run_id"]
    finally:
        con.close()


def test_a_saving_too_small_to_act_on_is_said_so(db):
    from analysis.answer import answer

    tables = _tables()
    con = tables.connect(db)
    try:
        rows = _full_rows(con)
        lim = {"unseen_write_risk": 1e9}
        got = answer(con, rows, max_risk=lim, min_per_session=0)
        assert got["verdict"] == "recommended"
        per = got["best"]["saved_per_session"]
        assert per > 0 and got["best"]["saved"] == pytest.approx(per * got["best"]["sessions"])
        # the floor is inclusive: exactly the saving per session still acts; just above it does not
        assert answer(con, rows, max_risk=lim, min_per_session=per * (1 - 1e-9))["best"]["run_id"] == \
            got["best"]["run_id"]
        small = answer(con, rows, max_risk=lim, min_per_session=max(
            r["saved_per_session"] for r in got["ranked"] if r["saved_per_session"] is not None) * 1.01)
        assert small["verdict"] == "too_small" and small["best"] is None and small["closest"]
        assert small["headline"].startswith("No policy saves enough to act on")
        assert "per session" in small["headline"]
    finally:
        con.close()


def test_too_small_with_a_split_quotes_the_per_session_saving_the_floor_judged(db):
    """Newcomer's hour (2026-11-28): "$0.0106 per session ... That is below $0.01 per session": the
    floor was applied to the earlier sessions' saving, the sentence quoted every session's."""
    import re

    from analysis.answer import answer, per_session_text

    tables = _tables()
    con = tables.connect(db)
    try:
        rows = _full_rows(con)
        lim = {"unseen_write_risk": 1e9}
        got = answer(con, rows, max_risk=lim, min_per_session=0, split="time")
        lead = got["best"] or got["closest"]
        assert lead is not None and got.get("held_out", {}).get("in_sample")
        i = got["held_out"]["in_sample"]
        earlier = i["saved"] / i["sessions"]
        assert earlier > 0
        small = answer(con, rows, max_risk=lim, min_per_session=earlier * 1.01, split="time")
        assert small["verdict"] == "too_small"
        m = re.search(r"On the (\d+) earlier session\(s\) it was judged on it saves (\$[0-9.]+) per session: "
                      r"below (\$[0-9.]+) per session", small["headline"])
        assert m, small["headline"]
        assert m.group(2) == per_session_text(earlier, "cost") and int(m.group(1)) == i["sessions"]
        assert float(m.group(2)[1:]) < float(m.group(3)[1:])  # what is quoted is below the floor it names
    finally:
        con.close()


def test_the_runner_up_margin_is_not_repeated(db):
    from analysis.answer import answer
    from analysis.report_md import recommendation

    tables = _tables()
    con = tables.connect(db)
    try:
        rows = [r for r in _full_rows(con) if r["policy"] in ("noop", "devboy_lru")]
        got = answer(con, rows, min_per_session=0)
        # capacity=0 leads, devboy at its defaults is both the runner-up and the best source default
        assert got["best"]["settings"] == {"capacity": "unbounded"} and got["runner_up"]["settings"] == {}
        assert "best_source_default" not in got and "margin_over_source_default" not in got
        md = recommendation(got, {}, "")
        assert sum(line.startswith(("Runner-up:", "Margin over")) for line in md) == 1
    finally:
        con.close()


def test_report_states_the_rules_and_the_dropped_runs(db, tmp_path):
    out = tmp_path / "rep"
    r = CliRunner().invoke(main, ["report", "--db", str(db), "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.output)
    md = (out / "report.md").read_text()
    head = md.split("## Baseline fidelity")[0]
    assert "every risk counter <= 0" in head and "too small to act on" in head and "$0.01 per session" in head
    for d in res["recommendation"]["dropped"]:
        for o in d["over"]:
            assert f"{o['counter']} {o['value']:,.0f} > {o['limit']:g}" in head
    assert res["recommendation"]["verdict"] == res["answer"]["verdict"]
    bad = CliRunner().invoke(main, ["report", "--db", str(db), "--out", str(out), "--max-risk", "stale=1"])
    assert bad.exit_code == 1 and bad.output.strip().splitlines()[-1].startswith("error: --max-risk: unknown figure")
    bad = CliRunner().invoke(main, ["report", "--db", str(db), "--out", str(out), "--max-risk", "stale_refs=x"])
    assert bad.exit_code == 1 and "is not a number" in bad.output


@pytest.fixture(scope="module")
def noop_db(tmp_path_factory) -> Path:
    """A database whose only runs are a no-op sweep over three TTLs."""
    d = tmp_path_factory.mktemp("noop-only")
    path = d / "n.duckdb"
    spec = d / "noop.toml"
    spec.write_text(NOOP_SWEEP)
    _ok("ingest", str(SAMPLE), "--db", str(path), "-q")
    _ok("sweep", str(spec), "--db", str(path))
    return path


def test_report_and_compare_on_a_noop_only_database(noop_db, tmp_path):
    r = CliRunner().invoke(main, ["report", "--db", str(noop_db), "--out", str(tmp_path / "rep")])
    assert r.exit_code == 0, r.output
    assert "No policy run to compare" in r.output
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "No policy run to compare" in md and "no-op baseline(s) only" in md
    for args in (["compare"], ["compare", "--json"], ["compare", "--format", "csv"]):
        r = CliRunner().invoke(main, [*args, "--db", str(noop_db)])
        assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["report", "--db", str(noop_db), "--out", str(tmp_path / "t"), "--objective", "tokens",
                                  "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["answer"]["verdict"] == "no_runs"


def test_report_on_a_noop_only_database_in_a_subprocess(noop_db, tmp_path):
    env = {**os.environ}
    p = subprocess.run([sys.executable, "-m", "replay.cli", "report", "--db", str(noop_db), "--out", str(tmp_path / "r")],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr and "No policy run to compare" in p.stdout
    assert (tmp_path / "r" / "index.html").is_file()


def test_report_on_a_database_of_slice_runs_only(tmp_path):
    path = tmp_path / "s.duckdb"
    _ok("ingest", str(SAMPLE), "--db", str(path), "-q")
    _ok("replay", "--db", str(path), "--variants", "calibrated", "--policy", "devboy_lru", *SLICE)
    r = CliRunner().invoke(main, ["report", "--db", str(path), "--out", str(tmp_path / "rep")])
    lines = r.output.strip().splitlines()
    assert r.exit_code == 1 and len(lines) == 1 and lines[0].startswith("error: no finished runs"), r.output
    assert "other slices" in lines[0] and "2026-02-03" in lines[0]
    assert not (tmp_path / "rep").exists()  # a failed report leaves no folder it made
    r = CliRunner().invoke(main, ["report", "--db", str(path), "--out", str(tmp_path / "rep"), *SLICE])
    assert r.exit_code == 0 and "no no-op baseline" in r.output, r.output


def test_a_negative_optimism_says_what_it_means():
    """Newcomer's hour (2026-11-28): "optimism -2.33 points" was not explained."""
    from analysis.sweep_best import optimism_text

    assert optimism_text(0.011) == "optimism +1.10 points"
    assert optimism_text(-0.0233) == "optimism -2.33 points: the later saved more"
    assert optimism_text(-0.00001) == "optimism +0.00 points"  # no negative zero, and nothing to explain
