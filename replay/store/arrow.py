"""Trace columns (Python lists) as Arrow arrays, assembled from their buffers.

The store hands DuckDB each batch as an Arrow table, which it scans without a copy. pyarrow's
``pa.array`` would build the same arrays, but its first call imports pandas (to tell pandas
objects apart): about 0.4 s of the writer's CPU in an ingest that never uses pandas. The
buffers are laid out here as Arrow defines them (validity and booleans as little-endian bit
maps, strings and lists as offsets into their values); `tests/test_store_arrow.py` checks them
against ``pa.array``.
"""

from __future__ import annotations

from array import array
from itertools import accumulate, chain

import numpy as np
import pyarrow as pa

_INT_CODES = {32: "i", 64: "q"}


def column(values: list, kind: str) -> pa.Array:
    """``values`` (None for a null) as an Arrow array of ``kind``: "int32", "int64", "string", "bool" or "int64[]"."""
    n = len(values)
    nulls = values.count(None)
    valid = None
    if nulls:
        mask = [v is not None for v in values]
        valid = pa.py_buffer(np.packbits(np.array(mask, dtype=bool), bitorder="little"))
        values = [v if ok else _EMPTY[kind] for v, ok in zip(values, mask)]
    if kind in ("int32", "int64"):
        bits = int(kind[3:])
        data = array(_INT_CODES[bits], values)
        return pa.Array.from_buffers(pa.int32() if bits == 32 else pa.int64(), n, [valid, pa.py_buffer(data)],
                                     null_count=nulls)
    if kind == "bool":
        data = np.packbits(np.array(values, dtype=bool), bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), n, [valid, pa.py_buffer(data)], null_count=nulls)
    if kind == "string":
        joined = "".join(values)
        if joined.isascii():  # keys, hashes, kinds: a character is a byte, one encode for all
            data, sizes = joined.encode("ascii"), map(len, values)
        else:
            encoded = [v.encode() for v in values]  # strict UTF-8, as pa.array: a lone surrogate raises
            data, sizes = b"".join(encoded), map(len, encoded)
        offsets = list(accumulate(sizes, initial=0))
        string, code = (pa.large_string(), "q") if offsets[-1] >= 2**31 else (pa.string(), "i")
        return pa.Array.from_buffers(string, n, [valid, pa.py_buffer(array(code, offsets)), pa.py_buffer(data)],
                                     null_count=nulls)
    if kind == "int64[]":
        offsets = array("i", accumulate(map(len, values), initial=0))
        items = array("q", chain.from_iterable(values))
        items = pa.Array.from_buffers(pa.int64(), len(items), [None, pa.py_buffer(items)])
        return pa.Array.from_buffers(pa.list_(pa.int64()), n, [valid, pa.py_buffer(offsets)], null_count=nulls,
                                     children=[items])
    raise ValueError(f"no Arrow column of kind {kind!r}")


_EMPTY = {"int32": 0, "int64": 0, "bool": False, "string": "", "int64[]": []}  # what a null's slot holds


def table(columns: dict[str, pa.Array]) -> pa.Table:
    """Arrays of equal length as a table, in their order."""
    return pa.Table.from_arrays(list(columns.values()), names=list(columns))

