"""Round 17 (day17): three things a learner saw in a week (report_ux17's "Seen and left
alone"): the interview day served new cards by the plan, All decks' New count was more than its
deck rows add up to, and the mock's clock ran on while help was open."""

from __future__ import annotations

import asyncio

from prep.engine.store import Store
from prep.engine.study.mock import MockInterview
from prep.tui.testing import NOW, fixed_collection


class FakeTimer:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


# --- the mock's clock holds while help (or a box) is over the question ---------------------------


def test_the_mock_s_clock_holds_while_help_is_open_and_runs_on_after() -> None:
    """ux17 saw 0:03 become 0:11 over F1. An answer is timed; help is not part of it (Anki
    pauses its answer timer while a dialog is open): the seconds with help open are left out of
    the timer shown, of the time the reveal stops at and of the grade's duration."""
    from prep.tui.screens.help import HelpScreen
    from prep.tui.screens.mock import MockScreen
    from prep.tui.testing import make_app
    from tests.pilot import wait_until

    timer = FakeTimer()

    async def run() -> tuple[float, float, float, str]:
        store, coll = Store.memory(), fixed_collection()
        mock = MockInterview(store, coll, main_id="two-roles", clock=lambda: NOW, timer=timer)
        app = make_app(store=store, collection=coll, mock_first=mock)
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, MockScreen))
            screen = app.screen
            await pilot.pause()
            timer.t += 3  # 3 s on the question
            await pilot.press("f1")
            await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
            timer.t += 8  # 8 s reading help
            await pilot.pause()
            with_help = mock.elapsed()
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.screen is screen)
            await pilot.pause()
            back = mock.elapsed()
            shown = str(screen.query_one("#mock-timer").render())
            timer.t += 2  # 2 s more on the answer
            await pilot.press("ctrl+r")
            await wait_until(pilot, lambda: screen.revealed)
            return with_help, back, mock.steps[0].elapsed_s or 0.0, shown

    with_help, back, taken, shown = asyncio.run(run())
    assert with_help == 3.0 and back == 3.0, (with_help, back)
    assert shown.startswith("0:03 /"), shown
    assert taken == 5.0


def test_the_mock_s_pause_leaves_out_only_the_paused_time() -> None:
    """The engine's half: pause twice over one question, resume, a pause with no question
    shown; each question's clock starts at its own start."""
    store, coll = Store.memory(), fixed_collection()
    timer = FakeTimer()
    mock = MockInterview(store, coll, main_id="two-roles", clock=lambda: NOW, timer=timer)
    mock.start()
    timer.t += 4
    mock.pause()
    mock.pause()  # (twice: still the first moment)
    timer.t += 100
    assert mock.elapsed() == 4.0
    mock.resume()
    mock.resume()  # (twice: nothing more)
    timer.t += 1
    assert mock.elapsed() == 5.0
    mock.pause()
    timer.t += 10
    assert mock.reveal("a") == 5.0  # revealed while paused: the paused time is not the answer's
    mock.resume()
    mock.grade(3)
    if not mock.finished:  # the next question's clock starts at its own start, not paused
        timer.t += 2
        assert mock.elapsed() == 2.0


# --- the interview day introduces no new card by the plan ----------------------------------------


def _on_the_day(plan_decks: tuple[str, ...] | None = None):
    from dataclasses import replace

    from prep.engine.study.scheduler import Settings
    from tests.test_plan import INTERVIEW, MONDAY, week_collection

    store, coll = Store.memory(), week_collection()
    store.save_settings(
        replace(Settings(), new_per_day=20, interview_date=INTERVIEW, plan_decks=plan_decks)
    )
    morning = MONDAY.replace(day=9)  # the interview's day (Monday 9 March), 9 am
    return store, coll, morning


def test_the_interview_day_serves_no_new_card_and_study_more_still_adds(utc_local_time) -> None:
    """ux17 saw "new 20" on the interview day: PlanDay.new_today kept the new_per_day floor,
    while plan.py and README say the day itself adds none. Home's counts, the queue and the
    limit all say none; "study more" (n) still adds its cards, as on any day. The whole study
    day: after the interview's noon too (the plan's day; plain FSRS from the next)."""
    from datetime import timedelta

    from prep.engine.study.plan import plan_day
    from prep.engine.study.queue import add_new_today, build_queue, deck_counts

    store, coll, morning = _on_the_day()
    day = plan_day(store, coll, morning)
    assert day is not None and day.plan.days_left == 0 and day.new_today == 0
    for now in (morning, morning + timedelta(hours=6)):
        assert build_queue(store, coll, now).new == []
        assert [row.new for row in deck_counts(store, coll, now)] == [0, 0, 0]
    add_new_today(store, morning, 10)
    assert len(build_queue(store, coll, morning).new) == 10
    assert deck_counts(store, coll, morning)[0].new == 10
    # the next day: the setting again
    assert len(build_queue(store, coll, morning + timedelta(days=1)).new) == 20


def test_the_interview_day_s_limit_is_said_once_in_the_same_words(utc_local_time) -> None:
    """The plan's line (home, --plain, `prep stats`, `prep config`) says the day's limit as
    everywhere (new_limit_text); the limit line below it does not say it again, and with
    "study more" both follow."""
    from prep.engine.study.plan import new_limit_text, on_the_day, plan_day
    from prep.engine.study.queue import add_new_today
    from prep.tui.plain import today_lines

    store, coll, morning = _on_the_day()
    said = new_limit_text(0, 0, 0, interview_day=True)
    assert said == "0 new on the day, 0 left"
    lines = today_lines(store, coll, morning, None, None)
    text = "\n".join(lines)
    assert lines[0].startswith("Interview: Mon 9 Mar, today · the weakest cards first"), lines
    assert text.count("new on the day") == 1 and said in lines[0], lines
    assert lines[0].lower().count("today") == 1, lines  # (the header's: test_plan)
    assert "new a day" not in text, lines  # (the setting's 20 is not today's limit)
    assert "Daily new-card limit reached (the plan's)" in text, lines
    day = plan_day(store, coll, morning)
    stats = on_the_day(store, coll, morning)
    assert day is not None and stats is not None and stats.plan == day.line()
    assert stats.new_today == 0
    add_new_today(store, morning, 10)
    lines = today_lines(store, coll, morning, None, None)
    assert "0 new on the day + 10 more, 10 left" in lines[0], lines


def test_a_deck_outside_plan_decks_follows_the_setting(utc_local_time) -> None:
    """plan_decks covers only its decks: All decks takes the plan's decks' new cards (none on
    the day), and a deck outside them studied on its own follows new_per_day, on the day and
    before it (not the plan's raised limit: that is for the plan's cards)."""
    from prep.engine.study.queue import build_queue, deck_counts, limits_today
    from prep.engine.study.session import ReviewSession
    from tests.test_plan import MONDAY

    store, coll, morning = _on_the_day(("beta",))
    rows = {row.name: row.new for row in deck_counts(store, coll, morning)}
    assert rows == {"": 0, "alpha": 20, "beta": 0}, rows
    queue = build_queue(store, coll, morning, deck="alpha")
    assert len(queue.new) == 20
    limits = limits_today(store, coll, morning, queue, "alpha")
    assert (limits.new_per_day, limits.interview_day) == (20, False)
    session = ReviewSession(store, coll, clock=lambda: morning, deck="alpha")
    assert len([cid for cid in session.queue if cid.startswith("alpha-")]) == 20
    # a week ahead the plan raises beta's (42 cards in 6 days: 7 a day, not 20: the setting
    # stays); alpha alone keeps the setting too
    from dataclasses import replace

    store.save_settings(replace(store.settings(), new_per_day=5))
    rows = {row.name: row.new for row in deck_counts(store, coll, MONDAY)}
    assert rows == {"": 7, "alpha": 5, "beta": 7}, rows


def test_a_deck_outside_plan_decks_is_not_told_its_limit_is_the_plan_s(utc_local_time) -> None:
    """The review of day17: the limit line said "the plan's" whenever its words matched the
    plan's line, and a deck the plan leaves out follows the setting, in the same words when the
    numbers agree (new_per_day 20; the plan needs fewer): its line says the setting's limit."""
    from prep.engine.study.plan import plan_day
    from prep.engine.study.present import limit_lines
    from prep.engine.study.queue import build_queue, limits_today
    from tests.test_plan import MONDAY

    store, coll, _ = _on_the_day(("beta",))
    day = plan_day(store, coll, MONDAY)
    assert day is not None
    shown = day.line()
    assert "20 new a day, 20 left today" in shown, shown
    for deck, plans in (("alpha", False), ("beta", True), (None, True)):
        queue = build_queue(store, coll, MONDAY, deck=deck)
        lines = limit_lines(limits_today(store, coll, MONDAY, queue, deck), shown)
        assert len(lines) == 1, lines
        assert ("the plan's" in lines[0]) == plans, (deck, lines)
        if not plans:
            assert "20 new a day, 20 left today" in lines[0], lines


# --- All decks' New beside its decks' --------------------------------------------------------------


def test_all_decks_new_beyond_its_decks_is_the_follow_ups_after_parents_of_other_decks() -> None:
    """ux17 saw All decks' New (108) above its deck rows' sum (96) with the bundled decks. The
    cause: a follow-up is served only after its parent has been answered; the follow-ups deck's
    parents are in other decks, so studied alone it serves none of them until then, while all
    decks together serve the parent and then its follow-ups (18 of the 116 with a limit above
    them all). Not a bug: the two counts mean different things, so home says which ones. With
    the day's limit below what the decks hold (All 20 beside 75), no line."""
    from dataclasses import replace

    from prep.engine.decks.deckcache import load_collection
    from prep.engine.study.queue import deck_counts
    from prep.engine.study.scheduler import Settings
    from prep.tui.screens.home import HomeScreen
    from prep.tui.testing import make_app
    from tests.pilot import text_of, wait_until

    coll = load_collection()
    store = Store.memory()
    rows = deck_counts(store, coll, NOW)
    assert rows[0].new == 20 and sum(r.new for r in rows[1:]) > 20
    store.save_settings(replace(Settings(), new_per_day=200))
    rows = deck_counts(store, coll, NOW)
    by_deck = {r.name: r.new for r in rows}
    assert by_deck[""] == len(coll) == 116 and by_deck["wo-followups"] == 0, by_deck
    assert rows[0].after_parents == 116 - sum(r.new for r in rows[1:]) == 18

    async def run(new_per_day: int) -> str:
        store = Store.memory()
        store.save_settings(replace(Settings(), new_per_day=new_per_day))
        app = make_app(store=store, collection=coll)
        async with app.run_test(size=(100, 40)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, HomeScreen))
            await pilot.pause()
            return text_of(app, "#howto")

    said = "All decks' New counts 18 follow-ups that come after a parent from another deck"
    assert said in " ".join(asyncio.run(run(200)).split())
    assert "come after a parent" not in asyncio.run(run(20))
