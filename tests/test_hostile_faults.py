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


# --- a different session under a known file name ---------------------------------------------------

def test_a_file_replaced_by_a_different_session_keeps_the_first_one(tmp_path):
    log = tmp_path / "logs" / "x.jsonl"
    db = tmp_path / "t.duckdb"
    _session("first", n=2).write_jsonl(log)
    ingest([log.parent], db)
    first = q(db, "SELECT session_key, n_requests FROM sessions")
    first_requests = q(db, "SELECT * FROM requests ORDER BY ALL")
    _session("second", n=3).write_jsonl(log)
    s = ingest([log.parent], db)
    assert s.kept_sessions == [str(log)] and s.sessions == 1
    got = q(db, "SELECT session_key, n_requests FROM sessions ORDER BY n_requests")
    assert len(got) == 2 and got[0] == first[0] and got[1][1] == 3
    assert q(db, f"SELECT * FROM requests WHERE session_key = '{first[0][0]}' ORDER BY ALL") == first_requests
    # the second session grows: it replaces itself, the first one stays
    _session("second", n=5).write_jsonl(log)
    s = ingest([log.parent], db)
    assert s.kept_sessions == [] and s.new_versions == 1
    assert q(db, "SELECT n_requests FROM sessions ORDER BY 1") == [(2,), (5,)]
    # the first session written back: stored once (the kept copy is replaced), the second kept
    _session("first", n=2).write_jsonl(log)
    s = ingest([log.parent], db)
    assert s.kept_sessions == [str(log)]
    assert q(db, "SELECT n_requests FROM sessions ORDER BY 1") == [(2,), (5,)]
    assert q(db, "SELECT count(*), count(DISTINCT session_key) FROM requests") == [(7, 2)]
    r = run("ingest", log.parent, "--db", tmp_path / "c.duckdb", "-q")
    assert r.exit_code == 0


def test_the_cli_summary_names_a_file_whose_earlier_session_was_kept(tmp_path):
    log = tmp_path / "logs" / "x.jsonl"
    db = tmp_path / "t.duckdb"
    _session("first", n=2).write_jsonl(log)
    assert run("ingest", log, "--db", db, "-q").exit_code == 0
    _session("second", n=2).write_jsonl(log)
    r = run("ingest", log, "--db", db, "-q")
    assert r.exit_code == 0 and "1 files now hold a different session" in r.output and str(log) in r.output
    r = run("ingest", log, "--db", db, "-q", "-j")
    assert json.loads(r.output)["kept_sessions"] == []


# --- SIGTERM / SIGHUP during ingest --jobs 2 ---------------------------------------------------------

def _children(pid: int) -> set[int]:
    try:
        return {int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}
    except OSError:
        return set()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc to list worker processes")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_stop_signal_during_a_parallel_ingest_stops_its_workers_with_one_line(tmp_path, sig):
    logs = tmp_path / "logs"
    for i in range(12):
        _session(f"s{i}", n=2).write_jsonl(logs / f"s{i}.jsonl")
    db, trace = tmp_path / "t.duckdb", tmp_path / "batches.txt"
    env = {**os.environ, "CTXREPLAY_INGEST_SLOW_MS": "700", "CTXREPLAY_INGEST_BATCH_BLOCKS": "1",
           "CTXREPLAY_INGEST_TRACE": str(trace)}
    cmd = [sys.executable, "-m", "replay.cli", "ingest", str(logs), "--db", str(db), "--jobs", "2", "-q"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    deadline = time.monotonic() + 120
    while not (trace.exists() and trace.read_text()) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    workers = _children(p.pid)
    p.send_signal(sig)
    out, err = p.communicate(timeout=60)
    if p.returncode == 0:
        pytest.skip("the ingest finished before the signal")
    assert len(workers) >= 2, workers
    lines = err.strip().splitlines()
    assert p.returncode == 128 + sig and lines[-1] == f"terminated ({sig.name})" and out == "", err
    deadline = time.monotonic() + 10
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(w) for w in workers), "a worker outlived the ingest"
    n = q(db, "SELECT count(*) FROM sessions")[0][0]
    assert 0 < n < 12 and q(db, "SELECT count(*) FROM requests") == [(2 * n,)]
    # and what it kept, said before the stop (2026-11-28): one file per session here
    assert lines[:-1] == [f"ingest stopped: {n} file version(s) were stored before it (whole files only; nothing "
                          "half-written); run the same command again to read the rest"], err
    r = subprocess.run(cmd[:-3] + ["-q"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0 and q(db, "SELECT count(*) FROM sessions") == [(12,)], r.stderr


# --- unreadable folders and compressed logs ----------------------------------------------------------

def _tree_with_hidden_logs(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    """logs/ok.jsonl, a compressed copy and an archive of another log, and a folder that cannot be
    listed (os.scandir refuses it: the tests may run as root, who reads any folder)."""
    import gzip
    import zipfile

    logs = tmp_path / "logs"
    _session("ok").write_jsonl(logs / "ok.jsonl")
    _session("zipped").write_jsonl(tmp_path / "z.jsonl")
    (logs / "old.jsonl.gz").write_bytes(gzip.compress((tmp_path / "z.jsonl").read_bytes()))
    with zipfile.ZipFile(logs / "backup.zip", "w") as z:
        z.write(tmp_path / "z.jsonl", "z.jsonl")
    locked = logs / "locked"
    _session("locked").write_jsonl(locked / "l.jsonl")
    real = os.scandir

    def scandir(path="."):
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    return logs, locked


def test_ingest_names_unreadable_folders_and_archives_and_reads_gzip_logs(tmp_path, monkeypatch):
    logs, locked = _tree_with_hidden_logs(tmp_path, monkeypatch)
    s = ingest([logs], tmp_path / "t.duckdb")
    assert s.sessions == 2  # ok.jsonl and the gzip log
    failed = dict(s.failed)
    assert set(failed) == {str(locked), str(logs / "backup.zip")}
    assert "cannot read this folder" in failed[str(locked)] and "Permission denied" in failed[str(locked)]
    assert "archive (.zip), not read" in failed[str(logs / "backup.zip")]
    ref = tmp_path / "ref.duckdb"
    ingest([tmp_path / "z.jsonl"], ref)
    cols = "req_idx, input_tokens, cache_write_5m, cache_read, output_tokens"
    got = q(tmp_path / "t.duckdb", f"SELECT {cols} FROM requests WHERE session_key IN (SELECT session_key FROM "
                                   "sessions WHERE n_requests = 3) ORDER BY ALL")
    assert len(got) == 6 and set(got) == set(q(ref, f"SELECT {cols} FROM requests ORDER BY ALL"))
    r = run("ingest", logs, "--db", tmp_path / "c.duckdb", "-q")
    assert r.exit_code == 0
    for name in (locked, logs / "backup.zip"):
        assert str(name) in r.output
    # given alone, an archive is the only file: nothing usable, exit 1
    r = run("ingest", logs / "backup.zip", "--db", tmp_path / "d.duckdb", "-q")
    assert r.exit_code == 1 and "backup.zip: an archive (.zip), not read" in r.output


def test_a_gzip_log_beside_its_plain_copy_is_stored_once_and_a_damaged_one_fails_alone(tmp_path):
    import gzip

    logs = tmp_path / "logs"
    log = _session("g", n=3).write_jsonl(logs / "g.jsonl")
    (logs / "g.jsonl.1.gz").write_bytes(b"")  # not a log name: left alone
    (logs / "old").mkdir()
    (logs / "old" / "g.jsonl.gz").write_bytes(gzip.compress(log.read_bytes()))
    _session("h", n=2).write_jsonl(tmp_path / "h.jsonl")
    (logs / "h.jsonl.gz").write_bytes(gzip.compress((tmp_path / "h.jsonl").read_bytes())[:-30])  # truncated
    s = ingest([logs], tmp_path / "t.duckdb")
    assert s.sessions == 1 and s.duplicates + len(s.duplicate_sessions) == 1, s.as_dict()
    assert [(Path(f).name, "damaged gzip data" in why) for f, why in s.failed] == [("h.jsonl.gz", True)]
    assert q(tmp_path / "t.duckdb", "SELECT count(*) FROM requests") == [(3,)]


def test_anonymize_names_unreadable_folders_and_compressed_logs(tmp_path, monkeypatch):
    from replay.privacy.anonymize import anonymize_tree

    logs, locked = _tree_with_hidden_logs(tmp_path, monkeypatch)
    s = anonymize_tree(logs, tmp_path / "out")
    assert s.files == 1 and s.incomplete
    assert dict(s.failed).keys() == {"locked", "old.jsonl.gz", "backup.zip"}
    r = run("anonymize", logs, tmp_path / "out2", "-q")
    assert r.exit_code == 1 and "3 log file(s) have no anonymized copy" in r.stderr
    assert "locked: cannot read this folder" in r.output


# --- prices: report --prices, a model without a price, files compared by content -----------------------

UNPRICED_RATES = "input = 1\ncache_write_5m = 1.25\ncache_write_1h = 2\ncache_read = 0.1\noutput = 5\n"


@pytest.fixture
def unpriced_db(tmp_path):
    logs = tmp_path / "logs"
    _session("priced", n=3).write_jsonl(logs / "a.jsonl")
    _session("unpriced", n=3, model="claude-unpriced-x").write_jsonl(logs / "b.jsonl")
    db = tmp_path / "t.duckdb"
    ingest([logs], db)
    cfg = tmp_path / "private-cfg"
    cfg.mkdir()
    (cfg / "p.toml").write_text('[models."claude-unpriced-x"]\n' + UNPRICED_RATES)
    return db, cfg / "p.toml"


def test_one_prices_file_by_relative_and_absolute_path_is_one_setting(unpriced_db, monkeypatch):
    db, prices = unpriced_db
    monkeypatch.chdir(prices.parent)
    assert run("replay", "--db", db, "--policy", "noop", "--prices", prices).exit_code == 0
    r = run("replay", "--db", db, "--policy", "devboy_lru", "--prices", "p.toml")
    assert r.exit_code == 0 and "no no-op baseline" not in r.output, r.output
    rows = json.loads(run("compare", "--db", db, "-j").stdout)
    lru = [x for x in rows if x["policy"] == "devboy_lru"]
    assert lru and all(x.get("baseline_run") for x in lru)
    stored = q(db, "SELECT DISTINCT prices FROM runs")
    assert len(stored) == 1 and str(prices.parent) not in stored[0][0]


def test_report_prices_the_fidelity_check_with_the_runs_prices_and_never_prints_their_folder(unpriced_db, tmp_path):
    db, prices = unpriced_db
    for policy in ("noop", "devboy_lru"):
        assert run("replay", "--db", db, "--policy", policy, "--prices", prices).exit_code == 0
    r = run("report", "--db", db, "--out", tmp_path / "rep")
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "overrides for 1 model from p.toml" in md
    for f in ("report.md", "index.html"):
        assert str(prices.parent) not in (tmp_path / "rep" / f).read_text()
    # --prices wins over the runs' prices: one without the model is one error line naming it
    other = tmp_path / "other.toml"
    other.write_text('[models."claude-other"]\n' + UNPRICED_RATES)
    r = run("report", "--db", db, "--out", tmp_path / "rep2", "--prices", other)
    one_error_line(r, "no price for model 'claude-unpriced-x'", "--prices FILE")
    assert not (tmp_path / "rep2").exists()
    r = run("report", "--db", db, "--out", tmp_path / "rep3", "--prices", prices, "-j")
    assert r.exit_code == 0 and json.loads(r.stdout)["runs"] >= 2


# --- dates Python cannot hold in a local time zone ----------------------------------------------------

@pytest.mark.parametrize("tz", ["Asia/Tokyo", "America/New_York"])
def test_year_9999_timestamps_are_counted_and_kept_without_a_time(tmp_path, tz):
    """A year-9999 timestamp is a damaged one (2026-11-28: a record's timestamp outside 2000-2099
    is counted as bad_timestamp and kept without a time); no command overflows on it."""
    t = _session("far", n=2)
    for rec in t.records:
        rec["timestamp"] = "9999-12-31T23:59:59.000Z"
    t.write_jsonl(tmp_path / "logs" / "far.jsonl")
    _session("near", n=1).write_jsonl(tmp_path / "logs" / "near.jsonl")
    db = tmp_path / "t.duckdb"
    s = ingest([tmp_path / "logs"], db)
    assert s.report.repaired["bad_timestamp"] == len(t.records)
    for by in ("day", "week", "month", "session"):
        r = run("usage", "--db", db, "--timezone", tz, "--by", by, "-j")
        assert r.exit_code == 0, r.output
        got = json.loads(r.stdout)
        assert got["totals"]["requests"] == 3
        if by == "day":
            assert {row["key"]: row["requests"] for row in got["rows"]}["(no time)"] == 2, got["rows"]
    r = run("sessions", "--db", db, "--timezone", tz)
    assert r.exit_code == 0 and "9999" not in r.output and "Traceback" not in r.output


# --- responses without message.id; the same ids in two sessions ---------------------------------------

def test_responses_without_an_id_are_kept_with_their_usage(tmp_path):
    t = _session("noid", n=3)
    for rec in t.records:
        if rec["type"] == "assistant":
            rec["message"].pop("id")
            if rec["message"]["usage"]["input_tokens"] == 11:
                rec.pop("requestId")  # neither id: keyed by its first line
    t.write_jsonl(tmp_path / "noid.jsonl")
    _session("ref", n=3).write_jsonl(tmp_path / "ref" / "ref.jsonl")
    db = tmp_path / "t.duckdb"
    s = ingest([tmp_path / "noid.jsonl"], db)
    assert s.report.repaired["missing_message_id"] == 3
    assert any("noid.jsonl:" in m and "without message.id" in m for m in s.report.messages)
    ingest([tmp_path / "ref"], tmp_path / "ref.duckdb")
    cols = "stream_id, req_idx, input_tokens, cache_write_5m, cache_read, output_tokens, has_usage"
    assert q(db, f"SELECT {cols} FROM requests ORDER BY req_idx") == \
        q(tmp_path / "ref.duckdb", f"SELECT {cols} FROM requests ORDER BY req_idx")
    r = run("usage", "--db", db, "-j")
    assert json.loads(r.stdout)["totals"]["requests"] == 3


def test_the_same_message_ids_in_two_sessions_count_in_usage_as_in_sessions(tmp_path):
    logs = tmp_path / "logs"
    a = _session("a", n=2, prefix="msg")
    b = _session("b", n=2, prefix="msg")  # the same message and request ids, other usage
    for rec in b.records:
        if rec["type"] == "assistant":
            rec["message"]["usage"]["input_tokens"] += 100
    a.write_jsonl(logs / "a.jsonl")
    b.write_jsonl(logs / "b.jsonl")
    db = tmp_path / "t.duckdb"
    ingest([logs], db)
    total = json.loads(run("usage", "--db", db, "-j").stdout)["totals"]
    listed = json.loads(run("sessions", "--db", db, "-j").stdout)
    assert total["requests"] == sum(x["n_requests"] for x in listed) == 4
    assert total["input"] == sum(x["usage"]["input"] for x in listed) == 10 + 11 + 110 + 111
    by_session = json.loads(run("usage", "--db", db, "--by", "session", "-j").stdout)["rows"]
    assert sorted(x["requests"] for x in by_session) == [2, 2]


# --- validate: a dataset name with a slash, a folder it cannot write its plot into ------------------------

def test_validate_a_dataset_named_with_a_slash_and_a_read_only_plot_folder(tmp_path, monkeypatch):
    from replay.experiments import validate

    _session("v", n=2).write_jsonl(tmp_path / "logs" / "v.jsonl")
    db = tmp_path / "t.duckdb"
    ingest([tmp_path / "logs"], db, dataset="a/b")
    r = run("validate", "--db", db, "--dataset", "a/b", "-j")
    assert r.exit_code == 0, r.output
    plot = Path(json.loads(r.stdout)["plot"])
    assert plot.parent == tmp_path and plot.name == "validate-a_b.png" and plot.exists()

    def read_only(report, path, worst=4):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(validate, "plot_worst", read_only)
    r = run("validate", "--db", db, "--dataset", "a/b")
    assert r.exit_code == 0 and "recorded cost" in r.stdout, r.output
    assert r.stderr.startswith("warning: ") and "validate-a_b.png" in r.stderr and "--plot" in r.stderr
    r = run("validate", "--db", db, "--dataset", "a/b", "--plot", tmp_path / "x.png")
    one_error_line(r, "x.png", "permission denied")


# --- a disk-full export names the output folder ----------------------------------------------------

def test_a_disk_full_export_names_the_output_folder_not_the_database(tmp_path, monkeypatch):
    import duckdb

    from replay import store
    from replay.cli import data

    _session("e", n=2).write_jsonl(tmp_path / "logs" / "e.jsonl")
    db = tmp_path / "t.duckdb"
    ingest([tmp_path / "logs"], db)
    out = tmp_path / "export"

    class FullDisk:
        def __init__(self, con):
            self.con = con

        def execute(self, sql, *a):
            if sql.startswith("COPY"):
                raise duckdb.IOException(f'IO Error: Could not write file "{out}/.x.parquet": No space left on device')
            return self.con.execute(sql, *a)

        def __getattr__(self, name):
            return getattr(self.con, name)

    real_open = data.open_db
    monkeypatch.setattr(data, "open_db", lambda path: FullDisk(real_open(path)))
    r = run("export", "--db", db, "--out", out)
    line = one_error_line(r, str(out), "no space left on device")
    assert str(db) not in line
    assert not out.exists() or not any(out.iterdir())  # no partial file under any name
    monkeypatch.setattr(data, "open_db", real_open)
    con = store.connect(db, read_only=True)
    try:
        with pytest.raises(OSError) as e:
            store.export_parquet(FullDisk(con), "default", out)
    finally:
        con.close()
    assert e.value.filename == str(out)


# --- anonymize: a pretty-printed array with one element nested very deep -------------------------------

@pytest.mark.parametrize("bad", ["deep", "broken"])
def test_anonymize_keeps_the_good_records_of_an_array_with_one_unreadable_element(tmp_path, bad):
    from replay.privacy.anonymize import anonymize_tree

    t = _session("deep", n=2)
    recs = [json.dumps(r, indent=2) for r in t.records]
    value = "[" * 100_000 + "]" * 100_000 if bad == "deep" else '{"a": 1,, }'
    element = '{\n  "type": "user",\n  "x": ' + value + "\n}"
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "dump.json").write_text("[\n" + ",\n".join(recs[:2] + [element] + recs[2:]) + "\n]\n")
    s = anonymize_tree(tmp_path / "logs", tmp_path / "out")
    assert s.failed == [] and s.files == 1
    assert s.records == len(t.records) and s.lines_dropped == 1
    (out,) = (tmp_path / "out").rglob("*.json")
    got = json.loads(out.read_text())
    assert [r["type"] for r in got] == [r["type"] for r in t.records]


# --- a UTF-8 byte order mark ---------------------------------------------------------------------------

@pytest.mark.parametrize("shape", ["jsonl", "array"])
def test_a_byte_order_mark_costs_no_line(tmp_path, shape):
    from replay.privacy.anonymize import anonymize_tree

    t = _session("bom", n=2)
    if shape == "jsonl":
        body = "".join(json.dumps(r) + "\n" for r in t.records).encode()
    else:
        body = json.dumps(t.records, indent=2).encode()
    name = f"s.{'jsonl' if shape == 'jsonl' else 'json'}"
    for d, prefix in (("plain", b""), ("bom", b"\xef\xbb\xbf")):
        (tmp_path / d).mkdir()
        (tmp_path / d / name).write_bytes(prefix + body)
    cols = "req_idx, input_tokens, cache_read, output_tokens"
    got = {}
    for d in ("plain", "bom"):
        s = ingest([tmp_path / d], tmp_path / f"{d}.duckdb")
        assert s.report.skipped == {} and s.sessions == 1, s.report.messages
        got[d] = (q(tmp_path / f"{d}.duckdb", f"SELECT {cols} FROM requests ORDER BY ALL"),
                  q(tmp_path / f"{d}.duckdb", "SELECT count(*), sum(tokens) FROM blocks"))
        a = anonymize_tree(tmp_path / d, tmp_path / f"out-{d}")
        assert (a.records, a.lines_dropped, a.failed) == (len(t.records), 0, [])
    assert got["bom"] == got["plain"]
    (out,) = (tmp_path / "out-bom").iterdir()
    assert not out.read_bytes().startswith(b"\xef\xbb\xbf")


# --- weak key files ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("content,mode,lines,needles", [
    ("0" * 64, 0o600, 1, ["one byte value repeated (00)"]),
    (None, 0o644, 1, ["can be read by every user (mode 644)", "chmod 600"]),
    (None, 0o640, 1, ["can be read by its group"]),
    ("0" * 64, 0o604, 2, ["one byte value repeated", "every user"]),
])
def test_a_weak_key_file_is_used_with_a_warning_line(tmp_path, content, mode, lines, needles):
    key = tmp_path / "k.key"
    key.write_text((content or os.urandom(32).hex()) + "\n")
    key.chmod(mode)
    _session("k", n=1).write_jsonl(tmp_path / "logs" / "k.jsonl")
    for args in (["ingest", tmp_path / "logs", "--db", tmp_path / "t.duckdb", "-q", "-j"],
                 ["anonymize", tmp_path / "logs", tmp_path / "anon", "-q", "-j"]):
        r = run(*args, "--key-file", key)
        assert r.exit_code == 0, r.output
        warnings = r.stderr.splitlines()
        assert len(warnings) == lines, warnings
        assert all(w.startswith("warning: key file ") and str(key) in w for w in warnings), warnings
        for n in needles:
            assert any(n in w for w in warnings), (n, warnings)
        json.loads(r.stdout)  # the summary is still strict JSON on stdout


def test_a_good_key_file_gets_no_warning(tmp_path):
    key = tmp_path / "k.key"
    key.write_text(os.urandom(32).hex() + "\n")
    key.chmod(0o600)
    _session("k", n=1).write_jsonl(tmp_path / "logs" / "k.jsonl")
    r = run("ingest", tmp_path / "logs", "--db", tmp_path / "t.duckdb", "-q", "--key-file", key)
    assert r.exit_code == 0 and r.stderr == ""


# --- a model field that is not text ------------------------------------------------------------------

@pytest.mark.parametrize("bad", [42, {"name": "claude-sonnet-4-5"}, ["claude-sonnet-4-5"], True])
def test_a_model_that_is_not_text_skips_its_record_and_the_dataset_still_prices(tmp_path, bad):
    """A number as model was stored as a model named "42", which no price covers: every command
    that prices the dataset stopped. The record is skipped, counted and named instead."""
    t = _session("m", n=3)
    first = next(r for r in t.records if r["type"] == "assistant")
    first["message"]["model"] = bad
    t.write_jsonl(tmp_path / "logs" / "m.jsonl")
    db = tmp_path / "t.duckdb"
    s = ingest([tmp_path / "logs"], db)
    assert s.report.skipped["malformed_record"] == 1
    assert any("m.jsonl:" in m and "model is not text" in m for m in s.report.messages)
    assert q(db, "SELECT DISTINCT model FROM requests") == [("claude-sonnet-4-5",)]
    assert q(db, "SELECT count(*) FROM requests")[0][0] == 2
    r = run("replay", "--db", db, "--policy", "noop", "-j")
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("how", ["null", "missing", "empty"])
def test_a_response_that_names_no_model_is_priced_as_the_one_before_it(tmp_path, how):
    t = _session("nm", n=3)
    answers = [r for r in t.records if r["type"] == "assistant"]
    for rec in answers[1:]:  # the first names one; the others not
        if how == "missing":
            rec["message"].pop("model")
        else:
            rec["message"]["model"] = None if how == "null" else ""
    t.write_jsonl(tmp_path / "logs" / "nm.jsonl")
    db = tmp_path / "t.duckdb"
    s = ingest([tmp_path / "logs"], db)
    assert s.report.repaired["missing_model"] == 2
    assert q(db, "SELECT model, count(*) FROM requests GROUP BY ALL") == [("claude-sonnet-4-5", 3)]
    assert run("replay", "--db", db, "--policy", "noop", "-j").exit_code == 0


def test_a_session_that_names_no_model_at_all_stops_pricing_with_one_line_and_runs_with_a_price(tmp_path):
    t = _session("nomodel", n=2)
    for rec in t.records:
        if rec["type"] == "assistant":
            rec["message"].pop("model")
    t.write_jsonl(tmp_path / "logs" / "n.jsonl")
    db = tmp_path / "t.duckdb"
    s = ingest([tmp_path / "logs"], db)
    assert not s.report.repaired.get("missing_model")  # nothing earlier to take
    r = run("replay", "--db", db, "--policy", "noop")
    one_error_line(r, "names no model", '[models.""]', "--prices FILE")
    prices = tmp_path / "p.toml"
    prices.write_text('[models.""]\n' + UNPRICED_RATES)
    r = run("replay", "--db", db, "--policy", "noop", "--prices", prices, "-j")
    assert r.exit_code == 0, r.output


def test_every_repair_reason_is_explained_in_the_ingest_summary(tmp_path):
    """The summary says what each repair that happened did, beside its count, and nothing of the others."""
    from replay.cli.data import REPAIRED
    from replay.ingest.readers.report import REPAIR_REASONS

    assert set(REPAIRED) == set(REPAIR_REASONS)
    t = _session("nm", n=2)
    next(r for r in t.records if r["type"] == "assistant" and r["message"]["usage"]["input_tokens"] == 11)[
        "message"].pop("model")
    t.write_jsonl(tmp_path / "logs" / "nm.jsonl")
    r = run("ingest", tmp_path / "logs", "--db", tmp_path / "t.duckdb")
    line = next(x for x in r.output.splitlines() if x.startswith("lines repaired"))
    assert line == f"lines repaired and kept: missing_model=1 ({REPAIRED['missing_model']})"
