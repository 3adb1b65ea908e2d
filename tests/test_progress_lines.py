"""Progress of long ingests (issue 38): without a terminal (a pipe, a file, CI), the zero-config
ingest and `ctxreplay ingest` print plain lines on stderr (where from, every
$CTXREPLAY_PROGRESS_SECONDS, done), never on stdout, never Rich's live bar; -q silences them;
on a terminal the bar stays."""

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from replay.cli import main
from replay.cli.console import ingest_progress

ROOT = Path(__file__).resolve().parents[1]
START = re.compile(r"^ingest: [\d.,]+ MB of logs from ~/\.claude/projects into .+ctxreplay\.duckdb$", re.M)
STEP = re.compile(r"^ingest: \d+% \([\d.,]+ of [\d.,]+ MB\) after [\d.]+ s$", re.M)
DONE = re.compile(r"^ingest: done in [\d.]+ s$", re.M)
ESC = "\x1b"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    from replay.synth.generate import generate_corpus

    d = tmp_path_factory.mktemp("corpus") / "logs"
    generate_corpus(d, sessions=3, seed=1)
    return d


@pytest.fixture
def home(tmp_path, monkeypatch, corpus) -> Path:
    """A fresh machine's HOME holding Claude Code logs (no database yet); a line per file read."""
    h = tmp_path / "home"
    shutil.copytree(corpus, h / ".claude" / "projects" / "p")
    monkeypatch.setenv("HOME", str(h))
    for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "CTXREPLAY_DB", "FORCE_COLOR",
                "TTY_COMPATIBLE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CTXREPLAY_PROGRESS_SECONDS", "0")
    return h


def run(*args):
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r


def assert_progress(stderr: str) -> None:
    assert len(START.findall(stderr)) == 1, stderr
    assert STEP.search(stderr), stderr
    assert len(DONE.findall(stderr)) == 1, stderr
    lines = stderr.splitlines()
    start = next(i for i, x in enumerate(lines) if START.match(x))
    done = next(i for i, x in enumerate(lines) if DONE.match(x))
    assert start < done and all(STEP.match(x) for x in lines[start + 1:done]), stderr
    assert ESC not in stderr and "\r" not in stderr, repr(stderr)


def test_the_first_zero_config_ingest_prints_plain_lines_on_stderr_only(home):
    r = run("usage", "--by", "day")
    assert_progress(r.stderr)
    assert r.stderr.splitlines()[-1].startswith("ingested 3 new or grown file(s) (3 sessions, ")
    assert "ingest:" not in r.stdout and "Recorded usage" in r.stdout


def test_the_daily_path_stays_silent(home, monkeypatch):
    run("usage")
    monkeypatch.setenv("CTXREPLAY_PROGRESS_SECONDS", "3600")  # an unchanged tree is checked in less
    r = run("usage", "--by", "day")
    assert "ingest" not in r.stderr


def test_quiet_and_json_silence_the_automatic_ingest(home):
    r = run("usage", "-q")
    assert "ingest" not in r.stderr and "Recorded usage" in r.stdout
    shutil.rmtree(home / ".local")
    r = run("sessions", "--quiet")
    assert "ingest" not in r.stderr
    shutil.rmtree(home / ".local")
    r = run("usage", "--json")
    assert json.loads(r.stdout)["totals"]["requests"] > 0
    assert "ingest" not in r.stderr


def test_the_ingest_command_prints_the_same_lines(home, tmp_path):
    logs = home / ".claude" / "projects"
    r = run("ingest", logs, "--db", tmp_path / "x.duckdb")
    start = f"ingest: {{}} MB of logs from {logs} into {tmp_path / 'x.duckdb'}"
    assert any(re.fullmatch(re.escape(start).replace(r"\{\}", r"[\d.,]+"), x) for x in r.stderr.splitlines()), r.stderr
    assert STEP.search(r.stderr) and DONE.search(r.stderr) and ESC not in r.stderr
    assert "ingest:" not in r.stdout and "3 ingested" in r.stdout
    r = run("ingest", logs, "--db", tmp_path / "y.duckdb", "-q")
    assert r.stderr == "" and "3 ingested" in r.stdout
    r = run("ingest", logs, "--db", tmp_path / "z.duckdb", "--json")
    assert r.stderr == "" and json.loads(r.stdout)["ingested"] == 3


def _subprocess(home: Path, *args, **env):
    base = {k: v for k, v in os.environ.items()
            if k not in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "CTXREPLAY_DB",
                         "FORCE_COLOR", "TTY_COMPATIBLE")}
    p = subprocess.run([sys.executable, "-m", "replay.cli", *map(str, args)], capture_output=True, text=True,
                       env={**base, "HOME": str(home), "CTXREPLAY_PROGRESS_SECONDS": "0", **env}, cwd=home,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    return p


def test_a_piped_first_run_prints_lines_not_a_bar_even_with_force_color(home):
    """stderr piped (as `2>log` or CI): lines; $FORCE_COLOR colours text, it does not make the
    pipe a terminal a live bar could be drawn on."""
    p = _subprocess(home, "usage", "--by", "day", FORCE_COLOR="1")
    assert_progress(p.stderr)
    assert "ingest:" not in p.stdout
    shutil.rmtree(home / ".local")
    p = _subprocess(home, "usage", "--json", "-q")
    assert p.stderr == "" and json.loads(p.stdout)["totals"]["requests"] > 0


def test_the_ingest_command_as_a_subprocess(home, tmp_path):
    p = _subprocess(home, "ingest", home / ".claude" / "projects", "--db", tmp_path / "x.duckdb")
    assert STEP.search(p.stderr) and DONE.search(p.stderr) and ESC not in p.stderr
    assert "ingest:" not in p.stdout and "3 ingested" in p.stdout
    p = _subprocess(home, "ingest", home / ".claude" / "projects", "--db", tmp_path / "y.duckdb", "--quiet")
    assert p.stderr == ""


class _Tty(io.StringIO):
    def isatty(self):
        return True


def _lines(seconds: str, monkeypatch, eager=True, sizes=(40_000_000, 60_000_000)) -> list[str]:
    monkeypatch.setenv("CTXREPLAY_PROGRESS_SECONDS", seconds)
    buf = io.StringIO()
    with ingest_progress("ingest", False, "from a into b", eager=eager, console=Console(file=buf)) as p:
        p.total(sum(sizes))
        for i, n in enumerate(sizes):
            p.advance(n, f"s{i}.jsonl")
    return buf.getvalue().splitlines()


def test_a_line_per_interval_and_a_lazy_start(monkeypatch):
    lines = _lines("0", monkeypatch)  # a line per update
    assert lines[0] == "ingest: 100.0 MB of logs from a into b" and len(lines) == 4
    assert lines[1].startswith("ingest: 40% (40.0 of 100.0 MB) after ") and STEP.match(lines[1])
    assert lines[2].startswith("ingest: 100% (100.0 of 100.0 MB) after ") and DONE.match(lines[3])
    slow = _lines("3600", monkeypatch)  # nothing between the first and the last line
    assert len(slow) == 2 and slow[0] == "ingest: 100.0 MB of logs from a into b" and DONE.match(slow[1])
    assert _lines("3600", monkeypatch, eager=False) == []  # an update quicker than the interval says nothing
    assert len(_lines("0", monkeypatch, eager=False)) == 4
    assert len(_lines("nonsense", monkeypatch)) == 2  # not a number: the default, 2 s


def test_a_terminal_keeps_the_bar_and_quiet_prints_nothing(monkeypatch):
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    tty = Console(file=_Tty(), force_terminal=True, width=100)
    with ingest_progress("ingest", False, "from a into b", console=tty) as p:
        p.total(100)
        p.advance(100, "s0.jsonl")
    assert "\x1b[" in tty.file.getvalue() and "of logs" not in tty.file.getvalue()
    forced = Console(file=io.StringIO(), force_terminal=True)  # as $FORCE_COLOR into a pipe: lines
    with ingest_progress("ingest", False, "from a into b", console=forced) as p:
        p.total(100)
    assert forced.file.getvalue().startswith("ingest: 0.0 MB of logs from a into b")
    for console in (tty, Console(file=io.StringIO())):
        console.file.seek(0)
        console.file.truncate()
        with ingest_progress("ingest", True, "from a into b", console=console) as p:
            p.total(100)
            p.advance(100, "s0.jsonl")
        assert console.file.getvalue() == ""


def test_an_error_ends_without_the_done_line(monkeypatch):
    monkeypatch.setenv("CTXREPLAY_PROGRESS_SECONDS", "0")
    buf = io.StringIO()
    with pytest.raises(OSError):
        with ingest_progress("ingest", False, "from a into b", console=Console(file=buf)) as p:
            p.total(10)
            raise OSError("disk full")
    assert buf.getvalue().splitlines() == ["ingest: 0.0 MB of logs from a into b"]


def test_the_makefile_says_what_each_long_step_does():
    make = (ROOT / "Makefile").read_text()
    install = make[make.index("\ninstall:"):make.index("\ninstall-dev:")]
    assert "@echo" in install and " -q " not in install.replace("compileall -q", "")
    venv = make[make.index("$(BIN)/python:"):make.index("\ninstall:")]
    assert "@echo" in venv and "pip install -q" not in venv


def test_anonymize_prints_plain_progress_lines_into_a_pipe(corpus, tmp_path, monkeypatch):
    """Newcomer's hour (2026-11-28): `anonymize` into a pipe was silent for 23 s; it now prints
    what `ingest` prints there (Rich's bar stays for a terminal), and nothing with -q."""
    monkeypatch.setenv("CTXREPLAY_PROGRESS_SECONDS", "0")
    monkeypatch.setenv("CTXREPLAY_KEY_FILE", str(tmp_path / "key"))
    (tmp_path / "key").write_text(os.urandom(32).hex())
    (tmp_path / "key").chmod(0o600)
    r = run("anonymize", corpus, tmp_path / "out")
    err = r.stderr
    assert re.search(rf"^anonymize: [\d.,]+ MB of logs from {re.escape(str(corpus))}, anonymized into "
                     rf"{re.escape(str(tmp_path / 'out'))}$", err, re.M), err
    assert re.search(r"^anonymize: \d+% \([\d.,]+ of [\d.,]+ MB\) after [\d.]+ s$", err, re.M), err
    assert re.search(r"^anonymize: done in [\d.]+ s$", err, re.M) and ESC not in err, err
    assert "anonymize:" not in r.stdout
    r = run("anonymize", corpus, tmp_path / "out2", "-q")
    assert "anonymize:" not in r.stderr


def test_anonymize_names_blocks_whose_count_it_could_not_keep_without_blaming_paths(tmp_path, monkeypatch):
    """Second hostile-input audit (2026-11-28): with the default --path-style words the summary said
    "blocks carrying a path have more tokens ...; --path-style words keeps every count exact" (the
    style in use) for Read results of numbered source lines whose fillers did not fit."""
    src = ['package gitsync', '', 'import (', '\t"bytes"', '\t"context"', '\t"net/http/httptest"', ')', '',
           'func TestSync(t *testing.T) {', '\tctx := context.Background()', '\tif err := run(ctx); err != nil {',
           '\t\tt.Fatalf("sync: %v", err)', '\t}', '}']
    recs = [{"type": "user", "message": {"role": "user", "content": "look at the tests"}}]
    for i in range(12):
        body = "\n".join(f"{k + 1}\t{line}" for k, line in enumerate(src[i % 3:] + [f"// file {i}"]))
        recs += [{"type": "assistant", "requestId": f"req_{i}", "message": {
                     "id": f"msg_{i}", "role": "assistant", "model": "claude-sonnet-4-6",
                     "content": [{"type": "tool_use", "id": f"toolu_{i}", "name": "Read",
                                  "input": {"file_path": f"/home/alice/acme/pkg{i}/sync_test.go"}}],
                     "usage": {"input_tokens": 5, "output_tokens": 5}}},
                 {"type": "user", "message": {"role": "user", "content": [
                     {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": body}]}}]
    for n, r in enumerate(recs):
        r.update(sessionId="s1", uuid=f"u{n}", parentUuid=f"u{n - 1}" if n else None, cwd="/home/alice/acme",
                 timestamp=f"2026-06-01T10:{n // 60:02d}:{n % 60:02d}.000Z", version="2.1.100")
    src_dir = tmp_path / "in"
    src_dir.mkdir()
    (src_dir / "s1.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    monkeypatch.setenv("CTXREPLAY_KEY_FILE", str(tmp_path / "key"))
    (tmp_path / "key").write_text("ab" * 32)  # a fixed key: the fillers, and so the misfits, are the same each run
    (tmp_path / "key").chmod(0o600)
    got = json.loads(run("anonymize", src_dir, tmp_path / "out", "--json").stdout)
    r = run("anonymize", src_dir, tmp_path / "out2", "-q")
    text = " ".join(r.output.split())
    assert "--path-style words keeps" not in text and "carrying a path" not in text
    assert got["blocks_token_mismatch"] > 0  # what the summary says is what the JSON counts
    assert (f"{got['blocks_token_mismatch']:,} of {got['blocks_checked']:,} context blocks differ from their raw "
            "token count by a few tokens") in text
