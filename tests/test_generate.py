"""The synthetic corpus generator: determinism, record structure and prompt-cache-consistent usage."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime, timezone
from pathlib import Path

import orjson
import pytest

from replay.ingest.blocktext import tool_result_parts, tool_use_text
from replay.synth.generate import MAIN_OVERHEAD, SUB_OVERHEAD, generate_corpus
from replay.ingest.tokens import count_many


def _load(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _ms(ts: str) -> int:
    return int(datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp() * 1000)


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.jsonl"))}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    summary = generate_corpus(root, sessions=6, seed=0)
    sessions: dict[str, list[Path]] = {}  # sessionId -> [main file, subagent files...], in session order
    for path in summary.files:
        sessions.setdefault(_load(path)[0]["sessionId"], []).append(path)
    return root, summary, list(sessions.values())


def _requests(records: list[dict]) -> list[dict]:
    """One entry per API response: first-line time, final usage, whether a compaction preceded it."""
    out: list[dict] = []
    ids: dict[str, dict] = {}
    compacted = False
    for r in records:
        if r.get("subtype") == "compact_boundary":
            compacted = True
        elif r["type"] == "assistant":
            mid = r["message"]["id"]
            if mid not in ids:
                ids[mid] = {"t": _ms(r["timestamp"]), "compacted": compacted, "lines": []}
                out.append(ids[mid])
                compacted = False
            ids[mid]["lines"].append(r)
    for req in out:
        u = req["usage"] = req["lines"][-1]["message"]["usage"]
        req["total"] = u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]
    return out


def _streams(corpus) -> list[tuple[list[dict], int]]:
    _, summary, _ = corpus
    out = []
    for path in summary.files:
        records = _load(path)
        out.append((records, SUB_OVERHEAD if records[0]["isSidechain"] else MAIN_OVERHEAD))
    return out


def test_same_seed_is_byte_identical_and_other_seed_differs(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    sa = generate_corpus(a, sessions=3, seed=7)
    generate_corpus(b, sessions=3, seed=7)
    generate_corpus(c, sessions=3, seed=8)
    assert _tree(a) == _tree(b)
    assert _tree(a) != _tree(c)
    assert sa.bytes == sum(len(v) for v in _tree(a).values())


def test_layout_and_common_fields(corpus):
    root, summary, sessions = corpus
    assert summary.sessions == len(sessions) == 6
    for files in sessions:
        main = files[0]
        assert main.parent.parent == root and main.parent.name.startswith("-home-dev-projects-")
        sid = main.stem
        for r in _load(main):
            if r["type"] in ("user", "assistant"):
                assert r["sessionId"] == sid and r["version"] == "2.1.50" and r["userType"] == "external"
                assert r["cwd"].startswith("/home/dev/projects/") and r["timestamp"].endswith("Z")
                assert len(r["timestamp"]) == len("2026-02-19T22:26:28.885Z")
    kinds = Counter((r["type"], r.get("subtype")) for f in summary.files for r in _load(f))
    for kind in [("progress", None), ("file-history-snapshot", None), ("queue-operation", None),
                 ("system", "turn_duration"), ("system", "compact_boundary")]:
        assert kinds[kind] > 0, kind


def test_session0_compaction(corpus):
    records = _load(corpus[2][0][0])
    i = next(i for i, r in enumerate(records) if r.get("subtype") == "compact_boundary")
    boundary, summary = records[i], records[i + 1]
    assert boundary["parentUuid"] is None and boundary["logicalParentUuid"]
    assert boundary["compactMetadata"]["trigger"] == "auto"
    assert summary["type"] == "user" and summary["isCompactSummary"] and summary["isVisibleInTranscriptOnly"]
    assert summary["message"]["content"].startswith("This session is being continued")
    before = [q for q in _requests(records[:i])]
    assert boundary["compactMetadata"]["preTokens"] == before[-1]["total"]


def test_session1_subagent(corpus):
    files = corpus[2][1]
    main, subs = files[0], files[1:]
    assert subs and all(p.parent == main.parent / main.stem / "subagents" for p in subs)
    main_records = _load(main)
    for sub in subs:
        records = _load(sub)
        agent = sub.stem.removeprefix("agent-")
        convo = [r for r in records if r["type"] in ("user", "assistant")]
        assert all(r["isSidechain"] and r["sessionId"] == main.stem and r["agentId"] == agent for r in convo)
        assert convo[0]["parentUuid"] is None and isinstance(convo[0]["message"]["content"], str)
        assert {r["message"]["model"] for r in convo if r["type"] == "assistant"} == {"claude-haiku-4-5-20251001"}
        final = convo[-1]["message"]["content"][0]["text"]
        task = [r for r in main_records if isinstance(r.get("toolUseResult"), dict)
                and r["toolUseResult"].get("agentId") == agent]
        assert len(task) == 1 and task[0]["message"]["content"][0]["content"] == [{"type": "text", "text": final}]
        tu_id = task[0]["message"]["content"][0]["tool_use_id"]
        task_use = [b for r in main_records if r["type"] == "assistant" for b in r["message"]["content"]
                    if b.get("id") == tu_id]
        assert task_use[0]["name"] == "Task" and task_use[0]["input"]["prompt"] == convo[0]["message"]["content"]


def test_message_lines_share_usage_and_tool_results_pair(corpus):
    for records, _ in _streams(corpus):
        for req in _requests(records):
            lines = req["lines"]
            strip = [{k: v for k, v in ln["message"]["usage"].items() if k != "output_tokens"} for ln in lines]
            assert all(s == strip[0] for s in strip)
            assert len({ln["requestId"] for ln in lines}) == 1
            outs = [ln["message"]["usage"]["output_tokens"] for ln in lines]
            assert all(o <= outs[-1] for o in outs)
            assert all(ln["message"]["stop_reason"] is None for ln in lines[:-1])
            assert lines[-1]["message"]["stop_reason"] in ("tool_use", "end_turn")
        uses = {b["id"]: r["uuid"] for r in records if r["type"] == "assistant"
                for b in r["message"]["content"] if b["type"] == "tool_use"}
        results = Counter()
        for r in records:
            if r["type"] == "user" and isinstance(r["message"]["content"], list):
                block = r["message"]["content"][0]
                results[block["tool_use_id"]] += 1
                assert r["sourceToolAssistantUUID"] == uses[block["tool_use_id"]]
        assert set(results) == set(uses) and set(results.values()) == {1}


def test_redundant_reads_are_present(corpus):
    _, summary, _ = corpus
    full: dict[str, list] = defaultdict(list)
    partial: list[tuple] = []
    for path in summary.files:
        records = _load(path)
        inputs = {b["id"]: (b["name"], b["input"]) for r in records if r["type"] == "assistant"
                  for b in r["message"]["content"] if b["type"] == "tool_use"}
        for r in records:
            if r["type"] == "user" and isinstance(r["message"]["content"], list):
                block = r["message"]["content"][0]
                name, inp = inputs[block["tool_use_id"]]
                if name == "Read" and "offset" in inp:
                    partial.append((inp["file_path"], inp["offset"], inp["limit"], block["content"]))
                elif name == "Read":
                    full[inp["file_path"]].append(block["content"])
    assert any(len(v) != len(set(v)) for v in full.values())  # byte-identical re-read
    assert any(len(set(v)) > 1 for v in full.values())  # re-read after an edit
    assert partial
    assert len({p[:3] for p in partial}) < len(partial)  # same range twice
    assert any(a[0] == b[0] and b[1] <= a[1] and b[1] + b[2] >= a[1] + a[2] and a[:3] != b[:3]
               for a in partial for b in partial)  # a wider range covering a narrower one


def test_usage_follows_the_cache_model(corpus):
    for records, overhead in _streams(corpus):
        reqs = _requests(records)
        ttl = 3_600_000 if any(q["usage"]["cache_creation"]["ephemeral_1h_input_tokens"] for q in reqs) else 300_000
        assert reqs[0]["usage"]["cache_read_input_tokens"] in (0, overhead)
        for prev, cur in zip(reqs, reqs[1:]):
            gap = cur["t"] - prev["t"]
            assert abs(gap - ttl) > 60_000  # no request lands near the TTL edge
            read = cur["usage"]["cache_read_input_tokens"]
            if cur["compacted"]:
                assert read in (0, overhead)
                continue
            assert cur["total"] >= prev["total"]
            if gap <= ttl:
                assert read == prev["total"]
            else:
                assert read in (0, overhead)
            u = cur["usage"]
            assert u["cache_creation_input_tokens"] == sum(u["cache_creation"].values())


def test_input_totals_match_block_token_counts(corpus):
    """input total = overhead + exact tokens of the stream's earlier context blocks (per partition)."""
    for records, overhead in _streams(corpus)[:2]:
        texts, marks = [], []  # marks: ("req", total, index into texts) | ("reset", index)
        seen = set()
        for r in records:
            if r.get("subtype") == "compact_boundary":
                marks.append(("reset", len(texts)))
            elif r["type"] == "user":
                content = r["message"]["content"]
                texts.append(content if isinstance(content, str) else tool_result_parts(content[0]["content"])[0])
            elif r["type"] == "assistant":
                if r["message"]["id"] not in seen:
                    seen.add(r["message"]["id"])
                    u = r["message"]["usage"]
                    total = u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]
                    marks.append(("req", total, len(texts)))
                b = r["message"]["content"][0]
                texts.append(b.get("text") or b.get("thinking") or tool_use_text(b.get("name"), b.get("input")))
        counts = count_many(texts)
        start = 0
        for mark in marks:
            if mark[0] == "reset":
                start = mark[1]
            else:
                assert mark[1] == overhead + sum(counts[start:mark[2]])


def test_scale_smoke_counts_match_files(tmp_path):
    summary = generate_corpus(tmp_path, sessions=30, seed=3)
    assert len({p.stem for p in summary.files if p.parent.name != "subagents"}) == 30
    assert sorted(summary.files) == sorted(tmp_path.rglob("*.jsonl"))
    requests = tool_results = size = 0
    for path in summary.files:
        records = _load(path)
        size += path.stat().st_size
        requests += len({r["message"]["id"] for r in records if r["type"] == "assistant"})
        tool_results += sum(1 for r in records if r["type"] == "user" and isinstance(r["message"]["content"], list))
    assert (summary.sessions, summary.requests, summary.tool_results, summary.bytes) == (
        30, requests, tool_results, size)
