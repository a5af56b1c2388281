"""Pruning the deck cache's fed entries (``parsed:``: decks parsed in memory and fed into a
database's cache by deckcache.from_parsed, for tests and benchmarks).

Each different parse fed into one database adds its decks' entries, and no file's
disappearance ever removes them (assembly._prune looks at files), so a benchmark or a test
feeding many parses into one database would grow its cache without end. After each feed the
cache keeps the entries that feed uses, those of every fed collection alive in this process
(its cards are read from them as they are asked for), and the KEEP others used last
(``checked_ns``: written at the feed, refreshed when a feed uses an entry again, at most
every TOUCH_NS); the rest are dropped. A file's entry is never looked at, nor progress. A
collection of another process whose entries were dropped is fed again when it is next bound
to the store (CachedCollection._bind).
"""

from __future__ import annotations

import json
import time
import weakref
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from prep.engine.decks.deck import Card, DeckInfo
from prep.engine.decks.digest import sha256

if TYPE_CHECKING:
    from prep.engine.decks.collection import CachedCollection
    from prep.engine.decks.deck import ParsedDecks
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
        with suppress(StoreError):  # best effort, as assembly._prune
            store.deck_cache_prune(drop)


def feed(store: Store, parsed: ParsedDecks) -> CachedCollection:
    """Each deck of ``parsed`` as one cached entry, keyed by its content (``parsed:`` and a
    hash: not a path, so never taken for a deck file, and two different feeds into one
    database never replace each other's rows), then assembled as ``load`` assembles files;
    fed again when another prep dropped its entries meanwhile (a reset, a prune)."""
    from prep.engine.decks import assembly

    for tries in range(assembly.TRIES, 0, -1):
        with suppress(assembly.CacheChanged):
            return _feed(store, parsed, retry=tries > 1 and not store.deck_cache_is_private())
    raise AssertionError("unreachable: the last try raises no CacheChanged")


def _feed(store: Store, parsed: ParsedDecks, *, retry: bool) -> CachedCollection:
    from prep.engine.decks import assembly
    from prep.engine.decks import deckcache as dc
    from prep.engine.decks.cachedinfo import info_json as info_json_of
    from prep.engine.decks.collection import card_fields
    from prep.engine.decks.fastdeck import cache_row  # (imports yaml: only a feed needs it)

    fmt_key = dc.format_key()
    if store.deck_cache_format() != fmt_key:
        store.deck_cache_adopt(fmt_key)
    groups: dict[str, list[Card]] = {name: [] for name in parsed.decks}
    for card in parsed.cards:
        groups.setdefault(card.deck, []).append(card)
    digest = dc.state_digest(fmt_key)
    order: list[tuple[str, str]] = []
    cached = store.deck_cache_files()
    now_ns = time.time_ns()
    for deck, cards in groups.items():
        info = parsed.decks.get(deck)
        if info is None:  # cards built by hand without their deck's entry: a deck of its own
            info = DeckInfo(name=deck, title=deck, description="", file=f"{deck}.yaml")
        shown = info.file or f"{deck}.yaml"
        lines = [c.line for c in cards]
        if not all(a < b for a, b in zip([0, *lines], lines, strict=False)):
            lines = list(range(1, len(cards) + 1))  # (built by hand: places in order)
        rows = [cache_row(c, line, card_fields(c)) for line, c in zip(lines, cards, strict=True)]
        info_json = info_json_of(info)
        sha = sha256(json.dumps([shown, info_json, rows]).encode()).hexdigest()
        key = f"{PREFIX}{sha}"
        if key not in cached:
            store.deck_cache_put(
                key,
                shown=shown,
                size=0,
                mtime_ns=0,
                sha256=sha,
                checked_ns=now_ns,
                info=info_json,
                declared=[(c.id, line) for line, c in zip(lines, cards, strict=True)],
                errors=[],
                cards=rows,
            )
        elif (cached[key]["checked_ns"] or 0) < now_ns - TOUCH_NS:
            store.deck_cache_touch(key, 0, 0, now_ns)  # used again: among the newest kept
        digest.update(f"{key}\0{sha}\n".encode())
        order.append((key, shown))
    digest.update(b"null")  # no demo names: the parse checked them
    coll = assembly.assemble_cached(
        store, [], {}, order, [], digest, None, [], None, None, retry=retry
    )
    prune(store, coll, cached)
    return coll
