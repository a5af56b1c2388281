"""The store: progress in SQLite, one `Store` whose implementation is split per table.

core.py        open/close, transactions, errors, meta, settings, schema migration (StoreCore)
cards.py       the cards table: FSRS state, due ids, counts
reviews.py     the review log: rate, undo, counts
marks.py       suspend, bury, flag
demoruns.py    demo run summaries
deckcache.py   the deck cache's tables (engine/decks/deckcache.py decides)
deckfill.py    the deck cache's fill: its page cache
transfer.py    rows out and in for export and import
aliases.py     merged cards: an alias's progress moves onto the card that kept it
schema.py      the tables and their migrations; reviewlog.py: the review log's codec
"""

from __future__ import annotations

from prep.engine.store.aliases import AliasesStore
from prep.engine.store.cards import CardsStore, state_from_json, state_to_json, state_to_row
from prep.engine.store.core import (
    BUSY_TIMEOUT_MS,
    StoreCore,
    StoreError,
    _guarded,
)
from prep.engine.store.dbfile import default_db_path, resolve_db_path
from prep.engine.store.deckcache import DeckCacheStore
from prep.engine.store.deckfill import DeckFillStore
from prep.engine.store.demoruns import DemoRunsStore
from prep.engine.store.marks import Mark, MarksStore
from prep.engine.store.reviews import Review, ReviewsStore
from prep.engine.store.schema import SCHEMA_VERSION
from prep.engine.store.transfer import TransferStore


class Store(
    TransferStore,  # on ReviewsStore (on CardsStore) and MarksStore: the tables it reads
    ReviewsStore,
    CardsStore,
    MarksStore,
    DemoRunsStore,
    DeckFillStore,  # (on DeckCacheStore)
    DeckCacheStore,
    AliasesStore,
    StoreCore,
):
    """The progress database. Open with ``Store.open(path)`` or ``Store.memory()``."""


# Every public method of Store turns sqlite3's errors into StoreError (transaction() does it
# itself: it is a context manager).
_seen: set[str] = set()
for _klass in Store.__mro__[:-1]:  # each public method once, as the MRO resolves it
    for _name, _value in list(vars(_klass).items()):
        if _name in _seen:
            continue
        _seen.add(_name)
        if not _name.startswith("_") and _name != "transaction" and callable(_value):
            setattr(Store, _name, _guarded(_value))

__all__ = [
    "BUSY_TIMEOUT_MS",
    "SCHEMA_VERSION",
    "Mark",
    "Review",
    "Store",
    "StoreError",
    "default_db_path",
    "resolve_db_path",
    "state_from_json",
    "state_to_json",
    "state_to_row",
]
