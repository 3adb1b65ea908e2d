"""Lost or wrong data (issue 37): a shrunken log never replaces its fuller stored version, a
saving is measured on the sessions both runs replayed alike, a NUL byte costs its line wherever
it is, duplicate JSON keys are counted, and a database of a newer schema is read with a warning.

Every log here is built from synthetic records (tests/cc_records.py)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import duckdb

from replay.ingest.readers.dupkeys import duplicate_keys
from replay.store.load import ingest

from cc_records import Transcript, text, usage
from test_hostile import run
from test_ingest import q


def _session(sid: str, n: int, cwd: str = "/home/alice/proj", start: int = 0) -> Transcript:
    """A prompt, then ``n`` responses each followed by a user turn."""
    t = Transcript(session_id=sid, cwd=cwd)
    t.user("hello")
    for i in range(start, start + n):
        t.assistant(f"{sid}-m{i}", [text(f"answer {i} " + "word " * (i % 7))],
                    usage(inp=10 + i, write=100 + 3 * i, read=1000 * i), final_output=7)
        t.user(f"next {i}")
    return t


def _settle(*paths: Path) -> None:
    """Set the files' times in the past, so that their stat signature is taken (not racily clean)."""
    past = time.time() - 30
    for p in paths:
        os.utime(p, (past, past))


# --- 1. a log that shrinks keeps its fuller stored version --------------------------------------

def test_truncated_log_keeps_the_fuller_stored_version(tmp_path):
    logs, db = tmp_path / "logs", tmp_path / "t.duckdb"
    f = _session("s1", 57).write_jsonl(logs / "a.jsonl")
    full = f.read_bytes()
    _settle(f)
    assert ingest([logs], db).requests == 57
    f.write_bytes(full[: len(full) // 6 + 17])  # cut mid-line
    _settle(f)
    s = ingest([logs], db)
    assert (s.ingested, s.new_versions, s.requests) == (0, 0, 0)
    assert [(Path(p).name, m) for p, _, m in s.shorter_versions] == [("a.jsonl", 57)]
    assert 0 < s.shorter_versions[0][1] < 57
    assert s.as_dict()["shorter_versions"][0]["stored_requests"] == 57
    assert q(db, "SELECT sum(n_requests), count(*) FROM sessions") == [(57, 1)]
    assert q(db, "SELECT count(*) FROM requests") == [(57,)]
    # the shorter version is remembered: not read again while it is unchanged
    s = ingest([logs], db)
    assert (s.unchanged, s.shorter_versions) == (1, [])
    # a version that grows past the stored one replaces it, as any grown file does
    f.write_bytes(full + b"".join(json.dumps(r).encode() + b"\n" for r in _session("s1", 3, start=57).records[1:]))
    _settle(f)
    s = ingest([logs], db)
    assert (s.ingested, s.new_versions, s.shorter_versions) == (1, 1, [])
    assert q(db, "SELECT sum(n_requests), count(*) FROM sessions") == [(60, 1)]


def test_a_log_cut_to_no_context_keeps_its_session(tmp_path):
    logs, db = tmp_path / "logs", tmp_path / "t.duckdb"
    f = _session("s1", 5).write_jsonl(logs / "a.jsonl")
    _settle(f)
    ingest([logs], db)
    full = f.read_bytes()
    f.write_bytes(full.split(b"\n")[0] + b"\n")  # the first prompt alone: no request
    _settle(f)
    s = ingest([logs], db)
    assert len(s.shorter_versions) == 1 and s.shorter_versions[0][1:] == (0, 5)
    assert q(db, "SELECT sum(n_requests) FROM sessions") == [(5,)]
    f.write_bytes(full[:40])  # not even the first record: the file fails alone, its session stays
    _settle(f)
    s = ingest([logs], db)
    assert len(s.failed) == 1 and q(db, "SELECT sum(n_requests) FROM sessions") == [(5,)]


def test_a_smaller_rewrite_of_other_requests_is_stored(tmp_path):
    """Smaller, but not a prefix of the stored session (other requests): a new version, as before."""
    logs, db = tmp_path / "logs", tmp_path / "t.duckdb"
    f = _session("s1", 10).write_jsonl(logs / "a.jsonl")
    _settle(f)
    ingest([logs], db)
    t = Transcript(session_id="s1")
    t.user("hello")
    t.assistant("other-m0", [text("x")], usage(), final_output=7)
    t.write_jsonl(f)
    _settle(f)
    s = ingest([logs], db)
    assert (s.new_versions, s.shorter_versions) == (1, [])
    assert q(db, "SELECT sum(n_requests) FROM sessions") == [(1,)]


def test_ingest_output_names_the_shorter_file(tmp_path):
    logs, db = tmp_path / "logs", tmp_path / "t.duckdb"
    f = _session("s1", 20).write_jsonl(logs / "a.jsonl")
    _settle(f)
    assert run("ingest", logs, "--db", db).exit_code == 0
    f.write_bytes(f.read_bytes()[:3000])
    _settle(f)
    r = run("ingest", logs, "--db", db)
    assert r.exit_code == 0, r.output
    assert "1 files shorter than the version stored from them" in r.output and str(f) in r.output
    assert "the stored version 20" in r.output


# --- 2. a saving on the sessions both runs replayed alike --------------------------------------

def _replay(db: Path, policy: str) -> dict:
    r = run("replay", "--db", db, "--policy", policy, "--variants", "calibrated", "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_replay_against_a_baseline_stored_before_an_ingest(tmp_path):
    logs, db = tmp_path / "logs", tmp_path / "t.duckdb"
    for i in range(4):
        _session(f"s{i}", 6 + i).write_jsonl(logs / f"s{i}.jsonl")
    _settle(*logs.iterdir())
    ingest([logs], db)
    _replay(db, "noop")
    time.sleep(0.01)
    for i in range(4, 7):  # three sessions more, and one stored session read again (it grew)
        _session(f"s{i}", 30).write_jsonl(logs / f"s{i}.jsonl")
    _session("s0", 9).write_jsonl(logs / "s0.jsonl")
    _settle(*logs.iterdir())
    ingest([logs], db)
    got = _replay(db, "observation_masking")
    s = got["variants"]["calibrated"]["saving"]
    assert (s["sessions"], s["run_sessions"], s["baseline_sessions"]) == (3, 7, 4)
    assert s["left_out"] == {"run_only": 3, "baseline_only": 0, "changed": 1}
    run_id, base = got["run_id"], s["baseline_run"]
    con = duckdb.connect(str(db), read_only=True)
    b, c = con.execute(  # the sessions both runs replayed with the same requests: the grown one is not
        "SELECT sum(x.cost), sum(y.cost) FROM run_sessions x JOIN run_sessions y USING (session_key) "
        "WHERE x.run_id = ? AND y.run_id = ? AND x.requests = y.requests", [base, run_id]).fetchone()
    con.close()
    assert abs(s["baseline_cost"] - b) < 1e-9 and abs(s["cost"] - c) < 1e-9
    ci = s["interval"]
    assert ci is None or ci["low"] - 1e-12 <= s["saved_pct"] <= ci["high"] + 1e-12
    # the text says on which sessions, and how to measure them all
    r = run("replay", "--db", db, "--policy", "observation_masking", "--variants", "calibrated")
    assert r.exit_code == 0, r.output
    flat = " ".join(r.output.split())
    assert "measured on the 3 sessions both runs replayed alike, of 7" in flat
    assert "3 the baseline lacks" in flat and "1 ingested again between the two runs" in flat
    assert "--policy noop" in flat
    # compare measures the same saving on the same sessions
    rows = json.loads(run("compare", "--db", db, "--json").stdout)
    row = next(x for x in rows if x["run_id"] == run_id)
    assert row["sessions_compared"] == 3 and row["sessions_left_out"]["changed"] == 1
    assert abs(row["saved_pct"]["cost"] - s["saved_pct"]) < 1e-12
    ci = row["interval"]["cost"]
    assert ci["low"] - 1e-12 <= row["saved_pct"]["cost"] <= ci["high"] + 1e-12
    # a fresh baseline covers every session again
    _replay(db, "noop")
    s = _replay(db, "observation_masking")["variants"]["calibrated"]["saving"]
    assert (s["sessions"], s["left_out"]) == (7, None)


# --- 3. a NUL byte costs its line, wherever it is; duplicate keys are counted --------------------

def _with_nul(path: Path, line: int) -> None:
    lines = path.read_bytes().split(b"\n")
    lines[line] = lines[line][:20] + b"\x00" + lines[line][20:]
    path.write_bytes(b"\n".join(lines))


def test_a_nul_byte_costs_one_line_early_or_late(tmp_path):
    got = {}
    for name, line in (("early", 2), ("late", 30)):  # both user turns: one line each, no request lost
        f = _session(name, 18).write_jsonl(tmp_path / name / "a.jsonl")
        assert line < len(f.read_bytes().split(b"\n")) - 1
        _with_nul(f, line)
        s = ingest([f], tmp_path / f"{name}.duckdb")
        got[name] = (s.failed, s.requests, dict(s.report.skipped))
        assert f"a.jsonl:{line + 1}:" in s.report.messages[0]
    assert got["early"] == got["late"] == ([], 18, {"invalid_json": 1})


def test_a_binary_file_is_still_named_binary(tmp_path):
    f = tmp_path / "image.jsonl"
    f.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 50)
    s = ingest([f], tmp_path / "t.duckdb")
    assert s.failed == [(str(f), "binary file (NUL bytes), not a JSON log")]


def test_duplicate_keys_are_counted_with_file_and_line(tmp_path):
    t = _session("dup", 4)
    f = t.write_jsonl(tmp_path / "a.jsonl")
    lines = f.read_bytes().split(b"\n")
    rec = lines[1]  # the first response
    assert b'"usage": {"input_tokens": 10' in rec
    lines[1] = rec.replace(b'"usage": {"input_tokens": 10', b'"usage": {"input_tokens": 999, "input_tokens": 10')
    lines[3] = lines[3].replace(b'"type": "assistant"', b'"type": "user", "type": "assistant"')
    f.write_bytes(b"\n".join(lines))
    s = ingest([f], tmp_path / "t.duckdb")
    assert s.report.repaired == {"duplicate_key": 2} and s.requests == 4
    assert [m.split(": ")[0] for m in s.report.messages] == [f"{f}:2", f"{f}:4"]
    assert s.as_dict()["repaired_lines"] == {"duplicate_key": 2}
    # the last value is the one read, as before
    assert q(tmp_path / "t.duckdb", "SELECT min(input_tokens) FROM requests") == [(10,)]


def test_duplicate_key_check():
    assert duplicate_keys(b'{"a":1,"b":{"c":2,"c":3}}', {"a": 1, "b": {"c": 3}}) == 1
    assert duplicate_keys(b'{"a": 1, "a": 2, "b": "x\\":"}', {"a": 2, "b": 'x":'}) == 1
    assert duplicate_keys(b'{"a": 1, "b": "say \\"x\\": y"}', {"a": 1, "b": 'say "x": y'}) == 0
    assert duplicate_keys(b'{"a":1,"b":[{"k":1},{"k":2}]}', {"a": 1, "b": [{"k": 1}, {"k": 2}]}) == 0
    raw = memoryview(b'[{"k":1,"k":1}]')
    assert duplicate_keys(raw, [{"k": 1}]) == 1


# --- 4. a database of a newer schema: read with one warning, never written ----------------------

def test_a_newer_schema_is_read_with_one_warning_and_never_written(tmp_path):
    logs, db = tmp_path / "logs", tmp_path / "t.duckdb"
    _session("s1", 3).write_jsonl(logs / "a.jsonl")
    ingest([logs], db)
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO schema_migrations VALUES (999, 'from the future', now())")
    con.close()
    r = run("sessions", "--db", db, "--json")
    assert r.exit_code == 0, r.output
    warn = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(warn) == 1 and warn[0].startswith("warning: ") and "schema version 999" in warn[0], r.stderr
    assert "upgrade ctxreplay" in warn[0] and len(json.loads(r.stdout)) == 1
    r = run("ingest", logs, "--db", db)
    assert r.exit_code != 0 and "schema version 999" in r.stderr and "upgrade ctxreplay" in r.stderr


def test_a_duplicate_key_in_a_long_line_is_counted_too(tmp_path):
    """A line of any length is checked: a planted second usage in a 200 KB response line is named."""
    t = _session("duplong", 4)
    f = t.write_jsonl(tmp_path / "a.jsonl")
    lines = f.read_bytes().split(b"\n")
    rec = lines[1]
    long_text = b'"type": "text", "text": "' + b"x" * 200_000 + b'"'
    rec = rec.replace(b'"type": "text"', long_text, 1)
    assert len(rec) > 200_000 and b'"usage": {"input_tokens": 10' in rec
    lines[1] = rec.replace(b'"usage": {"input_tokens": 10', b'"usage": {"input_tokens": 999, "input_tokens": 10')
    f.write_bytes(b"\n".join(lines))
    s = ingest([f], tmp_path / "t.duckdb")
    assert s.report.repaired == {"duplicate_key": 1}
    assert [m.split(": ")[0] for m in s.report.messages] == [f"{f}:2"]
