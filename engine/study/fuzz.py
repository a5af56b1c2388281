"""prep's fuzz for fsrs: one draw a review from a generator seeded by the review (see
engine/study/scheduler.py's module doc), and fsrs's fuzz range of an interval computed once."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import fsrs
from fsrs.scheduler import FUZZ_RANGES


class _FirstDraw:
    """The first ``random()`` of ``random.Random(seed)``, drawn when first asked for (a fuzz is
    drawn only for an interval of 3 days or more) and then kept: the four ratings of one
    preview share their review's seed, and seeding (a SHA-512 of the text) costs more than
    the rest of the fuzz. The same number a fresh ``Random(seed)`` gives, each time asked."""

    __slots__ = ("_seed", "_value")

    def __init__(self, seed: str) -> None:
        self._seed = seed
        self._value: float | None = None

    def random(self) -> float:
        if self._value is None:
            self._value = random.Random(self._seed).random()
        return self._value


_FUZZ_RANGES = tuple((r["start"], r["end"], r["factor"]) for r in FUZZ_RANGES)


class _SeededFsrs(fsrs.Scheduler):
    """fsrs.Scheduler whose fuzz comes from ``self.rng`` instead of the global ``random``
    (one draw a review: ``_get_fuzzed_interval`` below is the only caller)."""

    rng: _FirstDraw

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # (min_ivl, max_ivl) of each interval in days: what fsrs's _get_fuzz_range computes
        # from the days and maximum_interval alone (three of them for every card shown),
        # computed once a scheduler (a change of settings is a new one)
        self._ranges: dict[int, tuple[int, int]] = {}

    def _get_fuzzed_interval(self, *, interval: timedelta) -> timedelta:
        interval_days = interval.days
        if interval_days < 2.5:
            return interval
        ranges = self._ranges
        found = ranges.get(interval_days)
        if found is None:
            delta = 1.0
            for start, end, factor in _FUZZ_RANGES:  # (fsrs's, in its order: the same sums)
                delta += factor * max(min(float(interval_days), end) - start, 0.0)
            min_ivl = max(2, round(interval_days - delta))
            max_ivl = min(round(interval_days + delta), self.maximum_interval)
            found = (min(min_ivl, max_ivl), max_ivl)
            if len(ranges) < 40_000:  # (maximum_interval's days at most: 36,500 by default)
                ranges[interval_days] = found
        min_ivl, max_ivl = found
        days = self.rng.random() * (max_ivl - min_ivl + 1) + min_ivl
        return timedelta(days=min(round(days), self.maximum_interval))
