"""`prep backup`: a restore puts back the backup named, whatever characters the database's
path holds (a `#` or `?` once cut the URI short: an empty file was made in the current
folder and restored over the database, its progress gone), and a backup that cannot be
written (a full disk) leaves no half copy in backups/."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from prep.engine.store import Store, backup
from tests.test_sync import T0, rate


@pytest.mark.parametrize("folder", ["a#b", "a?b", "a%20b", "plain"])
def test_a_restore_puts_back_the_backup_whatever_the_path(
    tmp_path: Path, folder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # where a cut-short URI would make its empty file
    (tmp_path / folder).mkdir()
    db = tmp_path / folder / "p.db"
    with Store.open(db) as store:
        rate(store, "x", 3, T0)
        rate(store, "y", 3, T0)
        made = backup.make(store, "manual", datetime(2026, 3, 2, tzinfo=UTC))
        assert made is not None
        rate(store, "z", 3, T0)  # after the backup: the restore takes it away
        restored, saved = backup.restore(store, made.name)
        assert restored == made and saved is not None
        assert sorted(r.card_id for r in store.reviews()) == ["x", "y"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [folder]  # no stray file


def test_a_backup_that_fails_leaves_no_part_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        rate(store, "x", 3, T0)

        def full(self, target, **kwargs) -> None:  # noqa: ANN001 - sqlite3.Connection.backup
            raise sqlite3.OperationalError("database or disk is full")

        class Conn:  # the store's connection, its backup failing as on a full disk
            def __init__(self, real: sqlite3.Connection) -> None:
                self.real = real

            def __getattr__(self, name: str):  # noqa: ANN204 - the rest is the real one's
                return getattr(self.real, name)

            backup = full

        monkeypatch.setattr(store, "conn", Conn(store.conn), raising=False)
        with pytest.raises(backup.BackupError, match="disk is full"):
            backup.make(store, "manual")
        monkeypatch.undo()
    assert list((tmp_path / "backups").iterdir()) == []


def test_a_killed_backups_half_copy_is_swept_by_the_next_backup(tmp_path: Path) -> None:
    """SIGKILL mid-copy skips the cleanup: the .part stays. The next backup removes half
    copies untouched for STALE_PART seconds, keeps one being written now (by another prep),
    and leaves files that are not this database's backups alone."""
    import os
    import time

    db = tmp_path / "p.db"
    with Store.open(db) as store:
        rate(store, "x", 3, T0)
        where = backup.folder(db)
        where.mkdir(parents=True, exist_ok=True)
        stale = where / "p-20260301-000000-000000-daily.db.part"
        fresh = where / "p-20260301-000001-000000-daily.db.part"
        other = where / "notes.txt.part"
        for f in (stale, fresh, other):
            f.write_bytes(b"half")
        old = time.time() - backup.STALE_PART - 60
        os.utime(stale, (old, old))
        os.utime(other, (old, old))
        made = backup.make(store, "manual", datetime(2026, 3, 2, tzinfo=UTC))
        assert made is not None and made.exists()
    assert not stale.exists()
    assert fresh.exists() and other.exists()
