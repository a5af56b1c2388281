"""Schema v13's review log: ``revlog`` names cards by number, ``reviews`` is a view with v12's
columns that sync writes through, and ``review_tally`` counts the log by (state before,
rating) for true retention: it stays exact whatever writes the log (rating, undo, sync's
inserts and deletes through the view, an edit of a row)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from prep.engine.store import Store
from prep.engine.study.scheduler import CardState, Scheduler

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _rate(store: Store, card_id: str, rating: int, at: datetime) -> None:
    sched = Scheduler()
    store.rate_card(
        CardState(id=card_id, deck="d", content_hash="h"),
        lambda prev: sched.review(prev, rating, at, store.next_review_key()).state,
        rating,
        at,
    )


def _recount(store: Store) -> dict[tuple[int, int], int]:
    rows = store.conn.execute(
        "SELECT coalesce(prev_state, 0), rating, count(*) FROM revlog GROUP BY 1, 2"
    )
    return {(ps, r): n for ps, r, n in rows}


def _tally(store: Store) -> dict[tuple[int, int], int]:
    """The tally's counts; since v14 its rows count the log up to its mark (row (-1, 0)), and
    the rows past the mark are counted as the store reads them."""
    mark = store.conn.execute("SELECT n FROM review_tally WHERE ps = -1 AND rating = 0")
    (upto,) = mark.fetchone()
    out: dict[tuple[int, int], int] = {}
    for ps, r, n in store.conn.execute(
        "SELECT ps, rating, n FROM review_tally WHERE ps >= 0 UNION ALL "
        "SELECT coalesce(prev_state, 0), rating, count(*) FROM revlog WHERE id > ? GROUP BY 1, 2",
        (upto,),
    ):
        out[(ps, r)] = out.get((ps, r), 0) + n
    return {k: n for k, n in out.items() if n}


def test_the_tally_is_the_log_counted_whatever_writes_it() -> None:
    with Store.memory() as store:
        t = T0
        for i, rating in enumerate([3, 1, 3, 4, 2, 3, 3, 1, 3, 2]):
            _rate(store, f"c{i % 3}", rating, t)
            t += timedelta(days=2)
        assert _tally(store) == _recount(store) and sum(_tally(store).values()) == 10
        assert store.undo_last() is not None
        assert _tally(store) == _recount(store)
        # as sync writes: through the view, by card id (a card the log has not named yet too)
        with store.transaction():
            store.conn.execute(
                "INSERT INTO reviews (card_id, rating, at, duration_ms, prev_state, prev, next, "
                "dev, seq, params) SELECT 'new-card', 4, at + 1, 0, 2, prev, next, 1, NULL, 1 "
                "FROM reviews WHERE card_id = 'c0' ORDER BY id DESC LIMIT 1"
            )
            store.conn.execute("UPDATE reviews SET rating = 1, prev_state = 3 WHERE id = 2")
            store.conn.execute("DELETE FROM reviews WHERE id = 1")
        assert _tally(store) == _recount(store)
        assert store.conn.execute(
            "SELECT count(*) FROM reviews WHERE card_id = 'new-card'"
        ).fetchone() == (1,)
        # the counts the store reads from it are what the log says
        n, passed = store.conn.execute(
            "SELECT count(*), sum(rating > 1) FROM revlog WHERE prev_state = 2"
        ).fetchone()
        assert store.retention_counts() == (n, passed)
        for ps in (1, 2, 3):
            want = store.conn.execute(
                "SELECT count(*) FROM revlog WHERE prev_state = ?", (ps,)
            ).fetchone()[0]
            assert store.count_reviews(prev_state=ps) == want
        new = store.conn.execute("SELECT count(*) FROM revlog WHERE prev_state IS NULL").fetchone()
        assert store.count_reviews(new_only=True) == new[0]
        # and a bounded count still reads the log itself
        assert store.retention_counts(T0 + timedelta(days=100)) == (0, 0)


def test_a_card_keeps_its_number_and_its_log_reads_by_id() -> None:
    with Store.memory() as store:
        _rate(store, "a", 3, T0)
        _rate(store, "b", 3, T0)
        _rate(store, "a", 3, T0 + timedelta(days=3))
        numbers = dict(store.conn.execute("SELECT id, n FROM review_cards"))
        assert set(numbers) == {"a", "b"}
        assert store.undo_last() is not None and store.undo_last() is not None
        _rate(store, "b", 4, T0 + timedelta(days=5))  # numbered again: the same number
        assert dict(store.conn.execute("SELECT id, n FROM review_cards")) == numbers
        assert [r.card_id for r in store.reviews()] == ["a", "b"]
        assert [r.rating for r in store.reviews(card_id="b")] == [4]


def test_a_damaged_v12_row_is_kept_through_the_upgrade_and_named_by_the_export(
    tmp_path,
) -> None:
    """v12 -> v13 rewrites every row; one whose states cannot be read (a hand edit) is kept
    byte for byte behind a mark, the export names it and gives every other review."""
    import sqlite3

    import sqlite_utils

    from prep.engine.store.reviewlog import to_us
    from prep.engine.store.reviewlog5 import Chain5
    from prep.engine.store.schema import MIGRATIONS

    db = tmp_path / "v12.db"
    conn = sqlite3.connect(db, isolation_level=None)
    for step in range(12):
        MIGRATIONS[step](sqlite_utils.Database(conn), None)
    conn.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '12')")
    chain, sched, state = Chain5(), Scheduler(), CardState(id="a", deck="d", content_hash="h")
    t = T0
    for i in range(4):
        new = sched.review(state, 3, t, f"k{i}").state
        prev = None if state.is_new else state
        pb, nb = chain.encode("a", None if prev is None else prev.state, prev, new)
        conn.execute(
            "INSERT INTO reviews (card_id, rating, at, duration_ms, prev_state, prev, next) "
            "VALUES ('a', 3, ?, 1000, ?, ?, ?)",
            (to_us(t), None if prev is None else prev.state, pb, nb),
        )
        state, t = new, t + timedelta(days=5)
    conn.execute("UPDATE reviews SET prev = 'a hand edit', next = 42 WHERE id = 3")
    conn.close()
    with Store.open(db) as store:
        kept = store.conn.execute("SELECT prev, next FROM revlog WHERE id = 3").fetchone()
        assert kept == (b"\xfea hand edit", b"\xfe42")
        data = store.dump()
        assert [d.id for d in store.damaged_reviews] == [3]
        assert [r["seq"] for r in data["reviews"]] == [1, 2, 4]
        assert data["reviews"][-1]["next"]["reps"] == 4
