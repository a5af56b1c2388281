"""A new review's fuzz is seeded by the card and its history ("fuzz_by": "card"), as Anki seeds
it by card id and reps: rate -> undo -> rate again gives the interval the preview showed (the
fuzz was seeded by the review's id: the second rating, another id, drew another interval).
Reviews stored with "fuzz_by": "review" (rounds 7-11) or without the key (before v2) replay bit
for bit with the parameters they were made with: a sync to a fresh device computes the states
their own device stored, and opening an older database changes no stored interval."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from prep.engine.store import Store, devices
from prep.engine.store.reviewlog import from_us
from prep.engine.study.scheduler import (
    FUZZ_BY_CARD,
    FUZZ_BY_REVIEW,
    CardState,
    Rating,
    Scheduler,
    State,
)
from prep.engine.study.session import ReviewSession
from prep.engine.sync import journal
from prep.engine.sync.run import sync
from prep.tui.testing import big_collection
from tests.conftest import Clock
from tests.test_sync import view

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def review_card(cid: str, days: float = 30.0) -> CardState:
    """A Review card due at T0 whose next Good interval is weeks (fuzzed: 2.5 days or more)."""
    return CardState(
        id=cid,
        deck="big",
        state=int(State.Review),
        step=None,
        stability=days,
        difficulty=5.0,
        due=T0,
        last_review=T0 - timedelta(days=days),
        reps=4,
    )


def test_undo_then_rate_again_gives_the_previewed_interval() -> None:
    coll = big_collection(12)
    store = Store.memory()
    ids = [c.id for c in coll.cards]
    for cid in ids:
        store.put_card(review_card(cid))
    session = ReviewSession(store, coll, clock=Clock(T0), queue=ids)  # fuzz on (the default)
    for cid in ids:
        assert session.current is not None and session.current.id == cid
        shown = session.preview()[Rating.Good].interval
        first = session.rate(Rating.Good, duration_ms=1000).interval
        assert first == shown
        assert session.undo() is not None and session.current.id == cid
        again = session.preview()[Rating.Good].interval
        assert again == shown, cid  # the same preview after the undo
        assert session.rate(Rating.Good, duration_ms=1000).interval == shown, cid
    used = {
        json.loads(v)["fuzz_by"]
        for (v,) in store.conn.execute(
            "SELECT value FROM sched_params WHERE value LIKE '%fuzz_by%'"
        )
    }
    assert used == {FUZZ_BY_CARD}


def test_the_fuzz_depends_on_the_card_and_its_history_only() -> None:
    sched = Scheduler()  # fuzz on, seed 0, by the card
    card = review_card("x")
    by_key = {sched.review(card, Rating.Good, T0, f"dev:{n}").interval for n in range(20)}
    assert len(by_key) == 1  # whatever id the review gets
    histories = {sched.review(review_card(f"c{n}"), Rating.Good, T0).interval for n in range(40)}
    assert len(histories) > 1  # (a fuzz still: each card draws its own)
    later = {
        sched.review(
            CardState(
                **{**review_card("x").__dict__, "last_review": T0 - timedelta(days=30, minutes=m)}
            ),
            Rating.Good,
            T0,
        ).interval
        for m in range(40)
    }
    assert len(later) > 1  # another history (its last review's time) draws anew
    # the reviews of rounds 7-11 keep their own seeding: by the review's id
    old = Scheduler(fuzz_by=FUZZ_BY_REVIEW)
    assert len({old.review(card, Rating.Good, T0, f"dev:{n}").interval for n in range(40)}) > 1


def _rate(store: Store, cid: str, rating: int, at: datetime, sched: Scheduler) -> None:
    def decide(prev: CardState) -> CardState:
        when = at if prev.last_review is None else max(at, prev.last_review + timedelta.resolution)
        return sched.review(prev, rating, when, store.next_review_key()).state

    store.rate_card(CardState(id=cid), decide, rating, at, None, sched.replay_params())


def test_older_reviews_replay_bit_for_bit_on_a_fresh_device(tmp_path: Path) -> None:
    """A database whose log holds reviews of the three seedings (none, "review", "card"): a
    fresh device that takes it in by sync replays each review with its own parameters and
    holds exactly the states (intervals) the first device stored."""
    folder = tmp_path / "shared"
    folder.mkdir()
    a, b = Store.open(tmp_path / "a.db"), Store.open(tmp_path / "b.db")
    schedulers = [Scheduler(fuzz_by=None), Scheduler(fuzz_by=FUZZ_BY_REVIEW), Scheduler()]
    for i in range(6):  # each card's log mixes the seedings: weeks-long, fuzzed intervals
        cid = f"c{i}"
        at = T0
        for k, rating in enumerate((4, 3, 3, 3, 3, 3)):
            _rate(a, cid, rating, at, schedulers[(i + k) % 3])
            at = a.card(cid).due  # type: ignore[union-attr]
    before = {cid: s.due for cid, s in a.cards().items()}
    assert len({(d - T0).days for d in before.values()}) > 1
    kinds = {
        json.loads(v).get("fuzz_by") for (v,) in a.conn.execute("SELECT value FROM sched_params")
    }
    assert kinds == {None, FUZZ_BY_REVIEW, FUZZ_BY_CARD}
    sync(a, folder)
    mine = folder / devices.device_id(a.conn)
    [(number, path)] = journal.numbered_files(mine).items()
    head = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert number == 1 and head["version"] == 4  # "card": an older prep says to upgrade
    # (reviews months past T0, due years ahead: synced at a clock past the last of them, as
    # an entry over a day ahead of the clock waits: sync16b)
    last = max(r for (r,) in a.conn.execute("SELECT max(at) FROM reviews"))
    sync(b, folder, now=from_us(last) + timedelta(days=1))
    assert {cid: s.due for cid, s in b.cards().items()} == before
    assert view(a) == view(b)
    a.close()
    b.close()


def test_opening_an_older_database_changes_no_stored_interval(tmp_path: Path) -> None:
    """A database written by round 11 (its reviews "fuzz_by": "review"), opened again: every
    card's due and every review's stored state as they were, the parameters unchanged."""
    path = tmp_path / "old.db"
    with Store.open(path) as store:
        sched = Scheduler(fuzz_by=FUZZ_BY_REVIEW)
        for i in range(4):
            at = T0
            for rating in (4, 3, 3, 3):
                _rate(store, f"c{i}", rating, at, sched)
                at = store.card(f"c{i}").due  # type: ignore[union-attr]

    def snapshot() -> tuple:
        conn = sqlite3.connect(path)
        try:
            cards = conn.execute("SELECT id, due, stability FROM cards ORDER BY id").fetchall()
            params = conn.execute("SELECT n, value FROM sched_params ORDER BY n").fetchall()
            return cards, params
        finally:
            conn.close()

    was = snapshot()
    with Store.open(path) as store:
        dumped = store.dump()
    assert snapshot() == was
    assert all(json.loads(v).get("fuzz_by") != FUZZ_BY_CARD for _, v in was[1])
    assert len(dumped["reviews"]) == 16
