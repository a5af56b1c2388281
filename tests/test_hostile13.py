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
