"""Pricing: fast mode (`speed: "fast"`) and one per-request pricing path for recorded cost."""

import shutil
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pytest

from replay import store
from replay.engine import ReplayOptions
from replay.experiments.validate import recorded_cost, validate
from replay.model.arrays import load_dataset
from replay.model.costs import FAST_MODE_RATES, PriceError, PriceTable, price_key, split_price_key
from replay.store.load import ingest

from conftest import shared_logs

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "sample" / "logs"


def test_price_key_round_trips():
    assert price_key("claude-opus-4-8") == price_key("claude-opus-4-8", "standard") == "claude-opus-4-8"
    assert split_price_key(price_key("claude-opus-4-8", "fast")) == ("claude-opus-4-8", True)
    assert split_price_key("claude-opus-4-8") == ("claude-opus-4-8", False)


def test_fast_rates_from_the_library_match_its_conditional_price():
    from genai_prices import Usage, calc_price

    t = PriceTable()
    r = t.rates(price_key("claude-opus-4-8", "fast"))
    # Opus 4.8 fast mode: $10/$50 per MTok, 2x standard, cache multipliers on top
    assert (r.input, r.cache_write_5m, r.cache_write_1h, r.cache_read, r.output) == (10, 12.5, 20, 1, 50)
    std = t.rates("claude-opus-4-8")
    assert r.cost(1000, 20_000, 0, 50_000, 3000) == pytest.approx(2 * std.cost(1000, 20_000, 0, 50_000, 3000))
    when = datetime(2026, 11, 1, tzinfo=timezone.utc)
    usage = Usage(input_tokens=1000 + 20_000 + 50_000, cache_write_tokens=20_000, cache_read_tokens=50_000,
                  output_tokens=3000)
    lib = calc_price(usage, "claude-opus-4-8", provider_id="anthropic", genai_request_timestamp=when,
                     price_context={"speed": "fast"})
    assert r.cost(1000, 20_000, 0, 50_000, 3000) == pytest.approx(float(lib.total_price))


def test_fast_rates_the_library_lacks_are_a_documented_override():
    t = PriceTable()
    for model in ("claude-opus-4-6", "claude-opus-4-7"):
        r = t.rates(price_key(model, "fast"))
        # $30/$150 per MTok (6x); 5m write 1.25x, 1h write 2x, read 0.1x of the fast input rate
        assert (r.input, r.cache_write_5m, r.cache_write_1h, r.cache_read, r.output) == (30, 37.5, 60, 3, 150)
        assert "code.claude.com/docs/en/fast-mode" in r.source
        assert r.min_cacheable == t.rates(model).min_cacheable == 4096
    # hand-computed: 1,000 uncached, 10,000 5m writes, 2,000 1h writes, 100,000 reads, 500 output
    assert t.rates(price_key("claude-opus-4-6", "fast")).cost(1000, 10_000, 2000, 100_000, 500) == pytest.approx(
        (1000 * 30 + 10_000 * 37.5 + 2000 * 60 + 100_000 * 3 + 500 * 150) / 1e6)
    assert set(FAST_MODE_RATES) >= {"claude-opus-4-6", "claude-opus-4-7"}


def test_fast_request_of_a_model_without_fast_price_is_a_clear_error(tmp_path):
    with pytest.raises(PriceError, match=r'\[models\."claude-sonnet-4-5"\.fast\]'):
        PriceTable().rates(price_key("claude-sonnet-4-5", "fast"))
    f = tmp_path / "p.toml"
    f.write_text('[models."claude-sonnet-4-5".fast]\ninput = 18\ncache_write_5m = 22.5\ncache_write_1h = 36\n'
                 'cache_read = 1.8\noutput = 90\n')
    t = PriceTable.from_toml(f)
    assert t.rates(price_key("claude-sonnet-4-5", "fast")).cost(1e6, 0, 0, 0, 1e6) == pytest.approx(108.0)
    # the standard rates still come from the library (the file only adds the fast table)
    assert t.rates("claude-sonnet-4-5").input == PriceTable().rates("claude-sonnet-4-5").input
    f.write_text('[models."claude-sonnet-4-5".fast]\ninput = 18\n')
    with pytest.raises(PriceError, match=r"models\.claude-sonnet-4-5\.fast"):
        PriceTable.from_toml(f)


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("sample-pricing") / "s.duckdb"
    ingest([SAMPLE], db, dataset="sample", key_file=db.parent / "key")
    return db


def _with_speed(src: Path, dst: Path, session_key: str | None) -> Path:
    """A copy of the database whose requests say `speed` 'fast' for every claude-opus-4-6
    request of ``session_key`` (what the Claude Code reader stores from the usage's "speed")."""
    shutil.copy(src, dst)
    con = duckdb.connect(str(dst))
    con.execute("UPDATE requests SET speed = 'standard' WHERE has_usage")
    if session_key is not None:
        con.execute("UPDATE requests SET speed = 'fast' WHERE session_key = ? AND model = 'claude-opus-4-6'",
                    [session_key])
    con.close()
    return dst


def test_fast_requests_are_priced_at_fast_rates_recorded_and_simulated(sample_db, tmp_path):
    con = store.connect(sample_db, read_only=True)
    key = con.execute("SELECT session_key FROM sessions ORDER BY 1 LIMIT 1").fetchone()[0]
    rows = con.execute(
        """SELECT model, input_tokens, cache_write_5m, cache_write_1h, cache_read, output_tokens FROM requests
           WHERE session_key = ? AND has_usage""", [key]).fetchall()
    base = validate(con, "sample", ReplayOptions())
    con.close()
    con = store.connect(_with_speed(sample_db, tmp_path / "fast.duckdb", key), read_only=True)
    ds = load_dataset(con, "sample")
    fast = validate(con, "sample", ReplayOptions())
    rec = recorded_cost(con, "sample", PriceTable())
    assert recorded_cost(ds, "sample", PriceTable())["cost"] == pytest.approx(rec["cost"])
    con.close()
    assert "claude-opus-4-6 (fast)" in ds.vocab.models
    # recorded cost by hand: Opus 4.6 fast at $30 / 37.5 / 60 / 3 / 150, Haiku at the library's rates
    std = PriceTable()
    hand = 0.0
    for model, u, w5, w1h, rd, o in rows:
        if model == "claude-opus-4-6":
            hand += (u * 30 + w5 * 37.5 + w1h * 60 + rd * 3 + o * 150) / 1e6
        else:
            hand += std.rates(model).cost(u, w5, w1h, rd, o)
    s_fast = {s["session_id"]: s for s in fast["sessions"]}
    s_base = {s["session_id"]: s for s in base["sessions"]}
    assert s_fast[key]["recorded"]["cost"] == pytest.approx(hand)
    assert s_fast[key]["recorded"]["cost"] > 3 * s_base[key]["recorded"]["cost"]
    # the replay of the same session: same reads and writes, its Opus requests at 6x the rates
    assert s_fast[key]["simulated"]["cache_read"] == pytest.approx(s_base[key]["simulated"]["cache_read"])
    assert s_fast[key]["simulated"]["cache_write"] == pytest.approx(s_base[key]["simulated"]["cache_write"])
    assert s_fast[key]["simulated"]["cost"] > 3 * s_base[key]["simulated"]["cost"]
    # the other sessions are untouched
    for k, s in s_base.items():
        if k != key:
            assert s_fast[k]["recorded"]["cost"] == pytest.approx(s["recorded"]["cost"])
            assert s_fast[k]["simulated"]["cost"] == pytest.approx(s["simulated"]["cost"])


def test_recorded_cost_without_a_speed_column_and_with_standard_speed_agree(sample_db, tmp_path):
    con = store.connect(sample_db, read_only=True)
    a = recorded_cost(con, "sample", PriceTable())
    con.close()
    con = store.connect(_with_speed(sample_db, tmp_path / "std.duckdb", None), read_only=True)
    b = recorded_cost(con, "sample", PriceTable())
    con.close()
    assert a["cost"] == pytest.approx(b["cost"]) and a["requests"] == b["requests"] and a["sessions"] == 6


def test_recorded_cost_prices_each_request_on_codex_logs(tmp_path):
    """One pricing path: the function's recorded cost is validate's, request by request (long-context
    tiers apply only to the requests above the threshold, not to summed usage)."""
    logs = shared_logs("codex")
    db = tmp_path / "cx.duckdb"
    ingest([logs], db, key_file=tmp_path / "key")
    con = store.connect(db, read_only=True)
    prices = PriceTable()
    rec = recorded_cost(con, "default", prices)
    rep = validate(con, "default", ReplayOptions(prices=prices))
    ds = load_dataset(con, "default")
    summed = con.execute(
        """SELECT model, sum(input_tokens), sum(cache_write_5m), sum(cache_write_1h), sum(cache_read),
                  sum(output_tokens) FROM requests WHERE has_usage GROUP BY model""").fetchall()
    con.close()
    o = rep["overall"]
    assert rec["cost"] == pytest.approx(o["recorded"]["cost"], rel=1e-12)
    assert rec["cost"] == pytest.approx(recorded_cost(ds, "default", prices)["cost"], rel=1e-12)
    assert rec["input_total"] == o["recorded"]["input_total"] and rec["cache_read"] == o["recorded"]["cache_read"]
    assert rec["sessions"] == o["sessions"] == 5
    assert rec["cost"] == pytest.approx(95.87, abs=0.01)
    # pricing summed usage per model would put every token in the long-context tier
    summed_cost = sum(prices.rates(m).cost(*vals) for m, *vals in summed)
    assert summed_cost > 1.5 * rec["cost"]
