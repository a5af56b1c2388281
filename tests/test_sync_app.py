"""The app's sync (sync_dir set): in the background after the first screen, applied between
cards, the summary line shown, and one more sync on quit."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest

from prep.engine.store import Store
from prep.engine.store import devices as local
from prep.engine.sync.run import sync
from prep.tui.screens.review import ReviewScreen
from prep.tui.testing import NOW, fixed_collection, make_app
from tests.test_sync import rate
from tests.test_tui import async_test

pytestmark = pytest.mark.usefixtures("utc_local_time")


@async_test
async def test_app_syncs_in_the_background_between_cards_and_on_quit(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    card_ids = [c.id for c in fixed_collection().cards]
    with Store.open(tmp_path / "b.db") as b:  # the other machine studied the last card
        rate(b, card_ids[-1], 3, NOW - timedelta(days=1))
        sync(b, folder)
    a = Store.open(tmp_path / "a.db")
    a.set_meta("sync_dir", str(folder))
    app = make_app(store=a)
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(200):  # the thread reads the folder
            if app.syncer.pending is not None:
                break
            await asyncio.sleep(0.02)
        assert app.syncer.pending is not None
        await pilot.press("enter")  # study: the first card is shown
        assert isinstance(app.screen, ReviewScreen)
        await pilot.press("space", "3")  # rated: the next card comes, after the sync applied
        await pilot.pause()
        assert app.syncer.last_line is not None and "received 1 review" in app.syncer.last_line
        assert a.card(card_ids[-1]) is not None
        await pilot.press("ctrl+c")
        await pilot.pause()
    me = local.device_id(a.conn)
    assert list((folder / me).glob("*.jsonl")), "the quit's sync wrote this device's journal"
    assert a.count_reviews() == 2
    a.close()
