"""read_range_dedup: range-aware insert-time dedup of file reads (this project's policy, not a seed's).

Source: ctxreplay itself (issue 14, item 2). JP RFD 067 lists range subsumption as a non-goal
and JP 036 only sketches it; devboy's LRU and JP's resource dedup match whole results by
content hash, so a narrower re-read of a file already in context is delivered again. On the
27 shared Claude Code logs 443 of 992 Read calls re-read an already-read path, only 78 with
the same offset/limit: the range is where the repeats are.

Rule (insert-time, append-only: no block already in context changes, so no cache bust):

* a successful read-kind tool result (``Read``/``NotebookRead``; the trace's tool kind
  ``read``) of a path (``Stream.resource``) whose content an earlier *full delivery* of a read
  of the same path proves (below) is replaced by a reference hint naming the earlier call,
  e.g. ``> [ref: tc_42, lines 120-180]`` (14 o200k tokens, counted by the ingest's o200k
  counter; devboy's standard hint is 11-12), converted to the stream's units with ``ctx.units``;
* the earlier read must still be in context: the same compaction partition (a compaction
  boundary clears the index) and not stripped (its size in ``ctx.eff`` is still its full
  size: in a pipeline a retroactive step may have removed it), optionally within
  ``lookback_turns`` user turns;
* with ``require_no_mutation`` (default), a mutating tool result of the same path (tool kind
  ``mutate``: Edit/Write/MultiEdit/NotebookEdit; for Codex, Gemini CLI and Copilot CLI logs
  also the shell commands their readers classify as writing a path, e.g. ``sed -i F``, ``>
  F``; a Claude Code ``Bash`` call never names a path, see ``docs/readers.md``) drops the
  earlier reads of that path from the index, and a write of the path by another stream of the
  session (a Task subagent's edit, by time: ``Stream.other_writes``) between the two reads
  prevents the hint, so no hint crosses a visible write;
* a client's preview of a result too large to keep (Claude Code's ``<persisted-output>``,
  its first 2 KB: ``Stream.previews``) is never a full read of the range it asked for: it is
  neither an original nor hinted.

Proof (``verify``). The trace keeps a keyed hash of each whole result and, for results that
show numbered lines (Claude Code's ``   N→text``), a keyed 64-bit hash of every line
(``read_lines``, ``docs/trace-format.md``). With ``verify = "lines"`` (default) a re-read is
hinted only when an earlier read proves it (``replay.policies.common.verified_cover``): the
two results are byte-identical (same content hash), or every numbered line the re-read shows
is identical to the same line of the earlier read (``lines_equal``) and, where the re-read
stopped before the end it asked for (the end of the file), the earlier read shows no line
after it (else the file shrank). The most recent proving read is the original. A trace
ingested before schema 8 holds no line hashes: only byte-identical repeats are verified there
until the logs are ingested again (the trace revision makes the next ingest re-read them). With
``verify = "trust"`` (the issue-14 rule, unsafe) a re-read is hinted when its line range
(``line_start``/``line_end``) is covered by an earlier read's, taken on trust that the file did
not change unseen; a read whose range equals an indexed read's with another content hash then
proves a change and drops the path's index. Coverage: ``line_start = -1`` is a read from line
1, ``line_end = -1`` a read to the end of the file; Claude Code's Read returns at most 2000
lines when no limit is given, so an open-ended read of lines [s, EOF) is taken to cover [s, s +
``open_read_lines`` - 1] only (default 2000); ``open_read_lines=None`` takes an open read for
the whole file. Lines cut at 2000 characters by Read are hashed as shown.

Figures per run: ``hints``; ``hints_verified`` (proven as above, whatever ``verify``);
``hints_trusted`` (taken on trust: ``trust`` only); ``trust_refuted`` (trusted hints whose
line hashes show a line that differs, or lines the original did not show: wrong hints);
``unseen_write_risk`` (trusted hints with a shell call of unknown path in between: a script,
a build, ``git checkout``; with ``opaque_shell_blocks=True`` such hints are not made);
``hint_distance`` (user turns to the original); ``dangling_refs`` (0 by construction: the
index is per partition); ``stale_refs`` (hints across a visible write of the path: only with
``require_no_mutation=False``, a what-if).

Measured on the shared corpus by ``python bench/read_verify.py`` (calibrated variant, TTL
from the log; intervals are compare's 95% paired bootstrap over sessions). The trust rule as
issue 14 shipped it (previews taken for their range, other streams' writes unseen) made 26
hints on the 27 ``claude-code/`` logs and 147 on ``entire-cli/``: 6 of these 173 (3.5%) fail
verification, 4 whose lines differ from the original's (1 and 3) and 2 whose original was a
``<persisted-output>`` preview (no lines to check). With previews marked, ``trust`` makes 24 and
147 hints, 1 and 3 refuted (4 of 171, 2.3%); this corpus holds no separate subagent files, so
other streams' writes prevent none. Defaults (``lines``): 24 hints on ``claude-code/``, all
verified, 23.3k tokens removed at insert, cost saved +0.28% [+0.05, +0.69] (trust +0.33%
[+0.07, +0.76]); 151 on ``entire-cli/``, all verified, 162.0k tokens, +1.01% [+0.62, +1.52]
(trust 147, +1.00% [+0.61, +1.50]): line hashes prove 7 re-reads the range rule cannot cover
(each re-reads the last lines of a file, from an offset to its end, after a read that showed
the whole file: the range rule takes the re-read to ask for 2000 lines past the earlier read's
cap) and refuse the 3 wrong ones. 0 busts. Small, but ahead of both source dedups and distinguishable from 0.

Measured before issue 24 on the 27 ``claude-code/`` logs (trust rule, for the history of the
threshold below): of 593 Read results with a path (15 errors), 210 re-read a path already
read in the same stream: 87 are not covered by an earlier range, 68 are covered only across
a write of the path, 19 only across a compaction, ~36 are covered and in context.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from replay.model.arrays import K_TOOL_RESULT, TOOL_KIND_CODE, Stream
from replay.policies.base import Context, Policy, one_of
from replay.policies.common import READ_LINE_CAP, count_hint, read_span, verified_cover

# The hint's rendered form and its size in o200k tokens (the ingest's counter; the test checks it).
HINT_TEMPLATE = "> [ref: {call}, lines {start}-{end}]"
TYPICAL = {"call": "tc_42", "start": 120, "end": 180}
HINT_TOKENS = 14

_READ = TOOL_KIND_CODE["read"]
_MUTATE = TOOL_KIND_CODE["mutate"]
_SHELL = TOOL_KIND_CODE["shell"]
INF = 1 << 62
VERIFY = ("lines", "trust")

EXTRA_METRICS = ("hints_verified", "hints_trusted", "trust_refuted", "unseen_write_risk")


def span(ls: int, le: int, open_lines: int | None) -> tuple[int, int]:
    """The lines [first, last] a read of (line_start, line_end) returned (-1: unbounded)."""
    first = ls if ls > 0 else 1
    if le >= 0:
        return first, le
    return first, (first + open_lines - 1 if open_lines else INF)


class _Entry:
    __slots__ = ("pos", "ls", "le", "first", "last", "chash", "opaque")

    def __init__(self, st: Stream, i: int, first: int, last: int, opaque: int):
        self.pos = i
        self.ls, self.le = st.line_start[i], st.line_end[i]
        self.first, self.last = first, last
        self.chash = st.chash[i]
        self.opaque = opaque  # opaque shell calls seen in the stream before this read


class _State:
    __slots__ = ("reads", "last_mut", "opaque", "others")

    def __init__(self, st: Stream) -> None:
        self.reads: dict[int, list[_Entry]] = {}   # path -> full deliveries still in context, oldest first
        self.last_mut: dict[int, int] = {}         # path -> last block that mutated it
        self.opaque = 0                            # shell results with no known path so far
        self.others: dict[int, list[int]] = {}     # path -> times the session's other streams wrote it
        for ts, res in st.other_writes:
            if ts >= 0:
                self.others.setdefault(res, []).append(ts)


class ReadRangeDedup(Policy):
    """A file read whose lines an earlier read of the same path still in context shows identical (keyed per-line hashes; no write in between) becomes a ~14-token hint naming that call (insert-time)."""

    name = "read_range_dedup"
    source = "ctxreplay (this project, issue 14 item 2, issue 24 item 3; not a seed)"

    @dataclass(frozen=True)
    class Params:
        # Only results of at least this many o200k tokens are hinted (the block's own BPE count).
        # 100: on the 27 shared Claude logs, with no threshold 4 of the 30 hinted re-reads are
        # under 100 tokens (144 tokens together, 0.7% of the hinted tokens; 3 under 25, where a
        # 14-token hint saves next to nothing): the indirection the agent must follow is not
        # worth it. From 100 to 200 the next 6 hints hold 4.6% of the tokens, so 100 is kept.
        min_tokens: int = 100
        # Only an original within this many user turns of the re-read is referenced (None: any in
        # the partition; the partition already bounds what is in context).
        lookback_turns: int | None = None
        # A visible write of the path (tool kind mutate on the same resource, in this stream or,
        # by time, in another stream of the session: a Task subagent's edit) between the reads
        # prevents the hint. False is an unsafe what-if: hints then cross writes (stale_refs).
        require_no_mutation: bool = True
        # "lines": a hint only where the earlier read proves the re-read's content (same content
        # hash, or every numbered line identical by its keyed hash). "trust": the issue-14 rule,
        # a covering range is taken to hold the same lines unless a write was seen (unsafe: see
        # the module docstring for how often it is wrong).
        verify: str = "lines"
        # (trust only) A shell call whose path the trace cannot tell (might have written the file)
        # between the reads also prevents a hint not provably identical. Off by default: such
        # hints are counted in unseen_write_risk instead.
        opaque_shell_blocks: bool = False
        # Lines an open-ended read (no limit) is taken to have returned: Claude Code's Read cap of
        # 2000. None: an open-ended read covers the rest of the file.
        open_read_lines: int | None = READ_LINE_CAP
        # Size of the hint in o200k tokens (the rendered HINT_TEMPLATE).
        hint_tokens: float = HINT_TOKENS

        def __post_init__(self):
            if not isinstance(self.min_tokens, int) or self.min_tokens < 0:
                raise ValueError(f"min_tokens must be a non-negative integer, got {self.min_tokens!r}")
            for f in ("lookback_turns", "open_read_lines"):
                v = getattr(self, f)
                if v is not None and (not isinstance(v, int) or v < (0 if f == "lookback_turns" else 1)):
                    raise ValueError(f"{f} must be a {'non-negative' if f == 'lookback_turns' else 'positive'} "
                                     f"integer or None, got {v!r}")
            if not isinstance(self.hint_tokens, (int, float)) or self.hint_tokens < 0:
                raise ValueError(f"hint_tokens must be a non-negative number, got {self.hint_tokens!r}")
            one_of(self, "verify", VERIFY)

    append_kinds = frozenset({K_TOOL_RESULT})

    def start_stream(self, ctx: Context) -> None:
        for f in EXTRA_METRICS:
            ctx.metrics.setdefault(f, 0.0)
        ctx.state["rrd"] = _State(ctx.stream)

    def on_compaction(self, ctx: Context, pos: int) -> None:
        ctx.state["rrd"].reads.clear()  # earlier reads are no longer in context

    def on_append(self, ctx: Context, i: int, size: float) -> float:
        st = ctx.stream
        s: _State = ctx.state["rrd"]
        res = st.resource[i]
        tk = st.tool_kind[i]
        if tk == _SHELL and res < 0:
            s.opaque += 1
            return size
        if res < 0:
            return size
        if tk == _MUTATE:
            s.last_mut[res] = i
            if self.params.require_no_mutation:
                s.reads.pop(res, None)
            return size
        # a client's preview of a result too large to keep is not the range it asked for
        if tk != _READ or st.is_error[i] or i in st.previews:
            return size
        p = self.params
        first, last = span(st.line_start[i], st.line_end[i], p.open_read_lines)
        entries = s.reads.get(res)
        if entries:
            ls, le, ch = st.line_start[i], st.line_end[i], st.chash[i]
            # same range, other content: the file changed unseen; nothing earlier can be trusted
            # (verified hints need no such guess: each is checked against its original's lines)
            if p.verify == "trust" and any(e.ls == ls and e.le == le and e.chash != ch for e in entries):
                entries.clear()
            elif size >= st.tokens[i] and st.bpe[i] >= p.min_tokens:
                hit = self._match(ctx, s, i, entries, first, last)
                if hit is not None:
                    return ctx.units(p.hint_tokens)
        if size >= st.tokens[i]:  # a full delivery: a target for later hints
            s.reads.setdefault(res, []).append(_Entry(st, i, first, last, s.opaque))
        return size

    def _written_between(self, s: _State, st: Stream, e: _Entry, i: int) -> bool:
        """Another stream of the session wrote the path between the original and the re-read."""
        times = s.others.get(st.resource[i])
        if not times or not self.params.require_no_mutation:
            return False
        t0, t1 = st.ts[e.pos], st.ts[i]
        if t0 < 0 or t1 < 0:
            return False
        k = bisect_right(times, t0)
        return k < len(times) and times[k] <= t1

    def _match(self, ctx: Context, s: _State, i: int, entries: list[_Entry], first: int, last: int) -> _Entry | None:
        st, p, eff = ctx.stream, self.params, ctx.eff
        ch = st.chash[i]
        trust = p.verify == "trust"
        # stripped originals are no longer in context
        entries[:] = [e for e in entries if eff[e.pos] >= st.tokens[e.pos]]
        best = None
        for e in reversed(entries):  # most recent first; an exact repeat wins
            if p.lookback_turns is not None and st.user_turn[i] - st.user_turn[e.pos] > p.lookback_turns:
                continue
            if self._written_between(s, st, e, i):
                continue
            if not trust:
                if verified_cover(st, i, e.pos, p.open_read_lines):
                    best = e
                    break
                continue
            if e.first > first or e.last < last:
                continue
            proven = e.chash == ch
            if not proven and p.opaque_shell_blocks and s.opaque > e.opaque:
                continue
            if proven:
                best = e
                break
            if best is None:
                best = e
        if best is None:
            return None
        m = ctx.metrics
        count_hint(ctx, i, best.pos, s.last_mut.get(st.resource[i], -1) > best.pos)
        if verified_cover(st, i, best.pos, p.open_read_lines):
            m["hints_verified"] += 1
        else:
            m["hints_trusted"] += 1
            if read_span(st, i) is not None and read_span(st, best.pos) is not None:
                m["trust_refuted"] += 1  # both show their lines, and they differ
            if s.opaque > best.opaque:
                m["unseen_write_risk"] += 1
        return best
