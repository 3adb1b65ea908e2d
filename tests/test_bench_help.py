"""Every bench script answers ``--help`` with its usage and exit 0, without doing its work
(issue 38: `bench/autocompact_trigger.py --help` once took ``--help`` for a log folder)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
SCRIPTS = sorted(p for p in BENCH.glob("*.py") if not p.name.startswith("_"))  # _x.py: shared, not a script


def test_there_are_bench_scripts():
    assert len(SCRIPTS) >= 10


def test_every_bench_script_answers_help(tmp_path):
    # all at once (each is a fresh interpreter): the whole check costs about the slowest one
    procs = {p.name: subprocess.Popen([sys.executable, str(p), "--help"], cwd=tmp_path, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
             for p in SCRIPTS}
    bad = []
    for name, proc in procs.items():
        try:
            out, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            bad.append(f"{name}: no answer within 120 s")
            continue
        if proc.returncode != 0 or not out.startswith("usage:"):
            bad.append(f"{name}: exit {proc.returncode}, stdout {out[:80]!r}, stderr {err[-300:]!r}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("script", ["autocompact_trigger.py", "read_verify.py", "figures.py", "fidelity_cv.py",
                                    "model_evidence.py"])
def test_a_missing_corpus_is_a_usage_error(script, tmp_path):
    """Corpus paths are arguments: one that is not there is refused before any work (exit 2)."""
    p = subprocess.run([sys.executable, str(BENCH / script), str(tmp_path / "missing")], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert "missing" in p.stderr


def test_sweep_bench_exit_status(tmp_path):
    """bench/sweep.py exits 0 when every result is stored; its wall-time budget fails it only with --strict."""
    cmd = [sys.executable, str(BENCH / "sweep.py"), "--sessions", "3", "--jobs", "1", "--cache", str(tmp_path / "c")]
    env = {**os.environ, "CTXREPLAY_KEY_FILE": str(tmp_path / "key")}
    p = subprocess.run([*cmd, "--budget", "0", "--strict"], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "stored: 101 of 101 configurations finished, 303 session results" in p.stdout
    assert "budget 0 s: over" in p.stdout
    assert not list((tmp_path / "c").glob("*.part.*"))
    p = subprocess.run([*cmd, "--budget", "0"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "generated" not in p.stdout  # the cached corpus is reused
