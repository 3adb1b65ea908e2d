"""The per-request step: cache lookup, pricing and figures for each request of a stream.

A block walker (`replay.engine.walkers`) yields, request by request, how large the context
before it is; the step turns that size into what the prompt-cache model reads, writes and
sends uncached, prices it with the rates of the request's model and adds it to the stream's
figures. Output tokens are the log's: the counterfactual assumes the agent acts the same.

The step is the body of a loop over the walker's requests rather than a function called per
request: it runs once per request per configuration of a sweep, and a call per request
(with its constants read from a closure) cost 4.5% more instructions on the replay.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from itertools import islice, repeat

from replay.engine.calibration import send_times
from replay.engine.keepalive import Pinger
from replay.engine.options import REQUEST_FIGURES, ReplayOptions, Request
from replay.engine.prompt import (  # noqa: F401  (uncached_tail, in_policy_world: this module's API before)
    _evict, _frame_check, _observed_write, _prefix, in_policy_world, uncached_tail,
)
from replay.engine.stream_rules import StreamRules, stream_rules
from replay.engine.tables import (  # noqa: F401  (stream_ttls: this module's API before)
    _overheads, _system_prefixes, model_tables, stream_ttls,
)
from replay.model.arrays import Stream, Vocab
from replay.model.cache import SYS, TTL_MS, StreamCache, _neg_tokens
from replay.model.whatif import WhatIf, first_idle_ttls
from replay.policies.base import Context, Policy

KEPT_MS = 1 << 50  # an entry that never expires within a replay

# The cache's common request taken in the step's loop (`StreamCache.request` inline); tests switch
# it off to check that both give the same figures.
INLINE = True


def price_requests(st: Stream, vocab: Vocab, policy: Policy, opts: ReplayOptions, ctx: Context,
                   detail: dict[str, list] | None, requests: Iterable[Request],
                   observed_writes: list[int] | None = None, record: list[int] | None = None,
                   overhead_of: list[float] | None = None, changed_k: int | None = None,
                   add: bool = True) -> list[tuple[str, float]]:
    """Price each of the stream's requests and add the stream's figures to ``ctx.metrics``
    (and a row per request to ``detail``). Call after ``start_stream``: the policy's
    ``overhead`` hook is asked here, before the first request is taken from ``requests``,
    which must yield every request of the stream, in order.

    ``observed_writes``: per request, the block position of an observed write to replay (-1:
    none), decided by the no-op replay; ``record``: the no-op replay that decides them
    appends its decisions here (see `replay.engine.calibration`). ``overhead_of``: the
    overheads per model when the caller asked the policy already; ``changed_k``: the first
    request before which the policy changed a block of the session (None: read it from
    ``ctx.metrics`` as the walk goes). Returns the stream's figures, in the order they are
    added (``add``: add them to ``ctx.metrics`` here)."""
    cfg = opts.cache
    cache = StreamCache(cfg)
    rates, each, min_c, auto, grids, retention, openai = model_tables(vocab, opts, detail is not None)
    per_model = [[0.0, 0.0, 0.0, 0.0, 0.0] for _ in rates]
    if overhead_of is None:
        overhead_of = _overheads(st, policy, ctx, len(rates))
    sys_of = _system_prefixes(st, overhead_of, cfg)
    logged_of = [st.overhead.get(m, o) for m, o in enumerate(overhead_of)]
    # times in ms as floats (exact below 2**53): the step's comparisons and sums of times run
    # as float operations, which the interpreter specializes (13-digit ints it does not);
    # entries that never expire keep ints (NEVER plus a time would be rounded)
    clock = float if cfg.expiry != "never" else int
    ttls, ttl_1h, auto_log = stream_ttls(st, cfg, clock is float), clock(TTL_MS["1h"]), cfg.ttl == "log"
    whatif: WhatIf | None = opts.whatif
    sys_ttl = keep = ping_gaps = None
    if whatif is not None:
        client = whatif.client
        sys_ttl = clock(TTL_MS[client.system_ttl]) if client.system_ttl else None
        keep = client.keepalive
        kind_ttl = client.main_ttl if st.kind == "main" else client.subagent_ttl
        if kind_ttl is not None:  # a per-stream-kind TTL setting (promptCacheTtl, subagentPromptCacheTtl)
            ttls = [clock(TTL_MS[kind_ttl])] * st.n_requests
        if client.ttl_rule == "first_idle":
            ttls = list(map(clock, first_idle_ttls(send_times(st, cfg))))
        elif client.ttl_rule == "plan":
            ttls, ping_gaps = client.plan(st)
            ttls = list(map(clock, ttls))
    pinger = Pinger(keep, rates, auto, min_c) if keep is not None or ping_gaps is not None else None
    rules = stream_rules(st, vocab, cfg, openai)
    evictions, warm_log = rules.evictions, cfg.warm_start == "log"
    r_ts, eff, tokens, tail_lo = rules.send, ctx.eff, st.tokens, rules.tail_lo
    routing_miss = cfg.openai_routing_miss if cfg.observed_evictions == "none" else 0.0
    # other sessions keep the client's instructions warm (CacheConfig.openai_warm_prefix)
    warm_kept = cfg.openai_warm_prefix == "kept"
    warm_kept_other = cfg.warm_prefix == "kept"
    metrics = ctx.metrics
    # the cache's common request (no retroactive change, explicit breakpoints) is taken here
    # rather than by `StreamCache.request`: the same steps, without a call per request
    enabled, system_bp, lookback = cache.enabled, cache.system_bp, cache.lookback
    if cfg.lookback_blocks is None:
        lookback = st.n_blocks  # no request is further than this from an entry: any distance (a small int)
    slow_add = cache.forever  # entries that never expire are added by `StreamCache._add`
    # what holds for the whole stream is decided here, once: the loop tests one flag
    warm_now, warm_each = warm_log, warm_log and evictions  # the first request, then the others
    pinging = pinger is not None
    mixed = sys_ttl is not None and system_bp
    # the recorded tail is looked at from the first request a change can reach (the walk tells
    # as it goes when changed_k is None)
    tail_k = 0 if changed_k is None else changed_k
    unbounded = cfg.lookback_blocks is None
    k = -1
    last_model = acc = None
    s_total = s_unc = s_read = s_w5 = s_w1h = s_out = s_cost = s_busts = s_bust_tokens = 0.0
    a_unc = a_w5 = a_w1h = a_read = a_out = 0.0
    # one model: its token sums are the stream's (the same additions in the same order)
    single = rules.single_model
    has_detail = detail is not None
    recording = record is not None
    # per request, the observed write to replay (-1: none; the recording replay decides its own)
    obs = observed_writes if observed_writes is not None and not recording else repeat(-1)
    newest, hint = None, 0  # the entry the inline request added last, and its index then
    # the system entries the last requests found (an entry is never taken out of a list of system
    # entries, only the list replaced): the warm one, and the breakpoint's (the first that matches,
    # while no entry before it can have changed: an eviction cuts system entries)
    warm_e = warm_sys = sbp_e = sbp_sys = None
    for (k, running, changed_from, removed), (model, res, unc_rec, frr, t, tr, pos, part, s0, rare, out), ttl, \
            p_obs in zip(requests, rules.rows(st, has_detail), ttls, obs):
        if model != last_model:
            # a stream's requests rarely change model: its constants are looked up again only then,
            # and its token sums (`per_model`) are kept in locals meanwhile (added in the same order)
            if acc is not None:
                acc[:] = a_unc, a_w5, a_w1h, a_read, a_out
            last_model = model
            overhead, is_auto, minc, sysp, logged = overhead_of[model], auto[model], min_c[model], sys_of[model], \
                logged_of[model]
            sys_bp = system_bp and sysp >= minc
            minc_f = float(minc)  # compared with floats (the same order as with the int, fewer steps)
            inline = INLINE and enabled and not is_auto
            observe = evictions and not is_auto
            priced = each[model]
            acc = None if priced else per_model[model]
            if acc is not None:
                a_unc, a_w5, a_w1h, a_read, a_out = acc
            sbp_sys = warm_sys = None  # found for another model
        total = overhead + running + res
        if total < 0.0:
            total = 0.0
        if k >= tail_k and unc_rec > 0 and not is_auto and (changed_k is not None or metrics["blocks_changed"]):
            # only a policy that changed a block of the tail can have changed it (the walk over
            # it gives the log's tail, as a float, where none changed)
            lo = tail_lo[k]
            if eff[lo:pos] == tokens[lo:pos]:
                unc_rec = float(unc_rec)
            else:
                unc_rec = uncached_tail(st, eff, k, unc_rec)
        if warm_now and frr > 0.0 and not (warm_sys is cache.sys and warm_e[4] >= t and warm_e[3] >= overhead):
            # cached per the log though this stream did not write it: kept warm by other sessions
            # in the policy's world: a policy that shrank the overhead shrank what was warm too
            # (`in_policy_world` capped at the overhead; its two cheap cases inline: this runs at
            # nearly every request of the calibrated replay). Nothing to do where the system entry
            # the last requests found is alive and as long as the overhead (the most warm can be)
            if frr <= logged + res or pos <= s0:
                warm = frr - (logged - overhead)
                if not warm > 0.0:
                    warm = 0.0
            elif overhead + res >= overhead:
                warm = overhead
            else:
                warm = in_policy_world(st, eff, k, frr, overhead, logged, overhead,
                                       not (metrics["blocks_changed"] if changed_k is None else k >= changed_k))
            x = total - unc_rec
            if x < warm:
                warm = x
            if overhead < warm:
                warm = overhead
            # StreamCache.warm
            if not warm <= 0.0 and enabled and not (
                    warm_sys is cache.sys and warm_e[4] >= t and warm_e[3] >= warm):
                for e in cache.sys:
                    if e[0] == model and e[4] >= t and e[3] >= warm:
                        warm_e, warm_sys = e, cache.sys
                        break
                else:
                    wt = KEPT_MS if (warm_kept if openai[model] else warm_kept_other) else ttl
                    cache._add([model, SYS, 0, warm, t + wt, wt])
        warm_now = warm_each
        if rare or pinging:
            _rare_step(cache, st, eff, k, rules, pinger, ping_gaps, ttls, model, is_auto, total, unc_rec,
                       overhead, sysp, logged, minc, ttl, sys_ttl, overhead_of,
                       not (metrics["blocks_changed"] if changed_k is None else k >= changed_k))
            sbp_sys = None
        if recording:
            if observe and frr > 0.0:
                p_obs = _observed_write(cache, st, eff, k, t, overhead, total - unc_rec, minc)
            record.append(p_obs)
        if p_obs >= 0 and observe and frr > 0.0:
            cacheable = total - unc_rec
            prefix = _prefix(st, eff, k, p_obs, overhead, p_obs <= pos and not (
                metrics["blocks_changed"] if changed_k is None else k >= changed_k))
            cache.write(model, part, p_obs, prefix if prefix < cacheable else cacheable, t, ttl)
        if inline and changed_from is None:
            # StreamCache.request: read the longest entry the request can reach, write the rest
            uncached = unc_rec if unc_rec < total else total
            cacheable = total - uncached
            # an entry as long as the limit, computed along another path of float sums, is not longer
            lim = cacheable + 1e-6
            entries = cache.entries
            best = None
            top = -1.0  # the longest entry's length (none: shorter than any write)
            if entries:
                # the search starts at the first entry not longer than the request (entries are
                # longest first): most often the first; after a compaction, the newest entry's
                # place when the one before it is longer (the earlier partition's); else a search
                e = entries[0]
                top = e[3]
                if top <= lim:
                    i = 0
                elif (newest is not None and hint < len(entries) and entries[hint] is newest and newest[3] <= lim
                      and entries[hint - 1][3] > lim):
                    i, e = hint, newest
                else:
                    i = bisect_left(entries, -lim, key=_neg_tokens)
                    e = entries[i] if i < len(entries) else None
                if e is not None:
                    if e[0] == model and e[4] >= t and (
                            (e[1] == part and e[2] <= pos and (unbounded or pos - e[2] <= lookback)) or e[1] == SYS):
                        best = e  # most often: the entry the previous request wrote
                    else:
                        for e in islice(entries, i + 1, None):
                            if e[3] > lim or e[0] != model or e[4] < t:
                                continue
                            if e[1] != SYS and (e[1] != part or e[2] > pos or pos - e[2] > lookback):
                                continue
                            best = e
                            break
            read = 0.0
            if best is not None:
                b = best[3]
                if b >= minc_f:
                    read = b if b < cacheable else cacheable
                    best[4] = tr + best[5]
            if cacheable >= minc_f:
                written = cacheable - read
                if written > 0.0:
                    exp = tr + ttl
                    entry = [model, part, pos, cacheable, exp, ttl]
                    if slow_add or part == SYS:
                        cache._add(entry)
                        newest = None
                    else:
                        # StreamCache._add: longest first, ties oldest first (after the entries
                        # as long); the newest entry's place is remembered for the next request
                        if top < cacheable:
                            entries.insert(0, entry)
                            hint = 0
                        elif entries[-1][3] >= cacheable:
                            hint = len(entries)
                            entries.append(entry)
                        elif (newest is not None and 0 < hint < len(entries) and entries[hint] is newest
                              and newest[3] < cacheable and entries[hint - 1][3] >= cacheable):
                            entries.insert(hint, entry)
                        else:
                            hint = bisect_right(entries, -cacheable, key=_neg_tokens)
                            entries.insert(hint, entry)
                        newest = entry
                        if exp < cache.next_expiry:
                            cache.next_expiry = exp
            else:
                written = 0.0
                uncached = total - read
            if sys_bp:
                # the system breakpoint is hit (refreshed) or written by every request
                if sbp_sys is cache.sys and sbp_e[3] == sysp:
                    e = sbp_e
                else:
                    for e in cache.sys:
                        if e[0] == model and e[3] == sysp:
                            sbp_e, sbp_sys = e, cache.sys
                            break
                    else:
                        sttl = ttl if sys_ttl is None else sys_ttl
                        e = sbp_e = [model, SYS, 0, sysp, tr + sttl, sttl]
                        cache._add(e)
                        sbp_sys = cache.sys
                        e = None
                if e is not None:
                    if e[4] >= t:
                        e[4] = tr + e[5]
                    else:
                        sttl = ttl if sys_ttl is None else sys_ttl
                        e[4] = tr + sttl
                        e[5] = sttl
            if t > cache.next_expiry:
                _prune(cache, t)
            bust = 0.0  # no retroactive change: nothing to bust
        elif is_auto:
            if rare:
                if rules.reasoning_cuts[k] >= 0:
                    # a new user turn: the earlier turns' reasoning left the prompt
                    cache.cut_after(part, rules.reasoning_cuts[k])
                if rules.second[k]:
                    cache.drop_messages(model)
            step, base = grids[model]
            read, written, uncached, bust = cache.request_auto(
                model, part, pos, t, total, retention[model] if auto_log else ttl, changed_from, removed,
                minc, step, base)
            if bust > 0.0:
                s_busts += 1
                s_bust_tokens += bust
            if routing_miss and openai[model] and read > 0.0:
                # expected: a request routed to a machine without the prefix reads the warm part only
                warm = cache.warm_length(model, t)
                lost = routing_miss * (read - (warm if warm < read else read))
                read -= lost
                uncached += lost
        else:
            read, written, uncached, bust = cache.request(
                model, part, pos, t, total, unc_rec if unc_rec < total else total, sysp, ttl, minc,
                changed_from, removed, tr, sys_ttl_ms=sys_ttl)
            if bust > 0.0:
                s_busts += 1
                s_bust_tokens += bust
        if mixed and sys_ttl != ttl and written > 0 and read < sysp and sysp >= minc:
            # a mixed layout: the part of the write up to the system breakpoint has its own TTL
            w_sys = min(sysp, read + written) - read
            w5, w1h = (w_sys, written - w_sys) if ttl == ttl_1h else (written - w_sys, w_sys)
        elif ttl == ttl_1h:
            w5, w1h = 0.0, written
        else:
            w5, w1h = written, 0.0
        if priced:
            cost = rates[model].cost(uncached, w5, w1h, read, out)
            s_cost += cost
        elif not single:
            # cost is linear in the token categories: sum them per model, price once per stream
            a_unc += uncached
            a_w5 += w5
            a_w1h += w1h
            a_read += read
            a_out += out
        s_total += total
        s_unc += uncached
        s_read += read
        s_w5 += w5
        s_w1h += w1h
        s_out += out
        if has_detail:
            _detail_row(detail, st.stream_id, k, (total, uncached, read, w5, w1h, out, cost, bust))
    n_req = k + 1  # the requests come in order, every one
    if acc is not None:
        acc[:] = (s_unc, s_w5, s_w1h, s_read, s_out) if single else (a_unc, a_w5, a_w1h, a_read, a_out)

    figures = []
    if pinger is not None:
        if keep is not None and keep.tail and st.kind == "main" and st.n_requests and ping_gaps is None:
            # the client cannot know that the user is done: it pings up to the horizon
            pinger.gap(cache, st, st.n_requests, r_ts[-1], r_ts[-1], None, False, ttls[-1])
        s_cost += pinger.cost
        s_total += pinger.input
        s_unc += pinger.uncached
        s_read += pinger.read
        s_out += pinger.output
        figures.append(("keepalive_pings", pinger.pings))
    figures += _stream_figures(per_model, rates, n_req, s_total, s_unc, s_read, s_w5, s_w1h, s_out, s_cost, s_busts,
                               s_bust_tokens)
    if add:
        add_figures(ctx.metrics, figures)
    return figures


def _rare_step(cache: StreamCache, st: Stream, eff: list[float], k: int, rules: StreamRules, pinger: Pinger | None,
               ping_gaps: list[bool] | None, ttls: list[int], model: int, is_auto: bool, total: float,
               unc_rec: float, overhead: float, sysp: float, logged: float, minc: int, ttl: int,
               sys_ttl: int | None, overhead_of: list[float], same: bool) -> None:
    """What happens to the cache before request k beyond the common case (`StreamRules.rare`,
    or keep-alive pings): a frame check, pings, the turn-end write, a client break, an
    observed eviction. ``same``: the policy changed no block before the request."""
    r_ts, t = rules.send, rules.send[k]
    if rules.frames[k] and not is_auto and cache.entries:
        _frame_check(cache, st, eff, k, overhead_of)
    u, t_end = rules.forks[k]
    fork = u >= 0 and not is_auto
    pinging = pinger is not None and k > 0 and (ping_gaps is None or ping_gaps[k])
    if pinging:
        # keep-alive pings through the idle gap before this request, up to its turn-end write
        pinger.gap(cache, st, k, r_ts[k - 1], r_ts[k - 1], t_end if fork and t_end < t else t,
                   ping_gaps is not None, ttls[k - 1])
    if fork and (k == 0 or st.r_model[k - 1] != model):
        fork = False  # forked with the answer's model: an entry request k (another model) cannot read
    if fork:
        # the unlogged turn-end request cached the conversation up to the last answer, with the
        # TTL the client used then (request k-1's: a TTL rule that turns on after a long idle
        # gap must not give the write before that gap its TTL)
        cacheable = total - unc_rec
        prefix = _prefix(st, eff, k, u, overhead, same and u <= st.r_pos[k])
        cache.request(model, st.r_partition[k], u, t_end, prefix if prefix < cacheable else cacheable, 0.0, sysp,
                      ttls[k - 1], minc, None, 0.0, sys_ttl_ms=sys_ttl)
        if pinging and t_end < t:
            # and from the turn-end write (a use of the cache) on
            pinger.gap(cache, st, k, r_ts[k - 1], t_end, t, ping_gaps is not None, ttls[k - 1])
    if rules.drops[k] and not is_auto:
        # thinking switched on or off, or the client re-rendered the conversation from its
        # first message: the message entries are invalid, the system's stay
        cache.drop_messages(model)
    if rules.evicts[k]:
        _evict(cache, st, eff, k, overhead, logged, t, is_auto, same)


def _prune(cache: StreamCache, t: float) -> None:
    """`StreamCache._prune` once ``t`` passed ``cache.next_expiry``: the live entries and the lowest
    of their expiries in one loop, and the system entries' list rebuilt only when one of them
    expired (the same entries, in the same order, as the method leaves). The method's two list
    comprehensions and ``min`` took 2.9 us for 30 entries, this 1.5 us: a comprehension is a call."""
    kept = []
    keep = kept.append
    nx = 1 << 62
    for e in cache.entries:
        x = e[4]
        if x >= t:
            keep(e)
            if x < nx:
                nx = x
    cache.entries = kept
    sys = cache.sys
    for e in sys:
        if e[4] < t:
            cache.sys = [e for e in sys if e[4] >= t]
            break
    cache.next_expiry = nx


def _detail_row(detail: dict[str, list], stream_id: int, k: int, figures: tuple) -> None:
    detail["stream_id"].append(stream_id)
    detail["req_idx"].append(k)
    for name, v in zip(REQUEST_FIGURES, figures):
        detail[name].append(v)


def _stream_figures(per_model: list[list[float]], rates: list, n_req: int, total: float, unc: float, read: float,
                    w5: float, w1h: float, out: float, cost: float, busts: float,
                    bust_tokens: float) -> list[tuple[str, float]]:
    """A stream's summed figures, the per-model token sums priced."""
    for m, acc in enumerate(per_model):
        if any(acc):
            cost += rates[m].cost(*acc)
    return [("requests", n_req), ("input_total", total), ("context_tokens", total), ("uncached", unc),
            ("cache_read", read), ("cache_write_5m", w5), ("cache_write_1h", w1h), ("output", out),
            ("cost", cost), ("busts", busts), ("bust_tokens", bust_tokens)]


def add_figures(figs: dict[str, float], figures: list[tuple[str, float]]) -> None:
    """Add a stream's figures to the session's, in order."""
    for name, v in figures:
        figs[name] = figs.get(name, 0.0) + v
