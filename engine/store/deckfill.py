"""What the deck cache's fill asks of the database beyond its rows (engine/decks/fillbatch.py).

Part of the one `Store` (engine/store/__init__.py combines the tables' classes).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

from prep.engine.store.deckcache import DeckCacheStore

# Page cache while a fill writes (SQLite's default is 2 MiB). A deck file's card ids are
# spread over the whole id order, so each file's inserts touch most pages of the id index and
# of deck_tags: with the default cache they are read back and written again for every file
# (at 600k cards 14.2 s of CPU and 158 s wall for the inserts; with 256 MiB 11.5 s and 63 s).
FILL_CACHE_KIB = 262_144


class DeckFillStore(DeckCacheStore):
    """The deck cache's fill: its batches' transactions, a larger page cache while it writes."""

    def deck_cache_transaction(self) -> AbstractContextManager[None]:
        """A transaction of the cache's writes (several files' puts join it); none for a
        private cache (TEMP tables: each put is its own transaction, which neither syncs
        nor takes a lock of the database's)."""
        return self._cache_tx() if self._private is None else nullcontext()

    @contextmanager
    def deck_cache_filling(self) -> Iterator[None]:
        """A page cache of FILL_CACHE_KIB for the block (memory only: what is written and
        when it is committed do not change), then the connection's own again."""
        before = self.conn.execute("PRAGMA cache_size").fetchone()[0]
        self.conn.execute(f"PRAGMA cache_size = {-FILL_CACHE_KIB}")
        try:
            yield
        finally:
            self.conn.execute(f"PRAGMA cache_size = {int(before)}")
