"""An interrupted ingest says what it kept (hostile-input audit, 2026-11-28: after Ctrl-C or
SIGTERM the only output was "interrupted", though whole files were stored and a re-run resumes)."""

from __future__ import annotations

from click.testing import CliRunner

from replay.cli import main
from replay.store import load


def test_an_interrupted_ingest_names_the_files_it_stored(tmp_path, monkeypatch):
    from replay.synth.generate import generate_corpus

    logs = tmp_path / "logs"
    generate_corpus(logs, sessions=3, seed=4)
    db = tmp_path / "x.duckdb"
    real = load.ingest
    first = sorted(p for p in logs.rglob("*.jsonl") if "subagents" not in p.parts)[0]
    assert CliRunner().invoke(main, ["ingest", str(first), "--db", str(db), "-q"]).exit_code == 0

    def stopped(paths, db, **kw):  # two more files stored, then Ctrl-C
        for p in sorted(p for p in logs.rglob("*.jsonl") if "subagents" not in p.parts)[1:]:
            real([p], db, **kw)
        raise KeyboardInterrupt

    monkeypatch.setattr(load, "ingest", stopped)
    r = CliRunner().invoke(main, ["ingest", str(logs), "--db", str(db), "-q"])
    assert r.exit_code == 130
    assert "ingest stopped: 2 file version(s) were stored before it (whole files only; nothing half-written); run " \
           "the same command again to read the rest" in " ".join(r.stderr.split())
    assert r.stderr.rstrip().endswith("interrupted")


def test_ingest_json_names_the_first_lines_by_file_and_line(tmp_path):
    """Hostile-input audit (2026-11-28): the text promised every skipped line "in --json", which
    held counts only; the JSON now lists the first 20 by file and line, and the text says so."""
    import json

    from replay.synth.generate import generate_corpus

    logs = tmp_path / "logs"
    generate_corpus(logs, sessions=1, seed=4)
    f = sorted(p for p in logs.rglob("*.jsonl") if "subagents" not in p.parts)[0]
    f.write_text(f.read_text() + "".join("{broken\n" for _ in range(25)))
    r = CliRunner().invoke(main, ["ingest", str(logs), "--db", str(tmp_path / "a.duckdb"), "-q", "--json"])
    got = json.loads(r.stdout)
    assert got["skipped_lines"]["invalid_json"] == 25 and len(got["line_messages"]) == 20
    assert all(m.startswith(f"{f}:") for m in got["line_messages"])
    r = CliRunner().invoke(main, ["ingest", str(logs), "--db", str(tmp_path / "b.duckdb"), "-q"])
    assert "… and 5 more, counted above by reason (the first 20 are listed, here and in --json's line_messages)" in \
        " ".join(r.output.split())


def test_an_empty_dataset_name_is_refused_before_anything_is_written(tmp_path):
    """Second hostile-input audit (2026-11-28): `--dataset ""` was stored, then unreachable (an
    empty --dataset means "not given" in every command that reads)."""
    from replay.synth.generate import generate_corpus

    logs = tmp_path / "logs"
    generate_corpus(logs, sessions=1, seed=4)
    for name in ("", "  "):
        r = CliRunner().invoke(main, ["ingest", str(logs), "--db", str(tmp_path / "e.duckdb"), "--dataset", name])
        assert r.exit_code == 1 and "is empty; give --dataset a name" in r.output, r.output
        assert not (tmp_path / "e.duckdb").exists()


def test_a_stop_inside_duckdb_still_says_what_was_kept(tmp_path, monkeypatch):
    from replay.synth.generate import generate_corpus

    logs = tmp_path / "logs"
    generate_corpus(logs, sessions=2, seed=4)
    db = tmp_path / "x.duckdb"
    real = load.ingest

    def stopped(paths, db, **kw):
        real([sorted(p for p in logs.rglob("*.jsonl") if "subagents" not in p.parts)[0]], db, **kw)
        raise RuntimeError("Query interrupted")  # how DuckDB reports Ctrl-C inside a statement

    monkeypatch.setattr(load, "ingest", stopped)
    r = CliRunner().invoke(main, ["ingest", str(logs), "--db", str(db), "-q"])
    assert r.exit_code == 130 and "ingest stopped: 1 file version(s) were stored before it" in r.stderr, r.output
