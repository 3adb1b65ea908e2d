"""Helpers shared by the policies: the retroactive ones' incremental scan, trim bookkeeping
and the pricing of re-reads of stripped content, prompt sizes and line ranges; the
insert-time ones' hint figures; what an earlier file read proves about a later one (keyed
line hashes: ``lines_equal``, ``verified_cover``); tool codes; which thinking blocks the
provider keeps."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from replay.model.arrays import K_THINKING, K_TOOL_USE, TOOL_KIND_CODE, Stream
from replay.policies.base import Context, Policy

_READ_KIND = TOOL_KIND_CODE["read"]


class TrimmedRereads:
    """``trimmed_reread`` bookkeeping shared by the retroactive policies.

    A non-tool_use block with a resource that a policy shrinks *lossily* is remembered (once):
    its content is gone from context, not an exact or superseding repeat of it still there.
    When a later tool_use of the read kind names the same resource, the remembered blocks
    count, and ``scan`` returns them (for ``reread_cost``). A lossless removal is not
    remembered: the agent still sees the content, so a re-read cannot be blamed on the
    policy (if the copy that stayed is stripped lossily later, that strip is remembered).
    Reset at a compaction boundary of the log (the log's compaction dropped them anyway).
    """

    __slots__ = ("pending", "seen")

    def __init__(self) -> None:
        self.pending: dict[int, list[int]] = {}
        self.seen: set[int] = set()

    def trimmed(self, st: Stream, pos: int, lossy: bool = False) -> None:
        if not lossy:
            return
        r = st.resource[pos]
        if r >= 0 and st.bkind[pos] != K_TOOL_USE and pos not in self.seen:
            self.seen.add(pos)
            self.pending.setdefault(r, []).append(pos)

    def scan(self, st: Stream, lo: int, hi: int, metrics: dict[str, float]) -> list[int]:
        """Count re-reads among blocks [lo, hi) (appended after the trims); return the
        positions of the lossily trimmed blocks they re-read."""
        pending = self.pending
        due: list[int] = []
        if not pending:
            return due
        bkind, tk, res = st.bkind, st.tool_kind, st.resource
        for i in range(lo, hi):
            if bkind[i] == K_TOOL_USE and tk[i] == _READ_KIND:
                got = pending.pop(res[i], None)
                if got:
                    metrics["trimmed_reread"] += len(got)
                    due.extend(got)
                    if not pending:
                        break
        return due


class ScanningPolicy(Policy):
    """Base of the retroactive policies that look at each block once.

    Before a request, ``catch_up`` hands the blocks appended since the previous request to
    the policy's ``_scan`` (after counting re-reads of trimmed content among them). State
    lives in ``ctx.state``: ``setup`` fills the per-stream part, ``reset`` the per-partition
    part (at the stream's start and at every compaction boundary of the log).
    """

    def start_stream(self, ctx: Context) -> None:
        if hasattr(self.params, "reread_cost"):
            for f in ("reread_restored", "reread_restored_tokens"):
                ctx.metrics.setdefault(f, 0.0)
        self.setup(ctx, ctx.state)
        self.reset(ctx.state, 0)

    def on_compaction(self, ctx: Context, pos: int) -> None:
        self.reset(ctx.state, pos)

    def setup(self, ctx: Context, s: dict[str, Any]) -> None:
        """Per-stream state, before the first block."""

    def reset(self, s: dict[str, Any], pos: int) -> None:
        """Per-partition state for a partition starting at block ``pos``; extend it with super()."""
        s["scan"] = pos                # blocks before this were scanned
        s["rr"] = TrimmedRereads()     # the log's compaction dropped the earlier trims anyway
        s["restored"] = set()          # blocks given back their size by a re-read (never stripped again)

    def catch_up(self, ctx: Context, k: int) -> int:
        """Scan the blocks before request ``k`` not scanned yet; return the request's position.

        Re-reads among them of content the policy stripped lossily are counted and, for a
        policy whose ``reread_cost`` parameter is on, priced (`restore_rereads`)."""
        s = ctx.state
        st = ctx.stream
        pos = st.r_pos[k]
        lo = s["scan"]
        if lo < pos:
            due = s["rr"].scan(st, lo, pos, ctx.metrics)
            if due and getattr(self.params, "reread_cost", False):
                self.reread(ctx, s, due)
            self._scan(st, s, lo, pos)
            s["scan"] = pos
        return pos

    def _scan(self, st: Stream, s: dict[str, Any], lo: int, hi: int) -> None:
        """Take blocks [lo, hi) into the policy's index."""
        raise NotImplementedError

    def reread(self, ctx: Context, s: dict[str, Any], due: list[int]) -> None:
        """``reread_cost``: blocks ``due`` the policy stripped lossily were re-read."""
        restore_rereads(ctx, s, due)


def shrink(ctx: Context, pos: int, size: float, rr: TrimmedRereads, lossy: bool = False) -> float:
    """Shrink block ``pos`` to ``size`` if that is smaller; return the tokens removed.
    ``lossy``: the content is gone from context (not an exact or superseding repeat), so a
    later re-read of it counts (``trimmed_reread``) and is priced when the policy's
    ``reread_cost`` is on; a lossless removal is never charged a re-read."""
    old = ctx.eff[pos]
    if size >= old:
        return 0.0
    ctx.set_size(pos, size)
    rr.trimmed(ctx.stream, pos, lossy)
    return old - size


# Re-reads of stripped content ------------------------------------------------------------
def restore_rereads(ctx: Context, s: dict[str, Any], due: list[int]) -> None:
    """``reread_cost``: the agent re-read (a read-kind tool_use naming the same resource) the
    content of blocks ``due`` that the policy stripped lossily. Pessimistically, the re-read
    is taken to be caused by the strip, so the policy is charged that content's tokens again:
    each block gets its original size back, a retroactive change at the block that the engine
    prices at this request (cache bust included), and keeps it for the rest of the partition
    (``s["restored"]``: the policy never strips it again). Figures: ``reread_restored``
    (blocks) and ``reread_restored_tokens`` (tokens given back at the re-read)."""
    st, eff, m = ctx.stream, ctx.eff, ctx.metrics
    restored = s["restored"]
    n = 0
    tokens = 0.0
    for pos in due:
        full = st.tokens[pos]
        old = eff[pos]
        restored.add(pos)
        if old < full:
            ctx.set_size(pos, full)
            n += 1
            tokens += full - old
    m["reread_restored"] += n
    m["reread_restored_tokens"] += tokens


def count_hint(ctx: Context, i: int, orig: int, stale: bool) -> None:
    """Risk figures of a reference hint at block ``i`` pointing at block ``orig``: its distance
    in user turns, dangling (the original is in an earlier compaction partition) and stale
    (the resource was mutated after the original)."""
    st = ctx.stream
    m = ctx.metrics
    m["hints"] += 1
    m["hint_distance"] += st.user_turn[i] - st.user_turn[orig]
    if st.partition[orig] != st.partition[i]:
        m["dangling_refs"] += 1
    if stale:
        m["stale_refs"] += 1


# Verified reads ------------------------------------------------------------------------------
# Claude Code's Read returns at most this many lines when the call gives no limit.
READ_LINE_CAP = 2000


def read_span(st: Stream, i: int) -> tuple[int, int] | None:
    """(first, last) file line numbers that read block ``i`` shows, when the trace holds their
    keyed hashes (``Stream.lines``), else None."""
    got = st.lines.get(i)
    return (got[0], got[0] + len(got[1]) - 1) if got else None


def lines_equal(st: Stream, i: int, j: int, lo: int, hi: int) -> bool:
    """Are lines ``lo``..``hi`` (file line numbers, both included) of read block ``i`` identical
    to the same lines of read block ``j`` (by their keyed per-line hashes)? False when ``lo >
    hi`` or when either block does not show every one of those lines (no hashes: a preview, a
    result without numbered lines, a trace ingested before schema 8)."""
    a, b = st.lines.get(i), st.lines.get(j)
    if a is None or b is None or lo > hi:
        return False
    ai, bj, n = lo - a[0], lo - b[0], hi - lo + 1
    if ai < 0 or bj < 0 or ai + n > len(a[1]) or bj + n > len(b[1]):
        return False
    return a[1][ai:ai + n] == b[1][bj:bj + n]


def verified_cover(st: Stream, i: int, j: int, open_lines: int | None = READ_LINE_CAP) -> bool:
    """Does the earlier read ``j`` (of the same path) prove what the read ``i`` returned? Yes when
    the two results are byte-identical (same content hash), or when every numbered line ``i``
    shows is identical in ``j`` (`lines_equal`) and, where ``i`` stopped before the end it asked
    for (the file ended there), ``j`` shows no line after it (else the file shrank in between).
    ``open_lines``: the lines a read without a limit asks for (None: the rest of the file)."""
    if st.chash[i] == st.chash[j]:
        return True
    span = read_span(st, i)
    if span is None or not lines_equal(st, i, j, span[0], span[1]):
        return False
    ls, le = st.line_start[i], st.line_end[i]
    asked = le if le >= 0 else (max(ls, 1) + open_lines - 1 if open_lines else None)
    if asked is None or span[1] < asked:  # i reached the end of the file at span[1]
        other = read_span(st, j)
        return other is not None and other[1] == span[1]
    return True


def codes(ctx: Context, names: tuple[str, ...]) -> set[int]:
    return {c for c in (ctx.vocab.tool_code(n) for n in names) if c >= 0}


def overhead_of(ov: dict[int, float], model: int) -> float:
    """A stream's overhead for ``model`` (a stream's ``overhead`` table, or a policy's copy)."""
    if model in ov:
        return ov[model]
    return max(ov.values()) if ov else 0.0


def full_prompt(st: Stream, k: int, blocks: float) -> float:
    """Request ``k``'s prompt when its partition's blocks are ``blocks`` tokens (at their
    original sizes, say: what a stateless server-side edit compares with its trigger)."""
    res = st.r_residual[k] if st.r_residual else 0.0
    return overhead_of(st.overhead, st.r_model[k]) + blocks + res


def covers(new_ls: int, new_le: int, old_ls: int, old_le: int) -> bool:
    """Does a read of lines [new_ls, new_le] contain [old_ls, old_le]? (-1 start = whole file,
    -1 end = to the end of the file)."""
    if new_ls < 0:
        return True
    if old_ls < 0:
        return False
    if new_ls > old_ls:
        return False
    if new_le < 0:
        return True
    return 0 <= old_le <= new_le


# Thinking blocks the provider keeps ---------------------------------------------------------
# Anthropic's context-windows page (platform.claude.com/docs/en/build-with-claude/context-windows,
# "extended thinking"; docs.anthropic.com/{fr,es,ko}/... say the same): previous thinking
# blocks are automatically stripped from the context window calculation by the API and are
# not part of the history the model sees in subsequent turns; context_window = (input_tokens
# - previous_thinking_tokens) + current_turn_tokens. The extended-thinking page
# (platform.claude.com/docs/en/build-with-claude/extended-thinking, "Differences in thinking
# across model versions", as quoted in public discussions of it) narrows this by model:
# Claude Opus 4.5 and later Opus models and Claude Sonnet 4.6 and later Sonnet models keep
# all prior thinking blocks; Opus 4.1 and earlier, Sonnet 4.5 and earlier and all Haiku
# through Haiku 4.5 keep only the current assistant turn's (dropped at each new user turn; a
# tool_result continues the turn). Measured on the shared corpora: recorded inputs shrink at
# turn starts for Sonnet 4.5 / Sonnet 4 / Opus 4.1, not for Opus 4.5 / 4.6 / 4.8, Sonnet 4.6.
_FAMILY_FIRST = re.compile(r"claude-(opus|sonnet|haiku)-(\d+)(?:[-.](\d{1,2}))?(?=$|[-@:.])")
_VERSION_FIRST = re.compile(r"claude-(\d+)(?:[-.](\d{1,2}))?-(opus|sonnet|haiku)")
# first version that keeps earlier turns' thinking, per family
KEEPS_FROM = {"opus": (4, 5), "sonnet": (4, 6), "haiku": (4, 6)}


@lru_cache(maxsize=256)
def keeps_thinking(model: str) -> bool:
    """Does the provider keep earlier user turns' thinking blocks in context for ``model``?

    False for Claude Opus < 4.5, Sonnet < 4.6, Haiku <= 4.5 and every Claude 3.x (previous
    turns' thinking is stripped at each new user turn); True for later versions, other
    Claude families (Mythos, Fable, ...), names without a readable version and non-Anthropic
    models (no such rule: counted as context, as before). Haiku after 4.5 is not documented
    and assumed to behave like the later Opus and Sonnet."""
    name = model.lower()
    if "claude" not in name:
        return True
    m = _FAMILY_FIRST.search(name)
    if m:
        family, major, minor = m.group(1), int(m.group(2)), int(m.group(3) or 0)
    else:
        m = _VERSION_FIRST.search(name)
        if not m:
            return True
        major, minor, family = int(m.group(1)), int(m.group(2) or 0), m.group(3)
    return (major, minor) >= KEEPS_FROM[family]


def dropped_thinking_turn(ctx: Context, k: int) -> int:
    """Thinking blocks of user turns before the returned one are not in the provider's
    context at request ``k`` (-1: the request's model keeps them all). A policy must not
    count removing them as a saving: the baseline's blocks still hold them and the anchoring
    absorbs the difference, so removing them again would save tokens the provider never saw."""
    st = ctx.stream
    code = st.r_model[k]
    models = ctx.vocab.models
    if not 0 <= code < len(models) or keeps_thinking(models[code]):
        return -1
    return st.r_user_turn[k]


def provider_drops(st: Stream, i: int, cut: int) -> bool:
    """Is block ``i`` a thinking block the provider no longer keeps (``cut`` from
    `dropped_thinking_turn`)?"""
    return st.bkind[i] == K_THINKING and st.user_turn[i] < cut
