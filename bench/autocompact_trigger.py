"""Claude Code's auto-compact trigger per client version and summary size, measured from the logs' own records.

Claude Code writes a ``system`` line with ``subtype: "compact_boundary"`` and
``compactMetadata: {trigger: "auto" | "manual", preTokens: N}`` where it compacted, then a user
line with ``isCompactSummary`` holding the summary. This prints, per trigger, the preTokens
distribution (the context size at which Claude Code compacted), with the model of the last
assistant message before the boundary (the window depends on it), and the summaries' o200k
sizes (the ingest's counter). Per client version it prints the auto compactions and the
*sustained* context: the largest context (input + cache read + cache write of a main-stream
response) after which the client sent another main-stream request with no compaction between,
which its trigger must be at least. From those it derives the trigger table
(``replay.policies.claude_code_autocompact.derive``; the policy's ``TRIGGERS`` must equal it)
and, with ``--until VERSION``, derives it on the versions up to VERSION only and checks that it
holds on every later version: no auto compaction below its trigger, no sustained context above
it (on a 1,000,000 window where a session of that version ran past 200,000 tokens). The figures
in ``replay.policies.claude_code_autocompact`` and docs/policies.md come from:

    .venv/bin/python bench/autocompact_trigger.py ../shared/logs/claude-code-2026 ../shared/logs/entire-cli ../shared/logs/claude-code
    .venv/bin/python bench/autocompact_trigger.py --until 2.1.49 ../shared/logs/claude-code-2026 ../shared/logs/entire-cli ../shared/logs/claude-code

Reads the files in place; prints figures only (no text from the logs).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

# bench/replay.py is named like the package: keep this folder off the import path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT.parent / "shared" / "logs"
DEFAULT_ROOTS = [LOGS / "claude-code-2026", LOGS / "entire-cli", LOGS / "claude-code"]

from replay.policies.claude_code_autocompact import (  # noqa: E402
    DEFAULT_RESERVE, TRIGGERS, WINDOW, derive, trigger_for, version_key)

BIG_WINDOW = 1_000_000  # the 1M-context window: a session past 200,000 tokens ran on it


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


def _context(r: dict) -> int:
    u = (r.get("message") or {}).get("usage") or {}
    try:
        return sum(int(u.get(k) or 0) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))
    except (TypeError, ValueError):
        return 0


def scan(roots: list[str]):
    seen = set()
    answered = set()  # (session, message id) of main-stream responses already counted (copies of a session)
    events = []       # (trigger, preTokens, model, version)
    summaries = []    # summary texts (counted, never printed)
    sustained = defaultdict(int)  # client version -> largest context carried on without compacting
    big = defaultdict(bool)       # client version -> a session of it ran past 200,000 tokens
    for root in roots:
        for path in sorted(Path(root).rglob("*.json*")):
            model = None
            pending = False
            prev = 0          # the previous main-stream response's context, 0 after a compaction
            for r in _records(path):
                if r.get("type") == "assistant" and not r.get("isSidechain"):
                    model = (r.get("message") or {}).get("model") or model
                    key = (r.get("sessionId"), (r.get("message") or {}).get("id"))
                    ctx = _context(r)
                    if key not in answered and ctx > 0:
                        answered.add(key)
                        v = r.get("version")
                        if prev:
                            sustained[v] = max(sustained[v], prev)
                        if ctx > WINDOW:
                            big[v] = True
                        prev = ctx
                if r.get("type") == "system" and r.get("subtype") == "compact_boundary":
                    prev = 0
                    meta = r.get("compactMetadata") or {}
                    key = (r.get("sessionId"), r.get("timestamp"))
                    pending = key not in seen
                    if pending and isinstance(meta.get("preTokens"), int):
                        seen.add(key)
                        events.append((meta.get("trigger"), meta["preTokens"], model, r.get("version")))
                elif pending and r.get("isCompactSummary"):
                    summaries.append(_summary_text(r))
                    pending = False
    return events, summaries, sustained, big


def per_version(events, sustained) -> dict[str, tuple[list[int], int]]:
    """derive()'s input: per client version, its auto compactions' preTokens and its sustained context."""
    out: dict[str, tuple[list[int], int]] = {v: ([], s) for v, s in sustained.items() if v}
    for trig, pre, _, v in events:
        if trig == "auto" and v:
            out.setdefault(v, ([], sustained.get(v, 0)))[0].append(pre)
    return out


def _rows_text(rows) -> list[str]:
    lines = ["| client versions | auto compactions | smallest preTokens | largest sustained | trigger (200k window) |",
             "|---|---|---|---|---|"]
    for r in rows:
        span = r["first"] if r["first"] == r["last"] else f"{r['first']} - {r['last']}"
        trig = f"{r['trigger']:,}" if r["trigger"] is not None else f"{WINDOW - DEFAULT_RESERVE:,} (default)"
        lines.append(f"| {span} | {r['compactions']} | {r['min_pre'] or 0:,} | {r['sustained']:,} | {trig} |")
    return lines


def holds(table, versions, big, after: str) -> list[tuple[str, int, int, int, bool]]:
    """Per version later than ``after``: (version, compactions, sustained, trigger on its window, holds)."""
    out = []
    cut = version_key(after)
    for v in sorted((v for v in versions if version_key(v) and version_key(v) > cut), key=version_key):
        pre, sus = versions[v]
        t = trigger_for(v, table) + ((BIG_WINDOW - WINDOW) if big.get(v) else 0)
        out.append((v, len(pre), sus, t, sus <= t and all(p >= t for p in pre)))
    return out


def _vkey(v):
    try:
        return tuple(int(x) for x in str(v).split("."))
    except ValueError:
        return (0,)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("roots", nargs="*", type=Path,
                    help="log folders, read in place (default: claude-code-2026, entire-cli and claude-code "
                         f"under {LOGS})")
    ap.add_argument("--until", metavar="VERSION",
                    help="also derive the table on the client versions up to VERSION only and check it on the later ones")
    a = ap.parse_args(argv)
    until = a.until
    roots = a.roots or DEFAULT_ROOTS
    missing = [str(r) for r in roots if not r.is_dir()]
    if missing:
        ap.error("not a folder: " + ", ".join(missing))
    events, summaries, sustained, big = scan([str(r) for r in roots])
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
        print("  by client version (count, min preTokens): " + ", ".join(
            f"{v} {len(ps)} {min(ps):,}" for v, ps in sorted(versions.items(), key=lambda x: _vkey(x[0]))))
    vers = per_version(events, sustained)
    print("sustained context by client version (largest context carried on without compacting): " + ", ".join(
        f"{v} {vers[v][1]:,}" + (" (>200k)" if big.get(v) else "") for v in sorted(vers, key=_vkey)))
    rows = derive(vers)
    print(f"trigger table (derive, at least 5 auto compactions a row, else the default "
          f"{WINDOW - DEFAULT_RESERVE:,}):")
    print("\n".join(_rows_text(rows)))
    table = tuple((r["first"], r["trigger"], r["compactions"]) for r in rows)
    print("the policy's TRIGGERS " + ("match" if table == TRIGGERS else f"DIFFER: derived {table}"))
    if until:
        early = {v: x for v, x in vers.items() if version_key(v) <= version_key(until)}
        t_early = tuple((r["first"], r["trigger"], r["compactions"]) for r in derive(early))
        print(f"derived on the versions up to {until}: {t_early}")
        checks = holds(t_early, vers, big, until)
        bad = [c for c in checks if not c[4]]
        print(f"later versions: {len(checks)}, the table holds on {len(checks) - len(bad)}" +
              ("" if not bad else "; fails on " + ", ".join(f"{v} ({n} compactions, sustained {s:,} > {t:,})"
                                                           for v, n, s, t, _ in bad)))
        print("  on a 1,000,000 window (a session past 200,000): " +
              (", ".join(v for v, *_ in checks if big.get(v)) or "none"))
    if summaries:
        from replay.ingest.tokens import count_many

        sizes = sorted(count_many(summaries))
        print(f"summaries: {len(sizes)}; o200k tokens min {sizes[0]:,} median {statistics.median(sizes):,.0f} "
              f"max {sizes[-1]:,}")


if __name__ == "__main__":
    main()
