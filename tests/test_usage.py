"""`ctxreplay usage` and the recorded-cost column of `sessions`: totals against hand counts and
against an independent count of the raw shared logs."""

import csv
import io
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from replay.cli import main

from cc_records import Transcript, text, usage
from conftest import shared_logs

PRICES = """
[models."claude-test-one"]
input = 1.0
cache_write_5m = 2.0
cache_write_1h = 4.0
cache_read = 0.1
output = 10.0

[models."claude-test-two"]
input = 3.0
cache_write_5m = 3.75
cache_write_1h = 6.0
cache_read = 0.3
output = 15.0
"""

# $ per token of the two priced models: (uncached, 5m write, 1h write, read, output)
R1 = (1e-6, 2e-6, 4e-6, 0.1e-6, 10e-6)
R2 = (3e-6, 3.75e-6, 6e-6, 0.3e-6, 15e-6)


def _cost(r, u, w5, w1h, rd, o):
    return u * r[0] + w5 * r[1] + w1h * r[2] + rd * r[3] + o * r[4]


# the responses the fixture logs record, as an independent list: (session, day, model, u, w5, w1h, read, output)
EXPECTED = [
    ("a", "2026-01-05", "claude-test-one", 100, 600, 400, 0, 50),
    ("a", "2026-01-06", "claude-test-one", 10, 0, 0, 1000, 20),
    ("b", "2026-02-01", "claude-unpriced-x", 5, 0, 0, 0, 7),
    ("b", "2026-02-01", "claude-test-two", 1, 100, 0, 200, 30),
    ("c", "2026-02-03", "claude-test-two", 2, 50, 0, 300, 11),
]


def _stamp(t: Transcript, day: str, start: int = 0) -> None:
    for i, rec in enumerate(t.records[start:]):
        rec["timestamp"] = f"{day}T12:{i // 60:02d}:{i % 60:02d}.000Z"


def _write_logs(root: Path) -> None:
    a = Transcript(session_id="sess-a", cwd="/home/alice/proj")
    a.user("first question")
    # streamed over two lines: the first carries a partial output count (1), the last the final one (50)
    a.assistant("msg_1", [text("part one"), text("part two")], usage(inp=100, write=1000, read=0, out=1, w1h=400),
                model="claude-test-one", final_output=50)
    _stamp(a, "2026-01-05")
    n = len(a.records)
    a.user("second question")
    a.assistant("msg_2", [text("answer")], usage(inp=10, write=0, read=1000, w1h=0), model="claude-test-one",
                final_output=20)
    _stamp(a, "2026-01-06", n)
    a.write_jsonl(root / "proj" / "a.jsonl")

    b = Transcript(session_id="sess-b", cwd="/home/alice/other")
    b.user("q")
    b.assistant("msg_3", [text("x")], usage(inp=5, out=7), model="claude-unpriced-x", final_output=7)
    b.user("q2")
    b.assistant("msg_4", [text("y")], usage(inp=1, write=100, read=200), model="claude-test-two", final_output=30)
    _stamp(b, "2026-02-01")
    b.write_jsonl(root / "other" / "b.jsonl")

    # a resumed session: it first copies session a's first exchange (old session id), then goes on
    c = Transcript(session_id="sess-a", cwd="/home/alice/proj")
    for rec in a.records[:n]:
        c.raw(json.loads(json.dumps(rec)))
    c.session_id = "sess-c"
    c.user("resumed")
    c.assistant("msg_5", [text("z")], usage(inp=2, write=50, read=300), model="claude-test-two", final_output=11)
    _stamp(c, "2026-02-03", n)
    c.write_jsonl(root / "proj" / "c.jsonl")


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    d = tmp_path_factory.mktemp("usage")
    _write_logs(d / "logs")
    (d / "prices.toml").write_text(PRICES)
    (d / "u.key").write_text("cd" * 32 + "\n")  # module-scoped: the per-test key fixture is not active yet
    r = CliRunner().invoke(main, ["ingest", str(d / "logs"), "--db", str(d / "u.duckdb"), "--key-file",
                                  str(d / "u.key"), "--json"])
    assert r.exit_code == 0, r.output
    return d


def run(*args, ok=True):
    r = CliRunner().invoke(main, [str(a) for a in args])
    if ok:
        assert r.exit_code == 0, r.output
    return r


def strict_json(s: str):
    def bad(c):
        raise ValueError(f"not strict JSON: {c}")
    return json.loads(s, parse_constant=bad)


def usage_json(db, *args):
    return strict_json(run("usage", "--db", db / "u.duckdb", "--prices", db / "prices.toml", "--json", *args).output)


def expected(rows=EXPECTED, key=lambda e: "all"):
    out = defaultdict(lambda: defaultdict(float))
    for e in rows:
        g = out[key(e)]
        s, day, model, u, w5, w1h, rd, o = e
        g["requests"] += 1
        for f, v in zip(("input", "cache_write_5m", "cache_write_1h", "cache_read", "output"), (u, w5, w1h, rd, o)):
            g[f] += v
        r = {"claude-test-one": R1, "claude-test-two": R2}.get(model)
        g["cost"] += _cost(r, u, w5, w1h, rd, o) if r else 0.0
    return out


def test_totals_match_a_hand_count(db):
    res = usage_json(db, "--by", "day")
    tot, want = res["totals"], expected()["all"]
    for f in ("requests", "input", "cache_write_5m", "cache_write_1h", "cache_read", "output"):
        assert tot[f] == want[f], f
    # output from the final streamed line (50, not 1); the resumed copy of msg_1 counted once
    assert tot["output"] == 50 + 20 + 7 + 30 + 11
    # 1-hour writes at the 1-hour rate: 600 x $2 + 400 x $4 per Mtok, not 1,000 x $2
    assert tot["cost"] == pytest.approx(want["cost"], abs=1e-9)
    assert tot["total_tokens"] == sum(tot[f] for f in ("input", "cache_write_5m", "cache_write_1h", "cache_read",
                                                       "output"))
    # the model without a price is named, not priced at $0
    assert res["unpriced_models"] == {"claude-unpriced-x": 1}
    assert tot["cost_complete"] is False and tot["unpriced_models"] == ["claude-unpriced-x"]
    assert any("claude-unpriced-x" in n for n in res["notes"])


def test_groups_by_day_week_month_model_agent_session(db):
    days = {r["key"]: r for r in usage_json(db, "--by", "day")["rows"]}
    want = expected(key=lambda e: e[1])
    assert list(days) == sorted(want)
    for k, w in want.items():
        assert days[k]["output"] == w["output"] and days[k]["cost"] == pytest.approx(w["cost"], abs=1e-9)
    weeks = usage_json(db, "--by", "week")["rows"]
    assert [(r["key"], r["week_start"]) for r in weeks] == [
        ("2026-W02", "2026-01-05"), ("2026-W05", "2026-01-26"), ("2026-W06", "2026-02-02")]
    months = {r["key"]: r["requests"] for r in usage_json(db, "--by", "month")["rows"]}
    assert months == {"2026-01": 2, "2026-02": 3}
    models = {r["key"]: r for r in usage_json(db, "--by", "model")["rows"]}
    assert set(models) == {"claude-test-one", "claude-test-two", "claude-unpriced-x"}
    assert models["claude-unpriced-x"]["cost_complete"] is False and models["claude-test-one"]["cost_complete"]
    assert [r["key"] for r in usage_json(db, "--by", "agent")["rows"]] == ["claude-code"]
    sessions = usage_json(db, "--by", "session")["rows"]
    assert sorted(r["requests"] for r in sessions) == [1, 2, 2]  # c: its own response only
    assert all(r["agent"] == "claude-code" and r["started_at"] for r in sessions)


def test_filters(db):
    jan = usage_json(db, "--since", "2026-01-06", "--until", "20260131")
    assert jan["totals"]["requests"] == 1 and jan["totals"]["output"] == 20
    feb = usage_json(db, "--since", "2026-02-01")
    assert feb["totals"]["output"] == 7 + 30 + 11
    assert usage_json(db, "--model", "claude-test-two")["totals"]["requests"] == 2
    assert usage_json(db, "--agent", "codex")["rows"] == []
    # days are cut in --timezone: 12:00 UTC on 2026-01-05 is already 01:00 on 01-06 in Auckland
    nz = usage_json(db, "--by", "day", "--timezone", "Pacific/Auckland")
    assert [r["key"] for r in nz["rows"]][:2] == ["2026-01-06", "2026-01-07"]
    assert nz["filters"]["timezone"] == "Pacific/Auckland"
    r = run("usage", "--db", db / "u.duckdb", "--since", "2026-02-30", ok=False)
    assert r.exit_code == 1 and "is not a date" in r.output
    r = run("usage", "--db", db / "u.duckdb", "--since", "2026-03-01", "--until", "2026-02-01", ok=False)
    assert r.exit_code == 1 and "after --until" in r.output


def test_table_csv_and_totals_row(db):
    out = run("usage", "--db", db / "u.duckdb", "--prices", db / "prices.toml", "--by", "model").output
    assert "total" in out and "claude-unpriced-x" in out and "?" in out  # unpriced: '?', not 0.00
    assert "no price for claude-unpriced-x" in out
    rows = list(csv.DictReader(io.StringIO(
        run("usage", "--db", db / "u.duckdb", "--prices", db / "prices.toml", "--by", "week", "--csv").output)))
    assert rows[-1]["week"] == "total"
    assert sum(int(r["output"]) for r in rows[:-1]) == int(rows[-1]["output"]) == 118
    assert float(rows[-1]["cost"]) == pytest.approx(expected()["all"]["cost"], abs=1e-6)
    r = run("usage", "--db", db / "u.duckdb", "--json", "--csv", ok=False)
    assert r.exit_code == 1


def test_projects_are_the_keyed_pseudonym_of_the_working_directory(db, tmp_path):
    """Ingest records each session's first working directory as its project (migration 6), as
    the per-component path pseudonym: grouping and filtering work on a plain ingest."""
    from replay.ingest.keys import Keyring, open_master_key

    keys = Keyring.for_dataset(open_master_key(db / "u.key"), "default")
    con = duckdb.connect(str(db / "u.duckdb"), read_only=True)
    stored = dict(con.execute("SELECT session_id, project FROM sessions").fetchall())
    con.close()
    assert stored == {keys.short("session_id", "sess-a", 16): keys.path("/home/alice/proj"),
                      keys.short("session_id", "sess-b", 16): keys.path("/home/alice/other"),
                      keys.short("session_id", "sess-c", 16): keys.path("/home/alice/proj")}
    # a database whose sessions record no project (ingested before migration 6) says so
    old = tmp_path / "old.duckdb"
    old.write_bytes((db / "u.duckdb").read_bytes())
    con = duckdb.connect(str(old))
    con.execute("UPDATE sessions SET project = NULL")
    con.close()
    for args in (("--by", "project"), ("--project", "/home/alice/proj")):
        r = run("usage", "--db", old, *args, ok=False)
        assert r.exit_code == 1 and "records no project" in r.output and "re-ingest" in r.output
    copy = db / "u.duckdb"
    res = strict_json(run("usage", "--db", copy, "--by", "project", "--json").output)
    by = {r["key"]: r["requests"] for r in res["rows"]}
    assert by == {keys.path("/home/alice/proj"): 3, keys.path("/home/alice/other"): 2}
    assert "alice" not in json.dumps(res)  # only pseudonyms
    # a path on this machine is pseudonymized with the key; a folder above it matches too
    kf = ("--key-file", db / "u.key")
    for p in ("/home/alice/proj", "/home/alice/proj/", keys.path("/home/alice/proj")):
        assert strict_json(run("usage", "--db", copy, "--project", p, *kf, "--json").output)["totals"]["requests"] == 3
    assert strict_json(run("usage", "--db", copy, "--project", "/home/alice", *kf, "--json").output)[
        "totals"]["requests"] == 5
    out = run("usage", "--db", copy, "--by", "project", "--project", "/home/alice/proj", *kf, "--format", "plain").output
    assert "/home/alice/proj (" in out  # the path the user typed, beside its pseudonym
    other_key = tmp_path / "other.key"
    other_key.write_text("ab" * 32 + "\n")
    r = run("usage", "--db", copy, "--project", "/home/alice/proj", "--key-file", other_key, ok=False)
    assert r.exit_code == 1 and "not the key dataset 'default' was ingested with" in r.output


def test_sessions_cost_column_and_filters(db):
    rows = strict_json(run("sessions", "--db", db / "u.duckdb", "--prices", db / "prices.toml", "--json").output)
    assert len(rows) == 3
    by_usage = {r["key"]: r["cost"] for r in usage_json(db, "--by", "session")["rows"]}
    for r in rows:
        assert r["cost"] == pytest.approx(by_usage[r["session_key"]])
    assert sum(r["cost"] for r in rows) == pytest.approx(expected()["all"]["cost"], abs=1e-9)
    feb = strict_json(run("sessions", "--db", db / "u.duckdb", "--since", "2026-02-01", "-j").output)
    assert len(feb) == 2
    out = run("sessions", "--db", db / "u.duckdb", "--prices", db / "prices.toml").output
    assert "cost $" in out and "3 sessions" in out and "+" in out  # part of the cost has no price


def test_usage_as_a_subprocess(db):
    env = dict(os.environ)
    p = subprocess.run([sys.executable, "-m", "replay.cli", "usage", "--db", str(db / "u.duckdb"), "--by", "month",
                        "-j"], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert strict_json(p.stdout)["totals"]["requests"] == 5
    p = subprocess.run([sys.executable, "-m", "replay.cli", "usage", "--db", str(db / "u.duckdb"), "--by", "year"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 2 and "Error:" in p.stderr  # a usage error: the option parser's
    p = subprocess.run([sys.executable, "-m", "replay.cli", "usage", "--db", str(db / "u.duckdb"), "--dataset",
                        "nope"], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 1 and p.stderr.startswith("error: ") and len(p.stderr.strip().splitlines()) == 1


def _independent_claude_code_count(folder: Path, progress: bool = True):
    """Output and input tokens of the raw logs: one response per (message.id, requestId), the last
    line's output; with ``progress``, the Task subagents' responses carried by progress records too."""
    last: dict[tuple, dict] = {}
    for path in sorted(folder.iterdir()):
        text_ = path.read_text(errors="replace")
        if path.suffix == ".json":
            try:
                records = json.loads(text_)
            except ValueError:
                continue
        else:
            records = []
            for line in text_.splitlines():
                try:
                    records.append(json.loads(line))
                except ValueError:
                    pass
        for rec in records:
            if isinstance(rec, dict) and progress and rec.get("type") == "progress":
                rec = (rec.get("data") or {}).get("message")
            if not isinstance(rec, dict) or rec.get("type") != "assistant":
                continue
            msg = rec.get("message") or {}
            u = msg.get("usage")
            if not isinstance(u, dict) or not msg.get("id"):
                continue
            last[(msg["id"], rec.get("requestId"))] = {"model": msg.get("model"), **u}
    tot = defaultdict(int)
    for u in last.values():
        if u["model"] == "<synthetic>":
            continue
        cc = u.get("cache_creation") or {}
        w = u.get("cache_creation_input_tokens") or 0
        w1h = cc.get("ephemeral_1h_input_tokens") or 0
        tot["requests"] += 1
        tot["output"] += u.get("output_tokens") or 0
        tot["input"] += u.get("input_tokens") or 0
        tot["cache_read"] += u.get("cache_read_input_tokens") or 0
        tot["cache_write_1h"] += w1h
        tot["cache_write_5m"] += w - w1h
    return tot


def test_shared_claude_code_logs_against_an_independent_count(tmp_path):
    logs = shared_logs("claude-code")
    db = tmp_path / "cc.duckdb"
    run("ingest", logs, "--db", db, "-q")
    res = strict_json(run("usage", "--db", db, "--json", "--by", "model").output)
    tot = res["totals"]
    want = _independent_claude_code_count(logs)
    for f in ("requests", "output", "input", "cache_read", "cache_write_5m", "cache_write_1h"):
        assert tot[f] == want[f], f
    # 5 of these files carry Task subagents in progress records: their spend is in the totals
    assert want["cache_read"] > _independent_claude_code_count(logs, progress=False)["cache_read"]
    assert tot["cost_complete"] and tot["cost"] > 0
    since = strict_json(run("usage", "--db", db, "--json", "--since", "2026-01-01").output)["totals"]
    assert 0 < since["output"] < tot["output"]
    days = strict_json(run("usage", "--db", db, "--json", "--by", "day").output)["rows"]
    assert sum(r["output"] for r in days if r["key"] >= "2026-01-01") == since["output"]


def test_damaged_or_missing_database_is_one_line(tmp_path):
    bad = tmp_path / "bad.duckdb"
    bad.write_bytes(b"this is not a database, just text\n" * 4000)
    for cmd in (["usage"], ["usage", "--by", "model", "--csv"], ["sessions", "--since", "2026-01-01"]):
        for db in (bad, tmp_path / "missing.duckdb"):
            r = CliRunner().invoke(main, [*cmd, "--db", str(db)])
            assert r.exit_code == 1 and r.stdout == "", r.output
            lines = r.stderr.splitlines()
            assert len(lines) == 1 and lines[0].startswith("error: ") and str(db) in lines[0], r.stderr
    assert not (tmp_path / "missing.duckdb").exists()  # read-only commands never create a database


def test_fast_mode_at_fast_rates_where_the_trace_records_speed(db, tmp_path):

    prices = tmp_path / "fast.toml"
    prices.write_text(PRICES + '\n[models."claude-test-one".fast]\ninput = 6.0\ncache_write_5m = 12.0\n'
                      'cache_write_1h = 24.0\ncache_read = 0.6\noutput = 60.0\n')
    copy = tmp_path / "f.duckdb"
    copy.write_bytes((db / "u.duckdb").read_bytes())
    con = duckdb.connect(str(copy))
    # the first response of session a (and its resumed copy in c) ran in fast mode
    con.execute("UPDATE requests SET speed = 'fast' WHERE model = 'claude-test-one' AND cache_write_1h = 400")
    con.close()
    res = strict_json(run("usage", "--db", copy, "--prices", prices, "--by", "model", "-j").output)
    by = {r["key"]: r for r in res["rows"]}
    fast = _cost(tuple(6 * x for x in R1), 100, 600, 400, 0, 50)
    assert by["claude-test-one (fast)"]["requests"] == 1
    assert by["claude-test-one (fast)"]["cost"] == pytest.approx(fast, abs=1e-9)
    assert by["claude-test-one"]["cost"] == pytest.approx(_cost(R1, 10, 0, 0, 1000, 20), abs=1e-9)
    # --model takes the model's name: fast and standard responses alike
    assert strict_json(run("usage", "--db", copy, "--prices", prices, "--model", "claude-test-one", "-j").output)[
        "totals"]["requests"] == 2


def test_project_filter_names_sessions_without_a_project(db, tmp_path):
    """In a database where some sessions predate projects, --project says how many it leaves out."""
    mixed = tmp_path / "mixed.duckdb"
    mixed.write_bytes((db / "u.duckdb").read_bytes())
    con = duckdb.connect(str(mixed))
    con.execute("UPDATE sessions SET project = NULL WHERE session_id = (SELECT min(session_id) FROM sessions)")
    con.close()
    r = CliRunner().invoke(main, ["usage", "--db", str(mixed), "--project", "/home/alice", "--key-file",
                                  str(db / "u.key"), "--json"])
    assert r.exit_code == 0, r.output
    assert "1 session(s) of default record no project" in r.stderr
    assert strict_json(r.stdout)["totals"]["requests"] < 5


def test_a_table_wider_than_the_page_drops_columns_and_wide_shows_them(db, monkeypatch):
    import replay.cli.fmt
    import replay.cli.usage

    assert replay.cli.fmt.WIDTH == 120
    keys = [r["key"] for r in usage_json(db, "--by", "session")["rows"]]
    args = ("usage", "--db", db / "u.duckdb", "--prices", db / "prices.toml", "--by", "session")
    for width in (120, 110):  # the default page, and a narrower one: the full table fits neither
        monkeypatch.setattr(replay.cli.fmt, "WIDTH", width)
        monkeypatch.setattr(replay.cli.usage, "WIDTH", width)
        out = run(*args).output
        header = " ".join(ln for ln in out.splitlines() if ln.startswith("┃"))
        assert "(--wide: every column, whole project keys)" in out and "5m" not in header and "1h" not in header
        assert "total" not in header and "write" in header and "agent" not in header
        table = [ln for ln in out.splitlines() if ln[:1] in "┏┃┡│├└"]
        assert table and max(len(ln) for ln in table) <= width, max(len(ln) for ln in table)
        assert all(k[:12] in out and k not in out for k in keys)  # a session key's first 12, never wrapped
        wide = run(*args, "--wide").output
        assert all(k in wide for k in keys)
        assert "cache write 5m" in wide and "total tokens" in wide and "agent" in wide


def test_a_response_in_two_sessions_is_counted_once_and_the_note_says_why(db):
    got = usage_json(db)
    assert got["totals"]["requests"] == len(EXPECTED)
    # session c copies session a's first response (a resume): stored twice, counted once
    assert any(n.startswith("1 of the 6 stored requests repeat a response") for n in got["notes"]), got["notes"]
    assert not any("repeat a response" in n for n in usage_json(db, "--model", "claude-test-two")["notes"])


def test_the_daily_command_loads_no_pandas(db):
    """`usage` answers from SQL: importing pandas (about 0.3 s, through the replay's arrays) nearly
    doubled its time on an unchanged tree (0.75-0.82 s against 0.40-0.45 s on entire-cli)."""
    code = ("import sys; from replay.cli.main import main; "
            f"main(['usage', '--db', {str(db / 'u.duckdb')!r}, '--no-ingest', '--json', '--by', 'day'], "
            "standalone_mode=False); print('pandas' in sys.modules, 'pyarrow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "False False"


def test_an_empty_csv_answer_names_the_days_on_stderr(db):
    r = CliRunner().invoke(main, ["usage", "--db", str(db / "u.duckdb"), "--no-ingest", "--csv", "--since", "2099-01-01"])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0].startswith("day,")  # the header alone: still CSV
    assert "the logs span" in r.stderr and "--since 2026-01-05" in r.stderr
