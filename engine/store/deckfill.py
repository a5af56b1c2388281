"""What the deck cache's fill asks of the database beyond its rows (engine/decks/fillbatch.py).

A large fill is written in bulk: the two orders that each file's cards land all over (the
cards' id index, the tags by id) are built once at the end, sorted, instead of row by row.
A deck file's card ids are spread over the whole id order (a generated collection deals them
round-robin), so row by row every batch rewrote most pages of both (and each file's put
scanned every tag to delete its own, until it searched them by its cards' ids): a fill of n
cards cost ~n² (1M cards: 265 s, loaded). In bulk, the first batch drops the id index and
marks the cache ``deck_cache_bulk`` (meta), the files' puts skip deck_tags, and
``deck_cache_bulk_finish`` (after the last batch, and on every later open while the mark is
there: a fill killed half-way) writes the tags (those kept in a TEMP table as the files were
put, sorted by SQLite; else read from the cached cards' JSON), builds the index and clears
the mark, in one transaction. Nothing is lost to a kill: the tags and the
index are derived from rows committed with their files.

Part of the one `Store` (engine/store/__init__.py combines the tables' classes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

from prep.engine.store.deckcache import DeckCacheStore

# Page cache while a fill writes (SQLite's default is 2 MiB). A deck file's card ids are
# spread over the whole id order, so each file's inserts touch most pages of the id index and
# of deck_tags: with the default cache they are read back and written again for every file
# (at 600k cards 14.2 s of CPU and 158 s wall for the inserts; with 256 MiB 11.5 s and 63 s).
FILL_CACHE_KIB = 262_144
# Pages of write-ahead log between two checkpoints while a fill writes (SQLite's default:
# 1,000): 64 MiB at 4 KiB pages, the log file's most beside one batch (deck_cache_filling).
FILL_CHECKPOINT_PAGES = 16_384

# The meta key marking a cache whose id index and tags are not built yet (see above).
_BULK_KEY = "deck_cache_bulk"
# The index a bulk fill drops and builds again (engine/store/schema11.py made it).
_ID_INDEX = "CREATE INDEX IF NOT EXISTS deck_cards_id ON deck_cards (id)"
# Where a first fill in bulk keeps its files' tags until its end sorts them into deck_tags:
# a TEMP table (gone with the connection, as a killed fill's tags are; the end then reads
# them from the cards' JSON). In memory as Python tuples they were ~150 MB at 1M cards, and
# sorting and inserting them at the end (one core, the other idle) took 1.6 CPU-s; SQLite's
# sorter takes 0.6, and the 0.9 of inserting moves into the fill, while the workers parse.
_KEPT_TAGS = (
    "CREATE TEMP TABLE IF NOT EXISTS deck_fill_tags "
    "(id TEXT NOT NULL, tag TEXT NOT NULL, key INTEGER NOT NULL)"
)


class DeckFillStore(DeckCacheStore):
    """The deck cache's fill: its batches' transactions, a larger page cache while it writes."""

    def deck_cache_transaction(self) -> AbstractContextManager[None]:
        """A transaction of the cache's writes (several files' puts join it); none for a
        private cache (TEMP tables: each put is its own transaction, which neither syncs
        nor takes a lock of the database's)."""
        return self._cache_tx() if self._private is None else nullcontext()

    @contextmanager
    def deck_cache_filling(self) -> Iterator[None]:
        """A page cache of FILL_CACHE_KIB for the block, and its commits not synced to disk
        one by one (``synchronous = NORMAL``), then the connection's own settings again.

        Only the cache's batches are committed in the block, and the cache is derived from
        the deck files: in WAL mode a commit not synced is still whole or absent after a
        power cut (never a torn database), and a kill of the process loses nothing (the
        operating system has the writes). What a power cut may take is the last batches,
        which the next open parses again (a file's entry and its cards are one
        transaction). The first write after the block (the bulk end, the assembly, the
        reconciliation) commits synced, which makes every frame before it durable. A 1M
        fill made ~40 synced commits, each waiting on the disk (~30 ms apiece here). The
        log is copied into the database (a checkpoint, synced too) every
        FILL_CHECKPOINT_PAGES instead of every 1,000 pages: the same bytes in fewer syncs."""
        before = self.conn.execute("PRAGMA cache_size").fetchone()[0]
        synchronous = self.conn.execute("PRAGMA synchronous").fetchone()[0]
        checkpoint = self.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
        self.conn.execute(f"PRAGMA cache_size = {-FILL_CACHE_KIB}")
        self.conn.execute("PRAGMA synchronous = NORMAL")
        self.conn.execute(f"PRAGMA wal_autocheckpoint = {FILL_CHECKPOINT_PAGES}")
        try:
            yield
        finally:
            self.conn.execute(f"PRAGMA wal_autocheckpoint = {int(checkpoint)}")
            self.conn.execute(f"PRAGMA synchronous = {int(synchronous)}")
            self.conn.execute(f"PRAGMA cache_size = {int(before)}")

    def deck_cache_bulk_begin(self) -> None:
        """Inside the fill's first batch: drop the id index and mark the cache (see above).
        Into a cache without tags (a first fill), the files' tags are kept in a TEMP table as
        they are put, for the end to write them sorted without reading the cards back."""
        fresh = (
            self.get_meta(_BULK_KEY) is None
            and self.conn.execute("SELECT 1 FROM deck_tags LIMIT 1").fetchone() is None
        )
        self.conn.execute("DROP INDEX IF EXISTS deck_cards_id")
        self.set_meta(_BULK_KEY, "1")
        if fresh:
            self.conn.execute(_KEPT_TAGS)
            self.conn.execute("DELETE FROM temp.deck_fill_tags")
        self._bulk_tags, self._bulk_cards = fresh, 0

    def deck_cache_bulk_pending(self) -> bool:
        """Whether the next load builds a bulk fill's id index and tags (deck_cache_bulk_finish)."""
        return self._private is None and self.get_meta(_BULK_KEY) is not None

    def deck_cache_bulk_finish(
        self, tags_field: int, starting: Callable[[], None] | None = None
    ) -> bool:
        """If the cache is marked (a bulk fill, finished or killed): every cached card's tags
        (``tags_field``: their place in the cached JSON) and the id index built again, in one
        transaction, and the mark cleared. False (nothing done) when it is not marked, or
        for a cache private to this connection (its fill is never in bulk). ``starting`` is
        called before the work, when there is some."""
        if self._private is not None or self.get_meta(_BULK_KEY) is None:
            return False
        if starting is not None:
            starting()  # (the fill's progress: a few seconds at 1M cards)
        kept, self._bulk_tags = self._bulk_tags, False
        with self.transaction():
            (cards,) = self.conn.execute("SELECT count(*) FROM deck_cards").fetchone()
            self.conn.execute("DELETE FROM deck_tags")
            if kept and cards == self._bulk_cards:  # (every cached card put now)
                self.conn.execute(
                    "INSERT OR IGNORE INTO deck_tags (id, tag, key) "
                    "SELECT id, tag, key FROM temp.deck_fill_tags ORDER BY 1, 2, 3"
                )
            else:  # (a fill killed half-way, or one beside cards cached before: from the JSON)
                self.conn.execute(
                    "INSERT OR IGNORE INTO deck_tags (id, tag, key) SELECT dc.id, t.value, "
                    "dc.key FROM deck_cards dc, json_each(dc.data, ?) t ORDER BY 1, 2, 3",
                    (f"$[{tags_field}]",),
                )
            self.conn.execute(_ID_INDEX)
            self.conn.execute("DELETE FROM meta WHERE key = ?", (_BULK_KEY,))
            if kept:
                self.conn.execute("DROP TABLE temp.deck_fill_tags")
        return True
