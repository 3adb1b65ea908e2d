"""Helpers shared by the retroactive policies (trim bookkeeping, tool codes, line ranges)."""

from __future__ import annotations

from replay.model.arrays import K_TOOL_USE, TOOL_KIND_CODE, Stream
from replay.policies.base import Context

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


def shrink(ctx: Context, pos: int, size: float, rr: TrimmedRereads) -> float:
    """Shrink block ``pos`` to ``size`` if that is smaller; return the tokens removed."""
    old = ctx.eff[pos]
    if size >= old:
        return 0.0
    ctx.set_size(pos, size)
    rr.trimmed(ctx.stream, pos)
    return old - size


def codes(ctx: Context, names: tuple[str, ...]) -> set[int]:
    return {c for c in (ctx.vocab.tool_code(n) for n in names) if c >= 0}


def overhead_of(st: Stream, model: int) -> float:
    ov = st.overhead
    if model in ov:
        return ov[model]
    return max(ov.values()) if ov else 0.0


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
