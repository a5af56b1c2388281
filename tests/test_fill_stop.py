"""The deck cache's fill thread (tui/filling.py) stops promptly on q and never hands its work to
the UI thread (round eight's loose ends): q during one long statement (the reconciliation's
whole-collection "removed" UPDATE at a million cards) waited for the statement to end, since
the thread saw the stop only between steps; and a thread that met another prep's write lock
fell back to a private cache, threw it away, and the UI thread parsed every deck again. Now the
statement is stopped inside SQLite and rolled back (nothing lost, the next open does it), and
a busy database is waited for in the thread, said on the screen, q still prompt."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from prep.engine.store import Store
from prep.engine.store import reconcile as reconcile_module
from prep.tui import startup as startup_module
from prep.tui.app import PrepApp
from prep.tui.screens.fill import FillScreen
from prep.tui.screens.home import HomeScreen
from tests.test_open_offthread import reconciled, reviews, states, studied, write_decks

pytestmark = pytest.mark.usefixtures("utc_local_time")

# ~15 s of one statement on this machine (30M rows of a recursive CTE): what a stop must cut
LONG = (
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 30000000) "
    "SELECT count(*) FROM r"
)


def quit_inside(app: PrepApp, entered: threading.Event, screen: type) -> float:
    """Run `app` until a hooked long statement has begun (`entered`) behind `screen`, press q
    well inside it, and return the seconds from q until the app and its thread have ended."""
    quit_at: list[float] = []

    async def run() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            for _ in range(400):
                if entered.is_set():
                    break
                await pilot.pause(0.05)
            assert entered.is_set() and isinstance(app.screen, screen)
            await pilot.pause(0.2)  # (well inside the statement)
            quit_at.append(time.monotonic())
            await pilot.press("q")

    asyncio.run(run())
    return time.monotonic() - quit_at[0]


def test_q_stops_one_long_statement_at_once_and_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decks = write_decks(tmp_path / "decks")
    db = tmp_path / "p.db"
    kept, gone = studied(db, decks)
    before = reviews(db)
    monkeypatch.setattr(startup_module, "FILL_SCREEN_BYTES", 1)  # the test decks count as large
    entered = threading.Event()
    spent: list[float] = []
    real = reconcile_module.reconcile

    def slow(conn, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        entered.set()
        start = time.monotonic()
        try:  # inside the reconciliation's transaction, as its "removed" UPDATE is
            conn.execute(LONG).fetchone()
        finally:
            spent.append(time.monotonic() - start)
        return real(conn, *args, **kwargs)

    monkeypatch.setattr(reconcile_module, "reconcile", slow)
    app = PrepApp(db=str(db), questions=[decks], include_bundled=False, demos={})
    waited = quit_inside(app, entered, FillScreen)  # (returns once the fill's thread has ended)
    assert spent and spent[0] < 5.0, spent  # the statement itself was cut short
    assert waited < 5.0, waited
    # rolled back: nothing lost, and still to do
    assert reviews(db) == before
    assert states(db)[kept] == 1 and states(db)[gone] == 0
    assert not reconciled(db, decks)
    monkeypatch.undo()
    monkeypatch.setattr(startup_module, "FILL_SCREEN_BYTES", 1)
    again = PrepApp(db=str(db), questions=[decks], include_bundled=False, demos={})

    async def finish() -> None:
        async with again.run_test(size=(100, 30)) as pilot:
            for _ in range(400):
                if isinstance(again.screen, HomeScreen) and reconciled(db, decks):
                    break
                await pilot.pause(0.05)
            await pilot.pause(0.2)

    asyncio.run(finish())
    assert reconciled(db, decks) and states(db)[kept] == 0 and states(db)[gone] == 1
    assert reviews(db) == before


@pytest.mark.parametrize("then", ["released", "quit"])
def test_a_busy_database_is_waited_for_in_the_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, then: str
) -> None:
    """Another prep holds the write lock while the fill must write: the screen says it waits,
    the UI thread stays free and parses nothing; once the lock is released the thread
    finishes (or q quits at once, the lock still held)."""
    decks = write_decks(tmp_path / "decks")
    db = tmp_path / "p.db"
    kept, gone = studied(db, decks)
    monkeypatch.setattr(startup_module, "FILL_SCREEN_BYTES", 1)
    private: list[str] = []
    real_private = Store.deck_cache_private

    def record(self) -> None:  # noqa: ANN001
        private.append(threading.current_thread().name)
        real_private(self)

    monkeypatch.setattr(Store, "deck_cache_private", record)
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another prep, writing
    app = PrepApp(db=str(db), questions=[decks], include_bundled=False, demos={})
    seen: dict[str, object] = {}

    async def run() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            for _ in range(400):
                if isinstance(app.screen, FillScreen) and app.screen.line.startswith("Waiting"):
                    break
                await pilot.pause(0.05)
            assert isinstance(app.screen, FillScreen)
            seen["line"] = app.screen.line
            if then == "quit":
                seen["q"] = time.monotonic()
                await pilot.press("q")
                return
            other.execute("ROLLBACK")
            for _ in range(400):
                if isinstance(app.screen, HomeScreen):
                    break
                await pilot.pause(0.05)
            seen["home"] = isinstance(app.screen, HomeScreen)
            await pilot.pause(0.2)

    try:
        asyncio.run(run())
        if then == "quit":
            assert time.monotonic() - float(seen["q"]) < 3.0  # not the 5 s busy timeout
    finally:
        if other.in_transaction:
            other.execute("ROLLBACK")
        other.close()
    assert str(seen["line"]).startswith("Waiting: another prep is writing")
    assert private == []  # no private cache, in the thread or on the UI thread
    if then == "released":
        assert seen["home"] is True
        assert reconciled(db, decks)
        assert states(db)[kept] == 0 and states(db)[gone] == 1
    else:
        assert not reconciled(db, decks)


def test_q_stops_a_long_statement_of_the_apps_upgrade_and_it_is_rolled_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The upgrade's thread likewise: a statement of the upgrade (an index built over the
    whole log, say) is stopped inside SQLite; the upgrade's one transaction rolls back."""
    from prep.engine.store import core, schema
    from prep.tui.screens.upgrade import UpgradeScreen
    from tests.test_migration_v5 import v3_database
    from tests.test_upgrade_space import version_of

    db = tmp_path / "v3.db"
    v3_database(db)
    entered = threading.Event()
    spent: list[float] = []
    last = schema.MIGRATIONS[-1]

    def slow(db_, tracker=None):  # noqa: ANN001, ANN202
        entered.set()
        start = time.monotonic()
        try:
            db_.execute(LONG).fetchone()
        finally:
            spent.append(time.monotonic() - start)
        last(db_, tracker)

    monkeypatch.setattr(core, "MIGRATIONS", [*schema.MIGRATIONS[:-1], slow])
    waited = quit_inside(PrepApp(db=str(db)), entered, UpgradeScreen)
    assert spent and spent[0] < 5.0, spent
    assert waited < 5.0
    assert version_of(db) == 3  # rolled back: the next open upgrades it
