"""When a card is due: one rule for every place that counts or serves due cards (the queue,
home, the review bar, `prep stats`, the plan, the mock, the end-of-session summary).

As in Anki, a card in the Review state is due by *day*: FSRS gives it a due time (its last
review plus whole days), and it is shown from the start of the study day that holds that time
(the local 4am rollover, engine/timeutil.py), not from the minute it was rated days ago. Rated
Good at 09:20 on day 1 for two days, it is due at 04:00 on day 3, so at 09:00 on day 3 home
counts it and the session serves it.

Learning and relearning steps are due by exact time when they fall on the study day of the
rating that set them (Anki's intraday learning); the learn-ahead limit
(``Settings.learn_ahead_min``, 20 minutes by default) lets one be shown early when nothing
else is left, and home counts those among "learning". A step that falls on a later study day
(a "1d" step, a relearning step of a day, a 10-minute step set at 03:55) is Anki's *interday*
learning (its DayLearn queue, rslib answering/learning.rs: ``maybe_as_days``): due by day, as
a review is, from its day's rollover; counted among "learning", served with the reviews and
taken under the daily review limit (rslib queue/builder: gathered before the reviews, and
answered it counts against the limit).

The store compares stored due times with ``due <= ?``: ``reviews_until`` is the bound that
makes that comparison the rule for cards due by day.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable
from datetime import datetime, timedelta

from prep.engine.store import Store
from prep.engine.study.scheduler import CardState, State
from prep.engine.timeutil import fmt, parse, study_day_start

_TICK = timedelta(microseconds=1)  # the stored times' resolution (engine/timeutil.py's format)
_REVIEW = int(State.Review)


def reviews_until(now: datetime, days: int = 0) -> datetime:
    """The latest due time of a card due by day that is due at ``now`` (``days`` > 0: due
    within that many study days after today): the last instant of the study day, so that a
    card due at any time of it is due from its rollover on."""
    return study_day_start(now, 1 + days) - _TICK


def interday(state: int, due: object, last_review: object) -> bool:
    """Whether a card of fsrs state ``state`` is an interday learning step: a learning or
    relearning card whose due falls on a later study day than its last review (the rating
    that set the step). A due or last review that is not a time (a hand edit) is not."""
    if state == _REVIEW or not isinstance(due, datetime) or not isinstance(last_review, datetime):
        return False
    return due >= study_day_start(last_review, 1)


def stored_interday(state: int, due: str | None, last_review: str | None) -> bool:
    """``interday`` on the stored text of the times (the store's rows)."""
    if state == _REVIEW or due is None or last_review is None or due >= ":":  # (not a time)
        return False
    try:
        if len(last_review) != 27 or last_review[-1] != "Z":  # (not as fmt wrote it)
            return due >= fmt(study_day_start(parse(last_review), 1))
        # the next rollover is the same for every time of one minute (UTC offsets are whole
        # quarter hours): kept per minute and time zone (a test, or a user, may change TZ)
        return due >= _rollover_after(last_review[:16], time.tzname, time.timezone)
    except (TypeError, ValueError, OverflowError):  # not a time (a hand edit)
        return False


@functools.lru_cache(maxsize=4096)
def _rollover_after(minute: str, _zone: object, _offset: int) -> str:
    """The stored text of the first rollover after the minute ``minute`` (YYYY-MM-DDTHH:MM,
    UTC) in the local time zone (``_zone``, ``_offset``: its key)."""
    if len(minute) != 16:
        raise ValueError(f"{minute!r} is not a stored time")
    return fmt(study_day_start(parse(minute + ":00.000000Z"), 1))


def by_day(state: CardState) -> bool:
    """Whether ``state``'s card is due by day (a review, or an interday learning step)."""
    return state.state == _REVIEW or interday(state.state, state.due, state.last_review)


def is_due(state: CardState, now: datetime, ahead: timedelta = timedelta(0)) -> bool:
    """Whether the queue serves ``state``'s card at ``now`` (its marks and the review limit
    aside): a card due by day due today or earlier, a learning or relearning step due by
    ``now + ahead``. A due that is not a time (a hand edit) is never due here (the session
    skips such a card with a message)."""
    due = state.due
    if not isinstance(due, datetime):
        return False
    if by_day(state):
        return due <= reviews_until(now)
    return due <= now + ahead


def shown_from(state: CardState) -> datetime | None:
    """When ``state``'s card is first served (its marks aside): the rollover of its due's study
    day for a card due by day, a learning step's own time (None: no due that is a time)."""
    due = state.due
    if not isinstance(due, datetime):
        return None
    return study_day_start(due) if by_day(state) else due


def split_steps(
    rows: Iterable[tuple[str, str, int, str, str | None]],
    now: datetime,
    ahead: datetime,
    *,
    odd: bool = True,
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Learning rows as the store reads them ((id, deck, state, due, last review), due by the
    end of today, soonest first) split into (the steps due by ``ahead``, then, with ``odd``,
    the dues that are not times: the queue serves those last, to skip them with a message)
    and the interday steps due today: (id, deck) each, in due order."""
    until = fmt(reviews_until(now))
    today = fmt(study_day_start(now))  # (a step set today and due by today's end: intraday)
    at = fmt(ahead)
    steps: list[tuple[str, str]] = []
    days: list[tuple[str, str]] = []
    for cid, deck, state, due, last in rows:
        if (last is None or last < today or due > until) and stored_interday(state, due, last):
            if due <= until:
                days.append((cid, deck))
        elif due <= at or (odd and due > until):  # (after every time: not a time)
            steps.append((cid, deck))
    return steps, days


def next_due(store: Store, now: datetime) -> datetime | None:
    """When the next card not due at ``now`` comes due (None when nothing is scheduled): the
    next intraday learning step, or the rollover of the next day a card is due by day,
    whichever is first (the end-of-session line "Next card due in ..."). As the queue serves
    them: a suspended card never, a buried one from its bury's end (engine/study/forecast.py)."""
    until = reviews_until(now)
    hidden = store.hidden_ids(now)
    times: list[datetime] = []
    for cid, _deck, state, due, last in store.learning_rows(after=now):
        if cid not in hidden and not stored_interday(state, due, last):
            times.append(parse(due))  # (the rows are in due order: the first is the soonest)
            break
    for cid, _deck, state, due, last in store.learning_rows(after=until):
        if cid not in hidden and stored_interday(state, due, last):
            times.append(study_day_start(parse(due)))
            break
    review = store.next_due(until, review=True, besides=hidden)
    if review is not None:
        times.append(study_day_start(review))
    for cid, card in store.cards(hidden).items():  # (a few) buried: back at its bury's end
        mark, shown = store.mark(cid), shown_from(card)
        if not card.removed and shown is not None and not mark.suspended and mark.buried_until:
            times.append(max(shown, mark.buried_until))
    return min(times, default=None)
