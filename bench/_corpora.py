"""The log folders a bench script runs on: shared by the bench scripts that take corpus paths
(imported from their own folder before they take it off the import path; not a script itself)."""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path


def corpus_folders(ap: argparse.ArgumentParser, paths: list[Path], logs: Path, names: list[str] | None,
                   default: tuple[str, ...]) -> dict[str, Path]:
    """Name (of its database) -> log folder: the folders given, the --corpus names under --logs, else the defaults."""
    if not paths or names:
        paths = [*paths, *(logs / n for n in names or (() if paths else default))]
    missing = [str(p) for p in paths if not p.is_dir()]
    if missing:
        ap.error("not a folder: " + ", ".join(missing))
    out: dict[str, Path] = {}
    for p in paths:
        name = p.resolve().name
        while name in out:  # two folders of the same name: their databases apart
            name += "_"
        out[name] = p
    return out


def claude_config_copy(path: Path, root: Path) -> tuple[list[Path], Path, dict[str, str]]:
    """(the log files under ``path``, the projects folder they are copied into, the environment that
    points `ccusage` at them) with ``root`` as a Claude config folder (``CLAUDE_CONFIG_DIR``): copies,
    since ccusage's native builds skip symbolic links; numbered, so two files of one name stay apart."""
    logs = sorted(f for f in (path.rglob("*") if path.is_dir() else [path]) if f.suffix in (".jsonl", ".json"))
    projects = root / "claude" / "projects" / "bench"
    projects.mkdir(parents=True)
    for i, f in enumerate(logs):
        shutil.copy2(f, projects / f"{i:05d}-{f.name}")
    return logs, projects, {**os.environ, "CLAUDE_CONFIG_DIR": str(root / "claude")}
