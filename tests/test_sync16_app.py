"""The app's sync line says what `prep sync` says of sync16's cases: a device's journal file
missing with later ones there; a sync folder that does not answer (then no sync on quit)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from prep.engine.store import Store
from prep.engine.store import devices as local
from prep.engine.sync.run import sync
from prep.tui.appsync import QUIT_LOOK_S
from prep.tui.testing import NOW, fixed_collection, make_app
from prep.tui.widgets.syncline import SyncLine
from tests.test_sync import rate
from tests.test_sync_app import line_of, sync_read
from tests.test_tui import async_test

pytestmark = pytest.mark.usefixtures("utc_local_time")


@async_test
async def test_a_missing_file_is_named_in_the_apps_sync_line(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    card = fixed_collection().cards[-1].id
    a = Store.open(tmp_path / "a.db")
    with Store.open(tmp_path / "b.db") as b:
        local.set_name(b.conn, "laptop")
        for i in range(3):
            rate(b, card, 3, NOW - timedelta(days=3 - i))
            sync(b, folder)
            if i == 0:
                sync(a, folder)
        second = folder / local.device_id(b.conn) / "00000002.jsonl"
    second.unlink()
    a.set_meta("sync_dir", str(folder))
    app = make_app(store=a)
    async with app.run_test(size=(400, 30)) as pilot:
        await pilot.press("enter")
        await sync_read(app)
        await pilot.press("space", "3")
        await pilot.pause()
        shown = line_of(app.screen)
        # (before: "Synced HH:MM: sent 1 review, received no review, …", no warning)
        assert f"{second}: missing, and the 1 journal file of laptop after it wait" in shown
        assert app.screen.query_one(SyncLine).has_class("-warning")
        await pilot.press("ctrl+c")
        await pilot.pause()
    a.close()


@async_test
async def test_a_folder_that_does_not_answer_is_said_and_not_synced_on_quit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    looked: list[tuple[Path, float | None]] = []

    def unanswered(root: Path, timeout: float | None = None) -> str:
        looked.append((root, timeout))
        return f"{root}: did not answer for 30 s (…)"

    monkeypatch.setattr("prep.engine.sync.watch.unanswered", unanswered)
    a = Store.open(tmp_path / "a.db")
    rate(a, fixed_collection().cards[-1].id, 3, NOW - timedelta(days=1))
    a.set_meta("sync_dir", str(folder))
    app = make_app(store=a)
    async with app.run_test(size=(200, 30)) as pilot:
        await pilot.press("enter")
        await sync_read(app)
        await pilot.pause()
        assert line_of(app.screen) == f"Sync failed: {folder}: did not answer for 30 s (…)"
        await pilot.press("ctrl+c")
        await pilot.pause()
    # at quit a short look again (a share that came back would take the session's ratings),
    # not another 30 s: still no answer, so no sync
    assert looked == [(folder, None), (folder, QUIT_LOOK_S)]
    assert list(folder.iterdir()) == []  # nothing written there
    a.close()


@async_test
async def test_a_folder_that_answers_again_by_quit_takes_the_sessions_ratings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A share that stalled at start and came back (a laptop resumed, a mount reconnected):
    the sync at quit sends what the session rated (before: skipped for the whole session)."""
    from prep.engine.sync import watch

    folder = tmp_path / "shared"
    folder.mkdir()
    real = watch.unanswered
    stalls = [f"{folder}: did not answer for 30 s (…)"]  # the start's look only

    def unanswered(root: Path, timeout: float | None = None) -> str | None:
        return stalls.pop() if stalls else real(root, timeout)

    monkeypatch.setattr("prep.engine.sync.watch.unanswered", unanswered)
    a = Store.open(tmp_path / "a.db")
    a.set_meta("sync_dir", str(folder))
    app = make_app(store=a)
    async with app.run_test(size=(200, 30)) as pilot:
        await pilot.press("enter")
        await sync_read(app)
        await pilot.pause()
        assert line_of(app.screen).startswith("Sync failed:")
        await pilot.press("space", "3")  # a rating this session
        await pilot.pause()
        await pilot.press("ctrl+c")
        await pilot.pause()
    (mine,) = [p for p in folder.iterdir() if p.name == local.device_id(a.conn)]
    assert sorted(f.name for f in mine.glob("*.jsonl")) == ["00000001.jsonl"]
    assert '"r"' in (mine / "00000001.jsonl").read_text()  # the rating went out
    a.close()
