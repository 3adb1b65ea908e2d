"""Claude Code user content that is neither text nor a list (second hostile-input audit,
2026-11-28): an object or a number in `message.content` of a user record was dropped without a
count, where the assistant side counted it; both count it now (``malformed_record``)."""

from __future__ import annotations

import json

from replay.ingest.keys import Keyring
from replay.ingest.readers import claude_code
from replay.ingest.readers.base import ReadReport


def test_user_content_of_another_shape_is_counted(tmp_path):
    from replay.synth.generate import generate_corpus

    d = tmp_path / "logs"
    generate_corpus(d, sessions=1, seed=6)
    path = next(p for p in d.rglob("*.jsonl") if "subagents" not in p.parts)
    lines = path.read_text().splitlines()
    k = next(i for i, x in enumerate(lines) if json.loads(x).get("type") == "user"
             and isinstance(json.loads(x)["message"].get("content"), str))
    for bad in ({"type": "text", "text": "a prompt as an object"}, 12345):
        rec = json.loads(lines[k])
        rec["message"]["content"] = bad
        p = tmp_path / f"{type(bad).__name__}.jsonl"
        p.write_text("\n".join(lines[:k] + [json.dumps(rec)] + lines[k + 1:]) + "\n")
        report = ReadReport()
        claude_code.read_session(p, Keyring.for_dataset(b"k" * 32, "t"), "t", "fk", report)
        assert report.skipped["malformed_record"] == 1, bad
        assert f"{p}:{k + 1}: malformed record: user content is neither text nor a list" in report.messages
