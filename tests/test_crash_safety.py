"""kill -9 during an ingest: the database holds whole sessions or none, and a re-run completes it."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb

from replay.store.load import ingest

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "sample" / "logs"


def _state(db: Path):
    con = duckdb.connect(str(db), read_only=True)
    try:
        sessions = con.execute("SELECT session_key, n_blocks, n_requests FROM sessions ORDER BY 1").fetchall()
        blocks = dict(con.execute("SELECT session_key, count(*) FROM blocks GROUP BY 1").fetchall())
        reqs = dict(con.execute("SELECT session_key, count(*) FROM requests GROUP BY 1").fetchall())
        files = con.execute("SELECT count(*) FROM source_files").fetchone()[0]
        totals = con.execute("SELECT count(*), sum(tokens), sum(bytes) FROM blocks").fetchone()
    finally:
        con.close()
    return sessions, blocks, reqs, files, totals


def test_kill_during_ingest_leaves_whole_sessions_and_rerun_completes(tmp_path):
    key = tmp_path / "key"
    ref = tmp_path / "ref.duckdb"
    ingest([SAMPLE], ref, key_file=key)
    db = tmp_path / "k.duckdb"
    trace = tmp_path / "trace.txt"
    env = {**os.environ, "CTXREPLAY_KEY_FILE": str(key), "CTXREPLAY_INGEST_SLOW_MS": "400",
           "CTXREPLAY_INGEST_BATCH_BLOCKS": "1", "CTXREPLAY_INGEST_TRACE": str(trace)}
    cmd = [sys.executable, "-m", "replay.cli", "ingest", str(SAMPLE), "--db", str(db), "-q"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
        if trace.exists() and len(trace.read_text().splitlines()) >= 2:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    sessions, blocks, reqs, files, _ = _state(db)
    assert 0 < len(sessions) < 6, "the kill must land midway"
    for key_, n_blocks, n_requests in sessions:
        assert blocks.get(key_, 0) == n_blocks and reqs.get(key_, 0) == n_requests
    assert files == len(sessions)
    r = subprocess.run(cmd, env={**os.environ, "CTXREPLAY_KEY_FILE": str(key)}, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert _state(db) == _state(ref)
