"""Every index on the review log earns its bytes (issue 26, item 5): each is read by a query
the store makes (EXPLAIN QUERY PLAN), and an index no query reads fails here. The sizes
behind the v11 choices are in engine/store/schema11.py."""

from __future__ import annotations

from prep.engine.store import SCHEMA_VERSION, Store

NOW_US = 1_772_442_000_000_000

# index -> the store's queries that read it (as engine/store/reviews.py, engine/sync/ and
# engine/store/devices.py write them)
READERS = {
    "reviews_card": [
        # a card's log, by its number (the store) and through the view by its id (the sync)
        ("SELECT id FROM revlog WHERE cn = ? ORDER BY id", (1,)),
        ("SELECT id FROM reviews WHERE card_id = ? ORDER BY id", ("c1",)),
    ],
    "reviews_at": [
        # today's new cards and the review limit's count: today's range of it
        ("SELECT count(*) FROM revlog WHERE at >= ? AND prev_state IS NULL", (NOW_US,)),
        ("SELECT count(*) FROM revlog WHERE at >= ? AND prev_state = ?", (NOW_US, 2)),
        # the study days' histogram and "reviewed today?"
        ("SELECT count(*) FROM revlog WHERE at >= ? AND at < ?", (NOW_US, NOW_US + 1)),
        ("SELECT 1 FROM revlog WHERE at >= ? AND at < ? LIMIT 1", (NOW_US, NOW_US + 1)),
        # the last 30 days' retention (the whole log's is read from review_tally)
        (
            "SELECT count(*), coalesce(sum(rating > 1), 0) FROM revlog "
            "WHERE prev_state = ? AND at >= ?",
            (2, NOW_US),
        ),
    ],
    "reviews_uid": [
        # a review received from another device, by its id there
        ("SELECT id, card_id FROM reviews WHERE dev = ? AND seq = ?", (2, 7)),
        ("SELECT seq FROM reviews WHERE dev = ? AND seq > ? ORDER BY seq", (2, 7)),
    ],
}


def _plan(store: Store, sql: str, args: tuple) -> str:
    return " | ".join(r[3] for r in store.conn.execute("EXPLAIN QUERY PLAN " + sql, args))


def test_each_index_on_the_review_log_is_read_by_a_query() -> None:
    with Store.memory() as store:
        indexes = {
            name
            for (name,) in store.conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'revlog' "
                "AND sql IS NOT NULL"
            )
        }
        assert indexes == set(READERS), "an index without a reader, or a reader without one"
        for index, queries in READERS.items():
            for sql, args in queries:
                assert f"INDEX {index}" in _plan(store, sql, args), (index, sql)


def test_the_reviews_made_here_are_read_by_row_id() -> None:
    """A review made here has no seq (the partial reviews_uid holds none of them): the sync's
    "not yet sent" reads the row-id range past the last one sent, and undo the newest row."""
    with Store.memory() as store:
        unsent = _plan(
            store,
            "SELECT id FROM reviews WHERE dev = ? AND seq IS NULL AND id > ?",
            (1, 100),
        )
        assert "USING INTEGER PRIMARY KEY (rowid>?)" in unsent, unsent
        newest = _plan(
            store, "SELECT id, card_id FROM reviews WHERE dev = ? ORDER BY id DESC LIMIT 1", (1,)
        )
        assert "SCAN r" in newest and "TEMP B-TREE" not in newest, newest


def test_the_cached_cards_are_found_by_id() -> None:
    with Store.memory() as store:
        plan = _plan(store, "SELECT key FROM deck_cards WHERE id = ?", ("c1",))
        assert "INDEX deck_cards_id (id=?)" in plan, plan


def test_a_v10_database_upgrades_its_indexes_and_shrinks(tmp_path) -> None:
    """v10 -> v13 on a database with a log: the partial and v13's indexes replace the old
    ones on the rewritten log, the reviews are all there (rows whose states cannot be read
    are kept as they were), and the file gives the old pages back."""
    import sqlite3

    import sqlite_utils

    from prep.engine.store.schema import MIGRATIONS

    db = tmp_path / "p.db"
    conn = sqlite3.connect(db, isolation_level=None)
    for step in range(10):  # the database a v10 prep made
        MIGRATIONS[step](sqlite_utils.Database(conn), None)
    conn.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '10')")
    rows = [
        (f"c{i % 500}", 1 + i % 4, NOW_US + i * 1_000_000, 5000, 2 if i % 3 else None, b"x" * 40)
        for i in range(20_000)
    ]
    with conn:  # one transaction
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO reviews (card_id, rating, at, duration_ms, prev_state, next) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            rows,
        )
    conn.execute("VACUUM")
    conn.close()
    before = db.stat().st_size
    with Store.open(db) as store:
        assert store.schema_version() == SCHEMA_VERSION
        names = {
            n for (n,) in store.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
        }
        assert {"reviews_at", "reviews_card", "reviews_uid", "deck_cards_id"} <= names
        assert not {"reviews_at_state", "reviews_state_at", "deck_cards_kind"} & names
        assert store.count_reviews() == 20_000
        assert store.count_reviews(prev_state=2) == sum(1 for r in rows if r[4] == 2)
        (partial,) = store.conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'reviews_uid'"
        ).fetchone()
        assert "WHERE seq IS NOT NULL" in partial
        # the 40 bytes that were no v5 record are kept, behind the mark that says so
        kept = store.conn.execute("SELECT card_id, next FROM reviews WHERE id = 1").fetchone()
        assert kept == ("c0", b"\xfe" + b"x" * 40)
    assert db.stat().st_size < before
