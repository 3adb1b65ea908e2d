"""`ingest --jobs N`: worker processes hash, parse and token-count log files; one process writes.

The writer (`replay.store.load._Run`) takes the workers' results in file order, a bounded
window ahead, and checks, batches and writes them exactly as a one-process ingest does, so
the database and the summary are the same. A worker skips parsing a file that is unchanged
or whose content was stored when the ingest began (the writer skips it too: what is stored
only grows). Workers ignore Ctrl-C (the writer handles it); if one dies, its file and the
rest are read by the writer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from replay.ingest.keys import Keyring
from replay.store.load import Parsed, Unit, hash_unit, parse_unit

if TYPE_CHECKING:
    from replay.store.load import _Run

_W: dict = {}  # a worker's keyring, dataset and the content hashes stored when the ingest started


def _worker_init(keys: Keyring, dataset: str, known: set[str]) -> None:
    import signal

    from replay.ingest import tokens

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the writer's to handle
    tokens.THREADS = 1  # one core per worker
    _W.update(keys=keys, dataset=dataset, known=known)


def _worker_read(unit: Unit, file_key: str, latest: int, latest_hash: str | None):
    """(hash, size, parse or None) of one unit; not parsed when unchanged or already stored when the run began."""
    keys, dataset = _W["keys"], _W["dataset"]
    try:
        content_hash, size, sizes = hash_unit(unit, keys)
    except OSError as e:
        return None, 0, Parsed(failure=(str(e.filename or unit.main), f"cannot read: {e.strerror or e}"))
    if latest_hash == content_hash or (latest == 0 and content_hash in _W["known"]):
        return content_hash, size, None  # skipped by the writer too (what is stored only grows)
    return content_hash, size, parse_unit(unit, keys, dataset, file_key, sizes)


def read_in_parallel(run: _Run, units: list[Unit], jobs: int, on_progress: Callable[[int, str], None] | None) -> None:
    """`ingest`'s loop with reading in ``jobs`` processes, results taken in unit order (a bounded window ahead)."""
    import multiprocessing
    from collections import deque
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    ex = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"), initializer=_worker_init,
                             initargs=(run.keys, run.dataset, set(run.known)))
    window: deque = deque()
    todo = iter(units)
    broken = False
    ok = False
    try:
        def submit() -> None:
            for unit in todo:
                file_key = run.file_key(unit)
                latest, latest_hash = run.status.get(file_key, (0, None))
                window.append((unit, file_key, ex.submit(_worker_read, unit, file_key, latest, latest_hash)))
                if len(window) >= 4 * jobs:
                    return

        submit()
        while window:
            unit, file_key, fut = window.popleft()
            if broken:
                item = run.read(unit)
            else:
                try:
                    content_hash, size, parsed = fut.result()
                except BrokenProcessPool:  # a worker died (killed, out of memory?): this file and the rest are read here
                    broken = True
                    item = run.read(unit)
                except Exception as e:  # e.g. a result that cannot be sent back
                    run.summary.failed.append((str(unit.main), f"internal error while reading ({type(e).__name__}: "
                                                               f"{e}); please report"))
                    item = None
                else:
                    item = None
                    if content_hash is None:
                        run.finish(unit, file_key, 0, "", 0, parsed)
                    else:
                        latest = run.check(file_key, content_hash, size)
                        if latest is not None:
                            if parsed is None:  # not expected (what is stored only grows): read it here
                                try:
                                    sizes = hash_unit(unit, run.keys)[2]
                                    parsed = parse_unit(unit, run.keys, run.dataset, file_key, sizes)
                                except OSError as e:
                                    parsed = Parsed(failure=(str(e.filename or unit.main),
                                                              f"cannot read: {e.strerror or e}"))
                            item = run.finish(unit, file_key, latest, content_hash, size, parsed)
                if not broken:
                    submit()
            if broken and not window:
                window.extend((rest, run.file_key(rest), None) for rest in todo)
            if item is not None:
                run.add(item)
            if on_progress:
                on_progress(unit.size, unit.main.name)
        ok = True
    finally:
        ex.shutdown(wait=ok, cancel_futures=True)
