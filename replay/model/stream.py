"""`Stream`: the per-stream block and request columns a replay reads, as plain Python lists.

`replay.model.arrays` loads them (and re-exports the class, which policies, the engine and
experiments import from there); `replay.model.prefixes` fills the borrowed system prefixes of
one. It sits below both, so neither imports the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Stream:
    session_key: str
    stream_id: int
    kind: str
    # blocks
    tokens: list[float]
    bpe: list[int]
    nbytes: list[int]
    bkind: list[int]
    tool: list[int]
    tool_kind: list[int]
    chash: list[int]
    resource: list[int]
    line_start: list[int]
    line_end: list[int]
    args: list[int]
    tool_use: list[int]
    is_error: list[bool]
    partition: list[int]
    user_turn: list[int]
    ts: list[int]
    # requests
    r_pos: list[int]
    r_partition: list[int]
    r_ts: list[int]
    r_model: list[int]
    r_uncached: list[int]
    r_w5: list[int]
    r_w1h: list[int]
    r_read: list[int]
    r_output: list[int]
    r_has_usage: list[bool]
    r_user_turn: list[int]
    overhead: dict[int, float]
    part_start: dict[int, int]
    r_residual: list[float] = field(default_factory=list)
    r_evict: list[int] = field(default_factory=list)
    # per request: the client version the log gives and the client event before it (or None)
    r_version: list[str | None] = field(default_factory=list)
    r_event: list[str | None] = field(default_factory=list)
    # per request: the provider's stated reason for a cache miss (``trace.MISS_REASONS``) and the
    # input tokens it says were missed, or None; read by breaks, validate and the what-ifs'
    # recorded estimator, never by the predictive model (they are its labels)
    r_miss: list[str | None] = field(default_factory=list)
    r_miss_tokens: list[int | None] = field(default_factory=list)
    # per model code, for a model whose first request here read nothing from cache: the system
    # prefix other streams of the dataset show for that model and client version
    # (:func:`shared_system_prefixes`; the engine's ``system_prefix = "dataset"``), and the one
    # the sessions that started earlier show (``system_prefix = "earlier"``)
    shared_system_prefix: dict[int, float] = field(default_factory=dict)
    prior_system_prefix: dict[int, float] = field(default_factory=dict)
    # ... where they show none for its client version: that of the nearest version they show
    # (``prefix_versions = "nearest"``)
    shared_system_prefix_near: dict[int, float] = field(default_factory=dict)
    prior_system_prefix_near: dict[int, float] = field(default_factory=dict)
    # read results with numbered lines: block position -> (first line number, keyed 64-bit hash
    # of each line), what ``policies.common.lines_equal`` compares; and the positions of client
    # previews of results too large to keep (never a full read). Empty for traces ingested before
    # schema 8 (ingesting the logs again fills them).
    lines: dict[int, tuple[int, list[int]]] = field(default_factory=dict)
    previews: frozenset[int] = frozenset()
    # writes of the session's other streams (a Task subagent's edits): (time, resource code) of
    # each mutating tool result, in time order; a stream's own writes are in its blocks
    other_writes: list[tuple[int, int]] = field(default_factory=list)
    anchored_requests: int = 0
    negative_deltas: int = 0
    bpe_ratio: float = 1.0

    @property
    def n_blocks(self) -> int:
        return len(self.tokens)

    @property
    def n_requests(self) -> int:
        return len(self.r_pos)
