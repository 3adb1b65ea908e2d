"""Mapping a dataset's pseudonyms back to the owner's files (`ctxreplay sessions --resolve DIR`).

Nothing reversible is stored: a session row keeps only ``file_key``, the keyed hash of the
path its transcript was read from (`replay.store.load`: ``keys.short("file", resolved path)``),
and ``project``, the per-component pseudonym of its first working directory
(``keys.path(cwd)``). Whoever holds the key can recompute both from the files under a
folder and match them; nobody else can. The files are read only for their working directory.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from replay.ingest.keys import Keyring
from replay.store.discovery import discover

CWD_SCAN_LINES = 200  # the working directory is on the first records; a long file is not read whole


def _first_cwd(path: Path) -> str | None:
    """The first working directory a log records (Claude Code `cwd`, Codex `payload.cwd`)."""
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            for i, line in enumerate(f):
                if i >= CWD_SCAN_LINES:
                    break
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(rec, dict):
                    continue
                for holder in (rec, rec.get("payload")):
                    if isinstance(holder, dict) and isinstance(holder.get("cwd"), str) and holder["cwd"]:
                        return holder["cwd"]
    except OSError:
        return None
    return None


def resolve(con, dataset: str, master: bytes, root: Path) -> dict[str, Any]:
    """{"sessions": session_key -> {"file", "project_path"}, "files_scanned", "problems"} for the
    sessions of ``dataset`` whose transcript is under ``root``. ``project_path`` is the working
    directory whose pseudonym equals the session's project (None when it does not: another key,
    or a log without one)."""
    keys = Keyring.for_dataset(master, dataset)
    problems: list[tuple[str, str]] = []
    units = discover([root], problems, [])
    by_key = {keys.short("file", str(u.main), 16): u.main for u in units}
    rows = con.execute("SELECT session_key, file_key, project FROM sessions WHERE dataset = ?", [dataset]).fetchall()
    found: dict[str, dict[str, Any]] = {}
    for session_key, file_key, project in rows:
        path = by_key.get(file_key)
        if path is None:
            continue
        cwd = _first_cwd(path) if project else None
        found[session_key] = {"file": str(path),
                              "project_path": cwd if cwd is not None and keys.path(cwd) == project else None}
    return {"sessions": found, "files_scanned": len(units), "problems": problems}
