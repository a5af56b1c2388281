"""The deck cache knows its own format (issue 20 item 1): a cache written by another loader,
another Card or other checks across files is dropped and rebuilt on open, the (size, mtime)
fast path included, and progress is kept."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from prep.engine.decks import assembly, collection, deck, deckcache
from prep.engine.store import Store
from prep.engine.study.scheduler import Rating
from prep.engine.study.session import ReviewSession


@pytest.fixture
def decks(small_deck_dir: Path) -> Path:
    for p in small_deck_dir.iterdir():  # outside the racy window: the fast path serves them
        t = time.time() - 10
        os.utime(p, (t, t))
    return small_deck_dir


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = deckcache._parse

    def counting(text: str, shown: str, stem: str):
        seen.append(Path(shown).name)
        return real(text, shown, stem)

    monkeypatch.setattr(deckcache, "_parse", counting)
    return seen


@dataclass(frozen=True)
class LeveledCard(deck.Card):
    """Card with one more field, added the obvious way (as `level` and `points` were)."""

    stage: str = "core"


def test_a_new_card_field_rebuilds_an_old_cache_and_keeps_progress(
    tmp_path, decks, parses, clock, monkeypatch
) -> None:
    db = tmp_path / "prep.db"
    with Store.open(db) as store:
        coll = deckcache.load(store, [decks], include_bundled=False)
        ReviewSession(store, coll, clock=clock, queue=["roles"]).rate(Rating.Good)
        reps = store.card("roles").reps
        assert deckcache.load(store, [decks], include_bundled=False).get("roles")
    assert parses == ["small.yaml"]  # the second open took the fast path

    # the code now has a Card with one more field; the database is the old one
    monkeypatch.setattr(deck, "Card", LeveledCard)
    monkeypatch.setattr(deckcache, "Card", LeveledCard)
    monkeypatch.setattr(assembly, "Card", LeveledCard)  # (reads the cache's columns)
    monkeypatch.setattr(collection, "Card", LeveledCard)  # (builds the cards from the cache)
    with Store.open(db) as store:
        coll = deckcache.load(store, [decks], include_bundled=False)
        cards = coll.cards  # every card built from the cache: no zip() shorter than the fields
        assert cards and all(isinstance(c, LeveledCard) and c.stage == "core" for c in cards)
        assert parses == ["small.yaml", "small.yaml"]  # rebuilt, though size and mtime match
        assert store.card("roles").reps == reps  # progress is not the cache
        again = deckcache.load(store, [decks], include_bundled=False)
        assert again.get("roles").stage == "core" and len(parses) == 2  # cached anew


def test_a_new_loader_version_reparses_unchanged_files(store_path, decks, parses, monkeypatch):
    with Store.open(store_path) as store:
        deckcache.load(store, [decks], include_bundled=False)
        deckcache.load(store, [decks], include_bundled=False)
        assert parses == ["small.yaml"]
        monkeypatch.setattr(deckcache, "LOADER_VERSION", deckcache.LOADER_VERSION + 1)
        deckcache.load(store, [decks], include_bundled=False)
        assert parses == ["small.yaml", "small.yaml"]
        monkeypatch.setattr(deckcache, "ASSEMBLY_VERSION", deckcache.ASSEMBLY_VERSION + 1)
        deckcache.load(store, [decks], include_bundled=False)
        assert len(parses) == 3


def test_a_cache_from_before_the_key_is_rebuilt(store_path, decks, parses) -> None:
    with Store.open(store_path) as store:
        deckcache.load(store, [decks], include_bundled=False)
        with store.transaction():  # as a database written before the key was kept
            store.conn.execute("DELETE FROM meta WHERE key = 'deck_cache_format'")
        assert store.deck_cache_format() is None
        coll = deckcache.load(store, [decks], include_bundled=False)
        assert parses == ["small.yaml", "small.yaml"]
        assert store.deck_cache_format() == deckcache.format_key()
        assert coll.get("roles") is not None


def test_the_key_follows_the_card_fields(monkeypatch) -> None:
    before = deckcache.format_key()
    monkeypatch.setattr(deckcache, "Card", LeveledCard)
    monkeypatch.setattr(collection, "Card", LeveledCard)  # (builds the cards from the cache)
    assert deckcache.format_key() != before


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "prep.db"
