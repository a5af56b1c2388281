"""Storage and sessions: immediate commits, exact undo, reconciling with the decks, queue order, consistency."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prep.engine.decks.deck import ParsedDecks
from prep.engine.decks.deckcache import from_parsed, load_collection
from prep.engine.store import SCHEMA_VERSION, Store, StoreError
from prep.engine.study.scheduler import CardState, Rating, Scheduler, Settings
from prep.engine.study.session import ReviewSession, build_queue
from tests.conftest import FIXED_NOW, SMALL_DECK, Clock


def session(store, coll, clock, **kw) -> ReviewSession:
    return ReviewSession(
        store, coll, clock=clock, scheduler=Scheduler(store.settings(), enable_fuzzing=False), **kw
    )


def dump(store: Store) -> tuple[list, list]:
    cards = store.conn.execute("SELECT * FROM cards ORDER BY id").fetchall()
    reviews = store.conn.execute("SELECT * FROM reviews ORDER BY id").fetchall()
    return cards, reviews


def test_schema_created_with_version_and_wal(db_path: Path) -> None:
    with Store.open(db_path) as store:
        assert store.schema_version() == SCHEMA_VERSION
        assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert store.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
        assert {"cards", "revlog", "demo_runs", "meta"} <= set(store.db.table_names())
        assert "reviews" in store.db.view_names()  # (v13: the log's v12 columns, over revlog)


def test_newer_schema_is_refused(db_path: Path) -> None:
    with Store.open(db_path) as store:
        store.conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="newer than this prep"):
        Store.open(db_path)


def test_unopenable_path_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="cannot"):
        Store.open(tmp_path / "file" / "sub" / "prep.db")


def test_garbage_file_is_a_store_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="cannot open"):
        Store.open(bad)


def test_rating_is_committed_at_once(db_path: Path, small_collection, clock) -> None:
    store = Store.open(db_path)
    s = session(store, small_collection, clock)
    s.rate(Rating.Good)
    # a second connection sees the review before the first is closed: it was committed
    other = sqlite3.connect(db_path)
    assert other.execute("SELECT card_id, rating FROM reviews").fetchall() == [("roles", 3)]
    other.close()
    store.close()


def test_undo_restores_exact_previous_state(fresh_store, small_collection, clock) -> None:
    s = session(fresh_store, small_collection, clock)
    empty = dump(fresh_store)
    s.rate(Rating.Good)  # roles: new -> learning
    after_one = dump(fresh_store)
    card = s.current
    s.rate(Rating.Easy)
    assert s.undo().id == card.id
    assert dump(fresh_store) == after_one
    assert s.current.id == card.id
    assert s.undo().id == "roles"
    assert dump(fresh_store) == empty
    assert s.undo() is None


def test_undo_of_a_review_card_restores_its_schedule(fresh_store, small_collection, clock) -> None:
    s = session(fresh_store, small_collection, clock, queue=["roles"])
    s.rate(Rating.Easy)
    before = fresh_store.card("roles")
    clock.now = before.due + timedelta(hours=1)
    s2 = session(fresh_store, small_collection, clock, queue=["roles"])
    s2.rate(Rating.Again)
    assert fresh_store.card("roles").lapses == 1
    s2.undo()
    assert fresh_store.card("roles") == before


def test_queue_due_first_then_new_and_follow_up_after_parent(
    fresh_store, small_collection, clock
) -> None:
    q = build_queue(fresh_store, small_collection, clock())
    assert q.due == [] and q.new == ["roles", "pick-one", "roles-follow", "flag"]
    # without its parent in the queue (new limit 1), the follow-up waits
    q = build_queue(fresh_store, small_collection, clock(), new_limit=3, deck="small")
    assert q.new == ["roles", "pick-one", "roles-follow"]
    s = session(fresh_store, small_collection, clock, queue=["pick-one", "flag"])
    s.rate(Rating.Easy)
    s.rate(Rating.Easy)
    q = build_queue(fresh_store, small_collection, clock(), new_limit=5)
    assert q.new == ["roles", "roles-follow"]  # roles-follow may follow roles in the same queue
    q_no_parent = build_queue(
        fresh_store, small_collection, clock(), new_limit=5, deck="small", seen={"pick-one", "flag"}
    )
    assert "roles-follow" in q_no_parent.new
    clock.advance(days=30)
    q = build_queue(fresh_store, small_collection, clock())
    assert q.due == ["pick-one", "flag"] or q.due == ["flag", "pick-one"]
    # most overdue first
    dues = [fresh_store.card(c).due for c in q.due]
    assert dues == sorted(dues)


def test_follow_up_not_served_before_parent_seen(fresh_store, small_collection, clock) -> None:
    q = build_queue(fresh_store, small_collection, clock(), new_limit=10, seen=set())
    assert q.new.index("roles-follow") > q.new.index("roles")
    # remove the parent from the queue by making only the follow-up eligible
    parsed = small_collection.parsed()
    kept = [card for card in parsed.cards if card.id != "roles"]
    coll = from_parsed(ParsedDecks(cards=kept, decks=parsed.decks))
    # its parent missing, the follow-up could never be served: left out, as a parse does
    assert "roles-follow" not in coll and "pick-one" in coll
    q = build_queue(fresh_store, coll, clock(), new_limit=10)
    assert "roles-follow" not in q.new


def test_new_per_day_counts_todays_new_cards(fresh_store, small_collection, clock) -> None:
    fresh_store.save_settings(Settings(new_per_day=2))
    s = session(fresh_store, small_collection, clock)
    assert list(s.queue) == ["roles", "pick-one"]
    s.rate(Rating.Easy)
    q = build_queue(fresh_store, small_collection, clock())
    assert q.new == ["pick-one"]  # one new card left today


def test_learning_card_comes_back_in_the_same_session(fresh_store, small_collection, clock) -> None:
    s = session(fresh_store, small_collection, clock, queue=["roles"])
    s.rate(Rating.Again)  # 1 minute step: within the learn-ahead window
    assert list(s.queue) == [] and [cid for _due, cid in s.learning] == ["roles"] and s.total == 2
    # nothing else is left: shown early, and said so
    assert s.current.id == "roles" and s.early == timedelta(minutes=1)
    assert s.counts() == (0, 1, 0)
    s.undo()
    assert list(s.queue) == ["roles"] and s.learning == [] and s.total == 1 and s.early is None


def test_a_learning_card_waits_for_its_step_while_other_cards_are_left(
    fresh_store, small_collection, clock
) -> None:
    """Anki's order: a learning card comes back when its step is due, not as soon as it is
    re-queued; early (learn-ahead) only when nothing else is left."""
    s = session(fresh_store, small_collection, clock, queue=["roles", "pick-one", "flag"])
    assert s.counts() == (3, 0, 0)
    s.rate(Rating.Good)  # a new card rated Good: the 10-minute step
    # (nothing asked of the session yet: no next card is on screen)
    assert s.waiting == clock() + timedelta(minutes=10)
    clock.advance(minutes=11)  # its step is due: it comes before the rest of the queue
    assert s.current.id == "roles" and s.early is None
    assert s.counts() == (2, 1, 0)
    s.rate(Rating.Good)  # graduates: leaves the session
    assert s.counts() == (2, 0, 0)
    s.rate(Rating.Again)  # pick-one: 1 minute step
    assert s.current.id == "flag"
    s.rate(Rating.Good)  # flag: 10 minutes
    assert s.current.id == "pick-one" and s.early == timedelta(minutes=1)  # the soonest
    s.rate(Rating.Good)  # pick-one: 10 minutes
    assert s.current.id == "flag" and s.early == timedelta(minutes=10)  # both due in 10m


def test_learn_ahead_is_a_setting(fresh_store, small_collection, clock) -> None:
    fresh_store.save_settings(Settings(learn_ahead_min=5))
    s = session(fresh_store, small_collection, clock, queue=["roles"])
    s.rate(Rating.Good)  # 10 minutes: beyond the 5-minute learn-ahead limit
    assert s.finished and s.waiting == clock() + timedelta(minutes=10)
    clock.advance(minutes=6)  # within 5 minutes of its step now
    assert s.current.id == "roles" and s.early == timedelta(minutes=4)


def test_no_requeue_asks_once(fresh_store, small_collection, clock) -> None:
    s = session(fresh_store, small_collection, clock, queue=["roles", "pick-one"], requeue=False)
    s.rate(Rating.Again)
    assert list(s.queue) == ["pick-one"] and s.total == 2
    s.undo()
    assert list(s.queue) == ["roles", "pick-one"]


def test_undo_removes_only_its_own_requeue(fresh_store, small_collection, clock) -> None:
    s = session(fresh_store, small_collection, clock, queue=["roles", "pick-one"])
    s.rate(Rating.Again)  # roles waits for its 1-minute step
    s.rate(Rating.Easy)  # pick-one graduates: not re-queued
    assert list(s.queue) == [] and [cid for _due, cid in s.learning] == ["roles"]
    s.undo()
    assert (
        list(s.queue) == ["pick-one"] and [c for _d, c in s.learning] == ["roles"] and s.total == 3
    )
    s.undo()
    assert list(s.queue) == ["roles", "pick-one"] and s.learning == [] and s.total == 2


def test_edited_card_keeps_progress_and_is_flagged(tmp_path: Path, fresh_store, clock) -> None:
    deck = tmp_path / "d.yaml"
    deck.write_text(SMALL_DECK)
    coll = load_collection([deck], include_bundled=False)
    s = session(fresh_store, coll, clock, queue=["roles", "pick-one"])
    s.rate(Rating.Good)
    s.rate(Rating.Good)
    deck.write_text(
        SMALL_DECK.replace("Cross-head mixing and per-head weighting.", "Mixing; weighting.")
    )
    coll2 = load_collection([deck], include_bundled=False)
    assert fresh_store.reconcile(coll2.cards) == {"changed": 1, "removed": 0, "restored": 0}
    state = fresh_store.card("roles")
    assert state.changed and state.reps == 1
    # a removed card keeps its history and is no longer served
    deck.write_text(SMALL_DECK.split("  - id: pick-one")[0])
    coll3 = load_collection([deck], include_bundled=False)
    assert fresh_store.reconcile(coll3.cards)["removed"] == 1
    clock.advance(days=400)
    assert fresh_store.due_ids(clock()) == ["roles"]
    assert "pick-one" not in build_queue(fresh_store, coll3, clock()).ids
    assert fresh_store.card("pick-one").removed and fresh_store.card("pick-one").reps == 1
    assert len(fresh_store.reviews(card_id="pick-one")) == 1
    # back in the deck: restored, with its history
    assert fresh_store.reconcile(coll2.cards)["restored"] == 1
    assert sorted(fresh_store.due_ids(clock())) == ["pick-one", "roles"]


def test_explicit_new_limit_and_review_limit(fresh_store, small_collection, clock) -> None:
    assert build_queue(fresh_store, small_collection, clock(), new_limit=0).ids == []
    s = session(fresh_store, small_collection, clock, limit=1)
    assert s.total == 1


def test_busy_database_gives_a_clear_error(db_path: Path, small_collection, clock) -> None:
    store = Store.open(db_path)
    store.conn.execute("PRAGMA busy_timeout = 50")
    s = session(store, small_collection, clock)
    blocker = sqlite3.connect(db_path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError, match="busy"):
            s.rate(Rating.Good)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert s.current.id == "roles"  # nothing advanced
    s.rate(Rating.Good)
    assert store.count_reviews() == 1
    store.close()


def read_only(path: Path) -> Store:
    """The store as a user whose --db file is read-only gets it."""
    return Store(sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None), path)


def test_read_only_database_is_a_store_error(db_path: Path, small_collection, clock) -> None:
    Store.open(db_path).close()
    store = read_only(db_path)
    s = session(store, small_collection, clock)
    with pytest.raises(StoreError, match="read-only"):
        s.rate(Rating.Good)
    assert s.current.id == "roles"  # nothing advanced
    assert not store.conn.in_transaction  # rolled back, so the next write can begin
    with pytest.raises(StoreError, match="read-only"):
        store.save_settings(Settings(new_per_day=3))
    assert store.count_reviews() == 0 and store.settings() == Settings()
    store.close()


def test_demo_runs_are_recorded(fresh_store) -> None:
    fresh_store.record_demo_run(
        name="no-wo", device="cpu", passed=True, seconds=0.5, metrics={"x": 1}
    )
    (run,) = fresh_store.demo_runs()
    assert run["name"] == "no-wo" and run["passed"] is True


ACTIONS = st.lists(
    st.one_of(st.sampled_from([1, 2, 3, 4]), st.just("u"), st.just("wait")), max_size=25
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(actions=ACTIONS)
def test_any_ratings_and_undos_keep_the_store_consistent(small_collection, actions) -> None:
    store = Store.memory()
    clock = Clock(FIXED_NOW)
    s = session(store, small_collection, clock, new_limit=10)
    snapshots = [dump(store)]
    for action in actions:
        if action == "wait":
            clock.advance(days=3)
            continue
        if action == "u":
            if s.undo() is not None:
                snapshots.pop()
                assert dump(store) == snapshots[-1]
            continue
        if s.finished:
            s = session(
                store,
                small_collection,
                clock,
                new_limit=10,
                queue=[c.id for c in small_collection.cards],
            )
            snapshots = [dump(store)]
        s.rate(Rating(action))
        snapshots.append(dump(store))
        # invariant: each card row's state is the `next` of its newest review
        for (cid,) in store.conn.execute("SELECT id FROM cards"):
            assert store.reviews(card_id=cid)[-1].next == replace(store.card(cid), changed=False)
        assert store.count_reviews() == sum(
            r[0] for r in store.conn.execute("SELECT reps FROM cards")
        )
    while s.undo() is not None:
        pass
    if not store.count_reviews():
        assert dump(store) == ([], [])
    store.close()


def test_undo_everything_returns_to_empty(fresh_store, small_collection, clock) -> None:
    s = session(fresh_store, small_collection, clock, new_limit=10)
    for rating in [1, 3, 3, 4, 2, 1, 3, 4, 4, 3]:
        if s.finished:
            break
        s.rate(rating)
        clock.advance(minutes=15)
    while s.undo() is not None:
        pass
    assert dump(fresh_store) == ([], [])


def test_card_state_round_trips_through_json() -> None:
    from prep.engine.store import state_from_json, state_to_json

    s = (
        Scheduler(enable_fuzzing=False)
        .review(CardState(id="x", deck="d"), Rating.Good, FIXED_NOW)
        .state
    )
    assert state_from_json(state_to_json(s)) == s


def test_migration_from_v1_keeps_data(db_path: Path) -> None:
    import sqlite3 as sq

    from prep.engine.store import schema

    # build a schema-v1 database by hand, as the first release wrote it
    conn = sq.connect(db_path, isolation_level=None)
    store = Store.__new__(Store)
    store.conn, store.path, store._db = conn, db_path, None
    schema.MIGRATIONS[0](store.db)
    store.db["meta"].insert({"key": "schema_version", "value": "1"})
    conn.execute(
        "INSERT INTO reviews (card_id, rating, reviewed_at, next) VALUES ('a', 3, '2026-01-01T00:00:00.000000Z', '{}')"
    )
    conn.close()
    with Store.open(db_path) as migrated:
        assert migrated.schema_version() == SCHEMA_VERSION == 17
        indexes = {i.name for i in migrated.db["revlog"].indexes}
        assert {"reviews_at", "reviews_card"} <= indexes  # (v13: on revlog, by card number)
        # (v14: one index of the due times, and the learning cards' partial one)
        assert {"cards_due", "cards_learning"} <= {i.name for i in migrated.db["cards"].indexes}
        assert migrated.count_reviews() == 1


def test_review_cap_counts_todays_reviews_but_not_learning_steps(
    fresh_store, small_collection, clock
) -> None:
    s = session(fresh_store, small_collection, clock, queue=["roles", "pick-one", "flag"])
    for _ in range(3):
        s.rate(Rating.Easy)  # straight to Review, due in days
    clock.advance(days=60)
    fresh_store.save_settings(Settings(review_limit=2, new_per_day=0))
    assert len(build_queue(fresh_store, small_collection, clock()).due) == 2
    s = session(fresh_store, small_collection, clock)
    s.rate(Rating.Again)  # a Review card lapses: counts against the cap, comes back relearning
    q = build_queue(fresh_store, small_collection, clock() + timedelta(minutes=15))
    # one Review-state review left under the cap, plus the relearning card (never capped)
    assert len(q.due) == 2
    assert fresh_store.card(s.done[0]).state == 3 and s.done[0] in q.due


def test_undo_never_removes_another_sessions_rating(db_path: Path, small_collection, clock) -> None:
    one, two = Store.open(db_path), Store.open(db_path)
    a = session(one, small_collection, clock, queue=["roles"])
    b = session(two, small_collection, clock, queue=["pick-one"])
    a.rate(Rating.Good)
    b.rate(Rating.Easy)  # another terminal rates after us
    assert a.undo() is None  # ours is no longer the newest review: nothing is touched
    assert [r.card_id for r in one.reviews()] == ["roles", "pick-one"]
    assert b.undo().id == "pick-one"
    assert a.undo().id == "roles"
    assert one.count_reviews() == 0
    one.close()
    two.close()


def test_queue_counts_learning_steps_among_due(fresh_store, small_collection, clock) -> None:
    s = session(fresh_store, small_collection, clock, queue=["roles", "pick-one"])
    s.rate(Rating.Again)  # learning step, due in 1 minute
    s.rate(Rating.Easy)  # straight to Review
    clock.advance(days=30)
    q = build_queue(fresh_store, small_collection, clock(), new_limit=0)
    assert sorted(q.due) == ["pick-one", "roles"] and q.learning == 1


def test_a_damaged_database_is_a_store_error(db_path: Path, small_collection, clock) -> None:
    """A malformed disk image leaves the store as StoreError (front ends catch one type)."""
    with Store.open(db_path) as store:
        for i in range(300):
            store.record_demo_run(name=f"demo-{i}", device="cpu", passed=True, seconds=1.0)
    data = bytearray(db_path.read_bytes())
    page = 4096
    assert len(data) > 3 * page
    data[2 * page :] = b"\xff" * (len(data) - 2 * page)  # every page after the second
    db_path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match="damaged|malformed|not a database"):
        store = Store.open(db_path)
        try:
            store.demo_runs()
            store.dump()
        finally:
            store.close()


def test_migration_from_v6_indexes_the_deck_cache_ids(tmp_path: Path) -> None:
    """v7 adds a covering index over the cached cards' (key, id, dup): a v6 database (its
    cache filled) migrates, and the ids read on open are the same, from the index."""
    from prep.engine.decks import deckcache

    decks = tmp_path / "decks"
    decks.mkdir()
    (decks / "small.yaml").write_text(SMALL_DECK, encoding="utf-8")
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        first = [c.id for c in deckcache.load(store, [decks], include_bundled=False).cards]
        key = store.conn.execute("SELECT path FROM deck_files").fetchone()[0]
        ids = store.deck_cache_ids(key)
        # as a v6 prep left it: no such index
        store.conn.execute("DROP INDEX deck_cards_ids")
        store.set_meta("schema_version", "6")
    with Store.open(db) as migrated:
        assert migrated.schema_version() == SCHEMA_VERSION == 17
        names = {r[0] for r in migrated.conn.execute("SELECT name FROM sqlite_master")}
        assert "deck_cards_ids" in names
        plan = migrated.conn.execute(
            "EXPLAIN QUERY PLAN SELECT key & 0xFFFFFFFF, id, dup FROM deck_cards "
            "WHERE key BETWEEN 0 AND 1 ORDER BY key"
        ).fetchall()
        assert "COVERING INDEX deck_cards_ids" in plan[0][3]
        # (v9 empties the cache: the decks are cached again on the next load)
        again = deckcache.load(migrated, [decks], include_bundled=False)
        assert migrated.deck_cache_ids(key) == ids and len(ids) == len(first) > 0
        assert [c.id for c in again.cards] == first
