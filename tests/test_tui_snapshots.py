"""Snapshots (pytest-textual-snapshot) of the main screens at 80x24 and 120x40.

Deterministic: fixed decks (no bundled ones), a fixed UTC clock and local time zone, fuzzing
off, a fixed demo list and a fake demo. Review the report before `--snapshot-update`.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from prep.engine.store import Store
from prep.tui.screens.demo import DemoScreen
from prep.tui.testing import add_history, fake_demo_command, make_app

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]


pytestmark = pytest.mark.usefixtures("utc_local_time")


@pytest.mark.parametrize("size", SIZES)
class TestScreens:
    def test_home(self, snap_compare, size) -> None:
        assert snap_compare(make_app(), terminal_size=size)

    def test_quiz_first_card(self, snap_compare, size) -> None:
        """`prep quiz`: the front of today's first card, with no home screen before it."""
        assert snap_compare(make_app(review_first=True), terminal_size=size)

    def test_revealed_card(self, snap_compare, size) -> None:
        assert snap_compare(make_app(), press=["enter", "space"], terminal_size=size)

    def test_choice_card_after_a_wrong_pick(self, snap_compare, size) -> None:
        press = ["down", "enter", "space", "4", "b"]  # the wo-core deck: a choice card second
        assert snap_compare(make_app(), press=press, terminal_size=size)

    def test_demo_after_a_run(self, snap_compare, size, tmp_path: Path) -> None:
        app = make_app(demo_command=fake_demo_command(tmp_path, "fail"))

        async def run_demo(pilot) -> None:
            await pilot.press("enter", "space", "r")
            deadline = time.monotonic() + 30
            while not (isinstance(app.screen, DemoScreen) and app.screen.exit_code is not None):
                assert time.monotonic() < deadline, "the fake demo did not finish"
                await pilot.pause(0.05)

        assert snap_compare(app, run_before=run_demo, terminal_size=size)

    def test_stats(self, snap_compare, size) -> None:
        store = Store.memory()
        app = make_app(store=store)
        add_history(store, app.collection)
        assert snap_compare(app, press=["s"], terminal_size=size)

    def test_help(self, snap_compare, size) -> None:
        assert snap_compare(make_app(), press=["question_mark"], terminal_size=size)
