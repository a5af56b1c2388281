"""The command palette and the app's keys open screens through the one registry
(tui/screens/registry.py): each registered command is offered and opens its screen, once."""

from __future__ import annotations

import asyncio

import pytest

from prep.tui.screens.registry import commands
from prep.tui.testing import make_app

pytestmark = pytest.mark.usefixtures("utc_local_time")


def test_the_palette_offers_and_opens_every_registered_screen() -> None:
    async def run() -> None:
        app = make_app()
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            home = app.screen
            offered = {c.title: c for c in app.get_system_commands(app.screen)}
            for spec in commands():
                assert spec.command is not None
                command = offered[spec.command[0]]  # the registry's title, as registered
                assert command.help == spec.command[1]
                command.callback()
                await pilot.pause()
                assert type(app.screen).__name__ == spec.cls
                command.callback()  # a second time: not opened over itself
                await pilot.pause()
                assert type(app.screen).__name__ == spec.cls
                assert type(app.screen_stack[-2]).__name__ != spec.cls
                while app.screen is not home:
                    app.pop_screen()
                    await pilot.pause()

    asyncio.run(run())
