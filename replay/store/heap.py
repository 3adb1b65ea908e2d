"""Freed heap memory handed back to the system before an ingest writes (glibc; elsewhere a no-op).

A large file's trace is built from many small Python objects; the reader's per-file state is
freed when the file ends, but glibc keeps the freed pages in the process (34 MB in the main
arena after a 196 MB session, measured) and DuckDB's insert then grows it further. A trim
before each write returns them (`python bench/ingest.py --memory`; docs/scaling.md, "Ingest
peak memory"). Lowering glibc's mmap and trim thresholds instead saved 5 MB more but cost
0.7 s of system CPU on the shared entire-cli corpus, so it is not done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

_libc = None


def _glibc():
    global _libc
    if _libc is None:
        _libc = False
        if sys.platform.startswith("linux"):
            try:
                lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                if hasattr(lib, "malloc_trim"):
                    _libc = lib
            except OSError:
                pass
    return _libc


def trim() -> None:
    """Return the heap's free pages to the system (glibc's ``malloc_trim``)."""
    lib = _glibc()
    if lib:
        lib.malloc_trim(0)
