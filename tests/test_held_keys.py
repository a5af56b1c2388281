"""Keys pressed while a rating is saving (tui/screens/held_keys.py): none is lost, each applies in
order after the save, and a key that acts on a card never lands on a card not yet shown."""

from __future__ import annotations

import functools

import pytest
from textual import events
from textual.widgets import Static

from prep.engine.store import Store, StoreError
from prep.tui.app import PrepApp
from prep.tui.screens.home import HomeScreen
from prep.tui.screens.review import ReviewScreen
from prep.tui.testing import make_app
from tests.pilot import async_test, notes_of, record_notes
from tests.pilot import wait_until as pilot_wait_until

pytestmark = pytest.mark.usefixtures("utc_local_time")


# (tests/pilot.py's wait, with this file's 20 s bound)
wait_until = functools.partial(pilot_wait_until, timeout=20.0)


class SlowSave:
    """The session's rate made slow the way a busy database makes it: while ``busy`` it raises
    the store's busy error (the screen retries every 0.2 s, the app stays live)."""

    def __init__(self, screen: ReviewScreen) -> None:
        self.busy = True
        self.real = screen.session.rate
        screen.session.rate = self.rate  # type: ignore[method-assign]

    def rate(self, *args, **kwargs):
        if self.busy:
            raise StoreError("database is locked", "busy", retryable=True)
        return self.real(*args, **kwargs)


def ratings(store: Store) -> list[tuple[str, int]]:
    return [(r.card_id, r.rating) for r in store.reviews()]


def warnings(app: PrepApp) -> list[str]:
    return notes_of(app)


async def start(pilot, app: PrepApp) -> ReviewScreen:
    await pilot.press("enter", "space")  # home -> the first card, revealed
    screen = app.screen
    assert isinstance(screen, ReviewScreen) and screen.card.id == "two-roles" and screen.revealed
    return screen


@async_test
async def test_u_pressed_while_saving_undoes_the_rating_once_saved() -> None:
    store = Store.memory()
    app = make_app(store=store)
    record_notes(app)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await start(pilot, app)
        slow = SlowSave(screen)
        await pilot.press("3")
        assert screen.saving
        await pilot.press("u")  # dropped before: the rating stayed and the next card came
        assert screen.saving and screen.card.id == "two-roles"
        slow.busy = False
        await wait_until(pilot, lambda: not screen.saving and not screen._held)
        await pilot.pause()
        assert screen.card.id == "two-roles" and not screen.revealed  # back, as it was
        assert ratings(store) == []  # saved, then undone
        assert "Undone" in str(screen.query_one("#hint", Static).content)


@async_test
async def test_a_rating_key_pressed_while_saving_never_lands_on_the_next_card() -> None:
    store = Store.memory()
    app = make_app(store=store)
    record_notes(app)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await start(pilot, app)
        slow = SlowSave(screen)
        await pilot.press("3")
        await pilot.press("4", "space", "enter")  # meant for two-roles, which is saving
        slow.busy = False
        await wait_until(pilot, lambda: screen.card.id == "wo-shape" and not screen._held)
        await pilot.pause()
        assert not screen.revealed  # the next card's front, not revealed by the held space
        assert ratings(store) == [("two-roles", 3)]
        assert any("Keys 4, space, enter not applied" in w for w in warnings(app))
        # keys pressed after it was shown work as always
        await pilot.press("space", "2")
        await wait_until(pilot, lambda: len(ratings(store)) == 2)
        assert ratings(store) == [("two-roles", 3), ("wo-shape", 2)]


@async_test
async def test_keys_read_while_the_commit_blocks_the_app_are_not_given_to_the_next_card() -> None:
    # A commit that blocks the event loop (a slow disk): keys the terminal delivered meanwhile
    # are handled only after the next card is set up. Before, space revealed it and 4 rated it.
    store = Store.memory()
    app = make_app(store=store)
    record_notes(app)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await start(pilot, app)
        real = screen.session.rate

        def blocking_rate(*args, **kwargs):
            for key, char in (("space", " "), ("4", "4")):  # pressed during the commit
                app.post_message(events.Key(key, char))
            return real(*args, **kwargs)

        screen.session.rate = blocking_rate  # type: ignore[method-assign]
        await pilot.press("3")
        await wait_until(pilot, lambda: screen.card.id == "wo-shape")
        await pilot.pause()
        await pilot.pause()
        assert not screen.revealed
        assert ratings(store) == [("two-roles", 3)]
        assert any("not applied" in w for w in warnings(app))


@async_test
async def test_a_failed_save_keeps_the_card_and_a_rating_pressed_meanwhile_applies_to_it() -> None:
    store = Store.memory()
    app = make_app(store=store)
    record_notes(app)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await start(pilot, app)
        screen.RETRY_SECONDS = 0.3
        slow = SlowSave(screen)
        await pilot.press("3")
        await pilot.press("4")  # two-roles is on screen: it was shown when 4 was pressed
        await wait_until(pilot, lambda: any("Not saved" in w for w in warnings(app)))
        slow.busy = False  # the held 4 is being retried now, or is about to be
        await wait_until(pilot, lambda: screen.card.id == "wo-shape")
        assert ratings(store) == [("two-roles", 4)]


@async_test
async def test_escape_pressed_while_saving_goes_home_after_the_save() -> None:
    store = Store.memory()
    app = make_app(store=store)
    record_notes(app)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await start(pilot, app)
        slow = SlowSave(screen)
        await pilot.press("3")
        await pilot.press("escape")  # went home at once before, the worker still retrying
        assert app.screen is screen and screen.saving
        slow.busy = False
        await wait_until(pilot, lambda: isinstance(app.screen, HomeScreen))
        assert ratings(store) == [("two-roles", 3)]


@async_test
async def test_q_pressed_while_saving_quits_once_the_rating_is_saved() -> None:
    store = Store.memory()
    app = make_app(store=store)
    record_notes(app)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await start(pilot, app)
        slow = SlowSave(screen)
        await pilot.press("3")
        await pilot.press("q")
        assert app.is_running and screen.saving  # not quit under the save
        slow.busy = False
        await wait_until(pilot, lambda: not app.is_running)
    assert ratings(store) == [("two-roles", 3)]
