"""Every open that upgrades an older database makes the same backup copy and the same free-space
check first, whoever opens it: `prep quiz` and the app did, but a command that only reads
(`prep stats`, `prep export`, `prep cram`, `prep marks`, `prep sync --status`, `prep backup
--list`) and the engine's own Store.open (the app's sync thread, the fill thread) upgraded
without either (round eight). One function does it (engine/store/backup.before_upgrading,
called by Store.open before anything is written)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.engine.store import SCHEMA_VERSION, Store, StoreError, backup
from prep.tui.cli import main
from tests.test_upgrade_space import copy, free_bytes, v3, version_of  # noqa: F401

READERS = [
    ["stats"],
    ["stats", "--json"],
    ["export", "--format", "json", "-o", "{out}/x.json"],
    ["export", "--format", "csv", "-o", "{out}/x.csv"],
    ["cram"],
    ["marks"],
    ["sync", "--status"],
    ["backup", "--list"],
]


def _args(args: list[str], out: Path) -> list[str]:
    return [a.replace("{out}", str(out)) for a in args]


def _version_in(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    finally:
        conn.close()


@pytest.mark.parametrize("args", READERS, ids=lambda a: " ".join(a[:2]))
def test_a_reading_command_backs_up_before_it_upgrades(
    copy: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
) -> None:
    free_bytes(monkeypatch, 10**11)
    result = CliRunner().invoke(main, ["--db", str(copy), *_args(args, tmp_path)])
    assert "Traceback" not in result.output and result.exit_code in (0, 1), result.output
    assert version_of(copy) == SCHEMA_VERSION
    [made] = backup.listing(copy)
    assert _version_in(made) == "3"  # the copy is of the database before the upgrade


@pytest.mark.parametrize("args", READERS, ids=lambda a: " ".join(a[:2]))
def test_a_reading_command_without_room_changes_nothing(
    copy: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
) -> None:
    before = copy.read_bytes()
    asked = free_bytes(monkeypatch, 1000)
    result = CliRunner().invoke(main, ["--db", str(copy), *_args(args, tmp_path)])
    assert "Traceback" not in result.output
    assert asked  # the space was asked for
    assert copy.read_bytes() == before and version_of(copy) == 3
    assert not (copy.parent / "backups").exists()
    if args[0] != "cram":  # (cram reads the decks without the database when it cannot open)
        assert result.exit_code == 2, result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "not enough free space to upgrade" in lines[0], lines


def test_store_open_itself_backs_up_and_checks_room(
    copy: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The engine's own open (what the app's threads use), reading or not."""
    before = copy.read_bytes()
    free_bytes(monkeypatch, 1000)
    for reading in (False, True):
        with pytest.raises(StoreError) as info:
            Store.open(copy, reading=reading)
        assert info.value.kind == "space"
    assert copy.read_bytes() == before
    free_bytes(monkeypatch, 10**11)
    said: list[str] = []
    monkeypatch.setattr(backup, "SAY_BACKUP_BYTES", 0)
    with Store.open(copy, reading=True, say=said.append) as store:
        assert store.schema_version() == SCHEMA_VERSION
    [made] = backup.listing(copy)
    assert _version_in(made) == "3"
    assert len(said) == 1 and "backing up the progress database" in said[0]
    Store.open(copy).close()  # current now: no second copy
    assert len(backup.listing(copy)) == 1


def test_a_new_or_current_database_is_not_copied(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    Store.open(path).close()
    Store.open(path).close()
    Store.open(path, reading=True).close()
    assert backup.listing(path) == []
