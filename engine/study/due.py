"""When a card is due: one rule for every place that counts or serves due cards (the queue,
home, the review bar, `prep stats`, the plan, the mock, the end-of-session summary).

As in Anki, a card in the Review state is due by *day*: FSRS gives it a due time (its last
review plus whole days), and it is shown from the start of the study day that holds that time
(the local 4am rollover, engine/timeutil.py), not from the minute it was rated days ago. Rated
Good at 09:20 on day 1 for two days, it is due at 04:00 on day 3, so at 09:00 on day 3 home
counts it and the session serves it. Learning and relearning cards (minutes apart) are due by
exact time; the learn-ahead limit (``Settings.learn_ahead_min``, 20 minutes by default) lets
one be shown early when nothing else is left, and home counts those among "learning".

The store compares stored due times with ``due <= ?``: ``reviews_until`` is the bound that
makes that comparison the rule for Review cards.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from prep.engine.store import Store
from prep.engine.study.scheduler import CardState, State
from prep.engine.timeutil import study_day_start

_TICK = timedelta(microseconds=1)  # the stored times' resolution (engine/timeutil.py's format)


def reviews_until(now: datetime, days: int = 0) -> datetime:
    """The latest due time of a Review card that is due at ``now`` (``days`` > 0: due within
    that many study days after today): the last instant of the study day, so that a card
    due at any time of it is due from its rollover on."""
    return study_day_start(now, 1 + days) - _TICK


def is_due(state: CardState, now: datetime, ahead: timedelta = timedelta(0)) -> bool:
    """Whether the queue serves ``state``'s card at ``now`` (its marks aside): a Review card
    due today or earlier, a learning or relearning card due by ``now + ahead``. A due that is
    not a time (a hand edit) is never due here (the session skips such a card with a message)."""
    due = state.due
    if not isinstance(due, datetime):
        return False
    if state.state == State.Review:
        return due <= reviews_until(now)
    return due <= now + ahead


def shown_from(state: int, due: datetime) -> datetime:
    """When a card of fsrs state ``state`` with this due time is first served: a Review
    card's study day's rollover, a learning step's own time."""
    return study_day_start(due) if state == State.Review else due


def next_due(store: Store, now: datetime) -> datetime | None:
    """When the next card not due at ``now`` comes due (None when nothing is scheduled): the
    next learning step, or the rollover of the next day a review is due, whichever is first
    (the end-of-session line "Next card due in ...")."""
    step = store.next_due(now, review=False)
    review = store.next_due(reviews_until(now), review=True)
    times = [t for t in (step, None if review is None else study_day_start(review)) if t]
    return min(times, default=None)
