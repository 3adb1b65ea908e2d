"""A sweep worker raises loky's memory-leak limit by what it holds on purpose, never lowers it."""

from __future__ import annotations

from joblib.externals.loky import process_executor as pe

from replay.experiments import loky_memory


def test_the_limit_grows_by_what_the_worker_holds_and_never_shrinks(monkeypatch):
    monkeypatch.setattr(pe, "_MAX_MEMORY_LEAK_SIZE", int(3e8))
    loky_memory.tolerate_in_loky_worker(2_000_000_000)
    assert pe._MAX_MEMORY_LEAK_SIZE == int(3e8) + 2_000_000_000
    loky_memory.tolerate_in_loky_worker(10)  # a smaller dataset later keeps the larger limit
    assert pe._MAX_MEMORY_LEAK_SIZE == int(3e8) + 2_000_000_000


def test_rss_reads_this_process():
    assert loky_memory.rss() > 10_000_000  # a Python process with numpy loaded holds more than 10 MB
