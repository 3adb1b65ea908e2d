"""Trace columns (Python lists) as NumPy arrays that DuckDB scans in place.

The writer registers a batch as a dict of arrays (DuckDB's NumPy scan), which needs neither
pyarrow nor pandas: an ingest that imported pyarrow only to hand DuckDB its rows carried
about 40 MB more (`python -c "import duckdb, pyarrow"` against `import duckdb, numpy`, peak RSS)
and its import time. Numbers go as int32/int64/bool arrays; a column holding a null goes with
a validity array beside it (``<name>__valid``), and the insert selects ``CASE WHEN valid THEN
value END``, so no column's type is left to DuckDB's guess from Python objects. Strings and
lists of line hashes go as object arrays (None for a null), strings checked to be UTF-8 first
(a lone surrogate raises here, as a column that cannot be stored should).
"""

from __future__ import annotations

import numpy as np

_DTYPES = {"int32": np.int32, "int64": np.int64, "bool": np.bool_}


def _numbers(values: list, kind: str, dtype) -> np.ndarray:
    """``values`` as an array of ``dtype``; a number column holding anything but integers (a float
    NumPy would truncate, a string it would parse) raises, as the Arrow writer before did."""
    if kind == "bool":
        return np.array(values, dtype=dtype)
    got = np.array(values)  # one C pass infers the kind of every value
    if values and got.dtype.kind not in "iub":
        bad = next((v for v in values if not isinstance(v, int)), None)
        raise TypeError(f"a {kind} column holds {type(bad).__name__} {bad!r}" if bad is not None
                        else f"a {kind} column holds an integer out of range")
    return got.astype(dtype, copy=False)


def column(values: list, kind: str) -> dict[str, np.ndarray]:
    """``values`` (None for a null) as {"": array} or, for a number column holding a null,
    {"": array, "__valid": bool array}; ``kind``: "int32", "int64", "bool", "string" or "int64[]"."""
    n = len(values)
    if kind in _DTYPES:
        dtype = _DTYPES[kind]
        valid = None
        if None in values:
            valid = np.fromiter((v is not None for v in values), dtype=np.bool_, count=n)
            values = [0 if v is None else v for v in values]
        return {"": _numbers(values, kind, dtype), **({"__valid": valid} if valid is not None else {})}
    if kind == "string":
        text = [v for v in values if v is not None]
        if not "".join(text).isascii():
            for v in text:
                v.encode()  # strict UTF-8: a lone surrogate raises UnicodeEncodeError
        out = np.empty(n, dtype=object)
        out[:] = values
        return {"": out}
    if kind == "int64[]":
        out = np.empty(n, dtype=object)
        for i, v in enumerate(values):  # one by one: equal-length lists would make a 2-D array
            out[i] = v
        return {"": out}
    raise ValueError(f"no column of kind {kind!r}")


def frame(columns: dict[str, list], kinds: dict[str, str]) -> tuple[dict[str, np.ndarray], list[str]]:
    """(the arrays to register, one SELECT expression per column in order) for a batch of rows."""
    arrays: dict[str, np.ndarray] = {}
    exprs: list[str] = []
    for name, values in columns.items():
        got = column(values, kinds[name])
        arrays[name] = got[""]
        if "__valid" in got:
            arrays[name + "__valid"] = got["__valid"]
            exprs.append(f"CASE WHEN {name}__valid THEN {name} END")
        else:
            exprs.append(name)
    return arrays, exprs
