"""The answer's fast path (issue 26, round 16) against the general path, exactly.

The fast path: a card shown computes its four ratings' new fields once (``Scheduler.check``:
no outcome made), the preview on reveal and the rating make their outcomes from those fields
moved to their time; the one-pass preview (engine/study/onepass.py) reads fsrs's enum members
once and computes what the ratings share once. The general path, the reference: fsrs's own
``review_card`` for each rating at each time, nothing kept.

Compared exactly: every field's type and repr (a float's repr is its bits; -0.0 is not 0.0),
over thousands of random states (new, learning, relearning, review, odd stored values), settings,
seeds, fuzz on and off, and times (the same microsecond, seconds and hours later, across the
day line that fsrs reads, a clock set back); and through ReviewSession: the cards shown, the
previews, the outcomes, undo, the stored rows and the review log's bytes, across a DST change."""

from __future__ import annotations

import random
import re
import shutil
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from prep.engine.store import Store
from prep.engine.study.scheduler import (
    CardState,
    Outcome,
    Rating,
    Scheduler,
    Settings,
    _FirstDraw,
    rating_of,
)
from prep.engine.study.session import ReviewSession
from prep.engine.timeutil import to_utc
from tests.conftest import Clock, recall_deck
from tests.test_onepass import NOW, _card, _settings


def _fields(x: object) -> list[tuple[str, type, str]]:
    return [(k, type(v), repr(v)) for k, v in sorted(vars(x).items())]


def _exact(a: Outcome, b: Outcome) -> None:
    assert type(a) is type(b) is Outcome
    assert a.rating is b.rating
    assert (type(a.interval), a.interval, type(a.lapsed), a.lapsed) == (
        type(b.interval),
        b.interval,
        type(b.lapsed),
        b.lapsed,
    )
    assert _fields(a.state) == _fields(b.state)
    assert a.state.due.tzinfo is b.state.due.tzinfo  # type: ignore[union-attr]


class _Reference(Scheduler):
    """The general path: fsrs's review_card for every rating asked for, nothing kept."""

    def check(self, card: CardState, now: datetime, key: str | None = None) -> None:
        self.preview(card, now, key)

    def preview(
        self, card: CardState, now: datetime, key: str | None = None
    ) -> dict[Rating, Outcome]:
        now = to_utc(now)
        draw = _FirstDraw(self._seed(card, key))
        fcard = card.to_fsrs(now)
        return {r: self._review(card, r, now, draw, fcard) for r in Rating}

    def review(
        self, card: CardState, rating: Rating | int, now: datetime, key: str | None = None
    ) -> Outcome:
        now = to_utc(now)
        return self._review(card, Rating(rating), now, _FirstDraw(self._seed(card, key)))


def _or_error(fn, *args):
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        return type(exc)


# after the card is shown: the same microsecond, one more, seconds, hours, past a day, back
_LATER = (0, 1e-6, 4.5, 600, 5 * 3600, 23.9 * 3600, 30 * 3600, -7.0, -2 * 86400)


@pytest.mark.parametrize("seed", range(6))
def test_shown_previewed_and_rated_is_fsrs_s_own_review_exactly(seed: int) -> None:
    rng = random.Random(1600 + seed)
    counts = {"compared": 0, "refused": 0, "fuzzed": 0, "kept": 0, "again": 0}
    for i in range(500):
        settings = _settings(rng)
        fuzz, sseed = rng.random() < 0.7, rng.randint(0, 9)
        fast = Scheduler(settings, enable_fuzzing=fuzz, seed=sseed)
        card = _card(rng)
        shown = NOW + timedelta(microseconds=rng.randint(0, 10**6))
        key = None if i % 6 == 0 else f"dev:{i}"
        revealed = shown + timedelta(seconds=rng.choice(_LATER))
        rated = revealed + timedelta(seconds=rng.choice(_LATER))
        rating = rng.choice(list(Rating))
        want_preview = _or_error(_Reference(settings, fuzz, sseed).preview, card, revealed, key)
        want_review = _or_error(_Reference(settings, fuzz, sseed).review, card, rating, rated, key)
        checked = _or_error(fast.check, card, shown, key)
        got_preview = _or_error(fast.preview, card, revealed, key)
        got_review = _or_error(fast.review, card, rating, rated, key)
        if not isinstance(want_preview, dict):  # refused: the same way, from the first ask
            assert checked is got_preview is want_preview is want_review is got_review
            counts["refused"] += 1
            continue
        assert checked is None and isinstance(got_preview, dict), (card, settings)
        assert list(got_preview) == list(Rating)
        for r in Rating:
            _exact(got_preview[r], want_preview[r])
        _exact(got_review, want_review)
        counts["compared"] += 1
        counts["fuzzed"] += fuzz and any(o.interval.days >= 3 for o in want_preview.values())
        last = card.last_review
        counts["kept"] += last is None or (revealed - last).days == (shown - last).days
        counts["again"] += card.state == 2 and rating == Rating.Again
    assert counts["compared"] > 300 and counts["refused"] > 5, counts
    assert counts["fuzzed"] > 80 and counts["kept"] > 150 and counts["again"] > 10, counts


def test_a_rating_is_the_enum_s_own_member_or_error() -> None:
    for value in (1, 2, 3, 4, True, 3.0, *Rating):
        assert rating_of(value) is Rating(value)
    for bad in (0, 5, 2.5, "3", None, [3], float("nan")):
        with pytest.raises(Exception) as want:  # noqa: PT011 - compared with the enum's own
            Rating(bad)  # type: ignore[arg-type]
        with pytest.raises(want.type, match=re.escape(str(want.value))):
            rating_of(bad)  # type: ignore[arg-type]


def _rows(db: Path) -> tuple[list, list]:
    conn = sqlite3.connect(db)
    try:
        cards = conn.execute("SELECT * FROM cards ORDER BY id").fetchall()
        log = conn.execute("SELECT * FROM revlog ORDER BY id").fetchall()
    finally:
        conn.close()
    return cards, log


@pytest.mark.parametrize("steps", [(1.0, 10.0), (1.0,), ()])
def test_a_session_on_the_fast_path_stores_what_the_general_path_stores(
    tmp_path: Path, new_york_local_time, steps: tuple[float, ...]
) -> None:
    """Two sessions on copies of one database, one on each path: the same cards shown, the
    same previews and outcomes, the same undo, the same rows and review log bytes, over weeks
    of answers that cross the 2026-03-08 DST change, with the clock set back now and then."""
    deck = recall_deck(tmp_path, 40)
    first = tmp_path / "fast.db"
    with Store.open(first) as store:
        store.update_settings(review_limit=9999, new_per_day=9999, learning_steps_min=steps)
    shutil.copyfile(first, tmp_path / "general.db")
    start = datetime(2026, 3, 1, 13, 0, tzinfo=UTC)
    rng = random.Random(len(steps))
    answers = undone = 0
    kinds: set[tuple[int, int]] = set()  # (state before, state after) of the ratings
    with Store.open(first) as fast_store, Store.open(tmp_path / "general.db") as general_store:
        for day in range(60):
            at = start + timedelta(days=day, minutes=rng.randint(0, 600))
            clocks = (Clock(at), Clock(at))
            sessions = (
                ReviewSession(fast_store, deck, clock=clocks[0]),
                ReviewSession(
                    general_store,
                    deck,
                    clock=clocks[1],
                    scheduler=_Reference(Settings.from_dict(general_store.settings().to_dict())),
                ),
            )
            assert type(sessions[0].scheduler) is Scheduler
            for _ in range(rng.randint(10, 40)):
                cards = [s.current for s in sessions]
                if cards[0] is None:
                    assert cards[1] is None
                    break
                assert cards[1] is not None and cards[0].id == cards[1].id
                previews = [s.preview() for s in sessions]
                for r in Rating:
                    _exact(previews[0][r], previews[1][r])
                step = rng.choice((0, 2, 30, 90, 700, 4000, -5))
                for c in clocks:
                    c.advance(seconds=step)
                rating = rng.choice((1, 2, 3, 3, 3, 4))
                before = sessions[0].state_of(cards[0]).state
                outcomes = [s.rate(rating, duration_ms=1234) for s in sessions]
                kinds.add((before, outcomes[0].state.state))
                _exact(outcomes[0], outcomes[1])
                answers += 1
                if rng.random() < 0.08:
                    back = [s.undo() for s in sessions]
                    assert back[0] is not None and back[1] is not None
                    assert back[0].id == back[1].id
                    undone += 1
                assert sessions[0].counts() == sessions[1].counts()
        assert _rows(first) == _rows(tmp_path / "general.db")
    cards, log = _rows(first)
    assert answers > 400 and undone > 20 and len(log) > 350
    assert len(cards) == 40
    # new and learning cards, review cards kept and lapsed, relearning ones graduating again
    assert {(1, 2), (2, 2), (2, 3), (3, 2)} <= kinds, kinds
    assert (1, 1) in kinds or not steps


def test_a_card_shown_makes_no_outcome_until_its_answer_is_revealed(
    tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A card shown is checked (its four ratings computed and kept); the four outcomes are
    made when the answer is revealed, and the rating makes its one. Before: four made when
    shown, four moved on reveal, one moved by the rating."""
    made: list[Rating] = []
    real = Scheduler._outcome

    def counted(self, card, rating, *args):
        made.append(rating)
        return real(self, card, rating, *args)

    monkeypatch.setattr(Scheduler, "_outcome", counted)
    deck = recall_deck(tmp_path, 4)
    with Store.open(tmp_path / "prep.db") as store:
        session = ReviewSession(store, deck, clock=clock)
        for _ in range(3):
            made.clear()
            assert session.current is not None
            assert made == []
            clock.advance(seconds=3)
            session.preview()
            assert made == list(Rating)
            clock.advance(seconds=4)
            session.rate(Rating.Good, duration_ms=700)
            assert made == [*Rating, Rating.Good]
