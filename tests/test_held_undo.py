"""`u` pressed while a rating saves undoes that rating once it is saved; when the save fails
(the database stayed busy) there is no rating of it to undo, and the held `u` undid the rating
before it instead: the previous card came back, its saved rating gone, a card the learner did not
mean (tui/screens/held_keys.py)."""

from __future__ import annotations

from prep.engine.store import Store
from prep.tui.testing import make_app
from tests.pilot import async_test, record_notes
from tests.test_held_keys import SlowSave, ratings, start, wait_until, warnings


@async_test
async def test_u_held_during_a_failed_save_never_undoes_the_rating_before() -> None:
    store = Store.memory()
    app = make_app(store=store)
    record_notes(app)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await start(pilot, app)
        await pilot.press("3")  # two-roles: saved
        await wait_until(pilot, lambda: screen.card.id == "wo-shape" and not screen.saving)
        await pilot.press("space")
        screen.RETRY_SECONDS = 0.3
        slow = SlowSave(screen)
        await pilot.press("2")  # wo-shape: this save fails
        await pilot.press("u")  # meant for the 2 on wo-shape
        await wait_until(pilot, lambda: any("Not saved" in w for w in warnings(app)))
        await wait_until(pilot, lambda: not screen.saving and not screen._held)
        await pilot.pause()
        slow.busy = False
        assert ratings(store) == [("two-roles", 3)]  # kept: it was not what u was meant for
        assert screen.card.id == "wo-shape"  # the card whose rating was not saved stays
        assert any("u not applied" in w for w in warnings(app)), warnings(app)
        await pilot.press("u")  # pressed now: undoes the last saved rating, as always
        await wait_until(pilot, lambda: ratings(store) == [])
