"""Helpers shared by the policies: the retroactive ones' incremental scan, trim bookkeeping,
prompt sizes and line ranges; the insert-time ones' hint figures; tool codes."""

from __future__ import annotations

from typing import Any

from replay.model.arrays import K_TOOL_USE, TOOL_KIND_CODE, Stream
from replay.policies.base import Context, Policy

_READ_KIND = TOOL_KIND_CODE["read"]


class TrimmedRereads:
    """``trimmed_reread`` bookkeeping shared by the retroactive policies.

    A non-tool_use block with a resource that a policy shrinks is remembered (once); when a
    later tool_use of the read kind names the same resource, the remembered blocks count.
    Reset at a compaction boundary of the log (the log's compaction dropped them anyway).
    """

    __slots__ = ("pending", "seen")

    def __init__(self) -> None:
        self.pending: dict[int, int] = {}
        self.seen: set[int] = set()

    def trimmed(self, st: Stream, pos: int) -> None:
        r = st.resource[pos]
        if r >= 0 and st.bkind[pos] != K_TOOL_USE and pos not in self.seen:
            self.seen.add(pos)
            self.pending[r] = self.pending.get(r, 0) + 1

    def scan(self, st: Stream, lo: int, hi: int, metrics: dict[str, float]) -> None:
        """Count re-reads among blocks [lo, hi) (appended after the trims)."""
        pending = self.pending
        if not pending:
            return
        bkind, tk, res = st.bkind, st.tool_kind, st.resource
        for i in range(lo, hi):
            if bkind[i] == K_TOOL_USE and tk[i] == _READ_KIND:
                n = pending.pop(res[i], 0)
                if n:
                    metrics["trimmed_reread"] += n
                    if not pending:
                        return


class ScanningPolicy(Policy):
    """Base of the retroactive policies that look at each block once.

    Before a request, ``catch_up`` hands the blocks appended since the previous request to
    the policy's ``_scan`` (after counting re-reads of trimmed content among them). State
    lives in ``ctx.state``: ``setup`` fills the per-stream part, ``reset`` the per-partition
    part (at the stream's start and at every compaction boundary of the log).
    """

    def start_stream(self, ctx: Context) -> None:
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

    def catch_up(self, ctx: Context, k: int) -> int:
        """Scan the blocks before request ``k`` not scanned yet; return the request's position."""
        s = ctx.state
        st = ctx.stream
        pos = st.r_pos[k]
        lo = s["scan"]
        if lo < pos:
            s["rr"].scan(st, lo, pos, ctx.metrics)
            self._scan(st, s, lo, pos)
            s["scan"] = pos
        return pos

    def _scan(self, st: Stream, s: dict[str, Any], lo: int, hi: int) -> None:
        """Take blocks [lo, hi) into the policy's index."""
        raise NotImplementedError


def shrink(ctx: Context, pos: int, size: float, rr: TrimmedRereads) -> float:
    """Shrink block ``pos`` to ``size`` if that is smaller; return the tokens removed."""
    old = ctx.eff[pos]
    if size >= old:
        return 0.0
    ctx.set_size(pos, size)
    rr.trimmed(ctx.stream, pos)
    return old - size


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
