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
# fsrs's enum members bound once: reading ``Rating.Again`` off the enum class costs about ten
# times a global's read in Python 3.11 (~0.7 us; some 25 a card shown, issue 26). The same
# objects, so every value and type is fsrs's.
_AGAIN, _HARD, _GOOD, _EASY = Rating.Again, Rating.Hard, Rating.Good, Rating.Easy
_LEARNING, _REVIEW, _RELEARNING = State.Learning, State.Review, State.Relearning
_RATINGS = (_AGAIN, _HARD, _GOOD, _EASY)
_STATE_OF = {int(s): s for s in State}  # (State(x) for the three values: a dict's look-up)
# (rating, new state, new step, stability, difficulty, due)
Computed = tuple[Rating, int, int | None, float, float, datetime]


def four(fs: fsrs.Scheduler, card: CardState, now: datetime) -> list[Computed]:
    """What each rating at ``now`` (UTC) gives ``card``, as fsrs's review_card would: the
    state, the step, the stability, the difficulty and the due time (last review: ``now``).
    Raises what the arithmetic raises; the caller then asks fsrs.

    What the ratings share (the retrievability's powers, the recall formula's product before
    its rating's penalty or bonus, the mean-reversion target) is computed once, each value by
    fsrs's operations in fsrs's order, so each rating's floats are the ones its own pass gives."""
    p = fs.parameters
    state = _STATE_OF.get(card.state) or State(card.state)
    step = card.step
    if state is _LEARNING and step is None:
        step = 0  # (fsrs.Card's constructor)
    s, d = card.stability, card.difficulty
    last = card.last_review
    days = (now - last).days if last else None
    if state is _LEARNING:
        steps = fs.learning_steps
        fresh = s is None or d is None
    else:
        assert s is not None
        assert d is not None
        if state is _RELEARNING:
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
        mean_target = p[4] - (_E ** (p[5] * (_EASY - 1))) + 1  # _initial_difficulty(Easy)
        if not short:  # _next_recall_stability's product up to its penalty and bonus
            recall = (_E ** (p[8])) * (11 - d) * (s ** -p[9]) * ((_E ** ((1 - r) * p[10])) - 1)
        # _next_difficulty's mean reversion: its target's share and the damped part's
        target_part, damped_share, to_ten = p[7] * mean_target, (1 - p[7]), (10.0 - d)
    factor, decay, most = fs._FACTOR, fs._DECAY, fs.maximum_interval
    # fsrs's _next_interval: whole days for a stability, at least 1, at most the maximum
    per_factor = (fs.desired_retention ** (1 / decay)) - 1
    fuzz = fs.enable_fuzzing
    count = len(steps)
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
                if rating is not _AGAIN:
                    inc = max(inc, 1.0)
                stab = max(s * inc, STABILITY_MIN)
            elif rating is _AGAIN:  # _next_forget_stability
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
                hard_penalty = p[15] if rating is _HARD else 1
                easy_bonus = p[16] if rating is _EASY else 1
                stab = max(s * (1 + recall * hard_penalty * easy_bonus), STABILITY_MIN)
            # _next_difficulty: linear damping, then mean reversion towards Easy's start
            delta = -(p[6] * (rating - 3))
            arg_2 = d + to_ten * delta / 9.0
            diff = min(max(target_part + damped_share * arg_2, MIN_DIFFICULTY), MAX_DIFFICULTY)
        interval: timedelta
        if state is _REVIEW:
            if rating is _AGAIN and count:
                new_state, new_step = _RELEARNING, 0
                interval = steps[0]
            else:
                interval = timedelta(days=min(max(round((stab / factor) * per_factor), 1), most))
        elif count == 0 or (step >= count and rating is not _AGAIN):  # type: ignore[operator]
            new_state, new_step = _REVIEW, None
            interval = timedelta(days=min(max(round((stab / factor) * per_factor), 1), most))
        elif rating is _AGAIN:
            new_step = 0
            interval = steps[0]
        elif rating is _HARD:
            if step == 0 and count == 1:
                interval = steps[0] * 1.5
            elif step == 0 and count >= 2:
                interval = (steps[0] + steps[1]) / 2.0
            else:
                interval = steps[step]  # type: ignore[index]
        elif rating is _GOOD and step + 1 != count:  # type: ignore[operator]
            new_step = step + 1  # type: ignore[operator]
            interval = steps[new_step]
        else:  # Good at the last step, or Easy: graduates
            new_state, new_step = _REVIEW, None
            interval = timedelta(days=min(max(round((stab / factor) * per_factor), 1), most))
        if fuzz and new_state is _REVIEW:
            interval = fs._get_fuzzed_interval(interval=interval)
        out.append((rating, int(new_state), new_step, stab, diff, now + interval))
    return out
