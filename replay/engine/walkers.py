"""Block walkers: the two ways the engine walks a stream's blocks up to each request.

Both have the `Walker` signature: they append the stream's blocks in order (insert-time
policies decide their size as they arrive), call the policy's ``on_compaction`` where a
compaction partition starts, yield a `Request` (the size of the context before it) for
each request, and at the end add the tokens delivered (every block appended, requests or
not) to the figures. The consumer prices request k before the walk goes on past it.

* `walk_blocks` visits every block and runs retroactive policies before each request.
* `walk_fast` is for policies that never rewrite history: it visits only the blocks the
  policy looks at (its ``append_kinds``) and partition starts, and sizes the rest of the
  context from prefix sums of the baseline sizes, precomputed once per stream and reused by
  every configuration of a sweep. It gives the same figures as `walk_blocks`.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from typing import Protocol

from replay.engine.calibration import base_csum
from replay.engine.options import Request
from replay.model.arrays import Stream
from replay.policies.base import Context, Policy


class Walker(Protocol):
    def __call__(self, st: Stream, ctx: Context, policy: Policy) -> Iterator[Request]: ...


def walk_blocks(st: Stream, ctx: Context, policy: Policy) -> Iterator[Request]:
    """Block by block; retroactive policies may shrink earlier blocks before each request."""
    insert, retro, kinds = policy.insert_time(), policy.retroactive(), policy.append_kinds
    bkind, partition, eff, figs = st.bkind, st.partition, ctx.eff, ctx.metrics
    n_blocks = st.n_blocks
    r_pos, r_part = st.r_pos, st.r_partition
    j = 0
    cur_part = partition[0] if n_blocks else 0
    running = 0.0
    delivered = 0.0
    for k in range(st.n_requests):
        pos = r_pos[k]
        while j < pos and j < n_blocks:
            if partition[j] != cur_part:
                cur_part = partition[j]
                running = 0.0
                policy.on_compaction(ctx, j)
            size = eff[j]
            if insert and (kinds is None or bkind[j] in kinds):
                new = policy.on_append(ctx, j, size)
                if new != size:
                    eff[j] = new
                    figs["blocks_changed"] += 1
                    figs["tokens_saved"] += size - new
                    size = new
            running += size
            delivered += size
            j += 1
        if r_part[k] != cur_part:
            # a compaction boundary right before the request, with no block after it yet
            cur_part = r_part[k]
            running = 0.0
            policy.on_compaction(ctx, pos)
        if retro:
            ctx.k = k
            ctx.running = running
            ctx.changed_from = None
            policy.before_request(ctx, k)
            yield k, ctx.running, ctx.changed_from, running - ctx.running
            running = ctx.running
        else:
            yield k, running, None, 0.0
    # blocks after the last request are delivered too (they were appended; no request saw them).
    # Kept as it was: unlike walk_fast, a change on_append makes here is not counted in
    # blocks_changed/tokens_saved, and a partition starting here is not announced.
    while j < n_blocks:
        size = eff[j]
        if insert and (kinds is None or bkind[j] in kinds):
            size = policy.on_append(ctx, j, size)
        delivered += size
        j += 1
    figs["tokens_delivered"] += delivered


def walk_fast(st: Stream, ctx: Context, policy: Policy, changes: list | None = None) -> Iterator[Request]:
    """Prefix sums for a policy that never rewrites history; only its events are visited.
    ``changes``: the block and new size of each block the policy changed are appended there
    (flat: block, size, block, size, ...), in order."""
    insert = policy.insert_time()
    csum, events, epos = fast_index(st, policy.append_kinds if insert else frozenset(),
                                    policy.append_filter(ctx) if insert else None)
    partition, eff, figs = st.partition, ctx.eff, ctx.metrics
    n_blocks, n_events, n_req = st.n_blocks, len(events), st.n_requests
    r_pos, r_part = st.r_pos, st.r_partition
    j = e_i = pstart = 0
    cur_part = partition[0] if n_blocks else 0
    delta = 0.0        # size change of the current partition's blocks so far
    total_delta = 0.0  # size change of every block so far
    # one pass more than there are requests: the last appends the blocks after the last request
    for k in range(n_req + 1):
        pos = r_pos[k] if k < n_req else n_blocks
        hi = pos if pos < n_blocks else n_blocks
        while e_i < n_events and epos[e_i] < hi:
            ev = events[e_i]
            e_i += 1
            if ev < 0:  # a partition starts at block -ev - 1
                b = -ev - 1
                cur_part = partition[b]
                pstart = b
                delta = 0.0
                policy.on_compaction(ctx, b)
                continue
            size = eff[ev]
            new = policy.on_append(ctx, ev, size)
            if new != size:
                eff[ev] = new
                figs["blocks_changed"] += 1
                figs["tokens_saved"] += size - new
                delta += new - size
                total_delta += new - size
                if changes is not None:
                    changes += (ev, new)
        if k == n_req:
            break
        if hi > j:
            j = hi
        running = csum[j] - csum[pstart] + delta
        if r_part[k] != cur_part:
            # a compaction boundary right before the request, with no block after it yet
            cur_part = r_part[k]
            running = 0.0
            pstart = j
            delta = 0.0
            policy.on_compaction(ctx, pos)
        yield k, running, None, 0.0
    figs["tokens_delivered"] += csum[n_blocks] + total_delta


def walk_fast_events(st: Stream, ctx: Context, policy: Policy, changes: list) -> None:
    """`walk_fast` without the requests: the policy sees the same calls in the same order (and
    the figures grow the same way), and ``changes`` gets the blocks it changed; `fast_requests`
    gives the requests `walk_fast` would have yielded, from those changes alone."""
    insert = policy.insert_time()
    csum, events, epos = fast_index(st, policy.append_kinds if insert else frozenset(),
                                    policy.append_filter(ctx) if insert else None)
    eff, figs = ctx.eff, ctx.metrics
    on_append = policy.on_append
    n_events = len(events)
    total_delta = 0.0
    # the compactions walk_fast announces at a request, each after the events before it (most
    # streams have none: their events are one run), then the events after the last
    e_i = 0
    for e_hi, pos in (*((bisect_left(epos, hi), pos) for hi, pos in request_compactions(st)), (n_events, -1)):
        for ev in (events if e_i == 0 and e_hi == n_events else events[e_i:e_hi]):
            if ev < 0:
                policy.on_compaction(ctx, -ev - 1)
                continue
            size = eff[ev]
            new = on_append(ctx, ev, size)
            if new != size:
                eff[ev] = new
                figs["blocks_changed"] += 1
                figs["tokens_saved"] += size - new
                total_delta += new - size
                changes += (ev, new)
        e_i = e_hi
        if pos >= 0:
            policy.on_compaction(ctx, pos)
    figs["tokens_delivered"] += csum[st.n_blocks] + total_delta


def request_compactions(st: Stream) -> list[tuple[int, int]]:
    """(events before, position) of each compaction `walk_fast` announces at a request (a
    partition that starts with no block yet), in order, memoized: the same for every policy."""
    got = st.__dict__.get("_request_compactions")
    if got is None:
        got = [(hi, pos) for k, hi, pos in _request_starts(st)]
        st.__dict__["_request_compactions"] = got
    return got


def _request_starts(st: Stream) -> list[tuple[int, int, int]]:
    """(request, events-before bound, position) of each compaction announced at a request."""
    _, events, epos = fast_index(st, frozenset())  # partition starts only
    partition, n_blocks, r_part = st.partition, st.n_blocks, st.r_partition
    cur_part = partition[0] if n_blocks else 0
    e_i, out = 0, []
    for k, pos in enumerate(st.r_pos):
        hi = pos if pos < n_blocks else n_blocks
        while e_i < len(events) and epos[e_i] < hi:
            cur_part = partition[-events[e_i] - 1]
            e_i += 1
        if r_part[k] != cur_part:
            cur_part = r_part[k]
            out.append((k, hi, pos))
    return out


def fast_requests(st: Stream, changes: list) -> list[Request]:
    """The requests `walk_fast` yields for a policy that changed ``changes`` (flat block, size
    pairs, in order): the same sums in the same order, so the same floats. Read-only: those of a
    policy that changed nothing are kept on the stream (most streams of most configurations)."""
    if not changes:
        got = st.__dict__.get("_unchanged_requests")
        if got is None:
            got = st.__dict__["_unchanged_requests"] = _fast_requests(st, changes)
        return got
    return _fast_requests(st, changes)


def _fast_requests(st: Stream, changes: list) -> list[Request]:
    csum, pevents, pepos = fast_index(st, frozenset())
    tokens, partition, n_blocks = st.tokens, st.partition, st.n_blocks
    r_pos, r_part = st.r_pos, st.r_partition
    starts = st.__dict__.get("_request_start_set")
    if starts is None:
        starts = st.__dict__["_request_start_set"] = {k for k, _, _ in _request_starts(st)}
    n_ch, n_p = len(changes), len(pevents)
    c_i = p_i = j = pstart = 0
    delta = 0.0
    out = []
    for k in range(st.n_requests):
        pos = r_pos[k]
        hi = pos if pos < n_blocks else n_blocks
        # partition starts and changes before the request, in position order (a start first)
        while True:
            pb = pepos[p_i] if p_i < n_p else n_blocks
            cb = changes[c_i] if c_i < n_ch else n_blocks
            if pb < hi and pb <= cb:
                pstart = pb
                delta = 0.0
                p_i += 1
            elif cb < hi:
                delta += changes[c_i + 1] - tokens[cb]
                c_i += 2
            else:
                break
        if hi > j:
            j = hi
        running = csum[j] - csum[pstart] + delta
        if k in starts:
            running = 0.0
            pstart = j
            delta = 0.0
        out.append((k, running, None, 0.0))
    return out


def fast_index(st: Stream, kinds: frozenset[int] | None,
               only: tuple | None = None) -> tuple[list[float], list[int], list[int]]:
    """(prefix sums of the baseline block sizes, events, their positions) of a stream, memoized.

    Events are block positions the policy wants to see (its append_kinds; every block when
    it has none; of those, only where ``only``'s predicate holds, ``Policy.append_filter``)
    and partition starts encoded as -(position + 1), in position order.
    """
    memo = st.__dict__.setdefault("_fast_memo", {})
    key = kinds if only is None else (kinds, only[0])
    got = memo.get(key)
    if got is None:
        csum = base_csum(st)
        part = st.partition
        keep = None if only is None else only[1]
        events, epos = [], []
        for i in range(st.n_blocks):
            if i > 0 and part[i] != part[i - 1]:
                events.append(-(i + 1))
                epos.append(i)
            if (kinds is None or st.bkind[i] in kinds) and (keep is None or keep(i)):
                events.append(i)
                epos.append(i)
        got = memo[key] = (csum, events, epos)
    return got
