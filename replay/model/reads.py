"""What the arrays keep of file reads and writes beyond the block columns: the keyed hashes of
a read's numbered lines and client previews (the ``read_lines`` table, schema 8), and each
stream's view of the writes its session's other streams made (a Task subagent's edits)."""

from __future__ import annotations

from typing import Any

from replay.ingest.trace import BLOCK_KINDS, TOOL_KINDS
from replay.store.db import has_column


def load_read_lines(con, where: str, params: dict[str, Any]) -> dict[tuple[str, int], tuple[dict, set]]:
    """(session, stream) -> (block position -> (first line, line hashes), preview positions)."""
    out: dict[tuple[str, int], tuple[dict, set]] = {}
    if not has_column(con, "read_lines", "line_hashes"):
        return out
    rows = con.execute(f"""SELECT r.session_key, r.stream_id, r.pos, r.first_line, r.line_hashes, r.preview
                           FROM read_lines r JOIN sessions s USING (session_key) WHERE {where}""", params).fetchall()
    for key, sid, pos, first, hashes, preview in rows:
        lines, previews = out.setdefault((key, sid), ({}, set()))
        if preview:
            previews.add(pos)
        elif first is not None and hashes:
            lines[pos] = (first, hashes)
    return out


def share_writes(streams: list) -> None:
    """Give each stream of a session the timed writes of its other streams (``other_writes``)."""
    mutate, result = TOOL_KINDS.index("mutate"), BLOCK_KINDS.index("tool_result")
    writes = [[(ts, r) for ts, r, k, tk in zip(st.ts, st.resource, st.bkind, st.tool_kind)
               if k == result and tk == mutate and r >= 0] for st in streams]
    for j, st in enumerate(streams):
        st.other_writes = sorted(w for i, ws in enumerate(writes) if i != j for w in ws)
