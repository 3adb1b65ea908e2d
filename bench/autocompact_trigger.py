"""Claude Code's auto-compact trigger and summary size, measured from the logs' own records.

Claude Code writes a ``system`` line with ``subtype: "compact_boundary"`` and
``compactMetadata: {trigger: "auto" | "manual", preTokens: N}`` where it compacted, then a user
line with ``isCompactSummary`` holding the summary. This prints, per trigger, the preTokens
distribution (the context size at which Claude Code compacted), with the model of the last
assistant message before the boundary (the window depends on it), and the summaries' o200k
sizes (the ingest's counter). The figures in ``replay.policies.claude_code_autocompact`` and
docs/policies.md come from:

    .venv/bin/python bench/autocompact_trigger.py ../shared/logs/claude-code ../shared/logs/entire-cli

Reads the files in place; prints figures only (no text from the logs).
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

# bench/replay.py is named like the package: keep this folder off the import path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from replay.ingest.tokens import count_many  # noqa: E402


def _records(path: Path):
    text = path.read_text(errors="replace")
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except ValueError:
            return
        if isinstance(data, list):
            yield from (r for r in data if isinstance(r, dict))
        return
    for line in text.splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if isinstance(r, dict):
            yield r


def _summary_text(r: dict) -> str:
    c = (r.get("message") or {}).get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "".join(x.get("text", "") for x in c if isinstance(x, dict))
    return ""


def scan(roots: list[str]):
    seen = set()
    events = []       # (trigger, preTokens, model, version)
    summaries = []    # summary texts (counted, never printed)
    for root in roots:
        for path in sorted(Path(root).rglob("*.json*")):
            model = None
            pending = False
            for r in _records(path):
                if r.get("type") == "assistant" and not r.get("isSidechain"):
                    model = (r.get("message") or {}).get("model") or model
                if r.get("type") == "system" and r.get("subtype") == "compact_boundary":
                    meta = r.get("compactMetadata") or {}
                    key = (r.get("sessionId"), r.get("timestamp"))
                    pending = key not in seen
                    if pending and isinstance(meta.get("preTokens"), int):
                        seen.add(key)
                        events.append((meta.get("trigger"), meta["preTokens"], model, r.get("version")))
                elif pending and r.get("isCompactSummary"):
                    summaries.append(_summary_text(r))
                    pending = False
    return events, summaries


def _vkey(v):
    try:
        return tuple(int(x) for x in str(v).split("."))
    except ValueError:
        return (0,)


def main(argv: list[str]) -> None:
    events, summaries = scan(argv or ["../shared/logs/claude-code", "../shared/logs/entire-cli"])
    by = defaultdict(list)
    for trig, pre, model, _ in events:
        by[trig].append((pre, model))
    for trig, rows in sorted(by.items(), key=lambda x: str(x[0])):
        pre = sorted(p for p, _ in rows)
        print(f"trigger={trig}: {len(pre)} compactions; preTokens min {pre[0]:,} median "
              f"{statistics.median(pre):,.0f} max {pre[-1]:,}")
        models = defaultdict(list)
        for p, m in rows:
            models[m].append(p)
        for m, ps in sorted(models.items(), key=lambda x: str(x[0])):
            ps.sort()
            print(f"  {m}: {len(ps)}; preTokens {ps[0]:,} .. {ps[-1]:,}, median {statistics.median(ps):,.0f}")
        versions = defaultdict(list)
        for p, _, v in ((p, m, v) for t, p, m, v in events if t == trig):
            versions[v].append(p)
        # the smallest preTokens of a version is the first request past its trigger
        print("  by client version (min preTokens): " + ", ".join(
            f"{v} {min(ps):,}" for v, ps in sorted(versions.items(), key=lambda x: _vkey(x[0]))))
    if summaries:
        sizes = sorted(count_many(summaries))
        print(f"summaries: {len(sizes)}; o200k tokens min {sizes[0]:,} median {statistics.median(sizes):,.0f} "
              f"max {sizes[-1]:,}")


if __name__ == "__main__":
    main(sys.argv[1:])
