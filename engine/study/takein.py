"""A session takes in what was written under it (engine/study/session.py's take_in_changes):
another device's reviews applied by the app's sync, or another terminal's commit on the same
database (seen by the changes mark a card shown or a rating reads: no statement of its own)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING

from prep.engine.study.queue import build_queue, new_left

if TYPE_CHECKING:
    from prep.engine.study.session import ReviewSession


def kinds_of(ids: Iterable[str], new: set[str], learning: frozenset[str]) -> dict[str, str]:
    """What each queued card is, for Anki's three numbers."""
    return {
        cid: "new" if cid in new else "learning" if cid in learning else "review" for cid in ids
    }


def take_in(session: ReviewSession) -> None:
    """Today's queue built again as a new session would build it; the session's learning
    steps, ratings, undo, stats and the card pinned on screen are kept
    (ReviewSession.take_in_changes)."""
    if not session._adopts:
        return
    session._steps.forget()
    session._version, session._stale = session.store.changes_mark()[0], False  # (before it)
    new_limit, limit = session._limits
    now = session.clock()
    built = build_queue(
        session.store, session.collection, now, deck=session._deck, new_limit=new_limit
    )
    held = {cid for _, cid in session.learning}
    # the new cards queued here stay (still unseen and unmarked) before the rebuilt queue's:
    # the open collection stops reading a deck file another prep re-read since, so the
    # rebuilt queue may lack them (test_take_in_changes.py); today's allowance holds
    mine = [cid for cid in session.queue if session.kind_of.get(cid) == "new"]
    gone = set(session.store.cards(mine)) | session.store.hidden_ids(now) if mine else set()
    new = [cid for cid in mine if cid not in gone and cid in session.collection]
    kept = set(new)
    new += [cid for cid in built.new if cid not in kept]
    new = new[: new_left(session.store, session.collection, now, new_limit)]
    ids = [cid for cid in [*built.due, *new] if cid not in held]
    if limit is not None:  # the session's size: what this session already did counts
        room = max(0, limit - len(set(session.done)))
        session.held_back = max(0, len(ids) - room)
        ids = ids[:room]
    pinned = session._pinned
    if pinned is not None and pinned[1] is None:  # the card on screen stays in front
        ids = [pinned[0].id, *(cid for cid in ids if cid != pinned[0].id)]
    kinds = kinds_of(ids, set(new), built.learning_ids)
    if pinned is not None and pinned[0].id in session.kind_of:  # what it was when shown
        kinds[pinned[0].id] = session.kind_of[pinned[0].id]
    session.total += len(ids) - len(session.queue)
    session.queue = deque(ids)
    session.kind_of.update(kinds)
