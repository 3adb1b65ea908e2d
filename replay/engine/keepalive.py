"""Keep-alive pings of a cache what-if (`replay.model.whatif.KeepAlive`), priced as real requests."""

from __future__ import annotations

from replay.model.arrays import Stream
from replay.model.cache import StreamCache


class Pinger:
    """Keep-alive pings of one stream (`replay.model.whatif.KeepAlive`), priced as real
    requests: the cached prefix read, ``ping_input`` uncached tokens, ``ping_output`` output."""

    __slots__ = ("keep", "rates", "auto", "min_c", "pings", "cost", "input", "uncached", "read", "output")

    def __init__(self, keep, rates: list, auto: list[bool], min_c: list[int]):
        self.keep, self.rates, self.auto, self.min_c = keep, rates, auto, min_c
        self.pings = 0
        self.cost = self.input = self.uncached = self.read = self.output = 0.0

    def gap(self, cache: StreamCache, st: Stream, k: int, t_idle: int, t_from: int, t_until: int | None,
            through: bool, ttl_ms: int) -> None:
        """Pings an interval apart from ``t_from`` (the last use of the cache: request k-1's
        send time or the turn-end write after it) until before ``t_until`` (request k's send
        time, or the turn-end write; None: the stream ended). ``t_idle``: when the idle time
        began (request k-1's send time), from which the horizon counts. ``through``: a plan's
        pings through the whole gap, every TTL less 30 s, with no horizon."""
        j = k - 1
        model, part = st.r_model[j], st.r_partition[j]
        if model < 0 or self.auto[model] or t_from < 0 or (t_until is not None and t_until < t_from):
            return
        if through:
            interval, limit, pin, pout = ttl_ms - 30_000, t_until, 8.0, 1.0
        else:
            kp = self.keep
            interval, pin, pout = int(kp.interval_s * 1000), kp.ping_input, kp.ping_output
            limit = t_idle + int(kp.horizon_s * 1000) + 1  # a ping at the horizon itself is sent
            if t_until is not None and t_until < limit:
                limit = t_until
        pos = st.r_pos[k] if k < st.n_requests and st.r_partition[k] == part else st.r_pos[j]
        rates, min_c = self.rates[model], self.min_c[model]
        tp = t_from + interval
        while tp < limit:
            got = cache.ping(model, part, pos, tp)
            if got < min_c or got <= 0:
                return  # nothing cached is left to keep alive
            self.pings += 1
            self.read += got
            self.uncached += pin
            self.input += got + pin
            self.output += pout
            self.cost += rates.cost(pin, 0.0, 0.0, got, pout)
            tp += interval
