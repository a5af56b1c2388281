"""Round 13's user pass (a learner over days, tmux under faketime): what was met, each with a
test that fails before its fix."""

from __future__ import annotations

from prep.tui.testing import make_app
from tests.pilot import async_test, wait_until
from tests.test_narrow import footer_keys as drawn_keys


def notes(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def _first_card(app, pilot) -> None:
    from prep.tui.screens.review import ReviewScreen

    await pilot.press("enter")  # home -> the first card
    await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen))
    await pilot.pause()


# --- undo: offered only when it would do something, and u always answers -------------------


@async_test
async def test_undo_is_not_offered_on_the_first_card_and_u_says_why() -> None:
    """`u Undo` was in the footer of a session's first card, with nothing to undo; the footer
    offers it once a rating or mark is made, and u before that says so in one line."""
    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await _first_card(app, pilot)
        assert "u" not in drawn_keys(app)
        await pilot.press("space")  # revealed: still nothing to undo
        await pilot.pause()
        assert "u" not in drawn_keys(app)
        await pilot.press("u")
        await pilot.pause()
        said = [n for n in notes(app) if "undo" in n.lower()]
        assert said == ["Nothing to undo yet: u undoes this session's last rating or mark."]
        await pilot.press("3")  # rated: now u undoes it
        await wait_until(pilot, lambda: bool(app.screen.session.done))
        await pilot.pause()
        assert "u" in drawn_keys(app)
        await pilot.press("u")
        await wait_until(pilot, lambda: not app.screen.session.done)
        await pilot.pause()
        assert "u" not in drawn_keys(app)  # back to nothing to undo


@async_test
async def test_a_flag_is_offered_for_undo_at_once() -> None:
    """f flags the card on screen (it stays); the footer then offers u, which unflags it."""
    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await _first_card(app, pilot)
        card = app.screen.card
        await pilot.press("f")
        await pilot.pause()
        assert "u" in drawn_keys(app)
        await pilot.press("u")
        await pilot.pause()
        assert not app.screen.session.store.mark(card.id).flagged
        assert "u" not in drawn_keys(app)


@async_test
async def test_the_summary_says_when_there_is_nothing_to_undo() -> None:
    """At the end of a session that rated nothing (every card buried, then undone, or an empty
    queue) u answers in one line instead of doing nothing."""
    from prep.tui.screens.summary import SummaryScreen

    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await _first_card(app, pilot)
        app.screen.session.queue.clear()  # (the queue done: the summary comes next)
        app.screen.show_card()
        await wait_until(pilot, lambda: isinstance(app.screen, SummaryScreen))
        await pilot.pause()
        assert "u" not in drawn_keys(app)
        await pilot.press("u")
        await pilot.pause()
        assert "Nothing to undo yet: u undoes this session's last rating or mark." in notes(app)
