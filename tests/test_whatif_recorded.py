"""The second what-if estimator: recorded requests re-priced with only the lever's events changed
(replay/experiments/whatif_recorded.py), by hand, on the shared corpora, and against the future.

The stream (model "m": input 3, 5m write 3.75, 1h write 6, read 0.3, output 15 $/Mtok):

    block 0 user 2,000 (t=0)          request 0 (t=1 s):  read 10,000 (warm), write 2,000 (5m)
    block 1-2 tool 100 + 3,000        request 1 (t=4 s):  read 12,000, write 3,100
    block 3 assistant text (t=5 s), block 4 user 500 at t = 5 s + idle
                                      request 2:          read 10,000, write 5,600 after an idle
                                                          gap over 5 minutes (an expiry), or a hit
"""

import pytest

from replay.experiments import whatif_recorded as wr
from replay.model.arrays import Dataset, Session
from replay.model.costs import PriceTable

from conftest import shared_dataset
from trace_builder import TraceBuilder

S = 1000
R = {"input": 3, "cache_write_5m": 3.75, "cache_write_1h": 6, "cache_read": 0.3, "output": 15}
PRICES = PriceTable(overrides={"m": R, "claude-sonnet-4-5": {**R, "cache_read": 0.1}})


def _stream(idle_s: float, expired: bool = True, reason=None, ttl="w5"):
    b = TraceBuilder(overhead=10_000, models=("m",), session_key=f"s{idle_s}", version="2.1.150")
    b.block(2000, "user_text", turn=1, ts=0)
    b.request(ts=1 * S, read=10_000, has_usage=True, output=100, **{ttl: 2000})
    b.tool_call("Read", 3000, use_tokens=100, ts=3 * S)
    b.request(ts=4 * S, read=12_000, has_usage=True, output=100, **{ttl: 3100})
    b.block(400, "assistant_text", ts=5 * S)
    b.block(500, "user_text", turn=2, ts=int(5 * S + idle_s * S))
    if expired:
        b.request(ts=int(6 * S + idle_s * S), read=10_000, has_usage=True, output=100, miss=reason, **{ttl: 6000})
    else:
        b.request(ts=int(6 * S + idle_s * S), read=15_100, has_usage=True, output=100, **{ttl: 900})
    return b


def _cost(u, out=100.0, w="5m"):
    """$ of [uncached, writes, read] with every write at ``w``."""
    return (u[0] * R["input"] + u[1] * R[f"cache_write_{w}"] + u[2] * R["cache_read"] + out * R["output"]) / 1e6


def _reprice(b, name):
    st = b.stream()
    return wr.reprice_stream(st, ["m"], PRICES, b.vocab.tool_names, name)


def test_recorded_is_the_bill_and_ttl_1h_bridges_an_expiry_it_covers():
    b = _stream(idle_s=600)  # 10 minutes: a 5m expiry
    rec = _reprice(b, None)["cost"]
    assert rec == pytest.approx(_cost([0, 2000, 10_000]) + _cost([0, 3100, 12_000]) + _cost([0, 6000, 10_000]))
    got = _reprice(b, "ttl_1h")["cost"]
    # 15,100 cached before request 2, read 10,000: 5,100 re-billed tokens become reads; every write at 1h
    assert got == pytest.approx(_cost([0, 2000, 10_000], w="1h") + _cost([0, 3100, 12_000], w="1h")
                                + _cost([0, 900, 15_100], w="1h"))


def test_ttl_5m_expires_a_hit_after_a_long_gap_down_to_the_warm_prefix():
    b = _stream(idle_s=1200, expired=False, ttl="w1h")  # a 1h entry read after 20 minutes
    got = _reprice(b, "ttl_5m")["cost"]
    # request 2 loses what it read beyond the stream's warm read (10,000): 5,100 written instead
    assert got == pytest.approx(_cost([0, 2000, 10_000]) + _cost([0, 3100, 12_000]) + _cost([0, 6000, 10_000]))
    assert _reprice(b, "ttl_1h")["cost"] == pytest.approx(_reprice(b, None)["cost"])  # nothing to change


def test_keepalive_pings_bridge_a_gap_they_cover_and_are_paid():
    b = _stream(idle_s=600)
    got = _reprice(b, "keepalive_15m")
    # 600 s idle: pings at 270 and 540 s (2 pings, each reading the 15,100 cached by request 1);
    # after the last request 3 more (270, 540, 810 s: the client cannot know the user is done),
    # each reading the 16,000 the log shows request 2 cached
    assert got["keepalive_pings"] == 2 + 3
    ping = (8 * R["input"] + 15_100 * R["cache_read"] + 1 * R["output"]) / 1e6
    tail = 3 * (8 * R["input"] + 16_000 * R["cache_read"] + 1 * R["output"]) / 1e6
    assert got["cost"] == pytest.approx(_cost([0, 2000, 10_000]) + _cost([0, 3100, 12_000])
                                        + _cost([0, 900, 15_100]) + 2 * ping + tail)
    far = _reprice(_stream(idle_s=3000), "keepalive_15m")  # 50 minutes: 3 pings, then it expires anyway
    assert far["keepalive_pings"] == 3 + 3
    assert far["cost"] == pytest.approx(_reprice(_stream(idle_s=3000), "ttl_5m")["cost"] + 3 * ping + tail)
    # a subagent's stream ends when its task returns: no pings after it
    sub = wr.reprice_stream(b.stream(kind="subagent"), ["m"], PRICES, b.vocab.tool_names, "keepalive_15m")
    assert sub["keepalive_pings"] == 2


def test_the_provider_reason_marks_an_expiry_the_inferred_cause_would_not():
    """Idle 200 s under a 5m TTL is no expiry by the clock; the provider says the entry was gone."""
    plain = _reprice(_stream(idle_s=200), "ttl_1h")["cost"]
    said = _reprice(_stream(idle_s=200, reason="previous_message_not_found"), "ttl_1h")["cost"]
    assert said < plain  # bridged only where the provider names an expiry


def test_a_break_lever_removes_only_breaks_of_its_cause():
    b = _stream(idle_s=600)
    assert _reprice(b, "no_resume_rerender")["cost"] == pytest.approx(_reprice(b, None)["cost"])


def test_online_rule_switches_after_the_first_long_gap_and_never_reads_ahead():
    b = _stream(idle_s=600)
    got = _reprice(b, "online_1h_after_idle")["cost"]
    # requests 0-1 at 5m; the 10-minute gap meets a 5m entry (expired as recorded); request 2 writes 1h
    assert got == pytest.approx(_cost([0, 2000, 10_000]) + _cost([0, 3100, 12_000]) + _cost([0, 6000, 10_000], w="1h"))


def test_rates_lever_reprices_the_recorded_usage():
    b = _stream(idle_s=600)
    assert _reprice(b, "rates_sonnet_4_5")["cost"] < _reprice(b, None)["cost"]


@pytest.fixture(scope="module")
def entire(tmp_path_factory):
    return shared_dataset(tmp_path_factory, "entire-cli")


def _cut(ds: Dataset, k: int, stretch_ms: int | None) -> Dataset:
    """Each stream's requests after its k-th changed: their times moved ``stretch_ms`` later, or
    (None) dropped with the blocks after them."""
    from dataclasses import replace

    sessions = []
    for s in ds.sessions:
        streams = []
        for st in s.streams:
            if st.n_requests <= k + 1:
                streams.append(st)
                continue
            if stretch_ms is None:
                n, end = k + 1, st.r_pos[k + 1]
                cols = {c: getattr(st, c)[:n] for c in ("r_pos", "r_partition", "r_ts", "r_model", "r_uncached",
                                                       "r_w5", "r_w1h", "r_read", "r_output", "r_has_usage",
                                                       "r_user_turn", "r_version", "r_event", "r_miss",
                                                       "r_miss_tokens", "r_residual", "r_evict")}
                bcols = {c: getattr(st, c)[:end] for c in ("tokens", "bpe", "nbytes", "bkind", "tool", "tool_kind",
                                                          "chash", "resource", "line_start", "line_end", "args",
                                                          "tool_use", "is_error", "partition", "user_turn", "ts")}
                streams.append(replace(st, **cols, **bcols))
            else:
                cut = st.r_pos[k + 1]
                ts = [t + stretch_ms if i >= cut and t >= 0 else t for i, t in enumerate(st.ts)]
                r_ts = [t + stretch_ms if i > k and t >= 0 else t for i, t in enumerate(st.r_ts)]
                streams.append(replace(st, ts=ts, r_ts=r_ts))
        sessions.append(Session(s.session_key, s.agent, streams))
    return Dataset(ds.name, sessions, ds.vocab)


def _per_request(ds: Dataset, name: str, k: int) -> list[float]:
    """Each stream's cost up to and including request k under lever ``name``."""
    out = []
    for s in ds.sessions:
        for st in s.streams:
            if st.n_requests <= k + 1:
                continue
            short = _cut(Dataset(ds.name, [Session(s.session_key, s.agent, [st])], ds.vocab), k, None)
            out.append(wr.reprice_stream(short.sessions[0].streams[0], ds.vocab.models, PriceTable(),
                                         ds.vocab.tool_names, name)["cost"])
    return out


@pytest.mark.parametrize("name", list(wr.LEVERS))
def test_changing_the_future_changes_no_figure_of_the_past(entire, name):
    """Causality (issue 35, item 3): every stream's cost up to request k is the same when the
    gaps after k are stretched by two hours or everything after k is dropped."""
    k = 5
    before = _per_request(entire, name, k)
    stretched = _per_request(_cut(entire, k, 2 * 3_600_000), name, k)
    assert before == stretched
    # and the prefix replayed on its own equals the prefix of the whole stream's replay
    whole = []
    for s in entire.sessions:
        for st in s.streams:
            if st.n_requests > k + 1:
                full = _cut(Dataset(entire.name, [Session(s.session_key, s.agent, [st])], entire.vocab), k, None)
                whole.append(wr.reprice_stream(full.sessions[0].streams[0], entire.vocab.models, PriceTable(),
                                               entire.vocab.tool_names, name)["cost"])
    assert whole == before


def test_shared_corpus_recorded_baseline_is_the_bill(entire):
    from replay.experiments.validate import recorded_cost

    got = wr.reprice(entire, PriceTable(), ["ttl_1h"])
    rec = recorded_cost(entire, None, PriceTable())["per_session"]
    assert got["recorded"] == pytest.approx([rec[k]["cost"] for k in got["session_keys"]], rel=1e-12, abs=1e-12)
