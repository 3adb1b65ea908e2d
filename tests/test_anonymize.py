"""Anonymized Claude Code logs: same format, same trace structure and token counts, no contents."""

from __future__ import annotations

import json
import posixpath
import re
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import orjson
from click.testing import CliRunner

from replay.privacy.schema import TOOL_NAME_RX
from replay.privacy.anonymize import PATH_KEYS, TOOL_PATH_KEYS, AnonymizeSummary, anonymize_tree, size_class_ok
from replay.cli.privacy import anonymize as anonymize_cmd
from replay.store.load import discover
from replay.ingest.keys import Keyring, load_or_create_master_key
from replay.ingest.readers.base import ReadReport
from replay.ingest.readers.claude_code import read_session
from replay.ingest.tokens import count_many

from cc_records import Transcript, basic_session, text, tool_use, usage
from conftest import shared_logs

SID = "3f2c9a1e-7b4d-4e8f-9a6b-1c2d3e4f5a6b"
SID2 = "8e7d6c5b-4a39-4281-8706-f5e4d3c2b1a0"
AGENT = "a1b2c3d4"
GH_TOKEN = "ghp_Zr4Lq9Wm2Xt7Bn5Kc1Vd8Hs3Gf6Jp0AyQw12"
SENSITIVE = ["alice", "SECRETPROMPT_alpha", "FILELINE_unique_marker_1", GH_TOKEN, "alice@example.org",
             "intranet.alice-corp.net", "feature/alice-login", "ALICE_PRIVATE_NOTE", "hunter2Xy!"]


@dataclass(frozen=True)
class PathsAsWritten(Keyring):
    """Reads paths as written (normalized, relative ones resolved against cwd) instead of
    pseudonymizing them again: the anonymized log's paths must *be* the trace's pseudonyms."""

    def path(self, path: str, cwd: str | None = None) -> str:
        if not path:
            return ""
        p = path.replace("\\", "/")
        if not p.startswith("/") and not p.startswith("~") and cwd:
            p = posixpath.join(cwd.replace("\\", "/"), p)
        return posixpath.normpath(p)


def build_fixture(root: Path) -> Path:
    """A session with every kind of block, a subagent file and a Stop-hook JSON dump."""
    proj = root / "-home-alice-proj"
    t = basic_session(session_id=SID, cwd="/home/alice/proj")
    for r in t.records:
        r["gitBranch"] = "feature/alice-login"
    t.user(f"deploy with {GH_TOKEN} and mail alice@example.org about https://intranet.alice-corp.net/wiki")
    t.assistant("msg_b1", [{"type": "thinking", "thinking": "The user wants ALICE_PRIVATE_NOTE handled.",
                            "signature": "EqQBCkYIBxgCKkB" + "x" * 120},
                           text("Reading it."), tool_use("tu5", "Grep", pattern="def parse", path="src"),
                           tool_use("tu6", "Bash", command="pytest -q tests/ && cat /home/alice/.netrc",
                                    description="run the tests")],
                usage(write=100, read=5200, w1h=100), final_output=60)
    t.tool_result("tu5", "src/parser.py:1:def parse():\n")
    t.tool_result("tu6", [{"type": "text", "text": "3 passed in 0.12s"},
                          {"type": "text", "text": "password = 'hunter2Xy!' # from ~/.netrc"}])
    # a loaded skill's content: its opening stays as written (the readers' "skill" event), the
    # path of alice's skill folder does not
    t.raw({**t.records[-1], "type": "user", "uuid": "00000000-0000-4000-8000-00000000a003", "isMeta": True,
           "message": {"role": "user", "content": [{"type": "text", "text": (
               "Base directory for this skill: /home/alice/.claude/skills/alice-review\n\n# Review\n\n"
               "Check ALICE_PRIVATE_NOTE first.")}]}})
    # a Task subagent carried by progress records (Claude Code 2.1.x): its own stream, its text filled
    t.assistant("msg_b4", [tool_use("tu8", "Task", prompt="find ALICE_PRIVATE_NOTE")], usage(write=30, read=5250),
                final_output=7)
    sub = t.subagent("c0ffee12", "tu8", "find ALICE_PRIVATE_NOTE in /home/alice/proj")
    sub.assistant("msg_p1", [{"type": "thinking", "thinking": "alice keeps notes in src"},
                             tool_use("tp1", "Read", file_path="/home/alice/proj/src/notes.py", limit=5)],
                  usage(inp=4, write=2000), final_output=11)
    sub.tool_result("tp1", "     1\tALICE_PRIVATE_NOTE = 'hunter2Xy!'\n     2\t# alice@example.org\n")
    # a command over several lines: its tool_use block is fitted whole (JSON escapes change its count)
    sub.assistant("msg_p2", [tool_use("tp2", "Bash", command='cd /home/alice/proj && for f in src/*.py; do\n'
                                      '  grep -n "def \\|class " "$f" | head -3\ndone\necho "alice: done"',
                                      description="list the definitions")],
                  usage(inp=2, read=2000, write=50), final_output=9)
    sub.tool_result("tp2", "src/notes.py:1:class Notes:\nalice: done\n")
    sub.assistant("msg_p3", [text("Found in src/notes.py")], usage(inp=2, read=2050, write=40), final_output=6)
    t.tool_result("tu8", "Found in src/notes.py")
    t.user("please look at the parser SECRETPROMPT_alpha")  # same text as the first prompt
    t.assistant("msg_b2", [tool_use("tu7", "Read", file_path="/home/alice/proj/src/parser.py")],
                usage(write=40, read=5300, w1h=40), final_output=12)
    t.tool_result("tu7", "def parse():\n    return 'FILELINE_unique_marker_1'\n")  # same as the first read
    t.raw({"parentUuid": t.parent, "isSidechain": False, "type": "attachment", "cwd": t.cwd, "sessionId": SID,
           "uuid": "00000000-0000-4000-8000-00000000a001", "timestamp": "2026-01-01T10:05:00.000Z",
           "attachment": {"type": "new_file", "filename": "/home/alice/proj/notes.md",
                          "content": "TODO: ask alice about the parser"}})
    png = "iVBORw0KGgoAAAANSUhEUgAAAGQAAABkCAYAAABw4pVUAAAA" + "QUJD" * 200
    t.raw({"parentUuid": t.parent, "isSidechain": False, "type": "user", "cwd": t.cwd, "sessionId": SID,
           "uuid": "00000000-0000-4000-8000-00000000a002", "timestamp": "2026-01-01T10:05:30.000Z",
           "message": {"role": "user", "content": [{"type": "image", "source": {
               "type": "base64", "media_type": "image/png", "data": png}}, {"type": "text", "text": "see screenshot"}]}})
    t.compact("Summary: alice asked about the parser; FILELINE_unique_marker_1 was found.", pre_tokens=5400)
    t.user("continue")
    t.assistant("msg_b3", [text("Done.")], usage(write=900, read=0), final_output=3)  # same text as before
    t.write_jsonl(proj / f"{SID}.jsonl")

    side = Transcript(session_id=SID, cwd="/home/alice/proj", sidechain=True, agent_id=AGENT)
    side.user("look for ALICE_PRIVATE_NOTE in src")
    side.assistant("msg_s1", [tool_use("ts1", "Glob", pattern="**/*.py")], usage(write=300, read=0), final_output=8)
    side.tool_result("ts1", "/home/alice/proj/src/parser.py")
    side.assistant("msg_s2", [text("Found it in parser.py")], usage(write=20, read=300), final_output=9)
    side.write_jsonl(proj / SID / "subagents" / f"agent-{AGENT}.jsonl")

    dump = basic_session(session_id=SID2, cwd="/home/alice/other")
    dump.write_json_array(proj / "stop-hook-dump.json")
    (proj / "notes.txt").write_text("not a log, with alice's notes")
    return root


def units(root: Path):
    problems: list = []
    return discover([root], problems)


def read_trace(unit, keys):
    return read_session(unit.main, keys, "d", "f", ReadReport(), subagent_files=unit.subagents)


def paired_traces(src: Path, dst: Path, summary: AnonymizeSummary, keys_raw, keys_anon):
    """(raw trace, anonymized trace) per session, paired through the summary's file mapping."""
    out_of = {src / a: dst / b for a, b in summary.outputs}
    anon_units = {u.main: u for u in units(dst)}
    pairs = []
    for u in units(src):
        pairs.append((read_trace(u, keys_raw), read_trace(anon_units[out_of[u.main]], keys_anon)))
    return pairs


def path_tool_blocks(src: Path) -> set[str]:
    """Tool names that were called with a path argument somewhere in the raw logs, and
    "attachment" if an attachment names a file: blocks whose path pseudonym changes their size."""
    names = set()
    for f in sorted(src.rglob("*.json*")):
        data = f.read_bytes()
        recs = orjson.loads(data) if data.lstrip()[:1] == b"[" else [orjson.loads(x) for x in data.splitlines() if x.strip()]
        for r in recs:
            inner = (r.get("data") or {}).get("message") if r.get("type") == "progress" else None
            r = inner if isinstance(inner, dict) else r  # a Task subagent's line carried by a progress record
            if r.get("type") == "attachment" and isinstance(r.get("attachment"), dict):
                if PATH_KEYS & set(r["attachment"]):
                    names.add("attachment")
            content = (r.get("message") or {}).get("content") if isinstance(r.get("message"), dict) else None
            for p in content if isinstance(content, list) else []:
                if isinstance(p, dict) and p.get("type") == "tool_use" and isinstance(p.get("input"), dict):
                    if TOOL_PATH_KEYS & set(p["input"]):
                        names.add(p.get("name"))
    return names


def carries_path(raw, i: int, path_tools: set[str]) -> bool:
    kind = raw.blocks["kind"][i]
    return (kind == "tool_use" and raw.blocks["tool_name"][i] in path_tools) or \
        (kind == "attachment" and "attachment" in path_tools)


def assert_same_structure(raw, anon):
    """Everything but contents, token counts and bytes: kinds, tools, positions, usage, links."""
    rb, ab = raw.blocks, anon.blocks
    for col in ("stream_id", "pos", "partition", "user_turn", "req_idx", "role", "kind", "tool_kind",
                "line_start", "line_end", "is_error", "ts"):
        assert rb[col] == ab[col], col
    # tool names are kept when they match the tool-name grammar, else keyed pseudonyms (one per name)
    pseudo: dict = {}
    for x, y in zip(rb["tool_name"], ab["tool_name"]):
        if x != y:
            assert re.fullmatch(r"tool_[0-9a-f]{10}", y or "") and TOOL_NAME_RX.match(y), (x, y)
            assert pseudo.setdefault(x, y) == y, (x, y)
    for col in ("stream_id", "req_idx", "position", "partition", "user_turn", "ts", "model", "input_tokens",
                "cache_write_5m", "cache_write_1h", "cache_read", "output_tokens", "has_usage", "ttl_split_known",
                "client_version", "client_event"):
        assert raw.requests[col] == anon.requests[col], col
    assert raw.streams["kind"] == anon.streams["kind"]
    assert raw.streams["n_blocks"] == anon.streams["n_blocks"]
    for col in ("pos", "partition", "trigger", "pre_tokens"):
        assert raw.compactions[col] == anon.compactions[col], col
    # equal-content structure, both ways, and the tool_use <-> tool_result links
    for col in ("content_hash", "tool_use_key", "args_hash"):
        a2b, b2a = {}, {}
        for x, y in zip(rb[col], ab[col]):
            if x is None and y is None:
                continue
            assert a2b.setdefault(x, y) == y, col
            assert b2a.setdefault(y, x) == x, col


def test_fixture_roundtrip_paths_as_pseudonyms(tmp_path):
    src = build_fixture(tmp_path / "src")
    dst = tmp_path / "dst"
    keys = Keyring(b"k" * 32)
    s = anonymize_tree(src, dst, keys, path_style="pseudonym")
    assert s.files == 3 and s.failed == [] and s.skipped_files == ["-home-alice-proj/notes.txt"]
    assert s.secrets_removed >= 2
    blob = b"".join(p.read_bytes() for p in dst.rglob("*") if p.is_file())
    names = "/".join(str(p.relative_to(dst)) for p in dst.rglob("*"))
    for v in SENSITIVE:
        assert v.encode() not in blob, v
        assert v not in names
    assert "subagents" in names and "agent-" in names and SID not in names

    pairs = paired_traces(src, dst, s, keys, keys)
    assert len(pairs) == 2
    # the skill load survives (assert_same_structure compares client events)
    assert "skill" in [e for raw, _ in pairs for e in raw.requests["client_event"]]
    path_tools = path_tool_blocks(src)
    for raw, anon in pairs:
        assert_same_structure(raw, anon)
        for i, kind in enumerate(raw.blocks["kind"]):
            rt, at = raw.blocks["tokens"][i], anon.blocks["tokens"][i]
            if carries_path(raw, i, path_tools):
                assert at >= rt  # a path pseudonym is longer than the path it replaces
                continue
            assert rt == at, (i, kind)
            assert size_class_ok(raw.blocks["bytes"][i], anon.blocks["bytes"][i]), (i, kind)
    # the paths written are the trace's pseudonyms: read as written, they equal the raw resources
    for raw, anon in paired_traces(src, dst, s, keys, PathsAsWritten(keys.dataset_key)):
        assert raw.blocks["resource"] == anon.blocks["resource"]
        assert any(r for r in raw.blocks["resource"])
    # and re-ingested with the key, equal paths still give equal resources
    for raw, anon in pairs:
        a2b = {}
        for x, y in zip(raw.blocks["resource"], anon.blocks["resource"]):
            assert (x is None) == (y is None)
            assert a2b.setdefault(x, y) == y


def test_fixture_roundtrip_token_exact_words(tmp_path):
    src = build_fixture(tmp_path / "src")
    dst = tmp_path / "dst"
    keys = Keyring(b"w" * 32)
    s = anonymize_tree(src, dst, keys, path_style="words")
    assert s.blocks_token_mismatch == 0
    blob = b"".join(p.read_bytes() for p in dst.rglob("*") if p.is_file())
    for v in SENSITIVE:
        assert v.encode() not in blob, v
    pairs = paired_traces(src, dst, s, keys, keys)
    # the main session's subagents: one from its separate file, one from its progress records
    assert sorted(raw.streams["kind"] for raw, _ in pairs) == [["main"], ["main", "progress_subagent", "subagent"]]
    for raw, anon in pairs:
        assert_same_structure(raw, anon)
        assert raw.blocks["tokens"] == anon.blocks["tokens"]
        for i in range(raw.n_blocks):
            assert size_class_ok(raw.blocks["bytes"][i], anon.blocks["bytes"][i]), i
        # paths keep equality and containment
        res_r = [r for r in raw.blocks["resource"]]
        res_a = [r for r in anon.blocks["resource"]]
        assert [r is None for r in res_r] == [r is None for r in res_a]
        for x1, y1 in zip(res_r, res_a):
            for x2, y2 in zip(res_r, res_a):
                if x1 and x2:
                    assert (x1 == x2) == (y1 == y2)
                    assert x2.startswith(x1 + "/") == y2.startswith(y1 + "/")


def _records(path: Path) -> list[dict]:
    data = path.read_bytes()
    if data.lstrip()[:1] == b"[":
        return orjson.loads(data)
    return [orjson.loads(x) for x in data.splitlines() if x.strip()]


def test_output_format_and_links(tmp_path):
    src = build_fixture(tmp_path / "src")
    dst = tmp_path / "dst"
    s = anonymize_tree(src, dst, Keyring(b"k" * 32))
    out_of = dict(s.outputs)
    main = dst / out_of[f"-home-alice-proj/{SID}.jsonl"]
    dump = dst / out_of["-home-alice-proj/stop-hook-dump.json"]
    sub = dst / out_of[f"-home-alice-proj/{SID}/subagents/agent-{AGENT}.jsonl"]
    assert dump.read_bytes().lstrip().startswith(b"[")
    assert isinstance(json.loads(dump.read_text()), list)
    assert all(line.startswith("{") for line in main.read_text().splitlines())
    # the session file and its subagent directory keep their relation
    assert sub.parent.parent == main.parent / main.stem
    raw, anon = _records(src / f"-home-alice-proj/{SID}.jsonl"), _records(main)
    assert [r["type"] for r in raw] == [r["type"] for r in anon]
    assert len({r["sessionId"] for r in anon}) == 1 and anon[0]["sessionId"] == main.stem
    assert {r["agentId"] for r in _records(sub)} == {sub.stem.removeprefix("agent-")}
    uuids = {r["uuid"] for r in anon}
    assert all(r["parentUuid"] is None or r["parentUuid"] in uuids for r in anon)
    assert [r.get("parentUuid") is None for r in raw] == [r.get("parentUuid") is None for r in anon]
    # message ids are shared by the lines of one response, as in the raw log
    mids = lambda recs: [r["message"]["id"] for r in recs if r["type"] == "assistant"]
    groups = lambda ids: [ids.index(x) for x in ids]
    assert groups(mids(raw)) == groups(mids(anon))
    # kept verbatim: usage, timestamps, model, types, compaction metadata, numbers
    for r, a in zip(raw, anon):
        assert r["timestamp"] == a["timestamp"]
        assert r.get("compactMetadata") == a.get("compactMetadata")
        assert r.get("isCompactSummary") == a.get("isCompactSummary")
        if r["type"] == "assistant":
            assert r["message"]["usage"] == a["message"]["usage"]
            assert r["message"]["model"] == a["message"]["model"]
            for pr, pa in zip(r["message"]["content"], a["message"]["content"]):
                assert pr["type"] == pa["type"]
                if pr["type"] == "tool_use":
                    assert pr["name"] == pa["name"] and list(pr["input"]) == list(pa["input"])
                    for k, v in pr["input"].items():
                        if isinstance(v, int):
                            assert pa["input"][k] == v
    # the image keeps its header (dimensions) and size
    img = next(p for r in anon if r["type"] == "user" and isinstance(r["message"]["content"], list)
               for p in r["message"]["content"] if p.get("type") == "image")
    raw_img = next(p for r in raw if r["type"] == "user" and isinstance(r["message"]["content"], list)
                   for p in r["message"]["content"] if p.get("type") == "image")
    assert img["source"]["data"][:32] == raw_img["source"]["data"][:32]
    assert len(img["source"]["data"]) == len(raw_img["source"]["data"]) and img != raw_img


def test_deterministic_and_keyed(tmp_path):
    src = build_fixture(tmp_path / "src")
    a1, a2, b = tmp_path / "a1", tmp_path / "a2", tmp_path / "b"
    sa = anonymize_tree(src, a1, Keyring(b"k" * 32))
    anonymize_tree(src, a2, Keyring(b"k" * 32))
    sb = anonymize_tree(src, b, Keyring(b"j" * 32))
    files = lambda d: {p.relative_to(d): p.read_bytes() for p in d.rglob("*") if p.is_file()}
    assert files(a1) == files(a2)
    fa, fb = files(a1), files(b)
    assert set(fa) != set(fb)  # names are keyed too
    # another key: other words, other pseudonyms, same token counts
    ka, kb = dict(sa.outputs), dict(sb.outputs)
    rel = f"-home-alice-proj/{SID}.jsonl"
    ra, rb = _records(a1 / ka[rel]), _records(b / kb[rel])
    ta = [r["message"]["content"] for r in ra if r["type"] == "user" and isinstance(r["message"]["content"], str)]
    tb = [r["message"]["content"] for r in rb if r["type"] == "user" and isinstance(r["message"]["content"], str)]
    assert ta != tb and count_many(ta) == count_many(tb)


def test_time_shift_keeps_gaps(tmp_path):
    src = build_fixture(tmp_path / "src")
    dst = tmp_path / "dst"
    keys = Keyring(b"k" * 32)
    s = anonymize_tree(src, dst, keys, time_shift=True)
    pairs = paired_traces(src, dst, s, keys, keys)
    offsets = set()
    for raw, anon in pairs:
        for x, y in zip(raw.blocks["ts"], anon.blocks["ts"]):
            offsets.add(y - x)
    assert len(offsets) == 1
    (off,) = offsets
    assert off <= -365 * 86_400_000  # at least a year back
    rec = _records(dst / dict(s.outputs)[f"-home-alice-proj/{SID}.jsonl"])[0]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", rec["timestamp"])


def test_drop_tool_names_and_arg_keys(tmp_path):
    src = build_fixture(tmp_path / "src")
    dst = tmp_path / "dst"
    keys = Keyring(b"k" * 32)
    s = anonymize_tree(src, dst, keys, keep_tool_names=False, keep_arg_keys=False)
    blob = b"".join(p.read_bytes() for p in dst.rglob("*") if p.is_file())
    for name in (b'"Read"', b'"Grep"', b'"file_path"', b'"pattern"'):
        assert name not in blob
    for raw, anon in paired_traces(src, dst, s, keys, keys):
        names_r, names_a = raw.blocks["tool_name"], anon.blocks["tool_name"]
        a2b = {}
        for x, y in zip(names_r, names_a):
            assert (x is None) == (y is None)
            if x is not None:
                assert a2b.setdefault(x, y) == y and y.startswith("tool_")
        assert raw.blocks["kind"] == anon.blocks["kind"]


def test_key_file_matches_ingest_pseudonyms(tmp_path):
    """With a key file and dataset name, the paths written equal what ingest stores."""
    src = build_fixture(tmp_path / "src")
    key_file = tmp_path / "master.key"
    master = load_or_create_master_key(key_file)
    s = anonymize_tree(src, tmp_path / "dst", key_file, dataset="team", path_style="pseudonym")
    keys = Keyring.for_dataset(master, "team")
    for raw, anon in paired_traces(src, tmp_path / "dst", s, keys, PathsAsWritten(keys.dataset_key)):
        assert raw.blocks["resource"] == anon.blocks["resource"]


def test_fillers_match_token_counts_and_size():
    from replay.privacy.records import Anonymizer
    from replay.privacy.texts import Text

    an = Anonymizer(Keyring(b"f" * 32), keep_tool_names=True, keep_arg_keys=True, time_shift=False,
                    deny={"alice"}, summary=AnonymizeSummary())
    samples = [
        "x", "ok", "PASSED", "3 passed in 0.12s", "def parse():\n    return 1\n" * 40,
        "日本語のテキストと絵文字 🎉🎉🎉 " * 20, "    " * 500 + "x", "=" * 3000,
        "class A:\n    def f(self):\n        if self.x:\n            return {'k': [1, 2, 3]}\n" * 30,
        "iVBORw0KGgo" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo" * 100, " ".join(["alice"] * 10),
        "\n".join(f"{i:6d}\u2192line {i} of the file" for i in range(3000)),
    ]
    an.texts.resolve_texts([Text(t) for t in samples])
    raw_counts = count_many(samples)
    fill = [an.texts.fill[t] for t in samples]
    assert count_many(fill) == raw_counts
    assert len(set(fill)) == len(fill)
    for t, f in zip(samples, fill):
        assert "alice" not in f
        # runs of hundreds of spaces or '=' are 40-80 bytes per token: fillers stay smaller there
        if len(t) >= 8 and not t.startswith(("=" * 10, " " * 10)):
            assert size_class_ok(len(t.encode()), len(f.encode())), (t[:20], len(t.encode()), len(f.encode()))


def test_bad_files_and_lines(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "empty.jsonl").write_text("")
    (src / "binary.jsonl").write_bytes(b"\x00\x01\x02")
    t = basic_session(session_id=SID)
    lines = [json.dumps(r) for r in t.records]
    lines.insert(3, '{"type": "user", "message": {"content": "cut off')  # corrupt line mid-file
    (src / f"{SID}.jsonl").write_text("\n".join(lines) + "\n")
    s = anonymize_tree(src, tmp_path / "dst", Keyring(b"k" * 32))
    assert s.files == 1 and s.lines_dropped == 1 and s.records == len(t.records)
    # a 0-byte file beside good ones is named and skipped, not a failure (issue 37)
    assert sorted(f for f, _ in s.failed) == ["binary.jsonl"]
    assert [str(f) for f in s.empty_inputs] in (["empty.jsonl"], [str(src / "empty.jsonl")])
    # a single session file brings its subagent files along
    one = build_fixture(tmp_path / "fx") / "-home-alice-proj" / f"{SID}.jsonl"
    s1 = anonymize_tree(one, tmp_path / "one", Keyring(b"k" * 32))
    assert s1.files == 2 and any("subagents" in b for _, b in s1.outputs)


def test_cli(tmp_path):
    src = build_fixture(tmp_path / "src")
    runner = CliRunner()
    res = runner.invoke(anonymize_cmd, ["--help"])
    assert res.exit_code == 0 and "--key-file" in res.output and "--shift-timestamps" in res.output
    out = tmp_path / "out"
    key = tmp_path / "k"
    load_or_create_master_key(key)  # a key file named with --key-file must exist
    res = runner.invoke(anonymize_cmd, [str(src), str(out), "--key-file", str(key), "-q"])
    assert res.exit_code == 0, res.output
    assert "3 files" in res.output and "secrets removed" in res.output
    res = runner.invoke(anonymize_cmd, [str(src), str(out), "--key-file", str(key), "-q"])
    assert res.exit_code != 0 and "--force" in res.output
    res = runner.invoke(anonymize_cmd, [str(src), str(out), "--key-file", str(key), "--force", "--json",
                                        "--drop-tool-names", "--shift-timestamps", "--path-style", "words"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    assert summary["files"] == 3 and "outputs" not in summary
    res = runner.invoke(anonymize_cmd, [str(src), str(src / "inside"), "--key-file", str(key)])
    assert res.exit_code != 0


# --- the shared real corpus --------------------------------------------------------------

_HOME = re.compile(rb"/(?:Users|home)/([A-Za-z0-9._-]+)")
_EMAIL = re.compile(rb"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_HOST = re.compile(rb"\b(?:https?|wss?|ssh|git|ftp)://(?:[^\s/@\"'<>]*@)?([A-Za-z0-9.-]+)")
_BRANCH = re.compile(rb'"gitBranch":\s*"([^"]*)"')


def _structural_strings(out: Path) -> bytes:
    """JSON keys, record/part types, roles, tool and model names of the output: words a
    sensitive value may coincide with without coming from the raw text."""
    seen: set[str] = set()

    def walk(o, key=None):
        if isinstance(o, dict):
            for k, v in o.items():
                seen.add(k)
                walk(v, k)
        elif isinstance(o, list):
            for v in o:
                walk(v, key)
        elif isinstance(o, str) and key in ("type", "role", "name", "model", "subtype", "userType", "version"):
            seen.add(o)

    for p in out.rglob("*.json*"):
        walk(_records(p))
    return "\n".join(sorted(seen)).encode()


def test_shared_corpus(tmp_path):
    logs = shared_logs("claude-code")
    t0 = time.perf_counter()
    keys = Keyring.for_dataset(b"shared-corpus-test-key", "default")
    out = tmp_path / "anon"
    s = anonymize_tree(logs, out, keys)
    t_anon = time.perf_counter() - t0
    assert s.files == 27 and s.failed == []

    # no home path, user name, e-mail address, URL host or branch name survives, in any byte
    raw_blob = b"\n".join(p.read_bytes() for p in sorted(logs.iterdir()))
    values: dict[str, set[bytes]] = defaultdict(set)
    for m in _HOME.finditer(raw_blob):
        values["home path"].add(m.group(0))
        values["user name"].add(m.group(1))
    values["e-mail"] = set(_EMAIL.findall(raw_blob))
    values["host"] = set(_HOST.findall(raw_blob))
    values["git branch"] = set(_BRANCH.findall(raw_blob)) - {b""}
    out_blob = b"\n".join(p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file())
    out_names = "\n".join(str(p.relative_to(out)) for p in out.rglob("*")).encode()
    structural = _structural_strings(out)
    leaked, exempt = [], []
    for kind, vs in values.items():
        for v in vs:
            if v in out_blob or v in out_names:
                (exempt if v in structural else leaked).append((kind, v))
    print(f"\nshared corpus: {s.bytes_in / 1e6:.1f} MB anonymized in {t_anon:.1f}s "
          f"({s.bytes_in / 1e6 / t_anon:.1f} MB/s); {s.texts_replaced} texts, {s.secrets_removed} secrets, "
          f"{sum(len(v) for v in values.values())} sensitive values checked; "
          f"present only as structural words: {sorted(v.decode() for _, v in exempt)}")
    assert leaked == []
    assert all(len(v) <= 6 for _, v in exempt)  # only short common words ("user") may coincide

    # the trace of the anonymized logs: same structure; every block without a path argument
    # has exactly the raw token count
    pairs = paired_traces(logs, out, s, keys, keys)
    path_tools = path_tool_blocks(logs)
    n = exact = n_free = exact_free = 0
    tok_raw = tok_anon = 0
    for raw, anon in pairs:
        assert_same_structure(raw, anon)
        for i, kind in enumerate(raw.blocks["kind"]):
            rt, at = raw.blocks["tokens"][i], anon.blocks["tokens"][i]
            n += 1
            exact += rt == at
            tok_raw += rt
            tok_anon += at
            if not carries_path(raw, i, path_tools):
                n_free += 1
                exact_free += rt == at
    print(f"pseudonym paths: {exact / n:.2%} of {n} blocks exact; {exact_free / n_free:.3%} of the {n_free} blocks "
          f"without a path argument; total tokens {tok_anon / tok_raw - 1:+.3%}")
    assert exact_free / n_free >= 0.999

    # token-exact paths: >= 99% of all blocks exact, total within 1%
    out_w = tmp_path / "anon-words"
    sw = anonymize_tree(logs, out_w, keys, path_style="words")
    n = exact = tok_raw = tok_anon = 0
    for (raw, _), (_, anon) in zip(pairs, paired_traces(logs, out_w, sw, keys, keys)):
        assert raw.blocks["kind"] == anon.blocks["kind"]
        for rt, at in zip(raw.blocks["tokens"], anon.blocks["tokens"]):
            n += 1
            exact += rt == at
            tok_raw += rt
            tok_anon += at
    print(f"word paths: {exact / n:.2%} of {n} blocks exact; total tokens {tok_anon / tok_raw - 1:+.4%}; "
          f"whole test {time.perf_counter() - t0:.1f}s")
    assert exact / n >= 0.99
    assert abs(tok_anon / tok_raw - 1) <= 0.01
