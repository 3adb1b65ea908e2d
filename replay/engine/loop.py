"""The replay loop: walk each stream's blocks and requests, apply a policy, price each request.

For every stream: blocks are appended in order (insert-time policies decide their size as
they arrive), then at each request retroactive policies may shrink earlier blocks; the
request's input is the overhead plus every block of the current compaction partition
before it; the cache model splits it into read / written / uncached; the price table turns
that and the recorded output into dollars. Output tokens are the log's: the counterfactual
assumes the agent acts the same.

The walk over the blocks is a `Walker` (`replay.engine.walkers`: block by block, or by
prefix sums for policies that never rewrite history); the per-request cache lookup and
pricing is the step of `replay.engine.pricing`.
"""

from __future__ import annotations

from replay.engine.memo import price_memoized
from replay.engine.options import REQUEST_FIGURES, SESSION_FIGURES, ReplayOptions, SessionResult
from replay.engine.pricing import price_requests
from replay.engine.side import price_side_requests
from replay.engine.tables import price_keys
from replay.engine.walkers import Walker, walk_blocks, walk_fast
from replay.model.arrays import Dataset, Session, Stream, Vocab
from replay.policies.base import Context, Policy

__all__ = ["REQUEST_FIGURES", "SESSION_FIGURES", "FAST_PATH", "MEMO", "ReplayOptions", "SessionResult",
           "observed_writes", "replay_dataset", "replay_session", "replay_stream", "walker_for"]

# The prefix-sum walker for policies that never rewrite history; tests switch it off to check
# that both walkers give the same figures.
FAST_PATH = True
# With it, streams priced once per distinct change (`replay.engine.memo`); tests switch it off.
MEMO = True


def walker_for(policy: Policy) -> Walker:
    """`walk_fast` for a policy that never rewrites history (unless FAST_PATH is off), else `walk_blocks`."""
    return walk_fast if FAST_PATH and not policy.retroactive() else walk_blocks


def replay_stream(st: Stream, vocab: Vocab, policy: Policy, opts: ReplayOptions, figs: dict[str, float],
                  detail: dict[str, list] | None) -> None:
    """Replay one stream through the policy and add its figures (and detail rows) to figs (detail)."""
    obs = observed_writes(st, vocab, opts) if opts.cache.observed_evictions == "log" else None
    ctx = Context(st, vocab, figs)
    policy.start_stream(ctx)
    walker = walker_for(policy)
    if walker is walk_fast and MEMO and opts.whatif is None:
        price_memoized(st, vocab, policy, opts, ctx, detail, obs)
    else:
        price_requests(st, vocab, policy, opts, ctx, detail, walker(st, ctx, policy), observed_writes=obs)
    if ctx.side:
        price_side_requests(ctx.side, vocab, opts, figs)


def observed_writes(st: Stream, vocab: Vocab, opts: ReplayOptions) -> list[int]:
    """Per request, the observed write the calibrated replay adds (block position, -1: none),
    decided once per stream and cache setting by the no-op replay, so that every policy
    faces the same events (`replay.engine.calibration`)."""
    key = (opts.cache, price_keys(vocab, opts.prices)[1])
    memo = st.__dict__.setdefault("_observed_write_memo", {})
    got = memo.get(key)
    if got is None:
        noop = Policy()
        ctx = Context(st, vocab, {f: 0.0 for f in SESSION_FIGURES})
        noop.start_stream(ctx)
        got = []
        price_requests(st, vocab, noop, opts, ctx, None, walk_blocks(st, ctx, noop), record=got)
        memo[key] = got
    return got


def replay_session(session: Session, vocab: Vocab, policy: Policy, opts: ReplayOptions) -> SessionResult:
    figs = dict.fromkeys(SESSION_FIGURES, 0.0)
    detail = {c: [] for c in ("stream_id", "req_idx", *REQUEST_FIGURES)} if opts.detail else None
    for st in session.streams:
        replay_stream(st, vocab, policy, opts, figs, detail)
    return SessionResult(session.session_key, figs, detail)


def replay_dataset(ds: Dataset, policy: Policy, opts: ReplayOptions, on_session=None) -> list[SessionResult]:
    out = []
    for s in ds.sessions:
        out.append(replay_session(s, ds.vocab, policy, opts))
        if on_session:
            on_session(s)
    return out
