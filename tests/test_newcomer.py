"""A newcomer's first hour (issue 38): days in the machine's own time zone by default, an empty
answer that says what the logs cover, and a path that does not exist creates no database."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from replay.cli import main, sample_logs_dir

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory):
    from replay.store.load import ingest

    db = tmp_path_factory.mktemp("newcomer") / "s.duckdb"
    ingest([sample_logs_dir()], db, key_file=db.parent / "key")
    return db


def test_a_missing_path_creates_no_database(tmp_path):
    db = tmp_path / "x.duckdb"
    key = tmp_path / "key"
    key.write_text(os.urandom(32).hex() + "\n")
    key.chmod(0o600)
    r = CliRunner().invoke(main, ["ingest", str(tmp_path / "nope"), "--db", str(db), "--key-file", str(key)])
    assert r.exit_code == 1
    assert "no such file or directory" in r.output and "no database written" in r.output
    assert not db.exists()


def test_an_empty_slice_names_the_days_the_logs_cover(sample_db):
    got = json.loads(CliRunner().invoke(main, ["usage", "--db", str(sample_db), "--by", "day", "--json",
                                               "--timezone", "UTC"]).stdout)
    first, last = got["rows"][0]["key"], got["rows"][-1]["key"]
    for args in (["usage", "--by", "day"], ["sessions"]):
        r = CliRunner().invoke(main, [*args, "--db", str(sample_db), "--since", "2099-01-01", "--timezone", "UTC"])
        assert r.exit_code == 0, r.output
        assert f"the logs span {first} to" in r.output and f"--since {first}" in r.output
    r = CliRunner().invoke(main, ["whatif", "--db", str(sample_db), "--since", "2099-01-01", "--scenario", "ttl_1h"])
    assert r.exit_code == 1 and "the logs span" in r.output and "{" not in r.output  # no JSON slice in the message
    assert last >= first


def test_days_are_local_by_default_and_dst_aware(sample_db, tmp_path):
    """$TZ decides the default zone (as ccusage's days do); an IANA zone, so a day after a
    daylight-saving change keeps its own offset; --timezone UTC still gives UTC days."""
    env = {**os.environ, "TZ": "America/Los_Angeles", "CTXREPLAY_KEY_FILE": str(sample_db.parent / "key")}
    p = subprocess.run([sys.executable, "-m", "replay.cli", "usage", "--db", str(sample_db), "--by", "day", "--json"],
                       capture_output=True, text=True, env=env, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["filters"]["timezone"] == "America/Los_Angeles"
    p = subprocess.run([sys.executable, "-m", "replay.cli", "usage", "--db", str(sample_db), "--by", "day", "--json",
                        "--timezone", "UTC"], capture_output=True, text=True, env=env, cwd=ROOT)
    assert json.loads(p.stdout)["filters"]["timezone"] == "UTC"
    from replay.cli.usage import local_zone

    os.environ["TZ"], old = "Europe/Paris", os.environ.get("TZ")
    try:
        assert getattr(local_zone(), "key", None) == "Europe/Paris"
        os.environ["TZ"] = "UTC"
        from datetime import timezone

        assert local_zone() == timezone.utc
    finally:
        if old is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = old


def test_usage_by_project_resolves_pseudonyms_with_the_key(sample_db):
    r = CliRunner().invoke(main, ["usage", "--db", str(sample_db), "--by", "project", "--json", "--resolve",
                                  str(sample_logs_dir())], env={"CTXREPLAY_KEY_FILE": str(sample_db.parent / "key")})
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)["rows"]
    named = [x for x in rows if x.get("project_path")]
    assert named and all(x["project_path"].startswith("/") for x in named)
    assert all(x["key"] != x["project_path"] for x in named)  # the key stays the pseudonym
    r = CliRunner().invoke(main, ["usage", "--db", str(sample_db), "--by", "day", "--resolve", str(sample_logs_dir())])
    assert r.exit_code == 2 and "--by project" in r.output
