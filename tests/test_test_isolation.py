"""The test run never creates or reads the user's own key file nor writes their default database,
not even from a module-scoped fixture, which pytest builds before the function-scoped autouse
fixtures of conftest.py (the session-scoped one there covers it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from replay.ingest import keys
from replay.ingest.roots import default_db_path

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def seen_by_a_module_fixture():
    """What a module-scoped fixture that ingests would use: the key it opens, the default paths."""
    return {"env key": os.environ.get(keys.KEY_ENV), "key": keys.default_key_path(),
            "config key": keys._config_key_path(), "db": default_db_path(), "master": keys.open_master_key()}


def test_a_module_fixture_already_sees_the_test_key_and_data_folder(seen_by_a_module_fixture, tmp_path_factory):
    base = tmp_path_factory.getbasetemp()
    seen = seen_by_a_module_fixture
    assert seen["env key"] == str(base / "test.key")
    for name in ("key", "config key", "db"):
        assert seen[name].is_relative_to(base), (name, seen[name])
    assert seen["master"] == keys.load_or_create_master_key(base / "test.key", create=False)


_PROBE = '''
import pytest
from replay.ingest.keys import open_master_key


@pytest.fixture(scope="module")
def opened():
    return open_master_key()  # the default key path (created on first use) unless isolated


@pytest.fixture(scope="session")
def opened_once():
    return open_master_key()


def test_probe(opened, opened_once):
    assert opened == opened_once
'''


def test_a_fresh_home_is_left_untouched(tmp_path):
    """The conftest.py in use, in a pytest run of its own with a fresh HOME and none of the
    variables it sets: module- and session-scoped fixtures open the master key, and HOME holds
    nothing of ctxreplay's (before the session-scoped isolation, ~/.config/ctxreplay/key was created there)."""
    home = tmp_path / "home"
    home.mkdir()
    suite = tmp_path / "a" / "b" / "suite"
    suite.mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "conftest.py", suite / "conftest.py")
    (suite / "test_probe.py").write_text(_PROBE)
    (suite / "pytest.ini").write_text("[pytest]\n")
    drop = {keys.KEY_ENV, "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "CTXREPLAY_DB",
            "CTXREPLAY_CACHE_DIR", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(HOME=str(home), PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                        "-c", str(suite / "pytest.ini"), "--rootdir", str(suite),
                        "--basetemp", str(tmp_path / "basetemp"), str(suite)],
                       cwd=suite, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed" in r.stdout
    assert [str(p.relative_to(home)) for p in home.rglob("*ctxreplay*")] == []  # no key, no database
