"""bench/ingest_floor.py measures the real ingest with each parse reduced to its compiled work: the
reduced ingest must store exactly what the real one stores, or its time would be a floor of some
other job (a trace it left uncounted, a check it skipped)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

from tests.test_ingest_same import _names, _rows

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "datasets" / "sample" / "logs"


@pytest.fixture(scope="module")
def floor():
    spec = importlib.util.spec_from_file_location("ingest_floor", ROOT / "bench" / "ingest_floor.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    yield mod
    mod._PREP.clear()


@pytest.mark.parametrize("jobs", [1, 2])
def test_reduced_ingest_stores_what_the_real_one_stores(floor, tmp_path, jobs):
    from replay.ingest.keys import Keyring
    from replay.store import load

    master = os.urandom(32)
    keys = Keyring.for_dataset(master, "default")
    floor._PREP.clear()
    floor.prepare(SAMPLE, keys)
    assert floor._PREP and all(p[0].trace is None or p[0].trace.uncounted is not None for p in floor._PREP.values())
    real = load.ingest([SAMPLE], tmp_path / "real.duckdb", master_key=master, jobs=jobs)
    reduced = floor.reduced_ingest(SAMPLE, tmp_path / "reduced.duckdb", master, jobs)
    assert (reduced.files, reduced.blocks, reduced.requests) == (real.files, real.blocks, real.requests) \
        and real.blocks > 0
    names = _names(SAMPLE, keys)
    got, want = _rows(tmp_path / "reduced.duckdb", names), _rows(tmp_path / "real.duckdb", names)
    assert got == want
    assert sys.modules["replay.store.load"].parse_unit is not floor.compiled_only  # put back
