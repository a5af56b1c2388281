"""The app's background sync and the session on screen: a card studied on another machine
leaves this session's queue once the sync is applied between two cards, and the top bar's three
numbers agree with home's again (user11's pass: they kept the numbers from before the sync and
served the other machine's cards again, early)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest

from prep.engine.store import Store
from prep.engine.study.session import build_queue, deck_counts
from prep.engine.sync.run import sync
from prep.tui.screens.review import ReviewScreen
from prep.tui.testing import NOW, fixed_collection, make_app
from tests.pilot import async_test, wait_until
from tests.test_sync import rate

pytestmark = pytest.mark.usefixtures("utc_local_time")


async def reveal_and_rate(pilot, app, key: str = "3") -> None:
    await pilot.press("space")
    if not app.screen.revealed:  # a red flag shows its choices first
        await pilot.press("space")
    await pilot.press(key)


@async_test
async def test_cards_studied_elsewhere_leave_the_session_when_the_sync_lands(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    coll = fixed_collection()
    a = Store.open(tmp_path / "a.db")
    a.set_meta("sync_dir", str(folder))
    queue = build_queue(a, coll, NOW).ids
    elsewhere = queue[1:3]  # this session's second and third cards, studied on b: Easy
    with Store.open(tmp_path / "b.db") as b:
        for cid in elsewhere:
            rate(b, cid, 4, NOW - timedelta(hours=1))
        sync(b, folder)
    app = make_app(store=a, collection=coll, clock=lambda: NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen))
        screen = app.screen
        first = screen.card.id
        assert first == queue[0]
        before = screen.session.counts()
        assert await asyncio.to_thread(app.syncer.fetched.wait, 120)
        await reveal_and_rate(pilot, app)
        await wait_until(pilot, lambda: screen.card is not None and screen.card.id != first)
        assert all(a.card(cid) is not None for cid in elsewhere)  # applied
        session = screen.session
        assert screen.card.id not in elsewhere  # not served again, days early
        assert not set(elsewhere) & set(session.queue)
        home = deck_counts(a, coll, NOW, per_deck=False)[0]
        assert session.counts() == (home.new, home.learning, home.due)
        assert session.counts()[0] == before[0] - 1 - len(elsewhere)
        # undo still brings the card rated here back, in front
        await pilot.press("u")
        await wait_until(pilot, lambda: screen.card is not None and screen.card.id == first)
        await pilot.press("ctrl+c")
    a.close()
