"""The lossless-removal candidates shared by ``bound_retro`` (replay/experiments/bound.py) and
``cache_aware_trim``: which tool results become redundant, and from which request on.

Removable (size -> 0) is a tool result i of a stream that is, later in the same compaction
partition,
* exactly repeated: a block j > i with the same ``chash`` (any block kind), or
* superseded: a later non-error read result j (tool kind ``read``) of the same ``resource``
  whose line range covers i's (`replay.policies.common.covers`: a whole-file read covers
  every range), i itself a non-error read result, with no block of a mutating tool (tool kind
  ``mutate``: Edit/Write/MultiEdit/NotebookEdit) on that resource between i and j (a shell
  command that changes the file is invisible in the trace).
i becomes removable at the first request after j. Removing it loses nothing: its bytes are
still in context (j, or a later copy of j).

Causal: whether i is removable at request k depends only on the blocks before request k
(the earliest j that makes i redundant is fixed by the blocks up to j), so a policy may use
``removals(st)[k]`` at request k without knowing anything later (tests/test_policy_cache_aware_trim.py
checks it on truncated sessions). Computed once per stream and memoized on it.
"""

from __future__ import annotations

from replay.model.arrays import K_TOOL_RESULT, TOOL_KIND_CODE, Stream
from replay.policies.common import covers

_READ = TOOL_KIND_CODE["read"]
_MUTATE = TOOL_KIND_CODE["mutate"]


def removals(st: Stream) -> list[list[int]]:
    """Per request k, the tool-result blocks that become losslessly removable at k (the first
    request after the later copy or superseding read that makes them redundant)."""
    n = st.n_blocks
    ready = [-1] * n  # block -> the position of the earliest block that makes it redundant
    last_hash: dict[tuple[int, int], int] = {}
    reads: dict[tuple[int, int], list[int]] = {}  # (partition, resource) -> read results not yet superseded
    bkind, chash, part, tk, res = st.bkind, st.chash, st.partition, st.tool_kind, st.resource
    for j in range(n):
        p = part[j]
        h = chash[j]
        if h >= 0:
            key = (p, h)
            i = last_hash.get(key)
            if i is not None and ready[i] < 0:
                ready[i] = j
            if bkind[j] == K_TOOL_RESULT:
                last_hash[key] = j
        r = res[j]
        if r < 0:
            continue
        if tk[j] == _MUTATE:
            reads.pop((p, r), None)  # content may change: no later read supersedes these
            continue
        if bkind[j] == K_TOOL_RESULT and tk[j] == _READ and not st.is_error[j]:
            vis = reads.setdefault((p, r), [])
            ls, le = st.line_start[j], st.line_end[j]
            keep = []
            for i in vis:
                if covers(ls, le, st.line_start[i], st.line_end[i]):
                    if ready[i] < 0 or ready[i] > j:
                        ready[i] = j
                else:
                    keep.append(i)
            keep.append(j)
            reads[(p, r)] = keep
    out: list[list[int]] = [[] for _ in range(st.n_requests)]
    r_pos, r_part = st.r_pos, st.r_partition
    order = sorted((j, i) for i, j in enumerate(ready) if j >= 0 and bkind[i] == K_TOOL_RESULT)
    k = 0
    for j, i in order:
        while k < st.n_requests and (r_pos[k] <= j or r_part[k] < part[i]):
            k += 1
        if k < st.n_requests and r_part[k] == part[i]:
            out[k].append(i)
    return out


def removals_memo(st: Stream) -> list[list[int]]:
    """``removals(st)``, computed once per stream (memoized on it: sweeps and the bound's DP ask often)."""
    memo = st.__dict__.get("_bound_removals")
    if memo is None:
        memo = st.__dict__["_bound_removals"] = removals(st)
    return memo
