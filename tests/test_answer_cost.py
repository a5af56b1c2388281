"""What one answer costs the database (issue 26, answer -> next card; schema v14,
engine/store/schema14.py): the statements a rating runs (sqlite3's trace callback), that it
never reads the card's review log, and the one index of due times that it moves. Timing is
tests/benchmarks/answer_bench.py's business; these hold the structure behind it."""

from __future__ import annotations

from pathlib import Path

import pytest

from prep.engine.store import Store
from prep.engine.study.scheduler import Rating
from prep.engine.study.session import ReviewSession
from tests.conftest import Clock


@pytest.fixture
def store(tmp_path: Path):
    with Store.open(tmp_path / "prep.db") as s:
        yield s


def _rate(session: ReviewSession, rating: Rating = Rating.Good) -> str:
    card = session.current
    assert card is not None
    session.rate(rating, card_id=card.id, content_hash=card.content_hash)
    return card.id


def _traced(store: Store, action) -> list[str]:
    seen: list[str] = []
    store.conn.set_trace_callback(seen.append)
    try:
        action()
    finally:
        store.conn.set_trace_callback(None)
    return seen


def _blobs(store: Store, card_id: str) -> list[tuple[bytes | None, bytes]]:
    return store.conn.execute(
        "SELECT prev, next FROM revlog WHERE cn = (SELECT n FROM review_cards WHERE id = ?) "
        "ORDER BY id",
        (card_id,),
    ).fetchall()


def _chained(store: Store, card_id: str) -> None:
    """The log reads back as one chain ending in the card's row (each prev the next before)."""
    log = store.reviews(card_id=card_id)
    for before, after in zip(log, log[1:], strict=False):
        assert after.prev == before.next
    assert log[-1].next == store.card(card_id)


def test_a_rating_reads_no_review_log_and_runs_few_statements(
    store: Store, small_collection, clock: Clock
) -> None:
    session = ReviewSession(store, small_collection, clock=clock, new_limit=10)
    cid = _rate(session, Rating.Again)  # a learning step: shown again this session
    clock.advance(minutes=11)
    while session.current is not None and session.current.id != cid:
        _rate(session)
    assert session.current is not None
    trace = _traced(store, lambda: _rate(session))
    inside = trace[trace.index("BEGIN IMMEDIATE") : trace.index("COMMIT") + 1]
    # v13 read the card's whole log on every rating ("... FROM revlog WHERE cn = ... ORDER BY
    # id", decoding each review) to learn the state the last one left
    assert not [sql for sql in trace if "next FROM revlog" in sql], trace
    # BEGIN; the changes mark (PRAGMA data_version, read holding the write lock): the same as
    # when the card was shown, so its row, its review's id and the parameters' number read
    # then hold (engine/store/known.py); the card's row written (the trace repeats it once for
    # each trigger program it runs: deck_seen, logged, ...); the review written (and its tally
    # trigger's program); COMMIT. v13 ran 18 here, v14 12, round 8 10, round 11 9 (the stamp
    # and the parameters' number, the card's row with its log head read again inside).
    distinct = [sql for i, sql in enumerate(inside) if i == 0 or sql != inside[i - 1]]
    assert [sql.split(" ")[0] for sql in distinct] == [
        "BEGIN",
        "PRAGMA",
        "UPDATE",
        "INSERT",
        "COMMIT",
    ], distinct
    # the state before this rating is the newest review's next: stored as NULL
    assert _blobs(store, cid)[-1][0] is None
    _chained(store, cid)


def test_a_row_not_known_to_be_the_newest_state_is_stored_in_full(
    store: Store, small_collection, clock: Clock
) -> None:
    """A card last rated before v14 (``logged`` NULL) or changed since by another write (a
    deck edit, a sync, an undo) has its state before stored in full: the log still reads
    back the state the card had, never the newest review's next."""
    session = ReviewSession(store, small_collection, clock=clock, new_limit=10)
    cid = _rate(session, Rating.Again)
    with store.transaction():  # the card moved to another deck file (as reconcile writes it)
        store.conn.execute("UPDATE cards SET deck = 'moved' WHERE id = ?", (cid,))
    assert store.conn.execute("SELECT logged FROM cards WHERE id = ?", (cid,)).fetchone() == (None,)
    clock.advance(minutes=11)
    while session.current is not None and session.current.id != cid:
        _rate(session)
    _rate(session)
    prev, _next = _blobs(store, cid)[-1]
    assert prev is not None and prev != b""
    log = store.reviews(card_id=cid)
    assert log[-1].prev is not None and log[-1].prev.deck == "moved"  # as it was when rated
    assert log[-1].next.deck == "moved"
    # the rating made the row known again: the next one is compact
    assert store.conn.execute("SELECT logged FROM cards WHERE id = ?", (cid,)).fetchone() == (
        log[-1].id,
    )


def test_undo_restores_the_row_and_what_it_is_known_to_be(
    store: Store, small_collection, clock: Clock
) -> None:
    session = ReviewSession(store, small_collection, clock=clock, new_limit=10)
    cid = _rate(session, Rating.Again)
    row = store.conn.execute("SELECT * FROM cards WHERE id = ?", (cid,)).fetchone()
    clock.advance(minutes=11)
    while session.current is not None and session.current.id != cid:
        _rate(session)
    _rate(session)
    assert session.undo() is not None
    assert store.conn.execute("SELECT * FROM cards WHERE id = ?", (cid,)).fetchone() == row
    _rate(session)
    assert _blobs(store, cid)[-1][0] is None
    _chained(store, cid)


def test_one_index_holds_every_card_s_due_time(store: Store) -> None:
    """An answer moves a card's due time: v13 kept it in two full indexes (and the stability
    in a third); now one, beside a partial one of the few cards not in Review (a Review card
    that stays in Review is not in it)."""
    indexes = {
        name: (partial, [c[2] for c in store.conn.execute(f"PRAGMA index_info({name})")])
        for _, name, _, _, partial in store.conn.execute("PRAGMA index_list(cards)")
    }
    moved = {n: v for n, v in indexes.items() if {"due", "stability"} & set(v[1])}
    assert moved == {
        "cards_due": (0, ["removed", "due", "state", "deck"]),
        "cards_learning": (1, ["removed", "state", "due", "deck"]),
    }
    sql = store.conn.execute(
        "SELECT sql FROM sqlite_master WHERE name = 'cards_learning'"
    ).fetchone()[0]
    assert sql.endswith("WHERE state != 2")


def test_the_queue_reads_the_due_indexes(store: Store) -> None:
    """The learning steps due (each answer asks) from the partial index; the reviews due,
    most overdue first, from the one due index, in its order (no sort). One statement each:
    the due cards and the hand-edited dues after them (two ranges of the index, merged; two
    statements before)."""
    from datetime import UTC, datetime

    now = datetime(2026, 3, 2, tzinfo=UTC)

    def reads() -> None:
        store.due_ids(now, not_state=2)
        store.due_ids(now, state=2, limit=5)
        store.due_ids(now, limit=5)

    plans = [
        " ".join(r[3] for r in store.conn.execute("EXPLAIN QUERY PLAN " + sql))
        for sql in _traced(store, reads)
        if sql.startswith("SELECT id, due FROM cards") and "ORDER BY" in sql
    ]
    assert len(plans) == 3 and len(_traced(store, reads)) == 3
    assert "SEARCH cards USING INDEX cards_learning" in plans[0], plans
    assert "SCAN" not in " ".join(plans), plans
    for plan in plans[2:]:
        assert "cards_due" in plan and "TEMP B-TREE" not in plan, plans


def test_a_rating_writes_no_tally_row_and_the_counts_stay_exact(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """v13 counted every review into review_tally by a trigger (a page written by every
    answer); v14 counts the rows past the tally's mark when read and folds them in once
    every FOLD ratings. Whatever writes the log, before or past the mark, the counts the
    store reads are the log's."""
    from datetime import UTC, datetime, timedelta

    from prep.engine.store import reviews
    from prep.engine.study.scheduler import CardState, Scheduler

    monkeypatch.setattr(reviews, "FOLD", 4)
    sched = Scheduler()
    at = datetime(2026, 3, 2, 9, tzinfo=UTC)

    def rate(cid: str, rating: int) -> None:
        store.rate_card(
            CardState(id=cid, deck="d", content_hash="h"),
            lambda prev: sched.review(prev, rating, at, store.next_review_key()).state,
            rating,
            at,
        )

    def tally_rows() -> list[tuple[int, int, int]]:
        return store.conn.execute("SELECT ps, rating, n FROM review_tally ORDER BY 1, 2").fetchall()

    def exact() -> None:
        for ps in (1, 2, 3):
            want = store.conn.execute(
                "SELECT count(*), coalesce(sum(rating > 1), 0) FROM revlog WHERE prev_state = ?",
                (ps,),
            ).fetchone()
            assert store.count_reviews(prev_state=ps) == want[0]
            if ps == 2:
                assert store.retention_counts() == tuple(want)
        new = store.conn.execute("SELECT count(*) FROM revlog WHERE prev_state IS NULL")
        assert store.count_reviews(new_only=True) == new.fetchone()[0]

    for i, rating in enumerate([3, 1, 3, 4, 2, 3, 3, 1, 3, 2, 3]):
        before = tally_rows()
        rate(f"c{i % 3}", rating)
        rid = store.conn.execute("SELECT max(id) FROM revlog").fetchone()[0]
        if rid % 4:  # not a folding rating: the tally's rows are as they were
            assert tally_rows() == before
        exact()
        at += timedelta(days=2)
    mark = store.conn.execute("SELECT n FROM review_tally WHERE ps = -1").fetchone()[0]
    assert 0 < mark < store.conn.execute("SELECT max(id) FROM revlog").fetchone()[0]
    assert store.undo_last() is not None  # past the mark
    exact()
    with store.transaction():  # as sync writes, through the view: before the mark and past it
        store.conn.execute("UPDATE reviews SET rating = 1, prev_state = 3 WHERE id = 2")
        store.conn.execute("DELETE FROM reviews WHERE id = 1")
        store.conn.execute(f"UPDATE reviews SET prev_state = 1 WHERE id = {mark + 1}")
        store.conn.execute(f"UPDATE reviews SET id = 1 WHERE id = {mark + 2}")  # moved under it
    exact()


def test_due_ids_serves_hand_edited_dues_after_the_due_cards(store: Store) -> None:
    """The one statement keeps the two statements' answer: due cards most overdue first, then
    a due that is not a time (a hand edit, which the session skips with a message), the
    limit counting both; a card due later is not served."""
    from datetime import UTC, datetime, timedelta

    from prep.engine.study.scheduler import CardState

    now = datetime(2026, 3, 2, tzinfo=UTC)
    for cid, due in (("late", now - timedelta(days=1)), ("later", now + timedelta(days=1)),
                     ("odd", "tomorrow"), ("early", now - timedelta(days=3))):  # fmt: skip
        store.put_card(CardState(id=cid, deck="d", state=2, step=None, stability=3.0,
                                 difficulty=5.0, due=due, last_review=now, reps=1))  # type: ignore[arg-type]  # fmt: skip
    assert store.due_ids(now) == ["early", "late", "odd"]
    assert store.due_ids(now, state=2, limit=2) == ["early", "late"]
    assert store.due_ids(now, state=2, limit=3) == ["early", "late", "odd"]
    assert store.due_ids(now, not_state=2) == []


def test_the_bench_counts_statements_not_trace_lines() -> None:
    """answer_bench --profile printed trace lines as statements (fast15: "14" for 7): sqlite3's
    callback repeats an INSERT's text for each trigger program it runs and shows a table
    function's pragma as a comment. Counted on a real trace, with a real trigger."""
    import sqlite3
    import sys

    sys.path.insert(0, str(Path(__file__).parent / "benchmarks"))
    try:
        from answer_bench import _statements
    finally:
        sys.path.pop(0)
    conn = sqlite3.connect(":memory:")
    conn.executescript(
        "CREATE TABLE t(a); CREATE TABLE u(b);"
        "CREATE TRIGGER tr AFTER INSERT ON t BEGIN INSERT INTO u VALUES (new.a); END;"
    )
    trace: list[str] = []
    conn.set_trace_callback(trace.append)
    conn.execute("INSERT INTO t VALUES (1)")
    conn.execute("SELECT * FROM pragma_data_version()")
    conn.execute("INSERT INTO u VALUES (2)")
    conn.set_trace_callback(None)
    assert len(trace) > 4  # the repeats the bench used to count
    assert _statements(trace) == [
        "BEGIN ",
        "INSERT INTO t VALUES (1)",
        "SELECT * FROM pragma_data_version()",
        "INSERT INTO u VALUES (2)",
    ]
