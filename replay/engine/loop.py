"""The replay loop: walk each stream's blocks and requests, apply a policy, price each request.

For every stream: blocks are appended in order (insert-time policies decide their size as
they arrive), then at each request retroactive policies may shrink earlier blocks; the
request's input is the overhead plus every block of the current compaction partition
before it; the cache model splits it into read / written / uncached; the price table turns
that and the recorded output into dollars. Output tokens are the log's: the counterfactual
assumes the agent acts the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from replay.model.arrays import EVICT_TOLERANCE, Dataset, Session, Stream, Vocab
from replay.model.cache import OPENAI_RETENTION_MS, OPENAI_STEP, TTL_MS, CacheConfig, StreamCache
from replay.model.costs import PriceTable, provider_of
from replay.policies.base import METRICS, Context, Policy

SESSION_FIGURES = (
    "requests", "input_total", "uncached", "cache_read", "cache_write_5m", "cache_write_1h", "output", "cost",
    "busts", "bust_tokens", "tokens_delivered", "context_tokens",
) + METRICS

REQUEST_FIGURES = ("input_total", "uncached", "cache_read", "cache_write_5m", "cache_write_1h", "output", "cost",
                   "bust_tokens")


@dataclass
class SessionResult:
    session_key: str
    figures: dict[str, float]
    # per-request detail: stream_id, req_idx and REQUEST_FIGURES as parallel lists
    detail: dict[str, list] | None = None


@dataclass
class ReplayOptions:
    cache: CacheConfig = field(default_factory=CacheConfig)
    prices: PriceTable = field(default_factory=PriceTable)
    detail: bool = False


# The prefix-sum path for policies that never rewrite history; tests switch it off to check
# that both paths give the same figures.
FAST_PATH = True


def _stream_ttls(st: Stream, cfg: CacheConfig) -> list[int]:
    """TTL of the entry each request writes (memoized on the stream: sweeps ask per configuration)."""
    memo = st.__dict__.setdefault("_ttl_memo", {})
    got = memo.get(cfg.ttl)
    if got is None:
        got = memo[cfg.ttl] = _compute_ttls(st, cfg)
    return got


def _compute_ttls(st: Stream, cfg: CacheConfig) -> list[int]:
    if cfg.ttl != "log":
        return [TTL_MS[cfg.ttl]] * st.n_requests
    n1h = sum(1 for x in st.r_w1h if x > 0)
    n5 = sum(1 for x in st.r_w5 if x > 0)
    default = TTL_MS["1h"] if n1h > n5 else TTL_MS["5m"]
    return [TTL_MS["1h"] if a > 0 and a >= b else TTL_MS["5m"] if b > 0 else default
            for a, b in zip(st.r_w1h, st.r_w5)]


def replay_stream(st: Stream, vocab: Vocab, policy: Policy, opts: ReplayOptions, figs: dict[str, float],
                  detail: dict[str, list] | None) -> None:
    cfg = opts.cache
    insert = policy.insert_time()
    retro = policy.retroactive()
    kinds = policy.append_kinds
    bkind = st.bkind
    # Without retroactive edits a longer entry always dominates the shorter ones it extends.
    cache = StreamCache(cfg, keep_dominated=retro)
    ctx = Context(st, vocab, figs)
    policy.start_stream(ctx)
    eff = ctx.eff
    partition = st.partition
    ttls = _stream_ttls(st, cfg)
    rates = [opts.prices.rates(m) for m in vocab.models]
    tiered = [r.tier_threshold is not None for r in rates]
    per_model = [[0.0, 0.0, 0.0, 0.0, 0.0] for _ in rates]
    min_c = [cfg.min_cacheable if cfg.min_cacheable is not None else r.min_cacheable for r in rates]
    providers = [provider_of(m) for m in vocab.models]
    auto = [p in ("openai", "google") for p in providers]
    steps = [OPENAI_STEP if p == "openai" else 1 for p in providers]
    overheads = {m: policy.overhead(ctx, o) for m, o in st.overhead.items()}
    default_overhead = max(overheads.values()) if overheads else 0.0
    n_blocks = st.n_blocks
    residual = st.r_residual or [0.0] * st.n_requests
    evictions = cfg.observed_evictions == "log" and bool(st.r_evict)
    warm_log = cfg.warm_start == "log"
    evict = st.r_evict
    r_pos, r_part, r_model, r_ts = st.r_pos, st.r_partition, st.r_model, st.r_ts
    r_unc, r_read, r_out = st.r_uncached, st.r_read, st.r_output
    ttl_1h = TTL_MS["1h"]
    j = 0
    cur_part = partition[0] if n_blocks else 0
    running = 0.0
    delivered = 0.0
    first = True
    n_req = 0
    # Fast path for policies that never rewrite history: precomputed per stream (and reused by
    # every configuration), prefix sums of the baseline sizes and the positions worth a call.
    fast = FAST_PATH and not retro
    if fast:
        csum, events, epos = _fast_index(st, kinds if insert else frozenset())
        n_events = len(events)
        e_i = 0
        pstart = 0
        delta = 0.0
        total_delta = 0.0
    s_total = s_unc = s_read = s_w5 = s_w1h = s_out = s_cost = s_busts = s_bust_tokens = 0.0
    for k in range(st.n_requests):
        pos = r_pos[k]
        part = r_part[k]
        if fast:
            # only the blocks the policy looks at (and partition starts) are visited; the rest
            # of the context grows by prefix sums of the baseline sizes
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
            if hi > j:
                j = hi
            running = csum[j] - csum[pstart] + delta
        else:
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
        if part != cur_part:
            # a compaction boundary right before the request, with no block after it yet
            cur_part = part
            running = 0.0
            pstart = j
            delta = 0.0
            policy.on_compaction(ctx, pos)
        changed_from = None
        removed = 0.0
        if retro:
            ctx.k = k
            ctx.running = running
            ctx.changed_from = None
            policy.before_request(ctx, k)
            removed = running - ctx.running
            running = ctx.running
            changed_from = ctx.changed_from
        model = r_model[k]
        t = r_ts[k]
        overhead = overheads.get(model, default_overhead)
        total = overhead + running + residual[k]
        if total < 0.0:
            total = 0.0
        unc_rec = r_unc[k]
        rr = r_read[k]
        event = evictions and evict[k] < pos
        if warm_log and rr > 0 and (first or evictions):
            # a prefix the log says was cached although this stream did not write it: the
            # agent's system prompt kept warm by other sessions of the same account
            cache.warm(model, min(float(rr), total - unc_rec, overhead), t, ttls[k])
        first = False
        if event:
            e = evict[k]
            if e >= 0:
                s0 = st.part_start.get(part, 0)
                prefix = overhead + sum(eff[s0:e]) + residual[k]
            else:
                prefix = 0.0
            cache.evict(model, part, e, rr + max(64.0, EVICT_TOLERANCE * rr), prefix)
        if auto[model]:
            read, written, uncached, bust = cache.request_auto(
                model, part, pos, t, total, ttls[k] if cfg.ttl != "log" else OPENAI_RETENTION_MS, changed_from,
                removed, min_c[model], steps[model])
        else:
            read, written, uncached, bust = cache.request(
                model, part, pos, t, total, unc_rec if unc_rec < total else total, overhead, ttls[k], min_c[model],
                changed_from, removed)
        if ttls[k] == ttl_1h:
            w5, w1h = 0.0, written
        else:
            w5, w1h = written, 0.0
        out = r_out[k]
        if detail is not None or tiered[model]:
            cost = rates[model].cost(uncached, w5, w1h, read, out)
            s_cost += cost
        else:
            # cost is linear in the token categories: sum them per model, price once per stream
            acc = per_model[model]
            acc[0] += uncached
            acc[1] += w5
            acc[2] += w1h
            acc[3] += read
            acc[4] += out
        n_req += 1
        s_total += total
        s_unc += uncached
        s_read += read
        s_w5 += w5
        s_w1h += w1h
        s_out += out
        if bust > 0:
            s_busts += 1
            s_bust_tokens += bust
        if detail is not None:
            detail["stream_id"].append(st.stream_id)
            detail["req_idx"].append(k)
            for name, v in zip(REQUEST_FIGURES, (total, uncached, read, w5, w1h, out, cost, bust)):
                detail[name].append(v)
    # blocks after the last request are delivered too (they were appended; no request saw them)
    if fast:
        while e_i < n_events:
            ev = events[e_i]
            e_i += 1
            if ev < 0:
                policy.on_compaction(ctx, -ev - 1)
                continue
            size = eff[ev]
            new = policy.on_append(ctx, ev, size)
            if new != size:
                eff[ev] = new
                figs["blocks_changed"] += 1
                figs["tokens_saved"] += size - new
                total_delta += new - size
        delivered = csum[n_blocks] + total_delta
    while not fast and j < n_blocks:
        size = eff[j]
        if insert and (kinds is None or bkind[j] in kinds):
            size = policy.on_append(ctx, j, size)
        delivered += size
        j += 1
    figs["requests"] += n_req
    figs["input_total"] += s_total
    figs["context_tokens"] += s_total
    figs["uncached"] += s_unc
    figs["cache_read"] += s_read
    figs["cache_write_5m"] += s_w5
    figs["cache_write_1h"] += s_w1h
    figs["output"] += s_out
    for m, acc in enumerate(per_model):
        if any(acc):
            s_cost += rates[m].cost(*acc)
    figs["cost"] += s_cost
    figs["busts"] += s_busts
    figs["bust_tokens"] += s_bust_tokens
    figs["tokens_delivered"] += delivered


def _fast_index(st: Stream, kinds) -> tuple[list[float], list[int], list[int]]:
    """(prefix sums of the baseline block sizes, events, their positions) of a stream, memoized.

    Events are block positions the policy wants to see (its append_kinds; every block when
    it has none) and partition starts encoded as -(position + 1), in position order.
    """
    memo = st.__dict__.setdefault("_fast_memo", {})
    got = memo.get(kinds)
    if got is None:
        csum = [0.0]
        acc = 0.0
        for x in st.tokens:
            acc += x
            csum.append(acc)
        part = st.partition
        events, epos = [], []
        for i in range(st.n_blocks):
            if i > 0 and part[i] != part[i - 1]:
                events.append(-(i + 1))
                epos.append(i)
            if kinds is None or st.bkind[i] in kinds:
                events.append(i)
                epos.append(i)
        got = memo[kinds] = (csum, events, epos)
    return got


def replay_session(session: Session, vocab: Vocab, policy: Policy, opts: ReplayOptions) -> SessionResult:
    figs = {f: 0.0 for f in SESSION_FIGURES}
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
