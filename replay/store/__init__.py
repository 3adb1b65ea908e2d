"""Storage: the DuckDB file, its numbered migrations and the ingest pipeline that fills it.

`db` owns the connection, migrations, atomic session writes and Parquet export; `load`
discovers log files, runs the readers of `replay.ingest` on them and writes their traces.
May import: `replay.ingest`.
"""

from replay.store.db import (
    MIGRATIONS,
    PendingFile,
    StoreError,
    connect,
    content_known,
    dataset_names,
    datasets,
    ensure_dataset,
    export_parquet,
    file_status,
    migrate,
    now,
    sessions,
    transaction,
    write_sessions,
)

__all__ = [
    "MIGRATIONS", "PendingFile", "StoreError", "connect", "content_known", "dataset_names", "datasets",
    "ensure_dataset", "export_parquet", "file_status", "migrate", "now", "sessions", "transaction",
    "write_sessions",
]
