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
from replay.policies.common import count_hint

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
                 "bkind", "codes", "resource", "nbytes", "chash", "mutation_aware", "reads_only", "lru", "hint")

    def __init__(self, read_codes: frozenset, mut_codes: frozenset, by_name: bool, cap: int, min_bytes: int):
        # content hash -> [original block, is a read entry, resource code]
        self.entries: OrderedDict[int, list] = OrderedDict()
        # resource code -> content hashes of cached read entries (invalidation index)
        self.by_path: dict[int, set] = {}
        # resource code -> last block that mutated it (stale-reference accounting)
        self.last_mut: dict[int, int] = {}
        self.read_codes = read_codes
        self.mut_codes = mut_codes
        self.by_name = by_name
        self.cap = cap
        self.min_bytes = min_bytes


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
        if p.classify == "name":
            names = ctx.vocab.tool_names
            reads = frozenset(c for c, n in enumerate(names) if n in READ_TOOLS)
            muts = frozenset(c for c, n in enumerate(names) if n in MUTATE_TOOLS)
        else:
            reads = frozenset(TOOL_KIND_CODE[k] for k in READ_KINDS)
            muts = frozenset(TOOL_KIND_CODE[k] for k in MUTATE_KINDS)
        s = ctx.state["devboy"] = _State(reads, muts, p.classify == "name", p.capacity or 0, max(1, p.min_body_chars))
        # on_append runs per tool result per configuration of a sweep: what it reads of the
        # stream and the parameters is looked up once here
        st = ctx.stream
        s.bkind, s.resource, s.nbytes, s.chash = st.bkind, st.resource, st.nbytes, st.chash
        s.codes = st.tool if s.by_name else st.tool_kind
        s.mutation_aware, s.reads_only, s.lru = p.mutation_aware, p.cacheable == "reads", p.eviction == "lru"
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
        muts, codes, resource, nbytes, least = s.mut_codes, s.codes, s.resource, s.nbytes, s.min_bytes
        return (("devboy", least, muts, s.by_name),
                lambda i: nbytes[i] >= least or (resource[i] >= 0 and codes[i] in muts))

    def on_append(self, ctx: Context, i: int, size: float) -> float:
        s: _State = ctx.state["devboy"]
        if s.bkind[i] != K_TOOL_RESULT:
            return size
        code = s.codes[i]
        res = s.resource[i]
        if res >= 0 and code in s.mut_codes:
            # mutation-aware invalidation fires first, whatever the result's size
            s.last_mut[res] = i
            if s.mutation_aware:
                hashes = s.by_path.pop(res, None)
                if hashes:
                    for h in hashes:
                        del s.entries[h]
        if s.nbytes[i] < s.min_bytes:
            return size
        is_read = code in s.read_codes
        if not is_read and s.reads_only:
            return size
        h = s.chash[i]
        entries = s.entries
        e = entries.get(h)
        if e is not None:
            if s.lru:
                entries.move_to_end(h)
            orig = e[0]
            count_hint(ctx, i, orig, e[1] and s.last_mut.get(e[2], -1) > orig)
            return s.hint
        if s.cap and len(entries) >= s.cap:
            old_h, old = entries.popitem(last=False)
            if old[1]:
                hs = s.by_path.get(old[2])
                if hs is not None:
                    hs.discard(old_h)
                    if not hs:
                        del s.by_path[old[2]]
        read_entry = is_read and res >= 0
        entries[h] = [i, read_entry, res]
        if read_entry:
            s.by_path.setdefault(res, set()).add(h)
        return size
