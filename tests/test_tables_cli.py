"""Tables that read at a glance (issue 29): durations, money and counts through replay/cli/fmt,
tables sorted as their titles say and within 120 columns, the saving under `replay` and
`tune`, one stored no-op per configuration, `sessions --resolve` and the figures glossary."""

import csv
import io
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.cells import cell_len

from replay import store
from replay.cli import main
from replay.cli.fmt import MINUS
from replay.store.load import ingest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "datasets" / "sample" / "logs"
BOX = tuple("│┃┏┗└┡├╇┣")


def run(*args, env=None, stdout=False):
    r = CliRunner().invoke(main, [str(a) for a in args], env=env)
    assert r.exit_code == 0, r.output
    return r.stdout if stdout else r.output


def csv_rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    from replay.ingest.keys import load_or_create_master_key

    # a module fixture runs before conftest's per-test key is set: name that key file here, so
    # that `sessions --resolve` (run under it) recomputes the same pseudonyms
    key = tmp_path_factory.getbasetemp() / "test.key"
    load_or_create_master_key(key)
    d = tmp_path_factory.mktemp("tables") / "t.duckdb"
    run("ingest", SAMPLE, "--db", d, "--dataset", "sample", "-q", "--key-file", key)
    return d


def test_breaks_idle_times_read_as_durations_and_rows_are_costliest_first(db):
    text = run("breaks", "--db", db, "--limit", "5")
    assert not re.search(r"\b\d{1,3},\d{3} s\b|\b\d{4,} s\b", text), text  # no "40,794 s"
    rows = csv_rows(run("breaks", "--db", db, "--limit", "5", "--format", "csv", stdout=True).split("\n\n")[0])
    assert len(rows) == 5
    for r in rows:  # CSV gives a duration in seconds (the table shows "4 m 05 s")
        assert re.fullmatch(r"\d*(\.\d+)?", r["idle (s)"]), r["idle (s)"]
    costs = [float(r["$"].replace(",", "")) for r in rows]
    assert costs == sorted(costs, reverse=True)
    every = json.loads(run("breaks", "--db", db, "--json", stdout=True))["breaks"]
    assert max(costs) == round(max(b["cost"] for b in every), 2)  # the costliest of all, not the first five
    assert "costliest first" in text


def test_bound_prints_a_loss_as_minus_dollars(db):
    text = run("bound", "--db", db, "--no-store", "--variants", "calibrated")
    assert "$-" not in text
    got = json.loads(run("bound", "--db", db, "--no-store", "--variants", "calibrated", "--json", stdout=True))
    losses = [x for x in got["variants"]["calibrated"]["policies"].values() if x["cost"]["saved"] < 0]
    assert losses, "the sample has policies that cost more than the no-op (supersede, cupel_dedup)"
    for x in losses:
        assert f"{MINUS}${-x['cost']['saved']:,.2f}" in text


@pytest.fixture(scope="module")
def replayed(db):
    """The no-op twice (the second re-used), then devboy_lru: the outputs."""
    first = run("replay", "--db", db, "--policy", "noop", "--variants", "calibrated")
    again = run("replay", "--db", db, "--policy", "noop", "--variants", "calibrated")
    lru = run("replay", "--db", db, "--policy", "devboy_lru", "--variants", "calibrated")
    return first, again, lru


def test_an_identical_noop_run_is_reused_not_stored_twice(db, replayed):
    first, again, _ = replayed
    rid = re.search(r"run (\w+):", first)[1]
    assert f"run {rid} re-used" in again and "nothing new stored" in again
    con = store.connect(db, read_only=True)
    n = con.execute("SELECT count(*) FROM runs WHERE policy = 'noop'").fetchone()[0]
    con.close()
    assert n == 1
    rows = json.loads(run("compare", "--db", db, "--json", stdout=True))
    assert [r["run_id"] for r in rows if r["policy"] == "noop"] == [rid]
    # another cache setting is another configuration: stored, not re-used
    other = run("replay", "--db", db, "--policy", "noop", "--variants", "calibrated", "--ttl", "5m")
    assert "re-used" not in other


def test_replay_prints_the_saving_against_the_matching_noop(db, replayed):
    _, _, lru = replayed
    rid = re.search(r"run (\w+): devboy_lru", lru)[1]
    row = next(r for r in json.loads(run("compare", "--db", db, "--json", stdout=True)) if r["run_id"] == rid)
    saved = -row["delta"]["cost"]
    iv = row["interval"]["cost"]
    assert saved > 0
    line = next(x for x in lru.splitlines() if "vs the no-op baseline" in x)
    assert row["baseline_run"] in line
    assert f"saves ${saved:,.2f} ({100 * row['saved_pct']['cost']:+.2f}%" in line
    assert f"95% interval {100 * iv['low']:+.2f}% to {100 * iv['high']:+.2f}%" in line
    got = json.loads(run("replay", "--db", db, "--policy", "devboy_lru", "--variants", "calibrated", "--json", stdout=True))
    s = got["variants"]["calibrated"]["saving"]
    assert s["baseline_run"] == row["baseline_run"] and s["saved_usd"] == pytest.approx(saved)


def test_replay_without_a_baseline_names_the_command(tmp_path):
    d = tmp_path / "n.duckdb"
    ingest([SAMPLE], d, dataset="sample")
    text = run("replay", "--db", d, "--policy", "devboy_lru", "--variants", "model-only")
    assert "no no-op baseline" in text and "--policy noop --variants model-only" in text
    assert "saves" not in text


def test_tune_prints_the_best_runs_saving(db, replayed):
    text = run("tune", ROOT / "examples" / "devboy_random.toml", "--db", db, "--trials", "2")
    best = re.search(r"\(run (\w+)\)", text)[1]
    line = next(x for x in text.splitlines() if "vs the no-op baseline" in x)
    row = next(r for r in json.loads(run("compare", "--db", db, "--json", stdout=True)) if r["run_id"] == best)
    assert f"${abs(row['delta']['cost']):,.2f}" in line and f"{100 * row['saved_pct']['cost']:+.2f}%" in line


def _table_lines(text: str) -> list[str]:
    return [x for x in text.splitlines() if x.startswith(BOX)]


def test_compare_fits_120_columns_and_wide_shows_every_column(db, replayed):
    narrow = run("compare", "--db", db, env={"COLUMNS": "120"})
    lines = _table_lines(narrow)
    assert lines and max(cell_len(x) for x in lines) <= 120
    # no figure wrapped: every run's row holds its whole saving on one line
    for r in json.loads(run("compare", "--db", db, "--json", stdout=True)):
        p = r["saved_pct"]["cost"]
        assert any(r["run_id"] in x and f"{100 * p:+.2f}%" in x for x in lines), r["run_id"]
    # natural width (a pipe, no COLUMNS): the default stays within 120, --wide does not
    assert max(cell_len(x) for x in _table_lines(run("compare", "--db", db, env={"COLUMNS": ""}))) <= 120
    wide = run("compare", "--db", db, "--wide", env={"COLUMNS": ""})
    assert max(cell_len(x) for x in _table_lines(wide)) > 120 and "delivered saved [95%]" in wide


def test_compare_counts_are_integers(db, replayed):
    tables = run("compare", "--db", db, "--format", "csv", stdout=True).split("\n\n")
    risk = csv_rows(tables[1])
    assert risk
    for r in risk:
        for k in ("busts", "hints", "dangling", "stale", "re-read"):
            assert re.fullmatch(r"\d[\d,]*", r[k]), (k, r[k])


def test_sessions_fit_and_resolve_maps_keys_back_to_files(db, tmp_path):
    text = run("sessions", "--db", db, env={"COLUMNS": ""})
    assert max(cell_len(x) for x in _table_lines(text)) <= 120
    rows = json.loads(run("sessions", "--db", db, "--resolve", SAMPLE, "--json", stdout=True))
    assert rows and all(r["file"] for r in rows)
    assert len({r["file"] for r in rows}) == len(rows)
    con = store.connect(db, read_only=True)
    stored = dict(con.execute("SELECT session_key, project FROM sessions").fetchall())
    con.close()
    for r in rows[:2]:
        # the file resolved for a key is the file that key came from: ingested alone, it gets that key
        one = tmp_path / f"{r['session_key']}.duckdb"
        run("ingest", r["file"], "--db", one, "--dataset", "sample", "-q")
        c = store.connect(one, read_only=True)
        keys = [k for (k,) in c.execute("SELECT session_key FROM sessions").fetchall()]
        c.close()
        assert keys == [r["session_key"]]
        assert r["project_path"] and stored[r["session_key"]] == r["project"]
        assert Path(r["file"]).parent.name == r["project_path"].replace("/", "-")  # Claude Code's folder naming
    shown = run("sessions", "--db", db, "--resolve", SAMPLE)
    assert f"{len(rows)} of {len(rows)} session(s) found" in shown


def test_resolve_with_another_key_finds_nothing(db, tmp_path):
    from replay.ingest.keys import load_or_create_master_key

    other = tmp_path / "other.key"
    load_or_create_master_key(other)
    rows = json.loads(run("sessions", "--db", db, "--resolve", SAMPLE, "--key-file", other, "--json", stdout=True))
    assert rows and not any(r["file"] for r in rows)


def test_skipped_lines_are_named_by_the_path_given_not_the_symlink_target(tmp_path):
    real, given = tmp_path / "real", tmp_path / "given"
    real.mkdir()
    given.mkdir()
    src = sorted(SAMPLE.rglob("*.jsonl"))[0]
    lines = src.read_text().splitlines(keepends=True)
    (real / "s.jsonl").write_text("".join(lines[:3]) + "{not json\n" + "".join(lines[3:]))
    (given / "link.jsonl").symlink_to(real / "s.jsonl")
    text = run("ingest", given, "--db", tmp_path / "s.duckdb", "-q")
    assert f"{given / 'link.jsonl'}:4: invalid json" in text
    assert str(real / "s.jsonl") not in text


def test_validate_says_where_it_wrote_the_plot(db):
    text = run("validate", "--db", db)
    png = db.parent / "validate-sample.png"
    assert png.is_file() and f"wrote the plot of simulated vs recorded cache reads to {png}" in text


def test_the_glossary_defines_every_figure_and_help_links_it():
    doc = (ROOT / "docs" / "figures.md").read_text()
    for term in ("delivered tokens", "context tokens", "cost", "cache read", "cache write", "break", "bound_insert",
                 "saving", "95% interval", "within targets", "requests matched", "busts", "hit rate", "dangling",
                 "re-billed tokens", "idle", "n.d."):
        assert f"| {term}" in doc or f"**{term}**" in doc or f", {term}" in doc, term
    assert "docs/figures.md" in run("--help")


def test_usage_by_session_keeps_every_figure_whole_near_120_columns(db):
    text = run("usage", "--db", db, "--by", "session", "--no-ingest", env={"COLUMNS": ""})
    lines = _table_lines(text)
    # the figures stay whole: every row's session key, cache writes (both TTLs in one column) and
    # cache read on one line, uncut (the table was ~190 columns wide before); total tokens in --wide
    res = json.loads(run("usage", "--db", db, "--by", "session", "--no-ingest", "--json", stdout=True))
    for r in res["rows"]:
        writes = r["cache_write_5m"] + r["cache_write_1h"]
        assert any(r["key"][:12] in x and f"{writes:,}" in x and f"{r['cache_read']:,}" in x for x in lines), r["key"]
    assert max(cell_len(x) for x in lines) <= 120
    wide = _table_lines(run("usage", "--db", db, "--by", "session", "--no-ingest", "--wide", env={"COLUMNS": ""}))
    for r in res["rows"]:
        assert any(f"{r['cache_read']:,}" in x and f"{r['total_tokens']:,}" in x for x in wide), r["key"]
