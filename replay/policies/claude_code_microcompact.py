"""claude_code_microcompact: Claude Code's time-based microcompact of old tool results.

Source: DESIGN.md section 4 (checked fact): after an idle gap of more than 60 minutes,
Claude Code clears all but the 5 most recent file/shell/search/web tool results. By then
the provider's prompt cache (5 min or 1 h) has expired, so rewriting the prefix costs no
cache read that would otherwise have happened. Details of the client-side implementation
(services/compact/microCompact, as described by public write-ups and ports of it):

* the gap is measured from the last assistant message to the new request;
* the clearable tools are the built-in file, shell, search and web tools — Read, Edit,
  Write (file), Bash, PowerShell (shell), Grep, Glob (search), WebFetch, WebSearch (web);
  MCP tools and the rest (Task, TodoWrite, LS, MultiEdit, Notebook*) are left alone;
* the results of all but the ``keep_recent`` (5) most recent calls of those tools are
  replaced by ``[Old tool result content cleared]`` (7 o200k tokens: ``placeholder_tokens``,
  converted to the stream's units, x its ``bpe_ratio``, where inserted: ``ctx.units``);
* the edit is made to the client's message list, so cleared results stay cleared for the
  rest of the conversation (unlike the API's stateless context editing).

Re-reads (``reread_cost``, on by default; a pessimistic price beyond the source): clearing
is lossy. When the agent later re-reads a resource whose result was cleared (a read-kind
tool_use naming it), the cleared result gets its full size back from that request on, a
retroactive change at that block which the engine prices (cache bust included); cleared
results are never cleared twice anyway. Off: re-reads are only counted (``trimmed_reread``).

Replay: the gap before request k is the timestamp of the newest block before it (the user's
new message, or the last tool result) minus that of the newest assistant block (assistant
text, thinking or tool_use; 0 when the newest block is one); without block timestamps, the
time between the previous request and this one.
Cost: results are listed once as they enter context; a pointer marks how many are cleared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replay.model.arrays import K_THINKING, K_TOOL_RESULT, K_TOOL_USE, KIND_CODE, Stream
from replay.policies.base import Context, as_tuples, non_negative
from replay.policies.common import ScanningPolicy, codes, shrink

_ASSISTANT = frozenset((KIND_CODE["assistant_text"], K_THINKING, K_TOOL_USE))
MIN_MS = 60_000


class ClaudeCodeMicrocompact(ScanningPolicy):
    """After an idle gap of more than 60 minutes, every file/shell/search/web tool result but the 5 most recent is
    replaced by a short placeholder; cleared results stay cleared."""

    name = "claude_code_microcompact"
    source = "Claude Code time-based microcompact (DESIGN.md section 4: idle > 60 min, keep 5 recent)"

    @dataclass(frozen=True)
    class Params:
        # Idle gap before a request that triggers the clearing, minutes (Claude Code: 60).
        idle_minutes: float = 60.0
        # Most recent clearable tool results kept (Claude Code: 5).
        keep_recent: int = 5
        # Tools whose results can be cleared (Claude Code's built-in file/shell/search/web tools).
        tools: tuple[str, ...] = ("Read", "Edit", "Write", "Bash", "PowerShell", "Grep", "Glob", "WebFetch",
                                  "WebSearch")
        # Size of "[Old tool result content cleared]", tokens (o200k).
        placeholder_tokens: float = 7.0
        # Price a later re-read of a cleared result: it gets its full size back from the
        # re-reading request on (pessimistic, beyond the source). False: only counted.
        reread_cost: bool = True

        def __post_init__(self):
            as_tuples(self, "tools")
            non_negative(self, "idle_minutes", "keep_recent", "placeholder_tokens")

    def setup(self, ctx: Context, s: dict[str, Any]) -> None:
        s["tools"] = codes(ctx, self.params.tools)
        s["last_asst"] = -1      # timestamp of the newest assistant block seen
        s["gap"] = None          # newest block's timestamp - last_asst (0 after an assistant block)

    def reset(self, s: dict[str, Any], pos: int) -> None:
        super().reset(s, pos)
        s["results"] = []        # positions of clearable tool results, in order
        s["cleared"] = 0         # results[:cleared] are cleared

    def before_request(self, ctx: Context, k: int) -> None:
        self.catch_up(ctx, k)
        s = ctx.state
        st = ctx.stream
        p = self.params
        results = s["results"]
        upto = len(results) - p.keep_recent
        if upto <= s["cleared"]:
            return
        gap = s["gap"]
        if gap is None:
            if k == 0 or st.r_ts[k] < 0 or st.r_ts[k - 1] < 0:
                return
            gap = st.r_ts[k] - st.r_ts[k - 1]
        if gap <= p.idle_minutes * MIN_MS:
            return
        rr = s["rr"]
        size = ctx.units(p.placeholder_tokens)
        for r in results[s["cleared"]:upto]:
            shrink(ctx, r, size, rr, lossy=True)
        s["cleared"] = upto

    def _scan(self, st: Stream, s: dict[str, Any], lo: int, hi: int) -> None:
        tools, results = s["tools"], s["results"]
        bkind, tool, ts = st.bkind, st.tool, st.ts
        last_asst, gap = s["last_asst"], s["gap"]
        for i in range(lo, hi):
            bk = bkind[i]
            t = ts[i]
            if bk in _ASSISTANT:
                gap = 0
                if t >= 0:
                    last_asst = t
            elif t >= 0 and last_asst >= 0:
                gap = t - last_asst
            if bk == K_TOOL_RESULT and tool[i] in tools:
                results.append(i)
        s["last_asst"], s["gap"] = last_asst, gap
