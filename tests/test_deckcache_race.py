"""Readers of the deck cache while another prep prunes or resets it (a race a loaded run of
tests/test_two_terminals.py hit: ``TypeError`` at the lookup of a file's row that another
process's feed had just reset away).

Each reader here looked a file's row up by its path in one statement and read its cards (or
its other columns) in another. Another connection to the same database drops the file between
the two (sqlite3's trace callback runs as the reader's next statement starts, before it reads):
every reader gives either one consistent snapshot or "not cached any more" (no card), as it
already did for a file pruned before the call, and a load whose files were dropped after its
fill loads them again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from prep.engine.decks import deckcache
from prep.engine.decks.checks import parse_decks
from prep.engine.store import Store

DEMO_DECK = """\
deck: {name}
title: {name}
cards:
  - id: {name}-a
    kind: recall
    prompt: first?
    answer: one.
    demo: no-wo
    aliases: [{name}-old]
  - id: {name}-b
    kind: recall
    prompt: second?
    answer: two.
"""


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "prep.db"
    Store.open(path).close()
    return path


@pytest.fixture
def decks(tmp_path: Path) -> Path:
    folder = tmp_path / "decks"
    folder.mkdir()
    for name in ("one", "two"):
        (folder / f"{name}.yaml").write_text(DEMO_DECK.format(name=name), encoding="utf-8")
    return folder


@contextmanager
def dropped_after(
    store: Store, marker: str, drop: Callable[[], None], *, at_marker: bool = False
) -> Iterator[list[str]]:
    """``drop`` (another connection's write) runs as the statement after the first one
    holding ``marker`` starts (``at_marker``: as that one starts), once; yields the trace."""
    seen: list[str] = []
    fired = [False]

    def trace(sql: str) -> None:
        seen.append(sql)
        if fired[0]:
            return
        hits = [i for i, s in enumerate(seen) if marker in s]
        if hits and (at_marker or hits[0] < len(seen) - 1):
            fired[0] = True
            drop()

    store.conn.set_trace_callback(trace)
    try:
        yield seen
    finally:
        store.conn.set_trace_callback(None)
    assert fired[0], f"{marker!r} never ran: {seen}"


def _prune(db: Path, key: str) -> Callable[[], None]:
    def drop() -> None:
        with Store.open(db) as other:
            other.deck_cache_prune([key])

    return drop


def _reset(db: Path) -> Callable[[], None]:
    def drop() -> None:
        with Store.open(db) as other:
            other.deck_cache_reset(deckcache.format_key())

    return drop


def test_the_ids_of_a_file_pruned_after_its_hash_was_read(db: Path, decks: Path) -> None:
    """deck_ids: the file's hash (unchanged), then its rows: one snapshot (the rows of the
    file as loaded), where the lookup of a pruned row raised TypeError."""
    with Store.open(db) as store:
        coll = deckcache.load(store, [decks], include_bundled=False)
        key = coll._files[0][0]
        with dropped_after(store, "SELECT sha256 FROM deck_files WHERE fid", _prune(db, key)):
            ids = coll.deck_ids(key)
        assert ids == ["one-a", "one-b"]  # (read as of the hash's snapshot)
        assert coll.deck_ids(key) == []  # pruned: not this collection's rows any more


def test_a_card_whose_file_is_pruned_between_its_lookups(db: Path, decks: Path) -> None:
    """get: the card's place found in the id index, then its row: gone meanwhile, the card
    is not there (None), as for a file pruned before; the other file's cards still come."""
    with Store.open(db) as store:
        coll = deckcache.load(store, [decks], include_bundled=False)
        key = coll._files[0][0]
        with dropped_after(
            store, "JOIN deck_files f ON f.fid = dc.key >> 32 WHERE", _prune(db, key)
        ):
            assert coll.get("one-a") is None
        assert coll.get("two-b") is not None and coll.get("two-b").prompt == "second?"


@pytest.mark.parametrize("walk", ["cards", "in_deck", "ids_for_demo", "refs"])
def test_walking_every_card_while_a_file_is_pruned(db: Path, decks: Path, walk: str) -> None:
    """The calls that read a file's text and its outline (or its hash and its rows) in two
    statements read them from one snapshot: every card as it was, never a KeyError."""
    calls = {
        "cards": lambda c: [x.id for x in c.cards],
        "in_deck": lambda c: [x.id for x in c.in_deck("one")],
        "ids_for_demo": lambda c: c.ids_for_demo("no-wo"),
        "refs": lambda c: [r.id for r in c.refs()],
    }
    want = {
        "cards": ["one-a", "one-b", "two-a", "two-b"],
        "in_deck": ["one-a", "one-b"],
        "ids_for_demo": ["one-a", "two-a"],
        "refs": ["one-a", "one-b", "two-a", "two-b"],
    }
    with Store.open(db) as store:
        coll = deckcache.load(store, [decks], include_bundled=False)
        key = coll._files[0][0]
        if walk in ("cards", "in_deck"):
            assert len(coll._where) == 4  # (the map of every id, read before)
        marker = "FROM deck_cards" if walk in ("cards", "in_deck") else "SELECT sha256"
        with dropped_after(store, marker, _prune(db, key)):
            got = calls[walk](coll)
        assert got == want[walk]


def test_a_feed_reset_by_another_prep_between_its_reads(db: Path, decks: Path) -> None:
    """The race of test_two_terminals: another process's feed resets the cache as this one
    assembles its own (after reading the files' table): the assembly's reads are one snapshot,
    and the collection, finding its entries gone, feeds them again when next asked."""
    parsed = parse_decks([decks], include_bundled=False)
    with Store.open(db) as store:
        store.deck_cache_reset(deckcache.format_key())
        with dropped_after(store, "SELECT path, info, errors FROM deck_files", _reset(db)):
            coll = deckcache.from_parsed(parsed, store)
        assert len(coll) == 4 and not coll.errors
        assert store.deck_cache_files() == {}  # (reset by the other prep)
        coll.reconcile(store)  # bound again: fed anew
        assert [c.id for c in coll.cards] == ["one-a", "one-b", "two-a", "two-b"]


@pytest.mark.parametrize("how", ["prune", "reset"])
def test_a_load_whose_files_are_dropped_after_its_fill_loads_again(
    db: Path, decks: Path, how: str
) -> None:
    """Dropped after the fill, before the checks read them back (the snapshot's first read
    sees them gone): the load fills again, and serves every card, where the read of the
    files' table raised KeyError."""
    with Store.open(db) as store:
        first = deckcache.load(store, [decks], include_bundled=False)
        key = first._files[0][0]
        (Path(key)).write_text(DEMO_DECK.format(name="one") + "    # edited\n", "utf-8")
        drop = _prune(db, key) if how == "prune" else _reset(db)
        marker = "SELECT path, info, errors FROM deck_files"
        with dropped_after(store, marker, drop, at_marker=True) as trace:
            coll = deckcache.load(store, [decks], include_bundled=False)
        assert sum(marker in s for s in trace) == 2  # (loaded twice)
        assert [c.id for c in coll.cards] == ["one-a", "one-b", "two-a", "two-b"]
        assert coll.get("one-a") is not None and not coll.errors
        again = deckcache.load(store, [decks], include_bundled=False)
        assert [c.id for c in again.cards] == ["one-a", "one-b", "two-a", "two-b"]


def test_every_reader_of_a_file_not_cached_any_more(db: Path, decks: Path) -> None:
    """Each store reader asked about a file pruned by another prep: no card (one statement,
    the file's row looked up in it), as the callers handle a pruned file."""
    with Store.open(db) as store:
        coll = deckcache.load(store, [decks], include_bundled=False)
        key = coll._files[0][0]
        _prune(db, key)()
        assert list(store.deck_cache_outline([key])) == []
        assert store.deck_cache_card(key, 4, "one-a") is None
        assert store.deck_cache_ids(key) == []
        assert store.deck_cache_counts([key]) == {key: 0}
        assert store.deck_cache_declared([key]) == {key: []}
        assert list(store.deck_cache_card_data([key])) == []
        assert store.deck_cache_alias_claims(key, 0) == []
        assert store.deck_cache_unseen_from(key, "recall", None, 10) == []
        assert store.deck_cache_citing(key) == []
        assert store.deck_cache_parsed([key]) == {}
        assembly = {"excluded_keys": [[key, 4]]}
        store.deck_cache_save_assembly("k", [key], assembly)  # (nothing of it to mark)
