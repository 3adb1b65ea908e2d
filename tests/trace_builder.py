"""Build replay arrays by hand (no DuckDB), for exact hand-computed engine and policy tests.

    b = TraceBuilder(overhead=10_000)
    b.block(500, kind="user_text", turn=1)
    b.request(ts=0)                               # input = overhead + 500
    b.block(2000, kind="tool_result", tool="Read", resource="/a/b.py", content="x")
    b.request(ts=60_000)
    session, vocab = b.build()
"""

from __future__ import annotations

from replay.model.arrays import KIND_CODE, TOOL_KIND_CODE, Dataset, Session, Stream, Vocab
from replay.ingest.trace import tool_kind

MIN = 60_000


class TraceBuilder:
    def __init__(self, overhead: float = 10_000, models=("claude-sonnet-4-5",), session_key="s1",
                 version: str | None = None):
        self.overhead = overhead
        self.version = version  # the client version of a request that names none
        self.models = list(models)
        self.session_key = session_key
        self.blocks: list[dict] = []
        self.requests: list[dict] = []
        self.partition = 0
        self.turn = 0
        self.part_start = {0: 0}
        self.shared_system_prefix: dict[int, float] = {}  # model code -> the dataset's system prefix
        self.prior_system_prefix: dict[int, float] = {}  # ... the one of the sessions that started earlier
        self.lines: dict[int, tuple[int, list[int]]] = {}  # read block -> (first line, line hashes)
        self.previews: set[int] = set()  # read blocks that are client previews
        self._codes: dict[str, dict] = {"tool": {}, "resource": {}, "chash": {}, "args": {}, "tool_use": {}}
        self.vocab = Vocab(tool_names=[], resources=[], models=self.models)

    def _code(self, table: str, value) -> int:
        if value is None:
            return -1
        codes = self._codes[table]
        if value not in codes:
            codes[value] = len(codes)
            if table == "tool":
                self.vocab.tool_names.append(value)
            if table == "resource":
                self.vocab.resources.append(value)
        return codes[value]

    def block(self, tokens: float, kind: str = "tool_result", *, tool: str | None = None, resource: str | None = None,
              content: str | None = None, lines: tuple[int, int] | None = None, args: str | None = None,
              tool_use: str | None = None, is_error: bool = False, turn: int | None = None, ts: int = -1,
              nbytes: int | None = None) -> int:
        if turn is not None:
            self.turn = turn
        pos = len(self.blocks)
        self.blocks.append(dict(
            tokens=float(tokens), bpe=int(tokens), nbytes=nbytes if nbytes is not None else int(tokens) * 4,
            bkind=KIND_CODE[kind], tool=self._code("tool", tool),
            tool_kind=TOOL_KIND_CODE.get(tool_kind(tool), -1) if tool else -1,
            chash=self._code("chash", content if content is not None else f"unique-{pos}"),
            resource=self._code("resource", resource), line_start=lines[0] if lines else -1,
            line_end=lines[1] if lines else -1, args=self._code("args", args), tool_use=self._code("tool_use", tool_use),
            is_error=is_error, partition=self.partition, user_turn=self.turn, ts=ts))
        return pos

    def tool_call(self, tool: str, result_tokens: float, *, resource=None, content=None, lines=None, args=None,
                  use_tokens: float = 50, ts: int = -1, is_error: bool = False) -> int:
        """A tool_use block and its tool_result; returns the result's position."""
        tid = f"tu{len(self.blocks)}"
        self.block(use_tokens, "tool_use", tool=tool, resource=resource, lines=lines, args=args or content,
                   tool_use=tid, ts=ts, content=f"use-{tid}")
        return self.block(result_tokens, "tool_result", tool=tool, resource=resource, content=content, lines=lines,
                          args=args or content, tool_use=tid, ts=ts, is_error=is_error)

    def compact(self, summary_tokens: float) -> None:
        self.partition += 1
        self.part_start[self.partition] = len(self.blocks)
        self.block(summary_tokens, "compact_summary")

    def request(self, ts: int, *, model: int = 0, uncached: int = 0, read: int = 0, w5: int = 0, w1h: int = 0,
                output: int = 100, has_usage: bool = False, version: str | None = None,
                event: str | None = None, miss: str | None = None, miss_tokens: int | None = None) -> int:
        self.requests.append(dict(r_pos=len(self.blocks), r_partition=self.partition, r_ts=ts, r_model=model,
                                  r_uncached=uncached, r_w5=w5, r_w1h=w1h, r_read=read, r_output=output,
                                  r_has_usage=has_usage, r_user_turn=self.turn,
                                  r_version=version if version is not None else self.version, r_event=event,
                                  r_miss=miss, r_miss_tokens=miss_tokens))
        return len(self.requests) - 1

    def stream(self, stream_id: int = 0, kind: str = "main") -> Stream:
        cols = {c: [b[c] for b in self.blocks] for c in (self.blocks[0] if self.blocks else {})}
        if not cols:
            cols = {c: [] for c in ("tokens", "bpe", "nbytes", "bkind", "tool", "tool_kind", "chash", "resource",
                                    "line_start", "line_end", "args", "tool_use", "is_error", "partition",
                                    "user_turn", "ts")}
        rcols = {c: [r[c] for r in self.requests] for c in ("r_pos", "r_partition", "r_ts", "r_model", "r_uncached",
                                                             "r_w5", "r_w1h", "r_read", "r_output", "r_has_usage",
                                                             "r_user_turn", "r_version", "r_event", "r_miss",
                                                             "r_miss_tokens")}
        n = len(self.requests)
        return Stream(session_key=self.session_key, stream_id=stream_id, kind=kind, **cols, **rcols,
                      overhead={m: float(self.overhead) for m in range(len(self.models))},
                      part_start=dict(self.part_start), r_residual=[0.0] * n, r_evict=[1 << 30] * n,
                      shared_system_prefix=dict(self.shared_system_prefix),
                      prior_system_prefix=dict(self.prior_system_prefix), lines=dict(self.lines),
                      previews=frozenset(self.previews))

    def build(self) -> tuple[Session, Vocab]:
        return Session(self.session_key, "claude-code", [self.stream()]), self.vocab

    def dataset(self) -> Dataset:
        s, v = self.build()
        return Dataset("test", [s], v)
