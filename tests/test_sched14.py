"""What a learner is served and told, across terminals and days (round 14): an open session
agrees with a new one about interday steps, the --limit "held back" lines count as the queue
serves, review ahead takes learning cards too, and an open collection follows a deck file
another prep re-read."""

from __future__ import annotations

from collections import deque
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
        # the new study day's (day14): its two new cards too, as a new session counts them
        assert session.counts() == _session(store, coll, clock).counts() == (2, 1, 0)


def _history(store: Store, coll, seed: int) -> datetime:
    """A few days of ratings (seeded): reviews, learning and relearning steps (interday ones
    too: a "1d" step), then a card suspended and one buried. Returns the last rating's time."""
    import random

    rng = random.Random(seed)
    store.update_settings(
        learning_steps_min=[10.0, 1440.0], relearning_steps_min=[10.0], learn_ahead_min=0
    )
    at = local(2026, 3, 3, 9, 20)
    for _ in range(rng.randrange(2, 6)):
        session = _session(store, coll, Clock(at))
        while session.current is not None and len(session.done) < 6:
            session.rate(rng.choice([Rating.Again, Rating.Good, Rating.Good, Rating.Easy]), 1000)
        at += timedelta(hours=rng.choice([5, 19, 23, 30, 47]))
    ids = sorted(store.cards())
    marked = rng.sample(ids, 2)
    session = _session(store, coll, Clock(at))
    session.queue = deque(marked[:1])
    if rng.random() < 0.7:
        session.set_mark("suspend")
    session.queue = deque(marked[1:])
    if rng.random() < 0.7:
        session.set_mark("bury")
    return at


def test_the_held_back_and_next_due_lines_agree_with_what_a_new_session_serves(
    new_york_local_time, db_path: Path, small_deck_dir: Path
) -> None:
    """A --limit 1 session run to its end: "Past those held back" is said when, and only when,
    a new session at that moment serves a card due (not new); otherwise "Next card due in X"
    names the moment a new session first serves one (due by study day from 4 am, a step by
    its time; suspended cards never, buried ones from their bury's end). Before: cards due
    counted by exact time, suspended ones included, and the next due a suspended card's."""
    from prep.engine.study.takein import held_due

    coll = load_collection([small_deck_dir], include_bundled=False)
    tick = timedelta(microseconds=1)
    checked = held = 0
    for seed in range(8):
        path = db_path.with_name(f"p{seed}.db")
        with Store.open(path) as store:
            last = _history(store, coll, seed)
            store.update_settings(new_per_day=0)
            for hours in (0.5, 3, 17, 18.7, 20, 26, 41, 70):
                now = last + timedelta(hours=hours)

                def serves(at: datetime) -> bool:
                    fresh = _session(store, coll, Clock(at))
                    return fresh.counts()[1] + fresh.counts()[2] > 0

                limited = _session(store, coll, Clock(now), limit=1)
                if limited.current is None:
                    continue
                limited.rate(Rating.Easy, 1000)  # (the rest held back by --limit 1)
                assert limited.finished
                said = limited.held_back and held_due(limited)
                assert bool(said) == serves(now), (seed, hours)
                held += bool(said)
                if not said:
                    nxt = limited.summary()["next_due"]
                    if nxt is not None:
                        assert not serves(nxt - tick) and serves(nxt), (seed, hours, nxt)
                checked += 1
    assert checked > 20 and 0 < held < checked


EXTRA = """\
  - id: added-one
    kind: recall
    prompt: What does W_V do?
    answer: It writes what a head moves.
  - id: added-two
    kind: recall
    prompt: What does W_Q do?
    answer: It asks what a head looks for.
"""


def test_cards_added_to_a_deck_file_another_prep_re_read_are_served_in_this_session(
    tmp_path: Path, small_deck_dir: Path
) -> None:
    """Another terminal re-reads an edited deck file (two cards added, one removed): this
    session, open since before, serves the added cards and skips the removed one, and the
    collection counts them, without a restart. Before: only the cards already queued."""
    from prep.engine.decks import deckcache
    from tests.conftest import FIXED_NOW, SMALL_DECK

    db = tmp_path / "shared.db"
    deck_file = small_deck_dir / "small.yaml"
    with Store.open(db) as mine, Store.open(db) as theirs:
        mine.update_settings(new_per_day=10)
        coll = deckcache.load(mine, [small_deck_dir], include_bundled=False)
        session = _session(mine, coll, Clock(FIXED_NOW))
        assert session.counts() == (4, 0, 0)
        first = session.current
        assert first is not None and first.id == "roles"
        # the other terminal: "flag" removed, two cards added, and the file read again
        kept = SMALL_DECK[: SMALL_DECK.index("  - id: flag")]
        deck_file.write_text(kept + EXTRA, encoding="utf-8")
        other = deckcache.load(theirs, [small_deck_dir], include_bundled=False)
        assert len(other) == 5
        served = []
        while session.current is not None and len(served) < 10:
            served.append(session.current.id)
            session.rate(Rating.Easy, duration_ms=1000)
        assert "flag" not in served
        assert {"added-one", "added-two"} <= set(served)
        assert len(coll) == 5 and "added-one" in coll and "flag" not in coll


def test_a_session_or_home_after_another_prep_re_read_a_deck_file_counts_its_new_cards(
    tmp_path: Path, small_deck_dir: Path
) -> None:
    """Opened before the other terminal re-read the edited file: a session started after it
    and home's counts take the added cards (before: 4 new, the file as first loaded)."""
    from prep.engine.decks import deckcache
    from prep.engine.study.queue import deck_counts
    from tests.conftest import FIXED_NOW, SMALL_DECK

    db = tmp_path / "shared.db"
    with Store.open(db) as mine, Store.open(db) as theirs:
        mine.update_settings(new_per_day=10)
        coll = deckcache.load(mine, [small_deck_dir], include_bundled=False)
        assert deck_counts(mine, coll, FIXED_NOW)[0].new == 4
        (small_deck_dir / "small.yaml").write_text(SMALL_DECK + EXTRA, encoding="utf-8")
        deckcache.load(theirs, [small_deck_dir], include_bundled=False)
        session = _session(mine, coll, Clock(FIXED_NOW))
        assert session.counts() == (6, 0, 0)
        assert deck_counts(mine, coll, FIXED_NOW)[0].new == 6
        assert coll.refresh(mine) is False  # (nothing re-read since: one statement)
        (small_deck_dir / "small.yaml").write_text(SMALL_DECK, encoding="utf-8")
        deckcache.load(theirs, [small_deck_dir], include_bundled=False)  # and back again
        assert deck_counts(mine, coll, FIXED_NOW)[0].new == 4 and "added-one" not in coll


def test_review_ahead_takes_learning_cards_due_within_the_days_and_no_suspended_card(
    new_york_local_time, db_path: Path, small_deck_dir: Path
) -> None:
    """As Anki's "review ahead" (its search prop:due<=N: review cards, interday and intraday
    learning steps; a filtered deck takes no suspended or buried card): a card on its "1d"
    step and one on a 2-hour step come too, counted as learning in the session; the
    suspended review does not, nor the step within the learn-ahead window (served now).
    Before: review cards only, the suspended one included."""
    from prep.engine.study.queue import review_ahead_ids

    coll = load_collection([small_deck_dir], include_bundled=False)
    with Store.open(db_path) as store:
        store.update_settings(learning_steps_min=[120.0, 1440.0], new_per_day=4)
        at = local(2026, 3, 3, 9, 20)
        session = _session(store, coll, Clock(at))
        plan = {"roles": Rating.Good, "pick-one": Rating.Again, "roles-follow": Rating.Easy}
        while session.current is not None:
            session.rate(plan.get(session.current.id, Rating.Easy), 1000)
        session = _session(store, coll, Clock(at))
        session.queue = deque(["flag"])
        session.set_mark("suspend")
        # (roles: its 1d step, due tomorrow; pick-one: its 2-hour step, due at 11:20)
        now = at + timedelta(minutes=5)
        assert set(build_queue(store, coll, now).ids) == set()
        ahead = review_ahead_ids(store, coll, now, days=30)
        assert ahead == ["pick-one", "roles", "roles-follow"]
        assert review_ahead_ids(store, coll, now, days=30, deck="other") == []
        later = _session(store, coll, Clock(now), queue=ahead)
        assert later.counts() == (0, 2, 1)
        # within the learn-ahead window, the 2-hour step is today's session's, not ahead
        soon = local(2026, 3, 3, 11, 5)
        assert "pick-one" not in review_ahead_ids(store, coll, soon, days=30)
        assert _session(store, coll, Clock(soon)).counts()[1] == 1  # (home: learning 1)


def test_the_plan_brings_learning_cards_forward_and_counts_them_as_learning(
    new_york_local_time, db_path: Path, small_deck_dir: Path
) -> None:
    """Interview on Thu 5 Mar: three cards rated on Tue onto a 3-day step (due Fri, after
    it) come on Wed, the day before, with the review the plan brings forward, as review
    ahead takes learning cards; home, the queue, the session and stats count them as
    learning (3), the review as due (1), and the rating on the day keeps its own step.
    Before: the learning cards were not served before the interview (0, 0, 1)."""
    from prep.engine.study import stats as stats_mod
    from prep.engine.study.queue import deck_counts

    coll = load_collection([small_deck_dir], include_bundled=False)
    with Store.open(db_path) as store:
        store.update_settings(learning_steps_min=[10.0, 4320.0], new_per_day=4)
        at = local(2026, 3, 3, 9, 20)
        session = _session(store, coll, Clock(at))
        while session.current is not None:
            cid = session.current.id
            session.rate(Rating.Easy if cid == "flag" else Rating.Good, 1000)
        store.update_settings(interview_date="2026-03-05")
        for now in (local(2026, 3, 4, 9, 0), local(2026, 3, 4, 23, 0)):
            queue = build_queue(store, coll, now)
            assert set(queue.ids) == {"roles", "pick-one", "roles-follow", "flag"}
            assert queue.learning_ids == {"roles", "pick-one", "roles-follow"}
            home = deck_counts(store, coll, now)
            assert [(r.new, r.learning, r.due) for r in home] == [(0, 3, 1), (0, 3, 1)]
            session = _session(store, coll, Clock(now))
            assert session.counts() == (0, 3, 1)
            stats = stats_mod.compute(store, coll, now)
            assert (stats.session.new, stats.session.learning, stats.session.due) == (0, 3, 1)
        store.update_settings(review_limit=2)  # (the plan's cards under the limit, in order)
        queue = build_queue(store, coll, local(2026, 3, 4, 9, 0))
        home = deck_counts(store, coll, local(2026, 3, 4, 9, 0))[0]
        assert len(queue.due) == 2
        assert (home.learning, home.due) == (queue.learning, len(queue.due) - queue.learning)
        store.update_settings(review_limit=200)
        session = _session(store, coll, Clock(local(2026, 3, 4, 9, 0)))
        served = []
        while session.current is not None and len(served) < 10:
            served.append(session.current.id)
            session.rate(Rating.Good, 1000)
        assert sorted(served) == ["flag", "pick-one", "roles", "roles-follow"]
        after = local(2026, 3, 4, 9, 30)
        assert build_queue(store, coll, after).ids == []  # (each once: not again the same day)


def test_the_summary_names_the_rollover_for_a_step_on_the_next_study_day(
    new_york_local_time, db_path: Path, small_deck_dir: Path, monkeypatch
) -> None:
    """The session ends at 03:56 with a step due at 04:05 waiting for the 04:00 rollover: the
    summary says so, not "more than the 20-minute learn-ahead limit away" (4 minutes)."""
    from types import SimpleNamespace

    from prep.tui.screens.summary import SummaryScreen

    coll = load_collection([small_deck_dir], include_bundled=False)
    with Store.open(db_path) as store:
        store.update_settings(learning_steps_min=[1.0, 10.0], new_per_day=1)
        clock = Clock(local(2026, 3, 3, 3, 55))
        session = _session(store, coll, clock)
        session.rate(Rating.Good, duration_ms=1000)
        clock.advance(minutes=1)
        assert session.finished
        fake = SimpleNamespace(limit_reasons=list)
        monkeypatch.setattr(SummaryScreen, "prep", property(lambda _self: fake))
        text = SummaryScreen(session).summary_text().plain
        assert "A learning card comes back in 4 minutes" in text, text
        assert "learn-ahead limit away" not in text
        assert "rollover" in text
