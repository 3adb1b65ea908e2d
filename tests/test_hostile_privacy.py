"""Hostile input for `anonymize` (issue 18): planted values are checked ABSENT from the output.

Each test plants values of one kind where the anonymizer used to keep strings verbatim
(dict keys, enum-like values, model / tool names, versions, ``usage`` extras, MCP names, IP
addresses in paths) or breaks on bad input (invalid UTF-8, deep nesting, full disk, crash).
"""

from __future__ import annotations

import errno
import json
import re
from pathlib import Path

import orjson
import pytest

import replay.privacy.anonymize as anonymize_mod
import replay.privacy.files as files_mod
from replay.ingest.keys import Keyring
from replay.privacy.anonymize import anonymize_tree
from replay.privacy.fillers import Fillers
from replay.privacy.vocabulary import filler_vocabulary

from cc_records import Transcript, basic_session, text, tool_use, usage

SID = "5d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6"
KEY = Keyring(b"h" * 32)
AWS_ID = "AKIAQ3EGRWZ5XK7LQ2MP"
GH = "ghp_Zr4Lq9Wm2Xt7Bn5Kc1Vd8Hs3Gf6Jp0AyQw12"
NAME = "JohnSmithPrivateCo"


def _write(root: Path, t: Transcript, name: str = f"{SID}.jsonl") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    return t.write_jsonl(root / name)


def _anon(tmp_path: Path, t: Transcript, **kw) -> tuple[bytes, anonymize_mod.AnonymizeSummary]:
    src = tmp_path / "src"
    _write(src, t)
    dst = tmp_path / "dst"
    s = anonymize_tree(src, dst, KEY, **kw)
    blob = b"\n".join(p.read_bytes() for p in sorted(dst.rglob("*")) if p.is_file())
    return blob, s


def _absent(blob: bytes, *planted: str) -> None:
    for v in planted:
        assert v.encode() not in blob, v


# --- 1. dict keys ------------------------------------------------------------------------

def test_secret_dict_keys_are_anonymized(tmp_path):
    t = basic_session(session_id=SID)
    t.assistant("msg_k1", [tool_use("tk1", "mcp__vault__put", **{AWS_ID: "v1", GH: "v2", "plain_arg": "v3"})],
                usage(write=10, read=100), final_output=5)
    t.tool_result("tk1", "stored")
    t.raw({"type": "system", "subtype": "informational", "sessionId": SID, "uuid": "00000000-0000-4000-8000-0000000000k1",
           "timestamp": "2026-01-01T11:00:00.000Z", AWS_ID: 1, GH: {"nested": True},
           "toolUseResult": {f"x_{AWS_ID}": "y", "ok": 1}})
    blob, s = _anon(tmp_path, t)
    _absent(blob, AWS_ID, GH, "Zr4Lq9Wm2Xt7Bn5Kc1Vd8")
    assert b'"plain_arg"' in blob and b'"nested"' in blob  # clean names stay
    assert s.keys_replaced >= 3


# --- 2. enum values, models, tools, versions, usage, MCP ---------------------------------

def _planted_session() -> Transcript:
    t = basic_session(session_id=SID)
    t.version = f"2.1.3 bob@corp.example /home/bob/{NAME}"
    t.assistant("msg_e1", [tool_use("te1", f"Bash /home/bob/{NAME} password=Hunter2xyz", command="ls")],
                usage(write=10, read=100), model=f"claude-opus-4-6 /home/bob/{NAME}", final_output=5)
    t.tool_result("te1", "ok")
    for key in ("type", "status", "mode", "kind", "level", "operation", "subtype", "trigger", "permissionMode",
                "stop_reason", "entrypoint", "userType", "hookEvent", "encoding", "service_tier", "speed"):
        t.raw({"type": "progress", "sessionId": SID, "uuid": f"00000000-0000-4000-8000-{abs(hash(key)) % 10**12:012d}",
               "timestamp": "2026-01-01T11:00:00.000Z", "data": {key: NAME, "deep": [{key: NAME.lower() + "-x"}]}})
    rec = t.assistant("msg_e2", [text("hi")], usage(write=1, read=100), final_output=1)[0]
    rec["message"]["usage"].update({"note": NAME, NAME: 3, "service_tier": NAME, "input_tokens": 7,
                                    "server_tool_use": {"web_search_requests": 1, "who": NAME},
                                    "iterations": [{"type": NAME, "input_tokens": 1}]})
    t.raw({"type": "system", "subtype": "compact_boundary", "sessionId": SID, "uuid": "00000000-0000-4000-8000-0000000000c1",
           "timestamp": "2026-01-01T11:01:00.000Z", "content": "Conversation compacted",
           "compactMetadata": {"trigger": NAME, "preTokens": 100, "by": NAME}})
    t.raw({"type": "progress", "sessionId": SID, "uuid": "00000000-0000-4000-8000-0000000000m1",
           "timestamp": "2026-01-01T11:02:00.000Z",
           "data": {"type": "mcp_progress", "serverName": "acmecorp-billing", "toolName": "refund_customer",
                    "status": "started"}})
    t.assistant("msg_e3", [tool_use("te3", "mcp__acmecorp-billing__refund_customer", amount=5)],
                usage(write=1, read=100), final_output=1)
    t.tool_result("te3", "done")
    return t


def test_planted_enum_model_tool_version_usage_values_are_absent(tmp_path):
    blob, s = _anon(tmp_path, _planted_session())
    _absent(blob, NAME, NAME.lower(), "/home/bob", "bob@corp.example", "Hunter2xyz", "password=")
    recs = [orjson.loads(x) for x in blob.splitlines() if x.strip()]
    # known vocabulary and grammar values are kept
    assert {r["type"] for r in recs} >= {"user", "assistant", "progress", "system"}
    models = {r["message"]["model"] for r in recs if r["type"] == "assistant"}
    assert "claude-sonnet-4-5" in models and any(m.startswith("model-") for m in models)
    names = {p["name"] for r in recs if r["type"] == "assistant" for p in r["message"]["content"]
             if p.get("type") == "tool_use"}
    assert {"Read", "mcp__acmecorp-billing__refund_customer"} <= names and any(n.startswith("tool_") for n in names)
    versions = {r.get("version") for r in recs} - {None}
    assert "2.1.50" in versions and all(re.match(r"^\d+\.\d+\.\d+$", v) or " " in v for v in versions)
    u = next(r["message"]["usage"] for r in recs if r["type"] == "assistant" and "iterations" in r["message"]["usage"])
    assert u["input_tokens"] == 7 and u["server_tool_use"]["web_search_requests"] == 1
    assert s.enums_replaced > 0


def test_mcp_names_pseudonymized_on_request(tmp_path):
    blob, _ = _anon(tmp_path, _planted_session(), pseudonymize_mcp=True)
    _absent(blob, "acmecorp", "billing", "refund_customer")
    recs = [orjson.loads(x) for x in blob.splitlines() if x.strip()]
    names = [p["name"] for r in recs if r["type"] == "assistant" for p in r["message"]["content"]
             if p.get("type") == "tool_use"]
    mcp = [n for n in names if n.startswith("mcp__")]
    assert len(mcp) == 1 and "Read" in names  # built-in tools stay
    _, server, tool = mcp[0].split("__")
    progress = next(r["data"] for r in recs if isinstance(r.get("data"), dict) and "serverName" in r["data"])
    assert (progress["serverName"], progress["toolName"]) == (server, tool)  # still joinable


# --- 4. IP addresses in paths ------------------------------------------------------------

@pytest.mark.parametrize("style", ["pseudonym", "words"])
def test_ip_address_keeps_no_octet_as_extension(tmp_path, style):
    t = basic_session(session_id=SID)
    t.assistant("msg_ip", [tool_use("tip", "Read", file_path="/mnt/10.20.30.47/share/report.pdf"),
                           tool_use("tip2", "LS", path="/srv/10.20.30.47")],
                usage(write=1, read=100), final_output=1)
    t.tool_result("tip", "x")
    t.tool_result("tip2", "y")
    blob, _ = _anon(tmp_path, t, path_style=style)
    _absent(blob, "10.20.30.47", ".47\"", ".47/")
    assert b".pdf" in blob  # real extensions stay


# --- 5. filler vocabulary ----------------------------------------------------------------

# Independent of the list in replay/privacy/vocabulary.py: exact words, then roots that no
# filler word may contain.
DENY_EXACT = set("""anal anus arse ass bitch bomb boob cock coon crap culo cum cunt dago damn dick dildo dyke
fag fuck gay gook gun hell homo hore jap kike kill nazi negro nigga nude orgy paki pedo penis piss porn puta
puto rape semen sex shit slut spic tit tits twat vagina wank whore wop""".split())
DENY_ROOTS = ("fuck", "shit", "cunt", "nigg", "nazi", "rape", "porn", "slut", "whore", "pedo", "dildo", "penis",
              "vagin", "pussy", "bitch", "kike", "fagg", "hitler", "jizz", "molest")


def test_filler_vocabulary_has_no_offensive_words():
    vocab, _ = filler_vocabulary()
    words = {w.strip().lower() for ws in vocab.values() for w in ws}
    assert len(words) > 3000
    assert not (words & DENY_EXACT)
    assert [w for w in words if any(r in w for r in DENY_ROOTS)] == []
    used = {w.strip().lower() for ws in Fillers(None).vocab.values() for w in ws}
    assert used <= words


# --- 6. output integrity -----------------------------------------------------------------

def test_unreadable_content_gives_no_output_and_is_flagged(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "deep.jsonl").write_text("[" * 10_000 + "]" * 10_000 + "\n")
    (src / "deep-obj.jsonl").write_text('{"a":' * 600 + "1" + "}" * 600 + "\n")  # parses, too deep to walk/write
    (src / "numbers.json").write_text("[1, 2, 3]\n")
    (src / "garbage.jsonl").write_text("not json at all\n{{{\n")
    _write(src, basic_session(session_id=SID))
    s = anonymize_tree(src, tmp_path / "dst", KEY)
    bad = {"deep.jsonl", "deep-obj.jsonl", "numbers.json", "garbage.jsonl"}
    assert set(s.empty_outputs) == bad and {f for f, _ in s.failed} == bad
    assert s.incomplete and s.files == 1
    outs = [p for p in (tmp_path / "dst").rglob("*") if p.is_file()]
    assert len(outs) == 1 and all(p.stat().st_size > 0 for p in outs)
    assert all("no record could be read" in r for _, r in s.failed)
    # a single unreadable file: no output at all, not even the folder
    one = anonymize_tree(src / "deep.jsonl", tmp_path / "dst-one", KEY)
    assert one.incomplete and one.files == 0 and not (tmp_path / "dst-one").exists()


def test_first_line_array_does_not_reject_the_file(tmp_path):
    src = tmp_path / "src"
    t = basic_session(session_id=SID)
    src.mkdir()
    (src / f"{SID}.jsonl").write_text("[1,2,3]\n" + "".join(json.dumps(r) + "\n" for r in t.records))
    s = anonymize_tree(src, tmp_path / "dst", KEY)
    assert s.files == 1 and s.records == len(t.records) and s.drop_reasons == {"not_an_object": 1}


def test_invalid_utf8_replaces_only_the_bad_bytes(tmp_path):
    t = basic_session(session_id=SID)
    lines = [orjson.dumps(r) for r in t.records]
    bad = orjson.dumps({**t.records[0], "uuid": "00000000-0000-4000-8000-0000000000b1",
                        "message": {"role": "user", "content": "PLACEHOLDER_TEXT"}})
    bad = bad.replace(b"PLACEHOLDER_TEXT", b"caf\xe9 \xff\xfe SECRETWORD_utf8")
    lone = orjson.dumps({**t.records[0], "uuid": "00000000-0000-4000-8000-0000000000b2"}).replace(
        b'"userType":"external"', b'"userType":"external","note":"x\\ud800y SECRETWORD_surr"')
    src = tmp_path / "src"
    src.mkdir()
    (src / f"{SID}.jsonl").write_bytes(b"\n".join(lines + [bad, lone]) + b"\n")
    s = anonymize_tree(src, tmp_path / "dst", KEY)
    assert s.records == len(lines) + 2 and s.lines_dropped == 0 and s.invalid_utf8 == 2
    blob = b"".join(p.read_bytes() for p in (tmp_path / "dst").rglob("*.jsonl"))
    _absent(blob, "SECRETWORD_utf8", "SECRETWORD_surr")
    blob.decode("utf-8")  # the copy is valid UTF-8


def test_disk_full_leaves_no_partial_output(tmp_path, monkeypatch):
    src = tmp_path / "src"
    for i in range(3):
        _write(src, basic_session(session_id=f"{i}0000000-0000-4000-8000-000000000000"), f"s{i}.jsonl")
    real_write = files_mod.Writer.write
    calls = {"n": 0}
    per_file = 2 * len(basic_session().records)  # a line and its newline per record

    def failing_write(self, b):
        calls["n"] += 1
        if calls["n"] > per_file + 5:  # the second file runs out of space part-way
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(self, b)

    monkeypatch.setattr(files_mod.Writer, "write", failing_write)
    dst = tmp_path / "dst"
    with pytest.raises(OSError) as e:
        anonymize_tree(src, dst, KEY)
    assert e.value.errno == errno.ENOSPC and e.value.filename
    left = sorted(p.name for p in dst.rglob("*") if p.is_file())
    assert len(left) == 1 and not any(n.endswith(".partial") for n in left)  # the finished file only
    records = [orjson.loads(x) for x in next(dst.rglob("*.jsonl")).read_bytes().splitlines()]
    assert len(records) == len(basic_session().records)


def test_interrupt_leaves_no_file_under_the_final_name(tmp_path, monkeypatch):
    src = tmp_path / "src"
    _write(src, basic_session(session_id=SID))
    real_write = files_mod.Writer.write
    seen = []

    def interrupted(self, b):
        real_write(self, b)
        if len(seen) == 3:
            raise KeyboardInterrupt
        seen.append((self.out.exists(), self.tmp.exists()))

    monkeypatch.setattr(files_mod.Writer, "write", interrupted)
    with pytest.raises(KeyboardInterrupt):
        anonymize_tree(src, tmp_path / "dst", KEY)
    assert seen == [(False, True)] * 3  # written under a temporary name ...
    assert [p for p in (tmp_path / "dst").rglob("*") if p.is_file()] == []  # ... and removed


# --- 7. streaming ------------------------------------------------------------------------

def test_batches_do_not_change_the_output(tmp_path, monkeypatch):
    t = _planted_session()
    one, _ = _anon(tmp_path / "a", t)
    monkeypatch.setattr(files_mod, "BATCH_RECORDS", 2)
    monkeypatch.setattr(files_mod, "FILL_CACHE_CHARS", 10)
    many, _ = _anon(tmp_path / "b", t)
    assert one == many


def test_fifo_is_named_not_read(tmp_path):
    import os

    src = tmp_path / "src"
    _write(src, basic_session(session_id=SID))
    os.mkfifo(src / "pipe.jsonl")
    s = anonymize_tree(src, tmp_path / "dst", KEY)  # would hang if the FIFO were opened
    assert s.files == 1 and "pipe.jsonl" in s.skipped_files
    with pytest.raises(ValueError, match="not a regular file"):
        anonymize_tree(src / "pipe.jsonl", tmp_path / "dst2", KEY)


def test_long_texts_are_counted_in_pieces_exactly(monkeypatch):
    import random

    import replay.privacy.texts as texts_mod
    from replay.ingest.tokens import count_many

    rng = random.Random(18)
    alpha = ["\n", "\n\n", " ", "    ", "\r\n", "\t", "/", "a", "The", "'s", "1", "4567", "{", "}\n", "é", "中文",
             "😀", "\u0301", "-", "_", "x.y", '"', "Z", "9", "'ll", "  1\tdef f():", "//", "*/\n"]
    texts = ["".join(rng.choice(alpha) for _ in range(rng.randrange(50, 400))) for _ in range(300)]
    texts.append("\n".join(f"{i:>6}\t    return value_{i} + 1" for i in range(3000)))  # cat -n style
    monkeypatch.setattr(texts_mod, "LONG_TEXT", 40)
    monkeypatch.setattr(texts_mod, "_PIECE", 30)
    assert sum(len(list(texts_mod.count_pieces(t))) for t in texts) > 2 * len(texts)  # really cut
    assert texts_mod.count_texts(texts) == count_many(texts)
    assert "".join(texts_mod.count_pieces(texts[-1])) == texts[-1]
