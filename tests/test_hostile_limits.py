"""Faults that must end in one clear line (issue 37): a killed parallel ingest leaves no worker,
no home folder is never a `./~` folder, absurd rates are refused, a memory limit too low to run
in is named before any work, an unwritable data folder is called unwritable.

Inputs are synthetic (tests/cc_records.py); nothing here reads the shared corpus. Processes
started here are killed by their own id and waited for.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from replay.store.load import ingest

from test_hostile import ROOT, cli, one_error_line, run
from test_hostile_faults import UNPRICED_RATES, _alive, _children, _session
from test_ingest import q

TIMEOUT = 60
OTHER_UID = 54321  # a user id with no passwd entry (checked), for the runs as another user


def _one_line(r: subprocess.CompletedProcess, *needles: str, code: int = 1) -> str:
    """A subprocess that failed with `code` and exactly one `error:` line naming every needle."""
    assert r.returncode == code, (r.returncode, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def _no_passwd_uid() -> int | None:
    import pwd

    try:
        pwd.getpwuid(OTHER_UID)
        return None
    except KeyError:
        return OTHER_UID


def _as_other_user() -> list[str]:
    """A command prefix that runs as a user id with no passwd entry (root can; others cannot)."""
    if os.geteuid() != 0:
        pytest.skip("only root can run a command as another user id")
    setpriv = shutil.which("setpriv")
    if setpriv is None or _no_passwd_uid() is None:
        pytest.skip(f"needs setpriv and a user id ({OTHER_UID}) without a passwd entry")
    return [setpriv, "--reuid", str(OTHER_UID), "--regid", str(OTHER_UID), "--clear-groups"]


@pytest.fixture
def shared_tmp():
    """A folder another user id can write (pytest's tmp_path is private to this user)."""
    d = Path(tempfile.mkdtemp(prefix="ctxreplay-test-"))
    d.chmod(0o777)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _base_env(**extra: str) -> dict[str, str]:
    """A minimal environment: no HOME, none of the test run's own variables."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT), "LANG": "C.UTF-8"}
    env.update(extra)
    return env


def _run(args: list, env: dict, cwd: Path, prefix: list[str] = (), limit=None) -> subprocess.CompletedProcess:
    def preexec():
        if limit is not None:
            import resource

            which, value = limit
            resource.setrlimit(which, (value, resource.getrlimit(which)[1]))

    return subprocess.run([*prefix, sys.executable, "-m", "replay.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=TIMEOUT, env=env, cwd=cwd, preexec_fn=preexec)


# --- kill -9 of a parallel ingest ------------------------------------------------------------------

@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc to list worker processes")
@pytest.mark.parametrize("new_db", [False, True], ids=["pool", "pool+early-reader"])
def test_workers_of_a_killed_ingest_exit_and_leave_no_temporary_file(tmp_path, new_db):
    """`kill -9` of `ingest --jobs 2` left both workers running (reparented, ~105 MB each, 6 minutes on)."""
    logs = tmp_path / "logs"
    for i in range(12):
        _session(f"s{i}", n=2).write_jsonl(logs / f"s{i}.jsonl")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    db = tmp_path / "t.duckdb"
    if not new_db:
        ingest([logs / "s0.jsonl"], db)  # an existing database: no early reader, the pool alone
    env = {**os.environ, "CTXREPLAY_INGEST_SLOW_MS": "2000", "TMPDIR": str(tmp)}
    cmd = [sys.executable, "-m", "replay.cli", "ingest", str(logs), "--db", str(db), "--jobs", "2", "-q"]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    expected = 3 if new_db else 2
    try:
        deadline = time.monotonic() + TIMEOUT
        workers: set[int] = set()
        while len(workers) < expected and p.poll() is None and time.monotonic() < deadline:
            workers = _children(p.pid)
            time.sleep(0.05)
        assert len(workers) >= expected and p.poll() is None, (workers, p.returncode)
        time.sleep(0.5)  # their initializer has run (a kill before it is caught by its getppid check)
    finally:
        p.kill()
        p.wait(timeout=TIMEOUT)
    deadline = time.monotonic() + 5
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [w for w in workers if _alive(w)]
    for w in left:  # never leave them behind, even when the test fails
        os.kill(w, signal.SIGKILL)
    assert not left, "a worker outlived its killed writer"
    assert list(tmp.iterdir()) == []  # the workers' hash list was an unnamed file


def test_the_parent_watch_thread_ends_a_worker_where_prctl_is_missing(tmp_path):
    """Off Linux a thread polls os.getppid(); here it is forced by making the platform look other."""
    script = (
        "import os, sys, time\n"
        "from replay.store import load_parallel as lp\n"
        "lp.WATCH_SECONDS = 0.05\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    sys.platform = 'darwin'\n"
        "    lp.die_with_parent(os.getppid())\n"
        "    time.sleep(60)\n"
        "    os._exit(0)\n"
        "print(pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    child = None
    try:
        child = int(p.stdout.readline())
        time.sleep(0.3)
        assert _alive(child)
    finally:
        p.kill()
        p.wait(timeout=TIMEOUT)
        p.stdout.close()
    deadline = time.monotonic() + 5
    while child is not None and _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    if child is not None and _alive(child):
        os.kill(child, signal.SIGKILL)
        pytest.fail("the watch thread did not end the orphaned process")


# --- no home folder ---------------------------------------------------------------------------------

def test_no_home_folder_is_one_line_in_process(tmp_path, monkeypatch):
    """$HOME unset and no passwd entry (simulated): every default under ~ is one line naming what to set."""
    import pwd

    from replay.ingest import keys

    def no_entry(uid):
        raise KeyError(uid)

    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.delenv("CTXREPLAY_KEY_FILE", raising=False)
    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(keys.NoHomeError, match=r"set \$HOME.*--key-file or \$CTXREPLAY_KEY_FILE"):
        keys.default_key_path()
    one_error_line(run("usage"), "no home folder for the default database", "$HOME is unset", "--db or $CTXREPLAY_DB")
    logs = tmp_path / "logs"
    _session("s1").write_jsonl(logs / "s1.jsonl")
    one_error_line(run("ingest", logs, "--db", tmp_path / "t.duckdb", "-q"), "no home folder for the master key",
                   "$XDG_CONFIG_HOME", "--key-file or $CTXREPLAY_KEY_FILE")
    one_error_line(run("anonymize", logs, tmp_path / "anon"), "no home folder for the master key")
    one_error_line(run("ingest", logs, "--db", tmp_path / "t.duckdb", "--key-file", "~/k", "-q"),
                   "no home folder for --key-file", "without ~")
    assert not (tmp_path / "~").exists() and not (tmp_path / "t.duckdb").exists()
    assert not (tmp_path / "anon").exists() or not any((tmp_path / "anon").rglob("*.jsonl"))
    # a relative $HOME is no home folder either (a path under it would land in the working directory)
    monkeypatch.setenv("HOME", "rel")
    with pytest.raises(keys.NoHomeError, match="not an absolute path"):
        keys.default_key_path()


def test_no_home_folder_for_a_user_without_a_passwd_entry(shared_tmp):
    """The reported case, for real: a user id the password database does not know, HOME unset."""
    prefix = _as_other_user()
    logs = shared_tmp / "logs"
    _session("s1").write_jsonl(logs / "s1.jsonl")
    for p in (logs, *logs.iterdir()):
        p.chmod(0o777 if p.is_dir() else 0o666)
    work = shared_tmp / "work"
    work.mkdir(mode=0o777)
    work.chmod(0o777)
    env = _base_env()
    _one_line(_run(["usage"], env, work, prefix), "no home folder for the default database", "$HOME is unset",
              f"user id {OTHER_UID}")
    _one_line(_run(["ingest", logs, "--db", work / "t.duckdb", "-q"], env, work, prefix),
              "no home folder for the master key", "--key-file or $CTXREPLAY_KEY_FILE")
    _one_line(_run(["anonymize", logs, work / "anon"], env, work, prefix), "no home folder for the master key")
    _one_line(_run(["usage"], {**env, "CTXREPLAY_DB": str(work / "x.duckdb")}, work, prefix),
              "no database at", "no home folder")
    assert sorted(p.name for p in work.iterdir()) == []  # no `~` folder, no database, no key


# --- absurd rates -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def priced_db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rates")
    _session("odd", n=3, model="claude-unpriced-y").write_jsonl(tmp / "logs" / "b.jsonl")
    db = tmp / "t.duckdb"
    ingest([tmp / "logs"], db)
    return db


def _prices(tmp_path: Path, value: str, fast: bool = False) -> Path:
    rates = "".join(f"{f} = {value}\n" for f in ("input", "cache_write_5m", "cache_write_1h", "cache_read", "output"))
    body = '[models."claude-unpriced-y"]\n' + (UNPRICED_RATES + '[models."claude-unpriced-y".fast]\n' if fast else "")
    path = tmp_path / "p.toml"
    path.write_text(body + rates)
    return path


@pytest.mark.parametrize("fast", [False, True], ids=["rates", "fast"])
@pytest.mark.parametrize("command", [["usage", "--no-ingest"], ["usage", "--no-ingest", "--json"],
                                     ["sessions"], ["replay", "--policy", "noop"]])
def test_a_rate_of_1e308_is_refused_with_one_line(priced_db, tmp_path, command, fast):
    """1e308 passed the check: usage and sessions ended in a TypeError, --json said cost null with
    cost_complete true, replay printed "cost $inf"."""
    prices = _prices(tmp_path, "1e308", fast)
    before = q(priced_db, "SELECT count(*) FROM runs")[0][0]
    r = run(*command, "--db", priced_db, "--prices", prices)
    one_error_line(r, "p.toml", "= 1e+308", "at most 1,000,000 ($ per million tokens)")
    assert r.stdout == ""
    assert q(priced_db, "SELECT count(*) FROM runs")[0][0] == before


def test_the_highest_allowed_rate_prices_every_request(priced_db, tmp_path):
    import json

    r = run("usage", "--no-ingest", "--json", "--db", priced_db, "--prices", _prices(tmp_path, "1e6"))
    assert r.exit_code == 0, r.output
    totals = json.loads(r.stdout)["totals"]
    assert totals["cost_complete"] is True and totals["cost"] == pytest.approx(totals["total_tokens"])


def test_a_sum_that_overflows_is_an_error_line_not_a_null_cost(priced_db, monkeypatch):
    """Rates are bounded so no sum can overflow; if one ever did, `usage` says so instead of printing null."""
    import analysis.usage

    real = analysis.usage.usage

    def overflowing(*a, **kw):
        res = real(*a, **kw)
        res["totals"]["cost"] = None
        return res

    monkeypatch.setattr(analysis.usage, "usage", overflowing)
    for args in (["usage", "--no-ingest", "--json"], ["usage", "--no-ingest"]):
        one_error_line(run(*args, "--db", priced_db), "too large to compute", "overflows to infinity")


def test_a_cached_rate_out_of_range_is_a_miss(tmp_path, monkeypatch):
    from replay.model import rates_cache

    monkeypatch.setenv("CTXREPLAY_CACHE_DIR", str(tmp_path))
    rates_cache.reset()
    fields = {"model": "m", "input": 3.0, "cache_write_5m": 3.75, "cache_write_1h": 6.0, "cache_read": 0.3,
              "output": 15.0, "min_cacheable": 1024, "source": "x", "tier_threshold": None, "tier_input": None,
              "tier_cache_write_5m": None, "tier_cache_write_1h": None, "tier_cache_read": None, "tier_output": None}
    rates_cache.put("good", fields)
    rates_cache.put("bad", {**fields, "output": 1e308})
    rates_cache.put("nan", {**fields, "input": float("nan")})
    rates_cache.reset()
    assert rates_cache.get("good") == fields and rates_cache.get("bad") is None and rates_cache.get("nan") is None
    rates_cache.reset()


# --- memory limits ----------------------------------------------------------------------------------

@pytest.mark.skipif(not hasattr(os, "fork"), reason="resource limits are POSIX")
@pytest.mark.parametrize("limit,flag", [("RLIMIT_AS", "-v"), ("RLIMIT_DATA", "-d")])
def test_a_memory_limit_too_low_is_named_before_any_work(tmp_path, limit, flag):
    """`ulimit -v 500000` aborted an ingest with a Rust allocation backtrace (exit 134)."""
    import resource

    which = getattr(resource, limit)
    hard = resource.getrlimit(which)[1]
    if hard != resource.RLIM_INFINITY and hard < 500_000 * 1024:
        pytest.skip(f"{limit} hard limit already below the test's")
    logs = tmp_path / "logs"
    _session("s1").write_jsonl(logs / "s1.jsonl")
    db = tmp_path / "t.duckdb"
    env = {**os.environ, "CTXREPLAY_KEY_FILE": os.environ["CTXREPLAY_KEY_FILE"]}
    r = _run(["ingest", logs, "--db", db], env, ROOT, limit=(which, 500_000 * 1024))
    _one_line(r, f"`ulimit {flag}` is 488 MiB", "at least 2,048 MiB", f"`ulimit {flag} 2097152`")
    assert not db.exists()
    r = _run(["ingest", "--help"], env, ROOT, limit=(which, 500_000 * 1024))
    assert r.returncode == 0 and "Usage:" in r.stdout, r.stderr


def test_an_allocation_failure_is_one_line(tmp_path, monkeypatch, priced_db):
    from replay.cli import usage as usage_cli

    def no_memory(*a, **kw):
        raise MemoryError

    monkeypatch.setattr(usage_cli, "recorded_usage", no_memory)
    one_error_line(run("usage", "--no-ingest", "--db", priced_db), "out of memory", "raise the limit")


# --- a data folder that cannot be created -----------------------------------------------------------

def test_a_data_folder_under_a_file_is_named(tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("")
    r = cli("usage", env={"XDG_DATA_HOME": str(blocker / "sub")})
    _one_line(r, f"{blocker} is a file, not a folder", "$XDG_DATA_HOME", "--db or $CTXREPLAY_DB")
    assert blocker.read_text() == ""


def test_an_unwritable_data_folder_is_said_to_be_unwritable(shared_tmp):
    """Reported as "does not exist; create it". Root writes any folder, so as root the command
    runs as another user id; otherwise the folder is made read-only."""
    logs = shared_tmp / "logs"
    _session("s1").write_jsonl(logs / "s1.jsonl")
    for p in (logs, *logs.iterdir()):
        p.chmod(0o777 if p.is_dir() else 0o666)
    key = shared_tmp / "key"
    key.write_text(os.urandom(32).hex() + "\n")
    ro = shared_tmp / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    if os.geteuid() == 0:
        prefix = _as_other_user()
        os.chown(key, OTHER_UID, -1)
    else:
        prefix = []
    key.chmod(0o600)
    env = _base_env(HOME=str(shared_tmp), XDG_DATA_HOME=str(ro), CTXREPLAY_KEY_FILE=str(key))
    for args in (["ingest", logs, "-q"], ["usage"]):
        r = _run(args, env, shared_tmp, prefix)
        line = _one_line(r, f"{ro} is not writable (permission denied)", "$XDG_DATA_HOME", "--db")
        assert "does not exist" not in line
    assert list(ro.iterdir()) == []
