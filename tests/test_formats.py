"""`--format table|plain|markdown|csv` (issue 15, item 3): every command that prints a results
table prints it as aligned plain text, a GitHub pipe table or CSV, with the tables alone on
stdout (titles and notes on stderr); `--json` and a non-table format conflict in one `error:` line."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from replay.cli import main

ROOT = Path(__file__).resolve().parents[1]
TABLE_COMMANDS = ("datasets", "sessions", "usage", "runs", "compare", "validate", "breaks", "bound", "claims")
BOX = re.compile("[\u2500-\u257f]")


def run(*args, ok=True):
    r = CliRunner().invoke(main, [str(a) for a in args])
    if ok:
        assert r.exit_code == 0, r.output
    return r


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    from replay.cli import sample_logs_dir
    from replay.store.load import ingest

    path = tmp_path_factory.mktemp("formats") / "f.duckdb"
    ingest([sample_logs_dir()], path, dataset="sample", key_file=path.parent / "key")
    run("replay", "--db", path, "--policy", "noop")
    run("replay", "--db", path, "--policy", "devboy_lru")
    return path


def _args(db, name):
    extra = {"validate": ["--plot", db.parent / "v.png"]}.get(name, [])
    return [name, "--db", db, *extra]


def _json_rows(db, name) -> int:
    got = json.loads(run(*_args(db, name), "--json").stdout)
    return {"sessions": lambda: len(got) + 1,  # the table's last row: the sessions' total
            "usage": lambda: len(got["rows"]) + 1,  # and the totals line
            "compare": lambda: len(got),
            "validate": lambda: len(got["sessions"])}[name]()


def _blocks(text: str) -> list[list[str]]:
    """The tables of one output: runs of lines separated by an empty line."""
    return [b.splitlines() for b in text.strip("\n").split("\n\n")]


@pytest.mark.parametrize("name", ["sessions", "compare", "usage", "validate"])
def test_csv_has_the_header_and_a_row_per_json_row(db, name):
    r = run(*_args(db, name), "--format", "csv")
    first = _blocks(r.stdout)[0]
    rows = list(csv.reader(io.StringIO("\n".join(first) + "\n")))
    assert len(rows) == 1 + _json_rows(db, name), r.stdout
    assert rows[0][0] == {"sessions": "session", "compare": "run", "usage": "day", "validate": "session"}[name]
    assert all(len(x) == len(rows[0]) for x in rows)
    for block in _blocks(r.stdout):  # every table (compare, validate: several) is CSV on its own
        assert len({len(x) for x in csv.reader(io.StringIO("\n".join(block) + "\n"))}) == 1
    if name in ("sessions", "compare"):
        assert r.stderr.strip(), "the title goes to stderr"


@pytest.mark.parametrize("name", ["sessions", "compare", "usage", "validate"])
def test_markdown_is_pipe_tables_and_plain_has_no_boxes(db, name):
    md = run(*_args(db, name), "--format", "markdown").stdout
    blocks = _blocks(md)
    for block in blocks:
        assert all(line.startswith("|") and line.endswith("|") for line in block), md
        assert re.fullmatch(r"\|( -{3}:? \|)+", block[1]), block[1]
    assert len(blocks[0]) == 2 + _json_rows(db, name)
    plain = run(*_args(db, name), "--format", "plain").stdout
    assert not BOX.search(plain) and "[/" not in plain and "[green]" not in plain, plain
    assert len(_blocks(plain)) == len(blocks)
    assert len(_blocks(plain)[0]) == 1 + _json_rows(db, name)
    table = run(*_args(db, name)).stdout
    assert BOX.search(table)  # the default stays the Rich table


def test_cells_keep_the_text_the_table_shows(db):
    rows = list(csv.DictReader(io.StringIO(run("sessions", "--db", db, "--format", "csv").stdout)))
    sessions = json.loads(run("sessions", "--db", db, "-j").stdout)
    assert [r["session"] for r in rows[:-1]] == [s["session_key"] for s in sessions]
    assert rows[0]["block tokens"] == str(sessions[0]["block_tokens"])  # CSV: no thousands separators
    assert rows[-1]["session"] == f"{len(sessions)} sessions"
    md = run("compare", "--db", db, "--format", "markdown").stdout
    assert re.search(r"\| [+-]\d+\.\d\d% \[[+-]\d+\.\d\d, [+-]\d+\.\d\d\] \|", md), md  # a saving, as shown


def test_usage_csv_alias_and_conflicts(db):
    alias = run("usage", "--db", db, "--csv").stdout
    assert alias == run("usage", "--db", db, "--format", "csv").stdout
    assert alias.startswith("day,requests,")  # usage's CSV: unformatted numbers, as before
    for args, needle in ((["usage", "--csv", "-j"], "--json and --csv"),
                         (["usage", "--csv", "--format", "plain"], "--csv and --format plain"),
                         (["sessions", "--format", "csv", "--json"], "--json and --format csv"),
                         (["compare", "-j", "--format", "markdown"], "--json and --format markdown")):
        r = run(*args, "--db", db, ok=False)
        assert r.exit_code == 1 and r.stdout == "", r.output
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], r.stderr
    json.loads(run("sessions", "--db", db, "-j", "--format", "table").stdout)  # the default never conflicts
    r = run("sessions", "--db", db, "--format", "xml", ok=False)
    assert r.exit_code == 2 and "Error: Invalid value for '--format'" in r.stderr


def test_every_table_command_takes_format():
    for name in TABLE_COMMANDS:
        p = next((p for p in main.commands[name].params if p.name == "table_format"), None)
        assert p is not None and p.opts == ["--format"], name
        assert list(p.type.choices) == ["table", "plain", "markdown", "csv"] and p.default == "table", name


def test_renderers_escape_and_align():
    from rich.table import Table

    from replay.cli.common import esc
    from replay.cli.formats import markdown, plain, to_csv

    t = Table("name", "n", title="T", show_footer=True)
    t.columns[1].justify = "right"
    t.columns[0].footer, t.columns[1].footer = "total", "1,234"
    t.add_row(esc("a|b [x]"), "[red]7[/]")
    t.add_row("c,d", "1,227")
    assert plain(t).splitlines() == ["name         n", "a|b [x]      7", "c,d      1,227", "total    1,234"]
    assert markdown(t).splitlines() == ["| name | n |", "| --- | ---: |", "| a\\|b [x] | 7 |", "| c,d | 1,227 |",
                                        "| total | 1,234 |"]
    assert list(csv.reader(io.StringIO(to_csv(t)))) == [["name", "n"], ["a|b [x]", "7"], ["c,d", "1227"],
                                                        ["total", "1234"]]


def test_formats_from_a_real_process(db):
    def cli(*args):
        r = subprocess.run([sys.executable, "-m", "replay.cli", *map(str, args)], capture_output=True, text=True,
                           timeout=300, env=dict(os.environ), cwd=ROOT)
        assert r.returncode == 0, r.stderr
        return r

    r = cli("sessions", "--db", db, "--format", "csv")
    rows = list(csv.reader(io.StringIO(r.stdout)))
    assert rows[0][:2] == ["session", "agent"] and len(rows) == 1 + _json_rows(db, "sessions")
    assert "Sessions of sample" in r.stderr
    r = cli("usage", "--db", db, "--format", "markdown", "--by", "model")
    assert all(line.startswith("|") for line in r.stdout.splitlines()) and "| total |" in r.stdout


def test_csv_numbers_drop_their_thousands_separators():
    from replay.cli.formats import csv_number

    assert [csv_number(c) for c in ("151,182", "+1,234", "$1,255.98", "-12,000.5%", "1,2", "a,b", "0:96", "1 h 46 m")] \
        == ["151182", "+1234", "$1255.98", "-12000.5%", "1,2", "a,b", "0:96", "1 h 46 m"]
    assert csv_number("\u2212$1,239.52") == "-$1239.52" and csv_number("\u2212$3.58") == "-$3.58"


def test_csv_turns_only_a_numbers_minus_to_ascii():
    from replay.cli.formats import csv_number

    assert csv_number("\u2212foo") == "\u2212foo" and csv_number("\u22123.5%") == "-3.5%"


def test_csv_writes_durations_in_seconds():
    from rich.table import Table

    from replay.cli.fmt import duration
    from replay.cli.formats import duration_seconds, to_csv

    # every shape fmt.duration writes reads back to its own precision
    for secs in (0, 47, 245, 6360, 273600, -6360):
        assert duration_seconds(duration(secs)) == secs
    assert duration_seconds(duration(6377)) == 6360  # "1 h 46 m": the table's precision
    assert [duration_seconds(c) for c in ("1,2", "47", "47 x", "1 h 46", "-")] == [None] * 5
    t = Table("session", "duration", "n")
    t.add_row("1 h 46 m", duration(6360), "1,234")  # a name that looks like one is not a duration column...
    t.add_row("abc", duration(None), "5")  # ... nor is a column with any other text; "-" is unknown
    t.add_row("def", duration(47), "6")
    assert list(csv.reader(io.StringIO(to_csv(t)))) == [
        ["session", "duration (s)", "n"], ["1 h 46 m", "6360", "1234"], ["abc", "", "5"], ["def", "47", "6"]]


def test_csv_writes_a_duration_cells_exact_seconds():
    """Review (2026-11-28): "1 h 09 m" went to CSV as 4140 for a 4191.9 s idle time."""
    from rich.table import Table

    from replay.cli.fmt import duration_cell
    from replay.cli.formats import plain, to_csv

    t = Table("idle")
    t.add_row(duration_cell(4191.9))
    t.add_row(duration_cell(None))
    t.add_row(duration_cell(26))
    assert list(csv.reader(io.StringIO(to_csv(t)))) == [["idle (s)"], ["4191.9"], [""], ["26"]]
    assert plain(t).split() == ["idle", "1", "h", "09", "m", "-", "26", "s"]
