"""The offline-optimal bounds (issues 13 and 24): what a lossless policy that knew the future could save.

Two bounds, each a `Policy` subclass priced by `replay.engine.replay_session` under the same
cache model as every policy, and stored as runs (``bound_insert``, ``bound_retro``) so that
`compare` and the report can use them. Neither is in the policy REGISTRY: they are not
policies an agent could run. A bound bounds its class: every policy of the class, at any
setting, on any session, costs at least the bound (tests/test_bound_class.py; the classes
and the one stated slack: docs/bound.md). Both rest on the engine's invariant that shrinking
blocks as they arrive never costs more (tests/test_shrink_invariant.py).

Insert-time bound (``bound_insert``)
    Class: insert-time lossless policies. A block is removed (``hint_tokens`` 0; 8 = devboy's
    terse hint, the old bound) when it arrives if, in the same compaction partition of the
    same stream (the earlier copy is still in context), it is
    * a byte-identical repeat: its bytes (keyed content hash ``Stream.chash``) equal a block
      of any kind already appended, or
    * a covered re-read: a non-error read result (tool kind ``read``) of a path
      (``Stream.resource``) whose line span lies inside the span of an earlier non-error read
      result of the same path, with no mutating tool result (tool kind ``mutate``) of that
      path in between, and no read of the path in between with the same (line_start,
      line_end) as an indexed read but another content hash (the file changed unseen: the
      path's index is dropped). Spans are read_range_dedup's (`replay.policies.
      read_range_dedup.span`): an open-ended read covers 2000 lines.
    Members: devboy_lru and jp_resource_dedup (index reset at compactions), read_range_dedup
    at its safe settings. Not cupel_dedup, at any setting: with score=size it keeps the earliest
    copy, but removes each later one at the first logged request that sends it, a request late
    where Claude Code's unlogged turn-end request already cached it (kinds=assistant_text: 9
    busts on entire-cli, costlier than the no-op), so it is retroactive (docs/bound.md).

Lossless bound (``bound_retro``)
    Class: every lossless policy, retroactive or insert-time or both: the insert-time class,
    and, at any request, the removal of a block with a later byte-identical copy or of a read
    that a later non-error read of the same path covers (`replay.policies.common.covers`)
    with no mutating tool result of the path in between (the candidates of
    `replay.policies.lossless.removals`, shared with cache_aware_trim). Members: cupel_dedup
    at every setting (score=size included), cache_aware_trim without ``lossy``, pipelines of lossless steps.
    Bound (a relaxation): the insert-time bound's removals, and every such superseded read
    removed as it arrives (before the read that supersedes it: no policy can). For a pair of
    identical copies the earlier is kept; from the later copy on the same bytes are in
    context as under any policy that keeps one. Slack: where the removed later copy lay in a
    request's uncached tail, the bound writes bytes a policy keeping that copy sends uncached
    (at most the write premium on the log's uncached tokens).

What retroactive removal achieves (``retro_flush``, printed by ``ctxreplay bound``)
    The best *flush schedule* a per-stream dynamic program finds: a schedule is a set F of
    request indices; before every request in F, every removal that has become available and
    is not applied yet is applied. Node j stands for "the last flush so far is at j"; its
    schedule S_j is its best predecessor's schedule plus j, replayed once through the engine
    (per-request detail), which prices every request before any later flush k exactly. The
    answer is the cheapest of the nodes', the empty schedule's and the eager schedule's
    totals. Exact up to one approximation (the cost after a flush at k taken as independent
    of the schedule before k), so it is achievable but not a bound; tests/test_bound.py
    checks it against brute force on small sessions.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from replay.engine import ReplayOptions, SessionResult, replay_session
from replay.model.arrays import K_TOOL_RESULT, TOOL_KIND_CODE, Dataset, Session, Stream, Vocab
from replay.policies.base import Context, Policy
from replay.policies.common import count_hint, covers, verified_cover
from replay.policies.lossless import removals, removals_memo  # noqa: F401  (removals: re-exported)
from replay.policies.read_range_dedup import span

HINT_O200K = 8.0  # devboy's terse hint ("> [ref: tc_42]"), the smallest hint of the sources
SOURCE = "offline-optimal bound (issue 13 item 2; docs/bound.md)"
LOSSLESS_CLASS = ("every lossless removal, insert-time or retroactive, at any request, of any subset, to any size: "
                  "relaxed to removal at arrival (no busts, the later copy's bytes or covering lines stand in)")
RETRO_CLASS = ("flush schedules: all pending removals applied at once before each request of a set F; "
               "per-stream DP over the requests with a pending removal, each candidate schedule priced by the engine")


# --- insert-time bound -------------------------------------------------------------------
_READ = TOOL_KIND_CODE["read"]
_MUTATE = TOOL_KIND_CODE["mutate"]


class InsertBound(Policy):
    """Every byte-identical repeat of a block still in context, and every read covered by an
    earlier read of the same path still in context with no write of it in between, is removed
    as it arrives (insert-time bound)."""

    name = "bound_insert"
    source = SOURCE

    @dataclass(frozen=True)
    class Params:
        # What a redundant block becomes, in o200k tokens: 0 = removed (the bound: no policy of
        # the class can leave less); 8 = devboy's terse hint, the smallest hint of the sources.
        hint_tokens: float = 0.0
        # Capacity of the hash cache: 0 = unbounded (the bound); recorded for the run listing.
        capacity: int = 0
        # Lines an open-ended read is taken to have returned (read_range_dedup's default).
        open_read_lines: int = 2000

    def start_stream(self, ctx: Context) -> None:
        ctx.state["seen"] = {}
        ctx.state["reads"] = {}  # path -> [(first, last, line_start, line_end, chash, pos)] in context
        ctx.state["all_reads"] = {}  # path -> every non-error read of the partition, writes or not

    def on_compaction(self, ctx: Context, pos: int) -> None:
        ctx.state["seen"] = {}
        ctx.state["reads"] = {}
        ctx.state["all_reads"] = {}

    def redundant(self, ctx: Context, i: int) -> int:
        """The earlier block of the partition that makes block i redundant (its bytes, or the
        lines it covers), or -1; updates the index with block i."""
        st = ctx.stream
        s = ctx.state
        orig = -1
        h = st.chash[i]
        if h >= 0:
            seen = s["seen"]
            orig = seen.get(h, -1)
            if orig < 0:
                seen[h] = i
        if st.bkind[i] != K_TOOL_RESULT:
            return orig
        res = st.resource[i]
        if res >= 0:
            tk = st.tool_kind[i]
            reads = s["reads"]
            if tk == _MUTATE:
                reads.pop(res, None)
            elif tk == _READ and not st.is_error[i]:
                ls, le = st.line_start[i], st.line_end[i]
                first, last = span(ls, le, self.params.open_read_lines)
                entries = reads.setdefault(res, [])
                if any(e[2] == ls and e[3] == le and e[4] != h for e in entries):
                    entries.clear()  # same range, other content: the file changed unseen
                elif orig < 0:
                    for e in reversed(entries):
                        if e[0] <= first and e[1] >= last:
                            orig = e[5]
                            break
                entries.append((first, last, ls, le, h, i))
                # read_range_dedup's verified rule: an earlier read whose lines prove this one,
                # whatever was written in between
                earlier = s["all_reads"].setdefault(res, [])
                if orig < 0 and i not in st.previews:
                    for j in reversed(earlier):
                        if verified_cover(st, i, j, self.params.open_read_lines):
                            orig = j
                            break
                earlier.append(i)
        return orig

    def on_append(self, ctx: Context, i: int, size: float) -> float:
        orig = self.redundant(ctx, i)
        if orig < 0:
            return size
        hint = ctx.units(self.params.hint_tokens)
        if hint >= size:
            return size
        if orig != i:  # a hint names an earlier block (the lossless bound's own stand-ins do not)
            count_hint(ctx, i, orig, False)
        return hint


class LosslessBound(InsertBound):
    """Everything a lossless policy could ever remove, removed as it arrives: the insert-time
    bound's repeats and covered re-reads, and every read a later read of the same path covers
    with no write in between (the lossless bound)."""

    name = "bound_retro"

    @dataclass(frozen=True)
    class Params(InsertBound.Params):
        # Recorded with the run: what the bound relaxes.
        relaxation: str = LOSSLESS_CLASS

    def start_stream(self, ctx: Context) -> None:
        super().start_stream(ctx)
        ctx.state["superseded"] = superseded_reads(ctx.stream)

    def redundant(self, ctx: Context, i: int) -> int:
        """As the insert-time bound's, and a read a later read supersedes is its own stand-in (i)."""
        orig = super().redundant(ctx, i)
        return i if orig < 0 and i in ctx.state["superseded"] else orig


def superseded_reads(st: Stream) -> frozenset[int]:
    """Read results of a stream that a later non-error read of the same path in the same
    partition covers (`replay.policies.common.covers`), with no mutating tool result of the
    path in between: the superseded half of `replay.policies.lossless.removals` (its other
    half, earlier copies of a later repeat, the insert-time rule covers from the other side).
    Memoized on the stream."""
    got = st.__dict__.get("_superseded_reads")
    if got is not None:
        return got
    out: set[int] = set()
    reads: dict[tuple[int, int], list[int]] = {}
    every: dict[tuple[int, int], list[int]] = {}  # every non-error read, writes or not
    bkind, part, tk, res = st.bkind, st.partition, st.tool_kind, st.resource
    for j in range(st.n_blocks):
        r = res[j]
        if r < 0:
            continue
        key = (part[j], r)
        if bkind[j] == K_TOOL_RESULT and tk[j] == _READ and st.is_error[j]:
            continue
        if tk[j] == _MUTATE:
            reads.pop(key, None)
            continue
        if bkind[j] == K_TOOL_RESULT and tk[j] == _READ and not st.is_error[j]:
            ls, le = st.line_start[j], st.line_end[j]
            keep = []
            for i in reads.get(key, ()):
                if covers(ls, le, st.line_start[i], st.line_end[i]):
                    out.add(i)
                else:
                    keep.append(i)
            keep.append(j)
            reads[key] = keep
            # and every earlier read whose lines the later one shows identical (verified),
            # whatever was written in between
            if j not in st.previews:
                for i in every.get(key, ()):
                    if i not in out and verified_cover(st, i, j, None):
                        out.add(i)
            every.setdefault(key, []).append(j)
    got = st.__dict__["_superseded_reads"] = frozenset(out)
    return got


# --- retroactive bound -------------------------------------------------------------------
# The candidates (`removals`) live in replay/policies/lossless.py, shared with cache_aware_trim.


class RetroBound(Policy):
    """Lossless removals (exact repeats, covering re-reads) applied at a chosen set of requests
    (the best flush schedule: achievable, so a lower figure than the lossless bound)."""

    name = "retro_flush"
    source = SOURCE

    @dataclass(frozen=True)
    class Params:
        # The class of schedules optimized over (recorded with the run).
        schedule: str = RETRO_CLASS
        # Candidate flush points: "pending" = every request with a removal pending.
        candidates: str = "pending"

    def __init__(self, params: Any = None, flushes: dict[tuple[str, int], frozenset[int] | None] | None = None):
        super().__init__(params)
        # (session_key, stream_id) -> requests before which pending removals are applied;
        # None = every request (the eager schedule); a stream not listed: the empty schedule
        self.flushes = flushes if flushes is not None else {}

    def start_stream(self, ctx: Context) -> None:
        st = ctx.stream
        s = ctx.state
        s["avail"] = removals_memo(st)
        s["pending"] = []
        s["flush"] = self.flushes.get((st.session_key, st.stream_id), frozenset())

    def on_compaction(self, ctx: Context, pos: int) -> None:
        ctx.state["pending"] = []

    def before_request(self, ctx: Context, k: int) -> None:
        s = ctx.state
        pending = s["pending"]
        pending.extend(s["avail"][k])
        if not pending:
            return
        f = s["flush"]
        if f is None or k in f:
            for i in pending:
                ctx.set_size(i, 0.0)
            pending.clear()


def _stream_costs(st: Stream, agent: str, vocab: Vocab, flush: frozenset[int] | None,
                  opts: ReplayOptions) -> list[float]:
    """Cumulative billed cost before each request (and the total, last) of one stream under a schedule."""
    pol = RetroBound(flushes={(st.session_key, st.stream_id): flush})
    res = replay_session(Session(st.session_key, agent, [st]), vocab, pol, opts)
    cum = [0.0]
    for c in res.detail["cost"]:
        cum.append(cum[-1] + c)
    return cum


def optimal_schedule(st: Stream, agent: str, vocab: Vocab, opts: ReplayOptions) -> tuple[frozenset[int] | None, float]:
    """The DP's schedule for one stream (see the module docstring) and its billed cost."""
    dopts = replace(opts, detail=True)
    avail = removals(st)
    cands = []
    pending = 0
    for k in range(st.n_requests):
        if k and st.r_partition[k] != st.r_partition[k - 1]:
            pending = 0
        pending += len(avail[k])
        if pending:
            cands.append(k)
    empty = _stream_costs(st, agent, vocab, frozenset(), dopts)
    if not cands:
        return frozenset(), empty[-1]
    nodes: list[tuple[frozenset[int], list[float]]] = [(frozenset(), empty)]
    for k in cands:
        parent = min(nodes, key=lambda nd: nd[1][k])[0]
        sched = parent | {k}
        nodes.append((sched, _stream_costs(st, agent, vocab, sched, dopts)))
    best_s, best_c = min(((s, c[-1]) for s, c in nodes), key=lambda x: x[1])
    eager = _stream_costs(st, agent, vocab, None, dopts)[-1]
    if eager < best_c:
        return None, eager
    return best_s, best_c


def brute_force(st: Stream, agent: str, vocab: Vocab, opts: ReplayOptions) -> float:
    """The least billed cost over every flush schedule of a stream (2^requests replays: tests only)."""
    dopts = replace(opts, detail=True)
    n = st.n_requests
    return min(_stream_costs(st, agent, vocab, frozenset(k for k in range(n) if m >> k & 1), dopts)[-1]
               for m in range(1 << n))


def retro_policy(ds: Dataset, opts: ReplayOptions) -> RetroBound:
    """A RetroBound holding the DP's schedule for every stream of the dataset."""
    flushes: dict[tuple[str, int], frozenset[int] | None] = {}
    for s in ds.sessions:
        for st in s.streams:
            flushes[(st.session_key, st.stream_id)] = optimal_schedule(st, s.agent, ds.vocab, opts)[0]
    return RetroBound(flushes=flushes)


# --- runs ----------------------------------------------------------------------------------
def _totals(results: list[SessionResult]) -> dict[str, float]:
    return {k: sum(r.figures[k] for r in results) for k in ("cost", "context_tokens", "tokens_delivered", "busts")}


def _saving(base: dict[str, float], run: dict[str, float]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in ("cost", "context_tokens", "tokens_delivered"):
        b, r = base[f], run[f]
        out[f] = {"baseline": b, "run": r, "saved": b - r, "saved_pct": (b - r) / b * 100 if b else None}
    out["busts"] = run["busts"]
    return out


def compute_bounds(con, ds: Dataset, opts: ReplayOptions, *, store_runs: bool = True,
                   compare_with: tuple[str, ...] = (), flush_schedule: bool = True) -> dict[str, Any]:
    """Both bounds (and the noop baseline, and the named registered policies at their
    defaults) on one cache-model variant; stored as runs when ``store_runs``."""
    from replay.experiments import runs
    from replay.policies import Noop, build

    def run(policy: Policy) -> tuple[str | None, list[SessionResult]]:
        if store_runs:
            return runs.run_policy(con, ds, policy, opts)
        return None, [replay_session(s, ds.vocab, policy, opts) for s in ds.sessions]

    t0 = time.perf_counter()
    base_id, base = run(Noop())
    base_t = _totals(base)
    out: dict[str, Any] = {"baseline": {"run_id": base_id, **base_t}, "bounds": {}, "policies": {}}
    t = time.perf_counter()
    ins_id, ins = run(InsertBound())
    out["bounds"]["bound_insert"] = {"run_id": ins_id, "seconds": time.perf_counter() - t,
                                     **_saving(base_t, _totals(ins))}
    t = time.perf_counter()
    ret_id, ret = run(LosslessBound())
    out["bounds"]["bound_retro"] = {"run_id": ret_id, "seconds": time.perf_counter() - t,
                                    "relaxation": LOSSLESS_CLASS, **_saving(base_t, _totals(ret))}
    if flush_schedule:
        # what retroactive lossless removal achieves on its own: the best flush schedule found
        # (achievable, so at most the bound; not stored: no agent could run it either)
        t = time.perf_counter()
        pol = retro_policy(ds, opts)
        res = [replay_session(s, ds.vocab, pol, opts) for s in ds.sessions]
        out["schedules"] = {"retro_flush": {
            "seconds": time.perf_counter() - t, "schedule_class": RETRO_CLASS,
            "flushes": sum(len(f) for f in pol.flushes.values() if f is not None),
            "eager_streams": sum(1 for f in pol.flushes.values() if f is None), **_saving(base_t, _totals(res))}}
    for name in compare_with:
        res = [replay_session(s, ds.vocab, build(name), opts) for s in ds.sessions]
        out["policies"][name] = _saving(base_t, _totals(res))
    out["seconds"] = time.perf_counter() - t0
    return out
