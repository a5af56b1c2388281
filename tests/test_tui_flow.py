"""Pilot tests of the daily study flow (issue 14): the highlighted deck is the one every key
acts on, one back/quit convention, help at the current screen's section, the mock's guards."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable

from prep.tui.screens.home import HomeScreen
from prep.tui.screens.review import ReviewScreen
from prep.tui.testing import make_app
from tests.test_tui import async_test

pytestmark = pytest.mark.usefixtures("utc_local_time")


@async_test
async def test_c_m_and_enter_act_on_the_highlighted_deck_and_the_cursor_stays(
    tmp_path: Path,
) -> None:
    from prep.tui.screens.cram import CramScreen
    from prep.tui.screens.mock import MockScreen

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.screen.query_one("#decks", DataTable)
        await pilot.press("down", "down")  # all decks, wo-core, [wo-sums]
        await pilot.press("c")
        assert isinstance(app.screen, CramScreen)
        assert app.screen.current_deck() == "wo-sums"
        await pilot.press("escape")
        assert isinstance(app.screen, HomeScreen)
        assert table.cursor_row == 2
        await pilot.press("up")  # wo-core
        await pilot.press("m")
        assert isinstance(app.screen, MockScreen)
        assert app.screen.mock is not None
        assert {step.card.deck for step in app.screen.mock.steps} == {"wo-core"}
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        assert table.cursor_row == 1
        await pilot.press("enter")
        assert isinstance(app.screen, ReviewScreen)
        assert app.screen.card.deck == "wo-core"
        await pilot.press("escape")
        assert table.cursor_row == 1
        await pilot.press("up", "s")  # all decks, then stats and back: still all decks
        await pilot.press("escape")
        assert isinstance(app.screen, HomeScreen)
        assert table.cursor_row == 0
        assert app.selected_deck is None
