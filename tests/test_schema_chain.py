"""Every table, column and index of the progress database is made by the migration chain: a
fresh database and one upgraded from any older version end with the same schema, whatever the
older one had been used for (card_marks and the deck cache's ``ident`` column were once
created by the first write that needed them)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlite_utils

from prep.engine.store import SCHEMA_VERSION, Store
from prep.engine.store.schema import MIGRATIONS


def schema_of(path: Path) -> list[tuple[str, str, str, str]]:
    """(type, name, table, SQL) of everything in sqlite_master, in name order (the order
    things were made in and their pages are not part of the schema)."""
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT type, name, tbl_name, COALESCE(sql, '') FROM sqlite_master "
            "WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name"
        ).fetchall()
    finally:
        conn.close()
    return rows


def database_at(path: Path, version: int) -> None:
    """A database as a prep of schema ``version`` left it: the chain up to ``version``."""
    conn = sqlite3.connect(path, isolation_level=None)
    db = sqlite_utils.Database(conn)
    for step in range(version):
        MIGRATIONS[step](db, None)
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)", (str(version),)
    )
    conn.close()


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str, str, str]]:
    path = tmp_path_factory.mktemp("fresh") / "fresh.db"
    Store.open(path).close()
    return schema_of(path)


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION))
def test_an_upgraded_database_has_the_fresh_schema(tmp_path: Path, fresh, version: int) -> None:
    path = tmp_path / f"v{version}.db"
    database_at(path, version)
    with Store.open(path) as store:
        assert store.schema_version() == SCHEMA_VERSION
    assert schema_of(path) == fresh


@pytest.mark.parametrize("version", [8, 9, 10])
def test_tables_an_older_prep_made_on_first_use_end_the_same(
    tmp_path: Path, fresh, version: int
) -> None:
    """A v8..v10 database that had been marked and whose deck cache had been written by the
    prep of its time (which made card_marks and deck_files.ident then) upgrades to the same
    schema as one that never had them."""
    path = tmp_path / f"v{version}-used.db"
    database_at(path, version)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(  # as the old Store.set_mark and deck_cache_put did, in their words
        "CREATE TABLE IF NOT EXISTS card_marks (card_id TEXT PRIMARY KEY, "
        "suspended INTEGER NOT NULL DEFAULT 0, buried_until TEXT, "
        "flagged INTEGER NOT NULL DEFAULT 0)"
    )
    conn.execute("ALTER TABLE deck_files ADD COLUMN ident TEXT")
    conn.execute("INSERT INTO card_marks (card_id, flagged) VALUES ('kept', 1)")
    conn.close()
    with Store.open(path) as store:
        assert store.schema_version() == SCHEMA_VERSION
        assert store.mark("kept").flagged  # what was there is kept
    assert schema_of(path) == fresh


def test_the_fresh_schema_has_the_tables_once_made_on_first_use(fresh) -> None:
    names = {name for _, name, _, _ in fresh}
    assert "card_marks" in names
    deck_files = next(sql for kind, name, _, sql in fresh if name == "deck_files")
    assert "ident" in deck_files


def test_a_fresh_database_reads_marks_and_file_identity_without_writing_first(
    tmp_path: Path,
) -> None:
    """Reading marks or the cache's file identities needs no write to have happened first."""
    path = tmp_path / "p.db"
    Store.open(path).close()
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    with Store(conn, path) as store:  # as a user whose --db file is read-only opens it
        assert store.marks() == {}
        assert store.hidden_ids(datetime(2026, 1, 1, tzinfo=UTC)) == set()
        assert store.deck_cache_files() == {}
