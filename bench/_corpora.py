"""The log folders a bench script runs on: shared by the bench scripts that take corpus paths
(imported from their own folder before they take it off the import path; not a script itself)."""

from __future__ import annotations

import argparse
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
