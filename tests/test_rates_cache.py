"""The on-disk cache of library rates: same Rates as a fresh resolution, no genai-prices import on a hit."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from replay.model import costs, rates_cache
from replay.model.costs import PriceTable


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXREPLAY_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CTXREPLAY_RATES_CACHE", raising=False)
    monkeypatch.setattr(costs, "_RESOLVED", {})
    rates_cache.reset()
    yield tmp_path
    rates_cache.reset()


def test_a_hit_returns_the_rates_a_fresh_resolution_gives(cache_dir):
    fresh = PriceTable()._resolve("claude-opus-4-6")
    first = PriceTable().rates("claude-opus-4-6")
    assert first == fresh
    stored = json.loads((cache_dir / "rates.json").read_text())
    assert len(stored) == 1 and list(stored.values())[0]["model"] == "claude-opus-4-6"
    costs._RESOLVED.clear()
    rates_cache.reset()
    assert PriceTable().rates("claude-opus-4-6") == fresh  # read back from the file
    # another date is another key
    PriceTable(price_date="2026-06-01").rates("claude-opus-4-6")
    assert len(json.loads((cache_dir / "rates.json").read_text())) == 2


def test_overrides_are_never_cached_and_a_damaged_file_is_a_miss(cache_dir, tmp_path):
    (cache_dir / "rates.json").write_text("{not json")
    t = PriceTable(overrides={"m-x": {"input": 1, "cache_write_5m": 2, "cache_write_1h": 3, "cache_read": 4,
                                      "output": 5}})
    assert t.rates("m-x").input == 1.0
    assert t.rates("claude-opus-4-6") == PriceTable()._resolve("claude-opus-4-6")
    stored = json.loads((cache_dir / "rates.json").read_text())
    assert [v["model"] for v in stored.values()] == ["claude-opus-4-6"]


def test_a_stale_entry_under_the_same_key_is_not_used_once_the_code_changes(cache_dir, monkeypatch):
    k = rates_cache.key(costs.library_version(), "claude-opus-4-6", costs.DEFAULT_PRICE_DATE)
    monkeypatch.setattr(rates_cache, "_code_hash", lambda: "other-code")
    assert rates_cache.key(costs.library_version(), "claude-opus-4-6", costs.DEFAULT_PRICE_DATE) != k
    assert rates_cache.key("genai-prices 0.0.1", "claude-opus-4-6", costs.DEFAULT_PRICE_DATE) != k


def test_turned_off_writes_nothing(cache_dir, monkeypatch):
    monkeypatch.setenv("CTXREPLAY_RATES_CACHE", "0")
    PriceTable().rates("claude-sonnet-4-6")
    assert not (cache_dir / "rates.json").exists()


def test_a_second_process_prices_without_importing_genai_prices(cache_dir):
    code = ("import sys; from replay.model.costs import PriceTable; "
            "r = PriceTable().rates('claude-opus-4-6'); print(r.input, 'genai_prices' in sys.modules)")
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert first[1] == "True" and second[1] == "False"
    assert first[0] == second[0]
