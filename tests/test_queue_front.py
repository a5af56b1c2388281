"""The day's queue takes its front in constant time (round 14, issue 26): each answer removed
the card rated with a list's pop(0), which moves every id behind it, ~9% of an answer's
instructions on the 100k benchmark (callgrind: memmove in list_ass_slice) and growing with
the queue. The queue is a deque from the session's start, after a take-in and after an undo,
and the cards come in the same order as the queue was built."""

from __future__ import annotations

from collections import deque
from pathlib import Path

import pytest

from prep.engine.decks.collection import CachedCollection
from prep.engine.store import Store
from prep.engine.study.queue import build_queue
from prep.engine.study.session import ReviewSession
from tests.conftest import Clock, recall_deck

CARDS = 9


@pytest.fixture
def deck(tmp_path: Path) -> CachedCollection:
    return recall_deck(tmp_path, CARDS, deck="q", prefix="q")


def test_the_queue_is_a_deque_through_take_in_and_undo(
    tmp_path: Path, deck: CachedCollection, clock: Clock
) -> None:
    with Store.open(tmp_path / "prep.db") as store:
        session = ReviewSession(store, deck, clock=clock)
        assert type(session.queue) is deque
        session.rate(3)
        session.take_in_changes()
        assert type(session.queue) is deque
        assert session.undo() is not None
        assert type(session.queue) is deque
        session.rate(3)
        session.set_mark("bury")
        assert session.undo() is not None
        assert type(session.queue) is deque


def test_the_cards_come_in_the_order_the_queue_was_built(
    tmp_path: Path, deck: CachedCollection, clock: Clock
) -> None:
    with Store.open(tmp_path / "prep.db") as store:
        built = build_queue(store, deck, clock())
        session = ReviewSession(store, deck, clock=clock, requeue=False)
        assert list(session.queue) == built.ids and len(built.ids) == CARDS
        shown = []
        while session.current is not None:
            shown.append(session.current.id)
            if len(shown) == 4:  # an undo puts the card rated back in front
                session.rate(4)
                assert session.undo() is not None
            session.rate(4)
        assert shown == built.ids
