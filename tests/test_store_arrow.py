"""`replay.store.arrow` builds the arrays ``pa.array`` builds, without importing pandas."""

from __future__ import annotations

import subprocess
import sys

import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from replay.store import arrow

_TYPES = {"int32": pa.int32(), "int64": pa.int64(), "string": pa.string(), "bool": pa.bool_(),
          "int64[]": pa.list_(pa.int64())}
_VALUES = {
    "int32": st.integers(-2**31, 2**31 - 1),
    "int64": st.integers(-2**63, 2**63 - 1),
    "string": st.text(st.characters(exclude_categories=("Cs",))),  # no lone surrogates: not UTF-8
    "bool": st.booleans(),
    "int64[]": st.lists(st.integers(-2**63, 2**63 - 1), max_size=5),
}


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(_TYPES)).flatmap(
    lambda kind: st.tuples(st.just(kind), st.lists(st.one_of(st.none(), _VALUES[kind]), max_size=40))))
def test_columns_equal_pa_array(case):
    kind, values = case
    got = arrow.column(values, kind)
    want = pa.array(values, type=_TYPES[kind])
    got.validate(full=True)
    assert got.type == want.type and got.null_count == want.null_count
    assert got.equals(want) and got.to_pylist() == values


def test_long_columns_and_a_table():
    values = [None if i % 7 == 3 else i * 1_000_003 for i in range(10_001)]  # bit maps past a byte
    assert arrow.column(values, "int64").equals(pa.array(values, type=pa.int64()))
    t = arrow.table({"a": arrow.column([1, None], "int32"), "b": arrow.column(["x", "é"], "string")})
    assert t.column_names == ["a", "b"] and t.to_pylist() == [{"a": 1, "b": "x"}, {"a": None, "b": "é"}]
    with pytest.raises(UnicodeEncodeError):
        arrow.column(["\ud800"], "string")
    with pytest.raises(ValueError):
        arrow.column([1], "float")


def test_no_pandas():
    code = ("import sys; from replay.store import arrow; "
            "arrow.table({'a': arrow.column([1, None], 'int64'), 'b': arrow.column(['x', None], 'string'), "
            "'c': arrow.column([True, None], 'bool'), 'd': arrow.column([[1], None], 'int64[]')}); "
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
