"""UTC datetimes, one text format, and the injectable clock.

Every datetime in the engine is aware and in ``timezone.utc`` exactly (fsrs rejects any other
tzinfo). In SQLite they are stored as fixed-width text, so that string order is time order.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, time, timedelta

Clock = Callable[[], datetime]
_FMT = "%Y-%m-%dT%H:%M:%S.%fZ"


def utcnow() -> datetime:
    return datetime.now(UTC)


def to_utc(dt: datetime) -> datetime:
    """An aware datetime converted to timezone.utc exactly; a naive one is taken as UTC."""
    if dt.tzinfo is None:
        return dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def fmt(dt: datetime | None) -> str | None:
    """Fixed-width UTC text (lexicographic order == time order)."""
    if dt is None:
        return None
    return to_utc(dt).strftime(_FMT)


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


def human_interval(delta: timedelta) -> str:
    """Short interval text for rating buttons: 45s, 10m, 3h, 4d, 2.5mo, 1.2y."""
    seconds = max(0.0, delta.total_seconds())
    if round(seconds) < 60:  # rounded first, so 23.9 hours reads 1d, not 24h
        return f"{round(seconds)}s"
    minutes = seconds / 60
    if round(minutes) < 60:
        return f"{round(minutes)}m"
    hours = minutes / 60
    if round(hours) < 24:
        return f"{round(hours)}h"
    days = hours / 24
    if days < 30:
        return f"{round(days)}d"
    if days < 365:
        months = days / 30.4
        return f"{months:.1f}mo".replace(".0mo", "mo")
    return f"{days / 365:.1f}y".replace(".0y", "y")


def plural(n: int, noun: str, many: str | None = None) -> str:
    """``1 day``, ``2 days``, ``0 cards`` (``many`` for irregular plurals)."""
    return f"{n} {noun if n == 1 else (many or noun + 's')}"


_UNIT_WORDS = {"s": "second", "m": "minute", "h": "hour", "d": "day", "mo": "month", "y": "year"}


def spoken_interval(delta: timedelta) -> str:
    """The interval of ``human_interval`` in words, for sentences: 1 day, 2 days, 2.5 months."""
    short = human_interval(delta)
    number = short.rstrip("smhdoy")
    word = _UNIT_WORDS[short[len(number) :]]
    return f"{number} {word}" + ("" if number == "1" else "s")
