"""The four ratings' outcomes of one card in one pass (issue 26: the preview shown on the rating
buttons, computed for every card shown).

fsrs's ``Scheduler.review_card`` run once per rating copies the card, and recomputes, four
times, what the ratings share: the days since the last review, the retrievability, the
difficulty's mean-reversion target. This module computes those once and then each rating's
stability, difficulty, step and interval with fsrs's own formulas, written as fsrs writes
them (the same operations in the same order, ``math.e ** x`` and not ``math.exp``), so that
every float is the one fsrs gives, bit for bit. The fuzz is fsrs's hook (``_get_fuzzed_interval``
of the scheduler given, which prep seeds per review). ``tests/test_onepass.py`` holds it equal to
``review_card`` over many random states, parameters, steps and clocks, fuzz on and off.

Only the preview uses it; a state it cannot compute is handed back to fsrs by the caller
(engine/study/scheduler.py), so fsrs stays the judge of what a state it refuses looks like.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from fsrs import Rating, State
from fsrs.scheduler import MAX_DIFFICULTY, MIN_DIFFICULTY, STABILITY_MIN

if TYPE_CHECKING:
    import fsrs

    from prep.engine.study.scheduler import CardState

_E = math.e
_RATINGS = (Rating.Again, Rating.Hard, Rating.Good, Rating.Easy)
# (rating, new state, new step, stability, difficulty, due)
Computed = tuple[Rating, int, int | None, float, float, datetime]


def four(fs: fsrs.Scheduler, card: CardState, now: datetime) -> list[Computed]:
    """What each rating at ``now`` (UTC) gives ``card``, as fsrs's review_card would: the
    state, the step, the stability, the difficulty and the due time (last review: ``now``).
    Raises what the arithmetic raises; the caller then asks fsrs."""
    p = fs.parameters
    state = State(card.state)
    step = card.step
    if state == State.Learning and step is None:
        step = 0  # (fsrs.Card's constructor)
    s, d = card.stability, card.difficulty
    last = card.last_review
    days = (now - last).days if last else None
    if state == State.Learning:
        steps = fs.learning_steps
        fresh = s is None or d is None
    else:
        assert s is not None
        assert d is not None
        if state == State.Relearning:
            assert step is not None
        steps = fs.relearning_steps
        fresh = False
    short = days is not None and days < 1
    if not fresh:
        assert s is not None and d is not None
        # fsrs.Scheduler.get_card_retrievability of the card as it was
        if last is None:
            r: float = 0
        else:
            r = (1 + fs._FACTOR * max(0, (now - last).days) / s) ** fs._DECAY
        mean_target = p[4] - (_E ** (p[5] * (Rating.Easy - 1))) + 1  # _initial_difficulty(Easy)
    interval_of = _interval_of(fs)
    out: list[Computed] = []
    for rating in _RATINGS:
        new_state, new_step = state, step
        if fresh:
            stab = max(p[rating - 1], STABILITY_MIN)
            diff = min(
                max(p[4] - (_E ** (p[5] * (rating - 1))) + 1, MIN_DIFFICULTY), MAX_DIFFICULTY
            )
        else:
            assert s is not None and d is not None
            if short:  # _short_term_stability
                inc = (_E ** (p[17] * (rating - 3 + p[18]))) * (s ** -p[19])
                if rating != Rating.Again:
                    inc = max(inc, 1.0)
                stab = max(s * inc, STABILITY_MIN)
            elif rating == Rating.Again:  # _next_forget_stability
                stab = max(
                    min(
                        p[11]
                        * (d ** -p[12])
                        * (((s + 1) ** (p[13])) - 1)
                        * (_E ** ((1 - r) * p[14])),
                        s / (_E ** (p[17] * p[18])),
                    ),
                    STABILITY_MIN,
                )
            else:  # _next_recall_stability
                hard_penalty = p[15] if rating == Rating.Hard else 1
                easy_bonus = p[16] if rating == Rating.Easy else 1
                stab = max(
                    s
                    * (
                        1
                        + (_E ** (p[8]))
                        * (11 - d)
                        * (s ** -p[9])
                        * ((_E ** ((1 - r) * p[10])) - 1)
                        * hard_penalty
                        * easy_bonus
                    ),
                    STABILITY_MIN,
                )
            # _next_difficulty: linear damping, then mean reversion towards Easy's start
            delta = -(p[6] * (rating - 3))
            arg_2 = d + (10.0 - d) * delta / 9.0
            diff = min(max(p[7] * mean_target + (1 - p[7]) * arg_2, MIN_DIFFICULTY), MAX_DIFFICULTY)
        interval: timedelta
        if state == State.Review:
            if rating == Rating.Again and len(steps):
                new_state, new_step = State.Relearning, 0
                interval = steps[0]
            else:
                interval = timedelta(days=interval_of(stab))
        elif len(steps) == 0 or (step >= len(steps) and rating != Rating.Again):  # type: ignore[operator]
            new_state, new_step = State.Review, None
            interval = timedelta(days=interval_of(stab))
        elif rating == Rating.Again:
            new_step = 0
            interval = steps[0]
        elif rating == Rating.Hard:
            if step == 0 and len(steps) == 1:
                interval = steps[0] * 1.5
            elif step == 0 and len(steps) >= 2:
                interval = (steps[0] + steps[1]) / 2.0
            else:
                interval = steps[step]  # type: ignore[index]
        elif rating == Rating.Good and step + 1 != len(steps):  # type: ignore[operator]
            new_step = step + 1  # type: ignore[operator]
            interval = steps[new_step]
        else:  # Good at the last step, or Easy: graduates
            new_state, new_step = State.Review, None
            interval = timedelta(days=interval_of(stab))
        if fs.enable_fuzzing and new_state == State.Review:
            interval = fs._get_fuzzed_interval(interval=interval)
        out.append((rating, int(new_state), new_step, stab, diff, now + interval))
    return out


def _interval_of(fs: fsrs.Scheduler):
    """fsrs's _next_interval: whole days for a stability, at least 1, at most the maximum."""
    factor, decay, retention, most = (
        fs._FACTOR,
        fs._DECAY,
        fs.desired_retention,
        fs.maximum_interval,
    )

    def days(stability: float) -> int:
        return min(max(round((stability / factor) * ((retention ** (1 / decay)) - 1)), 1), most)

    return days
