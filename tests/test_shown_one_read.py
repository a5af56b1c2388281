"""A card shown for the first time is read in one statement (issue 26, round 15): its text in
the deck cache, and what a card shown reads of the store (the changes mark, the settings, its
row, its review's id), which were two statements (CachedCollection.get, then
Store.shown_card), one read transaction each. And what is stored and shown is what the two
statements gave: the cards shown, their previews, the rows, the review log's bytes and an undo,
also when another prep moved or removed a card in the deck cache meanwhile."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from prep.engine.decks import deckcache
from prep.engine.decks.collection import CachedCollection
from prep.engine.store import Store
from prep.engine.study.scheduler import Rating
from prep.engine.study.session import ReviewSession
from tests.conftest import Clock
from tests.test_answer_cost import _traced

CARDS = 8


def _deck(first: int = 0, skip: int | None = None, edited: int | None = None) -> str:
    cards = "".join(
        f"  - id: c{i}\n    kind: recall\n    prompt: Question {i}{' again' * (i == edited)}?\n"
        f"    answer: Answer {i}.\n"
        for i in range(first, CARDS)
        if i != skip
    )
    return f"deck: small\ncards:\n{cards}"


@pytest.fixture
def history(tmp_path: Path) -> tuple[Path, Path]:
    """A database where every card was rated once (fuzzed review cards from then on)."""
    deck = tmp_path / "small.yaml"
    deck.write_text(_deck(), encoding="utf-8")
    db = tmp_path / "p.db"
    clock = Clock(datetime(2026, 1, 5, 12, tzinfo=UTC))
    with Store.open(db) as store:
        coll = deckcache.load(store, [deck], include_bundled=False)
        first = ReviewSession(store, coll, clock=clock, requeue=False)
        while not first.finished:
            clock.advance(seconds=7)
            first.rate(Rating.Easy, duration_ms=900)
    return deck, db


def _statements(trace: list[str]) -> list[str]:
    return [s for s in trace if not s.startswith("-- ")]


def test_a_card_shown_first_is_read_in_one_statement(history: tuple[Path, Path]) -> None:
    """Before: two (the card's row in the deck cache, then the store's), for each card."""
    deck, db = history
    with Store.open(db) as store:
        coll = deckcache.load(store, [deck], include_bundled=False)  # (no card built yet)
        session = ReviewSession(store, coll, clock=Clock(datetime(2026, 3, 1, 12, tzinfo=UTC)))
        shown = 0
        while True:
            trace = _statements(_traced(store, lambda: session.current))
            card = session.current
            if card is None:
                break
            # (the first card shown also reads the learning steps due: not the card's)
            reads = [s for s in trace if "deck_cards" in s or "FROM sched_params" in s]
            assert len(reads) == 1, trace
            assert "LEFT JOIN deck_cards" in reads[0] and "LEFT JOIN cards" in reads[0], trace
            assert card.content_hash == coll.content_hash_now(card.id)
            session.preview()
            session.rate(Rating.Good, duration_ms=900)
            shown += 1
        assert shown == CARDS


def _two_reads(store: Store, coll: CachedCollection):
    """The form before this round: the card (get), then what a card shown reads."""

    def shown(card_id: str, params):
        card = coll.get(card_id)
        if card is None:
            return None, None
        return card, store.shown_card(card_id, coll.place(card_id), params)

    return shown


def _run(deck: Path, db: Path, old: bool) -> tuple[list, list, list]:
    """A day's answers with an undo, while another prep edits the deck: a card moved to
    another line, then a card removed. What was shown, and every row written."""
    clock = Clock(datetime(2026, 3, 1, 12, tzinfo=UTC))
    seen: list = []
    deck.write_text(_deck(), encoding="utf-8")
    with Store.open(db) as store:
        coll = deckcache.load(store, [deck], include_bundled=False)
        if old:
            coll.shown = _two_reads(store, coll)  # type: ignore[method-assign]
        session = ReviewSession(store, coll, clock=clock)
        for step in range(3 * CARDS):
            card = session.current
            if card is None:
                break
            seen.append((card, session.preview(), session.counts()))
            if step == 2:  # another prep: c6 gone, not shown yet (c7 moves up a line)
                deck.write_text(_deck(skip=6), encoding="utf-8")
                with Store.open(db) as other:
                    deckcache.load(other, [deck], include_bundled=False)
            if step == 4:  # another prep: c3's text edited after it was shown
                deck.write_text(_deck(skip=6, edited=3), encoding="utf-8")
                with Store.open(db) as other:
                    deckcache.load(other, [deck], include_bundled=False)
            clock.advance(seconds=11)
            rating = (Rating.Good, Rating.Again, Rating.Hard)[step % 3]
            seen.append(session.rate(rating, duration_ms=1200, card_id=card.id))
            if step == 3:
                seen.append(session.undo())
        seen.append(session.take_notices())
        cards = store.conn.execute("SELECT * FROM cards ORDER BY id").fetchall()
        log = store.conn.execute("SELECT * FROM revlog ORDER BY id").fetchall()
    return seen, cards, log


def test_what_is_shown_and_stored_is_what_two_reads_gave(
    tmp_path: Path, history: tuple[Path, Path]
) -> None:
    deck, db = history
    copy = tmp_path / "copy.db"
    shutil.copyfile(db, copy)
    new = _run(deck, db, old=False)
    old = _run(deck, copy, old=True)
    assert len(new[2]) > CARDS  # (the day's ratings were written)
    assert new == old


def test_a_card_moved_or_gone_in_the_deck_cache_is_found_as_get_finds_it(
    history: tuple[Path, Path],
) -> None:
    """Another prep re-read the deck since this collection located its cards: a card no
    longer at its line is looked for in its file (as ``get`` does), its text's hash from
    there is not the one a rating compares (None, as shown_card gives); a card no longer in
    the deck is None, with what the store read."""
    deck, db = history
    with Store.open(db) as store:
        coll = deckcache.load(store, [deck], include_bundled=False)
        places = {f"c{i}": coll.place(f"c{i}") for i in range(CARDS)}  # (located: kept)
        deck.write_text(_deck(first=1, skip=5, edited=3), encoding="utf-8")
        with Store.open(db) as other:
            deckcache.load(other, [deck], include_bundled=False)
        params = {"any": "parameters"}
        card, read = coll.shown("c5", params)
        assert card is None and read == store.shown_card("c5", places["c5"], params)
        for cid in ("c3", "c7"):  # (moved up a line, and c3 edited)
            assert coll.place(cid) == places[cid]
            card, read = coll.shown(cid, params)
            assert read is not None and read[4] is None  # (not at that line)
            assert read == store.shown_card(cid, places[cid], params)
            fresh = deckcache.load(store, [deck], include_bundled=False).get(cid)
            assert card == fresh and card is not None
            assert card.content_hash == fresh.content_hash == coll.content_hash_now(cid)
            again = coll.shown(cid, params)  # (built now: the same card, read as shown_card)
            assert again[0] is card and again[1] == store.shown_card(cid, places[cid], params)
