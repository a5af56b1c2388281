"""The Python work of one answer -> next card (issue 26, round 13): counted in function calls
(sys.setprofile), which do not depend on the machine's load, as test_answer_cost.py counts
statements. And the cheaper forms give what the old ones gave: the time text (isoformat, not
strftime), the seed text kept for the card shown, the store's transaction as a class."""

from __future__ import annotations

import random
import sqlite3
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from prep.engine.decks.collection import CachedCollection
from prep.engine.store import Store, StoreError
from prep.engine.study.scheduler import FUZZ_BY_CARD, FUZZ_BY_REVIEW, CardState, Scheduler
from prep.engine.study.session import ReviewSession
from prep.engine.timeutil import _FMT, fmt, to_utc
from tests.conftest import Clock, recall_deck

CARDS = 12


@pytest.fixture
def deck(tmp_path: Path) -> CachedCollection:
    return recall_deck(tmp_path, CARDS)


def _calls(action) -> int:
    count = 0

    def seen(frame, event, arg) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(seen)
    try:
        action()
    finally:
        sys.setprofile(None)
    return count


def test_an_answer_and_the_next_card_make_few_python_calls(
    tmp_path: Path, deck: CachedCollection, clock: Clock
) -> None:
    """Review cards (fuzzed), as the app answers: rate the card shown, show the next, preview
    its four intervals. Round 12: 352 calls an answer here (the store's three nested
    transactions as generators, contextlib's: 6 calls each where a class makes 2; the seed
    text made three times a card, its time formatted each time; the learning steps' lookup
    asked with none due); round 13: 314; round 15: 310 (the states and outcomes of a preview
    made from their fields' dict, a kept preview of the same card object not compared field by
    field)."""
    with Store.open(tmp_path / "prep.db") as store:
        first = ReviewSession(store, deck, clock=clock, requeue=False)
        while not first.finished:
            first.rate(4, duration_ms=900)
        clock.advance(days=40)
        session = ReviewSession(store, deck, clock=clock)
        session.preview()

        def answer() -> None:
            clock.advance(seconds=5)
            session.rate(3)
            if session.current is not None:
                session.preview()

        answer()  # (the first answer reads the learning steps: kept since)
        counts = [_calls(answer) for _ in range(CARDS - 3)]
    assert max(counts) <= 283, counts


def test_the_time_text_is_strftime_s() -> None:
    """fmt's isoformat gives strftime's text (as stored since v1) for any aware or naive time,
    years before 1000 included (strftime does not pad them)."""
    rng = random.Random(13)
    lo = datetime(1, 1, 1, tzinfo=UTC)
    span = int((datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC) - lo).total_seconds())
    for i in range(20_000):
        t = lo + timedelta(seconds=rng.randrange(span), microseconds=rng.randrange(10**6))
        if i % 3 == 0:
            t = t.replace(microsecond=0)
        if i % 5 == 0 and 2 < t.year < 9998:
            t = t.astimezone(timezone(timedelta(minutes=rng.randrange(-720, 720))))
        if i % 7 == 0 and 2 < t.year < 9998:
            t = t.replace(tzinfo=None)  # (naive: taken as UTC)
        utc = t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)
        assert fmt(t) == utc.strftime(_FMT), t
    assert fmt(datetime(999, 1, 2, tzinfo=UTC)) == "999-01-02T00:00:00.000000Z"
    assert fmt(None) is None


def test_a_time_in_utc_is_taken_as_it_is_as_astimezone_takes_it() -> None:
    """to_utc returns a UTC time itself (astimezone(UTC) of it is the same object: round 16
    skips the call), converts any other zone's and takes a naive one as UTC, as before."""
    rng = random.Random(16)
    for _ in range(5000):
        t = datetime(1, 1, 2, tzinfo=UTC) + timedelta(
            seconds=rng.randrange(315_000_000_000), microseconds=rng.randrange(10**6)
        )
        assert to_utc(t) is t is t.astimezone(UTC)
        if 2 < t.year < 9998:
            other = t.astimezone(timezone(timedelta(minutes=rng.randrange(-720, 720))))
            got = to_utc(other)
            assert got == other.astimezone(UTC) and got.tzinfo is UTC
            assert (got.year, got.hour, got.microsecond) == (t.year, t.hour, t.microsecond)
            naive = t.replace(tzinfo=None)
            assert to_utc(naive) == t and to_utc(naive).tzinfo is UTC


def test_the_seed_text_kept_is_the_one_made_for_the_same_card_key_and_seed() -> None:
    card = CardState(
        id="a", deck="d", content_hash="h", reps=3, last_review=datetime(2026, 1, 2, tzinfo=UTC)
    )
    made = Scheduler(fuzz_by=FUZZ_BY_REVIEW)
    assert made._seed(card, "dev:1") == "0:dev:1"
    assert made._seed(card, "dev:2") == "0:dev:2"  # another key
    made.seed = 7
    assert made._seed(card, "dev:2") == "7:dev:2"  # another seed
    made.fuzz_by = FUZZ_BY_CARD
    text = made._seed(card, "dev:2")
    assert text == "7:a:3:2026-01-02T00:00:00.000000Z"
    other = CardState(id="a", deck="d", content_hash="h", reps=4, last_review=card.last_review)
    assert made._seed(other, "dev:2") == "7:a:4:2026-01-02T00:00:00.000000Z"
    assert made._seed(card, "dev:2") == text == Scheduler(seed=7)._seed(card, None)


def test_the_transaction_commits_joins_and_rolls_back_as_before(tmp_path: Path) -> None:
    with Store.open(tmp_path / "prep.db") as store:
        conn = store.conn
        conn.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
        with store.transaction():
            conn.execute("INSERT INTO t VALUES (1)")
            with store.transaction():  # joins: the outer one commits
                conn.execute("INSERT INTO t VALUES (2)")
                assert conn.in_transaction
            assert conn.in_transaction
        assert not conn.in_transaction
        # the body's own error, as it was, after a rollback
        with pytest.raises(KeyError), store.transaction():
            conn.execute("INSERT INTO t VALUES (3)")
            with store.transaction():
                raise KeyError("inner")
        # a database error: the store's one line
        with pytest.raises(StoreError), store.transaction():
            conn.execute("INSERT INTO t VALUES (4)")
            conn.execute("INSERT INTO t VALUES (1)")  # (taken)
        assert [x for (x,) in conn.execute("SELECT x FROM t")] == [1, 2]
        assert store._tx_depth == 0 and not conn.in_transaction
        # a misuse of the module is not the database's error
        with pytest.raises(sqlite3.ProgrammingError), store.transaction():
            conn.execute("SELECT ?", ())
        assert not conn.in_transaction
