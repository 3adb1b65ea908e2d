"""The provider's own account of a cache miss (Claude Code 2.1.119+,
``message.diagnostics.cache_miss_reason``): read into the trace, shown by `breaks` beside the
inferred cause, and used by `validate` as labels for the model's predicted misses."""

import json
import os

import duckdb
import pytest
from click.testing import CliRunner

from replay.cli import main
from replay.experiments import provider_reasons
from replay.experiments.breaks import agrees, find_breaks
from replay.model.arrays import Dataset, Session
from replay.model.costs import PriceTable

from conftest import shared_logs
from trace_builder import TraceBuilder

S = 1000
PRICES = PriceTable(overrides={"m": {"input": 3, "cache_write_5m": 3.75, "cache_write_1h": 6, "cache_read": 0.3,
                                     "output": 15}})


def _line(uuid, parent, mid, ts, usage, diagnostics=None, version="2.1.150", content=None):
    msg = {"id": mid, "model": "claude-sonnet-4-5", "role": "assistant",
           "content": content or [{"type": "text", "text": "ok " + uuid}], "usage": usage}
    if diagnostics is not False:
        msg["diagnostics"] = diagnostics
    return {"type": "assistant", "uuid": uuid, "parentUuid": parent, "sessionId": "sess-1", "version": version,
            "timestamp": ts, "requestId": "req-" + mid, "message": msg}


def _user(uuid, parent, ts, text):
    return {"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": "sess-1", "version": "2.1.150",
            "timestamp": ts, "message": {"role": "user", "content": text}}


def _usage(read, w1h, inp=3):
    return {"input_tokens": inp, "cache_read_input_tokens": read, "cache_creation_input_tokens": w1h,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": w1h},
            "output_tokens": 10}


def _log(tmp_path, reason):
    recs = [
        _user("u1", None, "2026-06-01T10:00:00.000Z", "hello " * 300),
        _line("a1", "u1", "m1", "2026-06-01T10:00:05.000Z", _usage(0, 20_000), diagnostics=None),
        {"type": "ai-title", "aiTitle": "a title", "sessionId": "sess-1"},
        {"type": "permission-mode", "permissionMode": "default", "sessionId": "sess-1"},
        _user("u2", "a1", "2026-06-01T10:01:00.000Z", "more " * 300),
        _line("a2", "u2", "m2", "2026-06-01T10:01:05.000Z", _usage(0, 20_500),
              diagnostics={"cache_miss_reason": reason}),
    ]
    p = tmp_path / "proj" / "sess-1.jsonl"
    p.parent.mkdir(parents=True)
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return p.parent


def _ingest(tmp_path, logs, keyfile):
    db = tmp_path / "t.duckdb"
    r = CliRunner().invoke(main, ["ingest", str(logs), "--db", str(db), "--key-file", str(keyfile), "--json"])
    assert r.exit_code == 0, r.output
    return db, json.loads(r.output)


@pytest.fixture
def keyfile(tmp_path):
    k = tmp_path / "key"
    k.write_text(os.urandom(32).hex() + "\n")
    k.chmod(0o600)
    return k


def test_reader_stores_the_reason_and_its_tokens_and_skips_ui_records_silently(tmp_path, keyfile):
    db, summary = _ingest(tmp_path, _log(tmp_path, {"type": "tools_changed", "cache_missed_input_tokens": 20_000}),
                          keyfile)
    assert summary["skipped_lines"] == {}  # ai-title, permission-mode: UI state, not unknown records
    assert summary["non_context_lines"] == {"ai-title": 1, "permission-mode": 1}
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT req_idx, miss_reason, miss_tokens FROM requests ORDER BY req_idx").fetchall()
    assert rows == [(0, None, None), (1, "tools_changed", 20_000)]


@pytest.mark.parametrize("reason,stored,tokens", [
    ({"type": "a reason of the log's own choosing"}, "other", None),  # closed vocabulary
    ({"type": 42, "cache_missed_input_tokens": -5}, "other", None),
    ({"type": "unavailable", "cache_missed_input_tokens": "many"}, "unavailable", None),
])
def test_reason_outside_the_vocabulary_is_other_and_a_bad_count_is_null(tmp_path, keyfile, reason, stored, tokens):
    db, _ = _ingest(tmp_path, _log(tmp_path, reason), keyfile)
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT miss_reason, miss_tokens FROM requests WHERE req_idx = 1").fetchone() == (stored, tokens)


def _stream(key, reason, read_at_2, version="2.1.150"):
    """Three requests of a 1-hour stream; request 2 (a tool loop, 10 s later) reads
    ``read_at_2`` of the 15,100 tokens cached before it, with the provider's ``reason``."""
    b = TraceBuilder(overhead=10_000, models=("m",), session_key=key, version=version)
    b.block(2000, "user_text", turn=1, ts=0)
    b.request(ts=1 * S, read=10_000, w1h=2000, has_usage=True)
    b.tool_call("Read", 3000, use_tokens=100, ts=3 * S)
    b.request(ts=4 * S, read=12_000, w1h=3100, has_usage=True)
    b.tool_call("Read", 1000, use_tokens=100, ts=6 * S)
    b.request(ts=14 * S, read=read_at_2, w1h=16_200 - read_at_2, has_usage=True, miss=reason,
              miss_tokens=None if reason is None else 16_200 - read_at_2)
    return b


def test_breaks_carry_the_reason_and_its_agreement_with_the_cause():
    streams = {"sys": _stream("sys", "system_changed", 0), "msg": _stream("msg", "messages_changed", 12_000),
               "none": _stream("none", None, 12_000), "hit": _stream("hit", "unavailable", 15_100)}
    ds = Dataset("t", [Session(k, "claude-code", [b.stream()]) for k, b in streams.items()],
                 streams["sys"].vocab)
    rows, counts = find_breaks(ds, PRICES)
    got = {r["session"]: r for r in rows}
    # read 0 within the TTL: inferred system_changed, the provider agrees
    assert (got["sys"]["cause"], got["sys"]["provider_reason"], got["sys"]["agrees"]) == \
        ("system_changed", "system_changed", True)
    assert got["sys"]["provider_missed"] == 16_200
    # a miss inside a tool loop is "unexplained" here; the provider says the messages changed
    assert (got["msg"]["cause"], got["msg"]["agrees"]) == ("unexplained", False)
    assert got["none"]["provider_reason"] is None and got["none"]["agrees"] is None
    assert "hit" not in got  # a full read is no break, even with a reason
    assert counts["reasons_not_breaks"] == 1 and counts["reasons_not_breaks_by_reason"] == {"unavailable": 1}
    from replay.experiments.breaks import summarize
    p = summarize(rows, counts)["provider"]
    assert (p["breaks_with_reason"], p["agree"]) == (2, 1)
    # "none" is a break in a version that reports reasons and carries none
    assert p["breaks_without_reason_in_reporting_versions"] == 1


def test_agreement_families():
    assert agrees("previous_message_not_found", "ttl_1h") and agrees("tools_changed", "system_changed")
    assert agrees("messages_changed", "history_rewritten") and agrees("model_changed", "model_switch")
    assert not agrees("previous_message_not_found", "history_rewritten")
    assert agrees(None, "ttl_5m") is None


def test_validate_scores_predicted_misses_against_the_reasons():
    """Labels only in client versions that report reasons; a predicted miss is a simulated read
    short of the previous request's cached prefix (read + writes)."""
    new = _stream("new", "system_changed", 0)
    old = _stream("old", None, 0, version="2.1.100")  # before 2.1.119: no labels
    ds = Dataset("t", [Session(k, "claude-code", [b.stream()]) for k, b in (("new", new), ("old", old))],
                 new.vocab)
    labels = provider_reasons.labelled_requests(ds)
    assert [(x[0], x[3], x[4], x[6]) for x in labels] == [("new", 1, None, 12_000.0),
                                                         ("new", 2, "system_changed", 15_100.0)]
    # a replay that reads everything (never breaks) and one that reads nothing at request 2
    full = {"new": {"detail": {"cache_read": [10_000, 12_000, 16_200]}}}
    cold = {"new": {"detail": {"cache_read": [10_000, 12_000, 0]}}}
    early = {"new": {"detail": {"cache_read": [10_000, 0, 0]}}}
    res = provider_reasons.score(ds, {"full": full, "cold": cold, "early": early})
    f, c, e = (res["variants"][n] for n in ("full", "cold", "early"))
    assert (f["both"], f["provider_only"], f["replay_only"], f["recall"]) == (0, 1, 0, 0.0)
    assert (c["both"], c["provider_only"], c["replay_only"], c["recall"], c["precision"]) == (1, 0, 0, 1.0, 1.0)
    assert (e["replay_only"], e["agreement"]) == (1, 0.5)
    assert c["by_reason"] == {"system_changed": {"misses": 1, "predicted": 1}}
    assert list(c["by_version"]) == ["2.1.150"]


@pytest.mark.skipif(shared_logs("claude-code-2026") is None, reason="the shared 2026 corpus is absent")
def test_shared_2026_corpus_reasons(tmp_path, keyfile):
    """The counts the provider reports in the 2026 corpus, per response (issue 35), and the
    validate table that scores them."""
    db, _ = _ingest(tmp_path, shared_logs("claude-code-2026"), keyfile)
    con = duckdb.connect(str(db), read_only=True)
    got = dict(con.execute("SELECT miss_reason, count(*) FROM requests WHERE miss_reason IS NOT NULL "
                           "GROUP BY 1").fetchall())
    con.close()
    assert got == {"previous_message_not_found": 70, "tools_changed": 25, "messages_changed": 18,
                   "unavailable": 17, "system_changed": 10}
    r = CliRunner().invoke(main, ["breaks", "--db", str(db), "--json", "--limit", "0"])
    p = json.loads(r.output)["summary"]["provider"]
    assert p["breaks_with_reason"] + p["reasons_not_breaks"] == 140
    exp = {x["reason"]: x for x in p["by_reason"]}["previous_message_not_found"]
    assert exp["agree"] >= 0.9 * exp["breaks"]  # expiries are what the provider calls a missing entry
