"""A session whose model no price covers: every command that prices it stops with one plain
error line (no traceback, no escaped newline) naming the model and --prices, and stores nothing
half-done; with a price file they run."""

from __future__ import annotations

import pytest

from replay.store.load import ingest

from test_hostile import ROOT, one_error_line, run
from test_hostile_faults import UNPRICED_RATES, _session
from test_ingest import q


@pytest.fixture(scope="module")
def unpriced(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("unpriced")
    _session("priced", n=3).write_jsonl(tmp / "logs" / "a.jsonl")
    _session("odd", n=3, model="claude-unpriced-y").write_jsonl(tmp / "logs" / "b.jsonl")
    db = tmp / "t.duckdb"
    ingest([tmp / "logs"], db)
    prices = tmp / "p.toml"
    prices.write_text('[models."claude-unpriced-y"]\n' + UNPRICED_RATES)
    return db, prices


@pytest.mark.parametrize("args", [
    ["replay", "--policy", "noop"],
    ["tune", str(ROOT / "examples" / "devboy_capacity.toml"), "--trials", "2"],
    ["sweep", str(ROOT / "examples" / "devboy_capacity.toml")],
    ["validate", "--no-ingest"],
    ["whatif"],
])
def test_an_unpriced_model_is_one_plain_error_line(unpriced, args):
    db, _ = unpriced
    r = run(*args, "--db", db)
    line = one_error_line(r, "no price for model 'claude-unpriced-y'", "--prices FILE", '[models."claude-unpriced-y"]')
    assert "\\x0a" not in line and "\\n" not in line
    assert q(db, "SELECT count(*) FROM runs WHERE status = 'finished'")[0][0] == 0


def test_with_the_spec_naming_a_price_file_tune_runs(unpriced, tmp_path):
    db, prices = unpriced
    spec = tmp_path / "spec.toml"
    spec.write_text(f'name = "t"\npolicy = "devboy_lru"\nprices = "{prices}"\n[grid]\ncapacity = [1, 2]\n')
    r = run("tune", spec, "--trials", "2", "--db", db)
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output
