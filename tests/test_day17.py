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
