"""What an answer no longer does twice (issue 26, round 10): a rating of the card shown reads
neither the saved settings nor the card's text hash again while nothing was written since it
was shown (the statement that showed it read both, with the changes mark, in one snapshot);
a rated card's row is updated in place (no upsert's INSERT tried first); a card's text is
hashed once. And what they stand in for still holds: a deck edit or a settings change made
between showing and rating is seen by the rating. Timing is
tests/benchmarks/answer_bench.py's business; these hold the structure behind it."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import fsrs
import pytest

from prep.engine.decks import deck as deck_mod
from prep.engine.decks import deckcache
from prep.engine.decks.collection import CachedCollection
from prep.engine.store import Store
from prep.engine.study.scheduler import Rating, Scheduler
from prep.engine.study.session import ReviewSession
from tests.conftest import Clock
from tests.test_answer_cost import _traced

DECK = "deck: small\ncards:\n" + "".join(
    f"  - id: c{i}\n    kind: recall\n    prompt: Question {i}?\n    answer: Answer {i}.\n"
    for i in range(6)
)


@pytest.fixture
def opened(tmp_path: Path):
    deck = tmp_path / "small.yaml"
    deck.write_text(DECK, encoding="utf-8")
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        coll = deckcache.load(store, [deck], include_bundled=False)
        yield store, coll, deck, db


def _before_the_rating(trace: list[str]) -> list[str]:
    """What a rating reads before it writes (its transaction's reads, BEGIN left out)."""
    begin = trace.index("BEGIN IMMEDIATE")
    write = next(i for i, s in enumerate(trace) if s.startswith(("UPDATE", "INSERT")))
    return [s for s in trace[:begin] + trace[begin + 1 : write] if not s.startswith("-- ")]


def test_a_rating_reads_neither_settings_nor_text_again_when_nothing_was_written(
    opened: tuple[Store, CachedCollection, Path, Path],
) -> None:
    """Before: the settings (SELECT ... key = 'settings') and the card's row in the deck cache
    (content_hash_now) were read again before every rating's transaction; now one PRAGMA
    data_version says nothing changed since the card was shown (round 12: read holding the
    write lock, the first thing the rating's transaction does)."""
    store, coll, _deck, _db = opened
    clock = Clock(datetime(2026, 1, 5, 12, tzinfo=UTC))
    session = ReviewSession(store, coll, clock=clock)
    for _ in range(4):
        card = session.current
        assert card is not None
        session.preview()
        clock.advance(seconds=5)
        trace = _traced(
            store,
            lambda c=card: session.rate(Rating.Good, card_id=c.id, content_hash=c.content_hash),
        )
        reads = _before_the_rating(trace)
        assert reads[0] == "PRAGMA data_version", trace
        assert not [s for s in reads if "key = 'settings'" in s], trace
        assert not [s for s in trace if "FROM deck_cards" in s], trace


def test_a_deck_edited_between_showing_and_rating_is_still_seen(
    opened: tuple[Store, CachedCollection, Path, Path],
) -> None:
    """Another prep re-reads an edited deck after the card was shown: the rating sees the
    mark moved, reads the text's hash again, and keeps the rating marked as given on the
    older text (the shown card's text changed; its line did not)."""
    store, coll, deck, db = opened
    clock = Clock(datetime(2026, 1, 5, 12, tzinfo=UTC))
    session = ReviewSession(store, coll, clock=clock)
    shown = session.current
    assert shown is not None and shown.id == "c0"
    deck.write_text(DECK.replace("Question 0?", "Question 0, edited?"), encoding="utf-8")
    with Store.open(db) as other:
        deckcache.load(other, [deck], include_bundled=False)
    trace = _traced(
        store,
        lambda: session.rate(Rating.Good, card_id=shown.id, content_hash=shown.content_hash),
    )
    assert any("FROM deck_cards" in s for s in _before_the_rating(trace)), trace
    state = store.card("c0")
    assert state is not None and state.changed
    assert state.content_hash != shown.content_hash


def test_settings_saved_between_showing_and_rating_are_used_by_the_rating(
    opened: tuple[Store, CachedCollection, Path, Path],
) -> None:
    store, coll, _deck, db = opened
    clock = Clock(datetime(2026, 1, 5, 12, tzinfo=UTC))
    session = ReviewSession(store, coll, clock=clock)
    card = session.current
    assert card is not None
    session.preview()
    with Store.open(db) as other:
        other.update_settings(learning_steps_min=(3.0,))
    outcome = session.rate(Rating.Again, card_id=card.id, content_hash=card.content_hash)
    assert outcome.interval.total_seconds() == 180  # the step saved meanwhile (default: 1 min)


def test_a_rated_card_s_row_is_updated_in_place(
    opened: tuple[Store, CachedCollection, Path, Path],
) -> None:
    """A card with a row (read inside the rating's transaction) is written by an UPDATE; a
    card's first rating inserts its row. Before: an upsert each time (its INSERT tried
    first, then the conflict's update)."""
    store, coll, _deck, _db = opened
    clock = Clock(datetime(2026, 1, 5, 12, tzinfo=UTC))
    session = ReviewSession(store, coll, clock=clock, requeue=False)
    first = session.current
    assert first is not None
    trace = _traced(store, lambda: session.rate(Rating.Again, card_id=first.id))
    assert any(s.startswith("INSERT INTO cards") for s in trace)
    clock.advance(days=2)
    again = ReviewSession(store, coll, clock=clock, queue=[first.id])
    assert again.current is not None and again.current.id == first.id
    before = store.card(first.id)
    trace = _traced(store, lambda: again.rate(Rating.Good, card_id=first.id))
    assert any(s.startswith("UPDATE cards SET deck = ") for s in trace), trace
    assert not any(s.startswith("INSERT INTO cards") for s in trace), trace
    after = store.card(first.id)
    assert before is not None and after is not None and after.reps == before.reps + 1
    log = store.reviews(card_id=first.id)
    assert log[-1].prev == before and log[-1].next == after


def test_a_card_s_text_is_hashed_once(
    opened: tuple[Store, CachedCollection, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The content hash (a JSON encoding and a SHA-256 of the card's text) is computed once a
    card: the rating and the front end that names the text shown ask for it every answer.
    Since round 14 not even once: a card built from the deck cache takes the hash its row
    holds (tests/test_cached_hash.py)."""
    store, coll, _deck, _db = opened
    hashed: list[bytes] = []
    real = deck_mod.sha256

    def counted(data: bytes = b""):
        hashed.append(data)
        return real(data)

    monkeypatch.setattr(deck_mod, "sha256", counted)
    session = ReviewSession(store, coll, clock=Clock(datetime(2026, 1, 5, 12, tzinfo=UTC)))
    shown = 0
    while session.current is not None:
        card = session.current
        shown += 1
        assert card.content_hash == card.content_hash
        session.rate(Rating.Easy, card_id=card.id, content_hash=card.content_hash)
    assert shown == 6 and hashed == []


def test_a_kept_fuzz_range_draws_what_fsrs_draws() -> None:
    """The fuzz's range of days (fsrs's _get_fuzz_range: from the interval and the maximum
    interval alone) is computed once per interval a scheduler meets: every interval of fsrs's
    range, asked twice and with draws across [0, 1), lands on the day fsrs's own fuzz gives."""
    from datetime import timedelta

    import fsrs.scheduler as fsrs_scheduler

    from prep.engine.study.scheduler import Settings

    for most in (36500, 100, 3):
        ours = Scheduler(Settings(maximum_interval=most))._fsrs
        theirs = fsrs.Scheduler(maximum_interval=most)
        for draw in (0.0, 0.37, 0.999999):
            ours.rng = type("Draw", (), {"random": staticmethod(lambda d=draw: d)})()
            fsrs_scheduler.random = lambda d=draw: d  # type: ignore[assignment]
            try:
                asked = [*range(0, 400), *range(400, most + 2, 97)]
                for days in asked:
                    want = theirs._get_fuzzed_interval(interval=timedelta(days=days))
                    for _ in range(2):  # computed, then kept
                        assert ours._get_fuzzed_interval(interval=timedelta(days=days)) == want
            finally:
                fsrs_scheduler.random = random.random  # type: ignore[assignment]
        assert set(ours._ranges) == {d for d in asked if d >= 3}  # one entry an interval
