"""`ctxreplay check`: read every table of a database fully and say whether the file is whole."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from replay.cli.common import DB_OPTION, echo_json, err, esc, fail, json_option, out


@click.command()
@DB_OPTION
@json_option("Print the result as JSON (db, whole, schema_version, tables with rows or error).")
def check(db: Path, as_json: bool) -> None:
    """Read every table of a database fully and say whether the file is whole.

    DuckDB checks each block when it reads it, so a truncated or overwritten file can look
    fine until the damaged part is read; this reads all of it (every column of every table).
    Exits 0 if the file is whole, 1 if it is damaged or cannot be opened. Nothing is
    written: the file is opened read-only.
    """
    import duckdb

    from replay import store
    from replay.store.integrity import damaged_message, describe_db_error

    if not db.exists():
        fail(f"{db}: no such database; check the --db path")
    if not db.is_file():
        fail(f"{db} is not a regular file; --db takes a DuckDB database file")
    result = {"db": str(db), "whole": False, "schema_version": None, "tables": [], "error": None}
    try:
        con = duckdb.connect(str(db), read_only=True)
    except duckdb.Error as e:
        if not describe_db_error(e)[1]:
            fail(str(store.database_error(db, e)))
        result["error"] = str(store.database_error(db, e))
        con = None
    if con is not None:
        try:
            result["tables"] = store.check(con)
            if any(t["table"] == "schema_migrations" and not t["error"] for t in result["tables"]):
                result["schema_version"] = con.execute("SELECT max(version) FROM schema_migrations").fetchone()[0]
        except duckdb.Error as e:
            result["error"] = str(store.database_error(db, e))
        finally:
            con.close()
        bad = [t for t in result["tables"] if t["error"]]
        if bad and not result["error"]:
            names = ", ".join(t["table"] for t in bad)
            result["error"] = damaged_message(db, f"unreadable: {names}; {bad[0]['error']}", hint=False)
    result["whole"] = result["error"] is None
    if as_json:
        echo_json(result, default=None)
    else:
        _print(result, db)
    if not result["whole"]:
        sys.exit(1)


def _print(result: dict, db: Path) -> None:
    for t in result["tables"]:
        status = f"[red]{esc(t['error'])}[/]" if t["error"] else f"{t['rows']:,} row{'' if t['rows'] == 1 else 's'}"
        out.print(f"  {esc(t['table'])}: {status}")
    if result["whole"]:
        version = result["schema_version"]
        kind = f"ctxreplay schema {version}" if version is not None else "not a ctxreplay database"
        rows = sum(t["rows"] for t in result["tables"])
        out.print(f"[green]{esc(db)} is whole[/]: {len(result['tables'])} tables, {rows:,} rows read ({kind})")
    else:
        err.print(f"[bold red]error:[/] {esc(result['error'])}")


COMMANDS = [check]
