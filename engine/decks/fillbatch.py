"""The deck cache's fill writes its files in few transactions, not one synced commit each.

A first open of 100k cards in 25 files made 25 commits, each synced to disk (the store's
``synchronous = FULL``): on this shared machine the inserts alone took 3.8 s of wall time for
1.1 s of CPU that way, 1.9 s in one transaction. ``Batch`` keeps one transaction open across
several files' writes and commits it once it has held the write lock for ``BATCH_SECONDS``,
before waiting for a worker still parsing the next file or before parsing a big one here
(ParsePool.ready: the lock is not held while nothing is written), and at the end.

While it is open the connection's page cache is larger (engine/store/deckfill.py: each
file's ids land all over the id index, which the default 2 MiB cache cannot hold).

Crash safety is the per-file rule it had, at a coarser grain: a file's entry and its cards are
always in the same transaction (``deck_cache_put`` joins the batch), so a fill killed half-way
leaves whole files cached (those of the committed batches) and nothing of the others; the
next open finds those files missing from the cache and parses them, and the checks across
files are redone (each put drops the saved assembly). Progress (cards, reviews, marks) is not
written by the fill at all: the reconciliation after it is its own transaction.
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prep.engine.store import Store

# How long one batch may hold the database's write lock: short beside the busy timeout
# another prep waits for it (BUSY_TIMEOUT_MS, 5 s), long beside one synced commit (~10-100 ms).
BATCH_SECONDS = 1.0
# A fill of at least this many characters of decks, and at least as many as the cache keeps
# of other files, is written in bulk (engine/store/deckfill.py: the id index and the tags
# built once at the end): ~10k cards.
BULK_CHARS = 4_000_000


class Batch:
    """``with Batch(store) as batch:`` then ``batch.begin()`` before each file's writes and
    ``batch.pause()`` before waiting for the next file's parse (``bulk``: see BULK_CHARS).
    Leaving the block commits the open transaction, or rolls it back on an exception (earlier
    batches stay committed)."""

    def __init__(self, store: Store, seconds: float | None = None, bulk: bool = False) -> None:
        self._store = store
        self.bulk = bulk  # the first batch starts a bulk fill (store/deckfill.py)
        self._seconds = BATCH_SECONDS if seconds is None else seconds
        self._tx: AbstractContextManager[Any] | None = None
        self._began = 0.0
        self._cache: AbstractContextManager[Any] = nullcontext()
        self.commits = 0  # (tests and the bench count them)

    def begin(self) -> None:
        """Open a transaction unless one is open (the writes that follow join it)."""
        if self._tx is None:
            tx = self._store.deck_cache_transaction()
            tx.__enter__()
            self._tx, self._began = tx, time.monotonic()
            if self.bulk and not self.commits:  # (with the first files' rows: one commit)
                self._store.deck_cache_bulk_begin()

    def pause(self, next_ready: bool) -> None:
        """Commit now if the next file must be waited for, or the lock was held long enough."""
        if self._tx is not None and (
            not next_ready or time.monotonic() - self._began >= self._seconds
        ):
            self.commit()

    def commit(self) -> None:
        tx, self._tx = self._tx, None
        if tx is not None:
            tx.__exit__(None, None, None)
            self.commits += 1

    def __enter__(self) -> Batch:
        self._cache = self._store.deck_cache_filling()  # (a larger page cache: deckfill.py)
        self._cache.__enter__()
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        tx, self._tx = self._tx, None
        try:
            if tx is None:
                return
            if exc is None:
                tx.__exit__(None, None, None)
                self.commits += 1
            else:
                tx.__exit__(kind, exc, tb)  # rolled back; raises StoreError for a database error
        finally:
            self._cache.__exit__(None, None, None)
