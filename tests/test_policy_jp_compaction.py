"""jp_compaction (seed 001, JP RFD 036): the RFD's rules and examples, and hand-computed replays."""

import pytest

from replay.model.cache import CacheConfig
from replay.model.costs import PriceTable
from replay.engine import ReplayOptions, replay_session
from replay.policies.base import ParamError
from replay.policies.jp_compaction import AUTO, JpCompaction

from trace_builder import MIN, TraceBuilder

PRICES = PriceTable(overrides={"m": {"input": 3, "cache_write_5m": 3.75, "cache_write_1h": 6, "cache_read": 0.3,
                                      "output": 15, "min_cacheable": 1024}})


def builder(overhead=10_000):
    return TraceBuilder(overhead=overhead, models=("m",))


def spy(**params):
    """A JpCompaction that records the block sizes each request sees."""
    class Spy(JpCompaction):
        def before_request(self, ctx, k):
            super().before_request(ctx, k)
            self.sizes.append(list(ctx.eff[:ctx.stream.r_pos[k]]))
    p = Spy(JpCompaction.make_params(params))
    p.sizes = []
    return p


def run(b, policy, **cache):
    session, vocab = b.build()
    return replay_session(session, vocab, policy, ReplayOptions(CacheConfig(**cache), PRICES, detail=True))


def two_turns(first_turn, **params):
    """Build turn 1 with ``first_turn(b)``, then turn 2 with one user block, compacting at turn 2."""
    b = builder()
    b.block(500, "user_text", turn=1)
    out = first_turn(b)
    b.request(ts=0)
    b.block(200, "user_text", turn=2)
    b.request(ts=MIN)
    p = spy(trigger_turn=2, **params)
    r = run(b, p)
    return out, p.sizes, r


def test_subsumption_read_1_10_covers_earlier_read_2_5():
    def turn(b):
        old = b.tool_call("Read", 800, resource="src/main.rs", lines=(2, 5), args="2-5")
        new = b.tool_call("Read", 900, resource="src/main.rs", lines=(1, 10), args="1-10")
        return old, new
    (old, new), sizes, r = two_turns(turn, strategies="dedup-tools", keep_last=0)
    # the older call pair (request + response) is removed entirely; the newer one is kept
    assert sizes[1][old - 1] == 0 and sizes[1][old] == 0
    assert sizes[1][new - 1] == 50 and sizes[1][new] == 900
    assert r.figures["step:dedup-tools:blocks"] == 2 and r.figures["step:dedup-tools:tokens"] == 850


def test_subsumption_is_not_symmetric_and_whole_file_covers_partial():
    def narrower_later(b):
        return b.tool_call("Read", 900, resource="a.rs", lines=(1, 10), args="1-10"), \
            b.tool_call("Read", 800, resource="a.rs", lines=(2, 5), args="2-5")
    (old, _), sizes, _ = two_turns(narrower_later, strategies="dedup-tools", keep_last=0)
    assert sizes[1][old] == 900

    def whole_later(b):
        return b.tool_call("Read", 800, resource="a.rs", lines=(2, 5), args="2-5"), \
            b.tool_call("Read", 3000, resource="a.rs", args="whole")
    (old, _), sizes, _ = two_turns(whole_later, strategies="dedup-tools", keep_last=0)
    assert sizes[1][old] == 0

    (old, _), sizes, _ = two_turns(whole_later, strategies="dedup-tools", keep_last=0, subsumption=False)
    assert sizes[1][old] == 800


def test_dedup_tools_keeps_the_newest_identical_call():
    # read_file(path: "src/main.rs") at turns 2 and 7: the turn-2 call is removed
    b = builder()
    b.block(100, "user_text", turn=1)
    b.request(ts=0)
    b.block(100, "user_text", turn=2)
    old = b.tool_call("Bash", 700, args="cargo test")
    other = b.tool_call("Bash", 700, args="cargo check")
    b.request(ts=MIN)
    b.block(100, "user_text", turn=3)
    new = b.tool_call("Bash", 650, args="cargo test")
    b.request(ts=2 * MIN)
    b.block(100, "user_text", turn=4)
    b.request(ts=3 * MIN)
    p = spy(strategies="dedup-tools", trigger_turn=4)
    run(b, p)
    assert p.sizes[3][old - 1] == 0 and p.sizes[3][old] == 0
    assert p.sizes[3][other] == 700 and p.sizes[3][new] == 650


def test_dedup_newer_call_in_kept_turn_removes_older_pair_before_the_boundary():
    b = builder()
    b.block(100, "user_text", turn=1)
    old = b.tool_call("Grep", 700, resource="src", args="grep foo")
    b.request(ts=0)
    b.block(100, "user_text", turn=2)
    b.request(ts=MIN)
    new = b.tool_call("Grep", 700, resource="src", args="grep foo")
    b.request(ts=2 * MIN)                        # mid-turn: no compaction
    b.block(100, "user_text", turn=3)
    b.request(ts=3 * MIN)
    p = spy(strategies="dedup-tools", trigger_turn=2)
    run(b, p)
    # at turn 2's first request the newer grep is not there yet, and compaction fires once
    assert p.sizes[3][old] == 700
    p = spy(strategies="dedup-tools", trigger_turn=3, keep_last=2)
    run(b, p)
    # turns 2 and 3 are kept; the newer call sits in turn 2, the older pair before the boundary goes
    assert p.sizes[3][old] == 0 and p.sizes[3][old - 1] == 0 and p.sizes[3][new] == 700


def test_dedup_leaves_file_mutations_alone_by_default():
    def turn(b):
        old = b.tool_call("Edit", 60, resource="a.rs", args="same-edit")
        b.tool_call("Edit", 60, resource="a.rs", args="same-edit")
        return old
    old, sizes, _ = two_turns(turn, strategies="dedup-tools", keep_last=0)
    assert sizes[1][old] == 60
    # the RFD's hint for fs_modify_file (dedup = false) holds without the kind exclusion too
    old, sizes, _ = two_turns(turn, strategies="dedup-tools", keep_last=0, dedup_exclude_kinds=())
    assert sizes[1][old] == 60
    old, sizes, _ = two_turns(turn, strategies="dedup-tools", keep_last=0, dedup_exclude_kinds=(), tool_hints=False)
    assert sizes[1][old] == 0


def test_strip_tool_results_leaves_a_stub_and_keeps_the_request():
    def turn(b):
        return b.tool_call("Read", 5000, resource="src/main.rs", args="r"), \
            b.tool_call("Bash", 4, args="true", is_error=True)
    (res, tiny), sizes, r = two_turns(turn, strategies="strip-tool-results")
    # ToolCallResponse { result: Ok("[compacted] fs_read_file: success") }: 9 tokens
    assert sizes[1][res] == 9 and sizes[1][res - 1] == 50
    assert sizes[1][tiny] == 4                   # already smaller than the stub
    assert r.figures["step:strip-tool-results:tokens"] == 4991
    (res, _), sizes, _ = two_turns(turn, strategies="strip-tool-results", strip_exclude_tools="Read")
    assert sizes[1][res] == 5000


def test_keep_last_turns_are_untouched():
    b = builder()
    b.block(100, "user_text", turn=1)
    t1 = b.tool_call("Read", 1000, resource="a", args="a")
    b.request(ts=0)
    b.block(100, "user_text", turn=2)
    t2 = b.tool_call("Read", 1000, resource="b", args="b")
    b.request(ts=MIN)
    b.block(100, "user_text", turn=3)
    t3 = b.tool_call("Read", 1000, resource="c", args="c")
    b.request(ts=2 * MIN)
    b.block(100, "user_text", turn=4)
    b.request(ts=3 * MIN)
    for keep, expect in ((1, [9, 9, 9]), (2, [9, 9, 1000]), (3, [9, 1000, 1000]), (4, [1000, 1000, 1000])):
        p = spy(strategies="strip-tool-results", trigger_turn=4, keep_last=keep)
        run(b, p)
        assert [p.sizes[3][i] for i in (t1, t2, t3)] == expect, keep
    # mid-turn requests never compact (the RFD compacts when a query is sent)
    b.tool_call("Read", 1000, resource="d", args="d")
    b.request(ts=4 * MIN)
    p = spy(strategies="strip-tool-results", trigger_turn=4, keep_last=0)
    run(b, p)
    assert p.sizes[4][-1] == 1000


def test_strip_reasoning_and_attachments():
    def turn(b):
        return b.block(400, "thinking"), b.block(300, "attachment"), b.block(80, "assistant_text")
    (th, att, txt), sizes, r = two_turns(turn, strategies="strip-reasoning")
    assert sizes[1][th] == 0 and sizes[1][att] == 300 and sizes[1][txt] == 80
    assert r.figures["step:strip-reasoning:tokens"] == 400
    (th, att, txt), sizes, _ = two_turns(turn, strategies="strip-reasoning,strip-attachments")
    assert sizes[1][att] == 0
    (th, _, _), sizes, _ = two_turns(turn, strategies="strip-reasoning", reasoning_tokens=5)
    assert sizes[1][th] == 5


def test_auto_order_and_per_step_report():
    def turn(b):
        th = b.block(400, "thinking")
        dup = b.tool_call("Read", 1000, resource="a", args="same")
        keep = b.tool_call("Read", 1000, resource="a", args="same")
        return th, dup, keep
    (th, dup, keep), sizes, r = two_turns(turn)
    f = r.figures
    # strip-reasoning first, then dedup (removes the older pair), then strip results (stub the rest)
    assert sizes[1][th] == 0 and sizes[1][dup] == 0 and sizes[1][dup - 1] == 0 and sizes[1][keep] == 9
    assert f["step:strip-reasoning:tokens"] == 400
    assert f["step:dedup-tools:blocks"] == 2 and f["step:dedup-tools:tokens"] == 1050
    assert f["step:strip-tool-results:blocks"] == 1 and f["step:strip-tool-results:tokens"] == 991
    assert f["step:summarize:blocks"] == 0      # 50% of 200,000 is far above this context
    rep = JpCompaction().report(f)
    assert [s["strategy"] for s in rep["steps"]] == list(AUTO)
    assert rep["compactions"] == 1 and rep["events_removed"] == 4
    assert rep["estimated_tokens_saved"] == 400 + 1050 + 991


def test_auto_summarizes_only_above_the_threshold():
    def turn(b):
        b.block(3000, "assistant_text")
        return b.tool_call("Read", 1000, resource="a", args="a")
    # after the mechanical steps: 10,000 + 500 + 3,000 + 50 + 9 + 200 = 13,759 tokens
    _, sizes, r = two_turns(turn, window_tokens=30_000)          # threshold 15,000: no summary
    assert r.figures["step:summarize:blocks"] == 0 and sizes[1][1] == 3000
    _, sizes, r = two_turns(turn, window_tokens=26_000)          # threshold 13,000: summarize
    # everything before the boundary becomes one summary at the start
    assert sizes[1] == [2500, 0, 0, 0, 200]
    assert r.figures["step:summarize:blocks"] == 4


def test_auto_target_stops_the_pipeline_early():
    def turn(b):
        b.block(400, "thinking")
        return b.tool_call("Read", 1000, resource="a", args="a")
    # after strip-reasoning: 10,000 + 500 + 1,050 + 200 = 11,750 <= 0.5 x 24,000
    res, sizes, r = two_turns(turn, window_tokens=24_000, auto_target=0.5)
    assert sizes[1][res] == 1000 and r.figures["step:strip-reasoning:blocks"] == 1
    assert r.figures["step:strip-tool-results:blocks"] == 0


def test_summarize_strategy_runs_unconditionally_and_refolds():
    b = builder()
    b.block(500, "user_text", turn=1)
    b.block(3000, "assistant_text")
    b.request(ts=0)
    b.block(100, "user_text", turn=2)
    b.block(2000, "assistant_text")
    b.request(ts=MIN)
    b.block(100, "user_text", turn=3)
    b.request(ts=2 * MIN)
    p = spy(strategies="summarize", summary_tokens=300, trigger_fraction=0.01, window_tokens=200_000)
    r = run(b, p)
    assert p.sizes[1] == [300, 0, 100, 2000]
    assert p.sizes[2] == [300, 0, 0, 0, 100]
    assert r.figures["busts"] == 2


def test_trigger_fraction_below_changes_nothing():
    def turn(b):
        return b.tool_call("Read", 5000, resource="a", args="a")
    b = builder()
    b.block(500, "user_text", turn=1)
    turn(b)
    b.request(ts=0)
    b.block(200, "user_text", turn=2)
    b.request(ts=MIN)
    r = run(b, JpCompaction())                  # default: 50% of 200,000
    assert r.figures["blocks_changed"] == 0 and r.figures["step:compactions"] == 0
    r = run(b, JpCompaction(JpCompaction.make_params({"window_tokens": 30_000})))   # 15,750 > 15,000
    assert r.figures["step:compactions"] == 1 and r.figures["tokens_saved"] == 4991


def test_prune_tools_shrinks_the_overhead_of_streams_that_compact():
    b = builder()
    b.block(500, "user_text", turn=1)
    b.tool_call("Read", 100, resource="a", args="a")
    b.tool_call("Bash", 100, args="ls")
    b.request(ts=0)
    b.block(200, "user_text", turn=2)
    b.request(ts=MIN)
    params = {"strategies": "prune-tools", "tool_def_tokens": 100, "tools_defined": 10}
    r = run(b, JpCompaction(JpCompaction.make_params({**params, "trigger_turn": 2})))
    # 8 of 10 definitions unused: 800 tokens leave the overhead from the stream's start
    assert r.detail["input_total"] == [10_000 - 800 + 800, 10_000 - 800 + 1_000]
    assert r.figures["step:prune-tools:blocks"] == 8 and r.figures["step:prune-tools:tokens"] == 800
    r = run(b, JpCompaction(JpCompaction.make_params({**params, "trigger_turn": 3})))   # never compacts
    assert r.detail["input_total"] == [10_800, 11_000]


def test_end_to_end_compaction_busts_and_lowers_input():
    b = builder()
    b.block(500, "user_text", turn=1)
    b.request(ts=0)                              # 10,500
    b.tool_call("Read", 3000, resource="/a.py", args="r1")
    b.request(ts=MIN)                            # 13,550
    b.block(200, "user_text", turn=2)
    b.request(ts=2 * MIN)                        # compaction: the 3,000 result becomes a 9-token stub
    b.block(100, "user_text")
    b.request(ts=3 * MIN)                        # same turn: nothing more
    base = run(b, JpCompaction(), ttl="5m")      # below 50% of the window: the noop figures
    r = run(b, JpCompaction(JpCompaction.make_params({"trigger_turn": 2})), ttl="5m")
    assert base.detail["input_total"] == [10_500, 13_550, 13_750, 13_850]
    assert base.detail["cache_read"] == [0, 10_500, 13_550, 13_750] and base.figures["busts"] == 0
    assert r.detail["input_total"] == [10_500, 13_550, 10_759, 10_859]
    # the stub at block 2 invalidates the 13,550 entry: the 10,500 prefix is read, the rest rewritten
    assert r.detail["cache_read"] == [0, 10_500, 10_500, 10_759]
    assert r.detail["cache_write_5m"] == [10_500, 3_050, 259, 100]
    assert r.figures["busts"] == 1 and r.figures["bust_tokens"] == 3_050
    assert r.figures["tokens_saved"] == 2_991
    assert r.figures["input_total"] < base.figures["input_total"]


def test_trimmed_reread():
    b = builder()
    b.block(100, "user_text", turn=1)
    b.tool_call("Read", 1000, resource="a", args="a")
    b.request(ts=0)
    b.block(100, "user_text", turn=2)
    b.request(ts=MIN)                            # result stubbed
    b.tool_call("Read", 1000, resource="a", args="a2")
    b.request(ts=2 * MIN)
    r = run(b, JpCompaction(JpCompaction.make_params({"trigger_turn": 2})))
    assert r.figures["trimmed_reread"] == 1


def test_params():
    with pytest.raises(ParamError, match="did you mean 'keep_last'"):
        JpCompaction.make_params({"keep_lst": 1})
    with pytest.raises(ParamError, match="nope"):
        JpCompaction.make_params({"nope": 1})
    with pytest.raises(ParamError, match="classify-tangents.*not implemented"):
        JpCompaction.make_params({"strategies": "strip-reasoning,classify-tangents"})
    with pytest.raises(ParamError, match="did you mean 'dedup-tools'"):
        JpCompaction.make_params({"strategies": "dedup-tool"})
    with pytest.raises(ParamError, match="cannot be combined"):
        JpCompaction.make_params({"strategies": "auto,summarize"})
    with pytest.raises(ParamError, match="keep_last"):
        JpCompaction.make_params({"keep_last": "-1"})
    with pytest.raises(ParamError, match="dedup_exclude_kinds"):
        JpCompaction.make_params({"dedup_exclude_kinds": "writes"})
    p = JpCompaction.make_params({"strategies": "strip-reasoning, dedup-tools", "trigger_turn": "3"})
    assert p.strategies == ("strip-reasoning", "dedup-tools") and p.trigger_turn == 3
    d = JpCompaction.Params()
    assert d.strategies == ("auto",) and d.keep_last == 1 and d.summarize_threshold == 0.5
    assert d.window_tokens == 200_000 and d.stub_tokens == 9


def test_summary_is_never_longer_than_what_it_replaces():
    b = builder()
    b.block(500, "user_text", turn=1)
    b.block(1000, "assistant_text")
    b.request(ts=0)
    b.block(100, "user_text", turn=2)
    b.request(ts=MIN)
    p = spy(strategies="summarize", summary_tokens=10_000, trigger_turn=2)
    r = run(b, p)
    assert p.sizes[1] == [1500, 0, 100]
    assert r.detail["input_total"][1] == 11_600


# --- the RFD's Default Compaction Hints, from the seed's own table ----------------------------------

SEED_TABLE = """\
| Tool             | `response` | `dedup` | `subsumes`                   |
| ---------------- | ---------- | ------- | ---------------------------- |
| `fs_read_file`   | `strip`    | `true`  | Yes (line range containment) |
| `fs_grep_files`  | `strip`    | `true`  | No                           |
| `fs_list_files`  | `strip`    | `true`  | No                           |
| `cargo_check`    | `strip`    | `true`  | No (each run may differ)     |
| `cargo_test`     | `strip`    | `true`  | No                           |
| `fs_create_file` | `strip`    | `false` | No                           |
| `fs_modify_file` | `strip`    | `false` | No                           |
| `git_diff`       | `strip`    | `true`  | No                           |
| `git_commit`     | `keep`     | `false` | No                           |
"""


def seed_rows():
    rows = {}
    for line in SEED_TABLE.splitlines()[2:]:
        tool, response, dedup, subsumes = (c.strip().strip("`") for c in line.strip("|").split("|"))
        rows[tool] = (response, dedup == "true", subsumes.startswith("Yes"))
    return rows


def test_seed_table_is_the_rfds():
    import os

    from conftest import SHARED

    seed = SHARED / "seeds" / "001_d563c6b71db4a419.txt"
    if not seed.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"seed {seed} is missing under CI=true")
        pytest.skip("seed 001 not available here (a user's fresh clone)")
    assert SEED_TABLE in seed.read_text()


def test_default_hints_are_the_seeds_table():
    from replay.policies.jp_compaction import TOOL_HINTS

    assert TOOL_HINTS == seed_rows()
    assert seed_rows()["git_commit"] == ("keep", False, False)


def test_each_row_of_the_seeds_table_is_applied():
    # every built-in tool called twice with identical arguments in turn 1; compaction at turn 2
    rows = seed_rows()
    b = builder()
    b.block(100, "user_text", turn=1)
    pairs = {}
    for tool in rows:
        pairs[tool] = (b.tool_call(tool, 1000, args=f"{tool}-args"), b.tool_call(tool, 1000, args=f"{tool}-args"))
    # line-range subsumption: read(2,5) then read(1,10) of one file, and the same for grep
    subs = {tool: (b.tool_call(tool, 800, resource="src/main.rs", lines=(2, 5), args=f"{tool}-2-5"),
                   b.tool_call(tool, 900, resource="src/main.rs", lines=(1, 10), args=f"{tool}-1-10"))
            for tool in ("fs_read_file", "fs_grep_files")}
    b.request(ts=0)
    b.block(100, "user_text", turn=2)
    b.request(ts=MIN)
    p = spy(strategies="dedup-tools,strip-tool-results", trigger_turn=2)
    run(b, p)
    after = p.sizes[1]
    for tool, (response, dedup, _) in rows.items():
        old, new = pairs[tool]
        kept = 1000 if response == "keep" else 9
        assert after[new] == kept, tool
        assert after[old] == (0 if dedup else kept), tool
        assert after[old - 1] == (0 if dedup else 50), tool        # the older call's tool_use goes with it
    old, new = subs["fs_read_file"]
    assert after[old] == 0 and after[new] == 9                    # subsumed (rows: "Yes")
    old, new = subs["fs_grep_files"]
    assert after[old] == 9 and after[new] == 9                    # "No": different arguments stay


def test_claude_code_tools_map_onto_the_rows_and_unhinted_tools_keep():
    b = builder()
    b.block(100, "user_text", turn=1)
    res = {name: b.tool_call(name, 1000, args=name) for name in
           ("Read", "Grep", "Glob", "Edit", "Write", "Bash", "Task", "mcp__git__git_commit", "mcp__git__git_diff")}
    b.request(ts=0)
    b.block(100, "user_text", turn=2)
    b.request(ts=MIN)
    p = spy(strategies="strip-tool-results", trigger_turn=2)
    run(b, p)
    got = {name: p.sizes[1][i] for name, i in res.items()}
    assert got == {"Read": 9, "Grep": 9, "Glob": 9, "Edit": 9, "Write": 9, "Bash": 1000, "Task": 1000,
                   "mcp__git__git_commit": 1000, "mcp__git__git_diff": 9}
    p = spy(strategies="strip-tool-results", trigger_turn=2, unhinted_response="strip")
    run(b, p)
    assert [p.sizes[1][res[n]] for n in ("Bash", "Task", "mcp__git__git_commit")] == [9, 9, 1000]
    p = spy(strategies="strip-tool-results", trigger_turn=2, tool_hints=False)
    run(b, p)
    assert all(p.sizes[1][i] == 9 for i in res.values())
    with pytest.raises(ParamError, match="unhinted_response"):
        JpCompaction.make_params({"unhinted_response": "remove"})
