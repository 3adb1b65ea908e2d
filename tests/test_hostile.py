"""Hostile input and hostile machines: damaged databases, missing paths, full disks, FIFOs,
devices, hostile key files and file names with markup or escape sequences.

Every case ends in one `error:` line (or a named skip) and the right exit status: never a
traceback, a hang, a table printed from a damaged file, a new key nobody asked for, or a
partial output under a final name.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from replay.cli import main
from replay.ingest.keys import KeyFileError, load_or_create_master_key

from cc_records import basic_session

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "datasets" / "sample" / "logs"
SPEC = ROOT / "examples" / "devboy_capacity.toml"
SUBPROCESS_TIMEOUT = 120


def run(*args, **kw):
    return CliRunner().invoke(main, [str(a) for a in args], **kw)


def one_error_line(r, *needles) -> str:
    """The result failed with exactly one `error:` line on stderr naming every needle, no traceback."""
    assert r.exit_code != 0, r.output
    assert isinstance(r.exception, SystemExit), repr(r.exception)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    for n in needles:
        assert str(n) in lines[0], (n, lines[0])
    assert "Traceback" not in r.output
    return lines[0]


def cli(*args, env=None, timeout=SUBPROCESS_TIMEOUT):
    """The real command in a subprocess (a hang is a failure, not a stuck test run)."""
    return subprocess.run([sys.executable, "-m", "replay.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})}, cwd=ROOT)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- a database with a dataset and a run, and damaged copies of it ---------------------

@pytest.fixture(scope="module")
def good_db(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("good")
    db = d / "good.duckdb"
    r = run("ingest", SAMPLE, "--db", db, "-q")
    assert r.exit_code == 0, r.output
    r = run("replay", "--db", db, "--policy", "noop")
    assert r.exit_code == 0, r.output
    return db


def damaged(good: Path, kind: str, where: Path) -> Path:
    data = good.read_bytes()
    out = where / f"{kind}.duckdb"
    if kind == "truncated":
        out.write_bytes(data[: len(data) // 2])
    elif kind == "garbage":
        mid = len(data) // 2
        junk = hashlib.shake_256(b"ctxreplay garbage").digest(256 * 1024)
        out.write_bytes(data[:mid] + junk + data[mid + len(junk):])
    else:
        out.write_bytes(b"this is not a database, just text\n" * 4000)
    return out


DB_COMMANDS = [
    ["sessions"], ["runs"], ["datasets"], ["validate"], ["compare"], ["replay", "--policy", "noop"],
    ["export", "--dataset", "default", "--out", "{tmp}/export"], ["report", "--out", "{tmp}/report"],
    ["tune", str(SPEC), "--trials", "1"], ["sweep", str(SPEC)], ["ingest", str(SAMPLE), "-q"], ["check"],
    ["whatif"],
]


@pytest.mark.parametrize("kind", ["truncated", "garbage", "foreign"])
def test_damaged_database_is_one_line_from_every_command(good_db, tmp_path, kind):
    db = damaged(good_db, kind, tmp_path)
    before = sha(db)
    for cmd in DB_COMMANDS:
        args = [a.replace("{tmp}", str(tmp_path)) for a in cmd]
        r = run(*args, "--db", db)
        line = one_error_line(r, db)
        assert r.stdout == "" or cmd == ["check"], (cmd, r.stdout)  # never a table from a damaged file
        assert ("not a DuckDB database" if kind == "foreign" else "is damaged") in line, (cmd, line)
    assert sha(db) == before, "no command may write to a damaged file"
    assert not (tmp_path / "export").exists() and not (tmp_path / "report").exists()


def test_truncated_database_as_real_processes(good_db, tmp_path):
    db = damaged(good_db, "truncated", tmp_path)
    for cmd in (["sessions"], ["validate"], ["runs"]):
        p = cli(*cmd, "--db", db)
        assert p.returncode != 0 and p.stdout == ""
        assert len(p.stderr.splitlines()) == 1 and p.stderr.startswith("error: "), p.stderr
        assert "Traceback" not in p.stderr and str(db) in p.stderr


def test_check_reads_every_table(good_db, tmp_path):
    r = run("check", "--help")
    assert r.exit_code == 0 and "whole" in r.output
    r = run("check", "--db", good_db, "--json")
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert res["whole"] and res["error"] is None and res["schema_version"] >= 1
    rows = {t["table"]: t["rows"] for t in res["tables"]}
    assert rows["sessions"] == 6 and rows["runs"] == 2 and rows["blocks"] > 1000  # one run per cache variant
    r = run("check", "--db", good_db)
    assert r.exit_code == 0 and "is whole" in r.stdout
    for kind in ("truncated", "garbage"):
        db = damaged(good_db, kind, tmp_path)
        r = run("check", "--db", db, "--json")
        assert r.exit_code == 1
        res = json.loads(r.stdout)
        assert not res["whole"] and str(db) in res["error"]
        assert any(t["error"] for t in res["tables"])
        r = run("check", "--db", db)
        one_error_line(r, db, "damaged")
    r = run("check", "--db", damaged(good_db, "foreign", tmp_path))
    one_error_line(r, "not a DuckDB database")


# --- a --db that does not exist is not a new database -----------------------------------

@pytest.mark.parametrize("cmd", [c for c in DB_COMMANDS if c[0] not in ("ingest",)], ids=lambda c: c[0])
def test_missing_database_is_an_error_not_a_new_file(tmp_path, cmd):
    db = tmp_path / "typo.duckdb"
    args = [a.replace("{tmp}", str(tmp_path)) for a in cmd]
    r = run(*args, "--db", db)
    one_error_line(r, db)
    assert not db.exists() and not Path(str(db) + ".wal").exists()


def test_ingest_creates_the_database(tmp_path):
    basic_session().write_jsonl(tmp_path / "logs" / "s.jsonl")
    db = tmp_path / "new.duckdb"
    r = run("ingest", tmp_path / "logs", "--db", db, "-q")
    assert r.exit_code == 0, r.output
    assert db.exists()


# --- outputs are written whole or not at all --------------------------------------------

def _disk_full(*_a, **_k):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/full/disk")


def test_export_is_written_under_temporary_names(good_db, tmp_path, monkeypatch):
    out = tmp_path / "pq"
    r = run("export", "--db", good_db, "--dataset", "default", "--out", out)
    assert r.exit_code == 0, r.output
    first = {p.name: sha(p) for p in out.iterdir()}
    assert set(first) == {"sessions.parquet", "streams.parquet", "requests.parquet", "blocks.parquet",
                          "compactions.parquet", "read_lines.parquet", "dataset.json"}
    # the disk fills up while the last file is written: nothing partial, the old export intact
    monkeypatch.setattr(Path, "write_text", _disk_full)
    r = run("export", "--db", good_db, "--dataset", "default", "--out", out)
    one_error_line(r, "no space left on device")
    assert {p.name: sha(p) for p in out.iterdir()} == first
    fresh = tmp_path / "fresh"
    r = run("export", "--db", good_db, "--dataset", "default", "--out", fresh)
    one_error_line(r, "no space left on device")
    assert list(fresh.iterdir()) == [], "a failed export leaves no file that looks complete"


def test_report_is_written_under_a_temporary_name(good_db, tmp_path, monkeypatch):
    import analysis.report

    out = tmp_path / "report"

    def crash(*_a, **_k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(out / "index.html"))

    with monkeypatch.context() as m:
        m.setattr(analysis.report, "_html", crash)
        r = run("report", "--db", good_db, "--out", out)
    one_error_line(r, "no space left on device")
    assert not out.exists() or list(out.rglob("*")) == [], list(out.rglob("*"))
    r = run("report", "--db", good_db, "--out", out)
    assert r.exit_code == 0, r.output
    names = {p.name for p in out.iterdir()}
    assert {"index.html", "report.md", "img"} <= names and not any(n.startswith(".report-tmp") for n in names)
    assert (out / "img" / "fidelity.png").exists()


# --- disk full and permissions: one line ------------------------------------------------

def test_disk_full_during_ingest_is_one_line_and_keeps_the_database(tmp_path, monkeypatch):
    import duckdb

    from replay import store

    logs = tmp_path / "logs"
    basic_session(session_id="s1").write_jsonl(logs / "a" / "s1.jsonl")
    db = tmp_path / "t.duckdb"
    assert run("ingest", logs / "a", "--db", db, "-q").exit_code == 0
    basic_session(session_id="s2").write_jsonl(logs / "b" / "s2.jsonl")
    for error in (OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(db)),
                  duckdb.IOException(f'IO Error: Could not write file "{db}.wal": No space left on device')):
        def full(*_a, _e=error, **_k):
            raise _e

        with monkeypatch.context() as m:
            m.setattr(store, "write_sessions", full)
            r = run("ingest", logs / "b", "--db", db, "-q")
        one_error_line(r, db, "no space left on device")
    r = run("sessions", "--db", db, "--json")
    assert r.exit_code == 0 and len(json.loads(r.stdout)) == 1
    assert run("check", "--db", db).exit_code == 0


def test_permission_error_is_one_line(good_db, tmp_path, monkeypatch):
    def denied(self, *a, **k):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))

    monkeypatch.setattr(Path, "mkdir", denied)
    r = run("export", "--db", good_db, "--dataset", "default", "--out", tmp_path / "locked")
    one_error_line(r, tmp_path / "locked", "permission denied")
    r = run("report", "--db", good_db, "--out", tmp_path / "locked")
    one_error_line(r, tmp_path / "locked", "permission denied")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root ignores folder permissions")
def test_unwritable_folder_is_one_line(good_db, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        r = run("export", "--db", good_db, "--dataset", "default", "--out", locked / "pq")
        one_error_line(r, "permission denied")
        r = run("ingest", SAMPLE, "--db", locked / "t.duckdb", "-q")
        one_error_line(r, "permission denied")
    finally:
        locked.chmod(0o700)


# --- FIFOs, devices and sockets are skipped by name, never opened ----------------------

@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_given_to_ingest_is_skipped_not_read(tmp_path):
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    p = cli("ingest", fifo, "--db", tmp_path / "t.duckdb", "-q")  # a read would block: the timeout fails it
    assert p.returncode == 1, p.stdout + p.stderr
    assert "pipe.jsonl: a named pipe (FIFO), not read" in p.stdout
    assert "Traceback" not in p.stderr
    p = cli("anonymize", fifo, tmp_path / "anon", "-q")
    assert p.returncode == 1 and "pipe.jsonl is not a regular file" in p.stderr, p.stderr
    assert not (tmp_path / "anon").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_and_socket_inside_a_folder_are_skipped_and_counted(tmp_path):
    import socket

    logs = tmp_path / "logs"
    basic_session().write_jsonl(logs / "good.jsonl")
    os.mkfifo(logs / "stuck.jsonl")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(logs / "agent.sock"))
    except OSError:  # path too long for AF_UNIX on some systems
        sock.close()
        sock = None
    try:
        p = cli("ingest", logs, "/dev/null", "--db", tmp_path / "t.duckdb", "--json")
    finally:
        if sock is not None:
            sock.close()
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert s["sessions"] == 1 and s["failed"] == []
    skipped = {Path(f["file"]).name: f["reason"] for f in s["skipped_files"]}
    assert skipped["stuck.jsonl"] == "a named pipe (FIFO), not read"
    assert skipped["null"] == "a character device, not read"
    if sock is not None:
        assert skipped["agent.sock"] == "a socket, not read"


def test_ingest_of_only_failed_files_exits_nonzero(tmp_path):
    logs = tmp_path / "binary"
    logs.mkdir()
    for i in range(3):
        (logs / f"b{i}.jsonl").write_bytes(bytes(range(256)) * 40)
    r = run("ingest", logs, "--db", tmp_path / "t.duckdb")
    assert r.exit_code == 1, r.output
    assert "3 failed" in r.stdout and "Traceback" not in r.output
    basic_session().write_jsonl(logs / "good.jsonl")
    r = run("ingest", logs, "--db", tmp_path / "t.duckdb", "-q")
    assert r.exit_code == 0, r.output  # one bad file never stops the others


# --- key files ------------------------------------------------------------------------------

def test_named_key_file_that_does_not_exist_is_an_error(tmp_path, monkeypatch):
    basic_session().write_jsonl(tmp_path / "logs" / "s.jsonl")
    typo = tmp_path / "tpyo.key"
    r = run("ingest", tmp_path / "logs", "--db", tmp_path / "t.duckdb", "--key-file", typo, "-q")
    one_error_line(r, typo, "does not exist")
    assert not typo.exists() and not (tmp_path / "t.duckdb").exists()
    r = run("anonymize", tmp_path / "logs", tmp_path / "anon", "--key-file", typo, "-q")
    one_error_line(r, typo, "does not exist")
    assert not typo.exists() and not (tmp_path / "anon").exists()
    monkeypatch.setenv("CTXREPLAY_KEY_FILE", str(typo))
    r = run("ingest", tmp_path / "logs", "--db", tmp_path / "t.duckdb", "-q")
    one_error_line(r, typo, "CTXREPLAY_KEY_FILE")
    assert not typo.exists()


def test_default_key_is_created_on_first_use(tmp_path, monkeypatch):
    basic_session().write_jsonl(tmp_path / "logs" / "s.jsonl")
    monkeypatch.delenv("CTXREPLAY_KEY_FILE")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    r = run("ingest", tmp_path / "logs", "--db", tmp_path / "t.duckdb", "-q")
    assert r.exit_code == 0, r.output
    key = tmp_path / "config" / "ctxreplay" / "key"
    assert key.exists() and stat.S_IMODE(key.stat().st_mode) == 0o600


def test_key_files_that_are_not_keys_are_refused(tmp_path):
    big = tmp_path / "big.key"
    big.write_text("ab" * 1_000_000)
    with pytest.raises(KeyFileError, match="too many"):
        load_or_create_master_key(big)
    with pytest.raises(KeyFileError, match="character device"):
        load_or_create_master_key(Path("/dev/zero"))
    with pytest.raises(KeyFileError, match="directory"):
        load_or_create_master_key(tmp_path)
    basic_session().write_jsonl(tmp_path / "logs" / "s.jsonl")
    for bad in (big, "/dev/zero"):
        r = run("ingest", tmp_path / "logs", "--db", tmp_path / "t.duckdb", "--key-file", bad, "-q")
        one_error_line(r, bad)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_key_file_does_not_hang(tmp_path):
    fifo = tmp_path / "key.fifo"
    os.mkfifo(fifo)
    with pytest.raises(KeyFileError, match="named pipe"):
        load_or_create_master_key(fifo)
    basic_session().write_jsonl(tmp_path / "logs" / "s.jsonl")
    for args, env in (([fifo], None), ([], {"CTXREPLAY_KEY_FILE": str(fifo)})):
        extra = ["--key-file", *args] if args else []
        p = cli("ingest", tmp_path / "logs", "--db", tmp_path / "t.duckdb", *extra, "-q", env=env, timeout=60)
        assert p.returncode == 1 and "named pipe" in p.stderr and "Traceback" not in p.stderr, p.stderr


# --- names with markup and escape sequences ---------------------------------------------

HOSTILE = "x[/x]y[bold]z\x1b[31mred"


def test_markup_and_escapes_in_file_names_are_shown_literally(tmp_path):
    logs = tmp_path / f"logs{HOSTILE}"
    basic_session().write_jsonl(logs / f"good{HOSTILE}.jsonl")
    bad = logs / f"bad{HOSTILE}.jsonl"  # "[/x]" spans a folder "badx[" and a file "x]y[bold]..."
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"\x00\xff" * 100)
    db = tmp_path / f"db{HOSTILE}.duckdb"
    r = run("ingest", logs, "--db", db, "--dataset", "[bold]d[/x]")
    one_error_line(r, "folder", "does not exist")  # the folder "dbx[" of the database is missing
    db.parent.mkdir()
    r = run("ingest", logs, "--db", db, "--dataset", "[bold]d[/x]")
    assert r.exit_code == 0, r.output
    assert "\x1b" not in r.output, "an escape sequence reached the terminal raw"
    assert "bad" + "x[/x]y[bold]z\\x1b[31mred" + ".jsonl" in r.stdout
    assert "[bold]d[/x]" in r.stdout
    r = run("sessions", "--db", db, "--dataset", "[bold]nope[/x]")
    one_error_line(r, "no dataset '[bold]nope[/x]'")
    r = run("datasets", "--db", db, env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "[bold]d[/x]" in r.stdout, r.stdout
    missing = tmp_path / f"no{HOSTILE}.duckdb"
    r = run("sessions", "--db", missing)
    line = one_error_line(r, "x[/x]y[bold]z\\x1b[31mred")
    assert "\x1b" not in line


def test_progress_shows_hostile_names_without_markup():
    from rich.console import Console

    from replay.cli.common import byte_progress, clean

    buf = io.StringIO()
    progress = byte_progress("ingest", disable=False, console=Console(file=buf, force_terminal=True, width=120))
    with progress:
        task = progress.add_task(clean(HOSTILE), total=10)
        progress.update(task, advance=5)
        progress.refresh()
    assert "x[/x]y[bold]z" in buf.getvalue()


def test_tune_hint_shows_the_extra_literally(good_db, tmp_path, monkeypatch):
    db = tmp_path / "t.duckdb"
    shutil.copy(good_db, db)
    monkeypatch.setitem(sys.modules, "optuna", None)  # as if the extra were not installed
    r = run("tune", SPEC, "--db", db, "--trials", "1")
    one_error_line(r, "pip install 'ctxreplay[tune]'")
