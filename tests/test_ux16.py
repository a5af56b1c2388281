"""Round 16 (ux16): what ux15 left open across the 4 am rollover — study more's dialog, the
mock screen — and what a user pass over several days met."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from prep.engine.study.queue import review_ahead_ids
from tests.test_mock import coll
from tests.test_ux15 import _app, _setup

__all__ = ["coll"]  # (the fixture, from test_mock)


def test_study_more_left_open_across_the_rollover_counts_and_serves_the_new_day(
    new_york_local_time, tmp_path: Path
) -> None:
    """Study more opened at 03:50 lists the card that comes due at 4 am under "review ahead";
    left open past 04:00 (no key pressed), its count is the new day's list, and "2" serves
    that list: the card due today is today's session's, not review ahead's. Before: the
    dialog kept yesterday's count, and "2" served yesterday's list."""
    from prep.tui.screens.home import HomeScreen
    from prep.tui.screens.review import ReviewScreen
    from prep.tui.screens.study_more import AHEAD_DAYS, StudyMore
    from tests.pilot import text_of, wait_until

    store, coll, clock, rollover = _setup(tmp_path)
    before = review_ahead_ids(store, coll, clock.now, AHEAD_DAYS)
    after = review_ahead_ids(store, coll, rollover + timedelta(minutes=1), AHEAD_DAYS)
    # (the premise: one card of the evening's list is due today after the rollover, one not)
    assert after and len(after) < len(before), (before, after)

    def said(n: int) -> str:
        return f"Review ahead: cards due in the next {AHEAD_DAYS} days ({n})"

    async def run() -> None:
        app = _app(store, coll, clock)
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, HomeScreen))
            await pilot.press("n")
            await wait_until(pilot, lambda: isinstance(app.screen, StudyMore))
            await pilot.pause()
            assert said(len(before)) in text_of(app, "#more-text")
            clock.now = rollover + timedelta(minutes=1)
            await wait_until(pilot, lambda: said(len(after)) in text_of(app, "#more-text"), 5)
            await pilot.press("2")
            await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen))
            screen = app.screen
            assert isinstance(screen, ReviewScreen)
            assert list(screen.session.queue) == after

    with store:
        asyncio.run(run())


def test_plain_prompt_waiting_across_the_rollover_rates_its_card_then_says_the_new_day(
    new_york_local_time, tmp_path: Path
) -> None:
    """`prep quiz --plain` shows a card at 03:50 and its prompt waits past 04:00: the rating
    lands on that card; before the next card it says once that a new study day began, with
    the new day's limit lines (as at a start), and the next card's counts are a fresh
    session's. Before: the counts changed under the user with nothing said, and the limit
    lines said at the start ("2 left today") stayed the only ones."""
    import io

    from prep.engine.study.present import counts_text
    from prep.engine.study.scheduler import Scheduler
    from prep.engine.study.session import ReviewSession
    from prep.tui.plain import run_plain, today_lines
    from tests.test_ux15 import _fresh

    store, coll, clock, rollover = _setup(tmp_path)

    class Lines:
        """stdin whose first line is typed after the rollover; it notes a fresh session's
        counts at each prompt (what a counts line printed just before it should say)."""

        def __init__(self, lines: list[str]) -> None:
            self.lines = lines
            self.fresh: list[tuple[int, int, int]] = []

        def readline(self, _limit: int = -1) -> str:
            if clock.now < rollover:
                clock.now = rollover + timedelta(minutes=1)
            self.fresh.append(_fresh(store, coll, clock))
            return self.lines.pop(0) if self.lines else ""

    with store:
        session = ReviewSession(store, coll, clock=clock, scheduler=Scheduler(store.settings()))
        shown = session.current
        assert shown is not None and session.counts() == (2, 0, 0)

        def today_at(now):
            return today_lines(store, coll, now, None, None)

        out = io.StringIO()
        before = today_at(clock.now)
        stdin = Lines(["\n", "3\n", "\n", "3\n", "q\n"])  # two cards rated, q at the third
        assert run_plain(session, stdin, out, today=before, today_at=today_at) == 0
        said = out.getvalue().splitlines()
        assert [(r.card_id, r.rating) for r in store.reviews()][-2] == (shown.id, 3)
        note = "A new study day has begun: the session goes on with today's cards."
        assert said.count(note) == 1
        at = said.index(note)
        assert said[at - 1] == "" and said[at - 2].endswith("Saved: Good, next in 10 minutes.")
        now_lines = today_at(clock.now)
        assert now_lines and now_lines != before  # (the premise: the day's limit line moved)
        assert said[at + 1 : at + 1 + len(now_lines)] == now_lines
        counts_line = said[at + 1 + len(now_lines) + 1]  # (then the next card's prompt: #3)
        assert counts_line.startswith(f"[{counts_text(stdin.fresh[2])}] ")


def test_a_mock_open_across_the_rollover_keeps_its_chain_and_grades_at_the_new_time(
    new_york_local_time, fresh_store, coll, clock
) -> None:
    """Checked, and kept (ux15 noted the mock keeps its own queue): a mock interview is one
    interview's chain, not a day's queue, and shows no day's counts; left open across 04:00
    it keeps its question and chain (a new pick would swap the question under the learner),
    and a grade given after 04:00 is saved at that time, scheduled from it. (Passes before
    too: it pins the decision.)"""
    from prep.engine.study.scheduler import Rating
    from prep.engine.timeutil import study_day_start
    from tests.test_mock import FakeTimer, make_mock
    from tests.test_ux15 import local

    clock.now = local(2026, 3, 2, 3, 50)
    mock = make_mock(fresh_store, coll, clock, FakeTimer(), minutes=4, main_id="why-wo")
    chain = [step.card.id for step in mock.steps]
    mock.start()
    clock.now = study_day_start(clock.now, 1) + timedelta(minutes=1)  # 04:01
    assert [step.card.id for step in mock.steps] == chain
    assert mock.current is not None and mock.current.id == "why-wo"
    mock.reveal()
    mock.grade(Rating.Good)
    state = fresh_store.card("why-wo")
    assert state is not None and state.last_review == clock.now
    assert [(r.card_id, r.reviewed_at) for r in fresh_store.reviews()] == [("why-wo", clock.now)]
    assert mock.current is not None and mock.current.id == chain[1]


def test_study_more_is_drawn_over_home_with_its_own_keys_and_q_quits(tmp_path: Path) -> None:
    """The user pass: under the study-more dialog the footer was home's ("s Stats", "q Quit"),
    and neither key did anything there (a modal holds back the app's and home's keys), though
    help says q quits from anywhere. Now the dialog's footer lists its own keys, home stays
    drawn (dimmed) around it, and q quits, as over the demo picker."""
    from prep.tui.screens.study_more import StudyMore
    from prep.tui.testing import make_app
    from tests.pilot import wait_until
    from tests.test_narrow import _open_home, footer_keys
    from tests.test_text_is_text import flat, screen_text

    app = make_app()

    async def run() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await _open_home(pilot, app)
            await pilot.press("n")
            await wait_until(pilot, lambda: isinstance(app.screen, StudyMore))
            await pilot.pause()
            assert footer_keys(app) == ["1", "2", "escape", "q", "question_mark"]
            drawn = flat(screen_text(app))
            assert "Study more" in drawn and "to review" in drawn  # (home, around the box)
            await pilot.press("q")
            await wait_until(pilot, lambda: app.return_code is not None or not app.is_running)

    asyncio.run(run())


def test_q_over_the_yes_no_question_quits_as_everywhere() -> None:
    """The user pass: help says q quits prep from anywhere, but over the yes/no question
    (leaving a mock, discarding a typed answer) q did nothing (a modal holds back the app's
    keys). Now it quits, the question unanswered, and its keys line says so."""
    from prep.tui.screens.confirm import Confirm
    from prep.tui.screens.review import ReviewScreen
    from prep.tui.testing import make_app
    from tests.pilot import text_of, wait_until

    app = make_app(review_first=True)
    answered: list[bool] = []

    async def run() -> None:
        async with app.run_test(size=(100, 40)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen))
            question = Confirm("Discard the answer you typed?")
            app.push_screen(question, answered.append)
            await wait_until(pilot, lambda: app.screen is question)
            await pilot.pause()
            assert "q  quit" in text_of(app, "#confirm-keys")
            await pilot.press("q")
            await wait_until(pilot, lambda: not app.is_running, timeout=5)

    asyncio.run(run())
    assert answered == []
