"""One CLI grammar: strict JSON from every command's --json (and -j), one `error:` line with exit
1 for every error (click's usage errors exit 2), --dataset the same everywhere, Ctrl-C exits
130; compare's sort, filter, limit and missing-baseline hint; the texts of issue 15."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from replay.cli import main

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "datasets" / "sample" / "logs"


def run(*args, ok=True):
    r = CliRunner().invoke(main, [str(a) for a in args])
    if ok:
        assert r.exit_code == 0, r.output
    return r


def cli(*args):
    return subprocess.run([sys.executable, "-m", "replay.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ), cwd=ROOT)


def strict_json(s: str):
    def bad(c):
        raise ValueError(f"not strict JSON: {c}")
    return json.loads(s, parse_constant=bad)


def one_error(r, *needles):
    assert r.exit_code == 1, r.output
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])


@pytest.fixture(scope="module")
def key(tmp_path_factory):
    k = tmp_path_factory.mktemp("key") / "k"
    k.write_text("ef" * 32 + "\n")  # module fixtures run before the per-test key fixture
    return k


@pytest.fixture(scope="module")
def db(tmp_path_factory, key):
    """The sample with a devboy run and no baseline, then a small sweep (which has its baselines)."""
    d = tmp_path_factory.mktemp("grammar")
    db = d / "g.duckdb"
    run("ingest", SAMPLE, "--db", db, "--key-file", key, "-q")
    return db


@pytest.fixture(scope="module")
def swept(db, tmp_path_factory):
    spec = tmp_path_factory.mktemp("spec") / "s.toml"
    spec.write_text('name = "tiny"\npolicy = "devboy_lru"\n[grid]\ncapacity = [2, 0]\n')
    run("replay", "--db", db, "--policy", "jp_resource_dedup", "--ttl", "5m")
    run("sweep", spec, "--db", db, "--jobs", "1", "-j")
    return db


def test_minus_j_is_json_everywhere_and_jobs_has_no_short_form():
    for name, cmd in main.commands.items():
        for p in cmd.params:
            if "-j" in p.opts or "-j" in p.secondary_opts:
                assert p.name == "as_json", (name, p.name)
            if p.name == "as_json":
                assert "-j" in p.opts, name
            if p.name == "jobs":
                assert p.opts == ["--jobs"], name
    for name in ("demo", "export", "generate", "report", "usage", "sessions", "compare"):
        assert any(p.name == "as_json" for p in main.commands[name].params), name


def test_strict_json_from_every_command(swept, tmp_path):
    db = swept
    outputs = {
        "datasets": run("datasets", "--db", db, "-j").output,
        "sessions": run("sessions", "--db", db, "-j").output,
        "usage": run("usage", "--db", db, "-j", "--by", "week").output,
        "runs": run("runs", "--db", db, "-j").output,
        "compare": run("compare", "--db", db, "-j").output,
        "policies": run("policies", "-j").output,
        "export": run("export", "--db", db, "--out", tmp_path / "pq", "-j").output,
        "generate": run("generate", "--out", tmp_path / "gen", "--sessions", "1", "-j").output,
        "report": run("report", "--db", db, "--out", tmp_path / "rep", "-j").output,
        "check": run("check", "--db", db, "-j").output,
    }
    for name, text in outputs.items():
        strict_json(text)  # raises on NaN / Infinity or any text around the JSON
    assert any(r.get("sweep_id") for r in strict_json(outputs["compare"]))  # a sweep exists: still strict
    exp = strict_json(outputs["export"])
    assert exp["dataset"] == "default" and exp["tables"]["blocks"] > 0
    gen = strict_json(outputs["generate"])
    assert gen["sessions"] == 1 and gen["files"] >= 1
    rep = strict_json(outputs["report"])
    assert rep["out"] == str(tmp_path / "rep") and rep["answer"]["headline"]


def test_dataset_defaults_to_the_only_one_else_fails_listing_them(tmp_path, key):
    db = tmp_path / "two.duckdb"
    run("ingest", SAMPLE, "--db", db, "--dataset", "one", "--key-file", key, "-q")
    for cmd in (["replay", "--policy", "noop"], ["sessions"], ["usage"], ["runs"], ["compare"],
                ["export", "--out", tmp_path / "x"], ["report", "--out", tmp_path / "r"]):
        run(*cmd, "--db", db)
    run("ingest", SAMPLE, "--db", db, "--dataset", "two", "--key-file", key, "-q")
    for cmd in (["sessions"], ["usage"], ["runs"], ["compare"], ["export", "--out", tmp_path / "x2"],
                ["report", "--out", tmp_path / "r2"], ["replay", "--policy", "noop"]):
        r = run(*cmd, "--db", db, ok=False)
        one_error(r, "several datasets (one, two)", "--dataset")
        r = run(*cmd, "--db", db, "--dataset", "nope", ok=False)
        one_error(r, "no dataset 'nope'", "known: one, two")
    assert strict_json(run("usage", "--db", db, "--dataset", "two", "-j").output)["dataset"] == "two"


def test_errors_are_one_line_and_exit_1_usage_errors_exit_2(db, tmp_path):
    for args, needle in (
        (["usage", "--db", tmp_path / "none.duckdb"], "no such database"),
        (["usage", "--db", db, "--since", "someday"], "is not a date"),
        (["usage", "--db", db, "--timezone", "Mars/Olympus"], "unknown time zone"),
        (["compare", "--db", db, "--policy", "nope"], "no such policy"),
        (["replay", "--db", db, "--policy", "devboy_lru", "--set", "capacity=-1"], "capacity"),
        (["generate", "--out", "/dev/null/x", "-j"], "Not a directory"),
    ):
        r = run(*args, ok=False)
        one_error(r, needle)
        assert r.stdout == ""
    # the same as real processes: one line on stderr, exit 1
    p = cli("sessions", "--db", tmp_path / "none.duckdb", "-j")
    assert p.returncode == 1 and p.stdout == "" and p.stderr.startswith("error: ")
    assert len(p.stderr.splitlines()) == 1
    # usage errors are the option parser's: exit 2 (documented in --help)
    for args in (["usage", "--by", "year"], ["nosuchcommand"], ["sweep"], ["sweep", "x.toml", "-j", "2"]):
        p = cli(*args)
        assert p.returncode == 2 and "Error:" in p.stderr, (args, p.stderr)
    help_text = run("--help").output
    assert "Exit codes: 0" in help_text and "130" in help_text and "usage error" in " ".join(help_text.split())


def test_ctrl_c_is_one_line_and_exit_130(db, monkeypatch):
    import analysis.usage

    def interrupted(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(analysis.usage, "usage", interrupted)
    r = run("usage", "--db", db, ok=False)
    assert r.exit_code == 130 and r.stderr.strip() == "interrupted", r.output


def test_compare_sort_filter_limit_and_settings(swept):
    db = swept
    rows = strict_json(run("compare", "--db", db, "-j").output)
    assert len(rows) > 3
    dev = strict_json(run("compare", "--db", db, "--policy", "devboy_lru", "--sort", "saved", "-j").output)
    assert dev and {r["policy"] for r in dev} == {"devboy_lru"}
    saved = [r["saved_pct"]["cost"] for r in dev]
    assert saved == sorted(saved, reverse=True)
    cheap = strict_json(run("compare", "--db", db, "--sort", "cost", "--limit", "2", "-j").output)
    assert len(cheap) == 2 and cheap[0]["figures"]["cost"] <= cheap[1]["figures"]["cost"]
    assert cheap[0]["figures"]["cost"] == min(r["figures"]["cost"] for r in rows)
    text = run("compare", "--db", db, "--policy", "devboy_lru").output
    assert "capacity=2" in text and "capacity=unbounded" in text and "{" not in text.split("Cache and risk")[0]
    runs_text = run("runs", "--db", db).output
    assert '{"' not in runs_text and "capacity=2" in runs_text
    r = run("compare", "--db", db, "--limit", "0", ok=False)
    assert r.exit_code == 2


def test_a_missing_baseline_is_named_with_its_command_or_run(tmp_path, key):
    db = tmp_path / "nb.duckdb"
    run("ingest", SAMPLE, "--db", db, "--key-file", key, "-q")
    out = run("replay", "--db", db, "--policy", "devboy_lru", "--ttl", "5m").output
    want = f"ctxreplay replay --db {db} --dataset default --policy noop --ttl 5m"
    assert "no no-op baseline with these settings yet" in out and want in out
    out = run("compare", "--db", db).output
    assert "no no-op baseline for 2 run(s)" in out and want in out and "--run-baselines" in out
    rows = strict_json(run("compare", "--db", db, "-j").output)
    assert {r["baseline_missing"] for r in rows} == {want.replace("noop", f"noop --variants {v}")
                                                     for v in ("calibrated", "model-only")}
    rep = run("report", "--db", db, "--out", tmp_path / "rep").output
    assert "No saving can be measured" in rep and want in rep
    assert "No run meets the risk limit" not in rep
    # the printed command stores exactly the missing baseline
    run(*want.split()[1:])
    rows = strict_json(run("compare", "--db", db, "-j").output)
    assert all(r["baseline_run"] and "baseline_missing" not in r for r in rows)
    assert all(r["saved_pct"]["cost"] is not None for r in rows)
    # or compare runs it
    run("replay", "--db", db, "--policy", "devboy_lru", "--breakpoints", "last-message", "--variants", "calibrated")
    out = run("compare", "--db", db, "--run-baselines").output
    assert "no no-op baseline" not in out
    rows = strict_json(run("compare", "--db", db, "-j").output)
    assert all(r.get("baseline_run") for r in rows)


def test_texts(db, tmp_path):
    from replay.cli.docgen import render_cli

    doc = render_cli()
    assert "ctxreplay ctxreplay" not in doc and "Usage: ctxreplay usage [OPTIONS]" in doc
    committed = (ROOT / "docs" / "cli.md").read_text()
    assert "ctxreplay ctxreplay" not in committed
    pol = run("policies").output + run("policies", "-j").output
    assert "DESIGN.md" not in pol and "docs/policies.md" in pol
    assert (ROOT / "docs" / "policies.md").exists()
    run("replay", "--db", db, "--policy", "noop")
    run("report", "--db", db, "--out", tmp_path / "rep")
    md = (tmp_path / "rep" / "report.md").read_text()
    line = next(x for x in md.splitlines() if "regenerate with" in x)
    assert f"--db {db} " in line and f"--out {tmp_path / 'rep'}" in line
    assert re.search(r"`ctxreplay report --db \S+ --dataset default --out \S+`", line)


def test_ctrl_c_as_a_real_process_exits_130_and_leaves_the_database_whole(db, tmp_path):
    import shutil
    import signal
    import time

    copy = tmp_path / "c.duckdb"
    shutil.copy(db, copy)
    spec = tmp_path / "big.toml"
    spec.write_text('name = "big"\npolicy = "devboy_lru"\n[grid]\ncapacity = [' + ", ".join(map(str, range(1, 61)))
                    + ']\n[cache]\nttl = ["log", "5m", "1h"]\n')
    p = subprocess.Popen([sys.executable, "-m", "replay.cli", "sweep", str(spec), "--db", str(copy), "-j"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    # interrupt only once the sweep is writing (its WAL exists): under load, Python start-up
    # alone can take seconds, and a SIGINT before the CLI runs is not what this tests
    wal = copy.parent / (copy.name + ".wal")
    deadline = time.monotonic() + 120
    while not wal.exists() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=300)
    if p.returncode == 0:
        pytest.skip("the sweep finished before the interrupt")
    assert p.returncode == 130 and err.strip() == "interrupted" and out == "", err
    assert run("check", "--db", copy).exit_code == 0
    strict_json(run("compare", "--db", copy, "-j").output)
