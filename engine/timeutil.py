"""UTC datetimes, one text format, and the injectable clock.

Every datetime in the engine is aware and in ``timezone.utc`` exactly (fsrs rejects any other
tzinfo). In SQLite they are stored as fixed-width text, so that string order is time order.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, time, timedelta
from typing import overload

Clock = Callable[[], datetime]
_FMT = "%Y-%m-%dT%H:%M:%S.%fZ"


def utcnow() -> datetime:
    return datetime.now(UTC)


def to_utc(dt: datetime) -> datetime:
    """An aware datetime converted to timezone.utc exactly; a naive one is taken as UTC."""
    zone = dt.tzinfo
    if zone is UTC:  # (what astimezone(UTC) returns for it: the object itself; nine an answer)
        return dt
    if zone is None:
        return dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


@overload
def fmt(dt: datetime) -> str: ...
@overload
def fmt(dt: None) -> None: ...
@overload
def fmt(dt: datetime | None) -> str | None: ...
def fmt(dt: datetime | None) -> str | None:
    """Fixed-width UTC text (lexicographic order == time order)."""
    if dt is None:
        return None
    dt = to_utc(dt)
    if dt.year < 1000:  # (strftime's %Y does not pad them to four digits: kept as it was)
        return dt.strftime(_FMT)
    # strftime's text at two thirds of its cost (an answer formats six: issue 26); to_utc's
    # tzinfo is UTC, whose offset isoformat writes as the six characters "+00:00"
    return dt.isoformat("T", "microseconds")[:-6] + "Z"


@overload
def parse(text: str) -> datetime: ...
@overload
def parse(text: None) -> None: ...
@overload
def parse(text: str | None) -> datetime | None: ...
def parse(text: str | None) -> datetime | None:
    if text is None:
        return None
    return to_utc(datetime.fromisoformat(text))


def day_start(now: datetime, rollover_hour: int = 4) -> datetime:
    """Start of the user's study day containing ``now``: local time, rolling over at 4am
    like Anki, returned in UTC."""
    return study_day_start(now, 0, rollover_hour)


def study_day_start(now: datetime, days: int = 0, rollover_hour: int = 4) -> datetime:
    """Start of the study day ``days`` after (before, when negative) the one containing
    ``now``, in UTC. Local calendar arithmetic, so across a DST change a study day is 23 or
    25 hours long and 4am stays 4am (``day_start(now) + timedelta(days=n)`` would drift)."""
    local = to_utc(now).astimezone()
    day = local.date() + timedelta(days=days - (1 if local.hour < rollover_hour else 0))
    # a naive local time: astimezone() gives it the UTC offset in force on that day
    return to_utc(datetime.combine(day, time(rollover_hour)).astimezone())


def today_span(now: datetime, rollover_hour: int = 4) -> tuple[datetime, datetime]:
    """The study day containing ``now`` as [start, end): what "today" counts (a review dated
    after it, made before the clock went back, is not today's)."""
    return study_day_start(now, 0, rollover_hour), study_day_start(now, 1, rollover_hour)


MAX_DURATION_MS = 24 * 3600 * 1000  # a card left on screen for a day counts as a day


def clamp_duration(duration_ms: int | None) -> int | None:
    """A review's duration within [0, a day]: a clock that steps back between showing and
    rating (faketime, a VM resumed, NTP) would store a negative one, which no import takes."""
    if duration_ms is None:
        return None
    return min(max(int(duration_ms), 0), MAX_DURATION_MS)


# The dates prep works with. A clock outside them (a dead RTC battery, faketime) is refused at
# start: a card buried or due a day later in year 9999 has no date, and Python's clocks stop at
# 2262 (nanoseconds in 64 bits). Imported times may reach further (a due date set by the
# longest interval, 100 years, and more), never year 10000.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_CLOCK = datetime(2200, 1, 1, tzinfo=UTC)
LATEST_STORED = datetime(9900, 1, 1, tzinfo=UTC)


def clock_problem(now: datetime) -> str | None:
    """Why the clock's ``now`` cannot be used (one line), or None."""
    if not EARLIEST <= now < LATEST_CLOCK:
        return (
            f"the clock says {now.year:04d}-{now.month:02d}-{now.day:02d}: prep works with "
            f"dates from {EARLIEST.year} to {LATEST_CLOCK.year - 1}; fix the system clock"
        )
    return None


def stored_time_problem(dt: datetime) -> str | None:
    """Why a time read from a file (an import) is out of prep's range, or None."""
    if not EARLIEST <= dt < LATEST_STORED:
        return f"is outside the years {EARLIEST.year} to {LATEST_STORED.year - 1}"
    return None
