"""Clicks and ctrl+c while a rating is saving (tui/screens/held_keys.py): a click on the rating bar
is a key press by other means (Anki answers a click and its key through one path), so it follows
the key's rule: held, applied after the save to the card it was meant for, refused in one line if
that card is gone (a click read while a commit blocked the app too: tui/clicktime.py). ctrl+c
during a save quits once the save ends (as q does), never cancelling it."""

from __future__ import annotations

import functools

import pytest

from prep.engine.store import Store
from prep.tui.testing import make_app
from tests.pilot import async_test, record_notes
from tests.pilot import wait_until as pilot_wait_until
from tests.test_held_keys import SlowSave, ratings, start, warnings

pytestmark = pytest.mark.usefixtures("utc_local_time")

wait_until = functools.partial(pilot_wait_until, timeout=20.0)


@async_test
async def test_a_click_on_the_rating_bar_while_saving_is_refused_in_one_line() -> None:
    store = Store.memory()
    app = make_app(store=store)
    record_notes(app)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await start(pilot, app)
        slow = SlowSave(screen)
        await pilot.press("3")
        assert screen.saving
        await pilot.click("#rate-4")  # meant for two-roles, which is saving
        slow.busy = False
        await wait_until(pilot, lambda: screen.card.id == "wo-shape" and not screen._held)
        await pilot.pause()
        assert ratings(store) == [("two-roles", 3)]  # not 4 on the next card, not lost unsaid
        said = [w for w in warnings(app) if "not applied" in w]
        assert len(said) == 1 and said[0].startswith("Click on Easy not applied"), said


@async_test
async def test_a_click_while_a_save_fails_applies_to_the_card_it_was_meant_for() -> None:
    store = Store.memory()
    app = make_app(store=store)
    record_notes(app)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await start(pilot, app)
        screen.RETRY_SECONDS = 0.3
        slow = SlowSave(screen)
        await pilot.press("3")
        await pilot.click("#rate-2")  # two-roles is on screen, and stays when the save fails
        await wait_until(pilot, lambda: any("Not saved" in w for w in warnings(app)))
        slow.busy = False
        await wait_until(pilot, lambda: screen.card.id == "wo-shape")
        assert ratings(store) == [("two-roles", 2)]


@async_test
async def test_a_click_read_while_the_commit_blocks_the_app_is_not_given_to_the_next_card() -> None:
    # The terminal delivered a click on "Again" while the commit blocked the loop; the next card's
    # "Show answer" button is where "Again" was once drawn. It must neither reveal nor rate that card.
    store = Store.memory()
    app = make_app(store=store)
    record_notes(app)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await start(pilot, app)
        real = screen.session.rate

        def blocking_rate(*args, **kwargs):
            ratings_bar = screen.query_one("#rate-1")
            region = ratings_bar.region
            from textual import events

            for cls in (events.MouseDown, events.MouseUp):
                app.post_message(
                    cls(
                        None,
                        region.x + 1,
                        region.y + 1,
                        0,
                        0,
                        1,
                        False,
                        False,
                        False,
                        screen_x=region.x + 1,
                        screen_y=region.y + 1,
                    )
                )
            return real(*args, **kwargs)

        screen.session.rate = blocking_rate  # type: ignore[method-assign]
        await pilot.press("3")
        await wait_until(pilot, lambda: screen.card.id == "wo-shape")
        for _ in range(4):
            await pilot.pause()
        assert not screen.revealed
        assert ratings(store) == [("two-roles", 3)]  # (it meets the old, hidden button)
        # and it is not dropped unsaid: the learner clicked Again and sees why nothing happened
        said = [w for w in warnings(app) if "not applied" in w]
        assert said == [
            "Click on Again not applied: pressed before this card was shown (while the last "
            "rating was saving)."
        ], warnings(app)


@async_test
async def test_ctrl_c_while_saving_quits_once_the_rating_is_saved() -> None:
    store = Store.memory()
    app = make_app(store=store)
    record_notes(app)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await start(pilot, app)
        slow = SlowSave(screen)
        await pilot.press("3")
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.is_running and screen.saving  # not quit under the save
        slow.busy = False
        await wait_until(pilot, lambda: not app.is_running)
    assert ratings(store) == [("two-roles", 3)]


@async_test
async def test_a_quit_held_over_a_save_that_fails_does_not_drop_the_rating_unsaid() -> None:
    store = Store.memory()
    app = make_app(store=store)
    record_notes(app)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await start(pilot, app)
        screen.RETRY_SECONDS = 0.3
        slow = SlowSave(screen)
        await pilot.press("3")
        await pilot.press("ctrl+c")
        await wait_until(pilot, lambda: any("Not quit" in w for w in warnings(app)))
        await pilot.pause()
        assert app.is_running and screen.card.id == "two-roles" and screen.revealed
        slow.busy = False
        await pilot.press("4")  # rated again: saved
        await wait_until(pilot, lambda: ratings(store) == [("two-roles", 4)])
        await pilot.press("q")  # and q quits as always
        await wait_until(pilot, lambda: not app.is_running)
