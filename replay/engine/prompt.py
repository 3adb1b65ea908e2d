"""Request k's prompt in the policy's world: the lengths and positions the per-request step
(`replay.engine.pricing`) takes from the log (a recorded uncached tail, a recorded read, an
observed eviction or write) moved to the policy's version of the same blocks.

Each is the identity for a policy that changed no block before the place it measures, so the
no-op replay reproduces the log's figures.
"""

from __future__ import annotations

from replay.engine.calibration import (
    base_csum,
    base_prefix,
    observed_write_position,
    observed_write_position_at,
    tolerance,
)
from replay.model.arrays import Stream
from replay.model.cache import StreamCache


def _evict(cache: StreamCache, st: Stream, eff: list[float], k: int, overhead: float, logged: float,
           t: int, exact: bool = False, same: bool = False) -> None:
    """A cache miss the log records but the model cannot explain: cut the entries past it back.

    The recorded read may end inside block e (an earlier request's uncached tail started
    there): the policy keeps the same share of its own version of block e. Where the read
    ended inside the system prefix, the system entries are cut at the same place of the
    policy's prompt (`in_policy_world`). ``exact``: keep the share however small (automatic
    caching reads whole grid steps of up to 512 tokens, so a cut a few tokens short of the
    recorded read would read a whole step less). ``same``: the policy changed no block before
    the request (sums over the blocks are then the log's, kept on the stream)."""
    e, part, rr = st.r_evict[k], st.r_partition[k], st.r_read[k]
    prefix = 0.0
    if e >= 0:
        s0 = st.part_start.get(part, 0)
        res = st.r_residual[k] if st.r_residual else 0.0
        prefix = overhead + (tokens_sum(st, s0, e) if same else sum(eff[s0:e])) + res
        extra = rr - base_prefix(st, k, e)
        if e < st.r_pos[k] and (extra > tolerance(rr) or (exact and extra > 0.0)) and st.tokens[e] > 0:
            # a block the policy shrank keeps the share the read covered: never more cache for
            # the log's block than for the policy's, never a write the shrink did not pay for
            prefix += min(extra, st.tokens[e]) * (eff[e] / st.tokens[e])
            e += 1
    sys_tokens = in_policy_world(st, eff, k, rr + tolerance(rr), overhead, logged, None, same)
    cache.evict(st.r_model[k], part, e, sys_tokens, prefix, t)


def uncached_tail(st: Stream, eff: list[float], k: int, unc: float) -> float:
    """Request k's uncached tail (the input after its last breakpoint: ``unc`` tokens in the
    log) in the policy's world: the same blocks at the policy's sizes.

    The tail is the end of the prompt, so a policy that shrank blocks in it shrank the tail,
    not the cached part before it; taking the log's tail length as is would move the
    breakpoint back into the cached prefix and make the entries earlier requests wrote longer
    than anything the request can read. Exactly ``unc`` for a policy that changed none of
    the tail's blocks."""
    pos = st.r_pos[k]
    s0 = st.part_start.get(st.r_partition[k], 0)
    tokens = st.tokens
    saved = 0.0
    left = unc
    b = pos - 1
    while b >= s0 and left > 0.0:
        size = tokens[b]
        if size > 0.0:
            cut = eff[b] if eff[b] < size else size
            if size <= left:
                saved += size - cut
            else:
                # the breakpoint lies inside block b: the tail holds its last `left` tokens
                saved += (size - cut) * (left / size)
            left -= size
        b -= 1
    out = unc - saved
    return out if out > 0.0 else 0.0


def in_policy_world(st: Stream, eff: list[float], k: int, length: float, overhead: float, logged: float,
                    cap: float | None = None, same: bool = False) -> float:
    """A length of request k's prompt in the log's world (a recorded read), as the length of the
    policy's prompt up to the same place.

    The frame is the anchoring's: the overhead, the residual, then the partition's blocks. A
    place inside the overhead moves by what the policy took out of the overhead (pruned tool
    definitions); a place past it (a conversation continued from an earlier session that a
    compaction dropped leaves a large negative residual, so a read can end among the blocks
    while it is shorter than the overhead) moves by what the policy took out of the blocks
    before it, and inside a block by the same share of the policy's version of that block.
    The identity for a policy that changed nothing; never longer than the log's length less
    what the policy removed before that place, so a policy that only shrinks is never
    granted less cache than it saved writes. ``cap``: a length the caller takes at most, so
    that a place past the overhead need not be sized (no sum over the blocks: the warm start
    asks at every request of the calibrated replay). ``same``: the policy changed no block
    before the request."""
    s0 = st.part_start.get(st.r_partition[k], 0)
    res = st.r_residual[k] if st.r_residual else 0.0
    pos = st.r_pos[k]
    base0 = logged + res
    if length <= base0 or pos <= s0:
        out = length - (logged - overhead)
        return out if out > 0.0 else 0.0
    if cap is not None and overhead + res >= cap:
        return cap
    # where the place lies among the log's blocks, and how far into block p: the log's alone,
    # kept on the stream (the calibrated replay asks at every request of a continued conversation)
    memo = st.__dict__.setdefault("_place_memo", {})
    key = (k, length, logged)
    got = memo.get(key)
    if got is None:
        csum = base_csum(st)
        p = observed_write_position_at(csum, length - base0 + csum[s0], s0, pos)
        got = memo[key] = (p, length - (base0 + csum[p] - csum[s0]))
    p, rem = got
    if p < pos and st.tokens[p] > 0:
        rem = min(rem, st.tokens[p]) * (eff[p] / st.tokens[p])
    out = overhead + res + (tokens_sum(st, s0, p) if same else sum(eff[s0:p])) + rem
    return out if out > 0.0 else 0.0


def tokens_sum(st: Stream, s0: int, p: int) -> float:
    """``sum(st.tokens[s0:p])``, memoized on the stream: the same float as ``sum(eff[s0:p])``
    where the policy changed none of those blocks (the same values added in the same order)."""
    memo = st.__dict__.setdefault("_tokens_sums", {})
    got = memo.get((s0, p))
    if got is None:
        got = memo[(s0, p)] = sum(st.tokens[s0:p])
    return got


def _prefix(st: Stream, eff: list[float], k: int, u: int, overhead: float, same: bool = False) -> float:
    """The policy's prefix of request k up to block u (``same``: the policy changed no block before u)."""
    s0 = st.part_start.get(st.r_partition[k], 0)
    return overhead + (tokens_sum(st, s0, u) if same else sum(eff[s0:u])) + (st.r_residual[k] if st.r_residual else 0.0)


def _observed_write(cache: StreamCache, st: Stream, eff: list[float], k: int, t: int, overhead: float,
                    cacheable: float, min_cacheable: int) -> int:
    """Where request k's recorded read covers blocks beyond every entry alive in the (no-op)
    cache, the block position of the observed write, else -1."""
    pos = st.r_pos[k]
    s0 = st.part_start.get(st.r_partition[k], 0)
    p = observed_write_position(st, k, pos)
    if p <= s0:
        return -1
    prefix = min(_prefix(st, eff, k, p, overhead), cacheable)
    if prefix < min_cacheable:
        return -1
    best = cache.longest(st.r_model[k], st.r_partition[k], pos, t, cacheable)
    if best is not None and best + tolerance(float(st.r_read[k])) >= prefix:
        return -1
    return p


def _frame_check(cache: StreamCache, st: Stream, eff: list[float], k: int, overhead_of: list[float]) -> None:
    """The provider stopped seeing tokens the blocks still hold (the anchoring residual fell):
    an entry longer than what is now sent up to its boundary describes content that is no
    longer sent and cannot be read."""
    part = st.r_partition[k]
    s0 = st.part_start.get(part, 0)
    res = st.r_residual[k]
    kept = []
    for e in cache.entries:
        if e[1] == part and e[2] > s0:
            now = overhead_of[e[0]] + sum(eff[s0:e[2]]) + res
            if e[3] > now + tolerance(now):
                continue
        kept.append(e)
    cache.entries = kept
