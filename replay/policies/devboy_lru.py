"""devboy_lru: devboy format-pipeline ``dedup`` — an LRU of tool-result content hashes.

Seed: ``shared/seeds/003_d8e48d219b51ff29.txt`` (devboy_format_pipeline ``dedup`` module docs;
facts in DESIGN.md section 4). Insert-time, append-only:

* when a tool result of at least ``min_body_chars`` arrives, its content hash is looked up in
  a bounded LRU (capacity 5). A hit replaces the result by a reference hint
  (``> [ref: tc_42, byte-identical]``, ~11 tokens) pointing at the earliest result with those
  bytes and moves the entry to most-recent; a miss inserts it, evicting the least recent;
* tools are classified by name: Read/Grep/Glob/NotebookRead read a file, Edit/Write/MultiEdit/
  NotebookEdit mutate one; a mutation drops the cached *read* entries of the same path before
  anything else (even for a tiny result), so no hint crosses an edit of its file;
* a compaction boundary clears the cache (``on_compaction_boundary``): earlier results are
  no longer in context.

Resolved details (each a parameter whose default is the seed's behaviour):

* every tool's results are cacheable (the seed caches Bash/MCP polls too — its usage example
  inserts a ``Bash`` result with kind ``Other``); ``cacheable="reads"`` limits it to the read
  tools. Tool kind only drives invalidation; mutate results are cached like any other.
* ``min_body_chars`` is compared with the block's UTF-8 byte size (the seed compares the Rust
  ``str::len()``, which is the byte length, so this is exact for the canonical content); like
  the seed, a threshold of 0 acts as 1 (an empty result is never cached).
* hints cost a fixed number of tokens per verbosity (the seed's figures: terse 8, standard 11,
  verbose 15, whatever the original's size), taken as o200k tokens (the ingest's o200k counter
  gives 8/12/17 for the rendered forms below, cl100k 8/13/18) and converted to the stream's
  units (provider tokens: x the stream's ``bpe_ratio``, ``ctx.units``) where inserted, like the
  blocks they replace.
* ``capacity=None`` or ``0`` means unbounded (an extension for the capacity study; the seed
  clamps 0 to 1).
* one cache per stream: a subagent's context is its own, a hint into another stream's context
  could not be followed.
* ``eviction="fifo"`` is devboy's published simulator (``scripts/simulate_paper2_pipeline.py``):
  a hit does not refresh its entry, the oldest insert is evicted. With ``verbosity="verbose"``
  (15-token hints) it is the simulator's setting (``ctxreplay claims``); the Rust module's LRU
  and 11-token hints stay the default.

Risk figures: ``hints``, ``hint_distance`` (user turns between hint and original),
``dangling_refs`` (the original lies in an earlier compaction partition: only possible with
``reset_on_compaction=False``), ``stale_refs`` (the seed's own notion: a hint to a cached *read*
of a path that a mutating tool touched after that read — what mutation-awareness exists to
prevent. The bytes are identical, e.g. a partial read of a range an edit did not touch, or an
edit that was reverted, but the hint points the agent at a pre-edit read. 0 with
``mutation_aware=True`` by construction).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from replay.model.arrays import K_TOOL_RESULT, TOOL_KIND_CODE
from replay.policies.base import Context, Policy

# Hint sizes in o200k tokens, the seed's figures for its rendered forms (stated there as ~):
#   terse    "> [ref: tc_42]"                                 ~8
#   standard "> [ref: tc_42, byte-identical]"                 ~11 (default)
#   verbose  "> [ref: tc_42, byte-identical, from: file-read]" ~15
HINT_TOKENS = {"terse": 8, "standard": 11, "verbose": 15}

# The seed's ToolKind::from_tool_name (Claude Code tool names).
READ_TOOLS = ("Read", "Grep", "Glob", "NotebookRead")
MUTATE_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
# classify="kind": the trace's coarse tool kinds instead of names (for other agents' logs).
READ_KINDS = ("read", "search", "list")
MUTATE_KINDS = ("mutate",)

CACHEABLE = ("all", "reads")
EVICTION = ("lru", "fifo")
CLASSIFY = ("name", "kind")


class _State:
    __slots__ = ("entries", "by_path", "last_mut", "read_codes", "mut_codes", "by_name", "cap", "min_bytes",
                 "codes", "chash", "mutation_aware", "lru", "hint", "mut_res", "read_res", "cbytes",
                 "user_turn", "partition")

    def __init__(self, read_codes: frozenset, mut_codes: frozenset, by_name: bool, cap: int, min_bytes: int):
        # content hash -> the block of the cached result (the earliest with those bytes)
        self.entries: OrderedDict[int, int] = OrderedDict()
        # resource code -> content hashes of cached read entries (invalidation index)
        self.by_path: dict[int, set] = {}
        # resource code -> last block that mutated it (stale-reference accounting)
        self.last_mut: dict[int, int] = {}
        self.read_codes = read_codes
        self.mut_codes = mut_codes
        self.by_name = by_name
        self.cap = cap
        self.min_bytes = min_bytes


def _block_classes(ctx: Context, by_name: bool, reads_only: bool) -> tuple:
    """The read and mutate tool codes, and per block of the stream what ``on_append`` asks of it,
    memoized on the stream (the same for every configuration of a sweep with this
    classification): the resource a tool result mutates (-1: none); the resource of the cached
    *read* entry it would make, where a later block of the stream mutates it (-1: not a read, no
    path, or a path nothing mutates after it: no mutation can then drop the entry or make a
    hint to it stale, so it is left out of the invalidation index, 86% of the read entries on
    the synthetic corpus; blocks are appended in position order); and its byte size where it
    may be cached (-1: not a tool result, or not a read with ``cacheable="reads"``;
    ``min_bytes`` is at least 1, so -1 is never cached)."""
    st = ctx.stream
    names = ctx.vocab.tool_names if by_name else None
    memo = st.__dict__.get("_devboy_classes")
    if memo is None:
        memo = st.__dict__["_devboy_classes"] = {}
    got = memo.get((by_name, reads_only))
    if got is None or got[0] is not names:  # classified by name: for this vocabulary's names
        if by_name:
            reads = frozenset(c for c, n in enumerate(names) if n in READ_TOOLS)
            muts = frozenset(c for c, n in enumerate(names) if n in MUTATE_TOOLS)
        else:
            reads = frozenset(TOOL_KIND_CODE[k] for k in READ_KINDS)
            muts = frozenset(TOOL_KIND_CODE[k] for k in MUTATE_KINDS)
        codes = st.tool if by_name else st.tool_kind
        tr = [b == K_TOOL_RESULT for b in st.bkind]
        mut_res = [r if t and r >= 0 and c in muts else -1 for t, r, c in zip(tr, st.resource, codes)]
        last = {r: i for i, r in enumerate(mut_res) if r >= 0}  # the last block mutating each path
        read_res = [r if t and c in reads and last.get(r, -1) > i else -1
                    for i, (t, r, c) in enumerate(zip(tr, st.resource, codes))]
        cbytes = [n if t and (not reads_only or c in reads) else -1 for t, n, c in zip(tr, st.nbytes, codes)]
        got = memo[(by_name, reads_only)] = (names, reads, muts, codes, mut_res, read_res, cbytes)
    return got


class DevboyLru(Policy):
    """LRU(5) of tool-result hashes; a repeat becomes a ~11-token reference hint (insert-time)."""

    name = "devboy_lru"
    source = "devboy format-pipeline dedup (seed 003_d8e48d219b51ff29; DESIGN.md section 4)"

    @dataclass(frozen=True)
    class Params:
        # LRU capacity in entries (seed default 5). None or 0: unbounded (capacity study extension).
        capacity: int | None = 5
        # Only tool results of at least this many characters are looked up or cached (pipeline
        # default 200); measured as the block's UTF-8 byte size, like the seed's str::len().
        min_body_chars: int = 200
        # Hint form: "terse" (~8 tokens), "standard" (~11, seed default) or "verbose" (~15).
        verbosity: str = "standard"
        # A mutating tool (Edit/Write/MultiEdit/NotebookEdit) drops cached read entries of its path.
        mutation_aware: bool = True
        # Clear the cache at a compaction boundary (seed: on_compaction_boundary). False is a
        # what-if: hints may then point at results compacted away (dangling_refs).
        reset_on_compaction: bool = True
        # Which tool results are cached: "all" (seed: any tool, Bash/MCP polls included) or
        # "reads" (only the read tools Read/Grep/Glob/NotebookRead).
        cacheable: str = "all"
        # How read/mutate tools are recognised: "name" (the seed's Claude Code tool names) or
        # "kind" (the trace's tool kind: read/search/list read, mutate mutates; other agents).
        classify: str = "name"
        # Eviction order: "lru" (the Rust module: a hit moves its entry to most recent) or "fifo"
        # (devboy's published simulator: a hit leaves it in place; the oldest insert goes first).
        eviction: str = "lru"

        def __post_init__(self):
            if self.capacity is not None and (not isinstance(self.capacity, int) or self.capacity < 0):
                raise ValueError(f"capacity must be a non-negative integer or None, got {self.capacity!r}")
            if not isinstance(self.min_body_chars, int) or self.min_body_chars < 0:
                raise ValueError(f"min_body_chars must be a non-negative integer, got {self.min_body_chars!r}")
            if self.verbosity not in HINT_TOKENS:
                raise ValueError(f"verbosity must be one of {', '.join(HINT_TOKENS)}, got {self.verbosity!r}")
            if self.cacheable not in CACHEABLE:
                raise ValueError(f"cacheable must be one of {', '.join(CACHEABLE)}, got {self.cacheable!r}")
            if self.classify not in CLASSIFY:
                raise ValueError(f"classify must be one of {', '.join(CLASSIFY)}, got {self.classify!r}")
            if self.eviction not in EVICTION:
                raise ValueError(f"eviction must be one of {', '.join(EVICTION)}, got {self.eviction!r}")

    @property
    def hint_tokens(self) -> int:
        return HINT_TOKENS[self.params.verbosity]

    def start_stream(self, ctx: Context) -> None:
        p = self.params
        by_name = p.classify == "name"
        # on_append runs per tool result per configuration of a sweep: what it reads of the
        # stream and the parameters is looked up once here, the tool classes once per stream
        _, reads, muts, codes, mut_res, read_res, cbytes = _block_classes(ctx, by_name, p.cacheable == "reads")
        s = ctx.state["devboy"] = _State(reads, muts, by_name, p.capacity or 0, max(1, p.min_body_chars))
        st = ctx.stream
        s.codes, s.chash, s.user_turn, s.partition = codes, st.chash, st.user_turn, st.partition
        s.mut_res, s.read_res, s.cbytes = mut_res, read_res, cbytes
        s.mutation_aware, s.lru = p.mutation_aware, p.eviction == "lru"
        s.hint = ctx.units(HINT_TOKENS[p.verbosity])

    def on_compaction(self, ctx: Context, pos: int) -> None:
        if self.params.reset_on_compaction:
            s: _State = ctx.state["devboy"]
            s.entries.clear()
            s.by_path.clear()

    append_kinds = frozenset({K_TOOL_RESULT})

    def append_filter(self, ctx: Context) -> tuple:
        # a result below min_body_chars that mutates no path is returned as is and changes no
        # state: a sweep over min_body_chars skips those (half the results at 2,000 bytes on the
        # synthetic corpus)
        s: _State = ctx.state["devboy"]
        muts, codes, resource, nbytes, least = s.mut_codes, s.codes, ctx.stream.resource, ctx.stream.nbytes, s.min_bytes
        return (("devboy", least, muts, s.by_name),
                lambda i: nbytes[i] >= least or (resource[i] >= 0 and codes[i] in muts))

    def on_append(self, ctx: Context, i: int, size: float) -> float:
        # per tool result per configuration of a sweep: the stream's tool classes are looked up
        # in the lists `_block_classes` made (a non-tool-result block is -1 in each)
        s: _State = ctx.state["devboy"]
        res = s.mut_res[i]
        if res >= 0:
            # mutation-aware invalidation fires first, whatever the result's size
            s.last_mut[res] = i
            if s.mutation_aware:
                hashes = s.by_path.pop(res, None)
                if hashes:
                    entries = s.entries
                    for h in hashes:
                        del entries[h]
        if s.cbytes[i] < s.min_bytes:
            return size  # too small, or not cacheable (not a tool result, or not a read with "reads")
        h = s.chash[i]
        entries = s.entries
        orig = entries.get(h)
        if orig is not None:
            if s.lru:
                entries.move_to_end(h)
            # `count_hint`, inline (one call fewer per hint)
            m = ctx.metrics
            m["hints"] += 1
            user_turn, partition = s.user_turn, s.partition
            m["hint_distance"] += user_turn[i] - user_turn[orig]
            if partition[orig] != partition[i]:
                m["dangling_refs"] += 1
            r = s.read_res[orig]
            if r >= 0 and s.last_mut.get(r, -1) > orig:
                m["stale_refs"] += 1  # a hint to a read of a path mutated since
            return s.hint
        read_res = s.read_res
        if s.cap and len(entries) >= s.cap:
            old_h, old = entries.popitem(last=False)
            r = read_res[old]
            if r >= 0:
                hs = s.by_path.get(r)
                if hs is not None:
                    hs.discard(old_h)
                    if not hs:
                        del s.by_path[r]
        entries[h] = i
        r = read_res[i]
        if r >= 0:
            hs = s.by_path.get(r)
            if hs is None:
                s.by_path[r] = {h}
            else:
                hs.add(h)
        return size
