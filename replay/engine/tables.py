"""What the per-request step (`replay.engine.pricing`) reads per replay, per model and per stream,
looked up or computed before its loop: the TTL each request writes, the rates and cache rules of
each model, the memo keys built from them, the overheads and the system prefix of each model.

Those that every stream or every configuration of a sweep asks for again are memoized (on the
price table, on the stream); all are read-only.
"""

from __future__ import annotations

from replay.engine.options import ReplayOptions
from replay.model.arrays import Stream, Vocab
from replay.model.cache import OPENAI_MIN, OPENAI_RETENTION_MS, OPENAI_RETENTIONS, TTL_MS, CacheConfig, openai_grid
from replay.model.costs import PriceTable, provider_of
from replay.policies.base import Context, Policy


def stream_ttls(st: Stream, cfg: CacheConfig, floats: bool = False) -> list:
    """TTL of the entry each request writes (memoized on the stream: sweeps ask per configuration);
    ``floats``: as floats (the per-request step's clock, `StreamRules.rows`)."""
    memo = st.__dict__.setdefault("_ttl_memo", {})
    got = memo.get((cfg.ttl, floats))
    if got is None:
        got = memo[(cfg.ttl, floats)] = [float(x) for x in stream_ttls(st, cfg)] if floats else _compute_ttls(st, cfg)
    return got


def _compute_ttls(st: Stream, cfg: CacheConfig) -> list[int]:
    if cfg.ttl != "log":
        return [TTL_MS[cfg.ttl]] * st.n_requests
    n1h = sum(1 for x in st.r_w1h if x > 0)
    n5 = sum(1 for x in st.r_w5 if x > 0)
    default = TTL_MS["1h"] if n1h > n5 else TTL_MS["5m"]
    return [TTL_MS["1h"] if a > 0 and a >= b else TTL_MS["5m"] if b > 0 else default
            for a, b in zip(st.r_w1h, st.r_w5)]


def model_tables(vocab: Vocab, opts: ReplayOptions, detail: bool) -> tuple:
    """Per model code: rates, price each request? (else the token sums once per stream: cost
    is linear in them unless tiered), minimum cacheable prefix, automatic caching?, its grid
    (step, base) and retention (OpenAI's rules: ``CacheConfig.openai_*``), OpenAI's?

    Memoized on the price table (whose rates never change once resolved): every stream of a
    replay asks, with the same settings. Read-only."""
    forced = opts.whatif is not None and opts.whatif.provider.caching == "openai"
    key = (tuple(vocab.models), opts.cache, forced, detail)
    memo = opts.prices.__dict__.setdefault("_tables_memo", {})
    got = memo.get(key)
    if got is None:
        got = memo[key] = _model_tables(vocab, opts, detail)
    return got


def price_keys(vocab: Vocab, prices: PriceTable) -> tuple[str, tuple[int, ...]]:
    """The rates of every model code as one string (equal strings, equal rates) and their
    minimum cacheable prefixes: what the memos of priced streams and observed writes are keyed
    by, memoized on the price table, so that a key is not built and hashed from the rates at
    every stream (a string's hash is kept)."""
    memo = prices.__dict__.setdefault("_keys_memo", {})
    models = tuple(vocab.models)
    got = memo.get(models)
    if got is None:
        rates = [prices.rates(m) for m in models]
        got = memo[models] = (repr(rates), tuple(r.min_cacheable for r in rates))
    return got


def _model_tables(vocab: Vocab, opts: ReplayOptions, detail: bool) -> tuple:
    cfg = opts.cache
    rates = [opts.prices.rates(m) for m in vocab.models]
    providers = [provider_of(m) for m in vocab.models]
    if opts.whatif is not None and opts.whatif.provider.caching == "openai":
        # another provider's rules on the same requests: OpenAI's automatic caching for every model
        providers = ["openai"] * len(providers)
    openai = [p == "openai" for p in providers]
    forced = opts.whatif is not None and opts.whatif.provider.caching == "openai"
    return (rates, [detail or r.tier_threshold is not None for r in rates],
            [cfg.min_cacheable if cfg.min_cacheable is not None else OPENAI_MIN if forced else r.min_cacheable
             for r in rates],
            [p in ("openai", "google") for p in providers],
            [openai_grid(m, cfg) if o else (1, None) for m, o in zip(vocab.models, openai)],
            [OPENAI_RETENTIONS[cfg.openai_retention] if o else OPENAI_RETENTION_MS for o in openai], openai)


def _overheads(st: Stream, policy: Policy, ctx: Context, n_models: int) -> list[float]:
    """The stream's overhead per model code under the policy (its largest for a model it lacks)."""
    overheads = {m: policy.overhead(ctx, o) for m, o in st.overhead.items()}
    default = max(overheads.values()) if overheads else 0.0
    return [overheads.get(m, default) for m in range(n_models)]


def _system_prefixes(st: Stream, overhead_of: list[float], cfg: CacheConfig) -> list[float]:
    """Per model code, the length of the system-prefix entry (Claude Code's breakpoint after
    tools and system prompt) under the policy.

    The overhead (what the first request holds beyond the trace's blocks) also holds context
    the client puts in the first message but the transcript does not record (CLAUDE.md,
    reminders), which lies after that breakpoint. Where the stream's first request of a model
    read part of the overhead from cache (another session's identical system prompt: the warm
    start), that read is the breakpoint; a policy that shrinks the overhead (pruned tool
    definitions) shrinks it by as much. Where it read nothing, ``system_prefix = "dataset"``
    takes the system prefix other streams of the dataset show for the model and client version
    (``Stream.shared_system_prefix``), ``"earlier"`` the one the sessions that started earlier
    show (``Stream.prior_system_prefix``); otherwise the whole overhead is taken."""
    if cfg.system_prefix == "overhead":
        return list(overhead_of)
    # the same for every configuration with the same overheads: kept on the stream (read-only)
    memo = st.__dict__.setdefault("_system_prefix_memo", {})
    key = (cfg.system_prefix, cfg.prefix_versions, tuple(overhead_of))
    got = memo.get(key)
    if got is None:
        got = memo[key] = _compute_system_prefixes(st, overhead_of, cfg)
    return got


def _compute_system_prefixes(st: Stream, overhead_of: list[float], cfg: CacheConfig) -> list[float]:
    out = list(overhead_of)
    for k in first_usage(st):
        m = st.r_model[k]
        logged, rr = st.overhead.get(m, 0.0), float(st.r_read[k])
        if 0.0 < rr < logged:
            out[m] = max(0.0, rr - (logged - overhead_of[m]))
        else:
            shared, near = ((st.shared_system_prefix, st.shared_system_prefix_near) if cfg.system_prefix == "dataset"
                            else (st.prior_system_prefix, st.prior_system_prefix_near)
                            if cfg.system_prefix == "earlier" else ({}, {}))
            v = shared.get(m)
            if v is None and cfg.prefix_versions == "nearest":
                v = near.get(m)
            if v is not None:
                out[m] = max(0.0, v - (logged - overhead_of[m]))
    return out


def first_usage(st: Stream) -> list[int]:
    """The stream's first request with usage of each model, in order (the one the overhead and
    the system prefix are read at), memoized: asked per stream and configuration."""
    got = st.__dict__.get("_first_usage")
    if got is None:
        seen: set[int] = set()
        got = []
        for k in range(st.n_requests):
            m = st.r_model[k]
            if m not in seen and st.r_has_usage[k]:
                seen.add(m)
                got.append(k)
        st.__dict__["_first_usage"] = got
    return got
