"""A price file naming a model the trace hides (``model-<hash>``, keyed per dataset) prices it in a
dataset other than ``default``, in every command that prices (`PriceTable.bind`).

Before, only the default dataset's key mapped the price file's raw names, so each of these
commands stopped on a non-default dataset with "no price for model-<hash>".
"""

from __future__ import annotations

import json

import pytest

from replay.ingest.keys import load_or_create_master_key

from test_hostile import run
from test_hostile_vocab import _jsonl, claude_log

MODEL = "zqx-gateway-model"  # not a public id: stored as its keyed pseudonym
RATES = "input = 3\ncache_write_5m = 3.75\ncache_write_1h = 6\ncache_read = 0.3\noutput = 15\n"


@pytest.fixture(scope="module")
def other_db(tmp_path_factory):
    d = tmp_path_factory.mktemp("prices-dataset")
    logs = d / "logs"
    _jsonl(logs / "a.jsonl", claude_log(MODEL, "a1"))
    _jsonl(logs / "b.jsonl", claude_log(MODEL, "b1"))
    db = d / "t.duckdb"
    key = tmp_path_factory.getbasetemp() / "test.key"  # the key conftest gives every test (set per test)
    load_or_create_master_key(key)
    r = run("ingest", logs, "--db", db, "--dataset", "other", "-q", "--key-file", key)
    assert r.exit_code == 0, r.output
    prices = d / "p.toml"
    prices.write_text(f'[models."{MODEL}"]\n{RATES}')
    return db, prices


@pytest.mark.parametrize("cmd", [
    ["usage", "--no-ingest", "--by", "model", "--json"],
    ["sessions", "--json"],
    ["whatif", "--json"],
    ["advise", "--json"],
    ["breaks", "--json"],
    ["replay", "--policy", "noop", "--json"],
    ["validate", "--json"],
    ["bound", "--json"],
])
def test_a_non_default_dataset_is_priced_from_the_raw_name(other_db, cmd):
    db, prices = other_db
    r = run(*cmd, "--db", db, "--dataset", "other", "--prices", prices)
    assert r.exit_code == 0, r.output
    assert "no price" not in r.output


def test_the_price_reaches_the_figures(other_db):
    db, prices = other_db
    got = json.loads(run("usage", "--no-ingest", "--db", db, "--dataset", "other", "--prices", prices,
                         "--by", "model", "--json").stdout)
    assert got["totals"]["cost"] > 0 and got["totals"]["cost_complete"]
    assert not got["unpriced_models"]


def test_without_the_price_file_the_model_is_named_unpriced(other_db):
    db, _ = other_db
    got = json.loads(run("usage", "--no-ingest", "--db", db, "--dataset", "other", "--by", "model",
                         "--json").stdout)
    assert not got["totals"]["cost_complete"] and got["unpriced_models"]


def test_sessions_cost_each_session(other_db):
    db, prices = other_db
    rows = json.loads(run("sessions", "--db", db, "--dataset", "other", "--prices", prices, "--json").stdout)
    assert rows and all(r["cost_complete"] and r["cost"] > 0 for r in rows)


@pytest.fixture(scope="module")
def own_key_db(tmp_path_factory):
    """Dataset `other` ingested with a key of its own (not the default one)."""
    d = tmp_path_factory.mktemp("prices-own-key")
    logs = d / "logs"
    _jsonl(logs / "a.jsonl", claude_log(MODEL, "a1"))
    key = d / "own.key"
    load_or_create_master_key(key)
    r = run("ingest", logs, "--db", d / "t.duckdb", "--dataset", "other", "-q", "--key-file", key)
    assert r.exit_code == 0, r.output
    prices = d / "p.toml"
    prices.write_text(f'[models."{MODEL}"]\n{RATES}')
    spec = d / "s.toml"
    spec.write_text(f'name = "k"\npolicy = "devboy_lru"\nprices = "{prices}"\n[grid]\ncapacity = [10]\n')
    return d / "t.duckdb", prices, key, spec


@pytest.mark.parametrize("cmd", [
    ["usage", "--no-ingest", "--json"],
    ["whatif", "--no-ingest", "--json"],
    ["bound", "--json", "--no-store"],
    ["claims", "--json"],
    ["sweep", "SPEC", "--json"],
])
def test_a_dataset_of_another_key_is_priced_with_its_key_file(own_key_db, cmd):
    db, prices, key, spec = own_key_db
    priced = [] if cmd[0] == "sweep" else ["--prices", prices]  # a sweep's spec names its price file
    cmd = [str(spec) if c == "SPEC" else c for c in cmd]
    r = run(*cmd, "--db", db, "--dataset", "other", *priced, "--key-file", key)
    assert r.exit_code == 0, r.output
    assert "no price" not in r.output


def test_a_price_file_model_that_matches_nothing_and_a_conflicting_date_are_said(tmp_path):
    """Second hostile-input audit (2026-11-28): a typo'd [models."X"] was ignored without a word; a
    file's price_date silently won over an explicit --price-date."""
    from click.testing import CliRunner

    from replay.cli import main
    from replay.cli.demo import sample_logs_dir

    db = tmp_path / "s.duckdb"
    assert CliRunner().invoke(main, ["ingest", str(sample_logs_dir()), "--db", str(db), "-q"]).exit_code == 0
    rates = "input = 1.0\ncache_write_5m = 1.0\ncache_write_1h = 1.0\ncache_read = 1.0\noutput = 1.0\n"
    typo = tmp_path / "typo.toml"
    typo.write_text('[models."claude-opus-4-6x"]\n' + rates)
    r = CliRunner().invoke(main, ["usage", "--db", str(db), "--prices", str(typo), "--no-ingest"])
    assert r.exit_code == 0 and f'warning: {typo}: [models."claude-opus-4-6x"] matches no model of default' in \
        " ".join(r.stderr.split()), r.stderr
    good = tmp_path / "good.toml"
    good.write_text('[models."claude-opus-4-6"]\n' + rates)
    r = CliRunner().invoke(main, ["usage", "--db", str(db), "--prices", str(good), "--no-ingest"])
    assert r.exit_code == 0 and "matches no model" not in r.stderr
    dated = tmp_path / "dated.toml"
    dated.write_text('price_date = "2024-01-01"\n[models."claude-opus-4-6"]\n' + rates)
    r = CliRunner().invoke(main, ["usage", "--db", str(db), "--prices", str(dated), "--price-date", "2026-11-01"])
    assert r.exit_code == 1 and "price_date = 2024-01-01 and --price-date 2026-11-01 disagree" in r.output
    r = CliRunner().invoke(main, ["usage", "--db", str(db), "--prices", str(dated), "--price-date", "2024-01-01",
                                  "--no-ingest"])
    assert r.exit_code == 0, r.output
