"""Causal what-ifs (issue 35, item 3): nothing decided at request k — a write's TTL, a modelled
turn-end write, a ping, the model that prices it — depends on anything after k. For every
predictive scenario (the hindsight bound excepted: it is hindsight by definition) and every
stream of the shared corpora, the per-request figures up to the middle request are the same
when every gap after it is stretched by two hours, and when everything after it is dropped."""

from dataclasses import replace

import pytest

from replay.experiments.whatif import SCENARIOS, _stream_figs, model_only
from replay.engine import ReplayOptions
from replay.model.arrays import Stream

from conftest import shared_dataset

REQ_COLS = ("r_pos", "r_partition", "r_ts", "r_model", "r_uncached", "r_w5", "r_w1h", "r_read", "r_output",
            "r_has_usage", "r_user_turn", "r_version", "r_event", "r_miss", "r_miss_tokens", "r_residual", "r_evict")
BLOCK_COLS = ("tokens", "bpe", "nbytes", "bkind", "tool", "tool_kind", "chash", "resource", "line_start", "line_end",
              "args", "tool_use", "is_error", "partition", "user_turn", "ts")
STRETCH_MS = 2 * 3_600_000


def dropped_after(st: Stream, k: int) -> Stream:
    """The stream as if it had ended after request k's response (blocks up to request k+1)."""
    end = st.r_pos[k + 1]
    return replace(st, **{c: getattr(st, c)[:k + 1] for c in REQ_COLS},
                   **{c: getattr(st, c)[:end] for c in BLOCK_COLS})


def stretched_after(st: Stream, k: int) -> Stream:
    """Every time after request k's response moved two hours later."""
    cut = st.r_pos[k + 1]
    last = max([t for t in st.ts[:cut] if t >= 0] + [st.r_ts[k]])
    ts = [t + STRETCH_MS if i >= cut and t > last else t for i, t in enumerate(st.ts)]
    r_ts = [t + STRETCH_MS if i > k and t >= 0 else t for i, t in enumerate(st.r_ts)]
    return replace(st, ts=ts, r_ts=r_ts)


def _rows(st, vocab, opts, k):
    _, det = _stream_figs(st, vocab, opts, detail=True)
    return [tuple(det[c][i] for c in det) for i in range(k + 1)]


@pytest.fixture(scope="module")
def entire(tmp_path_factory):
    return shared_dataset(tmp_path_factory, "entire-cli")


@pytest.mark.parametrize("name", [n for n in SCENARIOS])
def test_the_future_changes_no_figure_of_the_past(entire, name):
    opts = SCENARIOS[name].options(model_only(ReplayOptions()), detail=True)
    checked = 0
    for s in entire.sessions:
        for st in s.streams:
            if st.n_requests < 4:
                continue
            k = st.n_requests // 2
            whole = _rows(st, entire.vocab, opts, k)
            assert _rows(dropped_after(st, k), entire.vocab, opts, k) == whole, (name, s.session_key, st.stream_id)
            assert _rows(stretched_after(st, k), entire.vocab, opts, k) == whole, (name, s.session_key, st.stream_id)
            checked += 1
    assert checked > 100


def test_the_turn_end_write_before_a_long_gap_keeps_the_ttl_known_then():
    """The online rule switches to 1-hour writes at the first request after a gap over 5 minutes.
    The turn-end write before that gap was made when the answer ended, before anyone knew the gap
    would be long: it has the 5-minute TTL, so the request after the 10-minute gap finds it
    expired and reads only the system prefix (it used to take the next request's 1-hour TTL and
    hit)."""
    from trace_builder import TraceBuilder

    from replay.engine.loop import SESSION_FIGURES, replay_stream
    from replay.model.cache import CacheConfig
    from replay.model.whatif import ClientCache, WhatIf
    from replay.policies.base import Policy

    b = TraceBuilder(overhead=10_000, models=("claude-sonnet-4-5",), version="2.1.30")
    b.block(2000, "user_text", turn=1, ts=0)
    b.request(ts=1000, read=0, w5=12_000, has_usage=True)
    b.block(400, "assistant_text", ts=5000)
    b.block(500, "user_text", turn=2, ts=5000 + 600_000)  # the user comes back after 10 minutes
    b.request(ts=5000 + 601_000, read=10_000, w5=2900, has_usage=True)
    st = b.stream()
    opts = ReplayOptions(CacheConfig(observed_evictions="none", ttl="5m"), detail=True,
                         whatif=WhatIf(client=ClientCache(ttl_rule="first_idle")))
    figs = {f: 0.0 for f in SESSION_FIGURES}
    det = {c: [] for c in ("stream_id", "req_idx", "input_total", "uncached", "cache_read", "cache_write_5m",
                           "cache_write_1h", "output", "cost", "bust_tokens")}
    replay_stream(st, b.vocab, Policy(), opts, figs, det)
    assert det["cache_read"][1] < 12_400  # not the 12,400-token conversation up to the answer
