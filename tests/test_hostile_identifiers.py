"""Kept means proven harmless (issue 27): no planted token of 4+ characters outside the
vocabularies of `replay.ingest.identifiers` survives in a path pseudonym, a version, an id, an
MCP tool name, the database, `export`, the CLI's outputs or anonymized logs.

Tokens are drawn with a letter outside a-f, so that a hex pseudonym cannot hold one by chance.
"""

from __future__ import annotations

import json
import random
import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.ingest import identifiers
from replay.ingest.identifiers import KNOWN_EXTENSIONS, ID_PREFIXES, MCP_TOOL_VOCAB, TOOL_VOCAB
from replay.ingest.keys import Keyring
from replay.store.load import ingest

from cc_records import Transcript, text, tool_use, usage
from test_hostile import run
from test_ingest import _assert_absent

KEYS = Keyring(b"i" * 32)
# words the trace keeps by design (a known tool such as Copilot's `insert` is kept as it is): a
# planted token is none of them
VOCAB = {w.lower() for w in KNOWN_EXTENSIONS | ID_PREFIXES | MCP_TOOL_VOCAB | TOOL_VOCAB}


def _planted(tok: str) -> bool:
    return (any(c in "ghijklmnopqrstuvwxyz" for c in tok.lower()) and tok.lower() not in VOCAB
            and not any(tok.lower() in w for w in VOCAB))


tokens = st.text(string.ascii_letters + string.digits, min_size=4, max_size=12).filter(_planted)
words = st.text(string.ascii_lowercase, min_size=4, max_size=10).filter(_planted)

PATH_SHAPES = [
    "/Users/{a}.{b}/proj/main.py", "C:\\Users\\{a}.{b}\\code\\x.ts", "//{a}.{b}/share/f.md",
    "/home/u/key.{a}", "/srv/{a}@{b}.com/notes", "/data/{a}.{b}.example/{b}.{a}", "{a}.{b}",
    "/tmp/{a}/{b}.tar.{a}", "/opt/{a}.PY.{b}",
]


def _absent(out: str, *toks: str) -> None:
    for t in toks:
        assert t.lower() not in out.lower(), (t, out)


@settings(max_examples=300, deadline=None)
@given(tokens, tokens, st.sampled_from(PATH_SHAPES))
def test_a_path_keeps_no_planted_token(a, b, shape):
    path = shape.format(a=a, b=b)
    _absent(KEYS.path(path, "/home/u"), a, b)


@settings(max_examples=200, deadline=None)
@given(tokens, st.sampled_from(sorted(KNOWN_EXTENSIONS)))
def test_a_known_extension_is_kept_and_nothing_else(a, ext):
    out = KEYS.path(f"/p/{a}.{ext.upper()}")
    assert out.endswith("." + ext) and a.lower() not in out.lower()


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 999), st.integers(0, 999), st.integers(0, 999), tokens,
       st.sampled_from(["-", "+", ".", "-rc.", "_"]))
def test_a_version_keeps_major_minor_patch_only(x, y, z, a, sep):
    assert identifiers.kept_version(f"{x}.{y}.{z}{sep}{a}") == f"{x}.{y}.{z}"
    assert identifiers.kept_version(f"v{x}.{y}") == f"{x}.{y}"
    # a token keeps a version only where it starts with one (digits, or "v" and digits: "v000" -> "000")
    assert identifiers.kept_version(a) is None or a[:1].isdigit() or (a[:1] == "v" and a[1:2].isdigit())
    assert identifiers.kept_version("v000") == "000" and identifiers.kept_version("vx1") is None


@settings(max_examples=200, deadline=None)
@given(st.lists(words, min_size=1, max_size=4), st.sampled_from(["_", "-", "."]))
def test_an_id_made_of_words_keeps_none_of_them(ws, sep):
    from replay.privacy.anonymize import AnonymizeSummary
    from replay.privacy.pseudonyms import Pseudonyms

    pseudo = Pseudonyms(KEYS, deny_rx=None, time_shift=False, summary=AnonymizeSummary())
    v = sep.join(ws) + "_01Ab3"
    _absent(pseudo.ident(v), *ws)
    assert pseudo.ident("toolu_01" + "x" * 20).startswith("toolu_01")  # a known type prefix stays


@settings(max_examples=200, deadline=None)
@given(tokens, tokens)
def test_an_mcp_tool_name_keeps_no_planted_token(a, b):
    out = identifiers.mcp_parts(KEYS, f"mcp__{a}-server__{b}_tool")
    _absent(out, a, b)
    assert out.startswith("mcp__srv_") and "__tool_" in out
    assert identifiers.mcp_parts(KEYS, f"mcp__{a}__git_commit").endswith("__git_commit")


def test_the_mcp_tool_vocabulary_holds_every_jp_hint_row():
    from replay.policies.jp_compaction import TOOL_HINTS

    assert set(TOOL_HINTS) <= MCP_TOOL_VOCAB


# --- end to end: ingest, export, CLI outputs, anonymized logs ---------------------------------------

def _planted_session(tmp_path: Path, seed: int) -> tuple[Path, list[str]]:
    rng = random.Random(seed)

    def tok() -> str:
        while True:
            t = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(5, 9)))
            if _planted(t):
                return t

    user, host, secret, pre, server, tool, sid = (tok() for _ in range(7))
    t = Transcript(session_id=f"{sid}-{tok()}", cwd=f"/Users/first.{user}/proj", version=f"2.1.50-{pre}")
    t.user("hello")
    t.assistant("m1", [tool_use("t1", "Read", file_path=f"/Users/first.{user}/proj/key.{secret}")],
                usage(inp=10, write=100, read=0, out=5), final_output=5)
    t.tool_result("t1", "contents")
    t.assistant("m2", [tool_use("t2", f"mcp__{server}__{tool}", q="x")], usage(inp=11, write=100, read=100, out=5),
                final_output=5)
    t.tool_result("t2", "done")
    t.assistant("m3", [tool_use("t3", "Read", file_path=f"//{host}.corp.example/share/a.py")],
                usage(inp=12, write=0, read=200, out=5), final_output=5)
    t.tool_result("t3", "x")
    t.assistant("m4", [text("bye")], usage(inp=13, write=0, read=300, out=5), final_output=5)
    log = t.write_jsonl(tmp_path / "logs" / "proj" / f"{sid}.jsonl")
    sub = Transcript(session_id=t.session_id, cwd=t.cwd, sidechain=True, agent_id=f"{tok()}_{tok()}_x1")
    sub.user("sub task")
    sub.assistant("s1", [text("ok")], usage(inp=5, write=10, read=0, out=2), final_output=2)
    sub.write_jsonl(log.parent / sid / "subagents" / f"agent-{sub.agent_id}.jsonl")
    return tmp_path / "logs", [user, host, secret, pre, server, tool, sid, sub.agent_id.split("_")[0]]


@pytest.mark.parametrize("seed", [1, 2])
def test_planted_identifiers_reach_no_output(tmp_path, seed):
    from replay.privacy.anonymize import anonymize_tree

    logs, planted = _planted_session(tmp_path, seed)
    db = tmp_path / "t.duckdb"
    s = ingest([logs], db)
    assert s.sessions == 1 and s.failed == []
    _assert_absent(db, planted)
    outputs = []
    for args in (["sessions", "-j"], ["usage", "--by", "project", "-j"], ["usage", "--by", "session", "--format", "csv"],
                 ["usage", "--by", "model"], ["datasets", "-j"]):
        r = run(*args[:1], "--db", db, *args[1:])
        assert r.exit_code == 0, r.output
        outputs.append(r.output)
    r = run("export", "--db", db, "--out", tmp_path / "export")
    assert r.exit_code == 0, r.output
    for f in (tmp_path / "export").iterdir():
        outputs.append(f.read_bytes().decode("latin-1"))
    # anonymized logs: MCP names are kept unless asked (--pseudonymize-mcp), all else in both runs
    mcp = planted[4:6]
    for out, kw in (("anon", {}), ("anon2", {"path_style": "pseudonym", "pseudonymize_mcp": True})):
        a = anonymize_tree(logs, tmp_path / out, KEYS, **kw)
        assert a.failed == [] and a.files == 2
        texts = []
        for f in (tmp_path / out).rglob("*"):
            texts.append(str(f.relative_to(tmp_path / out)))
            if f.is_file():
                texts.append(f.read_text())
        blob = "\n".join(texts).lower()
        for p in planted:
            assert p.lower() not in blob or (not kw and p in mcp), (out, p)
    blob = "\n".join(outputs).lower()
    for p in planted:
        assert p.lower() not in blob, p
    # what is kept is kept: a known extension, the version's numbers, Claude Code's own tool
    assert ".py" in blob and "2.1.50" in blob and "read" in blob


@settings(max_examples=200, deadline=None)
@given(words)
def test_a_model_name_keeps_no_word_after_an_at(a):
    from replay.ingest import checks
    from replay.privacy.schema import enum_ok

    for v in (f"claude-opus-4@{a}", f"claude@{a}", f"gpt-5@{a}2025"):
        assert not checks.acceptable("model", v) and not enum_ok("model", v), v
    assert checks.acceptable("model", "claude-opus-4@20250514") and enum_ok("model", "claude-opus-4@20250514")


def test_a_session_hook_name_keeps_only_a_known_source(tmp_path):
    from replay.privacy.anonymize import anonymize_tree

    t = Transcript(session_id="h")
    for name in ("SessionStart:resume", "SessionStart:qwertyzone", "PreToolUse:Bash", "Stop:zorblaxian"):
        event = name.partition(":")[0]
        t._base("progress", data={"type": "hook_progress", "hookEvent": event, "hookName": name})
    t.user("hi")
    t.assistant("m1", [text("ok")], usage(inp=5, write=10, read=0, out=2), final_output=2)
    t.write_jsonl(tmp_path / "logs" / "h.jsonl")
    a = anonymize_tree(tmp_path / "logs", tmp_path / "out", KEYS)
    assert a.failed == []
    (out,) = (tmp_path / "out").rglob("*.jsonl")
    names = [json.loads(line).get("data", {}).get("hookName") for line in out.read_text().splitlines()]
    assert names[0] == "SessionStart:resume" and names[2] == "PreToolUse:Bash"
    assert names[1].startswith("SessionStart:hook_") and names[3].startswith("Stop:hook_")


def test_the_tool_vocabulary_holds_every_name_the_readers_policies_and_model_look_for():
    from replay.engine.calibration import TASK_TOOLS
    from replay.ingest import trace
    from replay.ingest.identifiers import TOOL_VOCAB
    from replay.ingest.readers import codex_items, copilot, gemini
    from replay.policies import build

    names = set(trace._TOOL_KIND) | set(TASK_TOOLS) | codex_items._SHELL_TOOLS | codex_items._SESSION_TOOLS
    names |= set(copilot._PATH_TOOLS) | copilot._SHELL | copilot._SHELL_SESSION | copilot._WEB
    names |= set(gemini._READ) | set(gemini._MUTATE) | set(gemini._SEARCH) | set(gemini._LIST) | gemini._WEB | gemini._SHELL
    for policy in ("claude_code_microcompact", "supersede"):
        params = build(policy).params
        for f in ("tools", "read_tools", "write_tools", "piece_tools", "list_tools"):
            names |= set(getattr(params, f, ()) or ())
    assert names - TOOL_VOCAB == set()


@settings(max_examples=200, deadline=None)
@given(tokens)
def test_a_tool_outside_the_vocabulary_is_stored_keyed(a):
    from replay.ingest.builder import TraceBuilder
    from replay.ingest.readers.report import ReadReport

    b = TraceBuilder("claude-code", KEYS, "d", "f", Path("x.jsonl"), ReadReport())
    for name in (a, f"{a}_deploy", f"Bash{a}"):
        out = b.tool_name(name)
        _absent(out, a)
        assert out.startswith("tool-")
    assert b.tool_name("Read") == "Read" and b.tool_name("run_shell_command") == "run_shell_command"


@settings(max_examples=100, deadline=None)
@given(tokens, tokens)
def test_keyed_tool_names_are_kept_as_they_are(a, b):
    """Logs anonymized with --pseudonymize-mcp or --drop-tool-names ingest to the raw logs' names."""
    from replay.ingest.identifiers import kept_tool_name

    once = identifiers.mcp_parts(KEYS, f"mcp__{a}__{b}")
    assert identifiers.mcp_parts(KEYS, once) == once and kept_tool_name(KEYS, once) == once
    assert kept_tool_name(KEYS, "tool_" + KEYS.short("tool", a, 10)) == "tool_" + KEYS.short("tool", a, 10)
