"""`ctxreplay claims` within 120 columns (issue 29 item 3): the figures whole on one line, only
ids and words wrapped; `--wide` every column at full width; `--json` the same either way."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.cells import cell_len

from replay.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def claimed(tmp_path_factory):
    """The sample with the claims' runs stored (so the text runs below only read them), and the JSON."""
    from replay.cli import sample_logs_dir
    from replay.store.load import ingest

    db = tmp_path_factory.mktemp("claimswidth") / "s.duckdb"
    ingest([sample_logs_dir()], db, dataset="sample", key_file=db.parent / "key")
    r = CliRunner().invoke(main, ["claims", "--db", str(db), "--json"])
    assert r.exit_code == 0, r.output
    # the runs it stored are said, on stderr (newcomer's hour, 2026-11-28: they changed what `report` recommended)
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    n = con.execute("SELECT count(*) FROM runs").fetchone()[0]
    con.close()
    assert n > 0 and f"stored {n:,} new run(s) in {db}" in " ".join(r.stderr.split()), r.stderr
    return db, json.loads(r.stdout)


def test_claims_say_nothing_of_runs_when_they_store_none(claimed):
    db, _ = claimed
    r = CliRunner().invoke(main, ["claims", "--db", str(db), "--json"])
    assert r.exit_code == 0 and "stored" not in r.stderr, r.stderr


def _span(ivl):
    return f" [{ivl['low']:z,.2f}, {ivl['high']:z,.2f}]"


def _figures(got: dict) -> list[str]:
    """Every figure the default tables print, formatted from the JSON: each must appear whole on one line."""
    figs = []
    for c in got["claims"]:
        m, cost = c["own_metric"], c["cost"]
        if m and m["value"] is not None:
            figs.append(f"{m['value']:z,.2f}{_span(m['interval'])}")
        if cost and cost["saved_pct"] is not None:
            figs.append(f"{cost['saved_pct']:+z.2f}%{_span(cost['interval_pct'])}")
            usd = cost["saved_usd"]
            figs.append(f"{'-' if round(usd, 2) < 0 else ''}${abs(usd):,.2f}")  # never "-$0.00"
    src = got["sources"]
    runs = [src["devboy"]["ctxreplay"]["simulator_setting"], src["devboy"]["ctxreplay"]["defaults"],
            src["jp_067"]["ctxreplay"]["defaults"], *src["ai_experiments"]["ctxreplay"]["sweep"]]
    for x in runs:
        for f in ("context_tokens", "cost"):
            v, i = x[f]["saved_pct"], x[f]["interval_pct"]
            figs.append(f"{v:+z.3f}% [{i['low']:+z.3f}, {i['high']:+z.3f}]")
    return figs


def _check_fits(text: str, got: dict) -> None:
    lines = text.splitlines()
    assert max(cell_len(x) for x in lines) <= 120, max(lines, key=cell_len)
    assert "…" not in text
    for fig in _figures(got):
        assert any(fig in x for x in lines), fig
    # every claim is named whole once its folded id is joined back
    first = [x.split("│")[1].strip() for x in lines if x.startswith("│") and x.count("│") == 6]
    joined = "".join(first)
    for c in got["claims"]:
        assert c["id"] in joined, c["id"]


def test_claims_fit_120_columns_in_click(claimed):
    db, got = claimed
    for env in ({"COLUMNS": "120"}, {"COLUMNS": ""}):  # a 120-column terminal, and a pipe's natural width
        r = CliRunner().invoke(main, ["claims", "--db", str(db)], env=env)
        assert r.exit_code == 0, r.output
        _check_fits(r.stdout, got)
        assert "does not hold here" in r.stdout and "95% interval [" not in r.stdout  # reasons: --wide only


def test_claims_fit_120_columns_as_a_subprocess(claimed):
    db, got = claimed
    env = {**os.environ, "COLUMNS": "120", "CTXREPLAY_KEY_FILE": str(db.parent / "key")}
    p = subprocess.run([sys.executable, "-m", "replay.cli", "claims", "--db", str(db)], capture_output=True,
                       text=True, env=env, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    _check_fits(p.stdout, got)


def test_wide_shows_every_column_and_json_is_unchanged(claimed):
    db, got = claimed
    r = CliRunner().invoke(main, ["claims", "--db", str(db), "--wide"], env={"COLUMNS": ""})
    assert r.exit_code == 0, r.output
    assert max(cell_len(x) for x in r.stdout.splitlines()) > 120
    # the verdicts' reasons and the run ids are only in the wide tables
    for c in got["claims"]:
        if c["reason"]:
            assert c["reason"].split(":")[0][:30] in r.stdout, c["id"]
    assert got["sources"]["jp_067"]["ctxreplay"]["defaults"]["run_id"] in r.stdout
    narrow = CliRunner().invoke(main, ["claims", "--db", str(db)]).stdout
    assert got["sources"]["jp_067"]["ctxreplay"]["defaults"]["run_id"] not in narrow
    again = CliRunner().invoke(main, ["claims", "--db", str(db), "--json", "--wide"])
    assert json.loads(again.stdout) == got


def test_formats_keep_every_column_one_figure_per_cell(claimed):
    """--format plain|markdown|csv has no width to fit: every column, as --wide prints them."""
    import csv
    import io

    db, got = claimed
    text = CliRunner().invoke(main, ["claims", "--db", str(db), "--format", "csv"]).stdout
    assert text == CliRunner().invoke(main, ["claims", "--db", str(db), "--format", "csv", "--wide"]).stdout
    register, _, savings = (list(csv.DictReader(io.StringIO(t))) for t in text.split("\n\n")[:3])
    assert [r["claim"] for r in register] == [c["id"] for c in got["claims"]]
    assert all(r["verdict"].startswith(c["verdict"] or "not measured") for r, c in zip(register, got["claims"]))
    assert "run" in savings[0] and all(r["run"] for r in savings)
