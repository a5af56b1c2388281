"""What a learner is served and told, across terminals and days (round 14): an open session
agrees with a new one about interday steps, the --limit "held back" lines count as the queue
serves, review ahead takes learning cards too, and an open collection follows a deck file
another prep re-read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from prep.engine.decks.deckcache import load_collection
from prep.engine.store import Store
from prep.engine.study.queue import build_queue
from prep.engine.study.scheduler import Rating, Scheduler
from prep.engine.study.session import ReviewSession
from tests.conftest import Clock


def local(*when: int) -> datetime:
    """A local wall-clock time (the zone the test pinned) in UTC."""
    return datetime(*when).astimezone().astimezone(UTC)  # type: ignore[misc]


def _session(store: Store, coll, clock: Clock, **kw) -> ReviewSession:
    return ReviewSession(store, coll, clock=clock, scheduler=Scheduler(store.settings()), **kw)


def test_a_ten_minute_step_set_at_0355_is_served_from_the_rollover_in_the_open_session(
    new_york_local_time, db_path: Path, small_deck_dir: Path
) -> None:
    """Rated at 03:55 onto its 10-minute step, a card is due at 04:05 on the next study day:
    due by day, from 04:00 (engine/study/due.py). A new session serves it from 04:00 and not
    before; the session open since 03:55 does the same (it showed it at 04:05, and at 03:56
    early, within the learn-ahead limit, when nothing else was left)."""
    coll = load_collection([small_deck_dir], include_bundled=False)
    with Store.open(db_path) as store:
        store.update_settings(learning_steps_min=[1.0, 10.0], new_per_day=2)
        clock = Clock(local(2026, 3, 3, 3, 55))
        session = _session(store, coll, clock)
        first = session.current
        assert first is not None
        session.rate(Rating.Good, duration_ms=1000)  # -> its 10-minute step, due 04:05
        state = store.card(first.id)
        assert state is not None and state.due == local(2026, 3, 3, 4, 5)
        clock.advance(minutes=1)  # 03:56: a new session serves it not yet
        assert first.id not in build_queue(store, coll, clock()).ids
        second = session.current
        assert second is not None and second.id != first.id
        session.rate(Rating.Easy, duration_ms=1000)  # (the other new card: nothing else left)
        assert session.current is None  # not shown early: it is tomorrow's
        assert session.counts() == (0, 0, 0)  # as home counts at 03:56
        clock.now = local(2026, 3, 3, 4, 0, 30)  # a new session serves it from 04:00
        assert first.id in build_queue(store, coll, clock()).ids
        assert session.current is not None and session.current.id == first.id
        assert session.early is None
        assert session.counts() == (0, 1, 0)
