"""cupel_dedup: Cupel context pipeline, stage 3 (Deduplicate) — byte-exact, highest score wins.

Seed: ``shared/seeds/002_c4dd1dddb3d59f10.txt`` (Cupel specification, stage 3; facts in
DESIGN.md section 4). Retroactive: before every request the stream's context (blocks of the
current compaction partition before the request, in order) is the scored item list; items
whose content is byte-identical (equal content hash: no normalization of any kind) form a
group, the item with the highest score survives, a tie goes to the lowest index, survivors
keep their order, every other member is removed (size 0). Disabled: input unchanged.

Scores come from Cupel's stage 2 (a configured scorer; the pipeline has no default), so the
scorer is a parameter:

* ``"recency"`` (default) — Cupel's ``RecencyScorer``: rank by timestamp, newer scores higher,
  equal timestamps tie. The usual scorer for conversation turns, and the one that makes this
  policy what DESIGN.md calls it: the *newest* copy survives, so an older copy is removed
  when a newer one arrives, which rewrites history and busts the prompt cache from the
  removed block on. Blocks without a timestamp score lowest (Cupel gives them 0.0, like the
  context's oldest timestamped item; the shared corpus has none).
* ``"size"`` — an absolute score from the block's byte size. Byte-identical copies have equal
  sizes, so it reduces to the tie rule: the earliest copy survives and each later copy is
  removed at its first logged request. It never changes what a logged request sent, yet it is
  retroactive by its timing, not insert-time: Claude Code's unlogged turn-end request (the
  cache model's turn-end write, docs/replay-model.md) caches an answer's final text before the
  next logged request, so a repeated answer text is removed a request late and the entry that
  holds it is cut, a cache bust. With ``kinds = assistant_text``: 9 busts on ``entire-cli/``
  and $758.73 against the no-op's $758.67 (calibrated); so ``bound_retro`` bounds it, not
  ``bound_insert`` (docs/bound.md, tests/test_bound_class.py). Far fewer busts than
  ``"recency"`` (a control for the bust cost).
* ``"kind"`` — Cupel's ``KindScorer`` default weights, with block kinds mapped to Cupel kinds:
  compact_summary = Memory 0.8, tool_result = ToolOutput 0.6, attachment = Document 0.4,
  user/assistant text, thinking, tool_use and image = Message 0.2. Copies of one kind tie
  (earliest survives); across kinds the higher weight survives.

Eligible items: the seed compares content only ("same content, different kind ... are
duplicates"), and an item is any context piece (message, document, tool output, memory), so
every block kind is eligible by default; ``kinds`` narrows it (e.g. ``tool_result`` only, to
keep tool_use/tool_result pairing and conversation text untouched).

Because the survivor of each group can only change when a new copy arrives (scores are
fixed per block and inputs only grow within a partition), the policy keeps, per partition,
the current survivor of each content hash and processes only the blocks appended since the
previous request: O(new blocks) per request.

Thinking blocks are left alone where the provider does not keep them (Claude Opus < 4.5,
Sonnet < 4.6, Haiku <= 4.5: ``replay.policies.common.keeps_thinking``, with its sources): an
earlier turn's is not in the provider's context (the API strips it at each new user turn),
so removing it would save tokens the provider never saw, and the current turn's must be sent
back unmodified during tool use and leaves at the next user turn anyway.

Nothing is inserted (a removed block has size 0), so no size needs converting to the
stream's units.

``trimmed_reread`` is not tracked: a removed block always has a byte-identical survivor in
context, so a later re-read cannot be caused by the removal.
"""

from __future__ import annotations

from dataclasses import dataclass

from replay.model.arrays import K_THINKING, KIND_CODE
from replay.ingest.trace import BLOCK_KINDS
from replay.policies.base import Context, Policy
from replay.policies.common import dropped_thinking_turn

SCORES = ("recency", "size", "kind")

# Cupel KindScorer default weights: SystemPrompt 1.0, Memory 0.8, ToolOutput 0.6,
# Document 0.4, Message 0.2 — mapped onto our block kinds.
KIND_WEIGHTS = {
    "user_text": 0.2, "assistant_text": 0.2, "thinking": 0.2, "tool_use": 0.2, "image": 0.2,
    "attachment": 0.4, "tool_result": 0.6, "compact_summary": 0.8,
}
_KIND_WEIGHT_BY_CODE = [0.0] * len(BLOCK_KINDS)
for _k, _w in KIND_WEIGHTS.items():
    _KIND_WEIGHT_BY_CODE[KIND_CODE[_k]] = _w

_NEG_INF = float("-inf")


class _State:
    __slots__ = ("best", "scan", "eligible")

    def __init__(self, eligible: list[bool]):
        self.best: dict[int, int] = {}  # content hash -> surviving block of the current partition
        self.scan = 0                   # first block not yet seen by a request
        self.eligible = eligible        # per block-kind code


class CupelDedup(Policy):
    """Byte-identical blocks in context: the highest score survives (default recency: the newest), others removed
    (retroactive)."""

    name = "cupel_dedup"
    source = "Cupel context pipeline stage 3 Deduplicate (seed 002_c4dd1dddb3d59f10; DESIGN.md section 4)"

    @dataclass(frozen=True)
    class Params:
        # Stage switch (seed: deduplication is enabled by default; disabled returns the input).
        enabled: bool = True
        # Stage-2 scorer: "recency" (newest copy wins), "size" (equal for identical bytes:
        # earliest wins) or "kind" (Cupel KindScorer weights). See the module doc.
        score: str = "recency"
        # Block kinds that are Cupel items (default: all, as the seed compares content only).
        kinds: tuple[str, ...] = BLOCK_KINDS

        def __post_init__(self):
            if self.score not in SCORES:
                raise ValueError(f"score must be one of {', '.join(SCORES)}, got {self.score!r}")
            if isinstance(self.kinds, str):
                raise ValueError("kinds must be a tuple of block kinds, not a string")
            bad = [k for k in self.kinds if k not in BLOCK_KINDS]
            if bad:
                raise ValueError(f"kinds: unknown block kind(s) {', '.join(map(repr, bad))}; "
                                 f"known: {', '.join(BLOCK_KINDS)}")

    def start_stream(self, ctx: Context) -> None:
        kinds = set(self.params.kinds)
        ctx.state["cupel"] = _State([k in kinds for k in BLOCK_KINDS])

    def on_compaction(self, ctx: Context, pos: int) -> None:
        s: _State = ctx.state["cupel"]
        s.best.clear()
        s.scan = pos

    def before_request(self, ctx: Context, k: int) -> None:
        p = self.params
        if not p.enabled:
            return
        st = ctx.stream
        s: _State = ctx.state["cupel"]
        pos = st.r_pos[k]
        if s.scan >= pos:
            return
        bkind, chash = st.bkind, st.chash
        if p.score == "recency":
            key = st.ts
        elif p.score == "size":
            key = st.nbytes
        else:
            key = None
        eligible, best = s.eligible, s.best
        no_thinking = eligible[K_THINKING] and dropped_thinking_turn(ctx, k) >= 0
        for i in range(s.scan, pos):
            kc = bkind[i]
            if kc < 0 or not eligible[kc] or (no_thinking and kc == K_THINKING):
                continue
            h = chash[i]
            j = best.get(h)
            if j is None:
                best[h] = i
                continue
            if key is None:
                si, sj = _KIND_WEIGHT_BY_CODE[kc], _KIND_WEIGHT_BY_CODE[bkind[j]]
            else:
                si, sj = key[i], key[j]
                if p.score == "recency":
                    if si < 0:
                        si = _NEG_INF
                    if sj < 0:
                        sj = _NEG_INF
            if si > sj:
                # the newcomer outscores the survivor: the survivor (earlier) is removed
                ctx.set_size(j, 0.0)
                best[h] = i
            else:
                # tie or lower score: the earlier survivor keeps its place
                ctx.set_size(i, 0.0)
        s.scan = pos
