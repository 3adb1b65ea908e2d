"""Is a stored log file unchanged? Its stat answers before its bytes are read.

Hashing every byte of an unchanged tree costs as much as reading it, so each stored file
version keeps a signature of its files' stat: per file (the main transcript, then its
subagent files, sorted) the size, ``st_mtime_ns``, ``st_ctime_ns``, inode and device, with
the trace revision (an upgrade that changes what is read from logs reads them again). A file
replaced by another of the same size has another inode or ctime (ctime cannot be set back
with ``touch``), so it is read again. The signature is a keyed hash: the store keeps no
inode or ctime.

A file changed within ``RACY_NS`` of being looked at gets no signature (as git treats
"racily clean" index entries): a write landing in the same timestamp tick as the stat could
otherwise leave the stat unchanged and the change unseen. Such a file is hashed on the next
run, which stores its signature then.
"""

from __future__ import annotations

import os
import time

from replay.ingest.keys import Keyring
from replay.ingest.trace import TRACE_REVISION
from replay.store.discovery import Unit

SUBAGENT_SEPARATOR = len(b"\0sub\0")  # what `replay.store.readunit.hash_unit` adds to a unit's size per subagent file
RACY_NS = 2_000_000_000  # well above the coarsest timestamp tick of common file systems (1 s)


def signature(unit: Unit, keys: Keyring) -> str | None:
    """The unit's stat signature, None when a file cannot be stat'ed or changed too recently."""
    parts = [f"rev{TRACE_REVISION}"]
    now = time.time_ns()
    for path in [unit.main, *sorted(unit.subagents)]:
        try:
            st = os.stat(path)
        except OSError:
            return None  # hashing it says why it cannot be read
        if now - max(st.st_mtime_ns, st.st_ctime_ns) < RACY_NS:
            return None
        parts.append(f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}:{st.st_dev}")
    return keys.short("stat", "\0".join(parts), 32)


def changed_while_read(unit: Unit, size: int, keys: Keyring) -> str | None:
    """Why the files of ``unit`` no longer hold the ``size`` bytes that were hashed and then read:
    shorter now (truncated or replaced while read); None when they are as hashed or grew (a
    growing file is read up to what was hashed, its rest on the next run). Such a parse may
    mix two versions, so it is not stored: the next run reads the file again.

    A file rewritten in place with the same length is not told from one that grew between its
    stat and its hashing (a live session written to just then): only a shorter file is failed.
    A unit with a gzip log is not checked (its hashed size is the decompressed one; archives
    are not written to)."""
    from replay.ingest.readers.source import gzip_log

    paths = [unit.main, *sorted(unit.subagents)]
    if any(gzip_log(p) for p in paths):
        return None
    now = SUBAGENT_SEPARATOR * len(unit.subagents)  # `hash_unit`'s size counts the separator it hashes before each
    for path in paths:
        try:
            now += os.stat(path).st_size
        except OSError:
            return "it was removed while being read; nothing of it is stored"
    if now < size:
        return (f"it shrank from {size:,} to {now:,} bytes while being read; nothing of it is stored: "
                "run the ingest again once it is written")
    return None
