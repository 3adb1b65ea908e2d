"""Deterministic synthetic Claude Code session logs: the embedded demo data and the scale corpus.

``generate_corpus(out_dir, sessions, seed)`` writes what ``~/.claude/projects`` holds after some
days of agent work on fake projects (``/home/dev/projects/<name>``)::

    out_dir/<project-slug>/<session-uuid>.jsonl
    out_dir/<project-slug>/<session-uuid>/subagents/agent-<agent-id>.jsonl

Records are shaped as Claude Code 2.1 writes them: user prompts; assistant responses split into
one line per content block (sharing ``message.id``, ``requestId`` and ``usage``; only the last
line has the final ``output_tokens``); tool results with their ``toolUseResult`` UI copy; and
noise a reader must skip (``progress``, ``file-history-snapshot``, ``queue-operation``,
``system`` turn durations). About one session in three is compacted (``compact_boundary`` then
an ``isCompactSummary`` user line; session 0 always), one in three runs a ``Task`` subagent
into a sidechain file (session 1 always), and any main stream nearing ~135k tokens compacts.
Tool traffic carries the redundancy context policies target: byte-identical re-reads, re-reads
after edits, repeated and widening partial reads, repeated greps and listings, test runs and
status polls with identical or changed output, parallel tool calls, and idle gaps that expire
the prompt cache.

``usage`` is derived, not sampled, so a replay engine can validate against it. A block costs
``count_many([canonical text])`` tokens (``replay.ingest.blocktext``); a request's input is the stream's
overhead (system prompt + tools) plus all earlier blocks of its compaction partition. Cache
(Claude Code's two breakpoints, system/tools prefix and end of messages): a request reads the
previous request's whole input if that entry is younger than the TTL (1 h in even sessions,
5 min in odd ones and in subagents); otherwise just the system prefix if another session kept
it warm (probability ``SYSTEM_WARM_P``, also for each stream's first request), else nothing;
right after a compaction only the system prefix. The rest is written, bar 1-10 uncached tokens.

Equal arguments give byte-identical output: every random draw and id comes from
``random.Random(seed)``. Filler is sliced from prose and code-line pools built once, so the
cost is dominated by exact token counting (1,500 sessions in well under a minute).

Modules: ``conversation`` plays a session (turns, requests, compactions, subagents) on a
``session.Session`` and its ``Stream``s, ``tools`` draws the tool calls, ``wordpools`` holds
the words and code lines filler is sliced from; this module derives usage and writes files.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from random import Random

import orjson

from replay.ingest.tokens import count_many
from replay.synth.conversation import build_session
from replay.synth.session import (  # noqa: F401  (MAIN_OVERHEAD, SUB_OVERHEAD: imported from here by callers)
    DEFAULT_START, MAIN_OVERHEAD, PROJECTS, SUB_OVERHEAD, SYSTEM_WARM_P, TTL_5M_MS, Session, Stream,
)


@dataclass(frozen=True)
class GenerateSummary:
    files: list[Path]
    sessions: int
    requests: int
    tool_results: int
    bytes: int
def _apply_usage(st: Stream, counts: list[int], rng: Random) -> None:
    """Fill usage for every request of a stream from block token counts and the cache model."""
    total, last_total, last_t, after_compact = st.overhead, 0, None, False
    for op in st.ops:
        if op[0] == "b":
            total += counts[op[1]]
        elif op[0] == "c":
            op[1]["compactMetadata"]["preTokens"] = last_total
            total, after_compact = st.overhead, True
        else:
            _, t, lines, tids = op
            if last_t is not None and t - last_t <= st.ttl:
                read = st.overhead if after_compact else last_total
            else:
                read = st.overhead if rng.random() < SYSTEM_WARM_P else 0
            fresh = min(rng.randint(1, 10), total - read)
            write = total - read - fresh
            out = sum(counts[i] for i in tids) + rng.randint(0, 30)
            partial = min(rng.randint(1, 10), out)
            w5, w1 = (write, 0) if st.ttl == TTL_5M_MS else (0, write)
            for j, line in enumerate(lines):
                line["message"]["usage"] = {
                    "input_tokens": fresh, "cache_creation_input_tokens": write, "cache_read_input_tokens": read,
                    "cache_creation": {"ephemeral_5m_input_tokens": w5, "ephemeral_1h_input_tokens": w1},
                    "output_tokens": out if j == len(lines) - 1 else partial, "service_tier": "standard"}
            last_total, last_t, after_compact = total, t, False


def _write_session(s: Session, counts: list[int], usage_rng: Random, out: Path) -> list[tuple[Path, int, int, int]]:
    """Fill usage and write the session's files; (path, requests, tool results, bytes) per file."""
    written = []
    for st in s.streams:
        _apply_usage(st, counts, usage_rng)
        path = out / s.slug / f"{s.sid}.jsonl" if st.agent_id is None else \
            out / s.slug / s.sid / "subagents" / f"agent-{st.agent_id}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        data = b"\n".join(map(orjson.dumps, st.records)) + b"\n"
        path.write_bytes(data)
        written.append((path, st.requests, st.tool_results, len(data)))
    return written


def generate_corpus(out_dir: str | Path, sessions: int = 6, seed: int = 0, *,
                    start: datetime | None = None) -> GenerateSummary:
    """Write `sessions` synthetic Claude Code sessions under out_dir; same arguments, same bytes."""
    out = Path(out_dir)
    start = start or DEFAULT_START
    if start.tzinfo is None:
        start = start.replace(tzinfo=timezone.utc)
    master = Random(seed)
    t = int(start.timestamp() * 1000)
    written: list[tuple[Path, int, int, int]] = []
    pending = None
    # Token counting runs in the Rust core without the GIL: count session k while building k + 1.
    with ThreadPoolExecutor(max_workers=1) as pool:
        for idx in range(sessions):
            project = PROJECTS[master.randrange(len(PROJECTS))]
            s = build_session(idx, master.getrandbits(64), project, t)
            t += master.randint(20 * 60_000, 10 * 3_600_000)
            job = (s, pool.submit(count_many, s.texts), Random(master.getrandbits(64)))
            if pending:
                written += _write_session(pending[0], pending[1].result(), pending[2], out)
            pending = job
        if pending:
            written += _write_session(pending[0], pending[1].result(), pending[2], out)
    return GenerateSummary(files=[w[0] for w in written], sessions=sessions, requests=sum(w[1] for w in written),
                           tool_results=sum(w[2] for w in written), bytes=sum(w[3] for w in written))
