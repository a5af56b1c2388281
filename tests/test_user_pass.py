"""What a learner met in a week of real use (user11's pass through the app), each fixed and
held here: a line that said something untrue or a number that disagreed with another screen."""

from __future__ import annotations

import io

from prep.engine.study.session import ReviewSession
from prep.tui.plain import run_plain


def test_plain_quit_mid_session_says_what_is_left_not_a_far_next_due(
    fresh_store, small_collection, clock
) -> None:
    """q after one card: the cards still due now are left, so "Next card due in 23 hours"
    (the first due time *after* now, the reviews due now skipped) was untrue."""
    session = ReviewSession(fresh_store, small_collection, clock=clock)
    total = session.total
    assert total >= 3
    out = io.StringIO()
    # reveal, Good, then quit on the second card
    assert run_plain(session, io.StringIO("\n3\nq\n"), out) == 0
    text = out.getvalue()
    assert "Session over: 1 reviewed" in text
    assert "Next card due in" not in text
    new, learning, due = session.counts()
    assert new + learning + due == total  # the rated one is back as a learning step
    assert f"Left in this session: new {new} · learning {learning} · due {due}" in text


def test_plain_session_run_to_its_end_still_says_when_the_next_card_is_due(
    fresh_store, small_collection, clock
) -> None:
    session = ReviewSession(fresh_store, small_collection, clock=clock, requeue=False)
    out = io.StringIO()
    lines = "".join("\n\n3\n" for _ in range(session.total))  # a red flag takes two Enters
    run_plain(session, io.StringIO(lines + "q\n"), out)
    text = out.getvalue()
    assert session.finished
    assert "Left in this session" not in text
    assert "Next card due in 10 minutes" in text


def _review_due_before_an_interview(collection):
    """A store whose cards are all in review (two Goods, fuzz off), the clock just after the
    first one is due again, and an interview three days later: a Good's FSRS interval runs
    past it, so the plan serves the card the day before the interview instead."""
    from dataclasses import replace
    from datetime import timedelta

    from prep.engine.study.scheduler import State
    from tests.conftest import reviewed_store

    store = reviewed_store(collection)
    states = [s for s in store.cards().values() if s.state == State.Review]
    now = min(s.due for s in states) + timedelta(minutes=1)
    interview = (now + timedelta(days=3)).date().isoformat()
    store.save_settings(replace(store.settings(), interview_date=interview), at=now)
    return store, now


def _plan_session(store, collection, now):
    from prep.engine.study.scheduler import Scheduler

    return ReviewSession(
        store,
        collection,
        clock=lambda: now,
        scheduler=Scheduler(store.settings(), enable_fuzzing=False),
        new_limit=0,
    )


def test_saved_line_says_when_an_interview_plan_brings_the_card_back(
    small_collection, utc_local_time
) -> None:
    """ "Saved: Good, next in 8 days" while the plan serves the card the day before the
    interview (4 days): the line said FSRS's interval only, which the plan does not keep."""
    from prep.engine.study.present import spoken_interval
    from prep.engine.timeutil import study_day_start

    store, now = _review_due_before_an_interview(small_collection)
    session = _plan_session(store, small_collection, now)
    card = session.current
    assert card is not None and session.kind_of[card.id] == "review"
    out = io.StringIO()
    run_plain(session, io.StringIO("\n\n3\nq\n"), out)
    state = store.card(card.id)
    fsrs = spoken_interval(state.due - now)
    back = spoken_interval(study_day_start(now, 2) - now)  # the day before the interview
    assert back != fsrs
    assert f"Saved: Good, next in {back}, for the interview (FSRS alone: {fsrs})." in out.getvalue()


def test_saved_note_on_the_review_screen_says_the_plan_too(
    small_collection, utc_local_time
) -> None:
    from prep.engine.study.present import spoken_interval
    from prep.engine.timeutil import study_day_start
    from prep.tui.screens.review import ReviewScreen
    from prep.tui.testing import make_app
    from tests.pilot import async_test, text_of, wait_until

    store, now = _review_due_before_an_interview(small_collection)

    @async_test
    async def run() -> None:
        app = make_app(store=store, collection=small_collection, clock=lambda: now)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("enter")  # home -> the first card
            await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen))
            card = app.screen.card
            await pilot.press("space")
            if not app.screen.revealed:  # a red flag shows its choices first
                await pilot.press("space")
            await pilot.press("3")
            await wait_until(pilot, lambda: "Saved" in text_of(app, "#hint"))
            state = store.card(card.id)
            fsrs = spoken_interval(state.due - now)
            back = spoken_interval(study_day_start(now, 2) - now)
            hint = text_of(app, "#hint")
            assert f"Saved: Good, next in {back}, for the interview (FSRS alone: {fsrs})" in hint

    run()


def test_sync_status_times_read_as_local_minutes_not_stored_iso_text(
    tmp_path, utc_local_time
) -> None:
    """`prep sync --status` printed "2026-12-03T09:11:00.676309Z" three times a device: the
    stored text, microseconds and all. It says local minutes, as the demo list does; --json
    keeps the exact stored times."""
    import json
    import re

    from prep.engine.store import Store
    from tests.test_sync import T0, rate
    from tests.test_sync_summary import cli

    folder = tmp_path / "shared"
    folder.mkdir()
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    with Store.open(a) as store:
        rate(store, "x", 3, T0)
    assert cli(a, "sync", str(folder)).exit_code == 0
    assert cli(b, "sync", str(folder)).exit_code == 0
    out = cli(b, "sync", str(folder), "--status").output
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:", out), out
    minutes = r"\d{4}-\d\d-\d\d \d\d:\d\d"
    assert re.search(rf"last sync: {minutes}\n", out), out
    assert re.search(rf"last written {minutes}, applied here {minutes}\n", out), out
    exact = json.loads(cli(b, "sync", str(folder), "--status", "--json").output)
    assert exact["last_sync"].endswith("Z")


def _theme_app(db, **kwargs):
    from prep.tui.app import PrepApp
    from prep.tui.testing import NOW, fixed_collection

    return PrepApp(db=str(db), collection=fixed_collection(), clock=lambda: NOW, demos={}, **kwargs)


def _meta(db, key: str):
    from prep.engine.store import Store

    with Store.open(db) as store:
        return store.get_meta(key)


def test_a_theme_picked_in_the_palette_is_there_next_launch(tmp_path, monkeypatch) -> None:
    """ctrl+p, Theme, textual-light: the next `prep` opened dark again (only $PREP_THEME or
    COLORFGBG chose it). The pick is kept on this machine; $PREP_THEME still wins."""
    from tests.pilot import async_test, wait_until

    monkeypatch.delenv("PREP_THEME", raising=False)
    monkeypatch.delenv("COLORFGBG", raising=False)
    db = tmp_path / "prep.db"

    @async_test
    async def launch(expect: str, pick: str | None = None) -> None:
        app = _theme_app(db)
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: app.store is not None)
            await pilot.pause()
            assert app.theme == expect
            if pick is not None:
                app.theme = pick  # what the palette's Theme command sets
                await wait_until(pilot, lambda: app.theme_memory.kept == pick)

    launch("textual-dark")
    assert _meta(db, "theme") is None  # a launch that changes nothing writes nothing
    launch("textual-dark", pick="textual-light")
    assert _meta(db, "theme") == "textual-light"
    launch("textual-light")
    monkeypatch.setenv("PREP_THEME", "nord")
    launch("nord")
    assert _meta(db, "theme") == "textual-light"  # the environment's choice is not kept


def test_the_day_before_the_interview_promises_no_second_review(utc_local_time) -> None:
    """The day before, with 56 cards unseen, home said "56 cards in 1 day: 56 new a day, 2
    reviews each before Tuesday" and "every card seen twice": one day cannot give two."""
    from prep.engine.store import Store
    from prep.engine.study.plan import plan_day
    from prep.engine.study.scheduler import Settings
    from tests.test_plan import MONDAY, week_collection

    coll = week_collection()
    settings = Settings(new_per_day=5, interview_date="2026-03-03")  # Tuesday: 1 day left
    day = plan_day(Store.memory(), coll, MONDAY, settings)
    assert day is not None and day.plan.days_left == 1
    assert day.line() == (
        "84 of 84 cards to see today, once each before Tuesday; "
        "the weakest again on Tuesday morning"
    )
    # (the line says the 84: the why line does not say it again, user14)
    assert day.why() == "More than new_per_day (5) today: every card seen once before Tuesday"
    two = plan_day(
        Store.memory(), coll, MONDAY, Settings(new_per_day=5, interview_date="2026-03-04")
    )
    assert two is not None and two.line().endswith("2 reviews each before Wednesday")
    assert two.why() is not None and two.why().endswith("seen twice before Wednesday")


def test_prep_stats_says_there_is_no_retention_yet_as_the_stats_screen_does(
    db_path, small_deck_dir
) -> None:
    """`prep stats` after a first day read "Retention    true — over 0 reviews   last 30 days
    —" where the app's stats screen says there are no reviews of learned cards yet."""
    from tests.test_cli import review_first_card, run_cli

    review_first_card(small_deck_dir, db_path, "3")
    out = run_cli("--questions", str(small_deck_dir), "stats", db=db_path).output
    line = next(x for x in out.splitlines() if x.startswith("Retention"))
    assert line == "Retention    true retention: no reviews of learned cards yet   target 90%"


def test_the_mock_shows_the_typed_answer_and_its_grade_under_two_labels(fresh_store) -> None:
    """The mock's reveal read "Your answer: It mixes heads…" and, right under it, "Your
    answer: 2 of 3 points": two lines with one label. The grade line says what it counts."""
    from textual.widgets import Static

    from prep.engine.study.mock import MockInterview
    from prep.tui.app import PrepApp
    from tests.pilot import async_test
    from tests.test_grade_tui import FakeGrading, collection

    @async_test
    async def run() -> None:
        mock = MockInterview(fresh_store, collection(), main_id="roles", seed=0)
        app = PrepApp(
            store=fresh_store, collection=mock.collection, mock_first=mock, grading=FakeGrading()
        )
        async with app.run_test(size=(100, 40)) as pilot:
            await pilot.pause()
            await pilot.press(*"It mixes heads and weights them.", "enter")
            await pilot.pause()
            await app.workers.wait_for_complete()
            await pilot.pause()
            reveal = str(app.screen.query_one("#mock-reveal", Static).render())
            assert reveal.count("Your answer:") == 1
            assert "Your answer: It mixes heads and weights them." in reveal
            assert "Your answer covers 2 of 3 points" in reveal

    run()


def test_the_rating_buttons_all_show_their_interval_in_a_narrow_terminal() -> None:
    """At 44 columns the first rating button took the whole bar and the other three fell
    off the screen (four buttons of min-width 10 did not fit: Textual gave each the whole
    width); at 48, "1 Again 10m" was cut to "1 Again". Where four do not fit, two rows of
    two; wide terminals keep one row."""
    from prep.tui.testing import make_app
    from tests.pilot import async_test, wait_until

    @async_test
    async def at(width: int, height: int = 24) -> None:
        app = make_app()
        async with app.run_test(size=(width, height)) as pilot:
            await pilot.press("enter", "space")
            await wait_until(pilot, lambda: app.screen.query("#ratings"))
            await pilot.pause()
            bar = app.screen.query_one("#ratings")
            footer = app.screen.query_one("Footer").region
            for button in bar.buttons.values():
                r, label = button.region, str(button.label)
                assert r.x >= 0 and r.right <= width, (width, label, r)
                assert r.bottom <= footer.y, (width, label, r)  # above the footer
                assert r.width >= len(label) + 2, (width, label, r)  # label not cropped
            got.append({b.region.y for b in bar.buttons.values()})

    got: list[set[int]] = []
    for width in (30, 40, 44, 48):
        at(width)
    at(120)
    assert [len(rows) for rows in got] == [2, 2, 2, 2, 1]


def test_the_summary_does_not_say_next_due_in_days_while_the_limit_holds_reviews_back(
    small_collection, utc_local_time
) -> None:
    """The end of a session read "Daily review limit reached (3); more reviews are due" and
    then "Next card due in 2 days": the first due time after now, the reviews due now (held
    back by the limit) skipped."""
    from dataclasses import replace
    from datetime import timedelta

    from prep.engine.study.scheduler import State
    from prep.tui.screens.review import ReviewScreen
    from prep.tui.screens.summary import SummaryScreen
    from prep.tui.testing import make_app
    from tests.conftest import reviewed_store
    from tests.pilot import async_test, text_of, wait_until

    store = reviewed_store(small_collection)
    dues = sorted(s.due for s in store.cards().values() if s.state == State.Review)
    now = dues[1] + timedelta(minutes=1)  # two reviews due, the limit serves one
    store.save_settings(replace(store.settings(), review_limit=1, new_per_day=0), at=now)

    @async_test
    async def run() -> None:
        app = make_app(store=store, collection=small_collection, clock=lambda: now)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen))
            await pilot.press("space")
            if not app.screen.revealed:  # a red flag shows its choices first
                await pilot.press("space")
            await pilot.press("3")
            await wait_until(pilot, lambda: isinstance(app.screen, SummaryScreen))
            summary = text_of(app, "#summary")
            assert "Daily review limit reached (1)" in summary
            assert "Next card due in" not in summary
            assert "Past those held back, the next card comes due in" in summary

    run()
