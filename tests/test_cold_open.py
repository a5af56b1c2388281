"""The cold open reads what the day's cards need (issue 26, item 2): the cached collection
finds the due cards by id and counts its decks without reading every cached id, and serves
exactly the queue it served when it read them all (the old way, kept here as the oracle: the
map of every id built first) and the queue of the parsed decks."""

from __future__ import annotations

import random
from datetime import timedelta
from pathlib import Path

import pytest

from prep.engine.decks import deckcache
from prep.engine.decks.deckcache import load_collection
from prep.engine.store import Mark, Store
from prep.engine.study.scheduler import CardState, State
from prep.engine.study.session import ReviewSession, build_queue, deck_counts
from tests.conftest import FIXED_NOW
from tests.test_lookups import add_progress, write_mixed_decks


def _old_way(store: Store, decks: list[Path], bundled: bool) -> deckcache.CachedCollection:
    """A cached collection that has read every cached id, as every open did before."""
    coll = deckcache.load(store, decks, include_bundled=bundled)
    assert isinstance(coll, deckcache.CachedCollection)
    assert len(coll._where) == len(coll)  # (the map of every id, built)
    return coll


def _removed_and_odd(store: Store, rng: random.Random) -> None:
    """Progress on ids no deck holds (a card deleted from its deck): never served."""
    for i in range(5):
        store.put_card(
            CardState(
                id=f"gone-{i}",
                deck="mixed-0",
                state=State.Review,
                stability=3.0,
                difficulty=5.0,
                due=FIXED_NOW - timedelta(hours=rng.uniform(1, 50)),
                last_review=FIXED_NOW - timedelta(days=3),
                reps=1,
            )
        )


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("bundled", [False, True])
def test_the_queue_is_the_one_built_from_every_id(tmp_path: Path, seed: int, bundled: bool) -> None:
    decks = write_mixed_decks(tmp_path / "decks", seed=seed, size=60)
    db = tmp_path / "prep.db"
    with Store.open(db) as store:
        full = load_collection([decks], include_bundled=bundled)
        add_progress(store, full, seed=seed, fraction=0.6)
        _removed_and_odd(store, random.Random(seed))
        store.update_settings(review_limit=25)
    with Store.open(db) as store:  # a fresh open, as the command line's
        lazy = deckcache.load(store, [decks], include_bundled=bundled)
        old = _old_way(store, [decks], bundled)
        assert lazy.errors and lazy.errors == old.errors  # the duplicate id is reported
        for deck in (None, *full.decks):
            for new_limit in (None, 0, 3, 500):
                want = build_queue(store, old, FIXED_NOW, deck=deck, new_limit=new_limit)
                fresh = deckcache.load(store, [decks], include_bundled=bundled)
                got = build_queue(store, fresh, FIXED_NOW, deck=deck, new_limit=new_limit)
                parsed = build_queue(store, full, FIXED_NOW, deck=deck, new_limit=new_limit)
                assert got == want == parsed, (deck, new_limit)
                assert not any(c.startswith("gone-") for c in got.ids)
        assert want.due and want.new  # (not vacuous: reviews, learning steps and new cards)
        assert len(lazy) == len(old) == len(full.cards)
        assert lazy.deck_sizes() == old.deck_sizes() == full.deck_sizes()
        assert {n: i.card_ids for n, i in lazy.decks.items()} == {
            n: i.card_ids for n, i in old.decks.items()
        }
        assert [r for r in deck_counts(store, lazy, FIXED_NOW)] == deck_counts(
            store, old, FIXED_NOW
        )
        first = ReviewSession(store, lazy, clock=lambda: FIXED_NOW).current
        assert first is not None
        assert first == ReviewSession(store, old, clock=lambda: FIXED_NOW).current
        # membership and lookups agree card by card, the left-out duplicate included
        for cid in [*(c.id for c in full.cards), "m0-004", "gone-1", "nope"]:
            assert (cid in lazy) == (cid in old) == (cid in full), cid
            assert lazy.get(cid) == old.get(cid), cid


def test_the_first_card_reads_no_card_beyond_the_days(tmp_path: Path, monkeypatch) -> None:
    """From open to the first card on screen and its counts: no read of every cached id, of
    every card's outline or text; the map of every id never built."""
    decks = write_mixed_decks(tmp_path / "decks", size=400)
    db = tmp_path / "prep.db"
    with Store.open(db) as store:
        full = load_collection([decks], include_bundled=False)
        add_progress(store, full, seed=7, fraction=0.7)
        deckcache.load(store, [decks], include_bundled=False)  # the cache filled once
    with Store.open(db) as store:

        def refused(*args, **kwargs):
            raise AssertionError("read every cached card")

        for name in ("deck_cache_ids", "deck_cache_outline", "deck_cache_card_data"):
            monkeypatch.setattr(store, name, refused)
        coll = deckcache.load(store, [decks], include_bundled=False)
        session = ReviewSession(store, coll, clock=lambda: FIXED_NOW)
        card = session.current
        assert card is not None and session.counts() != (0, 0, 0)
        deck_counts(store, coll, FIXED_NOW, per_deck=False)
        assert coll._where_map is None
        assert len(coll._built) <= 2  # the card shown (and its parent, for a follow-up)
        assert len(coll) == len(full.cards) > 1000


def test_an_assembly_saved_without_sizes_is_counted(tmp_path: Path) -> None:
    """A database whose assembly was saved by the previous prep (no sizes in it) opens with
    the same sizes, counted from the cache."""
    import json

    decks = write_mixed_decks(tmp_path / "decks")
    with Store.open(tmp_path / "prep.db") as store:
        coll = deckcache.load(store, [decks], include_bundled=False)
        sizes = coll.deck_sizes()
        saved = json.loads(store.get_meta("deck_assembly") or "{}")
        assert saved.pop("sizes")
        store.set_meta("deck_assembly", json.dumps(saved))
        again = deckcache.load(store, [decks], include_bundled=False)
        assert again.deck_sizes() == sizes and len(again) == len(coll)


def test_a_suspended_or_buried_due_card_is_not_the_first(tmp_path: Path) -> None:
    decks = write_mixed_decks(tmp_path / "decks", size=30)
    with Store.open(tmp_path / "prep.db") as store:
        full = load_collection([decks], include_bundled=False)
        add_progress(store, full, seed=4, fraction=1.0)
        coll = deckcache.load(store, [decks], include_bundled=False)
        first = build_queue(store, coll, FIXED_NOW).ids[0]
        store.set_mark(first, Mark(suspended=True))
        fresh = deckcache.load(store, [decks], include_bundled=False)
        assert first not in build_queue(store, fresh, FIXED_NOW).ids


def test_the_seen_count_per_deck_is_kept_by_every_write(tmp_path: Path) -> None:
    """deck_seen (schema v11, kept by triggers; v14 counts the mature cards too) equals the
    count over every card after each
    kind of write: first ratings, undo of a first rating, a card moved to another deck, cards
    removed from and restored to the decks, an alias merged into its kept card."""
    from prep.engine.study.scheduler import Rating

    decks = write_mixed_decks(tmp_path / "decks", size=40)
    with Store.open(tmp_path / "prep.db") as store:

        def counted() -> dict[str, int]:
            return {d: n for d, (n, _) in store.deck_progress(0.0).items() if n}

        def same() -> bool:
            """The counts kept (seen, and since v14 mature: stability >= 21 days) == counted."""
            scanned = {
                deck: (n, mature)
                for deck, n, mature in store.conn.execute(
                    "SELECT deck, count(*), sum(coalesce(stability, 0) >= 21.0) FROM cards "
                    "WHERE removed = 0 GROUP BY deck"
                )
            }
            return store.seen_per_deck() == counted() and store.deck_progress(21.0) == scanned

        full = load_collection([decks], include_bundled=False)
        add_progress(store, full, seed=3, fraction=0.5)
        assert same() and counted() != {}
        coll = deckcache.load(store, [decks], include_bundled=False)
        session = ReviewSession(store, coll, clock=lambda: FIXED_NOW, new_limit=5)
        for _ in range(4):
            card = session.current
            assert card is not None
            session.rate(Rating.Good, card_id=card.id, content_hash=card.content_hash)
            assert same()
        session.undo()
        assert same()
        with store.transaction():  # a card moved to another deck (as a reconcile writes it)
            store.conn.execute("UPDATE cards SET deck = 'mixed-3' WHERE deck = 'mixed-0' LIMIT 3")
        assert same()
        with store.transaction():  # cards crossing the mature threshold, both ways
            store.conn.execute("UPDATE cards SET stability = 30 WHERE stability < 21 LIMIT 3")
            store.conn.execute("UPDATE cards SET stability = 2 WHERE stability >= 21 LIMIT 1")
            store.conn.execute("UPDATE cards SET stability = NULL WHERE stability >= 21 LIMIT 1")
        assert same() and any(m for _, m in store.deck_progress(21.0).values())
        (decks / "mixed-1.yaml").rename(tmp_path / "away.yaml")  # its cards removed
        deckcache.load(store, [decks], include_bundled=False)
        assert "mixed-1" not in store.seen_per_deck() and same()
        (tmp_path / "away.yaml").rename(decks / "mixed-1.yaml")  # and restored
        deckcache.load(store, [decks], include_bundled=False)
        assert same() and "mixed-1" in counted()
        seen = sorted(store.seen_ids())
        store.adopt_aliases({seen[0]: seen[1]})  # an alias merged into a card it names
        assert same()


def test_home_s_counts_build_no_card_at_a_large_new_card_limit(tmp_path: Path) -> None:
    """Home's counts per deck (all decks' row included, with its follow-ups counted after
    parents of other decks) come from the rows the new cards were read from: day17's first
    count built every new card it counted (a review: 100,000 built at new_per_day 100,000 on
    100k cards, 2.1 s -> 8.0 s). Built cards stay as few as the parents of the cards shown."""
    decks = write_mixed_decks(tmp_path / "decks", size=400)
    db = tmp_path / "prep.db"
    with Store.open(db) as store:
        deckcache.load(store, [decks], include_bundled=False)  # the cache filled once
    with Store.open(db) as store:
        store.update_settings(new_per_day=5000)
        coll = deckcache.load(store, [decks], include_bundled=False)
        rows = deck_counts(store, coll, FIXED_NOW, per_deck=True)
        assert rows[0].new > 1000
        assert len(coll._built) <= 2
