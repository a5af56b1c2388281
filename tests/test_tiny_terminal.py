"""A terminal shrunk to a few columns with a list of options open (the command palette, the
demo picker) keeps the app running: at 4 or 6 columns Textual left the options no width and
Rich's wrap divided by zero (app.tcss gives every OptionList room for its options)."""

from __future__ import annotations

import asyncio

import pytest

from prep.tui.testing import make_app


@pytest.mark.parametrize("query", ["", "d"])
def test_the_command_palette_survives_any_width(query: str) -> None:
    async def run() -> None:
        app = make_app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("ctrl+p", *query)
            await pilot.pause()
            for width in range(1, 13):
                await pilot.resize_terminal(width, 12)
                await pilot.pause()
            await pilot.resize_terminal(80, 24)
            await pilot.pause()
            assert app.is_running and app.return_code is None

    asyncio.run(run())


def test_the_demo_picker_survives_any_width() -> None:
    from textual.widgets import OptionList

    from prep.tui.screens.demo_pick import DemoPick

    async def run() -> None:
        app = make_app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            names = [
                (name, f"the claim of {name}, long enough to wrap") for name in list(app.demos)[:3]
            ]
            app.push_screen(DemoPick(names))
            await pilot.pause()
            assert app.screen.query_one(OptionList).option_count == len(names)
            for width in range(1, 13):
                await pilot.resize_terminal(width, 12)
                await pilot.pause()
            assert app.is_running and app.return_code is None

    asyncio.run(run())
