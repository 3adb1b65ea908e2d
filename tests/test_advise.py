"""`ctxreplay advise` (issue 36): each cache lever as the client setting that applies it, in
dollars per month, with its interval, both estimators, whether it is in effect, and the
families kept apart."""

import json
import shutil

import pytest
from click.testing import CliRunner

from analysis import advice
from replay.cli import main
from replay.model.arrays import Dataset, Session

from trace_builder import TraceBuilder


def _row(name, saved, base=100.0, lo=None, hi=None, headline="recorded_events", pred=None, family="cache"):
    pct = 100 * saved / base
    return {"name": name, "family": family, "summary": name, "sessions_changed": 1,
            "baseline": {"cost": base}, "saved": {"cost": saved}, "saved_pct": {"cost": pct},
            "interval_pct": {"cost": {"low": pct if lo is None else lo, "high": pct if hi is None else hi}},
            "headline": headline, "recorded_events": {"saved": saved} if headline == "recorded_events" else None,
            "predictive": {"saved": saved if pred is None else pred, "saved_pct": pct,
                           "interval_pct": {"low": -1.0, "high": 9.0}},
            "agreement": {"same_sign": True, "intervals_overlap": True}, "distinguishable": True}


def _ds(w5_main, w1h_main, w5_sub=0, w1h_sub=0):
    main_b = TraceBuilder(session_key="s1", version="2.1.150")
    main_b.block(100, "user_text", turn=1, ts=0)
    main_b.request(ts=1000, w5=w5_main, w1h=w1h_main, has_usage=True)
    sub_b = TraceBuilder(session_key="s1", version="2.1.150")
    sub_b.block(100, "user_text", turn=1, ts=0)
    sub_b.request(ts=1000, w5=w5_sub, w1h=w1h_sub, has_usage=True)
    return Dataset("t", [Session("s1", "claude-code", [main_b.stream(0, "main"), sub_b.stream(1, "subagent")])],
                   main_b.vocab)


class _Con:
    """Enough of a DuckDB connection for `logs_pace`: one session over 10 days, client 2.1.150."""

    def execute(self, sql, params=None):
        class R:
            def __init__(self, rows):
                self.rows = rows

            def fetchone(self):
                return self.rows[0]

            def fetchall(self):
                return self.rows

        if "min(started_at)" in sql:
            return R([(0, 10 * 86_400_000, 1)])
        return R([("2.1.150",), ("2.1.100",)])


def test_settings_per_month_in_effect_and_families_apart():
    ds = _ds(w5_main=0, w1h_main=1000, w5_sub=1000, w1h_sub=0)  # main at 1h, subagents at 5m
    wi = {"scenarios": [_row("ttl_1h", 2.0, lo=0.5, hi=3.5), _row("ttl_5m", -3.0, lo=-5.0, hi=-1.0),
                        _row("main_1h_sub_5m", 1.0, lo=-0.5, hi=2.5), _row("main_5m_sub_1h", -1.0, lo=-2.0, hi=0.5),
                        _row("keepalive_15m", 0.5, lo=-0.2, hi=1.2),
                        _row("rates_sonnet_4_5", 30.0, family="price"), _row("openai_caching", 10.0, family="provider")]}
    got = advice.advise(_Con(), "t", ds, wi)
    assert got["days"] == 10.0 and got["client_versions"] == ["2.1.100", "2.1.150"]
    by = {s["lever"]: s for s in got["settings"]}
    # $2 over 10 days: $6.09 a month, the interval scaled alike (percent of the $100 baseline)
    assert by["ttl_1h"]["per_month"] == pytest.approx(2.0 * 30.44 / 10)
    assert by["ttl_1h"]["per_month_interval"] == pytest.approx([0.5 * 30.44 / 10, 3.5 * 30.44 / 10])
    assert by["ttl_1h"]["setting"] == "ENABLE_PROMPT_CACHING_1H" and "ENABLE_PROMPT_CACHING_1H=1" in by["ttl_1h"]["line"]
    assert by["ttl_1h"]["your_client_has_it"] is True  # 2.1.150 >= 2.1.108
    assert by["main_1h_sub_5m"]["your_client_has_it"] is False  # reported for 2.1.243
    # the logs show main 1h and subagents 5m: that setting is in effect, every-write-1h is not
    assert by["main_1h_sub_5m"]["in_effect"] is True and by["ttl_1h"]["in_effect"] is False
    assert by["main_1h_sub_5m"]["how_sure"] == "already in effect in these logs"
    assert by["ttl_5m"]["how_sure"].startswith("costs more")
    assert by["ttl_1h"]["how_sure"].startswith("probably saves")  # the predictive interval includes 0
    # settings: not yet in effect first, by dollars; model and provider never among them or the habits
    assert [s["lever"] for s in got["settings"]][-1] == "main_1h_sub_5m"
    assert {s["lever"] for s in got["settings"]} == {"ttl_1h", "ttl_5m", "main_1h_sub_5m", "main_5m_sub_1h"}
    assert [h["lever"] for h in got["habits"]] == ["keepalive_15m"]
    assert [x["lever"] for x in got["model_choice"]] == ["rates_sonnet_4_5"]
    assert [x["lever"] for x in got["provider"]] == ["openai_caching"]
    assert advice.first_line(got).startswith("**Setting to try:** `export ENABLE_PROMPT_CACHING_1H=1`")


def test_no_setting_to_try_says_so():
    ds = _ds(w5_main=1000, w1h_main=0)
    wi = {"scenarios": [_row("ttl_1h", 0.1, lo=-1.0, hi=1.0)]}
    got = advice.advise(_Con(), "t", ds, wi)
    assert got["settings"][0]["how_sure"] == "not distinguishable from no change on these logs"
    assert advice.first_line(got).startswith("**Cache settings:** none would have saved money distinguishably")


def test_habits_from_breaks_cost_per_month():
    ds = _ds(w5_main=1000, w1h_main=0)
    brk = {"by_cause": [{"cause": "model_switch", "count": 2, "tokens": 5000, "cost": 1.5}],
           "provider": {"by_reason": [{"reason": "tools_changed", "breaks": 3, "tokens": 9000, "cost": 0.9}]}}
    got = advice.advise(_Con(), "t", ds, {"scenarios": []}, brk)
    by = {h["lever"]: h for h in got["habits"]}
    assert by["avoid_model_switch"]["per_month"] == pytest.approx(1.5 * 30.44 / 10)
    assert by["avoid_tools_changed"]["breaks"] == 3


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory):
    from replay.cli.demo import sample_logs_dir
    from replay.store.load import ingest

    db = tmp_path_factory.mktemp("advise") / "s.duckdb"
    ingest([sample_logs_dir()], db, dataset="sample", key_file=db.parent / "key")
    return db


def test_cli_json_and_text_on_the_sample(sample_db, tmp_path):
    db = tmp_path / "s.duckdb"
    shutil.copy(sample_db, db)
    r = CliRunner().invoke(main, ["advise", "--db", str(db), "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert len(got["settings"]) >= 4
    for s in got["settings"]:
        for key in ("line", "client_versions", "in_effect", "per_month", "per_month_interval", "agreement",
                    "how_sure", "source", "confidence"):
            assert key in s, key
    names = {s["lever"] for s in got["settings"]}
    assert names >= {"main_1h_sub_5m", "main_5m_sub_1h"}  # main vs subagent TTL are scenarios
    assert not names & {"rates_sonnet_4_5", "openai_caching", "no_task_turns"}
    r = CliRunner().invoke(main, ["advise", "--db", str(db)])
    assert r.exit_code == 0, r.output
    assert "What to change" in r.output and "ENABLE_PROMPT_CACHING_1H" in r.output


def test_whatif_names_the_setting_first(sample_db, tmp_path):
    db = tmp_path / "s.duckdb"
    shutil.copy(sample_db, db)
    r = CliRunner().invoke(main, ["whatif", "--db", str(db), "--scenario", "ttl_1h", "--scenario", "ttl_5m"])
    assert r.exit_code == 0, r.output
    first = r.output.strip().splitlines()[0]
    assert first.startswith("Setting to try:") or first.startswith("Cache settings:")


def test_plan_is_a_subscription_only_where_1h_writes_predate_the_api_key_setting():
    early = TraceBuilder(session_key="s1", version="2.1.90")
    early.block(100, "user_text", turn=1, ts=0)
    early.request(ts=1000, w1h=1000, has_usage=True)
    ds = Dataset("t", [Session("s1", "claude-code", [early.stream()])], early.vocab)
    assert advice.infer_plan(ds)["plan"] == "subscription"
    late = TraceBuilder(session_key="s2", version="2.1.150")  # ENABLE_PROMPT_CACHING_1H may explain it
    late.block(100, "user_text", turn=1, ts=0)
    late.request(ts=1000, w1h=1000, has_usage=True)
    assert advice.infer_plan(Dataset("t", [Session("s2", "claude-code", [late.stream()])], late.vocab))["plan"] == \
        "unknown"


def test_opposite_settings_are_alternatives_and_the_larger_saving_is_the_pick():
    ds = _ds(w5_main=500, w1h_main=500, w5_sub=200, w1h_sub=800)  # neither layout in effect
    wi = {"scenarios": [_row("ttl_1h", 2.0, lo=0.5, hi=3.5), _row("ttl_5m", 1.0, lo=0.2, hi=1.8),
                        _row("main_1h_sub_5m", 0.5, lo=-0.5, hi=1.5), _row("main_5m_sub_1h", -1.0, lo=-2.0, hi=0.5)]}
    got = advice.advise(_Con(), "t", ds, wi)
    alt = got["alternatives"]
    assert alt["pick"] == "ttl_1h"  # both save money; the larger saving is the one to set
    assert ["ENABLE_PROMPT_CACHING_1H", "FORCE_PROMPT_CACHING_5M"] in alt["opposites"]
    assert ["promptCacheTtl 1h, subagentPromptCacheTtl 5m", "promptCacheTtl 5m, subagentPromptCacheTtl 1h"] in \
        alt["opposites"]
    by = {s["lever"]: s for s in got["settings"]}
    assert by["ttl_5m"]["opposite"] == "ENABLE_PROMPT_CACHING_1H"
    assert set(by["ttl_5m"]["excludes"]) == {s["setting"] for s in got["settings"]} - {"FORCE_PROMPT_CACHING_5M"}
    # the note names the opposites and the pick with both intervals, a month each
    note = alt["note"]
    assert "ENABLE_PROMPT_CACHING_1H is the opposite of FORCE_PROMPT_CACHING_5M" in note
    assert "pick the one that saves most: ENABLE_PROMPT_CACHING_1H (+$6.09 a month [+$1.52, +$10.65])" in note
    assert "FORCE_PROMPT_CACHING_5M (+$3.04 a month [+$0.61, +$5.48])" in note
    assert "the intervals overlap" in note
    assert by["ttl_5m"]["how_sure"].startswith("probably saves") and "alternative to the first row" in \
        by["ttl_5m"]["how_sure"]
    assert "alternative" not in by["ttl_1h"]["how_sure"]
    md = "\n".join(advice.markdown(got))
    assert "Alternatives, set one only" in md


def _in_effect_but_sure():
    """Claude Code 2026's shape: main 96% at 1 hour, subagents 9%; `main_1h_sub_5m` is in effect
    yet its interval excludes 0 (the other 4% and 9% of writes at its TTLs)."""
    ds = _ds(w5_main=40, w1h_main=960, w5_sub=910, w1h_sub=90)
    wi = {"scenarios": [_row("ttl_1h", 0.5, lo=-0.1, hi=1.2), _row("ttl_5m", -15.0, lo=-20.0, hi=-8.0),
                        _row("main_1h_sub_5m", 0.66, lo=0.02, hi=1.45), _row("main_5m_sub_1h", -15.0, lo=-20, hi=-8)]}
    return ds, wi


def test_a_setting_in_effect_is_no_saving_and_the_summary_agrees_with_the_rows():
    ds, wi = _in_effect_but_sure()
    got = advice.advise(_Con(), "t", ds, wi)
    by = {s["lever"]: s for s in got["settings"]}
    s = by["main_1h_sub_5m"]
    assert s["in_effect"] is True and s["interval_pct"]["low"] > 0  # the figure excludes 0 ...
    assert s["how_sure"].startswith("already in effect in these logs; its figure prices the other 4% of the main "
                                    "conversation's cache writes and 9% of subagents' at its TTLs too, not a saving "
                                    "from setting it")
    assert got["alternatives"]["pick"] is None
    line = advice.first_line(got)  # ... and the summary says what it is, never "no setting" alone
    assert line.startswith("**Cache settings:** none would have saved money distinguishably on these logs beyond "
                           "what is already in effect (`promptCacheTtl 1h, subagentPromptCacheTtl 5m`: +$2.01 a "
                           "month [+$0.06, +$4.41] prices the other 4%")


REAL_ADVISE = advice.advise


def _fake_advise(monkeypatch, ds, wi):
    """`ctxreplay advise` on the sample database, printing the advice built from ``wi`` on ``ds``."""
    monkeypatch.setattr(advice, "advise", lambda con, dataset, _ds, _wi, brk=None, keys=None: REAL_ADVISE(
        _Con(), dataset, ds, wi, brk, keys))


def test_cli_text_in_effect_summary_alternatives_and_no_doubled_word(sample_db, tmp_path, monkeypatch):
    db = tmp_path / "s.duckdb"
    shutil.copy(sample_db, db)
    ds, wi = _in_effect_but_sure()
    _fake_advise(monkeypatch, ds, wi)
    r = CliRunner().invoke(main, ["advise", "--db", str(db), "--no-ingest"])
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.replace("│", " ").split())
    assert "no setting would have saved money distinguishably" in text
    assert "beyond what is already in effect (promptCacheTtl 1h, subagentPromptCacheTtl 5m: +$2.01 a month" in text
    assert "alternatives, set one only" in text and "ENABLE_PROMPT_CACHING_1H is the opposite of" in text
    # the setting to try is a reported one: its source says so once
    ds = _ds(w5_main=500, w1h_main=500, w5_sub=200, w1h_sub=800)
    wi = {"scenarios": [_row("main_1h_sub_5m", 3.0, lo=1.0, hi=5.0), _row("ttl_1h", 2.0, lo=0.5, hi=3.5)]}
    _fake_advise(monkeypatch, ds, wi)
    r = CliRunner().invoke(main, ["advise", "--db", str(db), "--no-ingest"])
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    assert "to try: ~/.claude/settings.json" in text
    assert "reported for Claude Code 2.1.243" in text and "reported: reported" not in text
    assert "pick the one that saves most: promptCacheTtl 1h + subagentPromptCacheTtl 5m" in text


def test_cli_text_says_how_to_set_each_the_plan_and_whose_default_is_in_effect(sample_db, tmp_path, monkeypatch):
    """Newcomer's hour (2026-11-28): the lines to paste were only in --json; a setting the client
    lacks (2.1.150 < 2.1.243) read as "in effect" without saying it is the client's default; the
    plan never showed; an interval broke across two lines of its cell."""
    db = tmp_path / "s.duckdb"
    shutil.copy(sample_db, db)
    ds, wi = _in_effect_but_sure()
    _fake_advise(monkeypatch, ds, wi)
    r = CliRunner().invoke(main, ["advise", "--db", str(db), "--no-ingest"], env={"COLUMNS": "120"})
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    for s in advice.SETTINGS:  # every setting's line to paste, whole, on a line of its own
        assert any(line.strip() == f"{s.name}: {s.line}  (Claude Code {s.since} and later"
                   + ("; your newest client 2.1.150 lacks it)" if s.since == "2.1.243" else ")") for line in lines), s
    rows = [line for line in lines if line.startswith("│ promptCacheTtl 1h")]
    assert len(rows) == 1 and "yes, as your" in rows[0]
    assert "in effect now: what your logs show, main conversation 96% of cache writes at 1 hour, subagents 9%" in \
        r.output
    assert "plan: unknown (the logs do not say whether a subscription or an API key paid)" in r.output
    for line in lines:  # an interval is whole in its cell
        if line.startswith("│") and "[" in line:
            assert "]" in line.split("[", 1)[1], line


def test_cli_text_names_a_subscription_and_what_its_dollars_are(sample_db, tmp_path, monkeypatch):
    db = tmp_path / "s.duckdb"
    shutil.copy(sample_db, db)
    early = TraceBuilder(session_key="s1", version="2.1.90")
    early.block(100, "user_text", turn=1, ts=0)
    early.request(ts=1000, w1h=1000, has_usage=True)
    ds = Dataset("t", [Session("s1", "claude-code", [early.stream()])], early.vocab)
    _fake_advise(monkeypatch, ds, _in_effect_but_sure()[1])
    r = CliRunner().invoke(main, ["advise", "--db", str(db), "--no-ingest"])
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    assert "plan: a subscription (100% of the main conversation's cache writes are 1-hour in client versions " \
           "before 2.1.108" in text and "not what a subscription bills" in text
