"""An answer that reads only what may have changed (issue 26, engine/store/known.py and
engine/study/duesteps.py): when nothing was written anywhere since the card was shown (the
changes mark read holding the write lock is the one read when it was shown), the rating takes
the card's row, its review's id and the parameters' number as read then, and the next card
takes the learning steps as kept; when another connection or process wrote meanwhile, the
rating reads again and the session takes the other writer's changes in. Counted statements,
not timings (tests/benchmarks/answer_bench.py times it)."""

from __future__ import annotations

import random
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from prep.engine.decks.collection import CachedCollection
from prep.engine.store import Mark, Store
from prep.engine.study.scheduler import CardState, Rating, Scheduler, State
from prep.engine.study.session import ReviewSession
from prep.engine.sync.run import sync
from tests.conftest import Clock, recall_deck
from tests.test_answer_cost import _traced

ROOT = Path(__file__).resolve().parents[1]
CARDS = 10


@pytest.fixture
def deck(tmp_path: Path) -> CachedCollection:
    return recall_deck(tmp_path, CARDS)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "prep.db"


def _session(store: Store, deck: CachedCollection, clock: Clock) -> ReviewSession:
    sched = Scheduler(store.settings(), enable_fuzzing=False)
    return ReviewSession(store, deck, scheduler=sched, clock=clock)


def _answer(session: ReviewSession, rating: Rating = Rating.Good) -> str:
    """As the app answers: the card shown, its four intervals, the rating, the next card."""
    card = session.current
    assert card is not None
    session.preview()
    session.rate(rating, card_id=card.id, content_hash=card.content_hash)
    return card.id


def _statements(trace: list[str]) -> list[str]:
    """The statements run, a trigger program's repeats (and pragma programs) left out."""
    out = [s for s in trace if not s.startswith("-- ")]
    return [s for i, s in enumerate(out) if i == 0 or s != out[i - 1]]


def _rate_elsewhere(db: Path, card_id: str, rating: Rating, clock: Clock) -> CardState:
    """Another prep (its own connection) rates ``card_id``; its state after."""
    with Store.open(db) as other:
        sched = Scheduler(other.settings(), enable_fuzzing=False)
        now = clock.now

        def decide(prev: CardState) -> CardState:
            return sched.review(prev, rating, now, other.next_review_key()).state

        return other.rate_card(
            CardState(id=card_id, deck="many"), decide, rating, now, 1000, sched.replay_params()
        )[2]


def test_an_answer_while_nothing_else_writes_runs_eight_statements(
    db: Path, deck: CachedCollection, clock: Clock
) -> None:
    """Rating: BEGIN, the changes mark, the card's row, the review, COMMIT; the next card: its
    text, then its row with the mark, the settings and its review's id (one statement); the
    preview on reveal: the mark. Before: 11 (the mark before BEGIN, the review's id with the
    parameters' number and the card's row read again inside, the learning steps each card)."""
    with Store.open(db) as store:
        first = _session(store, deck, clock)
        while first.current is not None:
            _answer(first, Rating.Easy)
        clock.advance(days=40)
        session = _session(store, deck, clock)  # Review cards, due
        for _ in range(2):
            _answer(session)
        assert session.current is not None
        for _ in range(4):
            trace = _statements(_traced(store, lambda: (_answer(session), session.current)))
            heads = [" ".join(s.split()[:2]) for s in trace]
            # the next card's text (deck cache), unless this collection built it before
            assert heads.count("SELECT key") <= 1, trace
            assert [h for h in heads if h != "SELECT key"] == [
                "PRAGMA data_version",  # the preview on reveal: nothing written since shown
                "BEGIN IMMEDIATE",
                "PRAGMA data_version",  # holding the write lock: the mark as when shown
                "UPDATE cards",
                "INSERT INTO",
                "COMMIT",
                "SELECT v.data_version,",  # its row, the mark, the settings, its review id
            ], trace
        assert session._steps.reads == 1  # the learning steps: read once, kept since


def test_a_write_from_elsewhere_is_read_again_and_the_next_rating_follows_it(
    db: Path, deck: CachedCollection, clock: Clock
) -> None:
    """Settings saved by another prep between the card shown and its rating: the rating
    reads the card, the review's id and the settings again inside its transaction, and its
    interval is the new settings' own."""
    with Store.open(db) as store:
        session = _session(store, deck, clock)
        for _ in range(3):
            _answer(session, Rating.Easy)
        clock.advance(days=30)
        session = _session(store, deck, clock)  # the Review cards due now
        card = session.current
        assert card is not None
        reads = session._steps.reads
        with Store.open(db) as other:
            other.update_settings(desired_retention=0.8)
        before = store.card(card.id)
        assert before is not None
        trace = _statements(
            _traced(
                store,
                lambda: session.rate(Rating.Good, card_id=card.id, content_hash=card.content_hash),
            )
        )
        inside = trace[trace.index("BEGIN IMMEDIATE") : trace.index("COMMIT")]
        assert any(s.startswith("WITH me(n)") for s in inside), inside  # the review's id
        assert any("LEFT JOIN review_cards rc" in s for s in inside), inside  # the card's row
        assert any("key = 'settings'" in s for s in inside), inside
        expected = Scheduler(store.settings(), enable_fuzzing=False).review(
            before, Rating.Good, clock.now
        )
        assert store.card(card.id).due == expected.state.due  # (0.8: a longer interval)
        assert session.current is not None
        assert session._steps.reads == reads + 1  # the learning steps read again


def test_a_card_rated_in_another_terminal_is_not_served_again(
    db: Path, deck: CachedCollection, clock: Clock
) -> None:
    """note 11: two terminals on one database; B rates the card A would show next: A, after
    its own rating, shows the one after it (before: A served the card B had just rated)."""
    with Store.open(db) as store:
        session = _session(store, deck, clock)
        shown = session.current
        assert shown is not None and session.queue[1] == "c01"
        _rate_elsewhere(db, "c01", Rating.Easy, clock)
        session.rate(Rating.Good, card_id=shown.id, content_hash=shown.content_hash)
        assert session.current is not None and session.current.id == "c02"
        assert [r.card_id for r in store.reviews(card_id="c01")] == ["c01"]


def test_a_card_rated_by_another_process_is_not_served_again(
    db: Path, deck: CachedCollection, clock: Clock
) -> None:
    """The same with a real second process (its commit seen through PRAGMA data_version)."""
    worker = (
        "import sys\n"
        "from prep.engine.store import Store\n"
        "from prep.engine.study.scheduler import CardState, Scheduler\n"
        "from prep.engine.timeutil import utcnow\n"
        "with Store.open(sys.argv[1]) as s:\n"
        "    sched = Scheduler(s.settings())\n"
        "    now = utcnow()\n"
        "    s.rate_card(CardState(id='c01', deck='many'),\n"
        "        lambda p: sched.review(p, 4, now, s.next_review_key()).state, 4, now)\n"
    )
    with Store.open(db) as store:
        session = _session(store, deck, clock)
        _answer(session)  # (the fast path set up: a rating kept what it read)
        shown = session.current
        assert shown is not None and shown.id == "c01"
        session.preview()
        subprocess.run([sys.executable, "-c", worker, str(db)], check=True, cwd=ROOT)
        # the card on screen was rated there: this rating lands on it, after that one
        session.rate(Rating.Again, card_id="c01", content_hash=shown.content_hash)
        log = store.reviews(card_id="c01")
        assert [r.rating for r in log] == [4, 1]
        assert log[1].prev == log[0].next  # read inside the rating: the state B left
        assert store.card("c01").reps == 2


def test_the_shown_card_rated_and_undone_elsewhere_is_rated_from_its_state_now(
    db: Path, deck: CachedCollection, clock: Clock
) -> None:
    with Store.open(db) as store:
        session = _session(store, deck, clock)
        _answer(session)
        shown = session.current
        assert shown is not None
        session.preview()
        with Store.open(db) as other:
            sched = Scheduler(other.settings(), enable_fuzzing=False)
            now = clock.now
            rid = other.rate_card(
                CardState(id=shown.id, deck="many"),
                lambda p: sched.review(p, Rating.Easy, now, other.next_review_key()).state,
                Rating.Easy,
                now,
            )[0]
            assert other.undo_last(expected_id=rid) is not None
        session.rate(Rating.Hard, card_id=shown.id, content_hash=shown.content_hash)
        log = store.reviews(card_id=shown.id)
        assert [r.rating for r in log] == [Rating.Hard]  # from new, as if B never rated it
        assert log[0].prev is None and store.card(shown.id).reps == 1
        assert log[0].id != rid  # the undone review's id is never taken again
        # and the session goes on from there: the next rating keeps what it read again
        trace = _statements(_traced(store, lambda: _answer(session)))
        assert not any(s.startswith("WITH me(n)") for s in trace), trace


def test_reviews_a_sync_brings_in_under_the_session_are_followed(
    tmp_path: Path, db: Path, deck: CachedCollection, clock: Clock
) -> None:
    """Another device rated c01 and c03; a sync (another prep on this database) applies them
    while the session shows c00: neither is served, and its learning step comes due here."""
    folder = tmp_path / "sync"
    laptop = tmp_path / "laptop.db"
    folder.mkdir()
    with Store.open(db) as store:
        sync(store, folder)
        session = _session(store, deck, clock)
        shown = session.current
        assert shown is not None and shown.id == "c00"
        with Store.open(laptop) as there:
            sync(there, folder)
        _rate_elsewhere(laptop, "c01", Rating.Easy, clock)
        _rate_elsewhere(laptop, "c03", Rating.Again, clock)  # a learning step, due in 1 min
        with Store.open(laptop) as there:
            sync(there, folder)
        with Store.open(db) as other:
            sync(other, folder)
        session.rate(Rating.Easy, card_id="c00", content_hash=shown.content_hash)
        assert session.current is not None and session.current.id == "c02"
        clock.advance(minutes=2)
        _answer(session)
        assert session.current is not None and session.current.id == "c03"  # its step, due


def test_a_step_come_due_later_is_served_when_the_window_reaches_it(
    db: Path, deck: CachedCollection, clock: Clock
) -> None:
    """A learning step due beyond the learn-ahead window when the steps were read is served
    once the clock brings it inside: the steps are read again then, not at every card; a step
    this session's own rating sets is kept in memory."""
    with Store.open(db) as store:
        store.update_settings(learning_steps_min=(1.0, 60.0))
        _rate_elsewhere(db, "c05", Rating.Good, clock)  # its next step: in 60 minutes
        session = _session(store, deck, clock)
        assert session.current is not None
        assert session._steps.reads == 1
        mine = _answer(session)  # Good: its next step in 60 min, beyond the 20-min window
        for _ in range(3):
            _answer(session, Rating.Easy)
        assert session._steps.reads == 1
        assert not [cid for _, cid in session.learning if cid in (mine, "c05")]
        clock.advance(minutes=45)  # 60 - 45 < 20: both inside the window now
        _answer(session, Rating.Easy)
        assert session._steps.reads == 2  # the window passed the step read as the next due
        assert {cid for _, cid in session.learning} >= {mine, "c05"}


def test_the_kept_steps_are_the_stores_answer_whatever_happens(
    db: Path, deck: CachedCollection, clock: Clock
) -> None:
    """Random answers, undos, marks, clock moves and writes from elsewhere (another prep's
    ratings and marks): after each action of the session, the steps it holds for its window
    are what the store's query says, soonest first."""
    rng = random.Random(7)
    with Store.open(db) as store:
        store.update_settings(learning_steps_min=(1.0, 30.0), relearning_steps_min=(25.0,))
        session = _session(store, deck, clock)
        for _ in range(90):
            for _ in range(rng.choice([0, 0, 1, 2])):
                move = rng.random()
                if move < 0.45:
                    clock.advance(minutes=rng.choice([1, 5, 12, 26, 600]))
                elif move < 0.85:
                    cid = f"c{rng.randrange(CARDS):02d}"
                    _rate_elsewhere(db, cid, Rating(rng.randint(1, 4)), clock)
                else:
                    with Store.open(db) as other:
                        other.set_mark(f"c{rng.randrange(CARDS):02d}", Mark(flagged=True))
            act = rng.random()
            if act < 0.75 and session.current is not None:
                _answer(session, Rating(rng.randint(1, 4)))
            elif act < 0.9 and session.done:
                session.undo()
            elif session.current is not None:
                session.set_mark("flag")
            else:
                clock.advance(minutes=30)
            session.current  # noqa: B018 (the next card, as the app asks)
            window = clock.now + session.learn_ahead
            kept = session._steps.ids(window)
            truth = store.due_ids(window, not_state=int(State.Review))
            assert sorted(kept) == sorted(truth)
            dues = {cid: store.card(cid).due for cid in truth}
            assert [dues[c] for c in kept] == sorted(dues[c] for c in kept)  # soonest first
        assert 1 < session._steps.reads < 90


def test_the_learning_window_reads_the_due_steps_as_due_ids(
    db: Path, deck: CachedCollection, clock: Clock
) -> None:
    with Store.open(db) as store:
        session = _session(store, deck, clock)
        for _ in range(4):
            _answer(session, Rating.Again)
        with store.transaction():  # a hand-edited due: served after the due ones
            store.conn.execute("UPDATE cards SET due = 'tomorrow' WHERE id = 'c00'")
        window = clock.now + timedelta(minutes=5)
        rows, horizon, _version = store.learning_window(window)
        assert [r[0] for r in rows] == store.due_ids(window, not_state=int(State.Review))
        assert rows[-1][:2] == ("c00", "tomorrow")
        assert horizon == ":"  # nothing else due later
        rows, horizon, _version = store.learning_window(clock.now - timedelta(minutes=5))
        assert [r[0] for r in rows] == ["c00"] and horizon < ":"
