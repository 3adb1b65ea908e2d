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


RATES = "cache_write_5m = 1\ncache_write_1h = 2\ncache_read = 0.1\noutput = 5\n"


@pytest.mark.parametrize("body,needles", [
    ('[models."claude-unpriced-y"]\ninput = -1\n' + RATES, ["models.claude-unpriced-y.input = -1", "number >= 0"]),
    ('[models."claude-unpriced-y"]\ninput = nan\n' + RATES, ["input = nan"]),
    ('[models."claude-unpriced-y"]\ninput = inf\n' + RATES, ["input = inf"]),
    ('[models."claude-unpriced-y"]\ninput = "cheap"\n' + RATES, ["input = 'cheap'"]),
    ('[models."claude-unpriced-y"]\ninput = true\n' + RATES, ["input = True"]),
    ('[models."claude-unpriced-y"]\ninput = 1\nmin_cacheable = -3\n' + RATES, ["min_cacheable = -3", "integer"]),
    ('[models."claude-unpriced-y".fast]\ninput = "a"\n' + RATES, ["models.claude-unpriced-y.fast.input = 'a'"]),
    ("models = 3\n", ["models must be tables"]),
    ("[models]\nx = 5\n", ["models.x must be a table"]),
    ('price_date = "soon"\n', ["price_date 'soon' is not a date"]),
])
@pytest.mark.parametrize("command", [["replay", "--policy", "noop"], ["usage", "--no-ingest"]])
def test_a_price_file_with_a_bad_value_is_one_error_line_naming_the_key(unpriced, tmp_path, body, needles, command):
    """A negative, NaN or infinite rate priced every request it touched without a word (a cost of
    $-…, "-" or $inf); a string, a table where a number belongs or a bad date ended in a traceback."""
    db, _ = unpriced
    bad = tmp_path / "bad.toml"
    bad.write_text(body)
    before = q(db, "SELECT count(*) FROM runs")[0][0]
    r = run(*command, "--db", db, "--prices", bad)
    one_error_line(r, "bad.toml", *needles)
    assert q(db, "SELECT count(*) FROM runs")[0][0] == before


def test_a_toml_date_as_price_date_is_a_date(unpriced, tmp_path):
    db, prices = unpriced
    p = tmp_path / "p.toml"
    p.write_text("price_date = 2026-01-01\n" + prices.read_text())
    r = run("replay", "--policy", "noop", "--db", db, "--prices", p, "-j")
    assert r.exit_code == 0, r.output


def test_a_bad_price_date_option_names_the_option(unpriced):
    db, _ = unpriced
    one_error_line(run("replay", "--policy", "noop", "--db", db, "--price-date", "2026-13-01"),
                   "--price-date '2026-13-01' is not a date")
