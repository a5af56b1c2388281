"""Two terminals on one database: what the other one commits joins this session's queue at the
next card (engine/study/takein.py), seen by the changes mark the card shown or the rating
reads (no statement of its own: tests/test_answer_cost.py holds the count)."""

from __future__ import annotations

from collections import deque
from pathlib import Path

import pytest

from prep.engine.decks import deckcache
from prep.engine.store import Mark, Store
from prep.engine.study.scheduler import Rating, Scheduler
from prep.engine.study.session import ReviewSession
from tests.conftest import FIXED_NOW, Clock


@pytest.fixture
def two(tmp_path: Path, small_deck_dir: Path):
    db = tmp_path / "shared.db"
    with Store.open(db) as mine, Store.open(db) as theirs:
        mine.update_settings(new_per_day=4)
        coll = deckcache.load(mine, [small_deck_dir], include_bundled=False)
        yield mine, theirs, coll, small_deck_dir


def _session(store: Store, coll, clock: Clock) -> ReviewSession:
    return ReviewSession(store, coll, clock=clock, scheduler=Scheduler(store.settings()))


def test_a_card_unsuspended_in_the_other_terminal_joins_at_the_next_card(two) -> None:
    mine, theirs, coll, _ = two
    clock = Clock(FIXED_NOW)
    mine.set_mark("flag", Mark(suspended=True), at=FIXED_NOW)
    session = _session(mine, coll, clock)
    assert "flag" not in session.queue and session.counts()[0] == 3
    first = session.current
    assert first is not None
    theirs.set_mark("flag", Mark(), at=FIXED_NOW)  # `prep unmark flag` in the other terminal
    session.rate(Rating.Good, duration_ms=1000, card_id=first.id)
    assert session.counts()[0] == 3  # (two left of the three, and flag)
    assert "flag" in session.queue
    served = []
    while session.current is not None and len(served) < 10:
        served.append(session.current.id)
        session.rate(Rating.Easy, duration_ms=1000)
    assert "flag" in served


def test_a_card_rated_in_the_other_terminal_leaves_the_counts_at_the_next_card(two) -> None:
    mine, theirs, coll, _ = two
    clock = Clock(FIXED_NOW)
    session = _session(mine, coll, clock)
    assert session.counts() == (4, 0, 0)
    first = session.current
    assert first is not None
    other = _session(theirs, deckcache.load(theirs, [two[3]], include_bundled=False), clock)
    rated = [cid for cid in session.queue if cid != first.id][-1]
    other.queue = deque([rated])  # the other terminal rates one of this session's queued cards Easy
    other.rate(Rating.Easy, duration_ms=1000, card_id=rated)
    session.rate(Rating.Easy, duration_ms=1000, card_id=first.id)
    assert session.counts() == (2, 0, 0)  # not 3: the card rated there is gone from here
    assert rated not in session.queue


def test_an_again_in_the_other_terminal_is_served_here_when_due(two) -> None:
    """The other terminal's Again on a card: its one-minute step comes here when due."""
    mine, theirs, coll, deck_dir = two
    mine.update_settings(learn_ahead_min=0)
    clock = Clock(FIXED_NOW)
    session = _session(mine, coll, clock)
    first = session.current
    assert first is not None
    other = _session(theirs, deckcache.load(theirs, [deck_dir], include_bundled=False), clock)
    again = [cid for cid in session.queue if cid != first.id][-1]
    other.queue = deque([again])
    other.rate(Rating.Again, duration_ms=1000, card_id=again)
    session.rate(Rating.Good, duration_ms=1000, card_id=first.id)
    assert session.counts()[0] == 2  # (a step now, not a new card: due in a minute)
    assert again not in session.queue
    clock.advance(minutes=1)
    served = []
    while session.current is not None and len(served) < 10:
        served.append(session.current.id)
        session.rate(Rating.Easy, duration_ms=1000)
        clock.advance(minutes=1)
    assert again in served


def test_new_cards_of_a_deck_another_prep_re_read_stay_queued(two) -> None:
    """fast12's finding: another prep re-reads an edited deck file, and this collection stops
    reading that file's rows, so a queue built again here lacks its new cards. The session
    keeps those it queued (still unseen) when it takes in the other terminal's commit."""
    mine, theirs, coll, deck_dir = two
    clock = Clock(FIXED_NOW)
    session = _session(mine, coll, clock)
    queued = list(session.queue)
    assert len(queued) == 4
    first = session.current  # shown before the other prep re-reads the file
    assert first is not None
    path = deck_dir / "small.yaml"
    text = path.read_text(encoding="utf-8").replace(
        "cards:\n", "cards:\n  - {id: brand-new, kind: recall, prompt: p, answer: a}\n", 1
    )
    path.write_text(text, encoding="utf-8")
    other_coll = deckcache.load(theirs, [deck_dir], include_bundled=False)  # re-reads the file
    other = _session(theirs, other_coll, clock)
    assert "brand-new" in other.queue
    session.rate(Rating.Easy, duration_ms=1000, card_id=first.id)
    left = [cid for cid in queued if cid != first.id]
    assert session.counts()[0] == 3
    served = []
    while session.current is not None and len(served) < 10:
        served.append(session.current.id)
        session.rate(Rating.Easy, duration_ms=1000)
    assert sorted(served) == sorted(left)
