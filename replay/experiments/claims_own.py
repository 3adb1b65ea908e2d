"""Each source's own accounting of its published saving, computed from the trace arrays.

``Stream.nbytes`` stands for characters, ``Stream.chash`` for identity, and ``tool_kind``,
``resource``, ``partition`` and the line ranges for what a source's extractor reads.
`replay.experiments.claims` sets each figure beside the claim; `claims_metrics` bootstraps it.

devboy's L0 accounting (`devboy_own_metric`, seed 003; its ``scripts/extract_paper2_format_events.py``
and ``scripts/simulate_paper2_pipeline.py``): the events are the tool results of a session log
in log order (subagent results included: one cache per log file), each counted once; the
results of Task subagents that Claude Code 2.1.x writes inside ``progress`` records (streams of
kind ``progress_subagent``) are left out: the extractor reads each line's top-level message
only, and never sees them; a result of at least 200 characters is looked up in a FIFO of 5
content hashes, cleared at a compaction boundary; a hit saves its chars/4 tokens minus a
15-token hint; the saving is a share of the chars/4 tokens of the results of at least 200
characters. The repeat rate is hits per such result; the ceiling is the same with an unbounded
cache. The extractor reads the text parts of a result only; the trace stores a result with an
image as its text plus the base64 payload (its tokens by the image estimate), so a tool result
whose bytes exceed ``IMAGE_BYTES_PER_TOKEN`` per token (text stays under ~9 bytes per o200k
token; base64 images are 25-75 on the shared logs) is left out. ``Stream.nbytes`` are UTF-8
bytes, the extractor's characters are code points: the two differ only for non-ASCII text.

JP 067's redundant deliveries (`jp_redundant_reads`, seed 000): a redundant delivery is a
file-read result (tool kind ``read``) byte-identical to an earlier one of the same resource in
the same stream and compaction partition (the seed's same URI and checksum); its o200k tokens.
A whole-file read records no line count in the trace, so the 500-line figure is 500 x the
median tokens per line of the ranged reads (``line_start``/``line_end`` known), and the
redundant ranged reads of 400-600 lines are listed with their tokens.
"""

from __future__ import annotations

import statistics
from collections import OrderedDict
from typing import Any

from replay.ingest.trace import PROGRESS_SUBAGENT
from replay.model.arrays import K_TOOL_RESULT, TOOL_KIND_CODE, Dataset

IMAGE_BYTES_PER_TOKEN = 16


def _is_image_result(st, i: int) -> bool:
    return st.nbytes[i] > IMAGE_BYTES_PER_TOKEN * max(1, st.bpe[i])


def _in_fifo(fifo: OrderedDict, h: int, capacity: int) -> bool:
    """Whether ``h`` is in the FIFO of content hashes; if not, it goes in (the oldest out past ``capacity``)."""
    if h in fifo:
        return True
    fifo[h] = None
    if len(fifo) > capacity:
        fifo.popitem(last=False)
    return False


def devboy_own_metric(ds: Dataset, *, capacity: int = 5, hint_tokens: int = 15, min_chars: int = 200,
                      chars_per_token: float = 4.0) -> dict[str, Any]:
    """devboy's L0 accounting (see the module docs): one FIFO per session log, in log order."""
    tot = {"events": 0, "image_results_left_out": 0, "events_min_chars": 0, "base_tokens": 0.0,
           "saved_tokens": 0.0, "repeat_events": 0, "ceiling_saved_tokens": 0.0, "ceiling_repeat_events": 0,
           "per_stream_saved_tokens": 0.0, "per_stream_repeat_events": 0}
    for s in ds.sessions:
        evs = []
        for st in s.streams:
            if st.kind == PROGRESS_SUBAGENT:
                continue
            main = st.kind == "main"
            for i in range(st.n_blocks):
                if st.bkind[i] != K_TOOL_RESULT:
                    continue
                tot["events"] += 1
                if _is_image_result(st, i):
                    tot["image_results_left_out"] += 1
                    continue
                evs.append((st.ts[i], not main, st.stream_id, i, st.partition[i] if main else None,
                            st.nbytes[i], st.chash[i], st.partition[i]))
        evs.sort(key=lambda e: e[:4])
        fifo: OrderedDict[int, None] = OrderedDict()
        seen: set[int] = set()
        streams: dict[tuple[int, int], OrderedDict] = {}   # ctxreplay's scope: one FIFO per stream and partition
        part = None
        for _ts, _side, sid, _i, p, n, h, own_part in evs:
            if p is not None and p != part:
                part = p
                fifo.clear()
                seen.clear()
            if n < min_chars:
                continue
            t = n / chars_per_token
            tot["events_min_chars"] += 1
            tot["base_tokens"] += t
            if h in seen:
                tot["ceiling_repeat_events"] += 1
                tot["ceiling_saved_tokens"] += t - hint_tokens
            seen.add(h)
            for cache, scope in ((fifo, ""), (streams.setdefault((sid, own_part), OrderedDict()), "per_stream_")):
                if _in_fifo(cache, h, capacity):
                    tot[f"{scope}repeat_events"] += 1
                    tot[f"{scope}saved_tokens"] += t - hint_tokens
    base, nmin = tot["base_tokens"], tot["events_min_chars"]
    pct = (lambda x: 100 * x / base if base else None)
    rate = (lambda x: 100 * x / nmin if nmin else None)
    return {
        **tot,
        "saved_pct": pct(tot["saved_tokens"]),
        "repeat_rate_pct": rate(tot["repeat_events"]),
        "ceiling_saved_pct": pct(tot["ceiling_saved_tokens"]),
        "ceiling_repeat_rate_pct": rate(tot["ceiling_repeat_events"]),
        "per_stream_saved_pct": pct(tot["per_stream_saved_tokens"]),
        "setting": {"capacity": capacity, "eviction": "fifo", "hint_tokens": hint_tokens, "min_chars": min_chars,
                    "chars_per_token": chars_per_token, "scope": "session log (all streams, log order), "
                    "cleared at a compaction boundary", "image_bytes_per_token": IMAGE_BYTES_PER_TOKEN},
    }


def jp_redundant_reads(ds: Dataset, *, lines: int = 500, band: tuple[int, int] = (400, 600)) -> dict[str, Any]:
    """JP 067's redundant deliveries: tokens per read result repeated byte-identical (see module docs)."""
    read = TOOL_KIND_CODE["read"]
    redundant: list[int] = []
    in_band: list[dict[str, int]] = []
    per_line: list[float] = []
    reads = 0
    for s in ds.sessions:
        for st in s.streams:
            seen: set[tuple[int, int, int]] = set()
            for i in range(st.n_blocks):
                if st.bkind[i] != K_TOOL_RESULT or st.tool_kind[i] != read or st.resource[i] < 0:
                    continue
                reads += 1
                n_lines = st.line_end[i] - st.line_start[i] + 1 if st.line_start[i] >= 0 <= st.line_end[i] else 0
                if n_lines > 0 and not st.is_error[i]:
                    per_line.append(st.bpe[i] / n_lines)
                key = (st.partition[i], st.resource[i], st.chash[i])
                if key in seen:
                    redundant.append(st.bpe[i])
                    if band[0] <= n_lines <= band[1]:
                        in_band.append({"lines": n_lines, "tokens": st.bpe[i]})
                seen.add(key)
    tpl = statistics.median(per_line) if per_line else None
    return {
        "read_results": reads,
        "redundant_reads": len(redundant),
        "redundant_tokens": sum(redundant),
        "median_tokens_per_redundant_read": statistics.median(redundant) if redundant else None,
        "mean_tokens_per_redundant_read": statistics.fmean(redundant) if redundant else None,
        "ranged_reads": len(per_line),
        "median_tokens_per_line": tpl,
        f"tokens_per_{lines}_lines": tpl * lines if tpl is not None else None,
        f"redundant_ranged_reads_{band[0]}_{band[1]}_lines": in_band,
        "units": "o200k tokens (the trace's BPE count)",
    }
