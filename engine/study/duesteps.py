"""The learning steps come due, kept between answers (issue 26: answer -> next card).

Interday steps (a step that falls on a later study day than its rating) are due by day and
served with the reviews (engine/study/due.py): they are not among these.

A session asks, before each card it shows, which learning and relearning cards are due within
the learn-ahead window (another terminal or screen may have rated them: it adopts them). The
answer changes only when something is written, or when the window passes the next step's due.
So the answer is kept with the changes mark it was read under (Store.changes_mark: another
connection's commit or any write of this connection moves it) and the earliest due after the
window; a rating of this session, made while the mark held (its transaction read the same
mark), updates it in memory with the card's new state. Anything else written meanwhile (a mark,
an undo, a sync, another terminal's commit, seen by a rating or by the card shown) reads it
again. The answer is the store's own query's: the ids in due order, hand-edited dues last.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from prep.engine.store import Store
from prep.engine.study.due import _REVIEW, interday, stored_interday
from prep.engine.study.scheduler import CardState
from prep.engine.timeutil import fmt

Mark = tuple[int, int]


@dataclass
class _Kept:
    """The steps as read under ``mark``, with what the session's own ratings changed since."""

    mark: Mark
    due: list[tuple[str, str]]  # (due as stored, id) of every step due before ``horizon``
    odd: list[tuple[str, str]]  # (due, id): dues that are not times (a hand edit), served last
    horizon: str  # no other step of these decks is due before it


class DueSteps:
    """Learning steps due by a time, in the decks given (None: every deck)."""

    def __init__(self, store: Store, decks: Sequence[str] | None) -> None:
        self.store = store
        self.decks = None if decks is None else list(decks)
        self._kept: _Kept | None = None
        self.reads = 0  # how many times the store was asked (tests count them)

    def ids(self, window: datetime) -> list[str]:
        """The ids of the steps due by ``window``, soonest first, then those whose due is not
        a time: as Store.due_ids(window, not_state=Review) would answer now."""
        at = fmt(window)
        kept = self._kept
        if kept is None or kept.mark[1] != self.store.conn.total_changes or at >= kept.horizon:
            rows, horizon, version = self.store.learning_window(window, self.decks)
            self.reads += 1
            # an interday step (due by day, engine/study/due.py) is the queue's, not a step's
            steps = [(cid, d) for cid, d, st, last in rows if not stored_interday(st, d, last)]
            due = sorted((d, cid) for cid, d in steps if d <= at)
            odd = [(d, cid) for cid, d in steps if d > at]
            kept = self._kept = _Kept(
                (version, self.store.conn.total_changes), due, odd, min(horizon, ":")
            )
        return [cid for d, cid in kept.due if d <= at] + [cid for _, cid in kept.odd]

    def forget(self) -> None:
        """Read them again next time (changes taken in from elsewhere: a sync)."""
        self._kept = None

    def seen(self, mark: Mark) -> None:
        """The store was read under ``mark`` (a card shown): another connection's commit since
        the steps were read means they are read again."""
        if self._kept is not None and self._kept.mark[0] != mark[0]:
            self._kept = None

    def rated(self, before: Mark | None, state: CardState) -> None:
        """This session rated a card in a transaction that read ``before`` (None: not read):
        when the steps were read under that mark, only this card changed."""
        kept = self._kept
        if kept is None or before is None or kept.mark != before:
            self._kept = None
            return
        kept.due = [e for e in kept.due if e[1] != state.id]
        kept.odd = [e for e in kept.odd if e[1] != state.id]
        if (
            state.state != _REVIEW
            and not interday(state.state, state.due, state.last_review)
            and not state.removed
            and state.due is not None
            and (self.decks is None or state.deck in self.decks)
        ):
            due = fmt(state.due)
            if due < kept.horizon:
                insort(kept.due, (due, state.id))
        kept.mark = (before[0], self.store.conn.total_changes)
