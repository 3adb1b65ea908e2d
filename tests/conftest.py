import os
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"
SHARED_LOGS = SHARED / "logs"


@pytest.fixture(autouse=True)
def _isolated_key(tmp_path_factory, monkeypatch):
    """Never touch the user's real key file from a test. A named key file must exist (only the
    default path is created on first use), so the test key is made here."""
    from replay.ingest.keys import load_or_create_master_key

    key = tmp_path_factory.getbasetemp() / "test.key"
    load_or_create_master_key(key)
    monkeypatch.setenv("CTXREPLAY_KEY_FILE", str(key))


@pytest.fixture(autouse=True)
def _isolated_defaults(tmp_path_factory, monkeypatch):
    """Never read the user's own agent logs nor write their default database from a test: a
    command run without --db ingests the default log folders first (replay/cli/autoingest.py).
    The Claude Code and Codex folders point to a missing place; HOME stays (tools keep caches
    under it), which leaves ~/.gemini and ~/.copilot: tests that need a HOME set their own."""
    base = tmp_path_factory.getbasetemp()
    monkeypatch.setenv("XDG_DATA_HOME", str(base / "xdg-data"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(base / "no-claude"))
    monkeypatch.setenv("CODEX_HOME", str(base / "no-codex"))
    monkeypatch.delenv("CTXREPLAY_DB", raising=False)
    monkeypatch.setenv("CTXREPLAY_CACHE_DIR", str(base / "cache"))  # the rates cache (replay/model/rates_cache.py)


def shared_logs(sub: str = "claude-code") -> Path:
    """The shared real corpus; skip when absent, but fail under CI=true (it must be there)."""
    p = SHARED_LOGS / sub
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
