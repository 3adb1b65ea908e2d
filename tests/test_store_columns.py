"""`replay.store.columns`: trace columns reach DuckDB through its NumPy scan exactly, nulls,
extreme values and non-ASCII text included, and the ingest loads neither pyarrow nor pandas."""

from __future__ import annotations

import subprocess
import sys

import duckdb
import pytest
from hypothesis import given, settings, strategies as st

from replay.store import columns

_SQL = {"int32": "INTEGER", "int64": "BIGINT", "string": "VARCHAR", "bool": "BOOLEAN", "int64[]": "BIGINT[]"}
_VALUES = {
    "int32": st.integers(-2**31, 2**31 - 1),
    "int64": st.integers(-2**63, 2**63 - 1),
    "string": st.text(st.characters(exclude_categories=("Cs",))),  # no lone surrogates: not UTF-8
    "bool": st.booleans(),
    "int64[]": st.lists(st.integers(-2**63, 2**63 - 1), max_size=5),
}


def _through_duckdb(cols: dict[str, list], kinds: dict[str, str]) -> list[tuple]:
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t ({', '.join(f'{c} {_SQL[k]}' for c, k in kinds.items())})")
    arrays, exprs = columns.frame(cols, kinds)
    con.register("rows", arrays)
    con.execute(f"INSERT INTO t ({', '.join(cols)}) SELECT {', '.join(exprs)} FROM rows")
    return con.execute("SELECT * FROM t").fetchall()


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(_SQL)).flatmap(
    lambda kind: st.tuples(st.just(kind), st.lists(st.one_of(st.none(), _VALUES[kind]), min_size=1, max_size=40))))
def test_a_column_round_trips(case):
    kind, values = case
    got = [r[0] for r in _through_duckdb({"v": values}, {"v": kind})]
    assert got == values


def test_a_table_of_every_kind_with_nulls_past_a_byte():
    n = 10_001
    kinds = {"a": "int32", "b": "string", "c": "int64[]", "d": "bool", "e": "int64"}
    cols = {
        "a": [None if i % 5 == 0 else i for i in range(n)],
        "b": [None if i % 7 == 0 else f"v{i}é" * (i % 3) for i in range(n)],
        "c": [None if i % 11 == 0 else [i, -i] for i in range(n)],  # equal-length lists stay lists
        "d": [i % 2 == 0 for i in range(n)],
        "e": [2**40 + i for i in range(n)],
    }
    assert _through_duckdb(cols, kinds) == list(zip(*cols.values()))


def test_a_lone_surrogate_or_an_unknown_kind_is_refused():
    with pytest.raises(UnicodeEncodeError):
        columns.column(["ok", "\ud800"], "string")
    with pytest.raises(ValueError):
        columns.column([1], "float")


def test_an_ingest_loads_neither_pyarrow_nor_pandas(tmp_path):
    code = ("import sys; from pathlib import Path; from replay.cli import sample_logs_dir; "
            "from replay.store.load import ingest; "
            f"ingest([sample_logs_dir()], Path({str(tmp_path / 'x.duckdb')!r}), master_key=bytes(32)); "
            "print('pyarrow' in sys.modules, 'pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split()[-2:] == ["False", "False"]


def test_a_number_column_refuses_what_is_not_an_integer():
    for values in ([1, 1.7], [1, "5"], [None, 2.0]):
        with pytest.raises(TypeError):
            columns.column(values, "int64")
    with pytest.raises(TypeError, match="out of range"):
        columns.column([2**70], "int64")
    assert columns.column([True, 2], "int64")[""].tolist() == [1, 2]  # a bool is an int, as array('q') took it
