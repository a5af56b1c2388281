"""Interday learning steps are due by day, as in Anki (engine/study/due.py): with learning
steps "10m 1d", a new card rated Good at 09:20 on day 1 (its "1d" step) is due on day 2 from
the 4am rollover, counted among "learning" and served with the reviews under the review limit; an
answer to it counts against that limit. The forecast counts a card on the day it is served
(engine/study/forecast.py). Local time is New York's."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from prep.engine.decks.deckcache import load_collection
from prep.engine.store import Mark, Store
from prep.engine.store.reviewlog import pack, times_of, to_us
from prep.engine.study import stats as stats_mod
from prep.engine.study.due import interday, next_due
from prep.engine.study.queue import build_queue, deck_counts, limits_today
from prep.engine.study.scheduler import CardState, Rating, Scheduler, State
from prep.engine.study.session import ReviewSession
from tests.conftest import Clock


def local(*when: int) -> datetime:
    return datetime(*when).astimezone().astimezone(UTC)  # type: ignore[misc]


def counts_at(store: Store, coll, now: datetime) -> dict[str, object]:
    home = deck_counts(store, coll, now)[0]
    queue = build_queue(store, coll, now)
    stats = stats_mod.compute(store, coll, now)
    return {
        "home": (home.new, home.learning, home.due),
        "queue": (len(queue.new), queue.learning, len(queue.due) - queue.learning),
        "session": ReviewSession(store, coll, clock=Clock(now)).counts(),
        "stats session": (stats.session.new, stats.session.learning, stats.session.due),
        "stats due now": stats.due.now,
        "forecast today": stats.forecast[0].due,
    }


def one_day_steps(store: Store, coll, n: int, at: datetime) -> list[str]:
    """``n`` new cards rated Good at ``at``: each on its "1d" step, due at ``at`` + 1 day.
    Returns their ids."""
    store.update_settings(learning_steps_min=[10.0, 1440.0], new_per_day=n)
    session = ReviewSession(store, coll, clock=Clock(at), scheduler=Scheduler(store.settings()))
    ids = []
    while session.current is not None:
        ids.append(session.current.id)
        session.rate(Rating.Good, duration_ms=1000)
    store.update_settings(new_per_day=0)
    assert len(ids) == n
    for cid in ids:
        state = store.card(cid)
        assert state is not None and state.state == State.Learning
        assert state.due == at + timedelta(days=1)
        assert interday(state.state, state.due, state.last_review)
    return ids


@pytest.fixture
def setup(new_york_local_time, db_path: Path, small_deck_dir: Path):
    coll = load_collection([small_deck_dir], include_bundled=False)
    store = Store.open(db_path)
    yield store, coll
    store.close()


def test_a_one_day_step_is_due_from_the_rollover_everywhere(setup) -> None:
    store, coll = setup
    (cid,) = one_day_steps(store, coll, 1, local(2026, 3, 3, 9, 20))  # due 09:20 on day 2
    nothing = {
        "home": (0, 0, 0),
        "queue": (0, 0, 0),
        "session": (0, 0, 0),
        "stats session": (0, 0, 0),
        "stats due now": 0,
        "forecast today": 0,
    }
    assert counts_at(store, coll, local(2026, 3, 4, 3, 59)) == nothing
    one = {
        "home": (0, 1, 0),
        "queue": (0, 1, 0),
        "session": (0, 1, 0),
        "stats session": (0, 1, 0),
        "stats due now": 1,
        "forecast today": 1,
    }
    assert counts_at(store, coll, local(2026, 3, 4, 4, 0)) == one
    assert counts_at(store, coll, local(2026, 3, 4, 8, 0)) == one  # (its step: 09:20)
    # the end-of-session line on day 1 says day 2's rollover, not 09:20
    assert next_due(store, local(2026, 3, 3, 10, 0)) == local(2026, 3, 4, 4, 0)
    # served at 08:00, not early: it is due today
    session = ReviewSession(store, coll, clock=Clock(local(2026, 3, 4, 8, 0)))
    assert session.current is not None and session.current.id == cid
    assert session.early is None
    session.rate(Rating.Good, duration_ms=1000)
    assert session.current is None
    state = store.card(cid)
    assert state is not None and state.state == State.Review


def test_a_relearning_step_of_a_day_is_due_by_day(setup) -> None:
    store, coll = setup
    store.update_settings(relearning_steps_min=[1440.0], new_per_day=0)
    rated = local(2026, 3, 3, 21, 0)
    store.put_card(
        CardState(
            id="roles",
            deck="small",
            state=int(State.Review),
            step=None,
            stability=3.0,
            difficulty=5.0,
            due=rated,
            last_review=rated - timedelta(days=3),
            reps=3,
        )
    )
    session = ReviewSession(store, coll, clock=Clock(rated), new_limit=0)
    assert session.current is not None and session.current.id == "roles"
    session.rate(Rating.Again, duration_ms=1000)
    state = store.card("roles")
    assert state is not None and state.state == State.Relearning
    assert state.due == local(2026, 3, 4, 21, 0)
    at = local(2026, 3, 4, 8, 0)  # 13 hours before its step, on its day
    assert counts_at(store, coll, at)["home"] == (0, 1, 0)
    assert counts_at(store, coll, at)["session"] == (0, 1, 0)


def test_interday_steps_come_first_under_the_review_limit_and_count_against_it(setup) -> None:
    store, coll = setup
    ids = one_day_steps(store, coll, 2, local(2026, 3, 3, 9, 20))
    review = CardState(
        id="flag",
        deck="small",
        state=int(State.Review),
        step=None,
        stability=3.0,
        difficulty=5.0,
        due=local(2026, 3, 4, 6, 0),  # due before the steps' 09:20
        last_review=local(2026, 3, 1, 6, 0),
        reps=2,
    )
    store.put_card(review)
    store.update_settings(review_limit=2)
    now = local(2026, 3, 4, 8, 0)
    assert counts_at(store, coll, now)["home"] == (0, 2, 0)  # the steps take the limit
    queue = build_queue(store, coll, now)
    assert sorted(queue.due) == sorted(ids)
    assert limits_today(store, coll, now, queue).reviews_reached  # the review waits
    session = ReviewSession(store, coll, clock=Clock(now))
    served = []
    while session.current is not None:
        served.append(session.current.id)
        session.rate(Rating.Good, duration_ms=1000)
    assert sorted(served) == sorted(ids)
    # two answers to interday steps today: the limit is used up, the review still waits
    later = local(2026, 3, 4, 12, 0)
    assert counts_at(store, coll, later)["home"] == (0, 0, 0)
    assert counts_at(store, coll, later)["session"] == (0, 0, 0)
    assert stats_mod.compute(store, coll, later).due.now == 1
    store.update_settings(review_limit=3)
    assert counts_at(store, coll, later)["home"] == (0, 0, 1)


def test_the_forecast_counts_a_card_on_the_day_it_is_served(setup) -> None:
    """Buried today: not today, but tomorrow (it comes back); suspended: on no day, and not
    "due by the end of tomorrow"."""
    store, coll = setup
    now = local(2026, 3, 4, 9, 0)
    for i, cid in enumerate(("roles", "pick-one", "flag")):
        store.put_card(
            CardState(
                id=cid,
                deck="small",
                state=int(State.Review),
                step=None,
                stability=3.0,
                difficulty=5.0,
                due=local(2026, 3, 4 + i, 10, 0),  # today, tomorrow, the day after
                last_review=local(2026, 3, 1, 10, 0),
                reps=2,
            )
        )
    store.update_settings(new_per_day=0)
    before = [d.due for d in stats_mod.compute(store, coll, now).forecast[:3]]
    assert before == [1, 1, 1]
    tomorrow = local(2026, 3, 5, 4, 0)
    store.set_mark("roles", Mark(buried_until=tomorrow), at=now)  # buried today
    store.set_mark("pick-one", Mark(suspended=True), at=now)
    stats = stats_mod.compute(store, coll, now)
    assert [d.due for d in stats.forecast[:3]] == [0, 1, 1]  # roles tomorrow, pick-one never
    assert (stats.due.today, stats.due.tomorrow) == (0, 1)
    summary = ReviewSession(store, coll, clock=Clock(now)).summary()
    assert summary["due_by_tomorrow"] == 1  # roles (back tomorrow); not pick-one
    # tomorrow, roles is served: what the forecast said
    assert deck_counts(store, coll, local(2026, 3, 5, 9, 0))[0].due == 1 + 0
    assert {c for c in build_queue(store, coll, local(2026, 3, 5, 9, 0)).due} == {"roles"}


def test_the_log_gives_a_state_s_times_from_its_head_alone() -> None:
    """times_of reads (last review, due) as unpack would, for every form pack writes."""
    at = to_us(datetime(2026, 3, 3, 9, 30, tzinfo=UTC))
    base = CardState(id="c", deck="d", state=1, step=1, stability=2.5, difficulty=5.0)
    ref = replace(base, reps=1)
    forms = [
        replace(base, due=datetime(2026, 3, 4, 9, 30, tzinfo=UTC), last_review=None, reps=2),
        replace(
            base,
            due=datetime(2026, 3, 4, 9, 30, 0, 7, tzinfo=UTC),
            last_review=datetime(2026, 3, 3, 9, 30, tzinfo=UTC),
            reps=2,
        ),
        replace(
            base,
            step=None,
            stability=None,
            due=datetime(2026, 3, 3, 9, 40, tzinfo=UTC),
            last_review=datetime(2026, 3, 2, 1, 0, tzinfo=UTC),
            reps=7,
            deck="other",
        ),
        replace(base, due=None, last_review=datetime(2026, 3, 3, 9, 30, tzinfo=UTC)),
        replace(base, state=200, due=datetime(2026, 3, 5, tzinfo=UTC), last_review=None),
    ]
    for state in forms:
        blob = pack(state, "c", ref, at)
        assert times_of(blob, at) == (state.last_review, state.due)
    assert times_of(None, at) == (None, None) and times_of(b"\xfe\x00", at) == (None, None)


def test_a_step_whose_due_is_not_a_time_is_still_served_to_be_skipped(setup) -> None:
    """A hand-edited due ('tomorrow') on a step set on an earlier day is not taken for an
    interday step: the queue serves it last and the session skips it with a message."""
    store, coll = setup
    (cid,) = one_day_steps(store, coll, 1, local(2026, 3, 3, 9, 20))
    with store.transaction():
        store.conn.execute("UPDATE cards SET due = 'tomorrow' WHERE id = ?", (cid,))
    now = local(2026, 3, 4, 9, 0)
    assert build_queue(store, coll, now).due == [cid]
    session = ReviewSession(store, coll, clock=Clock(now))
    assert session.current is None
    assert [c for c, _ in session.skipped] == [cid]
