import os
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

# Each property sees the same examples on every run (a red CI run can be run again and reproduced);
# HYPOTHESIS_PROFILE=explore draws new examples each run, as hypothesis does by default, to look for more
hypothesis_settings.register_profile("repeatable", derandomize=True)
hypothesis_settings.register_profile("explore", derandomize=False)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

# Resolved: the code resolves the paths it ingests (file keys, anonymized names derive from the
# real path), so a ``../shared`` that is a symlink must give the tests the same real path.
SHARED = (Path(__file__).resolve().parents[2] / "shared").resolve()
SHARED_LOGS = SHARED / "logs"


def _set_isolated_key(mp: pytest.MonkeyPatch, base: Path) -> None:
    """$CTXREPLAY_KEY_FILE names a test key under ``base`` (made here: a named key file must
    exist, only the default path is created on first use), and $XDG_CONFIG_HOME points under
    ``base`` too, so a test that clears $CTXREPLAY_KEY_FILE still never reaches ~/.config."""
    from replay.ingest.keys import load_or_create_master_key

    key = base / "test.key"
    load_or_create_master_key(key)
    mp.setenv("CTXREPLAY_KEY_FILE", str(key))
    mp.setenv("XDG_CONFIG_HOME", str(base / "xdg-config"))


def _set_isolated_defaults(mp: pytest.MonkeyPatch, base: Path) -> None:
    """A command run without --db ingests the default log folders first (replay/cli/autoingest.py)
    into the default database: the data folder, the Claude Code and Codex folders and the rates
    cache point under ``base``; HOME stays (tools keep caches under it), which leaves ~/.gemini
    and ~/.copilot: tests that need a HOME set their own."""
    mp.setenv("XDG_DATA_HOME", str(base / "xdg-data"))
    mp.setenv("CLAUDE_CONFIG_DIR", str(base / "no-claude"))
    mp.setenv("CODEX_HOME", str(base / "no-codex"))
    mp.delenv("CTXREPLAY_DB", raising=False)
    mp.setenv("CTXREPLAY_CACHE_DIR", str(base / "cache"))  # the rates cache (replay/model/rates_cache.py)


@pytest.fixture(scope="session", autouse=True)
def _isolated_session(tmp_path_factory):
    """The same isolation for the whole session, set up before any module- or class-scoped
    fixture (pytest builds higher scopes first): a module fixture that ingests or runs a command
    would otherwise create or read the user's real ~/.config/ctxreplay/key and default database
    before the function-scoped fixtures below ran (tests/test_test_isolation.py checks it)."""
    mp = pytest.MonkeyPatch()
    base = tmp_path_factory.getbasetemp()
    _set_isolated_key(mp, base)
    _set_isolated_defaults(mp, base)
    yield
    mp.undo()


@pytest.fixture(autouse=True)
def _isolated_key(tmp_path_factory, monkeypatch):
    """Never touch the user's real key file from a test (again per test: a test or fixture that
    changed os.environ without monkeypatch must not leak into the next test)."""
    _set_isolated_key(monkeypatch, tmp_path_factory.getbasetemp())


@pytest.fixture(autouse=True)
def _isolated_defaults(tmp_path_factory, monkeypatch):
    """Never read the user's own agent logs nor write their default database from a test."""
    _set_isolated_defaults(monkeypatch, tmp_path_factory.getbasetemp())


def shared_logs(sub: str = "claude-code") -> Path:
    """The shared real corpus; skip when absent, but fail under CI=true (it must be there)."""
    p = (SHARED_LOGS / sub).resolve()  # a symlinked corpus folder too (see SHARED)
    if not p.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"shared corpus {p} is missing under CI=true")
        pytest.skip(f"shared corpus {p} not present (a user's fresh clone)")
    return p


def shared_dataset(tmp_path_factory, sub: str):
    """A shared corpus ingested into a fresh database (its own key) and loaded as replay arrays."""
    from replay import store
    from replay.model.arrays import load_dataset
    from replay.store.load import ingest

    d = tmp_path_factory.mktemp(sub)
    db = d / "x.duckdb"
    ingest([shared_logs(sub)], db, key_file=d / "key")
    con = store.connect(db, read_only=True)
    try:
        return load_dataset(con, "default")
    finally:
        con.close()


@pytest.fixture(autouse=True)
def _no_terminal_width(monkeypatch):
    """Tables piped to a file follow $COLUMNS (replay/cli/fmt.table_width): a narrow terminal's
    exported width must not wrap the cells the tests read. A test that wants it sets it."""
    monkeypatch.delenv("COLUMNS", raising=False)
