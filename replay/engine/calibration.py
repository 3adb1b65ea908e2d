"""Cache events the log shows but the trace cannot: decided once, in the log's own world.

Four kinds of event change a stream's cache outside what the requests' content implies
(docs/replay-model.md, "What comes from the log"):

* **thinking switches** (a model rule, every variant): a request that opens a user turn with
  extended thinking switched on or off since the previous turn cannot read the message
  entries (Anthropic documents that a change of thinking parameters invalidates message
  cache breakpoints while system and tools stay cached). Visible only for models with
  budget thinking, where a turn's first response holds a thinking block exactly when
  thinking is on; adaptive-thinking models (Opus/Sonnet 4.6 and later) decide per response.

* **client rewrites** (model rules, every variant): requests before which the client
  re-rendered the conversation from its first message, so only the system prefix can be
  read: a resumed session (the log records the resume; Claude Code rebuilds its project
  context when a session starts), and, in Claude Code 2.1.32 to 2.1.37, the first turn after
  a turn that used the task tools (evidence in docs/replay-model.md).

* **turn-end writes** (a model rule, every variant): Claude Code 2.x sends an unlogged
  request when a turn ends in assistant text (its prompt suggestion), which caches the
  conversation up to that text when the response ends. With calibration on, only where the
  recorded read of the next request reaches that prefix.
* **observed evictions** (calibrated only, and in every variant at requests whose time the
  log does not give, see `unknown_times`): the recorded read covers less than the replay
  holds; `arrays.eviction_positions` gives the block position.
* **observed writes** (calibrated only): the recorded read covers blocks beyond every entry
  the no-op replay holds alive, so a request the log does not show (an interrupted prompt, a
  retried call) cached that prefix.

Every decision is taken in the log's world, from recorded usage and the no-op replay's
cache, and is the same for every policy; only the *content* an event writes is the policy's
own prefix. So a policy that changes nothing faces exactly the no-op's events and costs
exactly what the no-op costs, and no policy is granted cache the log does not show.
"""

from __future__ import annotations

import re

from replay.model.arrays import EVICT_TOLERANCE, K_THINKING, K_TOOL_USE, KIND_CODE, Stream
from replay.model.cache import EARNED_VERSIONS, TOOL_SEARCH_FROM, CacheConfig

# blocks that open a user turn (a tool_result continues the assistant's turn)
USER_KINDS = frozenset(KIND_CODE[k] for k in ("user_text", "attachment", "image"))
K_ASSISTANT_TEXT = KIND_CODE["assistant_text"]
# a request opens a user turn when a block the user typed (or pasted) precedes it; attachments
# (hook output, reminders) also arrive inside a turn
TURN_KINDS = frozenset(KIND_CODE[k] for k in ("user_text", "image"))
RESPONSE_KINDS = frozenset(KIND_CODE[k] for k in ("thinking", "assistant_text", "tool_use"))

# Models whose extended thinking is enabled with a token budget (on or off per request): a
# response holds a thinking block when thinking is on. Adaptive-thinking models (Opus 4.6,
# Sonnet 4.6 and later) may answer without thinking while it is on, so their switches are
# not visible in the log.
_BUDGET_THINKING = re.compile(
    r"claude-(?:3-7-sonnet|sonnet-4|sonnet-4-0|sonnet-4-5|opus-4|opus-4-0|opus-4-1|opus-4-5|haiku-4-5)"
    r"(?:-\d{8})?(?:$|[@:]|-v\d|-latest)")


def budget_thinking(model: str) -> bool:
    """Whether ``model`` turns extended thinking on with a budget (so the log shows the switch).
    Dotted versions (``claude-opus-4.5``) are read as dashed ones."""
    return bool(_BUDGET_THINKING.search((model or "").replace(".", "-")))


def response_thinks(st: Stream, k: int) -> bool | None:
    """Whether request k's response holds a thinking block (None: the log holds no response)."""
    end = st.r_pos[k + 1] if k + 1 < st.n_requests else st.n_blocks
    seen = False
    for b in range(st.r_pos[k], end):
        kind = st.bkind[b]
        if kind == K_THINKING:
            return True
        if kind in RESPONSE_KINDS:
            seen = True
    return False if seen else None


def thinking_switches(st: Stream, models: list[str], cfg: CacheConfig) -> list[bool]:
    """Per request: True where it opens a user turn whose thinking state differs from the
    previous turn's, for a budget-thinking model, with the same model and partition as the
    request before it (a model switch or a compaction is a break of its own). A turn's state
    is whether its first response the log holds thinks; a turn without one keeps the
    previous turn's state."""
    if cfg.thinking_switch == "ignore" or cfg.breakpoints == "none":
        return [False] * st.n_requests
    memo = st.__dict__.get("_thinking_switch_memo")
    if memo is not None:
        return memo
    out = [False] * st.n_requests
    bk, r_pos, r_model, r_part = st.bkind, st.r_pos, st.r_model, st.r_partition
    state: bool | None = None  # the thinking state of the last turn whose state is known
    pending = True  # the current turn's state is not known yet (no response seen in it)
    for k in range(st.n_requests):
        lo = r_pos[k - 1] if k else 0
        if k and (r_model[k] != r_model[k - 1] or r_part[k] != r_part[k - 1]):
            state, pending = None, True  # a new model or partition starts from the state it shows
        if k == 0 or any(bk[b] in TURN_KINDS for b in range(lo, r_pos[k])):
            pending = True
        now = response_thinks(st, k)
        if now is None or not pending:
            continue
        # the turn's first known response (a retry of an unanswered first request counts)
        if state is not None and now != state and k and r_model[k] == r_model[k - 1] \
                and r_part[k] == r_part[k - 1] and budget_thinking(models[r_model[k]]):
            out[k] = True
        state, pending = now, False
    st.__dict__["_thinking_switch_memo"] = out
    return out


# Claude Code versions (inclusive) in which the turn after a turn that called the task tools
# re-renders the conversation from its first message (docs/replay-model.md: on entire-cli/,
# 12 of 12 such turns broke in 2.1.32-2.1.37, none of 9 in 2.1.38-2.1.39).
TASK_TURN_VERSIONS = ((2, 1, 32), (2, 1, 37))
TASK_TOOLS = ("TaskCreate", "TaskUpdate")
TOOL_SEARCH = "ToolSearch"  # Claude Code's tool that loads deferred tool definitions
_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


def version_tuple(v: str | None) -> tuple[int, ...] | None:
    """(major, minor, patch) of a client version like "2.1.37", None if it is not one."""
    m = _VERSION.match(v or "")
    return tuple(int(x) for x in m.groups()) if m else None


def earned_version(v: str | None) -> bool:
    """The client version lies within ``EARNED_VERSIONS`` (a rule set to "earned" applies)."""
    t = version_tuple(v)
    return t is not None and EARNED_VERSIONS[0] <= t <= EARNED_VERSIONS[1]


# Client events after which the client renders the project context again (a new process):
# Claude Code's prompt-caching page says the project context changes when the session starts
# (docs/replay-model.md, "Resumed sessions"). /clear starts a new partition instead.
RESTART_EVENTS = frozenset({"resume"})
SKILL_EVENT = "skill"  # a skill was loaded before the request (docs/replay-model.md, "Skill turns")


def client_rewrites(st: Stream, tool_names: list[str], cfg: CacheConfig) -> list[bool]:
    """Per request: True where the client re-rendered the conversation from its first message
    before it, so the message entries are invalid and the system prefix stays
    (:func:`rewrite_causes` names the rule)."""
    return [c is not None for c in rewrite_causes(st, tool_names, cfg)]


def rewrite_causes(st: Stream, tool_names: list[str], cfg: CacheConfig) -> list[str | None]:
    """Per request, the client rule under which the client re-rendered the conversation from
    its first message before it (the first that applies), or None:

    * "resumed", ``cfg.resume == "invalidate"``: the log records a resume before the request
      (``r_event`` in ``RESTART_EVENTS``);
    * "task_turn", ``cfg.task_turns == "invalidate"``: the request opens a user turn, the
      previous user turn called a task tool (``TASK_TOOLS``), and the log gives a client
      version within ``TASK_TURN_VERSIONS`` for it;
    * "skill_turn", ``cfg.skill_turns == "invalidate"`` (or "earned", within
      ``EARNED_VERSIONS``): the request opens a user prompt's turn, and a skill was loaded in the
      previous request's turn or with this prompt (``r_event == "skill"``);
    * "tool_search", ``cfg.tool_search == "invalidate"``: the request follows the stream's first
      ToolSearch call and its client version is ``TOOL_SEARCH_FROM`` or later.

    A request with another model or partition than the one before is a break of its own."""
    n = st.n_requests
    if cfg.breakpoints == "none" or n == 0 or (
            cfg.resume == "ignore" and cfg.task_turns == "ignore" and cfg.skill_turns == "ignore"
            and cfg.tool_search == "ignore"):
        return [None] * n
    codes = frozenset(i for i, name in enumerate(tool_names) if name in TASK_TOOLS)
    search = frozenset(i for i, name in enumerate(tool_names) if name == TOOL_SEARCH)
    key = (cfg.resume, cfg.task_turns, cfg.skill_turns, cfg.tool_search, codes, search)
    memo = st.__dict__.get("_client_rewrites_memo")
    if memo is not None and memo[0] == key:
        return memo[1]
    out: list[str | None] = [None] * n
    events = st.r_event or [None] * n
    if cfg.skill_turns != "ignore" and SKILL_EVENT in events:
        ut = st.r_user_turn
        skill_turns = {ut[k] for k in range(n) if events[k] == SKILL_EVENT}
        for k in range(1, n):
            if ut[k] != ut[k - 1] and (ut[k - 1] in skill_turns or events[k] == SKILL_EVENT) and (
                    cfg.skill_turns == "invalidate" or earned_version(st.r_version[k] if st.r_version else None)):
                out[k] = "skill_turn"
    if cfg.tool_search == "invalidate" and search and st.r_version:
        bk, tool, r_pos = st.bkind, st.tool, st.r_pos
        first = next((b for b in range(st.n_blocks) if bk[b] == K_TOOL_USE and tool[b] in search), None)
        k = next((k for k in range(n) if first is not None and r_pos[k] > first), None)
        v = version_tuple(st.r_version[k]) if k else None
        if k and v is not None and v >= TOOL_SEARCH_FROM:
            out[k] = "tool_search"
    if cfg.task_turns == "invalidate" and st.r_version:
        lo, hi = TASK_TURN_VERSIONS
        bk, tool, r_pos = st.bkind, st.tool, st.r_pos
        used = prev_used = False  # the current / previous user turn called a task tool
        for k in range(n):
            start = r_pos[k - 1] if k else 0
            opens = any(bk[b] in TURN_KINDS for b in range(start, r_pos[k]))
            if opens:
                prev_used, used = used, False
                v = version_tuple(st.r_version[k])
                if prev_used and k and v is not None and lo <= v <= hi:
                    out[k] = "task_turn"
            end = r_pos[k + 1] if k + 1 < n else st.n_blocks
            if codes and any(tool[b] in codes for b in range(r_pos[k], end) if bk[b] == K_TOOL_USE):
                used = True
    if cfg.resume == "invalidate":
        for k in range(1, n):
            if events[k] in RESTART_EVENTS:
                out[k] = "resumed"
    for k in range(1, n):
        if out[k] and (st.r_model[k] != st.r_model[k - 1] or st.r_partition[k] != st.r_partition[k - 1]):
            out[k] = None
    st.__dict__["_client_rewrites_memo"] = (key, out)
    return out


def tolerance(read: float) -> float:
    """How far a recorded read may fall short of a prefix and still cover it (anchored sizes
    spread tokens proportionally, so block boundaries are approximate)."""
    return max(64.0, EVICT_TOLERANCE * read)


def turn_ends(st: Stream) -> list[tuple[int, int]]:
    """Per request: (u, t_end) when the request opens a user turn right after a response that
    ended in assistant text — blocks [u, pos) are user blocks, block u-1 is assistant text,
    all after the previous request — else (-1, 0). ``t_end`` is when that response ended
    (its last block's time; the previous request's time if the log has none)."""
    memo = st.__dict__.get("_turn_end_memo")
    if memo is not None:
        return memo
    out: list[tuple[int, int]] = [(-1, 0)] * st.n_requests
    bk, ts, r_pos, r_part = st.bkind, st.ts, st.r_pos, st.r_partition
    for k in range(1, st.n_requests):
        if r_part[k] != r_part[k - 1]:
            continue
        pos, pp = r_pos[k], r_pos[k - 1]
        u = pos
        while u > pp and bk[u - 1] in USER_KINDS:
            u -= 1
        if pp < u < pos and bk[u - 1] == K_ASSISTANT_TEXT:
            out[k] = (u, max(max(ts[pp:u]), st.r_ts[k - 1]))
    st.__dict__["_turn_end_memo"] = out
    return out


# On the shared logs the first block of a response follows its last input block by 3.6 s
# (median), 27 s (99th percentile) and at most 66 s on entire-cli; longer gaps (up to hours,
# only in Claude Code 1.0.x sessions) are rewritten stamps.
MAX_LATENCY_MS = 5 * 60 * 1000


def send_times(st: Stream, cfg: CacheConfig) -> list[int]:
    """Per request, when it was sent: the time of its last input block (the user's prompt, the
    tool result) where the log has one no later than the request's own time, else the
    request's time. The log stamps a request with its response, written when the first
    content block (often a long thinking block) is complete, so the request's time can lie
    seconds to minutes after the cache lookup; with ``cfg.clock == "response"`` the
    request's own time is used. A block stamped more than ``MAX_LATENCY_MS`` before its
    response is not taken as the send time: the log's stamps were rewritten (a resumed copy
    stamps every record alike)."""
    if cfg.clock == "response":
        return st.r_ts  # read-only
    memo = st.__dict__.get("_send_memo")
    if memo is not None:
        return memo
    ts, out = st.ts, []
    for k in range(st.n_requests):
        p, t = st.r_pos[k], st.r_ts[k]
        if p > 0 and 0 < ts[p - 1] <= t and t - ts[p - 1] <= MAX_LATENCY_MS:
            t = ts[p - 1]
        out.append(t)
    st.__dict__["_send_memo"] = out
    return out


def refresh_times(st: Stream, cfg: CacheConfig) -> list[int] | None:
    """Per request, when what it read or wrote starts its TTL (``cfg.clock == "end"``): when
    its response ended, the time of the last block of that response (the assistant blocks
    that follow its input), no earlier than the request's own time; a block stamped more than
    ``MAX_LATENCY_MS`` after the request is not taken (rewritten stamps). None for the other
    clocks (the lookup time is the refresh time)."""
    if cfg.clock != "end":
        return None
    memo = st.__dict__.get("_refresh_memo")
    if memo is not None:
        return memo
    ts, bk, out = st.ts, st.bkind, []
    n = st.n_blocks
    for k in range(st.n_requests):
        t = st.r_ts[k]
        end = t
        i = st.r_pos[k]
        while i < n and bk[i] in RESPONSE_KINDS:
            b = ts[i]
            if end < b <= t + MAX_LATENCY_MS:
                end = b
            i += 1
        out.append(end)
    st.__dict__["_refresh_memo"] = out
    return out


def unknown_times(st: Stream, cfg: CacheConfig) -> list[bool]:
    """Per request: True where the log gives no time for it, so the model cannot judge idle
    gaps and TTLs there (``cfg.unknown_times == "log"``): its time stamp is shared with
    another request of the stream. No two responses end in the same millisecond; a shared
    stamp means the client rewrote the stamps (Claude Code 1.0.x stamped a copied
    conversation with one time). At these requests the recorded read decides, in every
    variant: the observed evictions apply."""
    n = st.n_requests
    if cfg.unknown_times == "model" or n < 2:
        return [False] * n
    memo = st.__dict__.get("_unknown_times_memo")
    if memo is not None:
        return memo
    seen: dict[int, int] = {}
    for t in st.r_ts:
        if t >= 0:
            seen[t] = seen.get(t, 0) + 1
    out = [t >= 0 and seen[t] > 1 for t in st.r_ts]
    st.__dict__["_unknown_times_memo"] = out
    return out


def base_prefix(st: Stream, k: int, u: int) -> float:
    """The log's own size of request k's prefix up to block u (overhead, blocks, residual)."""
    csum = base_csum(st)
    s0 = st.part_start.get(st.r_partition[k], 0)
    res = st.r_residual[k] if st.r_residual else 0.0
    return st.overhead.get(st.r_model[k], 0.0) + csum[u] - csum[s0] + res


def base_csum(st: Stream) -> list[float]:
    """Prefix sums of the stream's baseline (anchored) block sizes, memoized; read-only."""
    got = st.__dict__.get("_base_csum")
    if got is None:
        got = [0.0]
        acc = 0.0
        for x in st.tokens:
            acc += x
            got.append(acc)
        st.__dict__["_base_csum"] = got
    return got


def fork_writes(st: Stream, cfg: CacheConfig) -> list[tuple[int, int]]:
    """Per request, the turn-end write to replay before it: (u, t_end) or (-1, 0)."""
    if cfg.turn_end_write == "none" or cfg.breakpoints == "none":
        return [(-1, 0)] * st.n_requests
    ends = turn_ends(st)
    if cfg.turn_end_write == "v2":
        ends = [e if _major(st.r_version[k] if st.r_version else None) >= 2 else (-1, 0) for k, e in enumerate(ends)]
    elif cfg.turn_end_write == "earned":
        ends = [e if earned_version(st.r_version[k] if st.r_version else None) else (-1, 0)
                for k, e in enumerate(ends)]
    if cfg.observed_evictions != "log":
        return ends
    out = []
    for k, (u, t_end) in enumerate(ends):
        rr = st.r_read[k]
        if u >= 0 and st.r_has_usage[k] and rr + tolerance(rr) >= base_prefix(st, k, u):
            out.append((u, t_end))
        else:
            out.append((-1, 0))
    return out


def _major(version: str | None) -> int:
    """The major number of a client version ("2.1.37" -> 2); 0 where the log gives none."""
    if not version:
        return 0
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else 0


def observed_write_position(st: Stream, k: int, pos: int) -> int:
    """The last block position request k's recorded read covers (the partition start if none)."""
    csum = base_csum(st)
    rr = st.r_read[k]
    s0 = st.part_start.get(st.r_partition[k], 0)
    res = st.r_residual[k] if st.r_residual else 0.0
    lim = rr + tolerance(rr) - st.overhead.get(st.r_model[k], 0.0) - res + csum[s0]
    return observed_write_position_at(csum, lim, s0, pos)


def observed_write_position_at(csum: list[float], lim: float, s0: int, pos: int) -> int:
    """The last position p in [s0, pos] with csum[p] <= lim (s0 if none)."""
    from bisect import bisect_right

    p = bisect_right(csum, lim, s0, pos + 1) - 1
    return p if p > s0 else s0


def openai_reasoning_cuts(st: Stream, cfg: CacheConfig, openai: list[bool]) -> list[int]:
    """Per request: the block position past which no cache entry is a prefix of its prompt
    (``StreamCache.cut_after``), or -1.

    OpenAI reasoning models keep a response's reasoning items in the prompt while the turn's
    tool loop goes on and discard them once a new user turn starts ("the reasoning tokens are
    discarded after each turn", OpenAI's reasoning-items cookbook). So a request that opens a
    user turn (a prompt block since the previous request) shares with the earlier prompts only
    the part before the previous turn's first reasoning block; the turns before that had lost
    their reasoning already. With observed evictions on (the calibrated variant), only where
    the recorded read does not reach past that block. ``openai``: per model code, whether the
    model is OpenAI's."""
    n = st.n_requests
    if cfg.openai_reasoning == "keep" or not any(openai) or n == 0:
        return [-1] * n
    calibrated = cfg.observed_evictions == "log"
    memo = st.__dict__.get("_openai_reasoning_memo")
    if memo is not None and memo[0] == calibrated:
        return memo[1]
    out = [-1] * n
    bk, r_pos, r_part, r_model = st.bkind, st.r_pos, st.r_partition, st.r_model
    start = 0  # the request that opened the current user turn (or its partition)
    for k in range(1, n):
        if r_part[k] != r_part[k - 1]:
            start = k
            continue
        if not any(bk[b] in TURN_KINDS for b in range(r_pos[k - 1], r_pos[k])):
            continue
        if openai[r_model[k]]:
            for b in range(r_pos[start], r_pos[k]):
                if bk[b] == K_THINKING:
                    # calibrated: a recorded read reaching past the reasoning shows it was kept
                    rr = st.r_read[k]
                    if not calibrated or not st.r_has_usage[k] or rr + tolerance(rr) < base_prefix(st, k, b):
                        out[k] = b
                    break
        start = k
    st.__dict__["_openai_reasoning_memo"] = (calibrated, out)
    return out


def openai_second_requests(st: Stream, cfg: CacheConfig, openai: list[bool]) -> list[bool]:
    """Per request: True at the second request with usage of a stream of an OpenAI model, where
    ``cfg.openai_second_request == "system_only"``: it reads only what other sessions kept warm
    (on every shared Codex log the second request read just the first request's warm read)."""
    n = st.n_requests
    out = [False] * n
    if cfg.openai_second_request != "system_only":
        return out
    first = -1
    for k in range(n):
        if st.r_has_usage[k]:
            if first < 0:
                first = k
                continue
            # a model switch or a compaction is a break of its own
            out[k] = openai[st.r_model[k]] and st.r_model[k] == st.r_model[first] \
                and st.r_partition[k] == st.r_partition[first]
            break
    return out
