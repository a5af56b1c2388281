"""A new database's first three schema steps are plain SQL in the words sqlite_utils wrote them
in (round eight built them with sqlite_utils' Table.create, so the very first open of a new
database imported sqlite_utils, click, and pandas when installed): sqlite_master keeps each
statement's text, so a new database and one an older prep made hold the same schema."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import sqlite_utils

from prep.engine.store import SCHEMA_VERSION
from prep.engine.store.schema import MIGRATIONS, Schema


def _sqlite_utils_v3(db: sqlite_utils.Database) -> None:
    """Schema steps 0 -> 3 as round eight (and every prep before it) made them."""
    db["meta"].create({"key": str, "value": str}, pk="key", if_not_exists=True)
    db["cards"].create(
        {
            "id": str,
            "deck": str,
            "state": int,
            "step": int,
            "stability": float,
            "difficulty": float,
            "due": str,
            "last_review": str,
            "reps": int,
            "lapses": int,
            "leech": int,
            "content_hash": str,
            "changed": int,
            "removed": int,
        },
        pk="id",
        not_null={"deck", "state", "reps", "lapses", "leech", "changed", "removed"},
        defaults={"reps": 0, "lapses": 0, "leech": 0, "changed": 0, "removed": 0, "deck": ""},
        if_not_exists=True,
    )
    db["cards"].create_index(["removed", "due"], index_name="cards_removed_due", if_not_exists=True)
    db["reviews"].create(
        {
            "id": int,
            "card_id": str,
            "rating": int,
            "reviewed_at": str,
            "duration_ms": int,
            "prev_state": int,
            "prev": str,
            "next": str,
        },
        pk="id",
        not_null={"card_id", "rating", "reviewed_at", "next"},
        if_not_exists=True,
    )
    db["reviews"].create_index(["card_id"], index_name="reviews_card", if_not_exists=True)
    db["reviews"].create_index(["reviewed_at"], index_name="reviews_at", if_not_exists=True)
    db["demo_runs"].create(
        {
            "id": int,
            "name": str,
            "device": str,
            "device_name": str,
            "dtype": str,
            "scale": str,
            "seed": int,
            "passed": int,
            "seconds": float,
            "metrics": str,
            "ran_at": str,
        },
        pk="id",
        not_null={"name", "device", "passed", "seconds", "ran_at"},
        if_not_exists=True,
    )
    db["demo_runs"].create_index(["name"], index_name="demo_runs_name", if_not_exists=True)
    db["reviews"].create_index(
        ["prev_state", "reviewed_at", "rating"], index_name="reviews_state_at", if_not_exists=True
    )
    db["cards"].create_index(
        ["removed", "deck", "stability"], index_name="cards_removed_deck", if_not_exists=True
    )
    db["cards"].create_index(
        ["removed", "state", "due"], index_name="cards_removed_state_due", if_not_exists=True
    )


def _master(conn: sqlite3.Connection) -> list[tuple]:
    return conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid"
    ).fetchall()


def test_the_plain_steps_write_sqlite_utils_text_exactly() -> None:
    old = sqlite3.connect(":memory:", isolation_level=None)
    _sqlite_utils_v3(sqlite_utils.Database(old))
    new = sqlite3.connect(":memory:", isolation_level=None)
    for step in range(3):
        MIGRATIONS[step](Schema(new), None)
    assert _master(new) == _master(old)
    # and the tables behave alike: the defaults and NOT NULLs sqlite_utils declared
    for conn in (old, new):
        conn.execute("INSERT INTO cards (id, state) VALUES ('x', 0)")
    row = "SELECT * FROM cards"
    assert new.execute(row).fetchall() == old.execute(row).fetchall()


def test_a_new_database_is_made_without_sqlite_utils_or_click(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from prep.engine.store import Store\n"
        f"with Store.open({str(tmp_path / 'new.db')!r}) as s:\n"
        "    assert s.schema_version() == %d\n"
        "heavy = [m for m in ('sqlite_utils', 'click', 'pandas', 'numpy') if m in sys.modules]\n"
        "print(heavy)\n" % SCHEMA_VERSION
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
