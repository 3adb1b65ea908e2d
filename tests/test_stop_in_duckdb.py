"""A stop signal whose handler runs while DuckDB reads a Python object (an Arrow table being
inserted) comes back as a DuckDB error; the command still ends as `terminated`, not as a
damaged database."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import os, signal, sys
    import click, duckdb, pyarrow as pa
    from replay.cli.common import CleanGroup

    @click.group(cls=CleanGroup)
    def cli():
        pass

    @cli.command()
    def write():
        con = duckdb.connect()
        con.execute("CREATE TABLE t (a INTEGER)")
        schema = pa.schema([("a", pa.int32())])

        def batches():  # the signal lands while DuckDB pulls the second batch through Python
            yield pa.record_batch([pa.array([1], pa.int32())], schema=schema)
            os.kill(os.getpid(), getattr(signal, sys.argv[1]))
            yield pa.record_batch([pa.array([2], pa.int32())], schema=schema)

        con.register("rows", pa.RecordBatchReader.from_batches(schema, batches()))
        con.execute("INSERT INTO t SELECT a FROM rows")
        print("not stopped")

    cli(["write"])
""")


def _run(sig: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SCRIPT, sig], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


def test_sigterm_inside_a_duckdb_scan_ends_as_terminated():
    r = _run("SIGTERM")
    assert r.returncode == 143 and r.stderr.strip() == "terminated (SIGTERM)" and r.stdout == "", r.stderr


def test_sighup_inside_a_duckdb_scan_ends_as_terminated():
    r = _run("SIGHUP")
    assert r.returncode == 129 and r.stderr.strip() == "terminated (SIGHUP)", r.stderr


def test_ctrl_c_inside_a_duckdb_scan_ends_as_interrupted():
    r = _run("SIGINT")
    assert r.returncode == 130 and r.stderr.strip() == "interrupted", r.stderr
