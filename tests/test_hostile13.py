"""What cli13's hostile pass found, each test failing on the code before its fix."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.engine.store import Store, StoreError
from prep.engine.store.core import StoreCore
from prep.tui.cli import main


def _full(self, *args, **kwargs) -> None:  # noqa: ANN001, ANN002, ANN003 - StoreCore._migrate
    raise sqlite3.OperationalError("database or disk is full")


def test_a_new_database_that_cannot_be_made_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk while a new database's tables were made (`prep --db NEW config new_per_day
    5` on a full tmpfs, exit 2 "nothing saved") left a half-made NEW (4 KB) and the folders
    made for it: the next command took that file for the database."""
    monkeypatch.setattr(StoreCore, "_migrate", _full)
    db = tmp_path / "new" / "deeper" / "p.db"
    result = CliRunner().invoke(main, ["--db", str(db), "config", "new_per_day", "5"])
    assert result.exit_code == 2, result.output
    assert "nothing saved" in result.output or "disk is full" in result.output
    assert list(tmp_path.iterdir()) == []


def test_a_failed_open_of_an_existing_database_removes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        store.update_settings(new_per_day=4)
    monkeypatch.setattr(StoreCore, "_migrate", _full)
    with pytest.raises(StoreError):
        Store.open(db)
    monkeypatch.undo()
    with Store.open(db) as store:
        assert store.settings().new_per_day == 4


def _settings_of(db: Path) -> int:
    with Store.open(db) as store:
        return store.settings().new_per_day


@pytest.mark.parametrize("kind", ["empty", "foreign", "newer"])
def test_a_restore_of_a_file_that_is_no_prep_backup_changes_nothing(
    tmp_path: Path, kind: str
) -> None:
    """An empty file or another program's SQLite file named like a backup was "restored"
    (exit 0): the progress replaced by an empty database, every setting back at its default
    (a backup of a newer prep: put in place, then the database could not be opened)."""
    from prep.engine.store import backup
    from prep.engine.store.schema import SCHEMA_VERSION

    db = tmp_path / "p.db"
    with Store.open(db) as store:
        store.update_settings(new_per_day=11)
    where = backup.folder(db)
    where.mkdir()
    name = "p.db.20260101-000000-000000-manual.db"
    if kind == "empty":
        (where / name).write_bytes(b"")
    elif kind == "foreign":
        with sqlite3.connect(where / name) as conn:
            conn.execute("CREATE TABLE notes (x)")
    else:
        with Store.open(where / name) as other:
            other.set_meta("schema_version", str(SCHEMA_VERSION + 1))
            other.conn.execute("PRAGMA journal_mode = DELETE")  # (as backup copies are)
    before = sorted(p.name for p in where.iterdir())
    result = CliRunner().invoke(main, ["--db", str(db), "backup", "--restore", name])
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"prep: {name}: ") and line.endswith("othing restored"), line
    assert _settings_of(db) == 11
    assert sorted(p.name for p in where.iterdir()) == before  # (no rescue copy needed)


@pytest.mark.parametrize(
    "args",
    [
        ["stats"],
        ["marks"],
        ["export", "--format", "json", "-o", "{tmp}/e.json"],
        ["sync", "--status"],
        ["backup", "--list"],
        ["backup"],
        ["cram"],
        ["config"],
        ["config", "--reset", "--yes"],
        ["optimize"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_a_command_that_makes_no_database_leaves_an_empty_file_empty(
    tmp_path: Path, args: list[str]
) -> None:
    """An empty file at --db (`touch prep.db`, a copy cut short) is no database yet: `prep
    stats`, `export`, `cram`... filled it with prep's tables (0 -> 188-483 KB), so reading
    wrote, and a later command took it for an empty progress database."""
    db = tmp_path / "p.db"
    db.write_bytes(b"")
    argv = [a.format(tmp=tmp_path) for a in args]
    result = CliRunner().invoke(main, ["--db", str(db), *argv])
    assert db.stat().st_size == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.db"]
    if result.exit_code != 0:  # refused as no database: one line naming the file
        assert result.exit_code == 2
        assert "an empty file, no progress database here" in result.output
