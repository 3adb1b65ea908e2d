"""Storage: the DuckDB file, its numbered migrations and the ingest pipeline that fills it.

`db` owns the connection, migrations, atomic session writes and Parquet export; `integrity`
reads a file fully to tell whether it is whole; `load` discovers log files, runs the readers
of `replay.ingest` on them and writes their traces.
May import: `replay.ingest`.
"""

from replay.store.db import (
    MIGRATIONS,
    PendingFile,
    StoreError,
    connect,
    content_known,
    database_error,
    dataset_names,
    datasets,
    ensure_dataset,
    export_parquet,
    file_status,
    migrate,
    now,
    records_projects,
    sessions,
    sessions_without_client_info,
    stopped_in_duckdb,
    transaction,
    verify_store,
    write_sessions,
)
from replay.store.integrity import check

__all__ = [
    "MIGRATIONS", "PendingFile", "StoreError", "check", "connect", "content_known", "database_error",
    "dataset_names", "datasets", "ensure_dataset", "export_parquet", "file_status", "migrate", "now",
    "records_projects", "sessions", "sessions_without_client_info", "stopped_in_duckdb", "transaction",
    "write_sessions",
]
