"""Priced streams remembered by what the policy changed: a sweep prices each distinct one once.

For a policy that never rewrites history, the per-request step (cache lookup, pricing, the
client rules) depends on the policy only through the stream's block sizes (which blocks it
changed, to what) and its overheads: the walk hands it nothing else. Most configurations of
a sweep change a stream in one of a few ways (a hint for the same repeats: on the 1,500-session
synthetic corpus the 100 devboy_lru configurations give 49,049 distinct changes over 1,966
streams, a quarter of the 196,600, and the no-op baseline's "nothing changed" is among them),
so the step's figures are kept on the stream, keyed by those changes and the settings that
price them, and a configuration that changes the stream in a way already priced adds the
same figures (the same floats, added in the same order) instead of pricing it again.

The walk still runs per configuration (the policy's own figures, hints and risks, are its
own), over the policy's events only (`walkers.walk_fast_events`), to the end of the stream
before pricing, which an insert-time policy allows: a block's size is final once it is
appended, and the step looks at no block past the request it prices. Only a stream that must
be priced has its requests' context sizes computed (`walkers.fast_requests`, from the
changes).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable

from replay.engine.options import ReplayOptions
from replay.engine.pricing import add_figures, price_requests
from replay.engine.tables import _overheads, price_keys
from replay.engine.walkers import fast_requests, walk_fast_events
from replay.model.arrays import Session, Stream, Vocab
from replay.policies.base import Context, Policy

# distinct changes kept per stream: a bound on memory (past it, a new change is priced and
# not kept); a parallel sweep forgets a chunk's streams once every point has replayed them
MAX_ENTRIES = 256


def price_memoized(st: Stream, vocab: Vocab, policy: Policy, opts: ReplayOptions, ctx: Context,
                   detail: dict[str, list] | None, observed_writes: list[int] | None) -> None:
    """Walk the stream with `walk_fast`, then add the step's figures (and detail rows) for the
    sizes the policy left, priced here unless the same sizes were priced before."""
    metrics = ctx.metrics
    # asked before the walk, where `price_requests` asks it
    overhead_of = _overheads(st, policy, ctx, len(vocab.models))
    prior = bool(metrics["blocks_changed"])  # an earlier stream of the session changed a block
    changes: list = []
    walk_fast_events(st, ctx, policy, changes)
    # the step asks whether a block of the session changed before each request (an uncached
    # tail is walked only then): from the first request after the first change, or throughout
    changed_k = 0 if prior else bisect_right(st.r_pos, changes[0]) if changes else st.n_requests
    key = (opts.cache, price_keys(vocab, opts.prices)[0], detail is not None, tuple(overhead_of), changed_k,
           tuple(changes))
    memo = st.__dict__.setdefault("_price_memo", {})
    got = memo.get(key)
    if got is None:
        rows = {c: [] for c in detail} if detail is not None else None
        figures = price_requests(st, vocab, policy, opts, ctx, rows, fast_requests(st, changes),
                                 observed_writes=observed_writes,
                                 overhead_of=overhead_of, changed_k=changed_k, add=False)
        got = (figures, rows)
        if len(memo) < MAX_ENTRIES:
            memo[key] = got
    figures, rows = got
    add_figures(metrics, figures)
    if detail is not None:
        for c, v in rows.items():
            detail[c].extend(v)


def forget_priced(sessions: Iterable[Session]) -> None:
    """Drop what was priced for these sessions' streams (a sweep that is done with them)."""
    for s in sessions:
        for st in s.streams:
            st.__dict__.pop("_price_memo", None)
