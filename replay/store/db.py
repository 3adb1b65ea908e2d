"""The DuckDB store: numbered migrations tracked in a table, each applied in a transaction.

One DuckDB file holds any number of datasets (traces) and, later, runs. A session is
written in one transaction (delete its previous version, insert all its rows), so a crash
or a kill leaves either the whole session or none of it. Rows go in as Arrow columns (`_arrow_table`).
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import duckdb
import orjson

from replay.ingest.trace import (
    BLOCK_COLUMNS,
    COMPACTION_COLUMNS,
    READ_LINES_COLUMNS,
    REQUEST_COLUMNS,
    SESSION_COLUMNS,
    STREAM_COLUMNS,
    SessionTrace,
)
from replay.store.integrity import check, damaged_message, describe_db_error, warn_if_newer
from replay.store.migrations import MIGRATIONS


class StoreError(Exception):
    """A database problem the user can act on (locked, not a ctxreplay file, too new)."""


_I, _B, _S, _T = "INTEGER", "BIGINT", "VARCHAR", "BOOLEAN"
_TYPES = {  # the DuckDB type of every trace column, as in MIGRATIONS
    "session_key": _S, "dataset": _S, "file_key": _S, "agent": _S, "session_id": _S, "agent_version": _S,
    "started_at": _B, "ended_at": _B, "n_streams": _I, "n_requests": _I, "n_blocks": _I, "n_compactions": _I,
    "models": _S, "resumed_records": _I, "stream_id": _I, "kind": _S, "agent_id": _S, "req_idx": _I, "position": _I,
    "partition": _I, "user_turn": _I, "ts": _B, "model": _S, "msg_key": _S, "input_tokens": _B, "cache_write_5m": _B,
    "cache_write_1h": _B, "cache_read": _B, "output_tokens": _B, "has_usage": _T, "ttl_split_known": _T,
    "resumed_copy": _T, "pos": _I, "role": _S, "tool_name": _S, "tool_kind": _S, "tool_use_key": _S,
    "content_hash": _S, "bytes": _B, "tokens": _I, "resource": _S, "line_start": _I, "line_end": _I, "args_hash": _S,
    "is_error": _T, "trigger": _S, "pre_tokens": _B, "speed": _S, "project": _S,
    "client_version": _S, "client_event": _S, "miss_reason": _S, "miss_tokens": _B, "usage_ts": _B, "first_line": _I, "line_hashes": "BIGINT[]", "preview": _T,
}
_BOUNDS = {_I: 2**31, _B: 2**63}

TRACE_TABLES = {"sessions": SESSION_COLUMNS, "streams": STREAM_COLUMNS, "requests": REQUEST_COLUMNS,
                "blocks": BLOCK_COLUMNS, "compactions": COMPACTION_COLUMNS, "read_lines": READ_LINES_COLUMNS}


def _frame(cols: tuple[str, ...], data: dict[str, list]) -> tuple[dict, list[str]]:
    """Column lists as NumPy arrays of the store's types that DuckDB scans in place, and the
    SELECT expression of each column (`replay.store.columns`: neither pyarrow nor pandas is
    loaded by an ingest; on the shared entire-cli corpus, about 0.1 s for what took 1.0 s sent
    as JSON text through ``from_json``)."""
    from replay.store import columns

    kinds = {_I: "int32", _B: "int64", _S: "string", _T: "bool", "BIGINT[]": "int64[]"}
    return columns.frame({c: data[c] for c in cols}, {c: kinds[_TYPES[c]] for c in cols})


def stopped_in_duckdb(e: BaseException) -> bool:
    """Ctrl-C or a stop signal raised inside a DuckDB statement, as DuckDB reports it (its
    InterruptException, or RuntimeError "Query interrupted")."""
    return isinstance(e, getattr(duckdb, "InterruptException", ())) or (
        type(e) is RuntimeError and str(e) == "Query interrupted")


def now() -> datetime:
    """UTC wall time, naive (DuckDB TIMESTAMP columns hold UTC by convention here)."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


def connect(path: str | Path, read_only: bool = False, verify: bool | str = False) -> duckdb.DuckDBPyConnection:
    """Open (and migrate) a store. Locked, foreign or damaged files raise StoreError with what to do.

    With ``verify``, every table is read fully first (see `check`), so a damaged file is
    refused before anything is read from it or written to it. ``verify="before_write"`` does
    so only when a migration is due (it writes); the caller then calls `verify` before its own
    first write (`ingest`, which finds most of the time that it has nothing to write).
    """
    path = Path(path)
    if read_only and not path.exists():
        raise StoreError(f"{path}: no such database; create it with `ctxreplay ingest ... --db {path}`")
    if path.exists() and path.is_dir():
        raise StoreError(f"{path} is a directory; --db takes a file path such as {path}/ctxreplay.duckdb")
    if path.exists() and not path.is_file():
        raise StoreError(f"{path} is not a regular file; --db takes a DuckDB database file")
    if not path.exists() and not path.parent.is_dir():
        raise StoreError(f"{path}: its folder {path.parent} does not exist; create it or choose another --db path")
    refuse_foreign(path)
    try:
        con = duckdb.connect(str(path), read_only=read_only)
    except duckdb.Error as e:
        raise database_error(path, e) from e
    try:
        if verify == "before_write" and not read_only:
            verify = migrations_pending(con)
        if verify:
            verify_store(con, path)
        if not read_only:
            migrate(con)
        else:
            warn_if_newer(con, path)
    except duckdb.Error as e:
        con.close()
        raise database_error(path, e) from e
    except BaseException:
        con.close()
        raise
    return con


def verify_store(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Read every table fully (`check`); StoreError naming the first damaged table."""
    bad = [t for t in check(con) if t["error"]]
    if bad:
        raise StoreError(damaged_message(Path(path), f"table {bad[0]['table']}: {bad[0]['error']}"))


def migrations_pending(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether `migrate` would apply a migration (a new file, or one of an older ctxreplay)."""
    try:
        done = {r[0] for r in con.execute("SELECT version FROM schema_migrations").fetchall()}
    except duckdb.CatalogException:
        return True
    return bool({v for v, _, _ in MIGRATIONS} - done)


def refuse_foreign(path: Path) -> None:
    """Raise StoreError if ``path`` is an existing file that is not a DuckDB database.

    DuckDB opens an existing ``.csv``, ``.jsonl`` or ``.parquet`` file given as a database as
    an empty in-memory one: an ingest into it "succeeds" and stores nothing. Its header says
    what it is (``DUCK`` at byte 8), so it is checked before anything else is read."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(12)
    except FileNotFoundError:
        return
    except IsADirectoryError:
        raise StoreError(f"{path} is a directory; --db takes a file path such as {path}/ctxreplay.duckdb") from None
    except OSError as e:
        raise StoreError(f"{path}: cannot read this database ({e.strerror or e})") from None
    if head and head[8:12] != b"DUCK":
        raise StoreError(f"{path} is not a DuckDB database (its first bytes are not a DuckDB header); --db takes "
                         "a DuckDB file such as ctxreplay.duckdb, never a log or data file")


def database_error(path: Path, e: BaseException) -> StoreError:
    """A StoreError with one line naming the file and what to do, for a DuckDB error on ``path``."""
    reason, damaged = describe_db_error(e)
    if isinstance(e, duckdb.IOException) and re.search(r"could not set lock|conflicting lock", str(e), re.I):
        pid = re.search(r"PID (\d+)", str(e))
        who = f" (process {pid.group(1)})" if pid else ""
        return StoreError(f"{path} is locked by another process{who}; wait for it to finish or use another --db file")
    if damaged:
        return StoreError(damaged_message(path, reason))
    if reason == "no space left on device":
        return StoreError(f"{path}: no space left on device; free some space and run again "
                          "(the database keeps every session committed before)")
    if reason == "permission denied":
        return StoreError(f"{path}: permission denied; check the permissions of the file and its folder, "
                          "or use another --db file")
    return StoreError(f"{path}: cannot use this database ({reason})")


def migrate(con: duckdb.DuckDBPyConnection) -> list[int]:
    """Apply pending migrations, each in its own transaction; return the versions applied."""
    con.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR, applied_at TIMESTAMP)"
    )
    done = {r[0] for r in con.execute("SELECT version FROM schema_migrations").fetchall()}
    known = {v for v, _, _ in MIGRATIONS}
    if done - known:
        raise StoreError(
            f"database has schema version {max(done)}, newer than this ctxreplay knows ({max(known)}); upgrade ctxreplay"
        )
    applied = []
    for version, name, sql in MIGRATIONS:
        if version in done:
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            for stmt in [s for s in sql.split(";") if s.strip()]:
                con.execute(stmt)
            con.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)", [version, name, now()]
            )
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        applied.append(version)
    return applied


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    con.execute("BEGIN TRANSACTION")
    try:
        yield
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def ensure_dataset(con, name: str, key_fingerprint: str, token_counter: str) -> None:
    row = con.execute("SELECT key_fingerprint FROM datasets WHERE name = ?", [name]).fetchone()
    if row is None:
        con.execute(
            "INSERT INTO datasets (name, created_at, key_fingerprint, token_counter) VALUES (?, ?, ?, ?)",
            [name, now(), key_fingerprint, token_counter],
        )
    elif row[0] != key_fingerprint:
        raise StoreError(
            f"dataset {name!r} was ingested with another key (fingerprint {row[0]}, now {key_fingerprint}); "
            "its hashes would not join. Use the original key file (--key-file) or a new --dataset name."
        )


def file_status(con, dataset: str, file_key: str) -> tuple[int, str | None]:
    """(latest version, its content hash) of a source file, (0, None) if never ingested.

    A version stored as a copy of another file's session (status 'duplicate') counts too, as does
    one shorter than the session stored from the file (status 'shorter', `replay.store.versions`).
    """
    row = con.execute(
        "SELECT version, content_hash FROM source_files WHERE dataset = ? AND file_key = ? "
        "AND status IN ('ok', 'duplicate', 'shorter') ORDER BY version DESC LIMIT 1",
        [dataset, file_key],
    ).fetchone()
    return (row[0], row[1]) if row else (0, None)


def content_known(con, dataset: str, content_hash: str) -> bool:
    sql = "SELECT 1 FROM source_files WHERE dataset = ? AND content_hash = ? AND status = 'ok' LIMIT 1"
    return con.execute(sql, [dataset, content_hash]).fetchone() is not None


@dataclass
class PendingFile:
    """A read file waiting to be written: its trace (None if it held no context) and metadata.

    ``duplicate_of`` marks a copy of a session stored from another file: only its source_files
    row is written (status 'duplicate')."""

    trace: SessionTrace | None
    dataset: str
    file_key: str
    version: int
    content_hash: str
    size_bytes: int
    n_subagent_files: int
    reader: str
    skipped: dict[str, int]
    duplicate_of: str | None = None  # file key
    stat_sig: str | None = None  # `replay.store.statsig.signature` of its files, taken before they were hashed
    status: str | None = None  # 'shorter': a truncated version of the stored session, noted only (no rows touched)


def check_trace(trace: SessionTrace) -> None:
    """Raise ValueError when a value does not fit its column (a number out of range, a string
    that is not valid UTF-8), so that a bad file fails alone, before any batch is written."""
    for table, cols in TRACE_TABLES.items():
        data = {c: [trace.session.get(c)] for c in cols} if table == "sessions" else getattr(trace, table)
        for c in cols:
            bound = _BOUNDS.get(_TYPES[c])
            nums = [v for v in data[c] if v is not None] if bound else ()
            if nums and not (all(type(v) is int for v in nums) and -bound <= min(nums) and max(nums) < bound):
                raise ValueError(f"{table}.{c} holds a value that is not a {_TYPES[c]}")
            if _TYPES[c] == _S:
                try:
                    orjson.dumps(data[c])
                except orjson.JSONEncodeError as e:
                    raise ValueError(f"{table}.{c}: {e}") from None


def _replaces_any(con, batch: list[PendingFile]) -> bool:
    """Whether a stored session may be replaced or kept by the batch: one query for all its files
    (a superset of the per-file queries `write_sessions` makes when it is so), not two per file."""
    keys = [p.trace.session["session_key"] for p in batch if p.trace is not None and p.duplicate_of is None]
    return con.execute(
        "SELECT count(*) FROM sessions WHERE session_key IN (SELECT unnest(?)) "
        "OR (file_key IN (SELECT unnest(?)) AND dataset IN (SELECT unnest(?)))",
        [keys, [p.file_key for p in batch], sorted({p.dataset for p in batch})]).fetchall()[0][0] > 0


def write_sessions(con, batch: list[PendingFile]) -> dict[str, str]:
    """Write several files' sessions in one transaction, each replacing its previous version.

    A file whose new version holds a different session (another session id) does not replace
    the one it held: that session is kept under the file key ``<file key>@<its version>``.
    Returns {session key kept: its new file key}.

    Whole sessions only: a kill mid-write rolls back the batch, and since source_files is
    written in the same transaction, a re-run simply ingests those files again.
    """
    if not batch:
        return {}
    kept: dict[str, str] = {}
    with transaction(con):
        for p in batch if _replaces_any(con, batch) else ():
            if p.status is not None:
                continue
            rows = con.execute(
                "SELECT session_key, session_id FROM sessions WHERE dataset = ? AND file_key = ?",
                [p.dataset, p.file_key]).fetchall()
            new = p.trace.session if p.trace is not None else None  # a copy of another file's session too
            old = [k for k, sid in rows if new is None or sid == new["session_id"]]
            other = [k for k, sid in rows if k not in old]
            if new is not None and p.duplicate_of is None:
                # a session kept from an earlier version of the file comes back: this copy replaces it
                old += [r[0] for r in con.execute("SELECT session_key FROM sessions WHERE session_key = ?",
                                                  [new["session_key"]]).fetchall() if r[0] not in old]
            if old:
                for table in TRACE_TABLES:
                    con.execute(f"DELETE FROM {table} WHERE session_key IN (SELECT unnest(?))", [old])
            if other:
                # the file now holds a different session: the one it held is kept, under a file key
                # of its own that no later version of this file replaces
                retired = f"{p.file_key}@{p.version - 1}"
                con.execute("UPDATE sessions SET file_key = ? WHERE session_key IN (SELECT unnest(?))",
                            [retired, other])
                kept.update(dict.fromkeys(other, retired))
        traces = [p.trace for p in batch if p.trace is not None and p.duplicate_of is None]
        for table, cols in TRACE_TABLES.items():
            if len(traces) == 1 and table != "sessions":  # one file (a large one, often): its columns, not a copy
                merged = getattr(traces[0], table)
            else:
                merged = {c: [] for c in cols}
                for tr in traces:
                    for c in cols:
                        if table == "sessions":
                            merged[c].append(tr.session.get(c))
                        else:
                            merged[c].extend(getattr(tr, table)[c])
            if merged[cols[0]]:
                # not unregistered in a `finally`: after a failed or interrupted insert the
                # transaction is aborted, so unregistering would raise and hide why; the rollback
                # drops the registration, and the next one replaces it. A stop signal whose handler
                # runs while DuckDB reads the table comes back as a DuckDB error: the CLI reports it
                # as the stop it is (replay.cli.common.CleanGroup)
                arrays, exprs = _frame(cols, merged)
                con.register("_ctxreplay_rows", arrays)
                con.execute(f"INSERT INTO {table} ({', '.join(cols)}) SELECT {', '.join(exprs)} FROM _ctxreplay_rows")
                con.unregister("_ctxreplay_rows")
        con.executemany(
            "INSERT INTO source_files (dataset, file_key, version, content_hash, size_bytes, n_subagent_files, reader, "
            "status, ingested_at, skipped, duplicate_of, stat_sig) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [[p.dataset, p.file_key, p.version, p.content_hash, p.size_bytes, p.n_subagent_files, p.reader,
              p.status or ("duplicate" if p.duplicate_of else "ok"), now(), json.dumps(p.skipped), p.duplicate_of, p.stat_sig]
             for p in batch],
        )
    return kept


def datasets(con) -> list[dict[str, Any]]:
    rows = con.execute(
        """
        SELECT d.name, d.created_at, d.token_counter, d.key_fingerprint,
               count(DISTINCT s.session_key) AS sessions,
               coalesce(sum(s.n_requests), 0) AS requests,
               coalesce(sum(s.n_blocks), 0) AS blocks,
               (SELECT count(*) FROM source_files f WHERE f.dataset = d.name AND f.status = 'ok') AS file_versions
        FROM datasets d LEFT JOIN sessions s ON s.dataset = d.name
        GROUP BY ALL ORDER BY d.name
        """
    ).fetchall()
    cols = ["name", "created_at", "token_counter", "key_fingerprint", "sessions", "requests", "blocks", "file_versions"]
    return [dict(zip(cols, r)) for r in rows]


def has_column(con, table: str, column: str) -> bool:
    """Whether ``table`` has ``column`` (a read-only connection to an older file is not migrated)."""
    return con.execute("SELECT count(*) FROM information_schema.columns WHERE table_name = ? AND column_name = ?",
                       [table, column]).fetchone()[0] > 0


def sessions_without_client_info(con, dataset: str) -> int:
    """Claude Code sessions of ``dataset`` none of whose requests records a client version and
    whose file was stored before schema 7: the resume and task-turn rules cannot apply to them
    (ingesting the same logs again reads them again: the stored hash covers the trace revision).
    A session stored since then whose log records no version (an old client, a hand-made log)
    is not counted: ingesting it again would not change it."""
    has = "bool_or(r.client_version IS NOT NULL)" if has_column(con, "requests", "client_version") else "false"
    since = con.execute("SELECT min(applied_at) FROM schema_migrations WHERE version = 7").fetchone()[0]
    if since is None:  # a read-only connection to a file from before schema 7: every session predates it
        stored_before = "true"
        args: list = [dataset]
    else:
        stored_before = ("(SELECT max(f.ingested_at) FROM source_files f WHERE f.dataset = s.dataset "
                         "AND f.file_key = s.file_key) < ?")
        args = [since, dataset]
    return con.execute(
        f"""SELECT count(*) FROM (SELECT s.session_key, {has} AS known, bool_or({stored_before}) AS old
            FROM sessions s JOIN requests r USING (session_key) WHERE s.dataset = ? AND s.agent = 'claude-code'
            GROUP BY s.session_key) WHERE NOT known AND old""", args).fetchone()[0]


def records_projects(con, dataset: str | None = None) -> bool:
    """Whether the sessions (of ``dataset``, if named) record projects: the column exists (schema
    6+; a read-only connection to an older file is not migrated) and at least one session has
    one. Sessions ingested before schema 6, and logs that keep no working directory (Gemini
    CLI), have none."""
    if not has_column(con, "sessions", "project"):
        return False
    if dataset is None:
        return True
    return con.execute("SELECT count(*) FROM sessions WHERE dataset = ? AND project IS NOT NULL",
                       [dataset]).fetchone()[0] > 0


def sessions(con, dataset: str | None = None) -> list[dict[str, Any]]:
    sql = """
        SELECT s.dataset, s.session_key, s.agent, s.agent_version, s.models, s.n_streams, s.n_requests,
               s.n_blocks, s.n_compactions, s.started_at, s.ended_at,
               (SELECT coalesce(sum(tokens), 0) FROM blocks b WHERE b.session_key = s.session_key) AS block_tokens
        FROM sessions s
    """
    params: list[Any] = []
    if dataset:
        sql += " WHERE s.dataset = ?"
        params.append(dataset)
    sql += " ORDER BY s.dataset, s.started_at NULLS LAST, s.session_key"
    rows = con.execute(sql, params).fetchall()
    cols = ["dataset", "session_key", "agent", "agent_version", "models", "n_streams", "n_requests", "n_blocks",
            "n_compactions", "started_at", "ended_at", "block_tokens"]
    return [dict(zip(cols, r)) for r in rows]


def dataset_names(con) -> list[str]:
    return [r[0] for r in con.execute("SELECT name FROM datasets ORDER BY name").fetchall()]


def _export_error(out: Path, e: Exception) -> OSError:
    """A failed Parquet write as an OSError naming the output folder: the database was only
    read, so an error naming it (as DuckDB's message reads) would send the user to the wrong disk."""
    text = str(e)
    for code in (errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EROFS):
        if os.strerror(code).lower() in text.lower():
            return OSError(code, os.strerror(code), str(out))
    return OSError(errno.EIO, f"cannot write the Parquet files ({text.removeprefix('IO Error: ')[:160]})", str(out))


def export_parquet(con, dataset: str, out: Path) -> dict[str, int]:
    """Write the dataset's trace tables as Parquet files (one per table) for sharing.

    Every file is written under a temporary name in ``out`` and renamed once all are
    complete (``dataset.json`` last), so a failed or interrupted export leaves no partial file
    under a final name.
    """
    if dataset not in dataset_names(con):
        raise StoreError(f"no dataset {dataset!r}; known: {', '.join(dataset_names(con)) or 'none'}")
    out.mkdir(parents=True, exist_ok=True)
    tmp = f".tmp-{os.getpid()}-{secrets.token_hex(4)}"
    staged: list[tuple[Path, Path]] = []  # (temporary, final)
    counts = {}
    keys = "SELECT session_key FROM sessions WHERE dataset = $ds"
    try:
        for table, cols in TRACE_TABLES.items():
            names = ", ".join(cols)
            where = "dataset = $ds" if table == "sessions" else f"session_key IN ({keys})"
            final = out / f"{table}.parquet"
            staged.append((out / f".{final.name}{tmp}", final))
            target = str(staged[-1][0]).replace("'", "''")
            try:
                con.execute(
                    f"COPY (SELECT {names} FROM {table} WHERE {where} ORDER BY ALL) TO '{target}' (FORMAT parquet)",
                    {"ds": dataset},
                )
            except duckdb.IOException as e:
                raise _export_error(out, e) from e
            counts[table] = con.execute(f"SELECT count(*) FROM read_parquet('{target}')").fetchone()[0]
        meta = con.execute(
            "SELECT name, token_counter, key_fingerprint FROM datasets WHERE name = ?", [dataset]
        ).fetchone()
        staged.append((out / f".dataset.json{tmp}", out / "dataset.json"))
        staged[-1][0].write_text(json.dumps(
            {"name": meta[0], "token_counter": meta[1], "key_fingerprint": meta[2], "rows": counts}, indent=2
        ))
        for part, final in staged:
            os.replace(part, final)
    finally:
        for part, _ in staged:
            part.unlink(missing_ok=True)
    return counts
