"""Compact per-stream arrays loaded once from the DuckDB trace, with anchored token counts.

Replay never touches JSON or table rows in its loop: a dataset is loaded with one query
per table, strings are factorized to integer codes, and each stream becomes a set of
plain Python lists (fast to index) that every policy and configuration reuses.

Token anchoring: the log records each request's input total T_k = uncached + cache writes
+ cache reads. Between two requests of a stream in one compaction partition, the context
grew by exactly the blocks appended in between, so those blocks must sum to T_k - T_{k-1}.
Their BPE counts (o200k, not the provider's tokenizer) are scaled proportionally to that
delta. The per-stream overhead (system prompt + tool definitions) is what the first request
holds beyond its blocks. Where a log has no usage, or a delta is negative (the provider
dropped something we cannot see), BPE counts scaled by the stream's median ratio are used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Collection

import numpy as np
import pandas as pd

from replay.ingest.trace import BLOCK_KINDS, TOOL_KINDS
from replay.model.costs import price_key
from replay.model.prefixes import _assign_shared_prefix, _first_warm_reads, _modes, _prior_modes
from replay.model.prefixes import shared_system_prefixes  # noqa: F401  (part of this module's API)
from replay.model.reads import load_read_lines, share_writes
from replay.model.stream import Stream  # also imported from here by policies, engine and experiments
from replay.store.db import has_column

KIND_CODE = {k: i for i, k in enumerate(BLOCK_KINDS)}
TOOL_KIND_CODE = {k: i for i, k in enumerate(TOOL_KINDS)}
K_TOOL_RESULT = KIND_CODE["tool_result"]
K_TOOL_USE = KIND_CODE["tool_use"]
K_THINKING = KIND_CODE["thinking"]
K_ATTACHMENT = KIND_CODE["attachment"]
K_COMPACT_SUMMARY = KIND_CODE["compact_summary"]


@dataclass
class Vocab:
    """Dataset-wide string tables behind the integer codes."""

    tool_names: list[str] = field(default_factory=list)
    resources: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)

    def tool_code(self, name: str) -> int:
        try:
            return self.tool_names.index(name)
        except ValueError:
            return -2  # matches nothing


class _Totals:
    """``n_blocks`` and ``n_requests`` summed over the parts (the attribute ``_PARTS`` names)."""

    _PARTS: ClassVar[str]

    @property
    def n_blocks(self) -> int:
        return sum(p.n_blocks for p in getattr(self, self._PARTS))

    @property
    def n_requests(self) -> int:
        return sum(p.n_requests for p in getattr(self, self._PARTS))


@dataclass
class Session(_Totals):
    _PARTS: ClassVar[str] = "streams"
    session_key: str
    agent: str
    streams: list[Stream]


@dataclass
class Dataset(_Totals):
    _PARTS: ClassVar[str] = "sessions"
    name: str
    sessions: list[Session]
    vocab: Vocab


def request_column(con, name: str, sql_type: str = "VARCHAR") -> str:
    """SQL for a request column added by a later migration (``speed``, ``client_version``,
    ``client_event``, ``miss_reason``, ``miss_tokens``), or NULL where the database predates it
    (opened read-only)."""
    return f"r.{name}" if has_column(con, "requests", name) else f"NULL::{sql_type}"


def speed_column(con) -> str:
    """SQL for the requests' ``speed`` (the usage's ``"speed"``: "fast" or "standard"), or NULL
    where the trace does not store it."""
    return request_column(con, "speed")


def _codes(series: pd.Series) -> tuple[np.ndarray, list[str]]:
    # sorted: a code must not depend on the order sessions load in (their keys are keyed hashes
    # of where the logs lie), since per-model figures are added in code order and float sums
    # in another order differ in the last bit
    codes, uniques = pd.factorize(series, use_na_sentinel=True, sort=True)
    return codes.astype(np.int64), [str(u) for u in uniques]


def load_dataset(con, dataset: str, *, anchor: bool = True, session_keys: list[str] | None = None,
                 prefix_from: Collection[str] | None = None) -> Dataset:
    """Load a dataset's trace into per-stream arrays (one query per table).

    ``prefix_from``: the sessions whose first warm reads the dataset-wide system prefix
    (``system_prefix = "dataset"``) is derived from (default: every session of the dataset);
    ``bench/fidelity_cv.py`` derives it on the folds it then does not score."""
    where = "s.dataset = $ds"
    params: dict[str, Any] = {"ds": dataset}
    if session_keys is not None:
        where += " AND s.session_key IN (SELECT unnest($keys))"
        params["keys"] = list(session_keys)
    sess = con.execute(f"SELECT session_key, agent FROM sessions s WHERE {where} ORDER BY session_key", params).df()
    streams = con.execute(
        f"SELECT st.session_key, st.stream_id, st.kind FROM streams st JOIN sessions s USING (session_key) "
        f"WHERE {where} ORDER BY 1, 2", params).df()
    blocks = con.execute(
        f"""SELECT b.session_key, b.stream_id, b.pos, b.partition, b.user_turn, coalesce(b.ts, -1) AS ts, b.kind,
                   b.tool_name, b.tool_kind, b.tool_use_key, b.content_hash, b.bytes, b.tokens, b.resource,
                   coalesce(b.line_start, -1) AS line_start, coalesce(b.line_end, -1) AS line_end, b.args_hash,
                   coalesce(b.is_error, false) AS is_error
            FROM blocks b JOIN sessions s USING (session_key) WHERE {where} ORDER BY 1, 2, 3""", params).df()
    reqs = con.execute(
        f"""SELECT r.session_key, r.stream_id, r.req_idx, r.position, r.partition, r.user_turn,
                   coalesce(r.ts, -1) AS ts, r.model, r.input_tokens, r.cache_write_5m, r.cache_write_1h,
                   r.cache_read, r.output_tokens, r.has_usage, {speed_column(con)} AS speed,
                   {request_column(con, "client_version")} AS client_version,
                   {request_column(con, "client_event")} AS client_event,
                   {request_column(con, "miss_reason")} AS miss_reason,
                   {request_column(con, "miss_tokens", "BIGINT")} AS miss_tokens
            FROM requests r JOIN sessions s USING (session_key) WHERE {where} ORDER BY 1, 2, 3""", params).df()
    # a request the log says ran in fast mode is priced (and cached) under its own key, "MODEL (fast)"
    fast = (reqs["speed"] == "fast") & reqs["model"].notna()
    if fast.any():
        reqs.loc[fast, "model"] = reqs.loc[fast, "model"].map(lambda m: price_key(m, "fast"))
    vocab = Vocab()
    tool_codes, vocab.tool_names = _codes(blocks["tool_name"])
    res_codes, vocab.resources = _codes(blocks["resource"])
    chash_codes, _ = _codes(blocks["content_hash"])
    args_codes, _ = _codes(blocks["args_hash"])
    tu_codes, _ = _codes(blocks["tool_use_key"])
    model_codes, vocab.models = _codes(reqs["model"])
    kind_codes = blocks["kind"].map(KIND_CODE).fillna(-1).astype(np.int64).to_numpy()
    tk_codes = blocks["tool_kind"].map(TOOL_KIND_CODE).fillna(-1).astype(np.int64).to_numpy()

    def spans(df: pd.DataFrame) -> dict[tuple[str, int], tuple[int, int]]:
        if df.empty:
            return {}
        keys = list(zip(df["session_key"].tolist(), df["stream_id"].tolist()))
        out: dict[tuple[str, int], tuple[int, int]] = {}
        start = 0
        for i in range(1, len(keys) + 1):
            if i == len(keys) or keys[i] != keys[start]:
                out[keys[start]] = (start, i)
                start = i
        return out

    bspan, rspan = spans(blocks), spans(reqs)
    bcols = {
        "tokens": blocks["tokens"].to_numpy(np.float64), "nbytes": blocks["bytes"].to_numpy(np.int64),
        "bkind": kind_codes, "tool": tool_codes, "tool_kind": tk_codes, "chash": chash_codes,
        "resource": res_codes, "line_start": blocks["line_start"].to_numpy(np.int64),
        "line_end": blocks["line_end"].to_numpy(np.int64), "args": args_codes, "tool_use": tu_codes,
        "is_error": blocks["is_error"].to_numpy(bool), "partition": blocks["partition"].to_numpy(np.int64),
        "user_turn": blocks["user_turn"].to_numpy(np.int64), "ts": blocks["ts"].to_numpy(np.int64),
    }
    rcols = {
        "r_pos": reqs["position"].to_numpy(np.int64), "r_partition": reqs["partition"].to_numpy(np.int64),
        "r_ts": reqs["ts"].to_numpy(np.int64), "r_model": model_codes,
        "r_uncached": reqs["input_tokens"].to_numpy(np.int64), "r_w5": reqs["cache_write_5m"].to_numpy(np.int64),
        "r_w1h": reqs["cache_write_1h"].to_numpy(np.int64), "r_read": reqs["cache_read"].to_numpy(np.int64),
        "r_output": reqs["output_tokens"].to_numpy(np.int64), "r_has_usage": reqs["has_usage"].to_numpy(bool),
        "r_user_turn": reqs["user_turn"].to_numpy(np.int64),
        "r_version": reqs["client_version"].astype(object).where(reqs["client_version"].notna(), None).to_numpy(),
        "r_event": reqs["client_event"].astype(object).where(reqs["client_event"].notna(), None).to_numpy(),
        "r_miss": reqs["miss_reason"].astype(object).where(reqs["miss_reason"].notna(), None).to_numpy(),
        "r_miss_tokens": reqs["miss_tokens"].astype(object).where(reqs["miss_tokens"].notna(), None).to_numpy(),
    }
    by_session: dict[str, list[Stream]] = {k: [] for k in sess["session_key"].tolist()}
    read_lines = load_read_lines(con, where, params)
    for key, sid, kind in streams.itertuples(index=False):
        b0, b1 = bspan.get((key, sid), (0, 0))
        r0, r1 = rspan.get((key, sid), (0, 0))
        b = {c: v[b0:b1] for c, v in bcols.items()}
        r = {c: v[r0:r1] for c, v in rcols.items()}
        st = _make_stream(key, int(sid), kind, b, r, anchor)
        st.lines, previews = read_lines.get((key, int(sid)), ({}, set()))
        st.previews = frozenset(previews)
        by_session[key].append(st)
    for sts in by_session.values():
        if len(sts) > 1:
            share_writes(sts)
    if not reqs.empty:
        rows = _first_warm_reads(con, dataset)
        allowed = None if prefix_from is None else set(prefix_from)
        shared = _modes(r[1:] for r in rows if allowed is None or r[0] in allowed)
        prior = _prior_modes(con, dataset, rows, by_session)
        for key, sts in by_session.items():
            for st in sts:
                _assign_shared_prefix(st, shared, vocab.models, st.shared_system_prefix,
                                      st.shared_system_prefix_near)
                _assign_shared_prefix(st, prior.get(key, {}), vocab.models, st.prior_system_prefix,
                                      st.prior_system_prefix_near)
    sessions = [Session(k, a, by_session[k]) for k, a in sess.itertuples(index=False)]
    return Dataset(dataset, sessions, vocab)


def _make_stream(key: str, sid: int, kind: str, b: dict[str, np.ndarray], r: dict[str, np.ndarray],
                 anchor: bool) -> Stream:
    bpe = b["tokens"].astype(np.float64)
    part = b["partition"]
    part_start: dict[int, int] = {}
    for i, p in enumerate(part.tolist()):
        part_start.setdefault(p, i)
    for p in r["r_partition"].tolist():
        part_start.setdefault(p, int(np.searchsorted(part, p)))
    if anchor:
        tokens, overhead, anchored, negative, ratio, residual = anchor_tokens(bpe, r, part_start)
    else:
        tokens, overhead, anchored, negative, ratio = bpe.copy(), raw_overheads(bpe, r, part_start), 0, 0, 1.0
        residual = np.zeros(len(r["r_pos"]))
    lists = {c: v.tolist() for c, v in b.items() if c != "tokens"}
    rl = {c: v.tolist() for c, v in r.items()}
    return Stream(
        session_key=key, stream_id=sid, kind=kind, tokens=tokens.tolist(), bpe=b["tokens"].astype(int).tolist(),
        **lists, **rl, overhead=overhead, part_start=part_start, anchored_requests=anchored,
        negative_deltas=negative, bpe_ratio=ratio, r_residual=residual.tolist(),
        r_evict=eviction_positions(tokens, overhead, r, part_start, residual).tolist(),
    )


# A recorded read this much shorter than the prefix at a position still counts as covering it
# (anchoring spreads tokens proportionally, so boundaries are approximate).
EVICT_TOLERANCE = 0.002


def eviction_positions(tokens: np.ndarray, overhead: dict[int, float], r: dict[str, np.ndarray],
                       part_start: dict[int, int], residual: np.ndarray) -> np.ndarray:
    """Per request, the last block position the recorded cache read covers (observed evictions).

    The log tells how much of each request's prefix the provider really had cached. Where
    that is less than an earlier request wrote and the TTL explains, the provider evicted
    or changed something we cannot see. Replaying that as an eviction at the same block
    position lets every policy face the same event. -1: even the system prefix was missed;
    a large number: no information (no usage).
    """
    n = len(r["r_pos"])
    out = np.full(n, 1 << 30, dtype=np.int64)
    if n == 0:
        return out
    csum = np.concatenate([[0.0], np.cumsum(tokens)])
    pos = r["r_pos"].astype(np.int64)
    part = r["r_partition"]
    read = r["r_read"].astype(np.float64)
    ov = np.array([overhead.get(int(m), 0.0) for m in r["r_model"]], dtype=np.float64)
    s0 = np.array([part_start.get(int(p), 0) for p in part], dtype=np.int64)
    tol = np.maximum(64.0, EVICT_TOLERANCE * read)
    # largest p in [s0, pos] with ov + sum(tokens[s0:p]) <= read + tol (csum is non-decreasing,
    # so one search over the whole stream, clipped to the partition, is the same search)
    limit = read + tol - ov - residual + csum[s0]
    p = np.searchsorted(csum, limit, side="right") - 1
    p = np.minimum(np.maximum(p, s0), pos)
    prev_pos = np.concatenate([[-1], pos[:-1]])
    prev_same = np.concatenate([[False], part[1:] == part[:-1]])
    has = r["r_has_usage"].astype(bool)
    sys_miss = has & (read + tol < ov)
    # a read that covers everything earlier requests wrote: nothing to evict
    evict = has & ~sys_miss & ~(prev_same & (p >= prev_pos))
    out[evict] = p[evict]
    out[sys_miss] = -1
    return out


def raw_overheads(bpe: np.ndarray, r: dict[str, np.ndarray], part_start: dict[int, int]) -> dict[int, float]:
    """Overhead per model from its first request with usage, blocks at raw BPE (the unanchored model)."""
    out: dict[int, float] = {}
    for k in range(len(r["r_pos"])):
        m = int(r["r_model"][k])
        if r["r_has_usage"][k] and m not in out:
            s0 = part_start.get(int(r["r_partition"][k]), 0)
            t = float(r["r_uncached"][k] + r["r_w5"][k] + r["r_w1h"][k] + r["r_read"][k])
            out[m] = max(0.0, t - float(bpe[s0:r["r_pos"][k]].sum()))
    return out


def anchor_tokens(bpe: np.ndarray, r: dict[str, np.ndarray], part_start: dict[int, int]
                  ) -> tuple[np.ndarray, dict[int, float], int, int, float, np.ndarray]:
    """(anchored block tokens, overhead per model, requests anchored, negative deltas, BPE ratio, residuals).

    Blocks are fixed left to right: at each request with usage, the blocks not yet fixed
    in its partition are scaled so that overhead(model) + blocks = recorded input total.
    The overhead of a model (system prompt and tools differ between models) is inferred at
    its first request, where the unfixed blocks keep their ratio-scaled BPE size.
    """
    total_arr = (r["r_uncached"] + r["r_w5"] + r["r_w1h"] + r["r_read"]).astype(np.float64)
    csum_arr = np.concatenate([[0.0], np.cumsum(bpe)])
    # plain Python lists: this loop runs once per request of every stream of a dataset
    pos = r["r_pos"].tolist()
    parts = r["r_partition"].tolist()
    models = r["r_model"].tolist()
    has = r["r_has_usage"].tolist()
    total = total_arr.tolist()
    csum = csum_arr.tolist()
    n = len(pos)
    ratios = []
    for k in range(1, n):
        if has[k] and has[k - 1] and parts[k] == parts[k - 1] and models[k] == models[k - 1]:
            d = total[k] - total[k - 1]
            sb = csum[pos[k]] - csum[pos[k - 1]]
            if d > 0 and sb > 50:
                ratios.append(d / sb)
    ratio = float(np.median(ratios)) if ratios else 1.0
    out = bpe * ratio
    overhead: dict[int, float] = {}
    residual = np.zeros(n)
    anchored = negative = 0
    fixed_to = -1
    fixed_part = None
    fixed_sum = 0.0
    drop = 0.0  # tokens the provider stopped seeing, carried until the next compaction
    for k in range(n):
        p = parts[k]
        if fixed_part != p:
            fixed_part, fixed_to, fixed_sum, drop = p, part_start.get(p, 0), 0.0, 0.0
        if not has[k]:
            residual[k] = drop
            continue
        hi = pos[k]
        lo = fixed_to
        m = models[k]
        if hi < lo:
            residual[k] = drop
            continue
        # blocks not yet fixed still hold ratio x BPE
        ssum = csum[hi] - csum[lo]
        seg_sum = ssum * ratio
        if m not in overhead:
            overhead[m] = max(0.0, total[k] - fixed_sum - seg_sum - drop)
            fixed_to, fixed_sum = hi, fixed_sum + seg_sum
            residual[k] = drop
            continue
        target = total[k] - overhead[m] - fixed_sum - drop
        if target < 0 or (hi == lo and abs(target) > 0.5):
            # The provider saw less than the blocks say (or more with nothing appended):
            # something we cannot see changed. Carry the difference as a residual so the
            # baseline input matches, and count it.
            negative += 1
            drop += target - seg_sum
            fixed_to, fixed_sum = hi, fixed_sum + seg_sum
            residual[k] = drop
            continue
        if hi > lo:
            if ssum > 0:
                out[lo:hi] = bpe[lo:hi] * (target / ssum)
            else:
                out[lo:hi] = 0.0
                out[hi - 1] = target
            fixed_to, fixed_sum = hi, fixed_sum + target
        residual[k] = drop
        anchored += 1
    return out, overhead, anchored, negative, ratio, residual
