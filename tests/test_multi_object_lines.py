"""A JSONL line holding several JSON objects (Claude Code sometimes appends a record to a line):
every complete object is read and counted; a broken tail is still skipped with file:line."""

from __future__ import annotations

import json

from replay.ingest.readers.base import ReadReport, Records
from replay.ingest.readers.claude_code import read_session
from replay.ingest.keys import Keyring

from cc_records import Transcript, text, tool_use, usage
from conftest import shared_logs


def _records(path):
    report = ReadReport()
    return list(Records(path, report)), report


def test_several_objects_on_one_line_are_all_read(tmp_path):
    a, b, c = {"type": "a", "n": 1}, {"type": "b", "s": "x}{y"}, {"type": "c"}
    p = tmp_path / "multi.jsonl"
    p.write_text(json.dumps(a) + "\n" + json.dumps(b) + json.dumps(c) + "\n" + json.dumps(a) + " \t" + json.dumps(c)
                 + "\n")
    recs, report = _records(p)
    assert recs == [(1, a), (2, b), (2, c), (3, a), (3, c)]
    assert report.repaired == {"multi_object_line": 2} and not report.skipped
    assert any(f"{p}:2: multi object line" in m for m in report.messages)


def test_a_broken_tail_after_complete_objects_is_still_reported(tmp_path):
    a, b = {"type": "a"}, {"type": "b"}
    p = tmp_path / "tail.jsonl"
    p.write_text(json.dumps(a) + json.dumps(b) + '{"type": "c", "tru' + "\n" + json.dumps(a) + '{"x": ' + "\n"
                 + '{"broken": \n' + json.dumps(b) + json.dumps(a) + '{"cut')   # last line: no newline
    recs, report = _records(p)
    assert recs == [(1, a), (1, b), (2, a), (4, b), (4, a)]
    assert report.skipped == {"invalid_json": 3, "truncated_last_line": 1}
    assert report.repaired == {"multi_object_line": 2}
    for line in (1, 2, 3):
        assert any(m.startswith(f"{p}:{line}: invalid json") for m in report.messages), line
    assert any(m.startswith(f"{p}:4: truncated last line") for m in report.messages)


def test_values_that_are_not_objects_and_numbers_orjson_refuses(tmp_path):
    p = tmp_path / "odd.jsonl"
    p.write_text('{"type": "a"}[1, 2]\n{"n": 1e400}\n{"n": 1e400}{"type": "b"}\n{"n": NaN}{"type": "b"}\n')
    recs, report = _records(p)
    assert recs == [(1, {"type": "a"})]
    # the slow path refuses what orjson refuses (an infinite number, NaN): those lines stay invalid
    assert report.skipped == {"not_an_object": 1, "invalid_json": 3}
    assert report.repaired == {"multi_object_line": 1}


def test_claude_code_records_appended_to_a_line_reach_the_trace(tmp_path):
    t = Transcript()
    t.user("hello")
    t.assistant("msg_1", [text("hi")], usage(write=100), final_output=3)
    t.user("again")
    t.assistant("msg_2", [tool_use("tu1", "Read", file_path="/home/alice/proj/a.py")], usage(write=50, read=100))
    lines = [json.dumps(r) for r in t.records]
    joined = tmp_path / "joined.jsonl"
    joined.write_text(lines[0] + "\n" + lines[1] + lines[2] + "\n" + lines[3] + "\n")
    whole = t.write_jsonl(tmp_path / "whole.jsonl")
    keys = Keyring(b"k" * 32)
    rep = ReadReport()
    got = read_session(joined, keys, "d", "f", rep)
    want = read_session(whole, keys, "d", "f", ReadReport())
    assert got.blocks["content_hash"] == want.blocks["content_hash"] and got.n_requests == want.n_requests == 2
    assert rep.repaired == {"multi_object_line": 1} and not rep.skipped


def test_the_real_file_with_an_appended_record_is_read_whole():
    f = shared_logs("entire-cli") / "entireio__cli__ee-cf21d297fe-0-full.jsonl"
    recs, report = _records(f)
    assert "invalid_json" not in report.skipped
    assert report.repaired["multi_object_line"] >= 1
    on_line = {}
    for line, rec in recs:
        on_line.setdefault(line, []).append(rec.get("type"))
    multi = [types for types in on_line.values() if len(types) > 1]
    assert len(multi) == report.repaired["multi_object_line"]
    assert all(len(types) >= 2 and all(isinstance(t, str) for t in types) for types in multi)
