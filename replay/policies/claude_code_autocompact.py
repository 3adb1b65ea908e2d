"""claude_code_autocompact: Claude Code's auto-compact, which summarizes the conversation when its
context nears the window minus a reserve.

Source: measured, not documented: no trigger figure was found in Claude Code's documentation
(DESIGN.md section 4 notes "auto-compact near 167k of a 200k window": the documented default
here, ``window_tokens`` 200,000 - ``reserve_tokens`` 33,000 = 167,000). The trigger is measured
from the logs' own records: Claude Code writes a ``compact_boundary`` system line with
``compactMetadata: {trigger: "auto", preTokens: N}`` where it compacted (N = the context size
then, a little past the trigger), followed by the ``isCompactSummary`` user line holding the
summary; and a main-stream request sent after a context of C tokens with no compaction between
shows that the client's trigger was at least C (its largest such C per client version is the
version's *sustained* context).

Per client version (``reserve_tokens`` unset, the default), the trigger is the table
``TRIGGERS``, which ``derive`` computes from those two figures per version, in version order,
so a row rests only on its own and earlier versions: consecutive versions share a row while
every sustained context stays below every auto compaction of the row; a row's trigger is its
smallest preTokens rounded down to 1,000 when it holds at least ``MIN_EVIDENCE`` (5) auto
compactions, else (thin evidence, or the row contradicts itself) the documented default.
Measured (``.venv/bin/python bench/autocompact_trigger.py ../shared/logs/claude-code-2026
../shared/logs/entire-cli ../shared/logs/claude-code``; 42 auto compactions, all before 2.1.50):

| client versions | auto compactions | smallest preTokens | largest sustained | trigger (200k window) |
|---|---|---|---|---|
| 1.0.45 - 1.0.77 | 0 | - | 163,695 | 167,000 (default: none measured) |
| 2.0.76 | 3 | 123,067 | 148,926 | 167,000 (default: 3 compactions, contradicted) |
| 2.1.1 - 2.1.20 | 19 | 155,031 | 154,959 | 155,000 |
| 2.1.22 - 2.1.87 | 20 | 167,038 | 166,762 | 167,000 |
| 2.1.91 - 2.1.199 | 0 | - | 629,228 | 167,000 (default: none measured) |

2.0.76's three compactions at 123,067 - 123,332 rest on two sessions, and a 2.0.76 client
carried a 148,926-token context on without compacting, so 123k is not its trigger; it takes the
default. The row starting at 2.1.22 begins where a client first carried a context past 155,000
(159,319; its first auto compaction is 2.1.29's). Derived on the versions up to 2.1.49 (``bench/autocompact_trigger.py --until 2.1.49``: the
same first four rows), the table holds on 58 of the 60 later versions, each on the window its
sessions show: 2.1.52 - 2.1.87 carry at most 134,524 tokens; from 2.1.91 (``claude-code-2026/``,
Opus 4.6-4.8 and Fable 5) sessions of 28 versions run past 200,000 tokens (to 629,228) without
an auto compaction, so their window is 1,000,000 and a 33,000 reserve is not contradicted there.
The two it fails on, 2.1.104 and 2.1.110, carried 187,097 and 194,308 tokens on Opus 4.6
without compacting and without passing 200,000: no client on a 200,000 window with any reserve
the logs show could, so they ran on the larger window too. Set ``window_tokens = 1000000`` to
replay those logs as their client ran; at the default 200,000 this policy compacts them where
their client did not (a what-if). ``reserve_tokens = N`` sets
one reserve for every request (the sweep ``examples/autocompact_reserve.toml``).

The 48 summaries after those boundaries (auto and manual) count 1,461 - 5,889 o200k tokens,
median 2,792 (same command): ``summary_tokens`` = 2,792. Claude Code's summarization prompt is
not published; ``instruction_tokens`` takes the API's default prompt's 95 tokens (an
assumption; it moves the price by well under a cent per compaction). What Claude Code attaches
after a compaction besides the summary (recently read files, the todo list) is not modelled.

Replay: the same mechanics as ``server_compaction`` (``replay.policies.summary``): at a
request whose prompt exceeds the trigger, one summarization request is priced (input = the
prompt + instructions, the previous request's prefix read from the cache; output = the
summary) and the conversation goes on from the summary. The logs themselves compact (their
partitions), at the trigger of the client that wrote them, and the log does not record the
cost of its own summarization calls; this policy compacts within a partition, so at its
default it fires only where a prompt passed 167,000 tokens before the log's compaction, and a
larger reserve (``examples/autocompact_reserve.toml``) asks when compacting earlier pays.

Measured on ``entire-cli/`` as for ``server_compaction`` (``ctxreplay sweep
examples/autocompact_reserve.toml``: one reserve for every request; calibrated, 95% paired
bootstrap intervals; compactions and summary dollars from ``run_sessions.extra``):

| reserve (trigger) | cost saved [95%] | context tokens saved | compactions | summary requests |
|---|---|---|---|---|
| 33,000 (167,000) | -0.15% [-0.27, -0.05] | 0.10% | 8 | $1.70 |
| 50,000 (150,000) | +2.50% [+1.41, +3.76] | 6.10% | 48 | $8.86 |
| 75,000 (125,000) | +8.84% [+6.47, +11.16] | 18.36% | 91 | $17.47 |
| 100,000 (100,000) | +2.00% [-7.79, +9.47] | 26.43% | 306 | $57.79 |
| 133,000 (67,000) | -56.15% [-87.11, -28.06] | 39.31% | 1,671 | $262.56 |

At a fixed 33,000 the policy repeats what the logs' client already did (8 extra compactions where
a prompt passed 167,000 first); a trigger near 125,000 is the cheapest of those tried. At its
default (the trigger by client version: 155,000 for the 2.1.1 - 2.1.20 sessions) it compacts 16
times, $2.91 of summary requests: -0.31% [-0.48, -0.16] (model only -0.56%), 0.20% fewer context
tokens (``ctxreplay replay --db /tmp/e.duckdb --policy claude_code_autocompact``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replay.policies.base import Context, non_negative
from replay.policies.summary import SummaryCompaction

WINDOW = 200_000           # the window the measured triggers are on
DEFAULT_RESERVE = 33_000   # the documented default: 167,000 of 200,000 (DESIGN.md section 4)
MIN_EVIDENCE = 5           # auto compactions a row needs to set its own trigger
STEP = 1_000               # a row's trigger: its smallest preTokens rounded down to this

# (first client version, trigger on a 200,000 window or None = the default, auto compactions):
# derive() on the shared logs (bench/autocompact_trigger.py; the module doc's table)
TRIGGERS: tuple[tuple[str, int | None, int], ...] = (
    ("1.0.45", None, 0),
    ("2.0.76", None, 3),
    ("2.1.1", 155_000, 19),
    ("2.1.22", 167_000, 20),
    ("2.1.91", None, 0),
)


def version_key(v: str | None) -> tuple[int, ...] | None:
    """``"2.1.22"`` -> (2, 1, 22); None for a missing or unparsable version."""
    try:
        return tuple(int(x) for x in str(v).split(".")) if v else None
    except ValueError:
        return None


def derive(versions: dict[str, tuple[list[int], int]], min_evidence: int = MIN_EVIDENCE,
           step: int = STEP) -> list[dict[str, Any]]:
    """The trigger table from, per client version, its auto compactions' preTokens and its
    sustained context (the largest context after which its client sent another request with no
    compaction between; 0 when unknown). In version order, a version joins the current row
    while the row's sustained contexts all stay below its compactions (the trigger lies between:
    a client never carries a context past its trigger, never compacts below it); else it starts
    a row. A row's trigger: its smallest preTokens rounded down to ``step``, when it holds at
    least ``min_evidence`` compactions and agrees with itself; else None (the default)."""
    rows: list[dict[str, Any]] = []
    for v in sorted((v for v in versions if version_key(v) is not None), key=version_key):
        pre, sus = sorted(versions[v][0]), versions[v][1]
        cur = rows[-1] if rows else None
        if cur is not None:
            pooled = cur["pre"] + pre
            if pooled and max(cur["sustained"], sus) >= min(pooled):
                cur = None
        if cur is None:
            cur = {"first": v, "last": v, "pre": [], "sustained": 0}
            rows.append(cur)
        cur["last"] = v
        cur["pre"] = sorted(cur["pre"] + pre)
        cur["sustained"] = max(cur["sustained"], sus)
    for r in rows:
        pre = r["pre"]
        r["compactions"] = len(pre)
        r["min_pre"] = pre[0] if pre else None
        ok = len(pre) >= min_evidence and r["sustained"] < pre[0]
        r["trigger"] = (pre[0] // step) * step if ok else None
    return rows


def trigger_for(version: str | None, table=TRIGGERS) -> int:
    """The trigger on a 200,000 window of a client version: the table's last row starting at or
    before it; the documented default for a row without one, an earlier or unknown version."""
    key = version_key(version)
    found = None
    if key is not None:
        for first, trig, _ in table:
            if version_key(first) <= key:
                found = trig
    return found if found is not None else WINDOW - DEFAULT_RESERVE


class ClaudeCodeAutocompact(SummaryCompaction):
    """Claude Code's auto-compact: when the prompt exceeds the window (200,000) minus a reserve (by client version:
    45,000 for 2.1.1-2.1.20, else 33,000; measured from the logs' compact_boundary records), the conversation is
    summarized (a billed request) and goes on from the summary."""

    name = "claude_code_autocompact"
    source = ("Claude Code auto-compact, trigger per client version measured from the logs' compact_boundary records "
              "(bench/autocompact_trigger.py: 155k of 200k for 2.1.1-2.1.20, 167k otherwise)")

    @dataclass(frozen=True)
    class Params(SummaryCompaction.Params):
        # Size of the summary, o200k tokens (median of the logs' compact summaries: 2,792).
        summary_tokens: float = 2_792.0
        # The model's context window, tokens (200,000 for the logs' models; 1,000,000 for the 1M-context runs).
        window_tokens: int = 200_000
        # Tokens kept free below the window; unset (none): by the request's client version (TRIGGERS:
        # 45,000 for 2.1.1-2.1.20, the measured and documented 33,000 otherwise); a number: for every request.
        reserve_tokens: int | None = None

        def __post_init__(self):
            super().__post_init__()
            reserves = ([self.reserve_tokens] if self.reserve_tokens is not None else
                        [WINDOW - (t or WINDOW - DEFAULT_RESERVE) for _, t, _ in TRIGGERS])
            if self.reserve_tokens is not None:
                non_negative(self, "reserve_tokens")
            if self.window_tokens <= max(reserves):
                raise ValueError(f"window_tokens must be > reserve_tokens ({max(reserves):,})")

    def setup(self, ctx: Context, s: dict[str, Any]) -> None:
        super().setup(ctx, s)
        s["triggers"] = {}  # client version -> trigger, stream units as the prompt is

    def reserve(self, version: str | None) -> int:
        """The reserve for a request of this client version."""
        r = self.params.reserve_tokens
        return r if r is not None else WINDOW - trigger_for(version)

    def trigger(self, ctx: Context, k: int) -> float:
        st = ctx.stream
        v = st.r_version[k] if st.r_version else None
        cache = ctx.state["triggers"]
        t = cache.get(v)
        if t is None:
            t = cache[v] = float(self.params.window_tokens - self.reserve(v))
        return t
