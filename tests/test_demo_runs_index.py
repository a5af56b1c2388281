"""Schema v16: a demo run taken in by `prep import` or a sync is looked up by its name and
time through the (name, ran_at) index, not by reading every run of its demo (v1's index on
``name`` alone)."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path

from prep.engine.store import SCHEMA_VERSION, Store
from prep.engine.sync.run import sync
from prep.engine.transfer import importer
from tests.test_schema_chain import database_at
from tests.test_sync import T0, stores
from tests.test_sync_import import export

# the two lookups, as engine/store/transfer.py's demo_run_row and engine/sync/merge.py run them
LOOKUPS = (
    "SELECT * FROM demo_runs WHERE name = ? AND ran_at = ?",
    "SELECT 1 FROM demo_runs WHERE name = ? AND ran_at = ? AND dev != ? LIMIT 1",
)


def _plan(conn: sqlite3.Connection, sql: str) -> str:
    args = ("block-diagonal", "2026-03-01T08:00:00Z", 1)[: sql.count("?")]
    return " ".join(r[-1] for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}", args))


def test_the_run_lookups_search_by_name_and_time(tmp_path: Path) -> None:
    with Store.open(tmp_path / "fresh.db") as store:
        for sql in LOOKUPS:
            plan = _plan(store.conn, sql)
            assert "USING INDEX demo_runs_name_at (name=? AND ran_at=?)" in plan, plan


def test_an_upgraded_database_gets_the_index_and_keeps_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "v15.db"
    database_at(path, 15)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(
        "INSERT INTO demo_runs (name, device, passed, seconds, metrics, ran_at) "
        "VALUES ('block-diagonal', 'cpu', 1, 0.5, '{}', '2026-03-01T08:00:00Z')"
    )
    assert "demo_runs_name_at" not in _plan(conn, LOOKUPS[0])
    conn.close()
    with Store.open(path) as store:
        assert store.schema_version() == SCHEMA_VERSION == 17
        assert [r["name"] for r in store.demo_runs()] == ["block-diagonal"]
        assert "demo_runs_name_at (name=? AND ran_at=?)" in _plan(store.conn, LOOKUPS[0])


def test_runs_taken_in_by_import_and_sync_are_held_once(tmp_path: Path) -> None:
    (a, b, c), folder = stores(tmp_path, 3)
    for i in range(30):
        a.record_demo_run(
            name="block-diagonal",
            device="cpu",
            passed=True,
            seconds=0.1,
            metrics={"i": i},
            ran_at=T0 + timedelta(hours=i),
        )
    importer.import_file(b, export(a, tmp_path / "a.json"))
    importer.import_file(b, export(a, tmp_path / "a.json"))  # again: nothing new
    sync(a, folder)
    sync(b, folder)
    sync(c, folder)
    for store in (b, c):
        assert len(store.demo_runs()) == 30
