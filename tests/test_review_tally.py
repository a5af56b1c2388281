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
    rows = store.conn.execute("SELECT ps, rating, n FROM review_tally WHERE n != 0")
    return {(ps, r): n for ps, r, n in rows}


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
