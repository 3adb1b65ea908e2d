"""`ingest --jobs N`: worker processes hash, parse and token-count log files; one process writes.

The writer (a `Writer`: `replay.store.load._Run`) takes the workers' results in file order, a
bounded window ahead, and checks, batches and writes them exactly as a one-process ingest does, so
the database and the summary are the same. A worker skips parsing a file that is unchanged
or whose content was stored when the ingest began (the writer skips it too: what is stored
only grows). Workers ignore Ctrl-C (the writer handles it); if one dies, its file and the
rest are read by the writer.

The workers are started (`Workers`) before the database is opened, so that they start up
while the writer opens it. On Linux, when no other thread runs in this process,
they are forked: they start at once, with every module already imported (no DuckDB thread
exists yet, and no other Python thread can hold a lock they inherit); elsewhere they are
spawned. The content hashes stored when the ingest began reach them through a temporary
file, written once the database is read (a file they cannot read only costs a parse the
writer then discards). Once every file is submitted, the writer writes its pending batch
while it waits for the last results, so that little is left to write after the last one.

Workers die with the writer: on Linux the kernel kills them when it dies (PR_SET_PDEATHSIG, set
in each worker as it starts); elsewhere a thread in each polls its parent. A `kill -9` of the
writer thus leaves no worker behind, and on Linux no temporary file: the forked workers read the
stored hashes from an unnamed file they inherit.

A new database has every file parsed, and the tokenizer loaded first (about 1 s, in which its
Rust constructor holds the GIL): an `EarlyReader`, forked before that, reads the first files
meanwhile and leaves their token counting to the writer; the workers are forked after it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

from replay.ingest import tokens
from replay.ingest.keys import Keyring
from replay.store import statsig
from replay.store.db import PendingFile
from replay.store.discovery import Unit
from replay.store.readunit import Parsed, complete, hash_unit, parse_unit


class Writer(Protocol):
    """What the parallel reader asks of the one process that writes (`replay.store.load._Run`,
    which imports this module; this module imports none of it): the checks and the batching of
    a one-process ingest, called in file order."""

    keys: Keyring
    dataset: str
    known: set[str]  # content hashes stored when the ingest began
    status: dict[str, tuple[int, str]]  # file key -> its latest stored version and content hash
    pending: list[PendingFile]

    def file_key(self, unit: Unit) -> str: ...

    def same_stat(self, file_key: str, sig: str | None) -> bool: ...

    def check(self, file_key: str, content_hash: str, size: int, sig: str | None = None) -> int | None: ...

    def finish(self, unit: Unit, file_key: str, latest: int, content_hash: str, size: int,
               parsed: Parsed, sig: str | None = None) -> PendingFile | None: ...

    def read(self, unit: Unit) -> PendingFile | None: ...

    def take(self, unit: Unit, file_key: str, sig: str | None, content_hash: str | None, size: int,
             parsed: Parsed) -> PendingFile | None: ...

    def add(self, p: PendingFile) -> None: ...

    def flush(self) -> None: ...


_W: dict = {}  # a worker's keyring, dataset and the content hashes stored when the ingest started


def start_method() -> str:
    """'fork' on Linux when this process runs no other Python thread, else 'spawn'."""
    import multiprocessing
    import sys
    import threading

    if sys.platform.startswith("linux") and threading.active_count() == 1 \
            and "fork" in multiprocessing.get_all_start_methods():
        return "fork"
    return "spawn"


PR_SET_PDEATHSIG = 1
WATCH_SECONDS = 0.5  # how often a worker without PR_SET_PDEATHSIG looks for its parent


def die_with_parent(parent: int) -> None:
    """End this process when ``parent`` (the writer) dies, even by SIGKILL: the kernel's parent-death
    signal on Linux, else a daemon thread that polls ``os.getppid()``. A parent that died before
    this ran (the worker was reparented already) ends it at once."""
    import signal
    import sys
    import threading

    armed = False
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
    if os.getppid() != parent:
        os._exit(1)
    if armed:
        return

    def watch() -> None:
        import time

        while os.getppid() == parent:
            time.sleep(WATCH_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="ctxreplay-parent-watch", daemon=True).start()


def _worker_init(keys: Keyring, dataset: str, known_path: str | None, parent: int | None = None) -> None:
    import signal

    if parent is not None:
        die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the writer's to handle
    for name in ("SIGTERM", "SIGHUP"):  # a forked worker inherits the writer's handlers: it just stops
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    tokens.THREADS = 1  # one core per worker
    _W.clear()
    _W.update(keys=keys, dataset=dataset, known_path=known_path, known=None)


def _ready() -> None:
    """A no-op task: submitted once per worker to start the processes before the database is opened."""


def _known() -> set[str]:
    """The content hashes stored when the ingest began, read once per worker (empty if they cannot be)."""
    if _W["known"] is None:
        try:
            with open(_W["known_path"]) as fh:
                _W["known"] = set(fh.read().split())
        except (OSError, TypeError):
            _W["known"] = set()
    return _W["known"]


def _worker_read(unit: Unit, file_key: str, latest: int, latest_hash: str | None):
    """(hash, size, parse or None) of one unit; not parsed when unchanged or already stored when the run began."""
    return _read(unit, _W["keys"], _W["dataset"], file_key, latest, latest_hash, _known)


def _read(unit: Unit, keys: Keyring, dataset: str, file_key: str, latest: int, latest_hash: str | None,
          known: Callable[[], set[str]]):
    try:
        content_hash, size, sizes = hash_unit(unit, keys)
    except OSError as e:
        return None, 0, Parsed(failure=(str(e.filename or unit.main), f"cannot read: {e.strerror or e}"))
    if latest_hash == content_hash or (latest == 0 and content_hash in known()):
        return content_hash, size, None  # skipped by the writer too (what is stored only grows)
    return content_hash, size, parse_unit(unit, keys, dataset, file_key, sizes)


EARLY_BYTES = 32 << 20  # of logs read by the early reader: about as long as the tokenizer takes to load
EARLY_FILE = 8 << 20  # a larger file ends its share


class EarlyReader:
    """A process, forked before the tokenizer loads, that reads the first units of a new database
    meanwhile (the tokenizer's Rust constructor holds the GIL for about 1 s: no thread of this
    process can read then), leaving their token counts to this process (`replay.ingest.tokens.DEFER`).

    Its results are taken in unit order (`take`); if it dies, this process reads the rest of its share."""

    @classmethod
    def start(cls, units: list[Unit], keys: Keyring, dataset: str) -> EarlyReader | None:
        share, size = [], 0
        for unit in units:
            n = unit.size
            if n > EARLY_FILE or size + n > EARLY_BYTES:
                break
            share.append(unit)
            size += n
        return cls(share, keys, dataset) if share else None

    def __init__(self, share: list[Unit], keys: Keyring, dataset: str):
        import multiprocessing

        ctx = multiprocessing.get_context("fork")
        self.n, self.taken = len(share), 0
        self.got: list = []
        self.conn, child = ctx.Pipe(duplex=False)
        self.proc = ctx.Process(target=_read_early, args=(child, share, keys, dataset, os.getpid()), daemon=True)
        try:
            self.proc.start()
        finally:
            child.close()

    def take(self, run: Writer, unit: Unit) -> PendingFile | None:
        """The next unit of its share, as `_Run.read` would have read it."""
        k, self.taken = self.taken, self.taken + 1
        while len(self.got) <= k:
            try:
                self.got.append(self.conn.recv())
            except (EOFError, OSError):  # it died: the rest of its share is read here
                self.got.extend([None] * (self.n - len(self.got)))
        got, self.got[k] = self.got[k], None
        return run.read(unit) if got is None else run.take(unit, *got)

    def close(self) -> None:
        self.conn.close()
        if self.proc.is_alive():
            self.proc.terminate()
        self.proc.join()


def _read_early(conn, share: list[Unit], keys: Keyring, dataset: str, parent: int | None = None) -> None:
    """The early reader's work: each unit hashed and read, sent in order by a thread of its own
    (this process's reading is not held up while the pipe waits for the loading one)."""
    import queue
    import signal
    import threading

    if parent is not None:
        die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the writer's to handle
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    tokens.DEFER = True
    out: queue.Queue = queue.Queue()
    gone = threading.Event()  # the writer stopped listening: nothing more is worth reading

    def send() -> None:
        try:
            while (item := out.get()) is not None:
                conn.send(item)
        except OSError:  # the writer closed its end (it failed, or was stopped)
            gone.set()

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        for unit in share:
            if gone.is_set():
                break
            file_key = keys.short("file", str(unit.main), 16)
            sig = statsig.signature(unit, keys)  # before hashing, as `_Run.read` takes it
            out.put((file_key, sig, *_read(unit, keys, dataset, file_key, 0, None, set)))
    except BaseException:  # noqa: S110 - quietly: the writer reads what was not sent (it sees the pipe close)
        pass
    finally:
        out.put(None)
        sender.join()
        conn.close()


class Workers:
    """``jobs`` worker processes, started at once (before the database is opened)."""

    @classmethod
    @contextmanager
    def start(cls, keys: Keyring, dataset: str, jobs: int, preload: bool = False) -> Iterator[Workers | None]:
        """The workers (None for one job), stopped on leaving: waited for unless reading was interrupted.

        ``preload``: every file will be parsed (a new database), so forked workers get the
        tokenizer loaded once here rather than once each."""
        if jobs <= 1:
            yield None
            return
        workers = cls(keys, dataset, jobs, preload)
        ok = False
        try:
            yield workers
            ok = True
        finally:
            workers.close(ok or not workers.reading)

    def __init__(self, keys: Keyring, dataset: str, jobs: int, preload: bool = False):
        import multiprocessing
        import tempfile
        from concurrent.futures import ProcessPoolExecutor

        method = start_method()
        if method == "fork":
            # forked workers inherit what is loaded here: the readers (imported lazily by an ingest
            # that may find nothing new) and, for a new database, the tokenizer (about 1 s of CPU
            # per process to load; loading it starts no thread, so forking after it is safe)
            from replay.ingest.readers import claude_code, codex, copilot, gemini, gemini_chat  # noqa: F401

            if preload:
                tokens.preload()
        self.jobs = jobs
        self.reading = False  # files were submitted (an interrupted run then does not wait for them)
        self.known_file = None  # forked workers: an unnamed file (nothing is left in /tmp if this process is killed)
        self.known_path = None  # ... read through /proc/self/fd; spawned ones: a named file, removed on close
        try:
            if method == "fork" and os.path.isdir("/proc/self/fd"):
                self.known_file = tempfile.TemporaryFile(prefix="ctxreplay-known-", suffix=".txt")
                self.known_path = f"/proc/self/fd/{self.known_file.fileno()}"
            else:
                fd, path = tempfile.mkstemp(prefix="ctxreplay-known-", suffix=".txt")
                os.close(fd)
                self.known_path = path
        except OSError:
            pass  # workers then parse byte copies of stored files; the writer skips them
        try:
            self.ex = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context(method),
                                          initializer=_worker_init,
                                          initargs=(keys, dataset, self.known_path, os.getpid()))
        except BaseException:
            self._drop_known()
            raise
        try:
            for _ in range(jobs):
                self.ex.submit(_ready)
        except BaseException:
            self.close(ok=False)
            raise

    def set_known(self, known: set[str]) -> None:
        """Hand the workers the content hashes stored when the ingest began (before any file is submitted)."""
        if self.known_path is None:
            return
        try:
            with open(self.known_path, "w") as fh:
                fh.write("\n".join(known))
        except OSError:
            pass  # _known() reads what it can; a parse too many is discarded by the writer

    def close(self, ok: bool) -> None:
        try:
            if not ok:
                # interrupted: a worker would otherwise finish the file it is reading (minutes for a big one)
                # before the pool lets this process exit; what it read is lost either way
                for proc in list((getattr(self.ex, "_processes", None) or {}).values()):
                    with contextlib.suppress(Exception):
                        proc.terminate()
            self.ex.shutdown(wait=ok, cancel_futures=True)
        finally:
            self._drop_known()

    def _drop_known(self) -> None:
        if self.known_file is not None:
            with contextlib.suppress(OSError):
                self.known_file.close()
        elif self.known_path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.known_path)


_UNCHANGED = object()  # a window entry whose file is unchanged by its stat: counted, not read
_EARLY = object()  # a window entry the early reader reads
WINDOW_FILES = 32  # files submitted ahead of the writer, per worker: they keep busy while it writes a batch
WINDOW_BYTES = 64 << 20  # ... and at most this many log bytes per worker (a trace is a few % of its log)


def full(files: int, size: int, jobs: int) -> bool:
    """Whether enough is submitted ahead: ``WINDOW_FILES`` files or ``WINDOW_BYTES`` per worker, and 2 files."""
    return files >= 2 * jobs and (files >= WINDOW_FILES * jobs or size >= WINDOW_BYTES * jobs)


def read_in_parallel(run: Writer, units: list[Unit], workers: Workers,
                     on_progress: Callable[[int, str], None] | None, early: EarlyReader | None = None) -> None:
    """`ingest`'s loop with reading in the worker processes, results taken in unit order (a bounded
    window ahead); the first units from the ``early`` reader, when there is one."""
    from collections import deque
    from concurrent.futures.process import BrokenProcessPool

    ex, jobs = workers.ex, workers.jobs
    workers.reading = True
    workers.set_known(run.known)
    window: deque = deque()
    todo = iter(enumerate(units))
    broken = False
    drained = False  # every file submitted
    in_window = [0]  # log bytes in the window
    early_flush = False

    def submit() -> None:
        nonlocal broken, drained
        for k, unit in todo:
            file_key = run.file_key(unit)
            nbytes = unit.size
            if early is not None and k < early.n:  # the early reader's: taken from it in turn
                in_window[0] += nbytes
                window.append((unit, file_key, _EARLY, nbytes, None))
                continue
            sig = statsig.signature(unit, run.keys)  # before hashing, as `_Run.read` does
            if run.same_stat(file_key, sig):  # unchanged: no worker needs to see it
                window.append((unit, file_key, _UNCHANGED, nbytes, sig))
                continue
            latest, latest_hash = run.status.get(file_key, (0, None))
            try:
                fut = None if broken else ex.submit(_worker_read, unit, file_key, latest, latest_hash)
            except BrokenProcessPool:  # a worker died: this file and the rest are read here
                broken, fut = True, None
            in_window[0] += nbytes
            window.append((unit, file_key, fut, nbytes, sig))
            if not broken and full(len(window), in_window[0], jobs):
                return
        drained = True

    submit()
    while window:
        unit, file_key, fut, nbytes, sig = window.popleft()
        if fut is _UNCHANGED:
            item = None
        elif fut is _EARLY:
            in_window[0] -= nbytes
            item = early.take(run, unit)
        elif broken:
            in_window[0] -= nbytes
            item = run.read(unit)
        else:
            in_window[0] -= nbytes
            if drained and not early_flush and not fut.done() and run.pending:
                # every file is submitted and the workers are busy: write what is pending now, not after the
                # last file (once: each batch costs a fixed time)
                early_flush = True
                run.flush()
            try:
                content_hash, size, parsed = fut.result()
            except BrokenProcessPool:  # a worker died (killed, out of memory?): this file and the rest are read here
                broken = True
                item = run.read(unit)
            except Exception:  # e.g. a result that cannot be sent back: read here, as --jobs 1 would
                item = run.read(unit)
            else:
                item = None
                if content_hash is None:
                    run.finish(unit, file_key, 0, "", 0, parsed)
                else:
                    latest = run.check(file_key, content_hash, size, sig)
                    if latest is not None:
                        if parsed is None:  # not expected (what is stored only grows): read it here
                            try:
                                sizes = hash_unit(unit, run.keys)[2]
                                parsed = parse_unit(unit, run.keys, run.dataset, file_key, sizes)
                            except OSError as e:
                                parsed = Parsed(failure=(str(e.filename or unit.main),
                                                          f"cannot read: {e.strerror or e}"))
                        item = run.finish(unit, file_key, latest, content_hash, size, complete(unit, parsed), sig)
        if not broken or not window:
            submit()  # once broken, the files not yet submitted are queued unread (read here)
        if item is not None:
            run.add(item)
        if on_progress:
            on_progress(nbytes, unit.main.name)
