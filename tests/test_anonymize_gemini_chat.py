"""Anonymizing Gemini CLI chat files (one JSON object with a ``messages`` array, named ``.jsonl``
by the Entire CLI): the copy is one JSON object that ingests to the same trace shape."""

from __future__ import annotations

import json
from pathlib import Path

import orjson

from replay.ingest.keys import Keyring
from replay.ingest.readers import gemini_chat
from replay.ingest.readers.base import ReadReport
from replay.privacy.anonymize import anonymize_tree

from conftest import shared_logs

KEYS = Keyring(b"g" * 32)
SID = "5f0c2a9e-1b7d-4c3e-9a8f-0d1e2f3a4b5c"
PROJECT_HASH = "9a1f" * 16
GH_TOKEN = "ghp_Zr4Lq9Wm2Xt7Bn5Kc1Vd8Hs3Gf6Jp0AyQw12"
PLANTED = ["alice", "SECRETPROMPT_alpha", "THOUGHT_marker_7", "FILELINE_unique_marker_1", GH_TOKEN,
           "/home/alice", "notes-private.md", "ALICE_PRIVATE_NOTE", "deploy_prod.sh", PROJECT_HASH, SID]


def _tokens(inp: int, cached: int, out: int, thoughts: int) -> dict:
    return {"input": inp, "output": out, "cached": cached, "thoughts": thoughts, "tool": 0,
            "total": inp + out + thoughts}


def chat_doc() -> dict:
    """A chat of the shape Gemini CLI writes: prompts, thoughts, tool calls with results."""
    ts = "2026-01-10T02:08:{:02d}.000Z".format
    read_id, sh_id = "read_file-1768010961326-7266fc4bc8133", "run_shell_command-1768010964047-e2271ae09efa58"
    return {
        "sessionId": SID, "projectHash": PROJECT_HASH, "startTime": ts(1), "lastUpdated": ts(59),
        "messages": [
            {"id": "m1", "timestamp": ts(1), "type": "user",
             "content": f"SECRETPROMPT_alpha: read /home/alice/proj/notes-private.md, token {GH_TOKEN}"},
            {"id": "m2", "timestamp": ts(5), "type": "gemini", "model": "gemini-2.5-pro",
             "content": "I will read the file for alice.",
             "thoughts": [{"subject": "Reading THOUGHT_marker_7", "description": "The user alice wants the notes.",
                           "timestamp": ts(4)},
                          {"subject": "Planning", "description": "Then run the deploy script.", "timestamp": ts(4)}],
             "tokens": _tokens(12874, 0, 18, 31),
             "toolCalls": [
                 {"id": read_id, "name": "read_file", "args": {"absolute_path": "/home/alice/proj/notes-private.md"},
                  "result": [{"functionResponse": {"id": read_id, "name": "read_file",
                                                   "response": {"output": "FILELINE_unique_marker_1\nALICE_PRIVATE_NOTE"}}}],
                  "status": "success", "timestamp": ts(6), "resultDisplay": "FILELINE_unique_marker_1",
                  "displayName": "ReadFile", "description": "Reads a file of alice", "renderOutputAsMarkdown": True},
                 {"id": sh_id, "name": "run_shell_command",
                  "args": {"command": "./deploy_prod.sh --user alice", "dir_path": "/home/alice/proj",
                           "description": "deploy"},
                  "result": [{"functionResponse": {"id": sh_id, "name": "run_shell_command",
                                                   "response": {"error": "permission denied for alice"}}}],
                  "status": "error", "timestamp": ts(7), "displayName": "Shell", "description": "Runs deploy_prod.sh",
                  "renderOutputAsMarkdown": False},
             ]},
            {"id": "m3", "timestamp": ts(9), "type": "info", "content": "Request cancelled by alice."},
            {"id": "m4", "timestamp": ts(10), "type": "user",
             "content": [{"text": "Now summarise notes-private.md for alice"}, {"text": "briefly"}]},
            {"id": "m5", "timestamp": ts(12), "type": "gemini", "model": "gemini-2.5-pro",
             "content": "The notes say nothing about ALICE_PRIVATE_NOTE.",
             "thoughts": [{"subject": "Summarising", "description": "Short answer.", "timestamp": ts(11)}],
             "tokens": _tokens(12075, 11693, 19, 14)},
        ],
    }


def read(path: Path):
    return gemini_chat.read_session(path, KEYS, "d", "f", ReadReport())


def assert_same_shape(raw, anon):
    """Per block: kind, role, token count, tool kind, error flag; per request: usage and model."""
    for col in ("kind", "role", "tokens", "tool_kind", "tool_name", "is_error", "pos", "req_idx", "user_turn", "ts"):
        assert raw.blocks[col] == anon.blocks[col], col
    for col in ("model", "input_tokens", "cache_read", "output_tokens", "cache_write_5m", "cache_write_1h",
                "has_usage", "ts", "position"):
        assert raw.requests[col] == anon.requests[col], col


def test_chat_document_roundtrip(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    raw_file = src / "chat-full.jsonl"
    raw_file.write_text(json.dumps(chat_doc(), indent=2))
    dst = tmp_path / "dst"
    s = anonymize_tree(src, dst, KEYS)
    assert s.failed == [] and s.files == 1 and s.records == 5
    assert s.blocks_checked > 0 and s.blocks_token_mismatch == 0 and s.secrets_removed >= 1
    [(_, out_rel)] = s.outputs
    out = dst / out_rel
    text = out.read_text()
    assert text.startswith("{\n")  # one pretty-printed object, as written
    for v in PLANTED:
        assert v not in text, v
    doc = orjson.loads(text)
    assert [m["type"] for m in doc["messages"]] == ["user", "gemini", "info", "user", "gemini"]
    g = doc["messages"][1]
    assert g["tokens"] == chat_doc()["messages"][1]["tokens"] and g["model"] == "gemini-2.5-pro"
    calls = g["toolCalls"]
    assert [c["name"] for c in calls] == ["read_file", "run_shell_command"]
    assert [c["status"] for c in calls] == ["success", "error"]
    # a call id and its functionResponse id get the same pseudonym
    assert calls[0]["id"] == calls[0]["result"][0]["functionResponse"]["id"] != chat_doc()["messages"][1]["toolCalls"][0]["id"]
    assert calls[0]["result"][0]["functionResponse"]["name"] == "read_file"
    assert doc["startTime"] == "2026-01-10T02:08:01.000Z" and doc["projectHash"] != PROJECT_HASH

    raw, anon = read(raw_file), read(out)
    assert raw is not None and anon is not None
    assert len(raw.requests["req_idx"]) == 2
    assert_same_shape(raw, anon)
    assert set(raw.blocks["kind"]) >= {"user_text", "thinking", "assistant_text", "tool_use", "tool_result"}


def test_compact_chat_stays_one_line_and_jsonl_untouched(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "chat.jsonl").write_text(json.dumps(chat_doc()) + "\n")
    dst = tmp_path / "dst"
    s = anonymize_tree(src, dst, KEYS)
    assert s.failed == [] and s.records == 5
    [(_, out_rel)] = s.outputs
    lines = (dst / out_rel).read_bytes().splitlines()
    assert len(lines) == 1 and isinstance(orjson.loads(lines[0])["messages"], list)
    assert_same_shape(read(src / "chat.jsonl"), read(dst / out_rel))


def test_warning_only_chat_is_copied_but_is_no_session(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    doc = {"sessionId": SID, "projectHash": PROJECT_HASH, "startTime": "2026-02-03T04:09:57.093Z",
           "lastUpdated": "2026-02-03T04:09:57.093Z",
           "messages": [{"id": "w1", "timestamp": "2026-02-03T04:09:57.093Z", "type": "warning",
                         "content": "alice: the session could not be resumed"}]}
    (src / "w.jsonl").write_text(json.dumps(doc, indent=2))
    dst = tmp_path / "dst"
    s = anonymize_tree(src, dst, KEYS)
    assert s.failed == [] and s.files == 1 and s.records == 1
    [(_, out_rel)] = s.outputs
    out = orjson.loads((dst / out_rel).read_bytes())
    assert out["messages"][0]["type"] == "warning" and "alice" not in out["messages"][0]["content"]
    assert read(src / "w.jsonl") is None and read(dst / out_rel) is None  # no request, no session


def _chat_files(root: Path) -> list[Path]:
    out = []
    for p in sorted(root.glob("*.jsonl")):
        data = p.read_bytes()
        if data.lstrip()[:1] == b"{" and b'"messages"' in data:
            try:
                doc = orjson.loads(data)
            except orjson.JSONDecodeError:
                continue
            if isinstance(doc, dict) and isinstance(doc.get("messages"), list):
                out.append(p)
    return out


def test_shared_entire_cli_chat_files(tmp_path):
    files = _chat_files(shared_logs("entire-cli"))
    assert len(files) >= 2
    sessions = 0
    for i, f in enumerate(files):
        dst = tmp_path / str(i)
        s = anonymize_tree(f, dst, KEYS)
        assert s.failed == [] and s.files == 1 and s.blocks_token_mismatch == 0, f.name
        [(_, out_rel)] = s.outputs
        out = dst / out_rel
        assert out.read_bytes().startswith(b"{")
        raw, anon = read(f), read(out)
        assert (raw is None) == (anon is None), f.name
        if raw is None:  # a chat with only a warning message: a copy, but no session
            continue
        sessions += 1
        assert_same_shape(raw, anon)
    assert sessions >= 1
