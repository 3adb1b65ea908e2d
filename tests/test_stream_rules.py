"""The rules' decisions gathered once per stream and cache setting (`replay.engine.stream_rules`)
give the figures the per-request step gave when it asked each rule itself: the flags agree with
the calibration functions, a request not flagged rare needs none of the rare branches, the
precomputed tail start is where `uncached_tail` stops, and the memo keeps cache settings apart
(a sweep replays the same stream objects under several settings in any order)."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from replay.engine import ReplayOptions, replay_session
from replay.engine import stream_rules as sr
from replay.engine.calibration import (
    client_rewrites, fork_writes, thinking_switches, unknown_times,
)
from replay.engine.pricing import uncached_tail
from replay.model.cache import CacheConfig
from replay.policies import build

from conftest import shared_dataset

SETTINGS = {
    "calibrated": CacheConfig(),
    "model_only": CacheConfig(observed_evictions="none"),
    "rules_off": CacheConfig(thinking_switch="ignore", resume="ignore", task_turns="ignore", skill_turns="ignore",
                             turn_end_write="none"),
    "always_1h": CacheConfig(turn_end_write="always", ttl="1h", clock="send"),
}


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    return shared_dataset(tmp_path_factory, "claude-code")


def _fresh(ds):
    """A copy of the dataset without any per-stream memo (as a worker's freshly loaded arrays)."""
    out = copy.deepcopy(ds)
    for s in out.sessions:
        for st in s.streams:
            for key in [k for k in st.__dict__ if k.startswith("_")]:
                del st.__dict__[key]
    return out


def _figures(ds, policy: str, params: dict, cfg: CacheConfig) -> list[dict]:
    opts = ReplayOptions(cfg, detail=True)
    out = []
    for s in ds.sessions:
        r = replay_session(s, ds.vocab, build(policy, params), opts)
        out.append((r.figures, r.detail))
    return out


@pytest.mark.parametrize("name", SETTINGS)
def test_flags_agree_with_the_rules(ds, name):
    cfg = SETTINGS[name]
    seen = {"forks": 0, "drops": 0, "evicts": 0, "frames": 0}
    for s in ds.sessions:
        for st in s.streams:
            rules = sr.stream_rules(st, ds.vocab, cfg, [False] * len(ds.vocab.models))
            n = st.n_requests
            sw = thinking_switches(st, ds.vocab.models, cfg)
            rw = client_rewrites(st, ds.vocab.tool_names, cfg)
            assert rules.forks == fork_writes(st, cfg)
            assert rules.drops == [a or b for a, b in zip(sw, rw)]
            evictions = cfg.observed_evictions == "log" and bool(st.r_evict)
            untimed = unknown_times(st, cfg) if st.r_evict else [False] * n
            for k in range(n):
                evict = (evictions or untimed[k]) and st.r_evict[k] < st.r_pos[k]
                frame = bool(st.r_residual) and k > 0 and st.r_partition[k - 1] == st.r_partition[k] \
                    and st.r_residual[k] < st.r_residual[k - 1]
                assert rules.evicts[k] == evict
                assert rules.frames[k] == frame
                assert rules.rare[k] == (frame or evict or rules.forks[k][0] >= 0 or rules.drops[k])
                seen["forks"] += rules.forks[k][0] >= 0
                seen["drops"] += rules.drops[k]
                seen["evicts"] += evict
                seen["frames"] += frame
    # the corpus exercises the rules (else the test proves nothing for them)
    assert seen["evicts"] > 0 and seen["frames"] > 0
    if name != "rules_off":
        assert seen["forks"] > 0 and seen["drops"] > 0


@pytest.mark.parametrize("name", ["calibrated", "model_only"])
def test_requests_not_flagged_rare_need_no_rare_branch(ds, name, monkeypatch):
    """The step with every request flagged rare (each rule asked at every request, as before the
    flags) gives the same figures, bit for bit, as the step that skips unflagged requests."""
    cfg = SETTINGS[name]
    fresh = _fresh(ds)
    fast = _figures(ds, "devboy_lru", {"capacity": 2, "min_body_chars": 0}, cfg)
    real_init = sr.StreamRules.__init__

    def every_request_rare(self, st, vocab, cfg, openai):
        real_init(self, st, vocab, cfg, openai)
        self.rare = [True] * st.n_requests

    monkeypatch.setattr(sr.StreamRules, "__init__", every_request_rare)
    slow = _figures(fresh, "devboy_lru", {"capacity": 2, "min_body_chars": 0}, cfg)
    same = repr(fast) == repr(slow)  # bit for bit; the message stays short (the figures are long)
    assert same, "figures differ where the step skipped requests not flagged rare"


def test_tail_start_is_where_the_uncached_tail_walk_stops(ds):
    cfg = SETTINGS["calibrated"]
    checked = 0
    for s in ds.sessions:
        for st in s.streams:
            rules = sr.stream_rules(st, ds.vocab, cfg, [False] * len(ds.vocab.models))
            for k in range(st.n_requests):
                unc, lo, pos = st.r_uncached[k], rules.tail_lo[k], st.r_pos[k]
                if unc <= 0 or not lo < pos or st.tokens[lo] <= 0:
                    continue
                # halving every block before the tail leaves the tail as the log has it ...
                eff = [x / 2 if b < lo else x for b, x in enumerate(st.tokens)]
                assert uncached_tail(st, eff, k, unc) == float(unc)
                # ... halving the tail's first block shortens it
                eff[lo] = st.tokens[lo] / 2
                assert uncached_tail(st, eff, k, unc) < unc
                checked += 1
    assert checked > 100


def test_settings_replayed_in_any_order_give_the_same_figures(ds):
    """The per-stream memo is keyed by the whole cache setting: a sweep that replays the same
    stream objects under several settings gets each setting's own figures."""
    fresh = _fresh(ds)
    names = ["calibrated", "model_only", "rules_off"]
    ds = _fresh(ds)
    forward = {n: _figures(ds, "devboy_lru", {"capacity": 3}, SETTINGS[n]) for n in names}
    backward = {n: _figures(fresh, "devboy_lru", {"capacity": 3}, SETTINGS[n]) for n in reversed(names)}
    for n in names:
        same = repr(forward[n]) == repr(backward[n])
        assert same, f"setting {n}: figures depend on the order the settings were replayed in"
    cal = repr(forward["calibrated"])
    differ = cal != repr(forward["rules_off"]) and cal != repr(forward["model_only"])
    assert differ, "the settings should give different figures on this corpus"


def test_a_setting_differing_only_in_one_rule_is_not_served_from_another_settings_memo(ds):
    st = next(st for s in ds.sessions for st in s.streams
              if any(f[0] >= 0 for f in fork_writes(st, CacheConfig())))
    models = [False] * len(ds.vocab.models)
    on = sr.stream_rules(st, ds.vocab, CacheConfig(), models)
    off = sr.stream_rules(st, ds.vocab, replace(CacheConfig(), turn_end_write="none"), models)
    assert any(f[0] >= 0 for f in on.forks) and not any(f[0] >= 0 for f in off.forks)
    assert sr.stream_rules(st, ds.vocab, CacheConfig(), models) is on
