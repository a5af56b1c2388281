"""A backup copy can be stopped (q in the app, Ctrl-C on the command line): it is copied in steps
(engine/store/backup.py STEP_PAGES), and a stop between two steps removes the half copy and touches
nothing else (one step of gigabytes could not be stopped until it ended). And `prep backup
--restore` of a backup of an older schema upgrades it the way every other open does: the room
checked first (too little: nothing changed), the backup copy made."""

from __future__ import annotations

import shutil
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.engine.store import SCHEMA_VERSION, Store, backup
from prep.tui.app import PrepApp
from prep.tui.cli import main
from tests.test_fill_stop import quit_inside
from tests.test_migration_v5 import v3_database
from tests.test_upgrade_space import free_bytes, version_of

pytestmark = pytest.mark.usefixtures("utc_local_time")


def padded(db: Path, megabytes: int) -> None:
    """Room for many steps: a table of blobs (the copy's pages)."""
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE padding (b BLOB)")
    conn.executemany("INSERT INTO padding VALUES (randomblob(1000000))", [()] * megabytes)
    conn.commit()
    conn.close()


def steps_that(monkeypatch: pytest.MonkeyPatch, each) -> list[int]:  # noqa: ANN001
    """Wrap the copy's step check: ``each(n)`` runs before the n-th step's own check."""
    seen: list[int] = []
    real = backup._stop_check

    def wrapped(stop, target):  # noqa: ANN001, ANN202
        check = real(stop, target)

        def step(*args):  # noqa: ANN002, ANN202
            seen.append(len(seen) + 1)
            each(len(seen))
            check(*args)

        return step

    monkeypatch.setattr(backup, "_stop_check", wrapped)
    return seen


def files_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_a_copy_stops_between_steps_and_leaves_no_half_file(tmp_path: Path) -> None:
    db = tmp_path / "prep.db"
    with Store.open(db) as store:
        padded(db, 12)  # 12 MB: three steps
        before = db.read_bytes()
        asked: list[int] = []
        with pytest.raises(backup.BackupStopped, match="stopped"):
            backup.make(store, "manual", stop=lambda: asked.append(1) or len(asked) >= 2)
        assert len(asked) == 2  # stopped after the second step, not after the whole copy
        assert files_in(backup.folder(db)) == []  # no half copy, no backup
        assert backup.make(store, "manual") is not None  # and the next one is whole
    assert db.read_bytes() == before


def test_ctrl_c_during_prep_backup_removes_the_half_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "prep.db"
    Store.open(db).close()
    padded(db, 12)
    before = db.read_bytes()

    def interrupt(n: int) -> None:
        if n == 2:  # Ctrl-C arrives while the copy runs: raised between two steps
            raise KeyboardInterrupt

    steps = steps_that(monkeypatch, interrupt)
    result = CliRunner().invoke(main, ["--db", str(db), "backup"])
    assert result.exit_code in (1, 130) and "Traceback" not in result.output, result.output
    assert steps == [1, 2]
    assert files_in(backup.folder(db)) == []
    assert db.read_bytes() == before


def test_q_stops_the_apps_upgrade_copy_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prep.tui.screens.upgrade import UpgradeScreen

    db = tmp_path / "v3.db"
    v3_database(db)
    padded(db, 4)
    before = db.read_bytes()
    monkeypatch.setattr(backup, "STEP_PAGES", 1)  # ~1,000 steps of 5 ms: 5 s of copying
    entered = threading.Event()

    def slow(n: int) -> None:
        entered.set()
        time.sleep(0.005)

    steps = steps_that(monkeypatch, slow)
    waited = quit_inside(PrepApp(db=str(db)), entered, UpgradeScreen)
    assert waited < 3.0, waited
    assert 0 < len(steps) < 900, len(steps)  # stopped well before the copy's end
    assert files_in(backup.folder(db)) == []  # the half copy removed
    assert version_of(db) == 3 and db.read_bytes() == before  # nothing else touched


def _older_backup(tmp_path: Path) -> tuple[Path, str]:
    db = tmp_path / "data" / "prep.db"
    db.parent.mkdir()
    with Store.open(db):
        pass
    name = "prep-20250101-000000-000000-manual.db"
    where = backup.folder(db)
    where.mkdir(exist_ok=True)
    v3_database(where / name)
    return db, name


def test_restoring_an_older_backup_without_room_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, name = _older_backup(tmp_path)
    before, listed = db.read_bytes(), files_in(backup.folder(db))
    asked = free_bytes(monkeypatch, 1000)
    result = CliRunner().invoke(main, ["--db", str(db), "backup", "--restore", name])
    assert asked  # the room was asked for (it was not: restored and upgraded regardless)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "not restored" in lines[0] and "free space" in lines[0], lines
    assert db.read_bytes() == before and version_of(db) == SCHEMA_VERSION
    assert files_in(backup.folder(db)) == listed


def test_restoring_an_older_backup_upgrades_as_every_open_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, name = _older_backup(tmp_path)
    free_bytes(monkeypatch, 10**11)
    called: list[int | None] = []
    real = backup.before_upgrading

    def spy(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        called.append(real(*args, **kwargs))
        return called[-1]

    monkeypatch.setattr(backup, "before_upgrading", spy)
    result = CliRunner().invoke(main, ["--db", str(db), "backup", "--restore", name])
    assert result.exit_code == 0, result.output
    assert 3 in called  # the restored v3 content went through the one upgrade path
    assert version_of(db) == SCHEMA_VERSION
    kinds = [p.name.rsplit("-", 1)[1] for p in backup.listing(db)]
    assert "upgrade.db" in kinds and "restore.db" in kinds
    shutil.rmtree(backup.folder(db))


def test_quitting_the_app_stops_its_daily_backup_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from prep.tui.testing import make_app

    db = tmp_path / "prep.db"
    Store.open(db).close()
    padded(db, 4)
    monkeypatch.setattr(backup, "STEP_PAGES", 1)  # ~1,000 steps of 5 ms: 5 s of copying
    entered = threading.Event()

    def slow(n: int) -> None:
        entered.set()
        time.sleep(0.005)

    steps = steps_that(monkeypatch, slow)
    store = Store.open(db)
    app = make_app(store=store)

    async def run() -> float:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("enter")  # the first card: the thread starts (the daily backup)
            assert await asyncio.to_thread(entered.wait, 60)
            started = time.monotonic()
            await pilot.press("ctrl+c")
        return time.monotonic() - started

    waited = asyncio.run(run())
    thread = app.syncer._thread
    assert thread is not None and not thread.is_alive()  # stopped, not left copying
    assert waited < 3.0 and len(steps) < 900, (waited, len(steps))
    assert files_in(backup.folder(db)) == []  # no half copy left by the quit
    store.close()


def test_a_commit_from_another_connection_during_the_copy_neither_restarts_nor_tears_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Stepped, a copy restarts at every other connection's commit (a daily backup while the
    # app rates: never done); under one read snapshot it is the database of one moment.
    db = tmp_path / "prep.db"
    with Store.open(db) as store:
        padded(db, 12)
        other = sqlite3.connect(db, isolation_level=None)
        steps = steps_that(
            monkeypatch,
            lambda n: other.execute("INSERT INTO padding VALUES (randomblob(1000000))"),
        )
        made = backup.make(store, "manual")
        other.close()
    assert made is not None and len(steps) <= 4  # 12 MB in 4 MB steps: no restart
    copy = sqlite3.connect(made)
    assert copy.execute("SELECT count(*) FROM padding").fetchone()[0] == 12
    copy.close()
