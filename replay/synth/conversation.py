"""The shape of a synthetic session: turns, agent-loop requests, compactions and subagents.

``build_session`` plans a session (number of turns, requests per turn, where it compacts and
where it runs a ``Task`` subagent) and plays it: per turn an idle gap, the user prompt with
its queue and file-history records, then ``_turn``'s agent loop, one API request per step,
each response made of thinking, text and tool calls whose results follow.
"""

from __future__ import annotations

import base64
from random import Random

from replay.ingest.blocktext import tool_use_text
from replay.synth.session import COMPACT_CHARS, TTL_5M_MS, Session, Stream, iso
from replay.synth.tools import FORCED, pick
from replay.synth.wordpools import IDENTS, LEADS, MODULES, NOUNS, PROMPTS


def _turn(s: Session, st: Stream, prompt: str, n_steps: int, task_step: int = -1,
          prompt_uuid: str | None = None) -> None:
    """One user prompt and the agent loop answering it: n_steps API requests."""
    rng, side = s.rng, st.agent_id is not None
    t_start = st.t
    for step in range(-1, n_steps):
        if not side and st.chars > COMPACT_CHARS:
            _compact(s, st)
        if step < 0:
            st.user_text(prompt, prompt_uuid)
            continue
        blocks, tids, calls = _response(s, st, step, n_steps, task_step)
        lines = st.respond(blocks, tids)
        _tool_results(s, st, calls, lines)
        st.t += rng.randint(20, 200)
    if not side:
        st.rec("system", {"subtype": "turn_duration", "durationMs": st.t - t_start, "isMeta": False})


def _response(s: Session, st: Stream, step: int, n_steps: int,
              task_step: int) -> tuple[list[dict], list[int], list[tuple]]:
    """The content blocks of one assistant response, their text ids and its tool calls: maybe
    thinking, then the final summary on the last step, else maybe a lead-in and tool calls."""
    rng, side = s.rng, st.agent_id is not None
    blocks: list[dict] = []
    tids: list[int] = []
    calls: list[tuple] = []

    def add(block: dict, text: str) -> None:
        blocks.append(block)
        tids.append(s.tid(text))

    if rng.random() < (0.15 if side else 0.7 if step == 0 else 0.35):
        th = s.prose(rng.randint(2, 14))
        add({"type": "thinking", "thinking": th,
             "signature": base64.b64encode(rng.randbytes(rng.randint(120, 480))).decode()}, th)
    if step == n_steps - 1:
        mods = "".join(f"- `{p}`: {s.prose(1)}\n" for p in s.modified[-5:])
        st.final = txt = ("## Findings\n\n" if side else "Done. Summary:\n\n") + mods + "\n" + \
            s.prose(rng.randint(3, 25 if side else 10))
        add({"type": "text", "text": txt}, txt)
        return blocks, tids, calls
    if rng.random() < 0.45:
        txt = s.fill(rng.choice(LEADS))
        add({"type": "text", "text": txt}, txt)
    if step == task_step:
        task_prompt = f"Investigate how the {rng.choice(MODULES)} code handles {rng.choice(IDENTS)}. " \
            + s.prose(rng.randint(4, 15))
        calls = [("Task", {"description": f"Explore {rng.choice(MODULES)} {rng.choice(NOUNS)} handling",
                           "prompt": task_prompt, "subagent_type": "general-purpose"})]
    else:
        n = 1 if rng.random() < (0.7 if side else 0.78) else rng.choice([2, 2, 3])
        calls = [pick(s, st, n > 1) for _ in range(n)]
    for c in calls:
        add({"type": "tool_use", "id": "toolu_01" + s.b62(22), "name": c[0], "input": c[1]},
            tool_use_text(c[0], c[1]))
    return blocks, tids, calls


def _tool_results(s: Session, st: Stream, calls: list[tuple], lines: list[dict]) -> None:
    """Run each call of a response (a ``Task`` plays its subagent) and record its result."""
    rng = s.rng
    for c, line in zip(calls, lines[len(lines) - len(calls):]):
        tu_id = line["message"]["content"][0]["id"]
        if c[0] == "Task":
            c = c + _subagent(s, st, c[1]["prompt"])
        else:
            st.t += c[5]
        if c[0] in ("Edit", "MultiEdit", "Write") and rng.random() < 0.3:
            data = {"type": "hook_progress", "hookEvent": "PostToolUse", "hookName": f"PostToolUse:{c[0]}",
                    "command": "ruff format --quiet" if s.lang == "py" else "npx prettier --write"}
            st.rec("progress", {"data": data, "parentToolUseID": tu_id, "toolUseID": tu_id}, chain=False)
        st.result(tu_id, line["uuid"], c[2], c[3], c[4])


def _compact(s: Session, st: Stream) -> None:
    """Auto-compaction: a boundary, then a summary that replaces the whole earlier context."""
    rng = s.rng
    b = st.rec("system", {"parentUuid": None, "logicalParentUuid": st.last, "subtype": "compact_boundary",
                          "content": "Conversation compacted", "isMeta": False, "level": "info",
                          "compactMetadata": {"trigger": "auto", "preTokens": None}})
    st.ops.append(("c", b))
    st.chars = 0
    st.t += rng.randint(10_000, 40_000)
    files = "".join(f"   - {s.abs(p)}\n" for p in list(st.full_seen)[:12])
    summary = ("This session is being continued from a previous conversation that ran out of context. "
               "Summary of the earlier work:\n\n1. Primary request: " + s.prose(2) + "\n2. Files involved:\n"
               + files + "3. Progress so far: " + s.prose(rng.randint(8, 30)) + "\n4. Pending: " + s.prose(3))
    st.user_text(summary, isVisibleInTranscriptOnly=True, isCompactSummary=True)


def _subagent(s: Session, main: Stream, prompt: str) -> tuple:
    """Play a ``Task`` subagent in its own stream; (content, toolUseResult, is_error) of the call."""
    start = main.t
    sub = Stream(s, start + s.rng.randint(200, 800), agent_id="a" + "%06x" % s.rng.getrandbits(24))
    _turn(s, sub, prompt, s.rng.randint(4, 12))
    main.t = sub.t + s.rng.randint(300, 1500)
    content = [{"type": "text", "text": sub.final}]
    ui = {"status": "completed", "prompt": prompt, "agentId": sub.agent_id, "content": content,
          "totalDurationMs": main.t - start, "totalToolUseCount": sub.tool_results}
    return content, ui, False


def _plan(s: Session) -> tuple[list[int], int, int]:
    """Requests per turn, the turn that starts with a compaction and the turn that runs a
    subagent (-1: none)."""
    rng, idx = s.rng, s.idx
    n_turns = rng.randint(4, 12) if idx == 0 else rng.randint(3, 12)
    n_req = max(2 * n_turns + (len(FORCED) if idx == 0 else 0), int(rng.triangular(20, 150, 60)))
    steps = [2] * n_turns
    weights = [rng.random() ** 2 + 0.05 for _ in range(n_turns)]
    for k in rng.choices(range(n_turns), weights, k=n_req - 2 * n_turns):
        steps[k] += 1
    if idx == 0:  # the forced patterns all fit in the first turn
        steps[0] = max(steps[0], len(FORCED) + 1)
    compact_at = rng.randint(max(1, n_turns // 2), n_turns - 1) if idx == 0 or rng.random() < 1 / 3 else -1
    task_turn = rng.randrange(n_turns) if idx == 1 or rng.random() < 1 / 3 else -1
    return steps, compact_at, task_turn


def _idle_gap(rng: Random, ttl: int) -> int:
    """Milliseconds between two turns: mostly short, some long enough to expire the cache."""
    r = rng.random()
    if r < 0.05:
        return rng.randint(65 * 60_000, 180 * 60_000)
    if r < (0.4 if ttl == TTL_5M_MS else 0.35):
        return rng.randint(7 * 60_000, 40 * 60_000)
    return rng.randint(15_000, 150_000)


def _prompt(s: Session, main: Stream, k: int) -> tuple[str, str]:
    """A user prompt with the records Claude Code writes before it (queue operations when typed
    while the agent worked, a file-history snapshot); (prompt, its uuid)."""
    rng = s.rng
    prompt = s.fill(rng.choice(PROMPTS))
    if rng.random() < 0.15:
        prompt += "\n\n```\n" + "\n".join(s.code(rng.randint(10, 60))) + "\n```"
    if k and rng.random() < 0.2:
        for op in ("enqueue", "dequeue"):
            q = {"type": "queue-operation", "operation": op, "timestamp": iso(main.t), "sessionId": s.sid}
            main.records.append({**q, "content": prompt} if op == "enqueue" else q)
            main.t += rng.randint(5, 400)
    u = s.uuid()
    main.records.append({"type": "file-history-snapshot", "messageId": u, "snapshot": {
        "messageId": u, "trackedFileBackups": {}, "timestamp": iso(main.t)}, "isSnapshotUpdate": False})
    return prompt, u


def build_session(idx: int, seed: int, project: tuple[str, str], t0: int) -> Session:
    """Session ``idx`` of a corpus, played in full (records written to its streams, usage not yet)."""
    s = Session(idx, Random(seed), project, t0, forced=list(FORCED) if idx == 0 else [])
    rng = s.rng
    main = Stream(s, t0)
    steps, compact_at, task_turn = _plan(s)
    hook = {"type": "hook_progress", "hookEvent": "SessionStart", "hookName": "SessionStart:startup",
            "command": "$HOME/.claude/hooks/session-start.sh"}
    hook_id = s.uuid()
    main.rec("progress", {"data": hook, "parentToolUseID": hook_id, "toolUseID": hook_id})
    for k in range(len(steps)):
        if k:
            main.t += _idle_gap(rng, main.ttl)
        if k == compact_at:
            _compact(s, main)
        prompt, u = _prompt(s, main, k)
        main.t += rng.randint(1, 40)
        _turn(s, main, prompt, steps[k], rng.randrange(steps[k] - 1) if k == task_turn else -1, prompt_uuid=u)
    return s
