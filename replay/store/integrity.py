"""Is a store file whole? Reading every table fully, and naming DuckDB's errors for people.

DuckDB checks each block's checksum when it reads it, so a damaged file goes unnoticed
until the damaged block is read: `check` reads every column of every table. Used by
`ctxreplay check` and, before any command reads or writes a store, by `connect(verify=True)`;
`ingest` runs it only once it knows it will write (a tree unchanged by its files' stat writes
nothing and is answered without it; a damaged table is then found by the next command).
A file of a newer schema is read with a warning (`warn_if_newer`), never written.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import duckdb

NOT_DUCKDB = "not a DuckDB database file"


def damaged_message(path: Path, reason: str, hint: bool = True) -> str:
    """One line: which file, what is wrong, what to do."""
    if reason == NOT_DUCKDB:
        return f"{path} is not a DuckDB database file; check the --db path"
    return (f"{path} is damaged ({reason}); restore it from a backup, or ingest the logs again into a new --db "
            "file" + (f" (`ctxreplay check --db {path}` lists what is readable)" if hint else ""))


def describe_db_error(e: BaseException) -> tuple[str, bool]:
    """(a short reason, whether it means the file is damaged) for a DuckDB error."""
    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    low = msg.lower()
    if "no space left" in low:
        return "no space left on device", False
    if "permission denied" in low or "read-only file system" in low:
        return "permission denied", False
    if "not a valid duckdb database" in low:
        return NOT_DUCKDB, True
    if "could not read enough bytes" in low:
        return "the file is truncated", True
    if "checksum" in low or "corrupt" in low:
        return "a block does not match its checksum", True
    damaged = isinstance(e, (duckdb.SerializationException, duckdb.InternalException, duckdb.FatalException))
    return re.sub(r"^[A-Za-z ]*Error: ", "", msg), damaged


_WARNED: set[str] = set()  # databases already warned about in this process


def warn_if_newer(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """A database written by a newer ctxreplay (a schema version this one does not know) is read
    as it is, with one warning line on stderr per process and file: reading goes on (its tables
    hold at least the columns this version reads, or the command fails naming what is missing);
    a write is refused (`migrate`)."""
    try:
        done = {r[0] for r in con.execute("SELECT version FROM schema_migrations").fetchall()}
    except duckdb.CatalogException:
        return
    from replay.store.migrations import MIGRATIONS

    known = max(v for v, _, _ in MIGRATIONS)
    if done and max(done) > known and str(path) not in _WARNED:
        _WARNED.add(str(path))
        print(f"warning: {path} has schema version {max(done)}, newer than this ctxreplay knows ({known}); reading "
              "it as is (figures a newer version added are missing), writing to it is refused: upgrade ctxreplay",
              file=sys.stderr, flush=True)


def check(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Read every column of every table fully: one dict per table, with its rows or its error."""
    tables = con.execute(
        "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = current_database() "
        "AND NOT temporary ORDER BY schema_name, table_name"
    ).fetchall()
    result = []
    for schema, table in tables:
        cols = [r[0] for r in con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE database_name = current_database() "
            "AND schema_name = ? AND table_name = ? ORDER BY column_index", [schema, table]
        ).fetchall()]
        ident = ".".join('"' + n.replace('"', '""') + '"' for n in (schema, table))
        row: dict[str, Any] = {"table": table if schema == "main" else f"{schema}.{table}", "rows": None,
                               "error": None}
        try:
            hashed = ", ".join('"' + c.replace('"', '""') + '"' for c in cols)
            row["rows"] = con.execute(f"SELECT count(*), bit_xor(hash({hashed})) FROM {ident}").fetchone()[0]
        except duckdb.Error as e:
            row["error"] = describe_db_error(e)[0]
        result.append(row)
    return result
