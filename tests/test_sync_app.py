"""The app's sync (sync_dir set): in the background once the first card is on screen,
applied between cards, the summary line shown in a status line that stays, and one more sync
on quit."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest

from prep.engine.store import Store
from prep.engine.store import devices as local
from prep.engine.sync.run import sync
from prep.tui.screens.home import HomeScreen
from prep.tui.screens.review import ReviewScreen
from prep.tui.testing import NOW, fixed_collection, make_app
from prep.tui.widgets.syncline import SyncLine
from tests.test_sync import rate
from tests.test_tui import async_test

pytestmark = pytest.mark.usefixtures("utc_local_time")


async def sync_read(app) -> None:
    """Wait for the app's sync thread to be done reading (the event it sets, however loaded the
    machine; the loop keeps running meanwhile, so a failure it reports reaches the screen)."""
    assert await asyncio.to_thread(app.syncer.fetched.wait, 120), "the sync thread never ended"
    await asyncio.sleep(0)


def line_of(screen) -> str:
    widget = screen.query_one(SyncLine)
    return str(widget.render()) if widget.display else ""


@async_test
async def test_app_syncs_in_the_background_between_cards_and_on_quit(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    card_ids = [c.id for c in fixed_collection().cards]
    with Store.open(tmp_path / "b.db") as b:  # the other machine studied the last card
        local.set_name(b.conn, "laptop")
        rate(b, card_ids[-1], 3, NOW - timedelta(days=1))
        sync(b, folder)
    a = Store.open(tmp_path / "a.db")
    a.set_meta("sync_dir", str(folder))
    app = make_app(store=a)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen) and line_of(app.screen) == ""
        await pilot.press("enter")  # study: the first card is shown, then the sync starts
        assert isinstance(app.screen, ReviewScreen)
        await sync_read(app)  # the thread reads the folder
        assert app.syncer.pending is not None
        assert a.card(card_ids[-1]) is None  # nothing applied under the card shown
        await pilot.press("space", "3")  # rated: the next card comes, after the sync applied
        await pilot.pause()
        assert a.card(card_ids[-1]) is not None
        shown = line_of(app.screen)
        assert shown.startswith("Synced ")
        assert "received 1 review from laptop, 1 card rescheduled" in shown
        await pilot.press("space", "3")  # another card: the line stays
        await pilot.pause()
        assert line_of(app.screen) == shown
        await pilot.press("escape")  # home: the same line there
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen) and line_of(app.screen) == shown
        await pilot.press("ctrl+c")
        await pilot.pause()
    me = local.device_id(a.conn)
    assert list((folder / me).glob("*.jsonl")), "the quit's sync wrote this device's journal"
    assert a.count_reviews() == 3
    a.close()


@async_test
async def test_a_failed_sync_says_so_in_the_line(tmp_path: Path) -> None:
    a = Store.open(tmp_path / "a.db")
    a.set_meta("sync_dir", str(tmp_path / "gone"))  # the folder is not there
    app = make_app(store=a)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("enter")
        await sync_read(app)
        await pilot.pause()
        assert "Sync failed:" in line_of(app.screen) and "no such folder" in line_of(app.screen)
        await pilot.press("ctrl+c")
    a.close()


@async_test
async def test_a_copied_database_says_so_in_the_line(tmp_path: Path) -> None:
    import shutil

    folder = tmp_path / "shared"
    folder.mkdir()
    card_ids = [c.id for c in fixed_collection().cards]
    Store.open(tmp_path / "b.db").close()
    shutil.copy(tmp_path / "b.db", tmp_path / "a.db")  # a is a copy of b: one device id
    with Store.open(tmp_path / "b.db") as b:
        rate(b, card_ids[-1], 3, NOW - timedelta(days=1))
        sync(b, folder)
    a = Store.open(tmp_path / "a.db")
    old = local.device_id(a.conn)
    a.set_meta("sync_dir", str(folder))
    app = make_app(store=a)
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.press("enter")
        await sync_read(app)
        await pilot.press("space", "3")
        await pilot.pause()
        shown = line_of(app.screen)
        assert "this database is a copy of another" in shown and "received 1 review" in shown
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert local.device_id(a.conn) != old and a.card(card_ids[-1]) is not None
    a.close()


@async_test
async def test_what_a_sync_must_tell_reaches_the_line_not_only_the_cli(tmp_path: Path) -> None:
    """A review passed on that differs from the one held (a clash replaced.py settles): the
    line `prep sync` prints before its summary is in the app's sync line too, as a warning
    (before: the summary alone, nothing said)."""
    from tests.test_sync_replaced import _relay

    folder = tmp_path / "shared"
    folder.mkdir()
    card_ids = [c.id for c in fixed_collection().cards]
    with Store.open(tmp_path / "b.db") as b:
        local.set_name(b.conn, "laptop")
        rate(b, card_ids[-1], 3, NOW - timedelta(days=1))
        written = sync(b, folder).journal
        assert written is not None
        a = Store.open(tmp_path / "a.db")
        sync(a, folder)  # a holds b's review as b's journal has it
        _relay(folder, b, written, at_shift=7)  # e passes on another review under its id
    a.set_meta("sync_dir", str(folder))
    app = make_app(store=a)
    async with app.run_test(size=(200, 30)) as pilot:
        await pilot.press("enter")
        await sync_read(app)
        await pilot.press("space", "3")
        await pilot.pause()
        shown = line_of(app.screen)
        assert "differ from the ones held under their ids" in shown, shown
        assert shown.endswith("received no review, 0 cards rescheduled")  # the summary last
        assert app.screen.query_one(SyncLine).has_class("-warning")
        await pilot.press("ctrl+c")
        await pilot.pause()
    a.close()
