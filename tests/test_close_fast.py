"""A screen closed in the tick it opened (keys faster than screens open: `c` then Esc in one
read from tmux or a paste) closes cleanly instead of ending the app with NoMatches: the cram
and mock screens' on_mount, and Textual's own Header on stats and the demo list, found their
widgets half removed (tui/closing.py)."""

from __future__ import annotations

import asyncio

import pytest

from prep.tui.testing import make_app

SCREENS = ["cram", "stats", "demos", "mock", "help"]


async def _open_and_close(name: str) -> None:
    app = make_app()
    async with app.run_test(size=(78, 20)) as pilot:
        await pilot.pause()
        below = list(app.screen_stack)
        app.open_screen(name)
        opened = app.screen
        assert type(opened).__name__ != type(below[-1]).__name__
        opened.dismiss()  # Esc in the same tick
        await pilot.pause(0.3)
        await pilot.pause()
        assert app.screen_stack == below  # it closed, and only it
        assert not opened.is_attached  # and its widgets are gone (removed once mounted)
        assert not app.is_screen_installed(opened)  # kept only until then
        assert app.is_running and app.return_code is None


@pytest.mark.parametrize("name", SCREENS)
def test_a_screen_closed_as_it_opens_closes(name: str) -> None:
    asyncio.run(_open_and_close(name))


async def _switch_while_opening() -> None:
    app = make_app()
    async with app.run_test(size=(78, 20)) as pilot:
        await pilot.pause()
        app.open_screen("stats")
        opening = app.screen
        app.switch_screen(type(opening)())  # replaced in the tick it opened
        await pilot.pause(0.3)
        await pilot.pause()
        assert not opening.is_attached and not app.is_screen_installed(opening)
        assert app.is_running and app.return_code is None


def test_a_screen_switched_away_as_it_opens_is_removed_once_mounted() -> None:
    asyncio.run(_switch_while_opening())


def test_the_app_overrides_no_private_textual_method() -> None:
    """Textual's private methods change without notice: the app uses its public API
    (tui/closing.py overrode ``App._replace_screen`` until round 12)."""
    import inspect

    from textual.app import App

    from prep.tui.app import PrepApp

    private = [
        name
        for klass in PrepApp.__mro__
        if klass.__module__.startswith("prep.")
        for name, value in vars(klass).items()
        if inspect.isfunction(value) and name.startswith("_") and not name.startswith("__")
        if hasattr(App, name)
    ]
    assert private == []
