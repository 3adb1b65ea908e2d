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
