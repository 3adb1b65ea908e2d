"""Cache events the log shows but the trace cannot: decided once, in the log's own world.

Three kinds of event change a stream's cache outside the requests the log records
(docs/replay-model.md, "What comes from the log"):

* **turn-end writes** (a model rule, every variant): Claude Code 2.x sends an unlogged
  request when a turn ends in assistant text (its prompt suggestion), which caches the
  conversation up to that text when the response ends. With calibration on, only where the
  recorded read of the next request reaches that prefix.
* **observed evictions** (calibrated only): the recorded read covers less than the replay
  holds; `arrays.eviction_positions` gives the block position.
* **observed writes** (calibrated only): the recorded read covers blocks beyond every entry
  the no-op replay holds alive, so a request the log does not show (an interrupted prompt, a
  retried call) cached that prefix.

Every decision is taken in the log's world, from recorded usage and the no-op replay's
cache, and is the same for every policy; only the *content* an event writes is the policy's
own prefix. So a policy that changes nothing faces exactly the no-op's events and costs
exactly what the no-op costs, and no policy is granted cache the log does not show.
"""

from __future__ import annotations

from replay.model.arrays import EVICT_TOLERANCE, KIND_CODE, Stream
from replay.model.cache import CacheConfig

# blocks that open a user turn (a tool_result continues the assistant's turn)
USER_KINDS = frozenset(KIND_CODE[k] for k in ("user_text", "attachment", "image"))
K_ASSISTANT_TEXT = KIND_CODE["assistant_text"]


def tolerance(read: float) -> float:
    """How far a recorded read may fall short of a prefix and still cover it (anchored sizes
    spread tokens proportionally, so block boundaries are approximate)."""
    return max(64.0, EVICT_TOLERANCE * read)


def turn_ends(st: Stream) -> list[tuple[int, int]]:
    """Per request: (u, t_end) when the request opens a user turn right after a response that
    ended in assistant text — blocks [u, pos) are user blocks, block u-1 is assistant text,
    all after the previous request — else (-1, 0). ``t_end`` is when that response ended
    (its last block's time; the previous request's time if the log has none)."""
    memo = st.__dict__.get("_turn_end_memo")
    if memo is not None:
        return memo
    out: list[tuple[int, int]] = [(-1, 0)] * st.n_requests
    bk, ts, r_pos, r_part = st.bkind, st.ts, st.r_pos, st.r_partition
    for k in range(1, st.n_requests):
        if r_part[k] != r_part[k - 1]:
            continue
        pos, pp = r_pos[k], r_pos[k - 1]
        u = pos
        while u > pp and bk[u - 1] in USER_KINDS:
            u -= 1
        if pp < u < pos and bk[u - 1] == K_ASSISTANT_TEXT:
            out[k] = (u, max(max(ts[pp:u]), st.r_ts[k - 1]))
    st.__dict__["_turn_end_memo"] = out
    return out


def base_prefix(st: Stream, k: int, u: int) -> float:
    """The log's own size of request k's prefix up to block u (overhead, blocks, residual)."""
    csum = base_csum(st)
    s0 = st.part_start.get(st.r_partition[k], 0)
    res = st.r_residual[k] if st.r_residual else 0.0
    return st.overhead.get(st.r_model[k], 0.0) + csum[u] - csum[s0] + res


def base_csum(st: Stream) -> list[float]:
    """Prefix sums of the stream's baseline (anchored) block sizes, memoized; read-only."""
    got = st.__dict__.get("_base_csum")
    if got is None:
        got = [0.0]
        acc = 0.0
        for x in st.tokens:
            acc += x
            got.append(acc)
        st.__dict__["_base_csum"] = got
    return got


def fork_writes(st: Stream, cfg: CacheConfig) -> list[tuple[int, int]]:
    """Per request, the turn-end write to replay before it: (u, t_end) or (-1, 0)."""
    if cfg.turn_end_write == "none" or cfg.breakpoints == "none":
        return [(-1, 0)] * st.n_requests
    ends = turn_ends(st)
    if cfg.observed_evictions != "log":
        return ends
    out = []
    for k, (u, t_end) in enumerate(ends):
        rr = st.r_read[k]
        if u >= 0 and st.r_has_usage[k] and rr + tolerance(rr) >= base_prefix(st, k, u):
            out.append((u, t_end))
        else:
            out.append((-1, 0))
    return out


def observed_write_position(st: Stream, k: int, pos: int) -> int:
    """The last block position request k's recorded read covers (the partition start if none)."""
    from bisect import bisect_right

    csum = base_csum(st)
    rr = st.r_read[k]
    s0 = st.part_start.get(st.r_partition[k], 0)
    res = st.r_residual[k] if st.r_residual else 0.0
    lim = rr + tolerance(rr) - st.overhead.get(st.r_model[k], 0.0) - res + csum[s0]
    return bisect_right(csum, lim, s0, pos + 1) - 1
