"""`ingest --jobs N` reads in worker processes and writes the same database as `--jobs 1`."""

import json
import shutil
from pathlib import Path

import duckdb
from click.testing import CliRunner

from replay.cli import main as cli, sample_logs_dir
from replay.ingest.keys import load_or_create_master_key
from replay.store.load import ingest

from cc_records import Transcript, basic_session, text, usage
from conftest import shared_logs

# written when the row is, not read from the logs
# stat_sig depends on when a file was last written (a file written under 2 s ago gets none)
VOLATILE = {"created_at", "ingested_at", "applied_at", "started_at", "finished_at", "stat_sig"}


def _tables(db: Path) -> dict[str, list]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        out = {}
        for (t,) in con.execute("SELECT table_name FROM information_schema.tables ORDER BY 1").fetchall():
            cols = [c for (c,) in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
                [t]).fetchall() if c not in VOLATILE]
            sel = ", ".join(f'"{c}"' for c in cols)
            rows = con.execute(f'SELECT {sel} FROM "{t}"').fetchall()
            out[t] = (cols, sorted(rows, key=repr))
        return out
    finally:
        con.close()


def _corpus(root: Path) -> Path:
    """The demo sample, synthetic sessions (a subagent, a byte copy, a shorter copy, a bad file), a few shared logs."""
    proj = root / "logs"
    shutil.copytree(sample_logs_dir(), proj / "sample")
    basic_session().write_jsonl(proj / "a" / "s1.jsonl")
    sub = Transcript(session_id="sess-1", sidechain=True, agent_id="x1")
    sub.user("sub task")
    sub.assistant("m_sub", [text("done")], usage(write=10))
    sub.write_jsonl(proj / "a" / "s1" / "subagents" / "agent-x1.jsonl")
    (proj / "b").mkdir(parents=True)
    shutil.copy(proj / "a" / "s1.jsonl", proj / "b" / "s1.jsonl")  # a copy without the subagent file
    long = Transcript(session_id="grown")
    for i in range(4):
        long.user(f"turn {i}")
        long.assistant(f"m{i}", [text(f"answer {i}")], usage(write=10, read=10 * i))
    long.write_jsonl(proj / "c" / "long.jsonl")
    lines = (proj / "c" / "long.jsonl").read_text().splitlines(keepends=True)
    (proj / "c" / "short.jsonl").write_text("".join(lines[:4]))  # a prefix copy of the same session
    shutil.copy(proj / "c" / "long.jsonl", proj / "b" / "long.jsonl")  # byte-identical: not read
    (proj / "d").mkdir()
    (proj / "d" / "bad.jsonl").write_text('{"type": "user", "message": \n not json\n')
    for sub_dir, n in (("claude-code", 4), ("entire-cli", 3), ("codex", 2)):
        for f in sorted(p for p in shared_logs(sub_dir).iterdir() if p.suffix in (".jsonl", ".json"))[:n]:
            shutil.copy(f, proj / f"shared-{f.name}")
    return proj


def test_jobs_2_writes_what_jobs_1_writes(tmp_path):
    logs = _corpus(tmp_path)
    master = load_or_create_master_key(tmp_path / "key")
    summaries = {}
    for jobs in (1, 2):
        s = ingest([logs], tmp_path / f"j{jobs}.duckdb", master_key=master, jobs=jobs, batch_blocks=50)
        d = s.as_dict()
        d.pop("seconds")
        summaries[jobs] = d
    one, two = summaries[1], summaries[2]
    assert one == two
    assert one["duplicates"] == 1 and len(one["duplicate_sessions"]) >= 2 and one["ingested"] >= 15
    assert str(logs / "d" / "bad.jsonl") in [f["file"] for f in one["failed"]]  # fails alone, in both
    t1, t2 = _tables(tmp_path / "j1.duckdb"), _tables(tmp_path / "j2.duckdb")
    assert t1.keys() == t2.keys()
    for name in t1:
        assert t1[name] == t2[name], name
    assert t1["blocks"][1] and t1["sessions"][1]
    # a re-run in parallel finds everything unchanged
    again = ingest([logs], tmp_path / "j2.duckdb", master_key=master, jobs=2)
    assert (again.ingested, again.sessions, again.failed) == (0, 0, s.failed) and again.unchanged >= one["ingested"]


def test_cli_jobs_option(tmp_path, monkeypatch):
    logs = tmp_path / "logs"
    basic_session().write_jsonl(logs / "s1.jsonl")
    Transcript(session_id="other").write_jsonl(logs / "s2.jsonl")
    (logs / "bad.jsonl").write_text("not json\n")
    load_or_create_master_key(tmp_path / "key")
    monkeypatch.setenv("CTXREPLAY_KEY_FILE", str(tmp_path / "key"))
    runner = CliRunner()
    outs = []
    for jobs in ("1", "2"):
        r = runner.invoke(cli, ["ingest", str(logs), "--db", str(tmp_path / f"c{jobs}.duckdb"), "--jobs", jobs, "-j"])
        assert r.exit_code == 0, r.output
        d = json.loads(r.output)
        d.pop("seconds")
        outs.append(d)
    assert outs[0] == outs[1] and outs[0]["sessions"] == 1
    r = runner.invoke(cli, ["ingest", str(logs), "--db", str(tmp_path / "c0.duckdb"), "--jobs", "0"])
    assert r.exit_code == 2


def test_workers_start_before_the_database_and_clean_up(tmp_path):
    """Workers start at once; a database that cannot be opened stops them and removes their temporary file."""
    import multiprocessing

    import pytest

    from replay.ingest.keys import Keyring
    from replay.store import StoreError
    from replay.store.load_parallel import Workers, _known

    def started_here():
        # an earlier test in this process (a joblib sweep under pytest-xdist) may keep its reusable
        # workers alive: only the children started since this test began count
        return [p for p in multiprocessing.active_children() if p.pid not in before]

    before = {p.pid for p in multiprocessing.active_children()}
    keys = Keyring.for_dataset(load_or_create_master_key(tmp_path / "key"), "default")
    w = Workers(keys, "default", 2)
    try:
        w.set_known({"a" * 64, "b" * 64})  # the content hashes stored when the ingest began reach every worker
        assert w.ex.submit(_known).result() == {"a" * 64, "b" * 64}
    finally:
        w.close(ok=True)
    assert not Path(w.known_path).exists() and not started_here()
    logs = tmp_path / "logs"
    basic_session().write_jsonl(logs / "s1.jsonl")
    Transcript(session_id="other").write_jsonl(logs / "s2.jsonl")
    (tmp_path / "dir.duckdb").mkdir()
    with pytest.raises(StoreError):
        ingest([logs], tmp_path / "dir.duckdb", key_file=tmp_path / "key", jobs=2)
    assert not started_here()


def test_start_method_forks_only_without_other_threads():
    import sys
    import threading

    from replay.store.load_parallel import start_method

    expected = "fork" if sys.platform.startswith("linux") and threading.active_count() == 1 else "spawn"
    assert start_method() == expected
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert start_method() == "spawn"  # a lock another thread holds would stay held in a forked worker
    finally:
        stop.set()
        t.join()


def test_spawned_workers_and_byte_copies_of_stored_files(tmp_path, monkeypatch):
    """Spawned workers (a thread running) write the same; a byte copy of a stored file is counted, not stored."""
    import threading

    logs = tmp_path / "logs"
    basic_session().write_jsonl(logs / "s1.jsonl")
    long = Transcript(session_id="grown")
    for i in range(3):
        long.user(f"turn {i}")
        long.assistant(f"m{i}", [text(f"answer {i}")], usage(write=10, read=10 * i))
    long.write_jsonl(logs / "long.jsonl")
    master = load_or_create_master_key(tmp_path / "key")
    first = ingest([logs], tmp_path / "j1.duckdb", master_key=master, jobs=1)
    shutil.copy(logs / "long.jsonl", logs / "copy.jsonl")
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        again = ingest([logs], tmp_path / "j1.duckdb", master_key=master, jobs=2)
    finally:
        stop.set()
        t.join()
    assert (again.duplicates, again.unchanged, again.ingested, again.failed) == (1, 2, 0, [])
    one = ingest([logs], tmp_path / "k1.duckdb", master_key=master, jobs=1).as_dict()
    two = ingest([logs], tmp_path / "k2.duckdb", master_key=master, jobs=2).as_dict()
    one.pop("seconds"), two.pop("seconds")
    assert one == two and first.sessions == 2
    assert _tables(tmp_path / "k1.duckdb") == _tables(tmp_path / "k2.duckdb")


def _planted_in_workers(tmp_path, monkeypatch, n: int, planted: str, fault) -> tuple[dict, dict]:
    """Ingest n small logs with --jobs 1, then with --jobs 2 where the forked workers' parse runs
    ``fault()`` on the file named ``planted``: the two summaries (without their times)."""
    import pytest

    from replay.store import load_parallel

    if "fork" not in __import__("multiprocessing").get_all_start_methods():
        pytest.skip("the failure is planted in forked workers; this platform cannot fork")
    # earlier tests may leave a Python thread running (a joblib executor), which makes the pool
    # fall back to fresh processes; the planted failure needs forked workers
    monkeypatch.setattr(load_parallel, "start_method", lambda: "fork")
    monkeypatch.setattr(load_parallel, "EARLY_BYTES", 0)  # every file is read by a worker
    logs = tmp_path / "logs"
    for i in range(n):
        t = Transcript(session_id=f"s{i}")
        t.user(f"task {i}")
        t.assistant(f"m{i}", [text(f"answer {i}")], usage(write=10))
        t.write_jsonl(logs / f"s{i:02d}.jsonl")
    master = load_or_create_master_key(tmp_path / "key")
    one = ingest([logs], tmp_path / "j1.duckdb", master_key=master, jobs=1).as_dict()
    parse = load_parallel.parse_unit

    def planted_parse(unit, *a):
        if unit.main.name == planted:
            fault()
        return parse(unit, *a)

    monkeypatch.setattr(load_parallel, "parse_unit", planted_parse)  # inherited by the forked workers only
    two = ingest([logs], tmp_path / "j2.duckdb", master_key=master, jobs=2).as_dict()
    one.pop("seconds"), two.pop("seconds")
    return one, two


def test_a_dead_worker_hands_its_files_back(tmp_path, monkeypatch):
    """A worker that dies mid-run: its file and the rest are read by the writer; the result is unchanged."""
    import os

    one, two = _planted_in_workers(tmp_path, monkeypatch, 12, "s05.jsonl", lambda: os._exit(1))
    assert one == two and two["sessions"] == 12 and not two["failed"]
    assert _tables(tmp_path / "j1.duckdb") == _tables(tmp_path / "j2.duckdb")


def test_results_are_taken_in_file_order_a_bounded_window_ahead(tmp_path):
    from replay.store.load_parallel import WINDOW_BYTES, WINDOW_FILES, full

    assert not full(3, 10 * WINDOW_BYTES, 2)  # at least two files per worker, however large
    assert full(4, 2 * WINDOW_BYTES, 2) and not full(4, 2 * WINDOW_BYTES - 1, 2)
    assert full(2 * WINDOW_FILES, 0, 2) and not full(2 * WINDOW_FILES - 1, 0, 2)
    logs = tmp_path / "logs"
    for i in range(40):
        t = Transcript(session_id=f"s{i}")
        t.user(f"task {i}" * (1 + 50 * (i % 7)))  # uneven sizes: workers finish out of order
        t.assistant(f"m{i}", [text(f"answer {i}")], usage(write=10))
        t.write_jsonl(logs / f"s{i:02d}.jsonl")
    seen = []
    s = ingest([logs], tmp_path / "j2.duckdb", key_file=tmp_path / "key", jobs=2,
               on_progress=lambda n, name: seen.append((name, n)))
    assert [name for name, _ in seen] == [f"s{i:02d}.jsonl" for i in range(40)] and s.sessions == 40
    assert [n for _, n in seen] == [(logs / name).stat().st_size for name, _ in seen]


def test_the_ingest_progress_bar_starts_no_thread():
    """ingest's bar is refreshed per file, not by a thread, so --jobs workers can be forked even
    on a terminal (a running thread makes the pool fall back to fresh processes)."""
    import io
    import threading

    from rich.console import Console

    from replay.cli.common import byte_progress

    tty = Console(file=io.StringIO(), force_terminal=True)
    before = threading.active_count()  # earlier tests may have left threads of their own
    bar = byte_progress("ingest", disable=False, console=tty, auto_refresh=False)
    with bar:
        task = bar.add_task("", total=10)
        bar.update(task, advance=5, refresh=True)
        assert threading.active_count() == before
    with byte_progress("ingest", disable=False, console=tty):  # the default bar does start one
        assert threading.active_count() == before + 1
    assert "ingest" in tty.file.getvalue()


def test_a_worker_error_is_read_again_by_the_writer(tmp_path, monkeypatch):
    """A worker that raises (not dies) on one file: the writer reads that file itself, so the
    result equals --jobs 1 and nothing is counted as failed."""
    def planted():
        raise RuntimeError("planted")

    one, two = _planted_in_workers(tmp_path, monkeypatch, 6, "s03.jsonl", planted)
    assert one == two and two["sessions"] == 6 and not two["failed"]
    assert _tables(tmp_path / "j1.duckdb") == _tables(tmp_path / "j2.duckdb")


def test_the_early_reader_reads_the_first_files_while_the_tokenizer_loads(tmp_path, monkeypatch):
    """A new database with --jobs 2: a process forked before the tokenizer loads reads the first
    files meanwhile (this process counts their tokens), the workers the rest; if it dies, this
    process reads its share. The database equals --jobs 1's every way."""
    import os

    import pytest

    from replay.ingest.readers import claude_code
    from replay.store import load_parallel

    if "fork" not in __import__("multiprocessing").get_all_start_methods():
        pytest.skip("the early reader is forked; this platform cannot fork")
    monkeypatch.setattr(load_parallel, "start_method", lambda: "fork")  # as in _planted_in_workers
    logs = tmp_path / "logs"
    for i in range(8):
        t = Transcript(session_id=f"s{i}")
        t.user(f"task {i} " * 40)
        t.assistant(f"m{i}", [text(f"answer {i} " * 30)], usage(write=10))
        t.write_jsonl(logs / f"s{i:02d}.jsonl")
    master = load_or_create_master_key(tmp_path / "key")
    one = ingest([logs], tmp_path / "j1.duckdb", master_key=master, jobs=1).as_dict()
    share = sum(f.stat().st_size for f in sorted(logs.iterdir())[:3])
    monkeypatch.setattr(load_parallel, "EARLY_BYTES", share)  # the first three files
    real = load_parallel._read_early
    r, w = os.pipe()

    def early(conn, units, *a):  # says, from the early reader's process, which files it reads
        os.write(w, ",".join(u.main.name for u in units).encode())
        return real(conn, units, *a)

    monkeypatch.setattr(load_parallel, "_read_early", early)
    loaded = []  # the files read in this process
    monkeypatch.setattr(claude_code, "read_session", _noting(claude_code.read_session, loaded))
    two = ingest([logs], tmp_path / "j2.duckdb", master_key=master, jobs=2).as_dict()
    shared = os.read(r, 1000).decode()
    os.close(r), os.close(w)
    assert shared == "s00.jsonl,s01.jsonl,s02.jsonl" and not loaded
    monkeypatch.setattr(load_parallel, "_read_early", lambda conn, *a: os._exit(1))  # it dies at once
    three = ingest([logs], tmp_path / "j3.duckdb", master_key=master, jobs=2).as_dict()
    assert loaded == ["s00.jsonl", "s01.jsonl", "s02.jsonl"]  # its share, read here
    for d in (one, two, three):
        d.pop("seconds")
    assert one == two == three and one["sessions"] == 8
    assert _tables(tmp_path / "j1.duckdb") == _tables(tmp_path / "j2.duckdb") == _tables(tmp_path / "j3.duckdb")


def _noting(f, names: list):
    def g(main, *a, **k):
        names.append(main.name)
        return f(main, *a, **k)

    return g


def test_without_jobs_a_new_database_fed_enough_logs_is_read_by_every_core(tmp_path, monkeypatch):
    """`ingest` with no --jobs (and the zero-config ingest) picks the process count: every core (up
    to 4) for a new database fed at least AUTO_MIN_BYTES, one for less or for a database that
    exists (an incremental ingest reads a few files). The database is the same either way."""
    from replay.store import load, load_parallel

    logs = _corpus(tmp_path)
    size = sum(f.stat().st_size for f in logs.rglob("*") if f.is_file())
    asked = []
    real_start = load_parallel.Workers.start.__func__
    monkeypatch.setattr(load_parallel.Workers, "start",
                        classmethod(lambda cls, keys, ds, jobs, preload=False: (asked.append(jobs),
                                                                                 real_start(cls, keys, ds, jobs, preload))[1]))
    monkeypatch.setattr(load, "available_cores", lambda: 6)
    monkeypatch.setattr(load_parallel, "start_method", lambda: "fork")
    monkeypatch.setenv("CTXREPLAY_KEY_FILE", str(tmp_path / "key"))
    load_or_create_master_key(tmp_path / "key")

    def run(db, *extra):
        r = CliRunner().invoke(cli, ["ingest", str(logs), "--db", str(db), *extra])
        assert r.exit_code == 0, r.output
        return asked.pop()

    monkeypatch.setattr(load, "AUTO_MIN_BYTES", size + 1)
    assert run(tmp_path / "small.duckdb") == 1  # less than the threshold
    monkeypatch.setattr(load, "AUTO_MIN_BYTES", size)
    assert run(tmp_path / "auto.duckdb") == 4  # every core, at most AUTO_MAX_JOBS
    assert run(tmp_path / "auto.duckdb") == 1  # the database exists now
    assert run(tmp_path / "one.duckdb", "--jobs", "1") == 1  # a --jobs given is kept
    monkeypatch.setattr(load_parallel, "start_method", lambda: "spawn")
    assert run(tmp_path / "spawn.duckdb") == 1  # where workers would be spawned: not measured, one
    assert _tables(tmp_path / "auto.duckdb") == _tables(tmp_path / "small.duckdb") == _tables(tmp_path / "one.duckdb")
