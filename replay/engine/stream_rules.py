"""What the cache model's client and calibration rules decide for a stream, gathered once.

Every rule of `replay.engine.calibration` (turn-end writes, thinking switches, client
rewrites, unknown times, OpenAI's reasoning cuts and second requests, observed evictions) is
decided in the log's world, so for one stream and one cache setting it is the same for every
policy and every policy parameter. A sweep replays each stream under many configurations that
share one cache setting: the decisions are taken once per stream and setting and kept on the
stream, with a per-request flag that tells the per-request step whether any of them applies
(most requests meet none, and the step then skips them all).
"""

from __future__ import annotations

from replay.engine.calibration import (
    fork_writes,
    openai_reasoning_cuts,
    openai_second_requests,
    client_rewrites,
    refresh_times,
    send_times,
    thinking_switches,
    unknown_times,
)
from replay.model.arrays import Stream, Vocab
from replay.model.cache import CacheConfig


class StreamRules:
    """Per request of one stream, under one cache setting: what the rules decide.

    ``send``: when the request looks the cache up; ``refresh``: when what it uses starts its
    TTL (None: at ``send``); ``forks``: the turn-end write before it, (u, t_end) or (-1, 0);
    ``drops``: the message entries are invalid before it (a thinking switch or a client
    rewrite); ``evicts``: an observed eviction applies before it; ``reasoning_cuts`` and
    ``second``: OpenAI's rules; ``s0``: where its partition starts; ``tail_lo``: the first block
    of its recorded uncached tail (`pricing.uncached_tail` looks at blocks tail_lo..pos-1 only,
    so where the policy changed none of them the tail is the log's); ``frames``: the anchoring
    residual fell since the previous request of its partition (`pricing._frame_check`);
    ``rare``: any of frames, forks, drops, evicts, reasoning_cuts or second applies (the step
    looks at them only there); ``tref``: when what the request reads or writes starts its TTL
    (``refresh``, or ``send`` where that is later or there is none); ``residual``: the stream's
    anchoring residual per request (0.0 where it has none); ``clock``: the type of the step's times
    (`rows`); ``single_model``: every request has the same model.
    Read-only: shared by every replay of the stream under the setting."""

    __slots__ = ("send", "refresh", "forks", "drops", "evicts", "reasoning_cuts", "second", "s0", "rare",
                 "evictions", "tail_lo", "frames", "tref", "residual", "clock", "single_model", "_rows")

    def __init__(self, st: Stream, vocab: Vocab, cfg: CacheConfig, openai: list[bool]):
        n = st.n_requests
        self.send = send_times(st, cfg)
        self.refresh = refresh_times(st, cfg)
        self.tref = self.send if self.refresh is None else [
            t if r < t else r for t, r in zip(self.send, self.refresh)]
        self.residual = st.r_residual or [0.0] * n
        self.forks = fork_writes(st, cfg)
        switches = thinking_switches(st, vocab.models, cfg)
        rewrites = client_rewrites(st, vocab.tool_names, cfg)
        self.drops = [a or b for a, b in zip(switches, rewrites)]
        # observed evictions apply in the calibrated variant, and wherever the log gives no time
        # (there the recorded read decides: the TTL model cannot judge)
        self.evictions = cfg.observed_evictions == "log" and bool(st.r_evict)
        untimed = unknown_times(st, cfg) if st.r_evict else [False] * n
        evict, r_pos = st.r_evict, st.r_pos
        self.evicts = [(self.evictions or untimed[k]) and evict[k] < r_pos[k] for k in range(n)]
        self.reasoning_cuts = openai_reasoning_cuts(st, cfg, openai)
        self.second = openai_second_requests(st, cfg, openai)
        ps = st.part_start
        self.s0 = [ps.get(p, 0) for p in st.r_partition]
        self.tail_lo = tail_starts(st, self.s0)
        res, part = st.r_residual, st.r_partition
        self.frames = [bool(res) and k > 0 and part[k - 1] == part[k] and res[k] < res[k - 1] for k in range(n)]
        self.rare = [fr or f[0] >= 0 or d or e or c >= 0 or s for fr, f, d, e, c, s in
                     zip(self.frames, self.forks, self.drops, self.evicts, self.reasoning_cuts, self.second)]
        # what the per-request step reads of each request, in one tuple (one iterator in its loop)
        self.clock = float if cfg.expiry != "never" else int
        self.single_model = len(set(st.r_model)) <= 1
        self._rows = {}

    def rows(self, st: Stream, detail: bool) -> list[tuple]:
        """Per request, what the per-request step reads of it, in one tuple (one iterator in its
        loop): (model, residual, recorded uncached, recorded read, send, tref, position,
        partition, s0, rare, output), built once per stream, setting and ``detail``.

        Times are floats (exact: ms below 2**53) unless entries never expire (NEVER plus a time
        would be rounded); the recorded read is a float; the recorded uncached tokens and output
        are floats too where no per-request row shows them (an int and its float add and compare
        alike), the log's ints where one does."""
        got = self._rows.get(detail)
        if got is None:
            clock = self.clock
            num = (lambda x: x) if detail else float
            got = self._rows[detail] = list(zip(
                st.r_model, self.residual, map(num, st.r_uncached), map(float, st.r_read), map(clock, self.send),
                map(clock, self.tref), st.r_pos, st.r_partition, self.s0, self.rare, map(num, st.r_output)))
        return got


def stream_rules(st: Stream, vocab: Vocab, cfg: CacheConfig, openai: list[bool]) -> StreamRules:
    """The stream's `StreamRules` under ``cfg`` (and which models cache as OpenAI's), memoized
    on the stream: a sweep asks once per stream and configuration."""
    key = (cfg, tuple(openai))
    memo = st.__dict__.setdefault("_stream_rules_memo", {})
    got = memo.get(key)
    if got is None:
        got = memo[key] = StreamRules(st, vocab, cfg, openai)
    return got


def tail_starts(st: Stream, s0: list[int]) -> list[int]:
    """Per request, the first block `pricing.uncached_tail` visits (the same walk back from the
    request over the baseline sizes until its recorded uncached tokens are covered)."""
    tokens, out = st.tokens, []
    for k, pos in enumerate(st.r_pos):
        left = st.r_uncached[k]
        b = pos - 1
        lo = s0[k]
        while b >= lo and left > 0.0:
            size = tokens[b]
            if size > 0.0:
                left -= size
            b -= 1
        out.append(b + 1)
    return out
