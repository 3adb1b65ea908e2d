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
VOLATILE = {"created_at", "ingested_at", "applied_at", "started_at", "finished_at"}


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
