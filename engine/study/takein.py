"""A session takes in what was written under it (engine/study/session.py's take_in_changes):
another device's reviews applied by the app's sync, or another terminal's commit on the same
database (seen by the changes mark a card shown or a rating reads: no statement of its own),
and a new study day when the session is left open across the 4 am rollover (as Anki's
``get_queues`` discards its queues when ``is_stale(days_elapsed)``: the next card is the
new day's, its new-card limit reset, its reviews in). Also the learning steps due meanwhile
that it adopts (``adopt_due_steps``)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from prep.engine.study import plan as plan_mod
from prep.engine.study.queue import build_queue, new_left
from prep.engine.timeutil import study_day_start

if TYPE_CHECKING:
    from prep.engine.study.collection import Cards
    from prep.engine.study.scheduler import Settings
    from prep.engine.study.session import ReviewSession


def kinds_of(ids: Iterable[str], new: set[str], learning: frozenset[str]) -> dict[str, str]:
    """What each queued card is, for Anki's three numbers."""
    return {
        cid: "new" if cid in new else "learning" if cid in learning else "review" for cid in ids
    }


def deck_notices(collection: Cards) -> list[str]:
    """The deck errors an open collection's refresh found (a deck file added since, with
    bad YAML), one line each, as the decks' errors are named (FILE:LINE: message)."""
    return [f"Deck error: {e}" for e in collection.take_new_errors()]


def take_in(session: ReviewSession) -> None:
    """Today's queue built again as a new session would build it; the session's learning
    steps, ratings, undo, stats and the card pinned on screen are kept
    (ReviewSession.take_in_changes)."""
    if not session._adopts:
        return
    session._steps.forget()
    # another prep re-read a deck file of this collection: loaded again, so its added cards
    # are served and its removed ones not (one statement when none was)
    session.collection.refresh(session.store)
    session.notices += deck_notices(session.collection)  # (bad YAML in a new deck file)
    session._version, session._stale = session.store.changes_mark()[0], False  # (before it)
    new_limit, limit = session._limits
    now = session.clock()
    # the study day this queue is built for: at the next card after its end (the 4 am
    # rollover, a session left open overnight) the queue is the new day's (``_next``)
    session._day_end = study_day_start(now, 1)
    see_plan(session, now, session.store.settings())  # (days left: the new day's)
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
    new = new[: new_left(session.store, session.collection, now, new_limit, session._deck)]
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


def see_plan(session: ReviewSession, now: datetime, settings: Settings | None = None) -> None:
    """The session's interview plan as seen at ``now``: made from ``settings`` when given (at
    its start, a take-in, settings saved since: a date set, moved or cleared), else the one held,
    seen at ``now``. Whatever its queue, a session left open past 4 am or past the interview's
    moment reads the plan as a new session would (its rating: ``_plan_until``)."""
    if settings is not None:
        plan = plan_mod.Plan.of(settings, now)
        session.plan = None if plan is None else plan.on(session.collection)
    elif session.plan is not None:
        session.plan = session.plan.at(now)
    if session.plan is not None:
        session._plan_until = session.plan.until


def held_due(session: ReviewSession) -> int:
    """The cards due now that today's queue serves and this session did not take (its
    ``limit``): counted as the queue serves them (due by study day from the 4 am rollover, a
    learning step by its time; suspended and buried cards and other decks' not), for the
    "Past those held back" line. Not new cards: they are not "due"."""
    store, now = session.store, session.clock()
    built = build_queue(store, session.collection, now, deck=session._deck, new_limit=0)
    return len(built.due)


def adopt_due_steps(session: ReviewSession, now: datetime) -> None:
    """Learning and relearning steps due within the learn-ahead window that this session
    does not hold (rated on another screen or in another terminal since it began) join its
    learning cards: the queue takes every due card, whichever screen rated it. One indexed
    query per card shown (learning cards are few)."""
    # within the learn-ahead window, as home counts them: served when due, or early
    # when nothing else is left (kept between answers while nothing else is written)
    due = session._steps.ids(now + session.learn_ahead)  # (for most cards shown: none)
    held = {cid for _, cid in session.learning}
    new = due and session.collection.known(cid for cid in due if cid not in held)
    if not new:
        return
    hidden = session.store.hidden_ids(now)
    states = session.store.cards([cid for cid in new if cid not in hidden])
    queued = set(session.queue)
    for cid, state in states.items():
        if not isinstance(state.due, datetime):  # (not a time: the queue's, to be skipped)
            continue
        if cid in queued:  # still queued here (as new, or as a step): it is a step now
            session.queue.remove(cid)
        else:
            session.total += 1
        session.learning.append((state.due, cid))
        session.kind_of[cid] = "learning"
    session.learning.sort()
