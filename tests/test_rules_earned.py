"""Client rules applied only in the client versions they were earned on (issue 35;
docs/replay-model.md, "Rules earned on later versions"): the turn-end write and skill turns in
Claude Code 2.0.0-2.1.42, the ToolSearch rule from 2.1.119; and the warm system prefix kept
(`warm_prefix`, measured and off by default). The stream is `test_model_rules_client.client_stream`:
10,000 overhead; r0 the user's 500; r1 after a tool call (50 + 2,000); r2 opens turn 2 after a
300-token answer (turn-end entry 12,850 where the write is modelled, r1's 12,550 where not)."""

import json

import pytest
from click.testing import CliRunner

from replay.cli import main, sample_logs_dir
from replay.model.cache import EARNED_VERSIONS, TOOL_SEARCH_FROM, CacheConfig
from replay.engine.calibration import earned_version, rewrite_causes

from test_model_rules_client import client_stream, run
from trace_builder import TraceBuilder


def rewrites(b, **cache):
    """The client rule that re-rendered the conversation before each request, or None."""
    return rewrite_causes(b.stream(), b.vocab.tool_names, CacheConfig(**cache))


def skill_stream(version):
    """Turn 1 (r0, r1), then turn 2 opened by a slash command that loads a skill (r2)."""
    b = TraceBuilder(overhead=10_000, version=version)
    b.block(500, "user_text", turn=1)
    b.request(ts=0, w5=10_500, has_usage=True)
    b.block(300, "assistant_text")
    b.block(200, "user_text", turn=2)
    b.request(ts=60_000, read=10_500, w5=500, has_usage=True, event="skill")
    b.block(100, "assistant_text")
    b.block(200, "user_text", turn=3)
    b.request(ts=120_000, read=11_000, w5=300, has_usage=True)
    return b


@pytest.mark.parametrize("version,earned", [("2.0.0", True), ("2.1.42", True), ("2.1.43", False),
                                             ("2.1.150", False), ("1.0.77", False), (None, False)])
def test_earned_versions(version, earned):
    assert earned_version(version) is earned
    assert EARNED_VERSIONS == ((2, 0, 0), (2, 1, 42)) and TOOL_SEARCH_FROM == (2, 1, 119)


def test_turn_end_write_only_where_earned():
    # 2.1.30: the unlogged turn-end request cached up to the answer: r2 reads 12,850
    assert run(client_stream(tool="Read", version="2.1.30"), observed_evictions="none")["cache_read"][2] == 12_850
    # 2.1.150: no such request in these versions: r2 reads what r1 wrote, 12,550
    assert run(client_stream(tool="Read", version="2.1.150"), observed_evictions="none")["cache_read"][2] == 12_550
    # the old rule (every 2.x) still applies it there
    d = run(client_stream(tool="Read", version="2.1.150"), observed_evictions="none", turn_end_write="v2")
    assert d["cache_read"][2] == 12_850


def test_skill_turns_only_where_earned():
    # the turn that loads the skill (r1) and the turn after it (r2) are flagged where the rule applies
    assert rewrites(skill_stream("2.1.30")) == [None, "skill_turn", "skill_turn"]
    assert rewrites(skill_stream("2.1.150")) == [None, None, None]
    assert rewrites(skill_stream("2.1.150"), skill_turns="invalidate") == [None, "skill_turn", "skill_turn"]
    assert rewrites(skill_stream("2.1.30"), skill_turns="ignore") == [None, None, None]


def test_tool_search_from_2_1_119():
    # the request after the stream's first ToolSearch call reads only the system prefix: r1 reads
    # 10,000 instead of r0's 10,500, and writes the rest (12,550 - 10,000)
    b = client_stream(tool="ToolSearch", version="2.1.150")
    assert rewrites(b) == [None, "tool_search", None]
    d = run(b, observed_evictions="none")
    assert d["cache_read"][:2] == [0, 10_000] and d["cache_write_5m"][1] == 2_550
    assert run(b, observed_evictions="none", tool_search="ignore")["cache_read"][:2] == [0, 10_500]
    # before 2.1.119 the same call hit
    assert rewrites(client_stream(tool="ToolSearch", version="2.1.100")) == [None, None, None]
    # another tool is no ToolSearch
    assert rewrites(client_stream(tool="Read", version="2.1.150")) == [None, None, None]


def test_warm_prefix_kept_survives_an_idle_stream():
    # r0 reads 10,000 warm (other sessions' system prefix); r2 comes 20 minutes later: with the
    # 5-minute TTL everything expired (it reads 0); kept, the warm prefix is still read
    b = client_stream(tool="Read", version="2.1.150", recorded=(10_000, 10_500, 10_000), times=(0, 60_000, 1_200_000))
    assert run(b, observed_evictions="none")["cache_read"][2] == 0
    assert run(b, observed_evictions="none", warm_prefix="kept")["cache_read"][2] == 10_000
    with pytest.raises(ValueError):
        CacheConfig(warm_prefix="forever")


def test_cli_options_reach_the_configuration(tmp_path):
    from replay.store.load import ingest

    db = tmp_path / "s.duckdb"
    ingest([sample_logs_dir()], db, key_file=tmp_path / "key")
    r = CliRunner().invoke(main, ["validate", "--db", str(db), "--json", "--tool-search", "ignore", "--warm-prefix",
                                  "kept", "--skill-turns", "invalidate", "--turn-end-write", "v2", "--plot",
                                  str(tmp_path / "v.png")])
    assert r.exit_code == 0, r.output
    cfg = json.loads(r.stdout)["cache_config"]
    assert (cfg["tool_search"], cfg["warm_prefix"], cfg["skill_turns"], cfg["turn_end_write"]) == \
        ("ignore", "kept", "invalidate", "v2")
    cfg = CacheConfig().as_dict()
    assert (cfg["tool_search"], cfg["warm_prefix"], cfg["skill_turns"], cfg["turn_end_write"]) == \
        ("invalidate", "ttl", "earned", "earned")
