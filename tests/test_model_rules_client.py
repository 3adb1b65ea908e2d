"""Hand-computed tests of the client rules: a resumed session and Claude Code 2.1.32-2.1.37's
task turns re-render the conversation from its first message, and requests whose time the
log does not give are judged by their recorded read (docs/replay-model.md;
`replay.engine.calibration.client_rewrites`, `unknown_times`).

Every expected number is worked out in the comments from the rules. Each case also runs with
the rule off, where the number changes, so a test fails if the rule is wrong or not applied.
"""

import numpy as np
import pytest

from replay.engine import ReplayOptions, replay_session
from replay.engine.calibration import client_rewrites, unknown_times, version_tuple
from replay.experiments.breaks import classify_stream
from replay.model.arrays import eviction_positions
from replay.model.cache import CacheConfig, stored_settings
from replay.model.costs import PriceTable
from replay.policies import build
from replay.store.load import ingest

from cc_records import Transcript, text, tool_use, usage
from test_ingest import q
from trace_builder import MIN, TraceBuilder

OPUS_46 = "claude-opus-4-6"
RATES = {"input": 5, "cache_write_5m": 6.25, "cache_write_1h": 10, "cache_read": 0.5, "output": 25,
         "min_cacheable": 1024}
PRICES = PriceTable(overrides={OPUS_46: RATES})


def client_stream(tool="TaskCreate", version="2.1.37", event=None, recorded=(0, 10_500, 10_000),
                  times=(0, 1 * MIN, 2 * MIN)):
    """10,000 overhead. r0: the user's 500, answered with a tool call (50) whose result is
    2,000; r1: answers in text (300); r2: the user's 200 opens turn 2 (``event`` recorded
    before it). Every request has the log's ``version``; the model never thinks."""
    b = TraceBuilder(overhead=10_000, models=(OPUS_46,))
    b.block(500, "user_text")                                 # 0
    b.request(ts=times[0], read=recorded[0], w5=10_500 - recorded[0], has_usage=True, version=version)
    b.tool_call(tool, 2000)                                   # 1 (tool_use 50), 2 (result 2,000)
    b.request(ts=times[1], read=recorded[1], w5=12_550 - recorded[1], has_usage=True, version=version)
    b.block(300, "assistant_text")                            # 3
    b.block(200, "user_text")                                 # 4
    b.request(ts=times[2], read=recorded[2], w5=13_050 - recorded[2], has_usage=True, version=version,
              event=event)
    b.block(50, "assistant_text")
    return b


def with_evictions(b):
    """The built stream with the observed-eviction positions its recorded reads imply."""
    st = b.stream()
    r = {"r_pos": np.array(st.r_pos), "r_partition": np.array(st.r_partition), "r_read": np.array(st.r_read),
         "r_model": np.array(st.r_model), "r_has_usage": np.array(st.r_has_usage)}
    st.r_evict = eviction_positions(np.array(st.tokens), st.overhead, r, st.part_start,
                                    np.zeros(st.n_requests)).tolist()
    return st


def run(b, **cache):
    st = with_evictions(b)
    from replay.model.arrays import Session
    return replay_session(Session("s1", "claude-code", [st]), b.vocab, build("noop"),
                          ReplayOptions(CacheConfig(**cache), PRICES, detail=True)).detail


def rewrites(b, **cache):
    return client_rewrites(b.stream(), b.vocab.tool_names, CacheConfig(**cache))


# --- which requests the rules flag -------------------------------------------------------------

@pytest.mark.parametrize("version,flagged", [("2.1.32", True), ("2.1.37", True), ("2.1.31", False),
                                              ("2.1.38", False), ("2.1.50", False), (None, False),
                                              ("version-1a2b3c4d", False)])
def test_task_turn_needs_a_version_in_range(version, flagged):
    assert rewrites(client_stream(version=version)) == [False, False, flagged]


@pytest.mark.parametrize("tool", ["TaskCreate", "TaskUpdate"])
def test_task_tools_flag_the_next_turn(tool):
    assert rewrites(client_stream(tool=tool)) == [False, False, True]
    assert rewrites(client_stream(tool=tool), task_turns="ignore") == [False, False, False]


@pytest.mark.parametrize("tool", ["Read", "TaskList", "Task", "TodoWrite"])
def test_other_tools_do_not(tool):
    assert rewrites(client_stream(tool=tool)) == [False, False, False]


def test_only_the_turn_right_after_the_task_turn():
    # turn 3 follows turn 2, which called no task tool: not flagged
    b = client_stream()
    b.block(200, "user_text")
    b.request(ts=3 * MIN, version="2.1.37")
    b.block(50, "assistant_text")
    assert rewrites(b) == [False, False, True, False]


def test_a_task_call_inside_the_turn_does_not_flag_its_own_requests():
    # r1 follows r0's TaskCreate inside turn 1 (a tool result, no new user turn)
    assert rewrites(client_stream())[1] is False


def test_resume_event_flags_its_request():
    b = client_stream(tool="Read", event="resume")
    assert rewrites(b) == [False, False, True]
    assert rewrites(b, resume="ignore") == [False, False, False]
    assert rewrites(b, breakpoints="none") == [False, False, False]


def test_model_change_is_a_break_of_its_own():
    b = TraceBuilder(overhead=10_000, models=(OPUS_46, "claude-sonnet-4-6"))
    b.block(500, "user_text")
    b.request(ts=0)
    b.block(50, "assistant_text")
    b.block(200, "user_text")
    b.request(ts=MIN, model=1, event="resume")
    assert rewrites(b) == [False, False]


def test_memo_follows_the_tool_names():
    # a call without the dataset's tool names must not stick to the stream
    st = client_stream().stream()
    assert client_rewrites(st, [], CacheConfig()) == [False, False, False]
    assert client_rewrites(st, ["TaskCreate"], CacheConfig()) == [False, False, True]


def test_version_tuple():
    assert version_tuple("2.1.37") == (2, 1, 37) and version_tuple("v2.1.4") == (2, 1, 4)
    assert version_tuple("version-abc") is None and version_tuple(None) is None and version_tuple("2.1") is None


# --- the engine: a rewrite keeps only the system prefix ---------------------------------------

def test_engine_task_turn_model_only():
    # r0 (0:00): 10,500 in, nothing cached: writes 10,500 (and the 10,000 system entry).
    # r1 (1:00): 12,550 in: reads 10,500, writes 2,050.
    # r2 (2:00): the turn-end write at 1:00 cached 12,550 + 300 = 12,850; the task turn drops
    # every message entry, the system entry stays: r2 reads 10,000, writes 13,050 - 10,000 = 3,050.
    d = run(client_stream(), observed_evictions="none")
    assert d["cache_read"] == [0, 10_500, 10_000]
    assert d["cache_write_5m"] == [10_500, 2_050, 3_050]
    # without the rule r2 reads the turn-end entry, 12,850, and writes the user's 200
    d = run(client_stream(), observed_evictions="none", task_turns="ignore")
    assert d["cache_read"] == [0, 10_500, 12_850]
    assert d["cache_write_5m"] == [10_500, 2_050, 200]
    # 2.1.38 fixed it: the same as the rule off
    d = run(client_stream(version="2.1.38"), observed_evictions="none")
    assert d["cache_read"] == [0, 10_500, 12_850]


def test_engine_resume_model_only_and_calibrated():
    b = client_stream(tool="Read", event="resume")
    d = run(b, observed_evictions="none")
    assert d["cache_read"] == [0, 10_500, 10_000] and d["cache_write_5m"] == [10_500, 2_050, 3_050]
    d = run(b, observed_evictions="none", resume="ignore")
    assert d["cache_read"] == [0, 10_500, 12_850]
    # calibrated: the log records r2 reading 10,000, which the rule and the eviction both give
    d = run(b)
    assert d["cache_read"] == [0, 10_500, 10_000] and d["cache_write_5m"] == [10_500, 2_050, 3_050]


def test_engine_unknown_times_let_the_recorded_read_decide():
    # r1 and r2 share one stamp (1:00): the log gives them no time of their own. The recorded
    # read of r2 stops at the system prefix (10,000), so its eviction (to block 0) applies even
    # in the model-only variant: r2 reads 10,000 and writes 3,050.
    b = client_stream(tool="Read", times=(0, MIN, MIN))
    assert unknown_times(b.stream(), CacheConfig()) == [False, True, True]
    d = run(b, observed_evictions="none")
    assert d["cache_read"] == [0, 10_500, 10_000] and d["cache_write_5m"] == [10_500, 2_050, 3_050]
    # judged by the model as if no time passed: r2 reads the turn-end entry, 12,850
    d = run(b, observed_evictions="none", unknown_times="model")
    assert d["cache_read"] == [0, 10_500, 12_850]
    # distinct stamps: the model judges (the recorded read is not used in the model-only variant)
    d = run(client_stream(tool="Read"), observed_evictions="none")
    assert d["cache_read"] == [0, 10_500, 12_850]


def test_unknown_times_flags():
    b = client_stream(tool="Read", times=(-1, -1, 5))
    assert unknown_times(b.stream(), CacheConfig()) == [False, False, False]  # no stamp is not a shared one
    b = client_stream(tool="Read", times=(7, 7, 7))
    assert unknown_times(b.stream(), CacheConfig()) == [True, True, True]
    assert unknown_times(b.stream(), CacheConfig(unknown_times="model")) == [False, False, False]


# --- breaks: the resumed and task_turn causes -------------------------------------------------

def _breaks(b):
    rows, _, _ = classify_stream(b.stream(), b.vocab.models, PRICES, b.vocab.tool_names)
    return [(r["request"], r["cause"], r["evidence"], r["cached"], r["read"], r["tokens"]) for r in rows]


def test_breaks_name_the_client_causes():
    # r2 reads the 10,000 system prefix where 12,850 was cached: 2,850 tokens re-billed
    assert _breaks(client_stream()) == [(2, "task_turn", "direct", 12_850, 10_000, 2_850)]
    assert _breaks(client_stream(tool="Read", event="resume")) == [(2, "resumed", "direct", 12_850, 10_000, 2_850)]
    # without either, the same break is an inferred first-message rewrite
    assert _breaks(client_stream(tool="Read"))[0][1] == "first_message_rewritten"
    # idle past the TTL comes first
    assert _breaks(client_stream(times=(0, MIN, 7 * MIN)))[0][1] == "ttl_5m"


def test_runs_stored_before_the_rules_read_as_replayed():
    filled = stored_settings({"ttl": "log"})
    assert (filled["resume"], filled["task_turns"], filled["unknown_times"], filled["skill_turns"]) == \
        ("ignore", "ignore", "model", "ignore")
    CacheConfig(**filled)  # a valid configuration


# --- the reader records the resume and each request's client version --------------------------

def test_reader_records_resume_and_version(tmp_path):
    t = Transcript(version="2.1.37")
    t.user("first prompt")
    t.assistant("m1", [text("ok")], usage(write=5000))
    t.user("<command-name>/exit</command-name>")
    # Claude Code's answer when it resumes a conversation that ended on a user message
    t.raw({**t.records[-1], "type": "assistant", "uuid": "synthetic-1", "isApiErrorMessage": False,
           "message": {"model": "<synthetic>", "id": "syn-1", "type": "message", "role": "assistant",
                       "content": [{"type": "text", "text": "No response requested."}],
                       "usage": {"input_tokens": 0, "output_tokens": 0}}})
    t.version = "2.1.38"
    t.user("second prompt")
    t.assistant("m2", [text("ok")], usage(write=100, read=5000))
    # an API error is synthetic too, but no resume
    t.raw({**t.records[-1], "type": "assistant", "uuid": "synthetic-2", "isApiErrorMessage": True,
           "message": {"model": "<synthetic>", "id": "syn-2", "type": "message", "role": "assistant",
                       "content": [{"type": "text", "text": "API Error: 500"}], "usage": {}}})
    t.user("third prompt")
    t.assistant("m3", [text("ok")], usage(write=100, read=5100))
    db = _ingested(t, tmp_path)
    assert q(db, "SELECT req_idx, client_version, client_event FROM requests ORDER BY req_idx") == \
        [(0, "2.1.37", None), (1, "2.1.38", "resume"), (2, "2.1.38", None)]


def _ingested(t, tmp_path):
    """The transcript written as one log and ingested into a new database; returns its path."""
    t.write_jsonl(tmp_path / "p" / "s.jsonl")
    db = tmp_path / "t.duckdb"
    ingest([tmp_path / "p"], db)
    return db


def _hook(t, source, event="SessionStart"):
    """The progress record Claude Code writes while a hook runs."""
    base = t.records[-1] if t.records else {"sessionId": t.session_id, "version": t.version, "cwd": t.cwd,
                                            "isSidechain": False, "timestamp": "2026-01-01T09:59:59.000Z"}
    return t.raw({**base, "type": "progress", "uuid": f"hook-{len(t.records)}",
                  "data": {"type": "hook_progress", "hookEvent": event, "hookName": f"{event}:{source}",
                           "command": "./hook.sh"}})


def test_reader_records_session_start_hooks(tmp_path):
    t = Transcript(version="2.1.39")
    _hook(t, "clear")    # a session that /clear started opens with this hook: no partition, no event
    t.user("first prompt")
    _hook(t, "startup")  # before the first request: the session's start, no event
    _hook(t, "resume")   # ... even with source resume
    t.assistant("m1", [text("ok")], usage(write=5000))
    _hook(t, "resume")   # the client started again: Claude Code runs SessionStart with source resume
    _hook(t, "resume")   # a second hook of the same event
    t.user("second prompt")
    t.assistant("m2", [text("ok")], usage(write=100, read=5000))
    _hook(t, "compact")  # a compaction has its own record; not an event
    _hook(t, "resume", event="Stop")  # another hook event: not a session start
    t.user("third prompt")
    t.assistant("m3", [text("ok")], usage(write=100, read=5100))
    _hook(t, "clear")    # /clear (or a plan accepted with "clear context"): a new partition
    _hook(t, "clear")    # a second hook of the same /clear: still one
    t.user("Implement the following plan")
    t.assistant("m4", [text("ok")], usage(write=100, read=3000))
    db = _ingested(t, tmp_path)
    assert q(db, "SELECT req_idx, partition, client_event FROM requests ORDER BY req_idx") == \
        [(0, 0, None), (1, 0, "resume"), (2, 0, None), (3, 1, None)]
    # the partition starts after the third answer, with no summary and no token count
    assert q(db, "SELECT pos, partition, trigger, pre_tokens FROM compactions") == [(6, 1, "clear", None)]


def test_files_read_by_an_earlier_revision_are_read_again(tmp_path, monkeypatch):
    # a database ingested before the hooks were read: the next ingest reads the file again
    from replay.ingest import trace

    t = Transcript(version="2.1.39")
    t.user("first prompt")
    t.assistant("m1", [text("ok")], usage(write=5000))
    _hook(t, "resume")
    t.user("second prompt")
    t.assistant("m2", [text("ok")], usage(write=100, read=5000))
    t.write_jsonl(tmp_path / "p" / "s.jsonl")
    db = tmp_path / "t.duckdb"
    monkeypatch.setattr(trace, "TRACE_REVISION", 1)
    first = ingest([tmp_path / "p"], db)
    assert first.ingested == 1
    monkeypatch.setattr(trace, "TRACE_REVISION", 2)
    again = ingest([tmp_path / "p"], db)
    assert (again.new_versions, again.unchanged) == (1, 0)
    assert q(db, "SELECT max(version) FROM source_files") == [(2,)]
    assert q(db, "SELECT count(*) FROM sessions") == [(1,)]
    assert ingest([tmp_path / "p"], db).unchanged == 1  # the same revision: unchanged


def test_reader_ignores_malformed_hook_progress(tmp_path):
    t = Transcript(version="2.1.39")
    t.user("first prompt")
    t.assistant("m1", [text("ok")], usage(write=5000))
    for data in (None, "text", {"type": "hook_progress", "hookEvent": "SessionStart", "hookName": 7},
                 {"type": "hook_progress", "hookEvent": "SessionStart", "hookName": "SessionStart"},
                 {"type": "hook_progress", "hookEvent": "SessionStart", "hookName": "SessionStart:future"}):
        t.raw({**t.records[-1], "type": "progress", "uuid": f"p-{len(t.records)}", "data": data})
    t.user("second prompt")
    t.assistant("m2", [text("ok")], usage(write=100, read=5000))
    db = _ingested(t, tmp_path)
    assert q(db, "SELECT req_idx, client_event FROM requests ORDER BY req_idx") == [(0, None), (1, None)]


def test_old_database_says_to_reingest(tmp_path):
    # a database ingested before schema 7: migration 7 adds the columns as NULL
    import duckdb
    from click.testing import CliRunner

    from replay.cli import main
    from replay import store

    t = Transcript(version="2.1.37")
    t.user("first prompt")
    t.assistant("m1", [text("ok")], usage(write=5000))
    db = _ingested(t, tmp_path)
    con = store.connect(db, read_only=True)
    assert store.sessions_without_client_info(con, "default") == 0
    con.close()
    r = CliRunner().invoke(main, ["breaks", "--db", str(db)])
    assert r.exit_code == 0 and "re-ingest" not in r.stderr
    con = duckdb.connect(str(db))
    con.execute("UPDATE requests SET client_version = NULL, client_event = NULL")
    con.close()
    # a log that records no version, stored by this ctxreplay: re-ingesting would not change it
    r = CliRunner().invoke(main, ["breaks", "--db", str(db)])
    assert r.exit_code == 0 and "re-ingest" not in r.stderr, r.stderr
    con = duckdb.connect(str(db))  # the same session, as a ctxreplay before schema 7 stored it
    con.execute("UPDATE source_files SET ingested_at = (SELECT applied_at FROM schema_migrations "
                "WHERE version = 7) - INTERVAL 1 DAY")
    con.close()
    r = CliRunner().invoke(main, ["breaks", "--db", str(db)])
    assert r.exit_code == 0, r.output
    assert "1 Claude Code session(s)" in r.stderr and "re-ingest" in r.stderr


# --- skill turns -------------------------------------------------------------------------------

def skill_stream(slash=False, version="2.1.37"):
    """10,000 overhead, Opus 4.6 (no thinking switch). Turn 1: the user's 500, answered by a
    Skill call (50) whose result is 2,000, then the skill's content (a meta user message of
    1,000) before r1, which answers in text (300). Turn 2: the user's 200 (r2), answered in
    text (50). With ``slash``, turn 1 is plain and turn 2's prompt loads a skill by slash
    command (its content, 1,000, before r2); turns 3 and 4: the user's 100 (r3, r4)."""
    b = TraceBuilder(overhead=10_000, models=(OPUS_46,))
    b.block(500, "user_text", turn=1)
    b.request(ts=0, read=0, w5=10_500, has_usage=True, version=version)
    b.tool_call("Skill", 2000)
    if not slash:
        b.block(1000, "user_text")                            # the skill's content (meta)
    b.request(ts=MIN, read=10_500, w5=3_050 if not slash else 2_050, has_usage=True, version=version,
              event=None if slash else "skill")
    b.block(300, "assistant_text")
    b.block(200, "user_text", turn=2)
    if slash:
        b.block(1000, "user_text")
    b.request(ts=2 * MIN, read=10_000, w5=4_050, has_usage=True, version=version, event="skill" if slash else None)
    b.block(50, "assistant_text")
    if slash:
        b.block(100, "user_text", turn=3)
        b.request(ts=3 * MIN, read=10_000, w5=5_000, has_usage=True, version=version)
        b.block(50, "assistant_text")
        b.block(100, "user_text", turn=4)                     # turn 4: no skill in turn 3
        b.request(ts=4 * MIN, read=15_000, w5=100, has_usage=True, version=version)
        b.block(50, "assistant_text")
    return b


def test_the_turn_after_a_skill_load_is_flagged():
    from replay.engine.calibration import rewrite_causes

    b = skill_stream()
    assert rewrite_causes(b.stream(), b.vocab.tool_names, CacheConfig()) == [None, None, "skill_turn"]
    assert rewrites(b, skill_turns="ignore") == [False, False, False]


def test_a_slash_command_skill_flags_its_own_turn_and_the_next():
    b = skill_stream(slash=True)
    # r1 is a tool-loop request of turn 1 (the Skill call loads nothing here); r2 opens the
    # slash-command turn, r3 the turn after it; r4's previous turn loaded nothing
    assert rewrites(b) == [False, False, True, True, False]
    assert rewrites(b, skill_turns="ignore") == [False] * 5


def test_a_resume_names_a_turn_that_follows_a_skill_turn():
    from replay.engine.calibration import rewrite_causes

    b = skill_stream()
    b.requests[2]["r_event"] = "resume"
    assert rewrite_causes(b.stream(), b.vocab.tool_names, CacheConfig()) == [None, None, "resumed"]
    assert rewrite_causes(b.stream(), b.vocab.tool_names, CacheConfig(resume="ignore")) == [None, None, "skill_turn"]


def test_a_skill_turn_with_another_model_is_a_model_switch():
    b = skill_stream()
    b.models.append("claude-sonnet-4-6")
    b.requests[2]["r_model"] = 1
    assert rewrites(b) == [False, False, False]


def test_engine_skill_turn_model_only():
    # r0: 10,500 in, writes 10,500. r1: 10,500 + 50 + 2,000 + 1,000 = 13,550 in: reads 10,500,
    # writes 3,050. The turn-end write caches 13,550 + 300 = 13,850 at r1's end. r2 opens the
    # turn after the skill load: the message entries are dropped, it reads the 10,000 system
    # prefix and writes 14,050 - 10,000 = 4,050 (without the rule: reads 13,850, writes 200).
    d = run(skill_stream(), observed_evictions="none")
    assert d["cache_read"] == [0, 10_500, 10_000] and d["cache_write_5m"] == [10_500, 3_050, 4_050]
    d = run(skill_stream(), observed_evictions="none", skill_turns="ignore")
    assert d["cache_read"] == [0, 10_500, 13_850] and d["cache_write_5m"] == [10_500, 3_050, 200]


def test_breaks_name_the_skill_turn():
    # r2 reads the 10,000 system prefix where 13,850 was cached
    assert _breaks(skill_stream()) == [(2, "skill_turn", "direct", 13_850, 10_000, 3_850)]


def _skill_message(t, text_form="list"):
    text = "Base directory for this skill: /home/alice/.claude/skills/review\n\n# Review\n\nSteps..."
    content = text if text_form == "str" else [{"type": "text", "text": text}]
    return t.raw({**t.records[-1], "type": "user", "uuid": f"skill-{len(t.records)}", "isMeta": True,
                  "message": {"role": "user", "content": content}})


def test_reader_records_skill_loads(tmp_path):
    t = Transcript(version="2.1.37")
    t.user("first prompt")
    t.assistant("m1", [tool_use("tu1", "Skill", skill="review")], usage(write=5000))
    t.tool_result("tu1", "Launching skill: review")
    _skill_message(t)                       # the Skill tool's load: the next request follows it
    t.assistant("m2", [text("reviewed")], usage(write=100, read=5000))
    t.user("<command-message>review</command-message>\n<command-name>/review</command-name>")
    _skill_message(t, "str")                # a slash command's load: the turn's first request
    t.assistant("m3", [text("ok")], usage(write=100, read=5100))
    # a meta message with other text, and a prompt the user typed with the phrase: no load
    t.raw({**t.records[-1], "type": "user", "uuid": "meta-other", "isMeta": True,
           "message": {"role": "user", "content": "Caveat: local command output follows"}})
    t.user("Base directory for this skill: is what the docs call it?")
    t.assistant("m4", [text("yes")], usage(write=100, read=5200))
    db = _ingested(t, tmp_path)
    assert q(db, "SELECT req_idx, user_turn, client_event FROM requests ORDER BY req_idx") == \
        [(0, 1, None), (1, 1, "skill"), (2, 2, "skill"), (3, 3, None)]


def test_a_pending_resume_wins_over_a_skill_load(tmp_path):
    t = Transcript(version="2.1.37")
    t.user("first prompt")
    t.assistant("m1", [text("ok")], usage(write=5000))
    _hook(t, "resume")
    t.user("<command-name>/review</command-name>")
    _skill_message(t)
    t.assistant("m2", [text("ok")], usage(write=100, read=5000))
    db = _ingested(t, tmp_path)
    assert q(db, "SELECT req_idx, client_event FROM requests ORDER BY req_idx") == [(0, None), (1, "resume")]
