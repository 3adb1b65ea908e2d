"""supersede: a newer read or write of a location hides the older tool results (ai-experiments).

Source: seed 004 (the "Deduplicator Analysis" of emcd/ai-experiments), which quotes
``sources/aiwb/invocables/ensembles/io/deduplicators.py``:

* ``IoContentDeduplicator`` handles ``read``, ``write_file`` and ``write_pieces``: a newer
  call on the same ``location`` makes older results of those tools stale. Its supersession
  matrix: ``read`` and ``write_file`` supersede all five kinds; ``write_pieces``
  supersedes only when its ``return-content`` is true; every kind can be superseded.
* ``SurveyDirectoryDeduplicator`` handles ``list_folder``: a newer listing of the same
  location supersedes an older one when the newer filters are a subset of the older ones
  (its filters *exclude* entries, so fewer filters = more inclusive) and its recursion is
  not narrower (``older.recurse and not newer.recurse`` does not supersede).
* Superseded results are hidden from the conversation prepared for the next call, never
  deleted; pinned ones are kept. The seed's trimmer drops only the result, not the call.
* The seed adds that trimming busts the prompt cache and "only makes sense ... when we want
  to bust cache because of conversation size"; the deduplicator itself trims on every call.

Mapping to the trace (Claude Code tool names; each is a parameter):

* ``read`` = Read/NotebookRead; ``write_file`` = Write (its tool_use carries the whole new
  content); ``write_pieces`` = Edit/MultiEdit/NotebookEdit, which return a short confirmation
  or snippet rather than the file (74 tokens per result on the shared corpus), so by default
  they supersede nothing (``pieces_return_content=False``) but are superseded.
* ``location`` = the pseudonymized ``resource``. ai-experiments' ``read`` has no line range,
  so the source rule is location only (``read_range="location"``); Claude Code reads can be
  partial, so ``"covering"`` (the newer range contains the older; a whole-file read covers
  all) and ``"exact"`` (same range) are offered.
* ``list_folder`` = LS/Glob with ``resource`` = the directory. The trace has no filter list
  and no recursion flag (Glob's ``**`` is inside the hashed arguments), so the only case the
  trace can prove is identical arguments (equal filters, equal recursion):
  ``list_rule="identical"`` (default). ``"location"`` assumes every newer listing of the same
  directory by the same tool is at least as inclusive (unverifiable); ``"off"`` disables it.
  Grep is a search, not a listing: not handled (the source has no search deduplicator).
* "pinned" is a user action the trace does not record: ``pinned_tools`` (default none).
* Trigger: ``trigger_tokens`` = 0 hides on every request, as the deduplicator does; set it
  (e.g. 100,000 = half a 200k window) for the seed's "only when the conversation approaches
  the window". It compares the full, unhidden prompt (overhead + every block), which only
  grows within a compaction partition, so hidden results never come back.
* Hidden = ``hidden_tokens`` (default 0: omitted from the prepared conversation), in o200k
  tokens, converted to the stream's units (x its ``bpe_ratio``, ``ctx.units``).
* Lossless when the newer call restates what it hides (a Write, a returning piece tool, a
  read whose range contains the older one, an identical listing) and did not fail: a later
  re-read cannot be blamed on it. Otherwise (the source's ``location`` rule hiding a range the
  newer read does not contain, a failed newer call, a listing with other arguments) the
  content is gone from context and a later re-read of the resource counts
  (``trimmed_reread``); it is not priced (the source has no re-read cost).

Cost: each tool_result is examined once, when it first enters context; per location only
the results still visible are kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replay.model.arrays import K_TOOL_RESULT, Stream
from replay.policies.base import Context, as_tuples, non_negative, one_of
from replay.policies.common import ScanningPolicy, codes, covers, full_prompt, shrink


READ_RANGES = ("location", "covering", "exact")
LIST_RULES = ("identical", "location", "off")


class Supersede(ScanningPolicy):
    """A newer read/write of a file hides older results of it; a newer, at least as inclusive listing of a
    directory hides the older listing. Hidden, never deleted; rewrites history."""

    name = "supersede"
    source = "seed 004: ai-experiments deduplicators (IoContentDeduplicator, SurveyDirectoryDeduplicator)"

    @dataclass(frozen=True)
    class Params:
        # Hide only when the full (unhidden) prompt exceeds this many tokens; 0 = on every
        # request, as ai-experiments' deduplicators do. The seed advises ~50-75% of the window.
        trigger_tokens: int = 0
        # Tools playing ai-experiments' `read` (supersede everything at the location).
        read_tools: tuple[str, ...] = ("Read", "NotebookRead")
        # Tools playing `write_file` (supersede everything at the location).
        write_tools: tuple[str, ...] = ("Write",)
        # Tools playing `write_pieces` (always superseded; supersede only with return-content).
        piece_tools: tuple[str, ...] = ("Edit", "MultiEdit", "NotebookEdit")
        # Whether the piece tools return the file's content (ai-experiments' `return-content`);
        # Claude Code's Edit/MultiEdit return a confirmation or snippet, hence False.
        pieces_return_content: bool = False
        # Which older results a newer read hides: "location" (the source rule: same file, any
        # range), "covering" (newer range contains the older; whole file covers all), "exact".
        read_range: str = "location"
        # Tools playing `list_folder` (resource = the directory).
        list_tools: tuple[str, ...] = ("LS", "Glob")
        # When a newer listing hides an older one of the same tool and directory: "identical"
        # arguments (the only provable filters/recursion case), "location" (any), "off".
        list_rule: str = "identical"
        # Tools whose results are pinned: never hidden (they still supersede others).
        pinned_tools: tuple[str, ...] = ()
        # Whether a failed (is_error) newer call supersedes; the source does not look at errors.
        error_supersedes: bool = True
        # Size of a hidden result in o200k tokens (0 = omitted from the prepared conversation).
        hidden_tokens: float = 0.0

        def __post_init__(self):
            as_tuples(self, "read_tools", "write_tools", "piece_tools", "list_tools", "pinned_tools")
            non_negative(self, "trigger_tokens", "hidden_tokens")
            one_of(self, "read_range", READ_RANGES)
            one_of(self, "list_rule", LIST_RULES)
            fam = [*self.read_tools, *self.write_tools, *self.piece_tools]
            dup = {n for n in fam if fam.count(n) > 1} | (set(fam) & set(self.list_tools))
            if dup:
                raise ValueError(f"tool(s) {', '.join(sorted(dup))} listed in more than one role")

    # ------------------------------------------------------------------------------------
    def setup(self, ctx: Context, s: dict[str, Any]) -> None:
        p = self.params
        role: dict[int, int] = {}
        for c in codes(ctx, p.read_tools):
            role[c] = 0
        for c in codes(ctx, p.write_tools):
            role[c] = 1
        for c in codes(ctx, p.piece_tools):
            role[c] = 2
        s["role"] = role
        s["list"] = codes(ctx, p.list_tools) if p.list_rule != "off" else set()
        s["pinned"] = codes(ctx, p.pinned_tools)

    def reset(self, s: dict[str, Any], pos: int) -> None:
        super().reset(s, pos)
        s["full"] = 0.0          # original tokens of the partition's blocks scanned so far
        s["files"] = {}          # resource -> visible results [(pos, role, line_start, line_end)]
        s["dirs"] = {}           # (tool, resource) -> visible listings [(pos, args)]
        s["pending"] = []        # superseded, not hidden yet (trigger not reached): (block, lossy?)
        s["triggered"] = False

    def before_request(self, ctx: Context, k: int) -> None:
        self.catch_up(ctx, k)
        s = ctx.state
        pending = s["pending"]
        if not pending:
            return
        if not s["triggered"]:
            if full_prompt(ctx.stream, k, s["full"]) <= self.params.trigger_tokens:
                return
            s["triggered"] = True
        hidden = ctx.units(self.params.hidden_tokens)
        rr = s["rr"]
        for q, lossy in pending:
            shrink(ctx, q, hidden, rr, lossy=lossy)
        pending.clear()

    def _scan(self, st: Stream, s: dict[str, Any], lo: int, hi: int) -> None:
        p = self.params
        role, lists, pinned = s["role"], s["list"], s["pinned"]
        files, dirs, pending = s["files"], s["dirs"], s["pending"]
        tokens, bkind, tool, res = st.tokens, st.bkind, st.tool, st.resource
        full = s["full"]
        for i in range(lo, hi):
            full += tokens[i]
            if bkind[i] != K_TOOL_RESULT:
                continue
            t = tool[i]
            r = res[i]
            if r < 0:
                continue
            supersedes = p.error_supersedes or not st.is_error[i]
            if t in role:
                ro = role[t]
                ls, le = st.line_start[i], st.line_end[i]
                vis = files.get(r)
                if vis and supersedes:
                    if ro == 1 or (ro == 2 and p.pieces_return_content):
                        keep: list = []
                    elif ro == 0:
                        keep = self._read_survivors(vis, ls, le)
                    else:
                        keep = vis
                    if keep is not vis:
                        ok = not st.is_error[i]
                        for e in vis:
                            if e not in keep:
                                # lossless when the newer call restates what it hides: a write's
                                # whole content, or a read of a range containing the older one
                                pending.append((e[0], not (ok and (ro != 0 or covers(ls, le, e[2], e[3])))))
                        vis = files[r] = keep
                if t not in pinned:
                    if vis is None:
                        files[r] = [(i, ro, ls, le)]
                    else:
                        vis.append((i, ro, ls, le))
            elif t in lists:
                key = (t, r)
                vis = dirs.get(key)
                a = st.args[i]
                if vis and supersedes:
                    if p.list_rule == "location":
                        keep = []
                    else:
                        keep = [e for e in vis if e[1] != a]
                    if len(keep) != len(vis):
                        # an identical listing that did not fail restates the older one: lossless
                        pending.extend((e[0], e[1] != a or bool(st.is_error[i])) for e in vis
                                       if p.list_rule == "location" or e[1] == a)
                        vis = dirs[key] = keep
                if t not in pinned:
                    if vis is None:
                        dirs[key] = [(i, a)]
                    else:
                        vis.append((i, a))
        s["full"] = full

    def _read_survivors(self, vis: list, ls: int, le: int) -> list:
        mode = self.params.read_range
        if mode == "location":
            return []
        if ls < 0:
            # a whole-file read restates everything the older results held
            return []
        if mode == "covering":
            return [e for e in vis if not (e[1] == 0 and covers(ls, le, e[2], e[3]))]
        return [e for e in vis if not (e[1] == 0 and e[2] == ls and e[3] == le)]
