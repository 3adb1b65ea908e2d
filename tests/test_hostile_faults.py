"""Hostile input, second round (issue 27): every fault ends in one `error:` or `warning:` line
naming the file or path, a non-zero exit where the command did not do its job, and nothing lost.

Inputs are synthetic (tests/cc_records.py); nothing here reads the shared corpus.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from replay.store.load import ingest

from cc_records import Transcript, text, usage
from test_hostile import ROOT, cli, one_error_line, run, sha
from test_ingest import q


def _session(session_id: str, n: int = 3, model: str = "claude-sonnet-4-5", prefix: str | None = None,
             words: str = "answer") -> Transcript:
    t = Transcript(session_id=session_id)
    t.user("hello there")
    for i in range(n):
        t.assistant(f"{prefix or session_id}-m{i}", [text(f"{words} {i}")],
                    usage(inp=10 + i, write=100, read=100 * i, out=5), model=model, final_output=5)
        t.user(f"more {i}")
    return t


# --- --db that is not a DuckDB file ----------------------------------------------------------------

@pytest.mark.parametrize("name,content", [("old.jsonl", None), ("data.csv", b"a,b\n1,2\n"),
                                          ("t.parquet", b"PAR1" + b"\0" * 64 + b"PAR1")])
def test_a_db_that_is_not_duckdb_is_refused_before_any_log_is_read(tmp_path, name, content, monkeypatch):
    from replay.store import load

    logs = tmp_path / "logs"
    _session("s1").write_jsonl(logs / "s1.jsonl")
    db = tmp_path / name
    if content is None:
        _session("s0").write_jsonl(db)
    else:
        db.write_bytes(content)
    before = sha(db)
    opened = []
    monkeypatch.setattr(load, "discover", lambda *a, **k: opened.append(a) or [])
    r = run("ingest", logs, "--db", db, "-q")
    one_error_line(r, str(db), "not a DuckDB database")
    assert opened == [] and sha(db) == before
    one_error_line(run("sessions", "--db", db), "not a DuckDB database")
