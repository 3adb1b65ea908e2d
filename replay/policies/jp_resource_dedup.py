"""jp_resource_dedup: JP RFD 067 — resource deduplication by (URI, checksum).

Seed: ``shared/seeds/000_277e3f9fc48c9b88.txt`` (JP RFD 067; facts in DESIGN.md section 4).
Insert-time, append-only: when a tool returns a *resource block* whose (canonical URI,
SHA-256 checksum) equals a resource already delivered in the conversation — as an attachment
or an earlier tool result — the block is replaced by a reference message naming the URI,
where the original is (attachment at turn N / tool call X in turn N) and the checksum.

Rules encoded (seed section in brackets):

* identity is the pair (URI, checksum) [Content identity]. URI = resource path plus the line
  range of a partial read as a fragment, so a range never matches another range or the whole
  file [Partial file reads]; the same bytes under another URI never match [identity table];
* a resource block is a non-error tool result of a tool that returns file contents (tool kind
  ``read``: Read, NotebookRead) with a path, or an attachment with a path. Grep/Glob/Bash
  output, edit confirmations and errors are ``text`` blocks: they pass through unconditionally
  [Matching algorithm, Non-Goals: text block dedup];
* attachments are matched against but never replaced: dedup runs in the tool coordinator,
  after a tool returns [Pipeline integration];
* only blocks whose raw content *exceeds* ``min_bytes`` (300) are replaced (block byte size;
  300 bytes exactly is delivered) [Minimum size threshold]; smaller ones are still deliveries
  a later block may point at;
* only deliveries within ``lookback_turns`` (30) user turns match: the original's turn must be
  at least current turn - 30 [Lookback window]; the reference always points at a *full*
  delivery (the newest one), never at another reference;
* per-tool ``deduplicate = false`` (``no_dedup_tools``) and the conversation toggle
  (``enabled``) [Configuration]; an opted-out tool's full results still count as deliveries;
* a reference to content compacted away falls through to full delivery [Risks: compaction]:
  deliveries from before a compaction never match (``reset_on_compaction=True``).

Replacement size: the seed's templates rendered with a typical URI
(``file:///home/user/project/src/module/file.py``), a Claude Code tool-use id (30 chars), a
two-digit turn and a full 64-hex SHA-256 (306 and 243 characters) count 82 and 62 o200k tokens
(the ingest's counter; the seed's own estimate, with a shortened checksum, is 40-50). Both are
parameters, in o200k tokens, converted to the stream's units (provider tokens: x the stream's
``bpe_ratio``, ``ctx.units``) where inserted, like the blocks they replace.

Risk figures: ``hints`` (references emitted), ``hint_distance`` (user turns to the original),
``dangling_refs`` (original in an earlier compaction partition: only with
``reset_on_compaction=False``), ``stale_refs`` (the checksum matches, so the bytes are right,
but the path was mutated by a tool between original and reference — a partial read of an
untouched range, or an edit that was reverted — and the message's "the file has not changed"
is false).
"""

from __future__ import annotations

from dataclasses import dataclass

from replay.model.arrays import K_ATTACHMENT, K_TOOL_RESULT, TOOL_KIND_CODE
from replay.policies.base import Context, Policy
from replay.policies.common import count_hint

# The seed's replacement messages (RFD 067, "Replacement message"), rendered for the estimate.
TOOL_TEMPLATE = ("The content of {uri} is identical to the result of tool call `{call}` in turn {turn} "
                 "(checksum: sha256:{checksum}). The file has not changed. Refer to that earlier result "
                 "for the full contents.")
ATTACHMENT_TEMPLATE = ("The content of {uri} is identical to the attachment at turn {turn} "
                       "(checksum: sha256:{checksum}). The file has not changed. Refer to the attached content.")
TYPICAL = dict(uri="file:///home/user/project/src/module/file.py", call="toolu_" + "0" * 24, turn=12,
               checksum="0" * 64)
# o200k counts of the templates rendered with TYPICAL (tests recount them with the ingest's counter)
REF_TOKENS = 82
ATTACHMENT_REF_TOKENS = 62

TOOL_KINDS = tuple(TOOL_KIND_CODE)


class _State:
    __slots__ = ("reg", "last_mut", "res_kinds", "mut_kind", "no_dedup")

    def __init__(self, res_kinds: frozenset, mut_kind: int, no_dedup: frozenset):
        # (resource, line_start, line_end, content hash) -> (block of the newest full delivery, is attachment)
        self.reg: dict[tuple, tuple[int, bool]] = {}
        # resource code -> last block whose tool mutated it (stale-reference accounting)
        self.last_mut: dict[int, int] = {}
        self.res_kinds = res_kinds
        self.mut_kind = mut_kind
        self.no_dedup = no_dedup


class JpResourceDedup(Policy):
    """A re-delivered resource (same URI and checksum, >300 bytes, within 30 turns) becomes a reference message
    (insert-time)."""

    name = "jp_resource_dedup"
    source = "JP RFD 067 resource deduplication (seed 000_277e3f9fc48c9b88; DESIGN.md section 4)"

    @dataclass(frozen=True)
    class Params:
        # Conversation-level toggle (seed: [conversation.deduplication] enabled).
        enabled: bool = True
        # Only resource blocks whose content exceeds this many bytes are replaced (seed: 300).
        min_bytes: int = 300
        # A delivery matches only if it is at most this many user turns old (seed: 30);
        # None: no limit.
        lookback_turns: int | None = 30
        # Tools configured with `deduplicate = false`: their results are always delivered in full.
        no_dedup_tools: tuple[str, ...] = ()
        # Tool kinds whose results are resource blocks (carry a URI for their content). Seed:
        # file reads ("read"); "search", "list", "shell", ... would treat their text output as a
        # resource of their path argument (an extension).
        resource_tool_kinds: tuple[str, ...] = ("read",)
        # o200k tokens of the replacement message for a match against an earlier tool call
        # (the seed's template with a 64-hex checksum, see module doc).
        ref_tokens: int = REF_TOKENS
        # o200k tokens of the replacement message for a match against an attachment.
        attachment_ref_tokens: int = ATTACHMENT_REF_TOKENS
        # Deliveries from before a compaction no longer match (seed: compacted content falls
        # through to full delivery). False is a what-if: references may then dangle.
        reset_on_compaction: bool = True

        def __post_init__(self):
            if not isinstance(self.min_bytes, int) or self.min_bytes < 0:
                raise ValueError(f"min_bytes must be a non-negative integer, got {self.min_bytes!r}")
            if self.lookback_turns is not None and (not isinstance(self.lookback_turns, int)
                                                    or self.lookback_turns < 0):
                raise ValueError(f"lookback_turns must be a non-negative integer or None, got {self.lookback_turns!r}")
            for name in ("ref_tokens", "attachment_ref_tokens"):
                v = getattr(self, name)
                if not isinstance(v, (int, float)) or v < 0:
                    raise ValueError(f"{name} must be a non-negative number, got {v!r}")
            bad = [k for k in self.resource_tool_kinds if k not in TOOL_KINDS]
            if bad:
                raise ValueError(f"resource_tool_kinds: unknown tool kind(s) {', '.join(map(repr, bad))}; "
                                 f"known: {', '.join(TOOL_KINDS)}")
            if isinstance(self.no_dedup_tools, str):
                raise ValueError("no_dedup_tools must be a tuple of tool names, not a string")

    def start_stream(self, ctx: Context) -> None:
        p = self.params
        no_dedup = frozenset(c for c, n in enumerate(ctx.vocab.tool_names) if n in p.no_dedup_tools)
        res_kinds = frozenset(TOOL_KIND_CODE[k] for k in p.resource_tool_kinds)
        ctx.state["jp"] = _State(res_kinds, TOOL_KIND_CODE["mutate"], no_dedup)

    def on_compaction(self, ctx: Context, pos: int) -> None:
        if self.params.reset_on_compaction:
            ctx.state["jp"].reg.clear()

    append_kinds = frozenset({K_TOOL_RESULT, K_ATTACHMENT})

    def on_append(self, ctx: Context, i: int, size: float) -> float:
        st = ctx.stream
        kind = st.bkind[i]
        if kind != K_TOOL_RESULT and kind != K_ATTACHMENT:
            return size
        p = self.params
        if not p.enabled:
            return size
        res = st.resource[i]
        if res < 0:
            return size  # no URI: a text block, passes through
        s: _State = ctx.state["jp"]
        if kind == K_ATTACHMENT:
            s.reg[(res, st.line_start[i], st.line_end[i], st.chash[i])] = (i, True)
            return size
        tk = st.tool_kind[i]
        if tk == s.mut_kind:
            s.last_mut[res] = i
        if tk not in s.res_kinds or st.is_error[i]:
            return size
        key = (res, st.line_start[i], st.line_end[i], st.chash[i])
        e = s.reg.get(key)
        if (e is not None and st.nbytes[i] > p.min_bytes and st.tool[i] not in s.no_dedup
                and (p.lookback_turns is None or st.user_turn[i] - st.user_turn[e[0]] <= p.lookback_turns)):
            orig = e[0]
            count_hint(ctx, i, orig, s.last_mut.get(res, -1) > orig)
            return ctx.units(p.attachment_ref_tokens if e[1] else p.ref_tokens)
        s.reg[key] = (i, False)  # a full delivery: the target of later references
        return size
