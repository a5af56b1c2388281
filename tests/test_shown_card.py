"""The card on screen is the card you rate (issue 19 item 1, issue 21 item 3): a rating, a
mark and an undo act on the card that was shown, whatever came due meanwhile; a rating for
another card is refused; a rating given on text that has changed since is kept and marked.

The browser mode (`prep serve`) runs this same app (tui/app.py through textual-serve): the
Pilot test covers it."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from prep.engine.decks import deckcache
from prep.engine.store import Store
from prep.engine.study.mock import MockError, MockInterview
from prep.engine.study.scheduler import Rating, Scheduler
from prep.engine.study.session import NotCurrentCard, ReviewSession
from prep.tui.plain import LineIO, PlainQuiz
from prep.tui.screens.review import ReviewScreen
from prep.tui.testing import NOW, make_app
from tests.conftest import Clock
from tests.test_tui import async_test

pytestmark = pytest.mark.usefixtures("utc_local_time")


def reviewed(store: Store) -> list[tuple[str, int]]:
    return [(r.card_id, r.rating) for r in store.reviews()]


def new_session(store, collection, clock) -> ReviewSession:
    sched = Scheduler(store.settings(), enable_fuzzing=False)
    return ReviewSession(store, collection, scheduler=sched, clock=clock)


def test_a_learning_step_coming_due_never_takes_the_shown_cards_rating(
    fresh_store, small_collection, clock
) -> None:
    s = new_session(fresh_store, small_collection, clock)
    first = s.current
    s.rate(Rating.Again, card_id=first.id)  # a 1-minute step
    shown = s.current
    assert shown.id != first.id
    clock.advance(seconds=65)  # the first card's step comes due while the second is read
    assert s.current.id == shown.id
    s.rate(Rating.Good, card_id=shown.id)
    assert reviewed(fresh_store) == [(first.id, 1), (shown.id, 3)]
    assert s.current.id == first.id  # the step that came due is next


def test_a_rating_for_a_card_that_is_not_shown_is_refused(
    fresh_store, small_collection, clock
) -> None:
    s = new_session(fresh_store, small_collection, clock)
    first = s.current
    with pytest.raises(NotCurrentCard, match="card shown now"):
        s.rate(Rating.Good, card_id="flag" if first.id != "flag" else "roles")
    with pytest.raises(NotCurrentCard):
        s.set_mark("bury", card_id="not-this-one")
    assert reviewed(fresh_store) == []


def test_a_mark_lands_on_the_shown_card(fresh_store, small_collection, clock) -> None:
    s = new_session(fresh_store, small_collection, clock)
    first = s.current
    s.rate(Rating.Again, card_id=first.id)
    shown = s.current
    clock.advance(seconds=65)
    s.set_mark("flag", card_id=shown.id)
    assert fresh_store.mark(shown.id).flagged and not fresh_store.mark(first.id).flagged
    s.set_mark("bury", card_id=shown.id)
    assert fresh_store.mark(shown.id).buried_until is not None
    assert fresh_store.mark(first.id).buried_until is None


def test_undo_brings_back_the_card_it_undid_even_with_a_step_due(
    fresh_store, small_collection, clock
) -> None:
    s = new_session(fresh_store, small_collection, clock)
    first = s.current
    s.rate(Rating.Again, card_id=first.id)
    second = s.current
    s.rate(Rating.Good, card_id=second.id)
    clock.advance(seconds=65)  # the first card's step is due now
    back = s.undo()
    assert back.id == second.id
    assert s.current.id == second.id  # the card shown after the undo is the card undone
    s.rate(Rating.Easy, card_id=second.id)
    assert reviewed(fresh_store) == [(first.id, 1), (second.id, 4)]


class ClockedIO(LineIO):
    """Line I/O whose clock moves on before one chosen answer is typed."""

    def __init__(self, lines: list[str], clock: Clock, wait_before: int) -> None:
        super().__init__(io.StringIO("".join(f"{x}\n" for x in lines)), io.StringIO())
        self.clock, self.asked, self.wait_before = clock, 0, wait_before

    def ask(self, prompt: str) -> str:
        self.asked += 1
        if self.asked == self.wait_before:
            self.clock.advance(seconds=65)
        return super().ask(prompt)


def test_line_mode_rates_the_card_it_showed(fresh_store, small_collection, clock) -> None:
    s = new_session(fresh_store, small_collection, clock)
    first = s.current.id
    # Enter, 1 (Again: a 1-minute step); next card: Enter, wait 65 s, 3; then quit
    io_ = ClockedIO(["", "1", "", "3", "q"], clock, wait_before=4)
    PlainQuiz(s, io_).run()
    out = io_.stdout.getvalue() if hasattr(io_, "stdout") else ""
    rows = reviewed(fresh_store)
    assert [r[0] for r in rows].count(first) == 1, (rows, out)
    assert len(rows) == 2 and rows[1][0] != first and rows[1][1] == 3


@async_test
async def test_the_app_rates_and_marks_the_card_on_screen() -> None:
    clock = Clock(NOW)
    app = make_app(clock=clock)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("enter")  # home: start
        assert isinstance(app.screen, ReviewScreen)
        first = app.screen.card.id
        await pilot.press("enter", "1")  # reveal, Again: a 1-minute step
        await pilot.pause()
        second = app.screen.card
        assert second.id != first
        if second.choices:
            await pilot.press("a")
        else:
            await pilot.press("enter")
        clock.advance(seconds=65)
        await pilot.press("3")
        await pilot.pause()
        rows = reviewed(app.store)
        assert rows == [(first, 1), (second.id, 3)]
        # the step that came due is served next, and a flag lands on the card shown
        assert app.screen.card.id == first
        third_shown = app.screen.card.id
        clock.advance(seconds=600)
        await pilot.press("f")
        await pilot.pause()
        assert app.store.mark(third_shown).flagged


def test_the_mock_rates_the_question_it_asked(fresh_store, small_collection, clock) -> None:
    mock = MockInterview(
        fresh_store,
        small_collection,
        main_id="roles",
        clock=clock,
        timer=lambda: 0.0,
        scheduler=Scheduler(fresh_store.settings(), enable_fuzzing=False),
    )
    for _ in mock.steps:
        mock.reveal("")
        clock.advance(seconds=65)
        mock.grade(Rating.Good)
    assert reviewed(fresh_store) == [(s.card.id, 3) for s in mock.steps]


def test_the_mock_never_grades_another_card_than_its_question(
    fresh_store, small_collection, clock
) -> None:
    """The main question's stored state is unusable (a hand-edited database): the session
    under the mock skips it, and the grade for that question must not land on the next."""
    first = new_session(fresh_store, small_collection, clock)
    first.rate(Rating.Good, card_id=first.current.id)
    main = first.done[0]
    fresh_store.conn.execute("UPDATE cards SET lapses = -1 WHERE id = ?", (main,))
    before = reviewed(fresh_store)
    mock = MockInterview(fresh_store, small_collection, main_id=main, clock=clock)
    mock.reveal("")
    with pytest.raises(MockError, match=main):
        mock.grade(Rating.Good)
    assert reviewed(fresh_store) == before


EDITED = """\
deck: small
cards:
  - id: new-card
    kind: recall
    prompt: NEW prompt
    answer: new answer
  - id: orig-1
    kind: recall
    prompt: orig prompt 1
    answer: a1
  - id: orig-2
    kind: recall
    prompt: orig prompt 2 EDITED
    answer: a2
"""


def test_a_deck_edited_under_an_open_session_never_moves_a_rating(tmp_path: Path) -> None:
    """Another prep re-reads an edited deck while a session is open: the session shows each
    card's own text, rates the card it showed, and a rating given on the older text is kept
    and marked (the card reads as edited since that review)."""
    deck = tmp_path / "small.yaml"
    deck.write_text(
        "deck: small\ncards:\n"
        + "".join(
            f"  - id: orig-{i}\n    kind: recall\n    prompt: orig prompt {i}\n    answer: a{i}\n"
            for i in (1, 2)
        ),
        encoding="utf-8",
    )
    db = tmp_path / "p.db"
    clock = Clock(datetime(2026, 1, 5, 12, tzinfo=UTC))
    with Store.open(db) as store:
        coll = deckcache.load(store, [deck], include_bundled=False)
        s = new_session(store, coll, clock)
        shown = s.current
        assert shown.id == "orig-1" and shown.prompt == "orig prompt 1"
        deck.write_text(EDITED, encoding="utf-8")  # lines move, orig-2's text changes
        with Store.open(db) as other:  # another prep opens and re-reads the decks
            deckcache.load(other, [deck], include_bundled=False)
        s.rate(Rating.Good, card_id=shown.id, content_hash=shown.content_hash)
        nxt = s.current
        assert nxt.id == "orig-2" and nxt.prompt == "orig prompt 2 EDITED"
        # a rating named with the text shown before the edit: kept, and marked
        before = "0" * 16
        s.rate(Rating.Good, card_id="orig-2", content_hash=before)
        assert reviewed(store) == [("orig-1", 3), ("orig-2", 3)]
        state = store.card("orig-2")
        assert state.changed and state.content_hash == nxt.content_hash
        assert not store.card("orig-1").changed


def test_a_settings_change_saved_meanwhile_is_used_by_the_next_rating(
    fresh_store, small_collection, clock
) -> None:
    """`prep config desired_retention 0.95` (or `prep optimize`) while a session is open: the
    next rating uses the saved settings (issue 19 item 12)."""
    from dataclasses import replace

    s = new_session(fresh_store, small_collection, clock)
    first = s.current
    assert (
        s.preview()[Rating.Good].interval
        == s.scheduler.preview(s.state_of(first), clock())[Rating.Good].interval
    )
    steps = replace(fresh_store.settings(), learning_steps_min=(3.0, 30.0))
    fresh_store.save_settings(steps)  # another terminal
    assert s.preview()[Rating.Again].interval.total_seconds() == 180
    outcome = s.rate(Rating.Again, card_id=first.id)
    assert outcome.interval.total_seconds() == 180
    assert s.scheduler.enable_fuzzing is False  # the injected scheduler's own options stay


@async_test
async def test_the_app_uses_settings_saved_while_it_is_open() -> None:
    from dataclasses import replace

    app = make_app()
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("enter")  # start
        card = app.screen.card
        app.store.save_settings(replace(app.store.settings(), learning_steps_min=(3.0, 30.0)))
        if card.choices:
            await pilot.press("a")
        else:
            await pilot.press("enter")
        await pilot.press("1")
        await pilot.pause()
        (review,) = app.store.reviews()
        assert review.card_id == card.id
        assert app.store.card(card.id).due == NOW + timedelta(minutes=3)
        # and a session started later in the app too
        assert app.scheduler.settings.learning_steps_min == (3.0, 30.0)


def test_a_session_takes_learning_steps_that_came_due_from_elsewhere(
    fresh_store, small_collection, clock
) -> None:
    """A mock (or another terminal) rates a card Again while today's session is open: once
    its step is due, the session serves it (issue 19 item 4), and ends saying nothing is
    overdue."""
    s = new_session(fresh_store, small_collection, clock)
    shown = s.current
    other = s.queue[-1]  # the last card of today's queue
    elsewhere = ReviewSession(
        fresh_store,
        small_collection,
        scheduler=Scheduler(fresh_store.settings(), enable_fuzzing=False),
        clock=clock,
        queue=[other],
        requeue=False,
    )
    elsewhere.rate(Rating.Again, card_id=other)  # a 1-minute step, rated on another screen
    clock.advance(seconds=65)
    s.rate(Rating.Easy, card_id=shown.id)
    assert s.current.id == other  # due now: before the rest of the queue
    assert s.counts()[1] >= 1
    s.rate(Rating.Easy, card_id=other)
    assert [r.card_id for r in fresh_store.reviews()].count(other) == 2
    while not s.finished:
        s.rate(Rating.Easy, card_id=s.current.id)
    assert fresh_store.due_ids(clock()) == []


def test_home_the_review_bar_and_stats_give_the_same_three_numbers(
    fresh_store, small_collection, clock
) -> None:
    """One source for new / learning / due (issue 19 item 5): learning steps waiting within
    the learn-ahead window count as learning on home and in stats as in the review bar."""
    from prep.engine.study import stats
    from prep.engine.study.session import deck_counts

    s = new_session(fresh_store, small_collection, clock)
    s.rate(Rating.Again, card_id=s.current.id)  # 1 minute
    s.rate(Rating.Good, card_id=s.current.id)  # 10 minutes
    clock.advance(seconds=30)  # neither step is due yet: both wait in the session

    def numbers() -> list[tuple[int, int, int]]:
        home = deck_counts(fresh_store, small_collection, clock())[0]
        st = stats.compute(fresh_store, small_collection, clock()).session
        return [
            s.counts(),
            (home.new, home.learning, home.due),
            (st.new, st.learning, st.due),
        ]

    first = numbers()
    assert first[0] == first[1] == first[2] and first[0][1] == 2, first
    clock.advance(minutes=2)
    s.rate(Rating.Good, card_id=s.current.id)
    again = numbers()
    assert again[0] == again[1] == again[2], again
    # a fresh session (the app's next start) counts what home counts
    later = new_session(fresh_store, small_collection, clock)
    assert later.counts() == again[1]
