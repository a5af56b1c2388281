"""Parsing many deck files on every core: the first open of a large collection (100k cards in
a few dozen files) spends most of its time in the YAML parser, one file at a time.

`ParsePool` hands each file's text to `fastdeck.parse_rows` in worker processes (forked, or
spawned when the caller runs other threads) and gives the results back in the caller's order. The
parse is the same function on the same text, so every refusal of the hardened loader holds;
a worker that fails for any reason (a crash, a broken pool) makes that file parse here, as it
would have without the pool. A small fill (most opens) never starts a process.
"""

from __future__ import annotations

import gc
import os
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (imported when a pool starts: not on the way of an open that parses little)
    from concurrent.futures import Future, ProcessPoolExecutor

# Below this many bytes to parse, worker processes cost more than they save (starting one
# and importing the parser is ~0.3 s; the parser reads about 2 MB/s here).
PARALLEL_BYTES = 4_000_000
# A file this small parses here in ~25 ms: not worth letting the database's write lock go
# before it (deckcache's fill writes in batches, fillbatch.py).
QUICK_PARSE_CHARS = 256_000


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _context() -> Any:
    """fork when this process runs one thread (the command line: no interpreter to start, no
    module to import again); spawn when other threads run (the app fills in a thread, and a
    fork would copy locks they may hold)."""
    import multiprocessing

    if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _parse_quietly(text: str, shown: str, stem: str) -> Any:
    # the rows the cache stores, built here (card text to JSON, content hashes): the filling
    # process only writes them (deckcache imports this module, so it is imported here)
    from prep.engine.decks.fastdeck import parse_rows

    gc.disable()  # a worker builds many small objects and frees them at exit
    return parse_rows(text, shown, stem)


class ParsePool:
    """`submit(key, text, shown, stem)` for each file to parse, then `result(key, parse)`:
    the (info, rows, errors) of that file, from a worker or, failing that, from `parse`."""

    def __init__(
        self, jobs: list[tuple[str, str, str, str]], total_bytes: int, files: int | None = None
    ) -> None:
        """Workers for ``total_bytes`` to parse in ``files`` files (default: ``jobs``, each
        submitted now; more are given by ``submit`` as they are read)."""
        self._futures: dict[str, Future[Any]] = {}
        self._pool: ProcessPoolExecutor | None = None
        n = min(cores(), len(jobs) if files is None else files)
        if n < 2 or total_bytes < PARALLEL_BYTES:
            return
        from concurrent.futures import ProcessPoolExecutor

        try:
            self._pool = ProcessPoolExecutor(n, mp_context=_context())
        except Exception:  # no processes here (a sandbox): parse in this process
            self.close()
        for key, text, shown, stem in jobs:
            self.submit(key, text, shown, stem)

    def submit(self, key: str, text: str, shown: str, stem: str) -> None:
        """Have a worker parse this file (nothing without workers: ``result`` parses it)."""
        if self._pool is None:
            return
        try:
            self._futures[key] = self._pool.submit(_parse_quietly, text, shown, stem)
        except Exception:  # no processes here (a sandbox): parse in this process
            self.close()

    def ready(self, key: str, size: int) -> bool:
        """Asking for the file's result now will not wait long: a worker has parsed it, or
        it is parsed here and small (``size``: its characters)."""
        future = self._futures.get(key)
        if future is None:
            return size < QUICK_PARSE_CHARS
        return future.done()

    def result(self, key: str, parse: Any, text: str, shown: str, stem: str) -> Any:
        future = self._futures.pop(key, None)
        if future is not None:
            try:
                return future.result()
            except Exception:  # BrokenProcessPool, a pickling slip: parse it here instead
                pass
        return parse(text, shown, stem)

    def close(self) -> None:
        for future in self._futures.values():
            future.cancel()
        self._futures.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> ParsePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
