"""Round 17 (ux17): the app over days — a session's interview plan read as of now (and of the
settings saved since), the cram sheet across 4 am, the yes/no box's own keys, help on the mock's
answer box — and what a learner's week in tmux met."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from prep.engine.decks.deckcache import load_collection
from prep.engine.store import Store
from prep.engine.study.present import next_text
from prep.engine.study.scheduler import CardState, Rating, Scheduler, State
from prep.engine.study.session import ReviewSession
from tests.conftest import Clock
from tests.test_plan import INTERVIEW, MONDAY, ON_THE_DAY, week_collection
from tests.test_ux15 import _app, local


def _on_the_mock():
    """An app that opens on a mock interview of the fixed collection (its clock stopped at
    NOW), and that mock."""
    from prep.engine.study.mock import MockInterview
    from prep.tui.testing import NOW, fixed_collection, make_app

    store, coll = Store.memory(), fixed_collection()
    mock = MockInterview(store, coll, main_id="two-roles", clock=lambda: NOW)
    return make_app(store=store, collection=coll, mock_first=mock), mock


def _reviews(store: Store, ids: list[str]) -> None:
    """Review cards due on MONDAY, well learnt (a Good puts them weeks ahead: past the
    interview, so a plan brings them to the day before it)."""
    for cid in ids:
        store.put_card(
            CardState(
                id=cid,
                deck=cid.split("-")[0],
                state=int(State.Review),
                step=None,
                stability=20.0,
                difficulty=5.0,
                due=MONDAY - timedelta(hours=1),
                last_review=MONDAY - timedelta(days=20),
                reps=3,
            )
        )


def test_a_session_takes_an_interview_date_saved_since_and_its_clearing(
    utc_local_time, tmp_path: Path
) -> None:
    """A session open while `prep config interview_date` is saved in another terminal: the next
    rating is planned as a new session plans it (brought to the day before the interview, "for
    the interview"), as its scheduler already follows the saved settings; the date cleared, the
    next one is FSRS's alone again. Before: the plan the session began with, whatever was saved."""
    coll = week_collection(3)
    path = tmp_path / "prep.db"
    clock = Clock(MONDAY)
    with Store.open(path) as store, Store.open(path) as other:
        _reviews(store, ["alpha-00", "alpha-01"])
        session = ReviewSession(store, coll, clock=clock, scheduler=Scheduler(store.settings()))
        assert session.plan is None and session.current is not None
        session.preview()
        other.save_settings(replace(other.settings(), interview_date=INTERVIEW))
        clock.advance(seconds=30)
        outcome = session.rate(Rating.Good, duration_ms=1000)
        said = next_text(outcome, session.plan, coll, clock.now)
        assert "for the interview" in said, said
        assert session.plan is not None and session.plan.days_left == 7
        session.preview()
        other.save_settings(replace(other.settings(), interview_date=None))
        clock.advance(seconds=30)
        outcome = session.rate(Rating.Good, duration_ms=1000)
        assert session.plan is None
        assert next_text(outcome, session.plan, coll, clock.now).startswith("next in ")
        assert "interview" not in next_text(outcome, session.plan, coll, clock.now)


def test_a_session_left_open_reads_the_plan_of_the_day_and_the_hour_it_rates_in(
    utc_local_time,
) -> None:
    """A session with a queue of its own (review ahead, the mock: no take-in at 4 am) opened
    on Saturday evening and rated in on Sunday morning reads Sunday's plan (1 day left, reviews
    brought forward), and past the interview's noon, plain FSRS (``before`` False), as a new
    session would. Before: Saturday's plan, "before" the interview for ever. (What it brings
    forward was the same either way: the plan's days are fixed times, and a card rated after
    the interview's moment has its full recall then; what differed is what the plan says.)"""
    coll = week_collection(3)
    store = Store.memory()
    store.save_settings(replace(store.settings(), interview_date=INTERVIEW))
    ids = ["alpha-00", "alpha-01", "beta-00"]
    _reviews(store, ids)
    saturday = MONDAY + timedelta(days=5, hours=11)  # 20:00
    clock = Clock(saturday)
    session = ReviewSession(
        store, coll, clock=clock, queue=ids, scheduler=Scheduler(store.settings())
    )
    assert session.plan is not None and session.plan.days_left == 2
    clock.now = saturday + timedelta(hours=9)  # Sunday 05:00
    session.rate(Rating.Good, duration_ms=1000)
    plan = session.plan
    assert plan is not None and plan.days_left == 1 and plan.bringing_forward
    assert plan.header().endswith(", 1 day")
    clock.now = ON_THE_DAY + timedelta(minutes=30)
    outcome = session.rate(Rating.Good, duration_ms=1000)
    plan = session.plan
    assert plan is not None and plan.days_left == 0 and not plan.before
    assert next_text(outcome, plan, coll, clock.now) == next_text(outcome, None, coll, clock.now)


def _cram_deck(folder: Path) -> None:
    cards = "".join(
        f"  - id: c-{i}\n    kind: recall\n    prompt: Question {i}?\n    answer: A {i}.\n"
        f"    bullets: [point {i}]\n"
        for i in range(3)
    )
    (folder / "c.yaml").write_text(f"deck: c\ntitle: C\ncards:\n{cards}", "utf-8")


def test_the_cram_sheet_left_open_into_the_day_before_the_interview_goes_weakest_first(
    new_york_local_time, tmp_path: Path
) -> None:
    """Cram opened at 03:50 two study days before the interview shows the decks in order; left
    open past 04:00 (the day before: cramming), with no key pressed, it is the weakest-first
    list with each card's recall on the day, as cram opened then shows it. Before: the sheet
    made when it opened stayed until it was closed."""
    from prep.tui.screens.cram import CramScreen
    from prep.tui.screens.home import HomeScreen
    from tests.pilot import text_of, wait_until

    folder = tmp_path / "decks"
    folder.mkdir()
    _cram_deck(folder)
    coll = load_collection([folder], include_bundled=False)
    store = Store.open(tmp_path / "prep.db")
    store.update_settings(interview_date="2026-03-11")  # a Wednesday
    rollover = local(2026, 3, 10, 4, 0)  # Tuesday's study day: the day before
    clock = Clock(rollover - timedelta(minutes=10))

    async def run() -> None:
        app = _app(store, coll, clock)
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, HomeScreen))
            await pilot.press("c")
            await wait_until(pilot, lambda: isinstance(app.screen, CramScreen))
            await pilot.pause()
            sheet = text_of(app, "#cram-sheet")
            assert "point 0" in sheet and "Weakest first" not in sheet
            clock.now = rollover + timedelta(minutes=1)
            await wait_until(pilot, lambda: "Weakest first" in text_of(app, "#cram-sheet"), 5)
            assert "% on the day]" in text_of(app, "#cram-sheet")

    with store:
        asyncio.run(run())


def test_the_yes_no_box_shows_its_own_keys_not_the_screen_below_s() -> None:
    """Leaving a mock with an answer typed asks yes/no; the footer under the box was the mock's
    (Back, Reveal: keys held back by the box, which do nothing there). Now it is the box's own:
    y, n, ? and q, each of which works there, and the mock stays drawn around the box."""
    from prep.tui.screens.confirm import Confirm
    from prep.tui.screens.mock import MockScreen
    from tests.pilot import wait_until
    from tests.test_narrow import footer_keys
    from tests.test_text_is_text import flat, screen_text

    async def run() -> None:
        app, mock = _on_the_mock()
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, MockScreen))
            await pilot.pause()
            await pilot.press("a", "b", "escape", "escape")  # (leave the box, then the mock)
            await wait_until(pilot, lambda: isinstance(app.screen, Confirm))
            await pilot.pause()
            assert footer_keys(app) == ["y", "n", "question_mark", "q"]
            drawn = flat(screen_text(app))
            assert "Leave the mock interview?" in drawn and "Reveal" not in drawn
            assert "Main question" in drawn and "ab" in drawn  # (the mock, around the box)
            await pilot.press("n")
            await wait_until(pilot, lambda: isinstance(app.screen, MockScreen))

    asyncio.run(run())


def test_f1_opens_help_from_the_mock_s_answer_box_where_a_question_mark_is_typed() -> None:
    """Before the reveal, the mock's answer box has the keys: ? is a character of the answer
    (kept so: an answer may ask "why?"), and help was out of reach until the reveal. F1 opens
    help there, at the mock's section, and the footer shows it; the answer typed stays. Once
    the box is left, ? is Help again and F1 is not shown twice (it still opens help)."""
    from textual.widgets import Input

    from prep.tui.screens.help import HelpScreen
    from prep.tui.screens.mock import MockScreen
    from tests.pilot import wait_until
    from tests.test_narrow import footer_keys

    async def run() -> None:
        app, mock = _on_the_mock()
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, MockScreen))
            screen = app.screen
            await pilot.pause()
            box = screen.query_one("#mock-answer", Input)
            await pilot.press("w", "h", "y", "question_mark")
            await pilot.pause()
            assert box.value == "why?" and isinstance(app.screen, MockScreen)
            keys = footer_keys(app)
            assert "f1" in keys and "question_mark" not in keys, keys
            await pilot.press("f1")
            await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
            assert app.screen.at == "MockScreen"
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.screen is screen)
            assert box.value == "why?"
            await pilot.press("escape")  # (out of the box: the answer stays)
            await pilot.pause()
            keys = footer_keys(app)
            assert "question_mark" in keys and "f1" not in keys, keys
            await pilot.press("f1")
            await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))

    asyncio.run(run())


def test_the_mock_s_grade_line_breaks_between_grades_never_inside_one() -> None:
    """The user pass, at 80 columns: the revealed question's grade line wrapped inside its last
    grade ("4 Easy" at the end of one row, "10d" alone on the next). Now the line breaks
    between grades when it does not fit (here at 60 columns, and again after a resize to 44):
    each grade and its interval on one row, as the rating bar shows them."""
    from prep.engine.study.present import rating_choices
    from prep.tui.mocktext import grades_text
    from prep.tui.screens.mock import MockScreen
    from tests.pilot import wait_until
    from tests.test_text_is_text import screen_text

    options = ["1 Again 1m", "2 Hard 6m", "» 3 Good 10m", "4 Easy 10d"]
    head = "Grade 1-4 (Enter = Good):"
    assert grades_text(head, options, 200) == f"{head}  " + "   ".join(options)
    assert grades_text(head, options, 76).split("\n") == [
        f"{head}  1 Again 1m   2 Hard 6m   » 3 Good 10m",
        "4 Easy 10d",
    ]

    async def run() -> None:
        app, mock = _on_the_mock()
        async with app.run_test(size=(60, 24)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, MockScreen))
            await pilot.pause()
            await pilot.press("enter")  # (answered aloud: reveal)
            await wait_until(pilot, lambda: mock.step is not None and mock.step.revealed)
            await pilot.pause()
            assert mock.step is not None
            labels = [
                ("» " if suggested else "") + label
                for _, label, suggested in rating_choices(mock.preview(), mock.step.suggested)
            ]
            for width in (60, 44):
                if width != 60:
                    await pilot.resize_terminal(width, 24)
                    await pilot.pause()
                    await pilot.pause()
                rows = screen_text(app).split("\n")
                for label in labels:
                    assert any(label in row for row in rows), (width, label, rows[-8:])

    asyncio.run(run())


def test_f1_opens_help_on_the_modal_boxes_too_and_a_palette_on_top_shows_no_second_help() -> None:
    """The review of ux17: README and help say F1 opens help everywhere, but a modal screen holds
    back the app's keys, so F1 did nothing on the yes/no box (and on demo pick, study more and
    help itself). Each now binds it beside its ?; on help it closes, as ? does. And the command
    palette's text box (a modal on top) made the screen below count as typing ?, so home's
    footer, redrawn under the palette, showed both ? Help and f1 Help."""
    from textual.command import CommandPalette

    from prep.tui.screens.confirm import Confirm
    from prep.tui.screens.help import HelpScreen
    from prep.tui.screens.mock import MockScreen
    from tests.pilot import wait_until

    async def run() -> None:
        app, mock = _on_the_mock()
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, MockScreen))
            await pilot.pause()
            await pilot.press("a", "escape", "escape")
            await wait_until(pilot, lambda: isinstance(app.screen, Confirm))
            box = app.screen
            await pilot.press("f1")
            await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
            await pilot.press("f1")
            await wait_until(pilot, lambda: app.screen is box)
            await pilot.press("n")
            await wait_until(pilot, lambda: isinstance(app.screen, MockScreen))
            await pilot.press("escape")  # (out of the answer box: ? is Help on the mock)
            await pilot.pause()
            assert not app.check_action("help_in_box", ())
            await pilot.press("ctrl+p")
            await wait_until(pilot, lambda: isinstance(app.screen, CommandPalette))
            await pilot.pause()
            assert app.focused is not None  # (the palette's own text box)
            assert not app.check_action("help_in_box", ())

    asyncio.run(run())
