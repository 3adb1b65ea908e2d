"""`usage`'s 120-column view (newcomer's hour, 2026-11-28: `…/2a8e5` / `3063c/…`): `--by project`
shows each project by the fewest last pseudonym components no other project ends with
(`--project` takes them as shown); `--by session` shows session keys by their first 12
characters (as `breaks` shows them; `--session` takes a prefix)."""

from __future__ import annotations

from replay.cli.usage import SHORT_KEY, short_project


def test_short_project_is_the_fewest_components_no_other_project_ends_with():
    a, b, c = "/h1/x/repo/8130f58b40", "/h2/y/repo/8130f58b40", "/h1/x/other/fc13c44e00"
    assert short_project(c, {a, b, c}) == "\u2026/fc13c44e00"
    assert short_project(a, {a, b, c}) == "\u2026/x/repo/8130f58b40"
    assert short_project(b, {a, b, c}) == "\u2026/y/repo/8130f58b40"
    assert short_project(a) == "\u2026/8130f58b40"  # alone: its last component
    same_tail = "/h3/x/repo/8130f58b40"  # every component but the first shared: the whole path
    assert short_project(a, {a, same_tail}) == a
    assert short_project("/single") == "/single"


def test_compact_views_show_what_the_filters_take(tmp_path):
    import json

    from click.testing import CliRunner

    from replay.cli import main
    from replay.cli.demo import sample_logs_dir

    db = tmp_path / "s.duckdb"
    r = CliRunner().invoke(main, ["ingest", str(sample_logs_dir()), "--db", str(db), "-q"])
    assert r.exit_code == 0, r.output
    full = json.loads(CliRunner().invoke(main, ["usage", "--db", str(db), "--by", "session", "--json"]).stdout)
    r = CliRunner().invoke(main, ["usage", "--db", str(db), "--by", "session"], env={"COLUMNS": "120"})
    assert r.exit_code == 0, r.output
    assert "whole project keys" in r.output  # the sample's session table is the compact view
    for row in full["rows"][:3]:  # short keys that still select
        assert row["key"][:SHORT_KEY] in r.output and row["key"] not in r.output
        one = CliRunner().invoke(main, ["breaks", "--db", str(db), "--session", row["key"][:SHORT_KEY], "--json"])
        assert one.exit_code == 0, one.output


def test_a_short_project_name_is_unique_among_every_project_not_only_the_rows_shown(tmp_path):
    """Review (2026-11-28): with a filter, the compact --by project view shortened names among the
    rows it showed, and `--project` then found the name ambiguous among the dataset's projects."""
    import duckdb
    from click.testing import CliRunner

    from replay.cli import main
    from replay.cli.demo import sample_logs_dir

    db = tmp_path / "s.duckdb"
    assert CliRunner().invoke(main, ["ingest", str(sample_logs_dir()), "--db", str(db), "-q"]).exit_code == 0
    con = duckdb.connect(str(db))
    keys = [k for (k,) in con.execute("SELECT session_key FROM sessions ORDER BY started_at").fetchall()]
    assert len(keys) >= 2
    # two projects that end alike, one of them alone in a slice
    deep = "/0123456789" * 5  # long enough that the table takes its compact view
    con.execute("UPDATE sessions SET project = ? WHERE session_key = ?", [deep + "/x/same", keys[0]])
    con.execute("UPDATE sessions SET project = ? WHERE session_key <> ?", [deep + "/y/same", keys[0]])
    day = con.execute("SELECT strftime(to_timestamp(started_at / 1000) AT TIME ZONE 'UTC', '%Y-%m-%d') FROM sessions "
                      "WHERE session_key = ?", [keys[0]]).fetchone()[0]
    con.close()
    r = CliRunner().invoke(main, ["usage", "--db", str(db), "--by", "project", "--timezone", "UTC",
                                  "--since", day, "--until", day, "--no-ingest"], env={"COLUMNS": "120"})
    assert r.exit_code == 0 and "whole project keys" in r.output, r.output  # the compact view
    assert "\u2026/x/same" in r.output and "\u2026/same " not in r.output  # "…/same" would name both projects
