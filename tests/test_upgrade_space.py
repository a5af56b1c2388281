"""An upgrade makes a backup copy of the database first: both need room. Too little free
space is said in one line before anything is written (how much is needed, how much is free,
where): the command exits 2, the app shows an error screen, and the database, its folder and
its backups stay as they were. Free space comes from a monkeypatched disk_usage."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from collections import namedtuple
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.engine.store import SCHEMA_VERSION, backup
from prep.tui.cli import main
from tests.test_migration_v5 import v3_database

Usage = namedtuple("Usage", "total used free")


@pytest.fixture(scope="module")
def v3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("v3") / "v3.db"
    v3_database(path)
    return path


@pytest.fixture
def copy(v3: Path, tmp_path: Path) -> Path:
    work = tmp_path / "data" / "prep.db"
    work.parent.mkdir()
    shutil.copyfile(v3, work)
    return work


def free_bytes(monkeypatch: pytest.MonkeyPatch, free: int) -> list[str]:
    asked: list[str] = []

    def disk_usage(path):  # noqa: ANN001, ANN202
        asked.append(str(path))
        return Usage(10**12, 10**12 - free, free)

    monkeypatch.setattr(backup.shutil, "disk_usage", disk_usage)
    return asked


def version_of(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0])
    finally:
        conn.close()


def test_the_space_needed_is_the_copy_and_for_a_rewrite_the_database_again(copy: Path) -> None:
    size = copy.stat().st_size
    [(where, needed, _)] = backup.upgrade_space(copy, 3)  # (one file system)
    assert where == copy.parent and needed == 2 * size + backup.SPACE_MARGIN
    [(_, needed, _)] = backup.upgrade_space(copy, 14)  # no rewrite of the log: the copy
    assert needed == size + backup.SPACE_MARGIN


def test_the_cli_refuses_in_one_line_and_changes_nothing(
    copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = copy.read_bytes()
    asked = free_bytes(monkeypatch, 1000)
    result = CliRunner().invoke(main, ["--db", str(copy), "quiz", "--plain"], input="q\n")
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output
    line = lines[0]
    assert line.startswith(f"prep: {copy.parent}: not enough free space to upgrade")
    assert "1.0 kB are free" in line and "nothing was changed" in line
    needed = 2 * len(before) + backup.SPACE_MARGIN
    assert f"need {needed / 1e6:.1f} MB" in line
    assert asked  # the space was asked for, before anything was written
    assert copy.read_bytes() == before and version_of(copy) == 3
    assert not (copy.parent / "backups").exists()
    assert sorted(p.name for p in copy.parent.iterdir()) == ["prep.db"]


def test_with_room_the_cli_backs_up_and_upgrades(copy: Path, monkeypatch) -> None:

    free_bytes(monkeypatch, 10**11)
    monkeypatch.setattr(backup, "SAY_BACKUP_BYTES", 0)  # the small test database counts as big
    result = CliRunner().invoke(main, ["--db", str(copy), "quiz", "--plain"], input="q\n")
    assert result.exit_code == 0, result.output
    said = [x for x in result.stderr.splitlines() if "backing up" in x]
    assert said == [
        f"prep: backing up the progress database (0 MB) to {copy.parent / 'backups'} "
        "before the upgrade"
    ]
    assert version_of(copy) == SCHEMA_VERSION
    assert len(backup.listing(copy)) == 1


def test_the_app_shows_an_error_screen_and_changes_nothing(copy: Path, monkeypatch) -> None:
    from prep.tui.app import PrepApp
    from prep.tui.screens.errors import ErrorScreen

    before = copy.read_bytes()
    free_bytes(monkeypatch, 1000)
    app = PrepApp(db=str(copy))
    seen: dict[str, str] = {}

    async def run() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            for _ in range(400):
                if isinstance(app.screen, ErrorScreen):
                    break
                await pilot.pause(0.05)
            assert isinstance(app.screen, ErrorScreen)
            seen["title"] = app.screen.title_text
            seen["lines"] = "\n".join(app.screen.lines)
            assert app.store is None
            await pilot.pause(0.3)  # (the screen mounted before the app quits)
            await pilot.press("q")

    asyncio.run(run())
    assert "not enough free space to upgrade it" in seen["title"]
    assert "not enough free space to upgrade the progress database" in seen["lines"]
    assert copy.read_bytes() == before and version_of(copy) == 3
    assert not (copy.parent / "backups").exists()


def test_the_app_backs_up_before_it_upgrades(copy: Path, monkeypatch) -> None:
    from prep.tui.app import PrepApp
    from prep.tui.screens.home import HomeScreen

    free_bytes(monkeypatch, 10**11)
    app = PrepApp(db=str(copy))

    async def run() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            for _ in range(600):
                if isinstance(app.screen, HomeScreen):
                    break
                await pilot.pause(0.05)
            assert isinstance(app.screen, HomeScreen)
            await pilot.pause(0.3)  # (home mounted before the app quits)

    asyncio.run(run())
    assert version_of(copy) == SCHEMA_VERSION
    [made] = backup.listing(copy)
    conn = sqlite3.connect(made)
    try:  # the copy is of the database as it was before the upgrade
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
            "3",
        )
    finally:
        conn.close()
