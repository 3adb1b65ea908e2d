"""Issue 37, leaks: model names, record types/subtypes/roles, JSON keys, media types and
snapshot keys pass only through closed vocabularies.

Small hand-made logs of every format carry planted markers (every one holds ``zqx``, which
no filler word, hex pseudonym or vocabulary word spells). None may reach a database column,
``ingest`` (text or ``--json``), ``usage``/``sessions`` output, or a copy written by
``anonymize`` with every option on; the anonymized copies ingest to the raw figures, and a
price file naming a raw (pseudonymized) model still prices it.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from replay.ingest.identifiers import kept_model, model_pseudonym
from replay.ingest.keys import Keyring, load_or_create_master_key
from replay.privacy.anonymize import anonymize_tree

from cc_records import Transcript, text, tool_use, usage
from test_hostile import run

MARK = "zqx"
# model names of many shapes, none a public model id
MODELS = ["zqxlowermodel", "ZqxCamelModel", "zqx_snake_model", "zqx-kebab-model", "zqxprov/zqxmodel",
          "zqxmodel:zqxtag", "[zqxbracket]", "us.zqxbedrock.", "claude-opus-4-6[zqx]", "zqx-1a2b3c4d5e6f",
          "Zqx.Deploy.V2", "zqx@corp"]
PUBLIC = ["claude-opus-4-6", "claude-sonnet-4-5-20250929", "claude-opus-4@20250514", "claude-opus-4-6[1m]",
          "us.anthropic.claude-sonnet-4-20250514-v1:0", "gpt-5.1-codex-max", "o4-mini", "gemini-2.5-pro",
          "models/gemini-2.5-pro", "codex-mini-latest", "claude-opus-4-6 (fast)", "<synthetic>"]


def _jsonl(path: Path, records: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def claude_log(model: str, sid: str) -> list[dict]:
    t = Transcript(session_id=sid)
    t.user("hello")
    recs = t.assistant(f"msg_{sid}", [text("hi"), tool_use(f"tu_{sid}", "Read", file_path="/home/alice/p/a.py",
                                                           zqxArgKey="v")],
                       {**usage(inp=10, write=100, read=50, out=3, w1h=40), "zqx_usage_key": 5,
                        "inference_geo": "zqxgeo", "service_tier": "standard"}, model=model, final_output=7)
    recs[0]["zqxRecordKey"] = 1
    t.tool_result(f"tu_{sid}", [{"type": "text", "text": "x"},
                               {"type": "image", "source": {"type": "base64", "media_type": "image/zqx",
                                                            "data": "iVBORw0KGgo" + "A" * 80}}])
    t.records[-1]["toolUseResult"] = {"zqxResultKey": "ok", "stdout": "x"}
    t._base("system", subtype="zqxsubtype", content="x")
    t._base("system", subtype={"who": "zqx@example.com", "home": "/home/zqxuser"}, content="x")
    t._base("zqxrecordtype")
    t._base("system", subtype="compact_boundary", compactMetadata={"trigger": "auto", "preTokens": 100,
                                                                    "zqxMetaKey": 1})
    t.records.append({"type": "file-history-snapshot", "messageId": "m", "isSnapshotUpdate": False,
                      "snapshot": {"messageId": "m", "timestamp": "2026-01-01T10:00:00.000Z",
                                   "trackedFileBackups": {"ZqxMakefile": {"backupFileName": None, "version": 1,
                                                                          "backupTime": "2026-01-01T10:00:00Z"}}}})
    t.user("bye")
    return t.records


def codex_log(model: str) -> list[dict]:
    ts = "2026-03-01T10:00:{:02d}.000Z".format
    recs = [
        {"type": "session_meta", "payload": {"id": "cx-1", "cwd": "/w", "cli_version": "0.150.0"}},
        {"type": "turn_context", "payload": {"cwd": "/w", "model": model}},
        {"type": "response_item", "payload": {"type": "message", "role": "user",
                                              "content": [{"type": "input_text", "text": "go"}]}},
        {"type": "event_msg", "payload": {"type": "zqxevent"}},
        {"type": "response_item", "payload": {"type": "zqxitem"}},
        {"type": "response_item", "payload": {"type": "message", "role": "zqxrole", "content": []}},
        {"type": "zqxrecord", "payload": {}},
        {"type": "response_item", "payload": {"type": "message", "role": "assistant", "id": "msg_1",
                                              "content": [{"type": "output_text", "text": "ok"}]}},
        {"type": "event_msg", "payload": {"type": "token_count", "info": {
            "total_token_usage": {"input_tokens": 100, "cached_input_tokens": 40, "output_tokens": 5},
            "last_token_usage": {"input_tokens": 100, "cached_input_tokens": 40, "output_tokens": 5}}}},
    ]
    return [{"timestamp": ts(i), **r} for i, r in enumerate(recs)]


def copilot_log(model: str) -> list[dict]:
    def ev(i, t, **data):
        return {"type": t, "data": data, "id": f"e{i}", "timestamp": f"2026-03-01T10:00:{i:02d}.000Z"}

    return [ev(0, "session.start", sessionId="cp-1", copilotVersion="1.0.64", context={"cwd": "/w"}),
            ev(1, "session.model_change", newModel=model),
            ev(2, "user.message", content="go", transformedContent="go"),
            ev(3, "session.zqxevent"), ev(4, "zqx.event"),
            {"type": "zqxnodata.event", "data": 3, "id": "e5"},
            ev(6, "assistant.message", messageId="m1", content="ok", outputTokens=3, apiCallId="a1",
               toolRequests=[{"toolCallId": "t1", "name": "view", "arguments": {"path": "/w/a.py", "zqxArg": 1}}])]


def gemini_stream_log(model: str) -> list[dict]:
    ts = "2026-03-01T10:00:{:02d}.000Z".format
    return [{"type": "init", "session_id": "gs-1", "model": model, "timestamp": ts(0)},
            {"type": "message", "role": "user", "content": "go", "timestamp": ts(1)},
            {"type": "zqxgevent", "timestamp": ts(2)},
            {"type": "message", "role": "zqxgrole", "content": "x", "timestamp": ts(3)},
            {"type": "tool_use", "tool_name": "read_file", "tool_id": "r1", "timestamp": ts(4),
             "parameters": {"file_path": "a.py", "zqxGArg": 1}},
            {"type": "tool_result", "tool_id": "r1", "status": "success", "output": "x", "timestamp": ts(5)},
            {"type": "result", "status": "success", "timestamp": ts(6)}]


def gemini_chat_doc(model: str) -> dict:
    return {"sessionId": "gc-1", "projectHash": "ab" * 32, "startTime": "2026-01-10T02:08:00.000Z",
            "lastUpdated": "2026-01-10T02:09:00.000Z", "zqxDocKey": 1,
            "messages": [
                {"id": "m1", "timestamp": "2026-01-10T02:08:01.000Z", "type": "user", "content": "go"},
                {"id": "m2", "timestamp": "2026-01-10T02:08:02.000Z", "type": "gemini", "model": model,
                 "content": "ok", "tokens": {"input": 50, "output": 4, "cached": 10, "thoughts": 0, "tool": 0,
                                             "total": 54, "zqxTokKey": 1},
                 "toolCalls": [{"id": "c1", "name": "read_file", "args": {"absolute_path": "/w/a.py", "zqxCArg": 1},
                                "result": [{"inlineData": {"mimeType": "image/zqx", "data": "R0lGOD" + "A" * 70}}],
                                "status": "success", "timestamp": "2026-01-10T02:08:03.000Z"}]}]}


def build(root: Path) -> Path:
    """One log per format and per planted model name (Claude Code and the chat file also with public names)."""
    for i, m in enumerate(MODELS):
        _jsonl(root / "cc" / f"s{i}.jsonl", claude_log(m, f"s{i}"))
        (root / "gchat" / f"c{i}.json").parent.mkdir(parents=True, exist_ok=True)
        (root / "gchat" / f"c{i}.json").write_text(json.dumps(gemini_chat_doc(m), indent=2))
    for i, m in enumerate(MODELS[:4]):
        _jsonl(root / "codex" / f"rollout-{i}.jsonl", codex_log(m))
        _jsonl(root / "copilot" / f"e{i}" / "events.jsonl", copilot_log(m))
        _jsonl(root / "gstream" / f"g{i}.jsonl", gemini_stream_log(m))
    return root


def db_leaks(db: Path) -> list[str]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        found = []
        for (table,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall():
            cols = [c for (c,) in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]).fetchall()]
            for c in cols:
                n = con.execute(f'SELECT count(*) FROM "{table}" WHERE lower(CAST("{c}" AS VARCHAR)) LIKE ?',
                                [f"%{MARK}%"]).fetchone()[0]
                if n:
                    found.append(f"{table}.{c}")
        return found
    finally:
        con.close()


def tree_leaks(root: Path) -> list[str]:
    return [str(p.relative_to(root)) for p in root.rglob("*")
            if MARK in p.name.lower() or (p.is_file() and MARK.encode() in p.read_bytes().lower())]


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    return build(tmp_path_factory.mktemp("planted") / "logs")


def test_model_names_kept_only_when_public():
    assert all(kept_model(m) for m in PUBLIC)
    assert not any(kept_model(m) for m in MODELS)
    keys = Keyring(b"k" * 32)
    assert model_pseudonym(keys, "zqxlowermodel").startswith("model-") and kept_model(model_pseudonym(keys, "x"))


def test_no_marker_reaches_the_database_or_any_command_output(planted, tmp_path):
    db = tmp_path / "t.duckdb"
    r = run("ingest", planted, "--db", db, "--json")
    assert r.exit_code == 0, r.output
    assert MARK not in r.output.lower()
    summary = json.loads(r.stdout)
    assert summary["pseudonymized_values"].get("model", 0) >= len(MODELS)
    nc = summary["non_context_lines"]
    assert nc.get("system:other", 0) >= 2 * len(MODELS) and nc.get("event_msg:other", 0) >= 4
    assert nc.get("session.other", 0) >= 4
    assert db_leaks(db) == []
    r = run("ingest", planted, "--db", tmp_path / "t2.duckdb")  # the text output, skip lines included
    assert r.exit_code == 0 and MARK not in r.output.lower() and "unknown record type" in r.output
    for args in (["usage", "--no-ingest", "--json", "--by", "model"], ["usage", "--no-ingest", "--by", "model"],
                 ["sessions", "--no-ingest"], ["sessions", "--no-ingest", "--json"]):
        r = run(*args, "--db", db)
        assert MARK not in r.output.lower(), (args, r.output)


def test_anonymize_with_every_option_keeps_no_marker(planted, tmp_path):
    out = tmp_path / "anon"
    r = run("anonymize", planted, out, "--drop-tool-names", "--drop-arg-keys", "--pseudonymize-mcp",
            "--shift-timestamps", "-q")
    assert r.exit_code == 0, r.output
    assert tree_leaks(out) == []
    # Codex, Copilot CLI and Gemini CLI stream-json logs are refused by name, and counted
    assert "12 log file(s) of another agent's format refused" in r.output
    assert "a Codex rollout" in r.output and "a Copilot CLI event log" in r.output
    assert "a Gemini CLI stream-json transcript" in r.output
    assert len([p for p in out.rglob("*") if p.is_file()]) == 2 * len(MODELS)


def test_anonymize_model_pseudonym_equals_the_trace(planted, tmp_path):
    key = load_or_create_master_key()
    s = anonymize_tree(planted / "cc", tmp_path / "anon", Keyring.for_dataset(key, "default"))
    assert not s.incomplete and s.files == len(MODELS)
    keys = Keyring.for_dataset(key, "default")
    written = "".join(p.read_text() for p in (tmp_path / "anon").rglob("*.jsonl"))
    for m in MODELS:
        assert model_pseudonym(keys, m) in written


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "zqx-gateway-model"])
def test_anonymized_copies_ingest_to_the_same_figures(tmp_path, model):
    logs = tmp_path / "logs"
    _jsonl(logs / "a.jsonl", claude_log(model, "a1"))
    _jsonl(logs / "b.jsonl", claude_log(model, "b1"))
    (logs / "c.json").write_text(json.dumps(gemini_chat_doc("gemini-2.5-pro" if model[0] == "c" else model)))
    r = run("anonymize", logs, tmp_path / "anon", "-q")
    assert r.exit_code == 0, r.output
    prices = tmp_path / "p.toml"
    rates = "input = 3\ncache_write_5m = 3.75\ncache_write_1h = 6\ncache_read = 0.3\noutput = 15\n"
    prices.write_text(f'[models."{model}"]\n{rates}')
    figures = []
    for src in (logs, tmp_path / "anon"):
        db = tmp_path / f"{src.name}.duckdb"
        assert run("ingest", src, "--db", db, "-q").exit_code == 0
        u = run("usage", "--no-ingest", "--db", db, "--json", "--prices", prices, "--by", "model")
        assert u.exit_code == 0, u.output
        got = json.loads(u.stdout)
        figures.append((got["totals"], sorted(row["key"] for row in got["rows"])))
    assert figures[0] == figures[1]
    assert figures[0][0]["cost"] > 0 and figures[0][0].get("cost_complete", True)


def test_a_price_file_names_the_raw_model(tmp_path):
    """The trace holds model-<hash>; the price file names the model; the key maps one to the other."""
    from replay.model.costs import PriceError, PriceTable

    key = Keyring.for_dataset(load_or_create_master_key(), "default")
    pseudo = model_pseudonym(key, "zqx-gateway-model")
    p = tmp_path / "p.toml"
    p.write_text('[models."zqx-gateway-model"]\ninput = 1\ncache_write_5m = 1\ncache_write_1h = 2\n'
                 'cache_read = 0.1\noutput = 5\n')
    table = PriceTable.from_toml(p)
    assert table.rates(pseudo).output == 5.0  # the default key file, dataset "default"
    other = Keyring.for_dataset(load_or_create_master_key(), "other")
    assert table.for_dataset(other).rates(model_pseudonym(other, "zqx-gateway-model")).input == 1.0
    assert MARK not in json.dumps(table.describe())  # a run never stores the raw name
    with pytest.raises(PriceError, match="keyed pseudonym"):
        PriceTable().rates(model_pseudonym(key, "zqx-unpriced"))


def test_an_empty_file_beside_good_ones_is_skipped_and_named(tmp_path):
    logs = tmp_path / "logs"
    _jsonl(logs / "good.jsonl", claude_log("claude-sonnet-4-5", "g1"))
    (logs / "empty.jsonl").write_bytes(b"")
    (logs / "blank.jsonl").write_text("\n\n")
    r = run("anonymize", logs, tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert "2 empty log file(s)" in r.output and "empty.jsonl: empty file, skipped" in r.output
    s = anonymize_tree(logs, tmp_path / "out2", Keyring(b"k" * 32))
    assert s.files == 1 and sorted(s.empty_inputs) == ["blank.jsonl", "empty.jsonl"] and not s.incomplete
