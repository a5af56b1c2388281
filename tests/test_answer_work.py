"""The work one answer -> next card does besides SQL (issue 26): the scheduler runs once per
card shown (its four-rating preview), which the preview on reveal and the rating take; the
card's row and the review's id are read once each when a card is shown and once inside the
rating; the replay parameters are encoded once a session. And what is kept is exact: a kept
preview moved to a later time is what fsrs gives then, and a write from elsewhere (another
terminal, a sync, a settings change) is seen. Timing is tests/benchmarks/answer_bench.py's
business; these hold the structure behind it."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import fsrs
import pytest

from prep.engine.decks.collection import CachedCollection
from prep.engine.store import Store, devices
from prep.engine.study import onepass
from prep.engine.study.scheduler import CardState, Outcome, Rating, Scheduler, Settings, State
from prep.engine.study.session import ReviewSession
from tests.conftest import FIXED_NOW, Clock, recall_deck
from tests.test_answer_cost import _traced

CARDS = 12


@pytest.fixture
def deck(tmp_path: Path) -> CachedCollection:
    return recall_deck(tmp_path, CARDS)


@pytest.fixture
def store(tmp_path: Path):
    with Store.open(tmp_path / "prep.db") as s:
        yield s


@pytest.fixture
def fsrs_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many ratings the scheduler computed: 1 for each run of fsrs's review_card, 4 for
    each run of the one-pass preview (engine/study/onepass.py)."""
    runs: list[int] = []
    real, real_four = fsrs.Scheduler.review_card, onepass.four

    def counted(self, *args, **kwargs):
        runs.append(1)
        return real(self, *args, **kwargs)

    def counted_four(*args):
        runs.append(4)
        return real_four(*args)

    monkeypatch.setattr(fsrs.Scheduler, "review_card", counted)
    monkeypatch.setattr(onepass, "four", counted_four)
    return runs


def _in_review(store: Store, deck: CachedCollection, clock: Clock) -> ReviewSession:
    """Every card rated Easy (a Review card, due in days), then a session the day they are
    all due: its answers are Review cards, whose intervals are fuzzed."""
    first = ReviewSession(store, deck, clock=clock, requeue=False)
    while not first.finished:
        first.rate(Rating.Easy, duration_ms=900)
    clock.advance(days=40)
    return ReviewSession(store, deck, clock=clock)


def _answer(session: ReviewSession, clock: Clock) -> tuple[dict[Rating, Outcome], Outcome]:
    """One answer as the app gives it: the card shown, its answer revealed (the preview on
    the rating buttons) seconds later, then rated Good seconds after that."""
    card = session.current
    assert card is not None
    clock.advance(seconds=7)
    shown = session.preview()
    clock.advance(seconds=4)
    outcome = session.rate(Rating.Good, card_id=card.id, content_hash=card.content_hash)
    return shown, outcome


def test_an_answer_runs_the_scheduler_once_per_rating_of_the_card_shown(
    store: Store, deck: CachedCollection, clock: Clock, fsrs_runs: list[int]
) -> None:
    """Showing a card previews its four ratings (the check that the scheduler can rate its
    state); the preview on reveal and the rating take those. Before: 9 runs an answer (the
    check's four, the preview's four again, the rating's one)."""
    session = _in_review(store, deck, clock)
    assert session.current is not None
    for _ in range(CARDS - 1):
        fsrs_runs.clear()
        shown, outcome = _answer(session, clock)
        assert fsrs_runs == [], "the preview and the rating of the card shown ran fsrs again"
        assert session.current is not None  # the next card shown: its four ratings, in one
        assert fsrs_runs == [4]  # pass of our own (fsrs's review_card four times before)
        # the interval on the button is the interval the rating gives (the same review id
        # seeds the fuzz), and Review cards' intervals are fuzzed here
        assert outcome.interval == shown[Rating.Good].interval
        assert outcome.state.due == clock.now + outcome.interval


def test_an_answer_reads_each_card_row_and_review_id_once(
    store: Store, deck: CachedCollection, clock: Clock
) -> None:
    """The next card's row and its review's id when it is shown (one statement); the preview
    on reveal and the rating read neither while nothing has been written (the rating's
    transaction reads the changes mark, holding the write lock). Before: the row 3 times, the
    id 4 times; round 11: twice each (once more inside the rating)."""
    session = _in_review(store, deck, clock)
    assert session.current is not None
    for _ in range(3):
        trace = _traced(store, lambda: (_answer(session, clock), session.current))
        rows = [s for s in trace if s.startswith("SELECT") and "content_hash" in s]
        stamps = [s for s in trace if "SELECT max(id) FROM revlog)" in s]
        assert len(rows) == 1, rows
        assert len(stamps) == 1, stamps
        inside = trace[trace.index("BEGIN IMMEDIATE") : trace.index("COMMIT")]
        assert not any(s in inside for s in rows + stamps), inside


def test_the_replay_parameters_are_encoded_once_a_session(
    store: Store, deck: CachedCollection, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    encoded: list[dict] = []

    class Counting:
        loads = staticmethod(json.loads)

        @staticmethod
        def dumps(obj, **kwargs):
            if isinstance(obj, dict) and "fuzz" in obj:  # (a review's parameters)
                encoded.append(obj)
            return json.dumps(obj, **kwargs)

    monkeypatch.setattr(devices, "json", Counting)
    monkeypatch.setattr(devices, "_encoded", None)
    session = ReviewSession(store, deck, clock=clock)
    for _ in range(5):
        _answer(session, clock)
    assert len(encoded) == 1  # (before: once an answer)
    # a change of settings is a new scheduler: its parameters are encoded (once) and stored
    store.update_settings(desired_retention=0.85)
    for _ in range(3):
        _answer(session, clock)
    assert len(encoded) == 2
    texts = store.conn.execute(
        "SELECT p.value FROM revlog r JOIN sched_params p ON p.n = r.params ORDER BY r.id"
    ).fetchall()
    retentions = [json.loads(t)["desired_retention"] for (t,) in texts]
    assert retentions == [0.9] * 5 + [0.85] * 3


def _random_state(rng: random.Random, at: datetime) -> CardState:
    kind = rng.choice([State.Learning, State.Review, State.Relearning, None])
    if kind is None:  # new
        return CardState(id=f"n{rng.randrange(10**6)}", deck="d", content_hash="h")
    last = at - timedelta(seconds=rng.uniform(0, 90 * 86400))
    return CardState(
        id=f"c{rng.randrange(10**6)}",
        deck="d",
        state=int(kind),
        step=None if kind == State.Review else rng.randrange(3),
        stability=rng.choice([0.05, 0.9, 3.3, 17.0, 120.0]) * rng.uniform(0.5, 2),
        difficulty=rng.uniform(1, 10),
        due=last + timedelta(days=rng.uniform(0, 30)),
        last_review=last,
        reps=rng.randrange(1, 30),
        lapses=rng.randrange(0, 10),
        content_hash="h",
    )


def test_a_kept_preview_moved_to_a_later_time_is_what_fsrs_gives_then() -> None:
    """The preview kept from when a card was shown, taken by the preview on reveal and by
    the rating moments or hours later (or across a day boundary: then computed again), is
    field for field what a scheduler that kept nothing gives at that time."""
    rng = random.Random(26)
    settings = [Settings(), Settings(learning_steps_min=(1.0,), relearning_steps_min=())]
    moved = computed = 0
    for i in range(600):
        shown_at = FIXED_NOW + timedelta(seconds=rng.uniform(0, 400 * 86400))
        card = _random_state(rng, shown_at)
        chosen = settings[i % 2]
        key = None if i % 5 == 0 else f"dev{i % 3}:{rng.randrange(1, 10**6)}"
        later = shown_at + timedelta(seconds=rng.choice([0, 0.5, 7, 600, 5 * 3600, 30 * 3600]))
        keeping = Scheduler(chosen, enable_fuzzing=i % 7 != 0, seed=i % 4)
        fresh = Scheduler(chosen, enable_fuzzing=i % 7 != 0, seed=i % 4)
        keeping.preview(card, shown_at, key)
        fsrs_before = fresh._fsrs
        assert keeping.preview(card, later, key) == fresh.preview(card, later, key)
        fresh = Scheduler(chosen, enable_fuzzing=i % 7 != 0, seed=i % 4)  # keeps nothing
        assert fresh._fsrs is not fsrs_before
        for rating in Rating:
            assert keeping.review(card, rating, later, key) == fresh.review(
                card, rating, later, key
            )
        days = None if card.last_review is None else (later - card.last_review).days
        if days is None or days == (shown_at - card.last_review).days:  # type: ignore[operator]
            moved += 1
        else:
            computed += 1
    assert moved > 300 and computed > 20  # both ways taken


def test_another_card_or_seed_is_never_given_the_kept_preview() -> None:
    sched = Scheduler()
    at = datetime(2026, 5, 1, 12, tzinfo=UTC)
    card = CardState(
        id="a",
        state=int(State.Review),
        step=None,
        stability=30.0,
        difficulty=5.0,
        due=at,
        last_review=at - timedelta(days=30),
        reps=5,
    )
    kept = sched.preview(card, at, "d:1")
    for other, key in [
        (card, "d:2"),
        (CardState(**{**card.__dict__, "stability": 31.0}), "d:1"),
        (CardState(**{**card.__dict__, "id": "b"}), "d:1"),
    ]:
        assert sched.review(other, Rating.Good, at, key) == Scheduler().review(
            other, Rating.Good, at, key
        )
    assert sched.preview(card, at, "d:1") == kept


def test_the_preview_on_reveal_sees_a_write_made_since_the_card_was_shown(
    store: Store, deck: CachedCollection, clock: Clock, tmp_path: Path
) -> None:
    """Another terminal rates the card on screen, or changes the settings, between the card
    being shown and its answer revealed: the preview is of the card and settings as they
    are now (what changed is seen through PRAGMA data_version), never the kept one."""
    session = _in_review(store, deck, clock)
    card = session.current
    assert card is not None
    other = Store.open(tmp_path / "prep.db")
    try:
        at = clock.now
        other.rate_card(
            CardState(id=card.id, deck=card.deck, content_hash=card.content_hash),
            lambda prev: Scheduler().review(prev, Rating.Again, at, other.next_review_key()).state,
            int(Rating.Again),
            at,
        )
        key = store.next_review_key()
        state = store.card(card.id)
        assert state is not None and state.state == State.Relearning
        assert session.preview() == Scheduler(store.settings()).preview(state, clock.now, key)
        other.update_settings(desired_retention=0.8)
        want = Scheduler(store.settings()).preview(state, clock.now, key)
        assert session.preview() == want
        assert (
            want[Rating.Easy].interval
            != Scheduler().preview(state, clock.now, key)[Rating.Easy].interval
        )
    finally:
        other.close()
    # and this connection's own writes: undo puts the rated card back with its state before
    _answer(session, clock)
    back = session.undo()
    assert back is not None and session.current is not None
    restored = store.card(back.id)
    assert restored is not None
    assert session.preview() == Scheduler(store.settings()).preview(
        restored, clock.now, store.next_review_key()
    )


def test_settings_saved_invalid_meanwhile_are_still_reported_by_the_preview(
    store: Store, deck: CachedCollection, clock: Clock, tmp_path: Path
) -> None:
    """A hand edit leaves the saved settings invalid while a session is open: showing the
    next card does not fail, and the preview on reveal says so (StoreError, which the app
    shows) instead of showing intervals from settings that are no longer saved."""
    from prep.engine.store import StoreError

    session = ReviewSession(store, deck, clock=clock)
    _answer(session, clock)
    other = Store.open(tmp_path / "prep.db")
    try:
        with other.transaction():
            other.conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) "
                "VALUES ('settings', '{\"desired_retention\": 7}')"
            )
    finally:
        other.close()
    assert session.current is not None
    with pytest.raises(StoreError, match="settings are invalid"):
        session.preview()


def test_a_card_shown_is_read_in_few_statements(
    store: Store, deck: CachedCollection, clock: Clock
) -> None:
    """Showing the next card reads the learning steps come due (one statement: the due ones and
    the hand-edited ones after them), the card's text if not read yet, and then, in one
    statement, the changes mark, the settings, the card's row and its review's id. Before: 5
    (the steps in two, PRAGMA data_version, the settings, the row with the id apart)."""
    session = _in_review(store, deck, clock)
    assert session.current is not None
    for _ in range(3):
        _answer(session, clock)
        # (a "-- " entry is a program run inside a statement: here the pragma function's)
        trace = [s for s in _traced(store, lambda: session.current) if not s.startswith("-- ")]
        assert len(trace) <= 3, trace
        assert sum("data_version" in s for s in trace) == 1, trace
        assert sum("key = 'settings'" in s for s in trace) == 1, trace
        assert (
            [s for s in trace if "data_version" in s]
            == [s for s in trace if "key = 'settings'" in s]
            == [s for s in trace if "content_hash" in s]
        ), trace
