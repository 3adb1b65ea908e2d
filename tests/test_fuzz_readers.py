"""Fuzzing the readers: mutated, truncated, reordered, duplicated and type-swapped records.

The reader must never raise anything but FileError (a whole file it cannot use), must count
every line it skips by reason, and the intact sessions beside a broken one must ingest whole.
"""

import json


from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.store.load import ingest
from replay.ingest.keys import Keyring
from replay.ingest.readers import claude_code, codex, copilot, gemini, gemini_chat
from replay.ingest.readers.base import REPAIR_REASONS, SKIP_REASONS, FileError, ReadReport, Records

from cc_records import basic_session

KEYS = Keyring(b"f" * 32)
BASE = [json.dumps(r) for r in basic_session().records]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def _swap(rec: dict, data) -> dict:
    """Replace a random (possibly nested) field by a random JSON value of another type."""
    rec = json.loads(json.dumps(rec))
    node = rec
    for _ in range(data.draw(st.integers(0, 3))):
        if isinstance(node, dict) and node:
            k = data.draw(st.sampled_from(sorted(node)))
            if isinstance(node[k], (dict, list)) and node[k]:
                node = node[k]
                continue
        break
    if isinstance(node, dict) and node:
        node[data.draw(st.sampled_from(sorted(node)))] = data.draw(json_values)
    elif isinstance(node, list) and node:
        node[data.draw(st.integers(0, len(node) - 1))] = data.draw(json_values)
    return rec


@st.composite
def mutated_lines(draw):
    lines = list(BASE)
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["truncate", "delete", "duplicate", "swap_order", "type_swap", "garbage", "empty"]))
        i = draw(st.integers(0, len(lines) - 1))
        if op == "truncate":
            lines[i] = lines[i][: draw(st.integers(0, max(0, len(lines[i]) - 1)))]
        elif op == "delete" and len(lines) > 1:
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "swap_order":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "type_swap":
            try:
                lines[i] = json.dumps(_swap(json.loads(lines[i]), draw(st.data())))
            except json.JSONDecodeError:
                pass
        elif op == "garbage":
            lines.insert(i, draw(st.text(max_size=40)).replace("\n", " "))
        else:
            lines.insert(i, "")
    return lines


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_lines(), st.booleans())
def test_claude_reader_never_crashes_and_counts_skips(tmp_path_factory, lines, trailing_newline):
    path = tmp_path_factory.mktemp("fz") / "s.jsonl"
    data = ("\n".join(lines) + ("\n" if trailing_newline else "")).encode("utf-8", "surrogatepass")
    path.write_bytes(data)
    report = ReadReport()
    try:
        trace = claude_code.read_session(path, KEYS, "d", "f", report, data=data)
    except FileError:
        return
    assert set(report.skipped) <= set(SKIP_REASONS)
    if trace is not None:
        n = trace.n_blocks
        assert all(len(v) == n for v in trace.blocks.values())
        assert all(len(v) == trace.n_requests for v in trace.requests.values())
        per_stream: dict[int, list[int]] = {}
        for sid, pos in zip(trace.blocks["stream_id"], trace.blocks["pos"]):
            per_stream.setdefault(sid, []).append(pos)
        assert all(p == list(range(len(p))) for p in per_stream.values()), "positions must stay dense"


@settings(max_examples=60, deadline=None)
@given(st.lists(json_values.filter(lambda v: isinstance(v, dict)) | json_values, min_size=1, max_size=8))
def test_every_reader_survives_arbitrary_records(tmp_path_factory, records):
    path = tmp_path_factory.mktemp("fz") / "x.jsonl"
    data = "\n".join(json.dumps(r) for r in records).encode()
    path.write_bytes(data)
    for mod in (claude_code, codex, copilot, gemini, gemini_chat):
        report = ReadReport()
        try:
            trace = mod.read_session(path, KEYS, "d", "f", report, data=data)
        except FileError:
            continue
        # anything but FileError propagates and fails the test; what the reader skipped is
        # counted by a known reason, and a trace it returns is consistent
        assert set(report.skipped) <= set(SKIP_REASONS), (mod.__name__, report.skipped)
        assert all(n > 0 for n in report.skipped.values())
        if trace is not None:
            assert all(len(v) == trace.n_blocks for v in trace.blocks.values()), mod.__name__
            assert all(len(v) == trace.n_requests for v in trace.requests.values()), mod.__name__


def test_intact_sessions_ingest_beside_broken_ones(tmp_path):
    logs = tmp_path / "logs"
    good = basic_session(session_id="good")
    good.write_jsonl(logs / "good.jsonl")
    broken = logs / "broken.jsonl"
    lines = BASE[:]
    lines[2] = lines[2][:30]
    lines.insert(4, "[not, json")
    lines.append(json.dumps({"type": "assistant", "message": "should be an object", "sessionId": "x"}))
    broken.write_text("\n".join(lines) + "\n")
    s = ingest([logs], tmp_path / "t.duckdb", key_file=tmp_path / "k")
    assert s.sessions == 2 and s.failed == []
    assert s.report.skipped == {"invalid_json": 2, "malformed_record": 1}


finite_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
object_records = st.lists(st.dictionaries(st.text(max_size=8), finite_values, max_size=4), min_size=1, max_size=6)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(object_records, st.sampled_from([None, 1, 2, 4, "\t"]))
def test_documents_stream_to_the_same_records_as_jsonl(tmp_path_factory, records, indent):
    d = tmp_path_factory.mktemp("doc")
    jsonl = d / "a.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records))
    doc = d / "b.json"
    doc.write_text(json.dumps(records, indent=indent))
    chat = d / "c.json"
    obj = {"sessionId": "s", "startTime": "t", "messages": records, "lastUpdated": "u"}
    chat.write_text(json.dumps(obj, indent=indent))
    want = [r for _, r in Records(jsonl, ReadReport())]
    assert want == records
    assert [r for _, r in Records(doc, ReadReport())] == records
    got = Records(chat, ReadReport())
    if indent is None:  # one line: a JSONL record (the chat reader takes its messages)
        assert [r for _, r in got] == [obj]
    else:
        assert [r for _, r in got] == records
        assert got.kind == "document" and got.meta == {"sessionId": "s", "startTime": "t", "lastUpdated": "u"}


@st.composite
def mutated_document(draw):
    lines = json.dumps([json.loads(x) for x in BASE], indent=2).split("\n")
    for _ in range(draw(st.integers(1, 5))):
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["truncate", "delete", "duplicate", "garbage", "bad_utf8"]))
        if op == "truncate":
            lines[i] = lines[i][: draw(st.integers(0, max(0, len(lines[i]) - 1)))]
        elif op == "delete" and len(lines) > 1:
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "garbage":
            lines.insert(i, draw(st.text(max_size=20)).replace("\n", " "))
        else:
            lines[i] = lines[i].replace('"', '"\udcff', 1)
    return "\n".join(lines).encode("utf-8", "surrogateescape")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_document())
def test_damaged_documents_never_crash_and_count_what_they_skip(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("fz") / "s.json"
    path.write_bytes(data)
    report = ReadReport()
    try:
        trace = claude_code.read_session(path, KEYS, "d", "f", report, data=data)
    except FileError:
        return
    assert set(report.skipped) <= set(SKIP_REASONS) and set(report.repaired) <= set(REPAIR_REASONS)
    if trace is not None:
        assert all(len(v) == trace.n_blocks for v in trace.blocks.values())
