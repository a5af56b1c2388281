"""A clock that went back: reviews in the log dated after now.

Made before this computer's clock was set back (or on a device whose clock runs ahead, received
by a sync). They are kept as they are and counted on their own day, never as today's (so they do
not use up today's new-card or review limit: ``timeutil.today_span``); the learner is told once
per command, in one line, since stats and due dates look odd until the clock catches up.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from prep.engine.store import Store

# a review up to this far ahead is ordinary clock drift between devices, not worth a word
SLACK = timedelta(minutes=5)


@dataclass(frozen=True)
class ClockBehind:
    """``reviews`` in the log are dated after now, the latest at ``latest``."""

    reviews: int
    latest: datetime

    def line(self) -> str:
        when = self.latest.astimezone().strftime("%Y-%m-%d %H:%M")
        many = f"{self.reviews} reviews are" if self.reviews != 1 else "1 review is"
        return (
            f"The clock is behind the review log: {many} dated after now (the latest {when}); "
            "was the clock set back? They count on their own day, not today."
        )


def clock_behind(store: Store, now: datetime) -> ClockBehind | None:
    """The reviews dated after ``now`` (beyond a few minutes' drift), or None."""
    latest = store.latest_review_at()
    if latest is None or latest <= now + SLACK:
        return None
    return ClockBehind(store.count_reviews(now + SLACK), latest)
