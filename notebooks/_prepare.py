"""Build the database the notebooks read: the embedded sample, every policy, the example sweeps.

``prepare(db_path)`` does nothing if the file exists. Otherwise it ingests
``datasets/sample/logs`` as dataset ``sample`` (master key in ``<db>.key`` next to the
database), replays every registered policy at its source's defaults (``pipeline`` excluded:
it has no defaults of its own), and runs the example sweeps below. The database is built
under a temporary name and renamed at the end, so an interrupted build never leaves a file
that looks finished.

Equivalent CLI (what a user would type)::

    ctxreplay ingest datasets/sample/logs --db out/notebooks.duckdb --dataset sample
    ctxreplay replay --db out/notebooks.duckdb --dataset sample --policy NAME    # each policy
    ctxreplay sweep examples/devboy_capacity.toml --db out/notebooks.duckdb --dataset sample   # each sweep

Run as a script to build the default database: ``python notebooks/_prepare.py [DB]``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DATASET = "sample"
SWEEPS = ("devboy_capacity.toml", "jp_min_bytes_lookback.toml", "clear_tool_uses_trigger_keep.toml",
          "supersede_trigger.toml")
NOTEBOOKS_DIR = Path(__file__).resolve().parent
REPO_ROOT = NOTEBOOKS_DIR.parent
DEFAULT_DB = REPO_ROOT / "out" / "notebooks.duckdb"


def find_root(start: str | Path | None = None) -> Path:
    """The repository root: the first directory at or above ``start`` (default: cwd) holding
    pyproject.toml and notebooks/_prepare.py; falls back to this file's repository."""
    here = Path(start or Path.cwd()).resolve()
    for p in (here, *here.parents):
        if (p / "pyproject.toml").is_file() and (p / "notebooks" / "_prepare.py").is_file():
            return p
    return REPO_ROOT


def resolve(db: str | Path) -> Path:
    """A notebook's ``DB`` parameter as a path: relative paths are relative to notebooks/."""
    return (NOTEBOOKS_DIR / Path(db).expanduser()).resolve()


def prepare(db_path: str | Path = DEFAULT_DB, *, quiet: bool = False) -> Path:
    """Build the notebooks' database at ``db_path`` unless it exists; returns its path."""
    db = resolve(db_path)
    if db.exists():
        return db

    from replay.experiments import runs
    from replay.engine import ReplayOptions
    from replay.store.load import ingest
    from replay.policies import REGISTRY, build
    from replay.store import connect
    from replay.experiments.sweep import load_spec, run_sweep

    def say(msg: str) -> None:
        if not quiet:
            print(msg, flush=True)

    logs = REPO_ROOT / "datasets" / "sample" / "logs"
    if not logs.is_dir():  # installed without the repository: regenerate the same sample
        from replay.cli import sample_logs_dir

        logs = sample_logs_dir()
    db.parent.mkdir(parents=True, exist_ok=True)
    tmp = db.with_name(f"{db.stem}.partial-{os.getpid()}{db.suffix}")  # two notebooks may build at once
    for suffix in ("", ".wal"):
        Path(str(tmp) + suffix).unlink(missing_ok=True)
    key = db.with_name(db.name + ".key")

    say(f"building {db} (once): ingest {logs}")
    summary = ingest([logs], tmp, dataset=DATASET, key_file=key)
    if summary.failed:
        raise RuntimeError(f"the sample did not ingest cleanly: {summary.failed}")
    con = connect(tmp, read_only=False)
    try:
        ds = runs.load(con, DATASET)
        names = [n for n in REGISTRY if n != "pipeline"]
        say(f"every policy at its defaults: {', '.join(names)}")
        for name in names:
            runs.run_policy(con, ds, build(name), ReplayOptions())
    finally:
        con.close()
    for spec_name in SWEEPS:
        spec = load_spec(REPO_ROOT / "examples" / spec_name)
        res = run_sweep(tmp, spec, DATASET)
        say(f"sweep {spec.name}: {res.points} configurations in {res.seconds:.1f}s")
    os.replace(tmp, db)
    say(f"done: {db}")
    return db


if __name__ == "__main__":
    prepare(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_DB)
