"""An app left open across days and decks (round 14, day14): a session open across the 4 am
rollover takes in the new day at its next card (as Anki's queues are rebuilt when the day
changes), and an open collection notices a deck file added to (or removed from) its folder."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from prep.engine.decks.deckcache import load_collection
from prep.engine.store import Store
from prep.engine.study.scheduler import Rating, Scheduler
from prep.engine.study.session import ReviewSession
from prep.engine.timeutil import study_day_start
from tests.conftest import Clock


def local(*when: int) -> datetime:
    """A local wall-clock time (the zone the test pinned) in UTC."""
    return datetime(*when).astimezone().astimezone(UTC)  # type: ignore[misc]


def _deck(folder: Path, name: str, n: int) -> Path:
    cards = "".join(
        f"  - id: {name}-{i}\n    kind: recall\n    prompt: Q {name} {i}?\n    answer: A {i}.\n"
        for i in range(n)
    )
    path = folder / f"{name}.yaml"
    path.write_text(f"deck: {name}\ntitle: {name.title()}\ncards:\n{cards}", "utf-8")
    return path


def _session(store: Store, coll, clock: Clock, **kw) -> ReviewSession:
    return ReviewSession(store, coll, clock=clock, scheduler=Scheduler(store.settings()), **kw)


def test_a_session_open_across_the_rollover_serves_the_new_days_queue_at_its_next_card(
    new_york_local_time, tmp_path: Path
) -> None:
    """Open at 03:50 with its two new cards of the day, the session shows the second; at
    04:01 its rating lands on that card, and the next card is the new study day's: the
    reviews due that day join and new cards come again (the new-card limit is the new day's,
    the card rated at 04:01 its first). Its queue and counts are a new session's; before, it ended with nothing left."""
    folder = tmp_path / "decks"
    folder.mkdir()
    _deck(folder, "one", 8)
    coll = load_collection([folder], include_bundled=False)
    with Store.open(tmp_path / "prep.db") as store:
        store.update_settings(new_per_day=2)
        clock = Clock(local(2026, 3, 1, 9, 0))
        first = _session(store, coll, clock)
        rated = []
        while (card := first.current) is not None:
            rated.append(card.id)
            first.rate(Rating.Easy, duration_ms=1000)  # reviews, due days later
        assert len(rated) == 2
        due = min(s.due for s in store.cards(rated).values() if s.due is not None)
        assert isinstance(due, datetime)
        rollover = study_day_start(due)
        clock.now = rollover - timedelta(minutes=10)  # 03:50 the day before
        session = _session(store, coll, clock)
        assert session.counts() == (2, 0, 0)  # the day before: its two new cards only
        session.rate(Rating.Easy, duration_ms=1000)
        shown = session.current
        assert shown is not None
        clock.now = rollover + timedelta(minutes=1)  # 04:01, the card still on screen
        assert session.current is not None and session.current.id == shown.id
        session.rate(Rating.Easy, duration_ms=1000, card_id=shown.id)
        state = store.card(shown.id)
        assert state is not None and state.last_review == clock.now  # (on the card shown)
        fresh = _session(store, coll, clock)
        assert session.current is not None
        assert session.counts() == fresh.counts()
        # the card rated at 04:01 is the new day's first new card: one more of two
        assert session.counts()[0] == 1 and session.counts()[2] >= 1
        assert sorted(session.queue) == sorted(fresh.queue)
        served = []
        while (card := session.current) is not None:
            served.append(card.id)
            session.rate(Rating.Easy, duration_ms=1000)
        assert sorted(served) == sorted(fresh.queue)


def test_a_learning_card_still_below_target_comes_on_the_interview_morning_as_learning(
    new_york_local_time, tmp_path: Path
) -> None:
    """Interview on Thu 5 Mar. Rated Again then Good on Wed evening (the last day), a new
    card is on its 3-day step (due Sat, after the interview) with a recall at noon on the day
    far below the desired retention: on the morning it comes, counted as learning, as a
    review below target does (the plan's top-up); one rated Easy (above target) does not.
    Before: the top-up took reviews only, and the learning card waited for Saturday."""
    from prep.engine.study.plan import Plan
    from prep.engine.study.queue import build_queue, deck_counts

    folder = tmp_path / "decks"
    folder.mkdir()
    _deck(folder, "one", 2)
    coll = load_collection([folder], include_bundled=False)
    with Store.open(tmp_path / "prep.db") as store:
        store.update_settings(learning_steps_min=[10.0, 4320.0], new_per_day=2)
        store.update_settings(interview_date="2026-03-05")
        clock = Clock(local(2026, 3, 4, 20, 0))
        session = _session(store, coll, clock)
        assert session.current is not None and session.current.id == "one-0"
        session.rate(Rating.Again, 1000)  # -> its 10-minute step
        assert session.current is not None and session.current.id == "one-1"
        session.rate(Rating.Easy, 1000)  # -> a review, above target on the day
        clock.advance(minutes=10)
        assert session.current is not None and session.current.id == "one-0"
        session.rate(Rating.Good, 1000)  # -> its 3-day step, due Sat 20:10
        weak = store.card("one-0")
        assert weak is not None and weak.due == local(2026, 3, 7, 20, 10)
        morning = local(2026, 3, 5, 8, 0)
        plan = Plan.of(store.settings(), morning)
        assert plan is not None and plan.below(weak)
        assert plan.due(weak) == local(2026, 3, 5, 4, 0)  # the morning of the day
        queue = build_queue(store, coll, morning)
        assert queue.ids == ["one-0"] and queue.learning_ids == {"one-0"}
        home = deck_counts(store, coll, morning)[0]
        assert (home.new, home.learning, home.due) == (0, 1, 0)
        later = _session(store, coll, Clock(morning))
        assert later.counts() == (0, 1, 0)
        assert later.current is not None and later.current.id == "one-0"


def test_a_deck_file_added_to_or_removed_from_the_folder_reaches_the_open_app(
    tmp_path: Path,
) -> None:
    """A deck file added to the decks folder while the app is open: home's counts, a session
    started after it and the open session's next take-in serve its cards; one removed leaves;
    one with bad YAML is said once, as FILE:LINE: message, and its cards are not served. When
    nothing changed, refresh loads nothing (the folder listed, no file read). Before: only
    the files loaded at start, until a restart or r."""
    from prep.engine.decks import deckcache
    from prep.engine.study.queue import deck_counts
    from tests.conftest import FIXED_NOW

    folder = tmp_path / "decks"
    folder.mkdir()
    _deck(folder, "one", 3)
    with Store.open(tmp_path / "prep.db") as store:
        store.update_settings(new_per_day=20)
        coll = deckcache.load(store, [folder], include_bundled=False)
        assert coll.refresh(store) is False  # (nothing changed)
        session = _session(store, coll, Clock(FIXED_NOW))
        assert session.counts() == (3, 0, 0)
        _deck(folder, "two", 2)
        assert deck_counts(store, coll, FIXED_NOW)[0].new == 5  # home, then stats
        assert "two-1" in coll and coll.refresh(store) is False
        assert _session(store, coll, Clock(FIXED_NOW)).counts() == (5, 0, 0)
        session.take_in_changes()  # (a sync, or another terminal's commit, between cards)
        assert session.counts() == (5, 0, 0)
        _deck(folder, "three", 1)
        (folder / "bad.yaml").write_text("deck: bad\ncards: [\n", "utf-8")
        session.take_in_changes()
        assert session.counts() == (6, 0, 0)
        said = session.take_notices()
        assert len(said) == 1 and said[0].startswith("Deck error: ") and "bad.yaml:" in said[0]
        assert coll.take_new_errors() == []  # (said once)
        assert coll.refresh(store) is False  # (no reload again for the same bad file)
        (folder / "bad.yaml").unlink()
        (folder / "one.yaml").unlink()
        on_screen = session.current  # (shown since the counts were asked for: it stays)
        assert on_screen is not None and on_screen.id == "one-0"
        session.take_in_changes()
        assert session.counts() == (4, 0, 0) and session.take_notices() == []
        served = []
        while (card := session.current) is not None and len(served) < 10:
            served.append(card.id)
            session.rate(Rating.Easy, duration_ms=1000)
        assert served[0] == "one-0" and sorted(served[1:]) == ["three-0", "two-0", "two-1"]
        assert "one-0" not in coll and coll.errors == []


def test_refresh_loads_again_only_once_for_a_deck_file_listed_twice(tmp_path: Path) -> None:
    """A folder given with one of its files, and a link in it to that file: each is one deck
    file (collect_deck_files keeps it once). The open collection's listing settles: at most
    one reload, then none while nothing changes (never a reload at every count)."""
    from prep.engine.decks import deckcache

    folder = tmp_path / "decks"
    folder.mkdir()
    one = _deck(folder, "one", 2)
    (folder / "again.yaml").symlink_to(one)
    with Store.open(tmp_path / "prep.db") as store:
        coll = deckcache.load(store, [folder, one], include_bundled=False)
        assert len(coll) == 2
        coll.refresh(store)
        assert coll.refresh(store) is False and coll.refresh(store) is False
        assert len(coll) == 2 and coll.take_new_errors() == []


def test_another_terminals_step_on_the_next_day_joins_the_open_session_at_the_rollover(
    new_york_local_time, tmp_path: Path
) -> None:
    """Another terminal rates a new card at 03:55 onto its 10-minute step (due 04:05: the
    next study day's, from 04:00). The session open here since 03:50 does not show it before
    04:00, and at its first card after 04:00 counts and serves it as a new session does."""
    folder = tmp_path / "decks"
    folder.mkdir()
    _deck(folder, "one", 6)
    coll = load_collection([folder], include_bundled=False)
    db = tmp_path / "prep.db"
    with Store.open(db) as mine, Store.open(db) as theirs:
        mine.update_settings(new_per_day=3, learning_steps_min=[1.0, 10.0])
        clock = Clock(local(2026, 3, 3, 3, 50))
        session = _session(mine, coll, clock)  # (no card shown yet)
        other = _session(theirs, coll, Clock(local(2026, 3, 3, 3, 55)), deck="one")
        card = other.current
        assert card is not None
        other.rate(Rating.Good, duration_ms=1000)  # -> due 04:05, an interday step
        clock.now = local(2026, 3, 3, 3, 56)
        seen = []
        while (shown := session.current) is not None and len(seen) < 10:
            seen.append(shown.id)
            session.rate(Rating.Easy, duration_ms=1000)
        assert card.id not in seen  # (tomorrow's: not shown early)
        clock.now = local(2026, 3, 3, 4, 1)
        assert session.current is not None
        fresh = _session(mine, coll, clock)
        assert session.counts() == fresh.counts() and session.counts()[1] == 1
        assert card.id in [session.current.id, *session.queue, *(c for _, c in session.learning)]
