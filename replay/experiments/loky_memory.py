"""A sweep worker holds its dataset on purpose: loky's memory-leak check must not restart it for that."""

from __future__ import annotations


def tolerate_in_loky_worker(nbytes: int) -> None:
    """Let this loky worker hold ``nbytes`` more than loky's memory check allows.

    A loky worker takes its memory reference after its first task (the warm-up `_noop`, before
    any dataset is loaded) and restarts itself once it holds 300 MB more than that, which a
    loaded dataset does: the bench sweep's worker then loaded its 1.1 GB of arrays a second time
    and lost the streams it had priced. The check reads its limit from loky's module at every
    check, so raising it here (by twice what loading the dataset added: the dataset, and as much
    again for the streams priced from it) keeps the check for real leaks on top of what the worker holds on purpose. Nothing happens
    where loky is missing or its module has no such limit."""
    try:
        from joblib.externals.loky import process_executor as pe
    except ImportError:
        return
    limit = getattr(pe, "_MAX_MEMORY_LEAK_SIZE", None)
    if isinstance(limit, int):
        pe._MAX_MEMORY_LEAK_SIZE = max(limit, _LOKY_LEAK_LIMIT + int(nbytes))


_LOKY_LEAK_LIMIT = int(3e8)  # loky's own limit (joblib 1.4-1.5)


def rss() -> int:
    """This process's resident memory in bytes (0 without psutil, where loky checks nothing)."""
    try:
        import psutil
    except ImportError:
        return 0
    return int(psutil.Process().memory_info().rss)
