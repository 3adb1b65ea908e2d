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

``Needs`` tells a notebook pointed at another database which of the runs its sections read are
there, and prints the command that creates each missing one instead of drawing an empty chart.
"""

from __future__ import annotations

import os
import shlex
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


class Needs:
    """The runs a notebook's sections read, checked against the runs stored in ``db``.

    ``m`` is ``analysis.tables.with_baseline(tables.runs(con, dataset))``. Each check returns
    whether its runs are there; when they are not it prints what the section would show and
    the command that creates them, so a notebook on any database runs top to bottom."""

    def __init__(self, db: str | Path, dataset: str, m):
        self.db, self.dataset, self.m = Path(db), dataset, m

    def _cmd(self, *args: str) -> str:
        return shlex.join(["ctxreplay", *args, "--db", str(self.db), "--dataset", self.dataset])

    def spec_path(self, spec_name: str) -> Path:
        return find_root() / "examples" / spec_name

    def sweep_id(self, spec_name: str) -> str:
        """The stored sweep of the spec ``spec_name``, found by its policy and spec file whatever
        axes it ran with (`ctxreplay demo` drops the TTL axis): ``analysis.notebooks.find_sweep``."""
        from analysis.notebooks import find_sweep

        return find_sweep(self.m, self.spec_path(spec_name), self.dataset)

    def sweep_runs(self, spec_name: str) -> int:
        """Policy runs of the example sweep ``spec_name`` on this dataset (its baselines not counted)."""
        if self.m.empty:
            return 0
        return int(((self.m["sweep_id"] == self.sweep_id(spec_name)) & (self.m["policy"] != "noop")).sum())

    def policy_runs(self) -> int:
        """Runs of a policy (not the no-op) that have a no-op baseline with the same cache settings."""
        if self.m.empty:
            return 0
        return int(((self.m["policy"] != "noop") & self.m["cost_base"].notna()).sum())

    def baseline(self, section: str = "") -> bool:
        if not self.m.empty and (self.m["policy"] == "noop").any():
            return True
        self._missing(section or "every saving", "a no-op baseline run", self._cmd("replay", "--policy", "noop"))
        return False

    def policies(self, section: str = "") -> bool:
        """At least one policy run against a baseline; else prints the commands that make one."""
        if self.policy_runs():
            return True
        if self.baseline(section):
            self._missing(section or "this section", "a policy run against the no-op baseline", self._pair("\n  "))
        return False

    def _pair(self, sep: str) -> str:
        """A baseline and a policy run with the same (default) settings: the stored baselines may
        be a sweep's, under other cache settings, and then measure nothing a plain replay makes."""
        return (self._cmd("replay", "--policy", "noop") + sep + self._cmd("replay", "--policy", "devboy_lru")
                + "   # or any policy of `ctxreplay policies`")

    def defaults(self, lb, section: str = "") -> bool:
        """``lb`` (``tables.defaults_leaderboard``) holds a policy at its source's defaults."""
        if not lb.empty and (lb["policy"] != "noop").any():
            return True
        if self.policies(section):
            self._missing(section or "this section", "a policy run at its source's defaults (sweep points do not count)",
                          self._pair("\n  "))
        return False

    def sweep(self, spec_name: str, section: str = "") -> bool:
        if self.sweep_runs(spec_name):
            return True
        self._missing(section or f"the {spec_name} section", f"the runs of the example sweep {spec_name}",
                      self._cmd("sweep", str(self.spec_path(spec_name))))
        return False

    def summary(self, sweeps: tuple[str, ...] | list[str] = ()) -> None:
        """One line per kind of run the notebook reads: how many are stored, or the command that creates them."""
        n_base = 0 if self.m.empty else int((self.m["policy"] == "noop").sum())
        lines = [f"no-op baselines: {n_base}" if n_base else
                 f"no-op baselines: none; create one with: {self._cmd('replay', '--policy', 'noop')}"]
        n = self.policy_runs()
        lines.append(f"policy runs against a baseline: {n}" if n else
                     "policy runs against a baseline: none; create one with: " + self._pair(" && "))
        for spec in sweeps:
            k = self.sweep_runs(spec)
            lines.append(f"sweep {spec}: {k} runs" if k else
                         f"sweep {spec}: not run; its sections are skipped. Create it with: "
                         + self._cmd("sweep", str(self.spec_path(spec))))
        print("Runs this notebook reads, on this database:\n  " + "\n  ".join(lines))
        if not n or any(not self.sweep_runs(s) for s in sweeps):
            print(f"(or build the sample database with all of them: python {find_root() / 'notebooks' / '_prepare.py'}"
                  " NEW.duckdb, and set DB to it)")

    @staticmethod
    def _missing(section: str, what: str, cmd: str) -> None:
        print(f"skipped {section}: it needs {what}, which this database does not hold. Create it with:\n  {cmd}")


if __name__ == "__main__":
    prepare(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_DB)
