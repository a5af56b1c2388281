"""What `stats.compute` returns: typed parts, rendered by the front ends (tui/reports.py for
`prep stats`, the app's stats screen) and printed by `prep stats --json` as ``to_dict()``.

Field order is the JSON's key order (``dataclasses.asdict`` keeps it): the JSON is the
untyped dict of before, byte for byte (tests/test_stats_result.py holds it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Session:
    """What today's session serves now (as home shows it)."""

    new: int
    learning: int
    due: int


@dataclass(frozen=True)
class Reviews:
    today: int
    total: int  # since ``Stats.since`` (all time when None)


@dataclass(frozen=True)
class Retention:
    """True retention: reviews of learned cards, and how many were passed."""

    reviews: int
    passed: int
    rate: float | None  # None without reviews


@dataclass(frozen=True)
class TrueRetention:
    all: Retention  # since ``Stats.since``
    last_30_days: Retention


@dataclass(frozen=True)
class Due:
    """Cards due, as the queue serves them (engine/study/due.py: reviews by study day,
    learning steps by the minute; suspended and buried cards left out)."""

    now: int  # learning steps within the learn-ahead limit + reviews due today, before the limit
    today: int
    tomorrow: int
    next_7_days: int


@dataclass(frozen=True)
class DueOn:
    date: str  # ISO study day
    due: int


@dataclass(frozen=True)
class ReviewsOn:
    date: str  # ISO study day
    reviews: int


@dataclass(frozen=True)
class CardCounts:
    total: int
    seen: int


@dataclass(frozen=True)
class MarkCounts:
    suspended: int
    buried: int
    flagged: int


@dataclass(frozen=True)
class Marked:
    """The ids of the suspended and of the flagged cards."""

    suspended: list[str]
    flagged: list[str]


@dataclass(frozen=True)
class Mastery:
    """Seen and mature (stability of at least 21 days) over a group's cards."""

    cards: int
    seen: int
    mature: int
    mastery: float


@dataclass(frozen=True)
class DeckMastery:
    title: str
    cards: int
    seen: int
    mature: int
    mastery: float


@dataclass(frozen=True)
class DemoRun:
    """The latest run of one demo; ``known``: a demo this prep has (else never verified)."""

    name: str
    device: str
    device_name: str | None
    scale: str | None
    passed: bool
    seconds: float
    ran_at: str
    known: bool


@dataclass(frozen=True)
class Demos:
    verified: list[str]
    latest: list[DemoRun]


@dataclass(frozen=True)
class Recall:
    """FSRS's predicted recall on the interview day over a group of cards."""

    cards: int
    seen: int
    recall: float | None
    lowest: float | None
    below_target: int


@dataclass(frozen=True)
class OnTheDay:
    """The interview part (engine/study/plan.py's on_the_day)."""

    date: str
    days_left: int
    moment: str
    target: float
    plan: str
    new_today: int
    all: Recall
    decks: dict[str, Recall]
    tags: dict[str, Recall]  # weakest first


@dataclass(frozen=True)
class Stats:
    """Every number `prep stats` shows."""

    now: str
    since: str | None
    session: Session
    reviews: Reviews
    true_retention: TrueRetention
    desired_retention: float
    due: Due
    forecast: list[DueOn]
    per_day: list[ReviewsOn]
    streak_days: int
    cards: CardCounts
    marks: MarkCounts
    marked: Marked
    decks: dict[str, DeckMastery]
    tags: dict[str, Mastery]
    leeches: list[str]
    changed: list[str]
    demos: Demos
    interview: OnTheDay | None  # None without an interview date ahead

    def to_dict(self) -> dict[str, Any]:
        """The JSON form `prep stats --json` prints."""
        return asdict(self)
