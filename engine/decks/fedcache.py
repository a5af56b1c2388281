"""Pruning the deck cache's fed entries (``parsed:``: decks parsed in memory and fed into a
database's cache by deckcache.from_parsed, for tests and benchmarks).

Each different parse fed into one database adds its decks' entries, and no file's
disappearance ever removes them (deckcache._prune looks at files), so a benchmark or a test
feeding many parses into one database would grow its cache without end. After each feed the
cache keeps the entries that feed uses, those of every fed collection alive in this process
(its cards are read from them as they are asked for), and the KEEP others used last
(``checked_ns``: written at the feed, refreshed when a feed uses an entry again, at most
every TOUCH_NS); the rest are dropped. A file's entry is never looked at, nor progress. A
collection of another process whose entries were dropped is fed again when it is next bound
to the store (CachedCollection._bind).
"""

from __future__ import annotations

import weakref
from contextlib import suppress
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prep.engine.decks.collection import CachedCollection
    from prep.engine.store import Store

PREFIX = "parsed:"
KEEP = 32  # fed entries kept beyond those in use
TOUCH_NS = 1_000_000_000  # an entry used again is marked used at most once a second

_LIVE: weakref.WeakSet[CachedCollection] = weakref.WeakSet()


def prune(store: Store, fed: CachedCollection, cached: dict[str, dict[str, Any]]) -> None:
    """After ``fed`` was fed into ``store`` (``cached``: the cache's entries before the
    feed): drop the fed entries no live collection uses beyond the KEEP used last."""
    from prep.engine.store import StoreError

    _LIVE.add(fed)
    live = {key for c in list(_LIVE) if c._store is store for key, _ in c._files}
    others = sorted(
        (entry["checked_ns"] or 0, key)
        for key, entry in cached.items()
        if key.startswith(PREFIX) and key not in live
    )
    drop = [key for _, key in others[: max(0, len(others) - KEEP)]]
    if drop:
        with suppress(StoreError):  # best effort, as deckcache._prune
            store.deck_cache_prune(drop)
