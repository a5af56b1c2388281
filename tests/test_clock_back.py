"""A clock that went back: reviews made while the clock was ahead are dated after now. They count
on their own day (not today), do not use up today's new-card or review limit, and the learner is
told once, in one line (stats, quiz)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.engine.store import Store
from prep.engine.study import stats as stats_mod
from prep.engine.study.clockback import clock_behind
from prep.engine.study.scheduler import Rating, Scheduler
from prep.engine.study.session import ReviewSession
from prep.tui.cli import main
from prep.tui.testing import NOW, fixed_collection

pytestmark = pytest.mark.usefixtures("utc_local_time")

AHEAD = NOW + timedelta(days=3)  # where the clock was when these were made


def study_at(store: Store, at, n: int, rating: Rating = Rating.Good) -> list[str]:
    coll = fixed_collection()
    session = ReviewSession(
        store, coll, clock=lambda: at, scheduler=Scheduler(store.settings(), enable_fuzzing=False)
    )
    rated = []
    for _ in range(n):
        assert session.current is not None
        rated.append(session.current.id)
        session.rate(rating)
    return rated


def test_future_reviews_are_not_today_and_do_not_use_up_the_new_card_limit() -> None:
    store = Store.memory()
    store.update_settings(new_per_day=2)
    study_at(store, AHEAD, 2)  # both of today's new cards, introduced "in three days"
    coll = fixed_collection()
    today = stats_mod.compute(store, coll, NOW)
    assert today.reviews.today == 0  # was 2: counted as today
    assert today.reviews.total == 2  # kept in the log
    assert stats_mod.today(store, NOW)["reviews"] == 0
    session = ReviewSession(store, coll, clock=lambda: NOW)
    assert session.counts()[0] == 2  # today's two new cards (was 0: the limit used up)
    # on their own day they are that day's: the limit is used up then
    assert stats_mod.compute(store, coll, AHEAD).reviews.today == 2
    assert ReviewSession(store, coll, clock=lambda: AHEAD).counts()[0] == 0


def test_the_review_limit_counts_only_todays_reviews() -> None:
    store = Store.memory()
    ids = study_at(store, NOW - timedelta(days=90), 3, Rating.Easy)  # three cards in review
    coll = fixed_collection()
    session = ReviewSession(store, coll, clock=lambda: AHEAD, queue=ids[:2])
    session.rate(Rating.Good)  # two of them reviewed "in three days"
    session.rate(Rating.Good)
    store.update_settings(review_limit=2, new_per_day=0)
    today = ReviewSession(store, coll, clock=lambda: NOW)
    assert today.counts()[2] == 1  # the third is due and served (was 0: the limit used up)


def test_clock_behind_is_one_line_and_only_beyond_drift() -> None:
    store = Store.memory()
    assert clock_behind(store, NOW) is None
    study_at(store, NOW + timedelta(minutes=2), 1)  # a device a little ahead: drift, no word
    assert clock_behind(store, NOW) is None
    study_at(store, AHEAD, 2)
    behind = clock_behind(store, NOW)
    assert behind is not None and behind.reviews == 2
    line = behind.line()
    assert "\n" not in line and "2 reviews are dated after now" in line
    assert "2025-03-13" in line and "set back" in line


def test_stats_and_quiz_say_it_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from prep.engine import timeutil

    db = tmp_path / "prep.db"
    with Store.open(db) as store:
        study_at(store, timeutil.utcnow() + timedelta(days=3), 2)
    runner = CliRunner()
    for args in (["stats"], ["stats", "--json"]):
        result = runner.invoke(main, ["--db", str(db), *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        assert result.stderr.count("The clock is behind the review log") == 1
        assert "The clock is behind" not in result.stdout
    quiz = runner.invoke(main, ["--db", str(db), "quiz", "--plain"], input="q\n")
    assert quiz.stderr.count("The clock is behind the review log") == 1, quiz.output


def test_the_app_says_it_once() -> None:
    import asyncio

    from prep.tui.testing import make_app
    from tests.pilot import record_notes

    store = Store.memory()
    study_at(store, AHEAD, 2)
    app = make_app(store=store)
    posted = record_notes(app)

    async def run() -> list[str]:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            await pilot.press("enter", "space", "3")  # a card shown and rated: still once
            await pilot.pause()
            return list(posted)

    said = asyncio.run(run())
    assert sum("The clock is behind the review log" in m for m in said) == 1


def test_last_30_days_retention_does_not_count_reviews_dated_after_today() -> None:
    store = Store.memory()
    ids = study_at(store, NOW - timedelta(days=90), 3, Rating.Easy)  # three cards in review
    coll = fixed_collection()
    ReviewSession(store, coll, clock=lambda: NOW - timedelta(days=2), queue=ids[:1]).rate(
        Rating.Good
    )  # one review passed in the window
    ahead = ReviewSession(store, coll, clock=lambda: AHEAD, queue=ids[1:])
    ahead.rate(Rating.Again)  # two lapses made "in three days", before the clock went back
    ahead.rate(Rating.Again)
    last_30 = stats_mod.compute(store, coll, NOW).true_retention.last_30_days
    assert (last_30.reviews, last_30.passed) == (1, 1)  # was (3, 1): the future lapses counted
    # on their own day they are in the window
    later = stats_mod.compute(store, coll, AHEAD).true_retention.last_30_days
    assert (later.reviews, later.passed) == (3, 1)
    # the whole log keeps them all
    assert stats_mod.compute(store, coll, NOW).true_retention.all.reviews == 3
