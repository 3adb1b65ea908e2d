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
