"""`ctxreplay breaks`: hand-computed breaks of each cause (docs/replay-model.md, "Cache breaks"),
the CLI's JSON, and the named share on the shared corpus.

Every stream below starts the same way (overhead 10,000 tokens; prices of model "m" in $/Mtok:
input 3, 5m write 3.75, 1h write 6, read 0.3; model "m2": 15, 18.75, 30, 1.5):

    block 0 user_text 2,000 (t=0)            request 0 (t=1 s): read 10,000, write 2,000
    block 1 tool_use 100, block 2 tool_result 3,000 (t=2, 3 s)
                                             request 1 (t=4 s): read 12,000, write 3,100
so 15,100 tokens are cached before request 2, whose variants are the causes. A re-billed token
written at 5m costs 3.75 - 0.3 = $3.45/Mtok more than a read; at 1h, $5.70.
"""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from replay import store
from replay.cli import main
from replay.experiments.breaks import CAUSES, breaks, breaks_summary, find_breaks, rebilled, summarize
from replay.model.arrays import Dataset, Session
from replay.model.costs import PriceTable
from replay.store.load import ingest

from conftest import shared_logs
from trace_builder import TraceBuilder

S = 1000
PRICES = PriceTable(overrides={
    "m": {"input": 3, "cache_write_5m": 3.75, "cache_write_1h": 6, "cache_read": 0.3, "output": 15},
    "m2": {"input": 15, "cache_write_5m": 18.75, "cache_write_1h": 30, "cache_read": 1.5, "output": 75},
})
SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "sample" / "logs"


def _start(key: str, ttl: str = "w5") -> TraceBuilder:
    b = TraceBuilder(overhead=10_000, models=("m", "m2"), session_key=key)
    b.block(2000, "user_text", turn=1, ts=0)
    b.request(ts=1 * S, read=10_000, has_usage=True, **{ttl: 2000})
    b.tool_call("Read", 3000, use_tokens=100, ts=3 * S)
    b.request(ts=4 * S, read=12_000, has_usage=True, **{ttl: 3100})
    return b


def _new_turn(b: TraceBuilder, user_at: int) -> None:
    """The response ends in assistant text at 5 s (the turn-end request caches up to it: 15,500
    tokens), the user writes 500 tokens at ``user_at``; the next request's input is 16,000."""
    b.block(400, "assistant_text", ts=5 * S)
    b.block(500, "user_text", turn=2, ts=user_at)


def _tool_loop(b: TraceBuilder) -> None:
    """Another tool call (100 + 1,000 tokens at 5-6 s): the next request's input is 16,200."""
    b.tool_call("Read", 1000, use_tokens=100, ts=6 * S)


def _streams() -> dict[str, TraceBuilder]:
    out = {}
    b = out["ttl_5m"] = _start("ttl_5m")
    _new_turn(b, user_at=405 * S)  # idle 405 - 5 = 400 s > 300 s
    b.request(ts=406 * S, read=10_000, w5=6000, has_usage=True)
    b = out["ttl_1h"] = _start("ttl_1h", "w1h")
    _new_turn(b, user_at=7205 * S)  # idle 2 h > 1 h
    b.request(ts=7206 * S, read=10_000, w1h=6000, has_usage=True)
    b = out["model_switch"] = _start("model_switch")
    _tool_loop(b)
    b.request(ts=7 * S, model=1, read=0, w5=16_200, has_usage=True)
    b = out["compaction"] = _start("compaction")
    b.compact(1500)  # input 10,000 + 1,500
    b.request(ts=7 * S, read=10_000, w5=1500, has_usage=True)
    b = out["system_changed"] = _start("system_changed")
    _tool_loop(b)
    b.request(ts=7 * S, read=0, w5=16_200, has_usage=True)
    b = out["content_removed"] = _start("content_removed")
    _tool_loop(b)  # the blocks say 16,200; the provider saw 14,200 (residual -2,000, set below)
    b.request(ts=7 * S, read=12_000, w5=2200, has_usage=True)
    b = out["first_message_rewritten"] = _start("first_message_rewritten")
    _new_turn(b, user_at=65 * S)  # idle 60 s
    b.request(ts=66 * S, read=10_000, w5=6000, has_usage=True)
    b = out["history_rewritten"] = _start("history_rewritten")
    _new_turn(b, user_at=65 * S)
    b.request(ts=66 * S, read=12_000, w5=4000, has_usage=True)
    b = out["unexplained"] = _start("unexplained")
    _tool_loop(b)
    b.request(ts=7 * S, read=12_000, w5=4200, has_usage=True)
    return out


def _dataset(builders: dict[str, TraceBuilder]) -> Dataset:
    sessions = []
    for key, b in builders.items():
        st = b.stream()
        if key == "content_removed":
            st.r_residual = [0.0, 0.0, -2000.0]
        sessions.append(Session(key, "claude-code", [st]))
    return Dataset("test", sessions, next(iter(builders.values())).vocab)


# cause: (re-billed tokens, dollars, p, block kind at p), worked out from the docstring's streams
EXPECTED = {
    # cached 15,500 (turn-end request); input 16,000; read 10,000 -> 5,500 tokens written at 5m
    "ttl_5m": (5500, 5500 * 3.45e-6, 0, "user_text"),
    "ttl_1h": (5500, 5500 * 5.70e-6, 0, "user_text"),
    # cached 15,100; read 0 on model m2: 15,100 written at 18.75 instead of read at 1.5
    "model_switch": (15_100, 15_100 * 17.25e-6, 0, "user_text"),
    # new partition: input 11,500, read 10,000 -> min(15,100, 11,500) - 10,000 = 1,500
    "compaction": (1500, 1500 * 3.45e-6, 3, "compact_summary"),
    "system_changed": (15_100, 15_100 * 3.45e-6, 0, "user_text"),
    # input 14,200, read 12,000 -> 2,200; the read covers 12,000 + 64 - 10,000 + 2,000 = 4,064 block
    # tokens: blocks 0-1 (2,100) fit, block 2 (to 5,100) does not -> p = 2
    "content_removed": (2200, 2200 * 3.45e-6, 2, "tool_result"),
    "first_message_rewritten": (5500, 5500 * 3.45e-6, 0, "user_text"),
    # read 12,000 covers block 0 (2,000): p = 1, the tool_use; 15,500 - 12,000 = 3,500
    "history_rewritten": (3500, 3500 * 3.45e-6, 1, "tool_use"),
    "unexplained": (3100, 3100 * 3.45e-6, 1, "tool_use"),
}


def test_one_break_of_each_cause_by_hand():
    rows, counts = find_breaks(_dataset(_streams()), PRICES)
    assert counts == {"requests": 27, "not_classified": 0, "reasons_not_breaks": 0,
                      "reasons_not_breaks_by_reason": {}}
    got = {r["session"]: r for r in rows}
    assert set(got) == set(EXPECTED) and len(rows) == len(EXPECTED)  # requests 0-1 never break
    for cause, (tokens, cost, p, kind) in EXPECTED.items():
        r = got[cause]
        assert r["cause"] == cause, (cause, r)
        assert r["request"] == 2 and r["stream"] == 0
        assert r["tokens"] == tokens, cause
        assert r["cost"] == pytest.approx(cost, abs=1e-9), cause
        assert (r["p"], r["p_kind"]) == (p, kind), cause
    assert got["ttl_5m"]["idle_s"] == 400.0 and got["ttl_5m"]["ttl_s"] == 300
    assert got["ttl_1h"]["ttl_s"] == 3600
    assert got["first_message_rewritten"]["cause_label"] == "first_message_rewritten (inferred)"
    assert got["first_message_rewritten"]["evidence"] == "inferred"
    assert got["ttl_5m"]["evidence"] == "direct" and got["unexplained"]["evidence"] == "none"
    assert got["ttl_5m"]["time"] == "1970-01-01T00:06:46Z"


def test_summary_by_cause_and_named_shares():
    rows, counts = find_breaks(_dataset(_streams()), PRICES)
    s = summarize(rows, counts, top=3)
    total = sum(t for t, *_ in EXPECTED.values())  # 57,000
    assert s["breaks"] == 9 and s["tokens"] == total == 57_000
    assert s["cost"] == pytest.approx(sum(c for _, c, *_ in EXPECTED.values()), abs=1e-6)
    by = {b["cause"]: b for b in s["by_cause"]}
    assert [b["cause"] for b in s["by_cause"]] == [c.name for c in CAUSES]
    assert by["model_switch"]["share"] == pytest.approx(15_100 / 57_000)
    # unexplained 3,100 -> named 53,900 / 57,000; inferred: system 15,100 + first 5,500 + history 3,500
    assert s["named_share"] == pytest.approx(53_900 / 57_000)
    assert s["named_share_without_first_message"] == pytest.approx((53_900 - 5_500) / 57_000)
    assert s["named_share_direct"] == pytest.approx((53_900 - 24_100) / 57_000)
    assert [x["session"] for x in s["top_sessions"]] == ["model_switch", "system_changed", "ttl_1h"]


def test_no_break_within_tolerance_and_idle_from_the_end_of_the_response():
    # a read 200 tokens short of the 15,100 cached is within max(256, 1%): not a break
    b = _start("within")
    _tool_loop(b)
    b.request(ts=7 * S, read=14_900, w5=1300, has_usage=True)
    # the previous response ends at 100 s (its last block), the user writes at 390 s: idle 290 s
    # < 300 s, although 386 s passed since the previous request was sent -> not a TTL expiry
    c = _start("idle")
    c.block(400, "assistant_text", ts=100 * S)
    c.block(500, "user_text", turn=2, ts=390 * S)
    c.request(ts=391 * S, read=10_000, w5=6000, has_usage=True)
    rows, _ = find_breaks(_dataset({"within": b, "idle": c}), PRICES)
    assert [(r["session"], r["cause"], r["idle_s"]) for r in rows] == [("idle", "first_message_rewritten", 290.0)]


def test_system_changed_when_the_read_falls_below_an_earlier_system_prefix_read():
    # request 0 read 8,000 < overhead 10,000 - 256: a read of the system prefix (tools + system
    # prompt); request 2 reads 6,000 within the TTL -> system_changed (not a first-message rewrite)
    b = TraceBuilder(overhead=10_000, models=("m",), session_key="s")
    b.block(2000, "user_text", turn=1, ts=0)
    b.request(ts=1 * S, read=8000, w5=4000, has_usage=True)
    b.tool_call("Read", 3000, use_tokens=100, ts=3 * S)
    b.request(ts=4 * S, read=12_000, w5=3100, has_usage=True)
    _new_turn(b, user_at=65 * S)
    b.request(ts=66 * S, read=6000, w5=10_000, has_usage=True)
    rows, _ = find_breaks(_dataset({"s": b}), PRICES)
    assert [(r["cause"], r["tokens"]) for r in rows] == [("system_changed", 15_500 - 6000)]


def test_rebilled_tokens_past_the_writes_are_priced_as_uncached_input():
    rates = PRICES.rates("m")
    # read 10,000, writes 500, uncached 1,000; 11,200 had been cached: 1,200 re-billed, 500 of them
    # written (3.75 - 0.3) and 700 sent uncached (3 - 0.3)
    tokens, cost = rebilled(rates, uncached=1000, w5=500, w1h=0, read=10_000, cached=11_200)
    assert tokens == 1200
    assert cost == pytest.approx((500 * 3.45 + 700 * 2.7) / 1e6)


def test_automatically_cached_models_are_not_classified():
    b = TraceBuilder(overhead=10_000, models=("gpt-5",), session_key="codex")
    b.block(2000, "user_text", turn=1, ts=0)
    b.request(ts=1 * S, uncached=12_000, has_usage=True)
    b.block(500, "user_text", turn=2, ts=2 * S)
    b.request(ts=3 * S, uncached=12_500, has_usage=True)
    rows, counts = find_breaks(Dataset("t", [Session("codex", "codex", [b.stream()])], b.vocab), PRICES)
    assert rows == [] and (counts["requests"], counts["not_classified"]) == (0, 2)


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("sample") / "s.duckdb"
    ingest([SAMPLE], db, dataset="sample", key_file=db.parent / "key")
    return db


def test_cli_json_text_and_session_filter(sample_db):
    r = CliRunner().invoke(main, ["breaks", "--db", str(sample_db), "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    rows, s = got["breaks"], got["summary"]
    assert rows and len(rows) == s["breaks"]
    assert {"session", "stream", "request", "time", "idle_s", "cause", "tokens", "cost", "p", "p_kind"} <= set(rows[0])
    assert sum(x["tokens"] for x in rows) == s["tokens"]
    assert {b["cause"] for b in s["by_cause"]} == {c.name for c in CAUSES}
    con = store.connect(sample_db, read_only=True)
    assert breaks_summary(con, "sample", prices=PriceTable())["tokens"] == s["tokens"]
    con.close()
    key = rows[-1]["session"]
    r = CliRunner().invoke(main, ["breaks", "--db", str(sample_db), "--session", key[:6], "--json", "--limit", "1"])
    one = json.loads(r.output)
    assert len(one["breaks"]) == 1 and {x["session"] for x in one["breaks"]} == {key}
    r = CliRunner().invoke(main, ["breaks", "--db", str(sample_db)])
    assert r.exit_code == 0 and "Breaks by cause" in r.output and "Breaks per session" in r.output
    r = CliRunner().invoke(main, ["breaks", "--db", str(sample_db), "--session", "zzzz"])
    assert r.exit_code == 1
    r = CliRunner().invoke(main, ["breaks", "--db", str(sample_db.parent / "missing.duckdb")])
    assert r.exit_code == 1


@pytest.mark.parametrize("corpus, named, direct", [
    # measured (2026-11-25, with the thinking-switch, resume (synthetic answer and SessionStart
    # hooks), task-turn and skill-turn rules): entire-cli 330 breaks, 20.7 M tokens, named 98.5%,
    # direct 94.2%; claude-code 72 breaks, 4.4 M tokens, named 96.6%, direct 64.8%
    ("entire-cli", 0.95, 0.93),
    ("claude-code", 0.92, 0.62),
])
def test_shared_corpus_named_share(tmp_path, corpus, named, direct):
    logs = shared_logs(corpus)
    db = tmp_path / "c.duckdb"
    ingest([logs], db, key_file=tmp_path / "key")
    r = CliRunner().invoke(main, ["breaks", "--db", str(db), "--json"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.output)["summary"]
    assert s["breaks"] > 50 and s["tokens"] > 1_000_000 and s["cost"] > 10
    assert s["named_share"] >= named, s["by_cause"]
    assert s["named_share_direct"] >= direct, s["by_cause"]
