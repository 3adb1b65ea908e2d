"""Acceptance checks on the shared real Claude Code corpus (../shared/logs/claude-code)."""

import json
import random
from pathlib import Path

import duckdb
import pytest

from replay.store.load import ingest

from conftest import shared_logs
from test_ingest import _assert_absent


def _load(path: Path) -> list[dict]:
    if path.suffix == ".json":
        return json.loads(path.read_text())
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    logs = shared_logs("claude-code")
    db = tmp_path_factory.mktemp("corpus") / "cc.duckdb"
    summary = ingest([logs], db, key_file=db.parent / "key")
    return logs, db, summary


def test_all_files_ingest_without_unexplained_skips(corpus):
    logs, db, s = corpus
    assert s.failed == []
    assert s.files == 27 and s.sessions == 27
    assert dict(s.report.skipped) == {}, s.report.messages


def test_requests_and_usage_match_a_count_once_per_message_id(corpus):
    logs, db, _ = corpus
    con = duckdb.connect(str(db), read_only=True)
    for path in sorted(logs.iterdir()):
        # independent count: distinct message.id on main-stream assistant lines; usage from the last line
        last = {}
        for rec in _load(path):
            msg = rec.get("message")
            if rec.get("type") == "assistant" and not rec.get("isSidechain") and msg.get("model") != "<synthetic>":
                last[msg["id"]] = msg["usage"]
        expected = (
            len(last),
            sum(u["input_tokens"] for u in last.values()),
            sum(u.get("cache_creation_input_tokens", 0) for u in last.values()),
            sum(u.get("cache_read_input_tokens", 0) for u in last.values()),
            sum(u["output_tokens"] for u in last.values()),
        )
        n_blocks = _n_blocks(path)
        keys = con.execute("SELECT session_key FROM sessions WHERE n_blocks = ?", [n_blocks]).fetchall()
        assert len(keys) == 1, f"{path.name}: block count {n_blocks} does not identify one session"
        got = con.execute(
            """SELECT count(*), sum(input_tokens), sum(cache_write_5m + cache_write_1h), sum(cache_read),
                      sum(output_tokens)
               FROM requests JOIN streams USING (session_key, stream_id)
               WHERE streams.kind = 'main' AND session_key = ?""",
            [keys[0][0]],
        ).fetchone()
        assert got == expected, path.name
    con.close()


def _n_blocks(path):
    # sessions carry no source path (it is pseudonymized); match by the file's own block count,
    # computed here independently: content parts of user/assistant lines plus attachments.
    n = 0
    seen = set()
    for rec in _load(path):
        inner = (rec.get("data") or {}).get("message") if rec.get("type") == "progress" else None
        if isinstance(inner, dict) and isinstance(inner.get("message"), dict):
            rec = inner  # a line of a Task subagent's transcript: its blocks are the session's too
        if rec.get("uuid") in seen:
            continue
        seen.add(rec.get("uuid"))
        if rec.get("type") == "attachment":
            n += 1
        elif rec.get("type") in ("user", "assistant") and isinstance(rec.get("message"), dict):
            c = rec["message"].get("content")
            n += 1 if isinstance(c, str) else len([p for p in c if isinstance(p, dict)])
    return n


def test_reingest_adds_zero_rows(corpus):
    logs, db, _ = corpus
    con = duckdb.connect(str(db), read_only=True)
    before = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("sessions", "requests", "blocks")}
    con.close()
    s = ingest([logs], db, key_file=db.parent / "key")
    assert (s.ingested, s.unchanged) == (0, 27)
    con = duckdb.connect(str(db), read_only=True)
    after = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("sessions", "requests", "blocks")}
    con.close()
    assert after == before


def test_no_raw_text_from_the_logs_in_the_database(corpus):
    logs, db, _ = corpus
    rng = random.Random(1)
    needles: set[str] = set()
    for path in sorted(logs.iterdir()):
        recs = _load(path)
        for rec in recs:
            cwd = rec.get("cwd")
            if isinstance(cwd, str) and len(cwd) > 8:
                needles.add(cwd)
            msg = rec.get("message")
            if not isinstance(msg, dict):
                continue
            c = msg.get("content")
            if rec.get("type") == "user" and isinstance(c, str) and len(c) > 30:
                needles.add(c[:40])
            if isinstance(c, list):
                for p in c:
                    if p.get("type") == "tool_result" and isinstance(p.get("content"), str):
                        lines = [ln.strip() for ln in p["content"].splitlines() if len(ln.strip()) > 25]
                        needles.update(rng.sample(lines, min(2, len(lines))))
                    if p.get("type") == "tool_use" and isinstance(p.get("input"), dict):
                        fp = p["input"].get("file_path")
                        if isinstance(fp, str):
                            needles.add(fp)
    # hex-only strings could collide with hashes by chance; they carry no text anyway
    needles = {n for n in needles if not all(ch in "0123456789abcdef" for ch in n)}
    assert len(needles) > 500
    _assert_absent(db, sorted(needles))


def test_fidelity_both_variants(corpus):
    """The no-op replay against the recorded usage on the 27 logs. Calibrated (the default every run
    uses): >= 26/27 sessions within the per-session targets, corpus-wide reads 0.5%, writes 2%, cost
    0.5%, >= 99.5% of requests whose simulated read matches the recorded one within max(256 tokens,
    1%). Model only (no observed evictions or later warm prefixes): within 2% on cost (the
    acceptance target), and the values measured on 2026-11-25 as regression floors, after the
    SessionStart-hook events and the dataset's system prefix (19/27, reads +0.19%, writes -5.38%,
    cost -1.12%, 98.15%; before them 18/27, -6.76%, -1.36%, 98.11%). Since the Task subagents
    of 5 files are read from their progress records (43 more requests, 2,801): calibrated
    27/27, reads +0.00%, writes -0.05%, cost -0.01%, 99.96%; model only 19/27, reads +0.18%,
    writes -5.20%, cost -1.12%, 98.14% (the 43 subagent requests alone: reads +0.04%,
    writes -0.21%, 97.67% matched; `python bench/stream_kinds.py`). With the causal system
    prefix, its nearest-version fallback and the response-end clock (2026-11-26): model only
    21/27, cost -0.34%, 98.29% matched (floor 20)."""
    from replay import store
    from replay.engine import ReplayOptions
    from replay.experiments.validate import validate

    _, db, _ = corpus
    con = store.connect(db, read_only=True)
    rep = validate(con, "default", ReplayOptions())
    con.close()
    o = rep["overall"]
    cal, mo = rep["variants"]["calibrated"], rep["variants"]["model_only"]
    assert o["sessions"] == cal["sessions"] == mo["sessions"] == 27
    assert cal["sessions_within_targets"] >= 26 and o["sessions_within_targets"] == cal["sessions_within_targets"]
    e = cal["rel_error"]
    assert abs(e["cache_read"]) <= 0.005 and abs(e["cache_write"]) <= 0.02 and abs(e["cost"]) <= 0.005
    assert cal["request_match"] >= 0.995 and o["request_match"] == cal["request_match"]
    assert o["request_match_counts"]["requests"] == cal["requests"] == 2801
    assert mo["sessions_within_targets"] >= 20
    m = mo["rel_error"]
    assert abs(m["cache_read"]) <= 0.005 and abs(m["cache_write"]) <= 0.06 and abs(m["cost"]) <= 0.015
    assert mo["request_match"] >= 0.98
    # the per-session figures add up to the corpus-wide ones, per variant
    for name in ("calibrated", "model_only", "raw_bpe"):
        per = [s["variants"][name] for s in rep["sessions"]]
        assert sum(p["within_targets"] for p in per) == rep["variants"][name]["sessions_within_targets"]
        for k in ("requests", "matched", "sim_less", "sim_more"):
            assert sum(p[k] for p in per) == rep["variants"][name][k]


def test_fidelity_entire_cli(tmp_path):
    """The 146 entire-cli logs (143 sessions with usage). Calibrated: every acceptance target.
    Model only: within 2% on cost (the acceptance target), and the values measured on 2026-11-25
    as regression floors, after the SessionStart-hook events, the dataset's system prefix and
    the skill turns (107/143, reads +0.06%, writes -1.54%, cost -0.63%, 98.53%; before them
    98/143, writes -6.72%, cost -2.84%, 98.33%). Since the Task subagents are read from their
    progress records (79 subagents, 919 more requests, 10,513): calibrated 143/143, reads
    +0.00%, writes -0.07%, cost -0.03%, 99.99%; model only 108/143, reads +0.06%, writes -1.36%,
    cost -0.60%, 98.65% (the subagent requests alone: reads +0.02%, writes -0.17%, 99.89%
    matched; `python bench/stream_kinds.py`). The floors are unchanged, but the one on
    sessions follows the measure, one below it as before (106 -> 107). Since the causal system
    prefix (2026-11-26: only sessions that started earlier lend theirs, the nearest client
    version where none shows the stream's own, the TTL from the response's end, the turn-end
    write for Claude Code 2.x only): model only 107/143, cost -0.75%, 98.61% matched; the
    in-sample dataset-wide prefix gave 108/143, which a replay may not use (it sees later
    sessions), so the floor is one below the causal measure: 106."""
    from replay import store
    from replay.engine import ReplayOptions
    from replay.experiments.validate import validate

    db = tmp_path / "e.duckdb"
    ingest([shared_logs("entire-cli")], db, key_file=tmp_path / "key")
    con = store.connect(db, read_only=True)
    rep = validate(con, "default", ReplayOptions())
    con.close()
    cal, mo = rep["variants"]["calibrated"], rep["variants"]["model_only"]
    assert cal["sessions"] == 143 and cal["sessions_within_targets"] >= 0.95 * 143
    # the subagents' requests are validated with the main streams'
    con = store.connect(db, read_only=True)
    n_sub = con.execute("SELECT count(*) FROM requests JOIN streams USING (session_key, stream_id) "
                        "WHERE kind = 'progress_subagent' AND has_usage").fetchone()[0]
    n_all = con.execute("SELECT count(*) FROM requests WHERE has_usage").fetchone()[0]
    con.close()
    assert n_sub > 0 and cal["requests"] == n_all
    e = cal["rel_error"]
    assert abs(e["cache_read"]) <= 0.005 and abs(e["cache_write"]) <= 0.02 and abs(e["cost"]) <= 0.005
    assert cal["request_match"] >= 0.995
    m = mo["rel_error"]
    assert mo["sessions_within_targets"] >= 106
    assert abs(m["cache_read"]) <= 0.005 and abs(m["cache_write"]) <= 0.025 and abs(m["cost"]) <= 0.01
    assert mo["request_match"] >= 0.985


def test_held_fold_table_adds_up_and_agrees_with_validate(corpus):
    """bench/fidelity_cv.py's numbers: the default setting's folds add up to validate's
    model-only figures; each alternative is scored on every fold and gets a verdict; the
    dataset-wide prefix derived on the other fold is scored on the held one only."""
    from replay import store
    from replay.engine import ReplayOptions
    from replay.experiments.fidelity_cv import ALTERNATIVES, compare, cross_validate, fold_of, markdown, Score
    from replay.experiments.validate import validate

    _, db, _ = corpus
    con = store.connect(db, read_only=True)
    res = cross_validate(con, "default", ReplayOptions(), k=2)
    mo = validate(con, "default", ReplayOptions())["variants"]["model_only"]
    keys = [k for (k,) in con.execute("SELECT session_key FROM sessions").fetchall()]
    con.close()
    assert res["folds"] == [sum(fold_of(k, 2) == f for k in keys) for f in (0, 1)] and sum(res["folds"]) == 27
    tot = res["total"]["default"]
    assert (tot["sessions"], tot["within_targets"], tot["matched"], tot["requests"]) == \
        (mo["sessions"], mo["sessions_within_targets"], mo["matched"], mo["requests"])
    assert abs(tot["cost_error"] - mo["rel_error"]["cost"]) < 1e-9
    n_alt = sum(len(v) - 1 for v in ALTERNATIVES.values()) + 1  # + dataset (held)
    assert len(res["verdicts"]) == n_alt and all(len(v) == 2 for v in res["verdicts"].values())
    held = res["total"]["system_prefix=dataset (held)"]
    assert held["sessions"] == 27 and held["requests"] == mo["requests"]
    # the Claude Code 1.0.x copies: judging their rewritten stamps as times loses the bill (the
    # folds follow the ingest key, so which fold holds them varies)
    assert "helps" in res["verdicts"]["unknown_times=model"] and res["earned"]["unknown_times=model"]
    assert "| default against |" in markdown(res)
    # the verdict's rule: fewer matches or a larger summed error hurts; equal is "same"
    a = Score(sessions=1, requests=10, matched=9, recorded=1.0, simulated=1.1, abs_error=0.1)
    b = Score(sessions=1, requests=10, matched=8, recorded=1.0, simulated=1.0, abs_error=0.2)
    assert compare(a, b) == "helps" and compare(b, a) == "hurts" and compare(a, a) == "same"
