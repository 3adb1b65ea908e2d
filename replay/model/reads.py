"""What the arrays keep of file reads and writes beyond the block columns: the keyed hashes of
a read's numbered lines and client previews (the ``read_lines`` table, schema 8), and each
stream's view of the writes its session's other streams made (a Task subagent's edits)."""

from __future__ import annotations

import warnings
from array import array
from typing import Any

from replay.ingest.trace import BLOCK_KINDS, TOOL_KINDS
from replay.store.db import has_column


def load_read_lines(con, where: str, params: dict[str, Any]) -> dict[tuple[str, int], tuple[dict, set]]:
    """(session, stream) -> (block position -> (first line, line hashes), preview positions).

    The hashes of a read are an ``array('q')`` (compared and sliced like a list): read through
    Arrow as one flat column, they load, pickle to sweep workers and unpickle there in a
    fraction of the time of Python int lists (the bench sweep's 8.9 M line hashes: 0.6 s
    against 2.4 s to load, 0.25 s against 1.6 s to unpickle in each worker)."""
    out: dict[tuple[str, int], tuple[dict, set]] = {}
    if not has_column(con, "read_lines", "line_hashes"):
        return out
    with warnings.catch_warnings():  # DuckDB 2 notes that this copies the rows once: cheap next to int lists
        warnings.simplefilter("ignore", UserWarning)
        tbl = con.execute(f"""SELECT r.session_key, r.stream_id, r.pos, r.first_line, r.line_hashes, r.preview
                              FROM read_lines r JOIN sessions s USING (session_key) WHERE {where}""",
                          params).to_arrow_table()
    if tbl.num_rows == 0:
        return out
    hashes = tbl.column("line_hashes").combine_chunks()
    flat = hashes.flatten().to_numpy(zero_copy_only=False).astype("=i8", copy=False)
    off = hashes.offsets.to_numpy()
    raw = flat.tobytes()
    cols = [tbl.column(c).to_pylist() for c in ("session_key", "stream_id", "pos", "first_line", "preview")]
    for k, (key, sid, pos, first, preview) in enumerate(zip(*cols)):
        lines, previews = out.setdefault((key, sid), ({}, set()))
        if preview:
            previews.add(pos)
        elif first is not None and off[k + 1] > off[k]:
            a = array("q")
            a.frombytes(raw[8 * off[k]:8 * off[k + 1]])
            lines[pos] = (first, a)
    return out


def share_writes(streams: list) -> None:
    """Give each stream of a session the timed writes of its other streams (``other_writes``)."""
    mutate, result = TOOL_KINDS.index("mutate"), BLOCK_KINDS.index("tool_result")
    writes = [[(ts, r) for ts, r, k, tk in zip(st.ts, st.resource, st.bkind, st.tool_kind)
               if k == result and tk == mutate and r >= 0] for st in streams]
    for j, st in enumerate(streams):
        st.other_writes = sorted(w for i, ws in enumerate(writes) if i != j for w in ws)
