"""Decks parsed in memory and fed into one database's cache (deckcache.from_parsed: tests,
benchmarks) do not grow the cache without end: the fed entries beyond those in use and the
newest few are dropped (engine/decks/fedcache.py), and nothing in use is."""

from __future__ import annotations

import gc
from datetime import UTC, datetime
from pathlib import Path

from prep.engine.decks import fedcache
from prep.engine.decks.deck import Card, ParsedDecks
from prep.engine.decks.deckcache import from_parsed, load
from prep.engine.store import Store
from tests.test_sync import rate


def parsed(n: int) -> ParsedDecks:
    """A one-deck parse whose text differs with ``n``."""
    return ParsedDecks(
        cards=[
            Card(id=f"card-{n}", kind="recall", prompt=f"prompt {n}", answer="a", deck=f"d{n}"),
            Card(id="shared", kind="recall", prompt="same", answer="a", deck=f"d{n}"),
        ]
    )


def fed_keys(store: Store) -> set[str]:
    return {k for k in store.deck_cache_files() if k.startswith(fedcache.PREFIX)}


def test_fed_entries_are_pruned_beyond_those_in_use(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "p.db")
    rate(store, "shared", 3, datetime(2026, 3, 1, tzinfo=UTC))  # progress: never touched
    decks = tmp_path / "decks"
    decks.mkdir()
    (decks / "mine.yaml").write_text(
        "deck: mine\ncards:\n  - id: own\n    kind: recall\n    prompt: p\n    answer: a\n"
    )
    load(store, [decks], include_bundled=False)
    files = {k for k in store.deck_cache_files() if not k.startswith(fedcache.PREFIX)}
    assert files  # a deck file's entry, which no feed prunes
    kept = from_parsed(parsed(0), store)  # held by the test: in use all along
    total = fedcache.KEEP + 20
    for n in range(1, total):
        from_parsed(parsed(n), store)  # each dropped at once (no one holds it)
        gc.collect()
    keys = fed_keys(store)
    assert len(keys) <= fedcache.KEEP + 2  # today: one entry per feed, 52
    assert set(kept._fids) <= keys  # the live collection's entry is kept, and it still reads
    card = kept.get("card-0")
    assert card is not None and card.prompt == "prompt 0"
    last = from_parsed(parsed(total - 1), store)  # the newest were kept: fed again, no write
    assert last.get(f"card-{total - 1}") is not None and fed_keys(store) == keys
    assert files <= set(store.deck_cache_files())
    assert [r.card_id for r in store.reviews()] == ["shared"]
    store.close()


def test_a_collection_whose_entries_were_pruned_is_fed_again_when_bound(tmp_path: Path) -> None:
    """An entry used by a collection of another process can be dropped: binding it to the
    store writes it again (CachedCollection._bind), so it reads as before."""
    store = Store.open(tmp_path / "p.db")
    coll = from_parsed(parsed(0), store)
    for key in fed_keys(store):
        store.deck_cache_prune([key])  # as another process's prune would
    coll._bind(store)
    card = coll.get("card-0")
    assert card is not None and card.prompt == "prompt 0"
    store.close()
