"""The preview's four ratings in one pass (engine/study/onepass.py, issue 26) are fsrs's, bit
for bit: each outcome of Scheduler.preview against fsrs's own review_card of that rating (the
path a rating that is not previewed takes), over random states (new, learning and relearning
steps, steps past the last one, review cards, odd stored values), parameters, desired
retention, steps, maximum interval, clocks (the same day, days and years later, a clock set
back) and seeds, fuzz on and off. A state fsrs refuses is refused the same way."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import fsrs
import pytest
from fsrs.scheduler import DEFAULT_PARAMETERS, LOWER_BOUNDS_PARAMETERS, UPPER_BOUNDS_PARAMETERS

from prep.engine.study import onepass
from prep.engine.study.scheduler import CardState, Rating, Scheduler, Settings, _FirstDraw

NOW = datetime(2026, 12, 2, 5, 30, 12, 345678, tzinfo=UTC)


def _settings(rng: random.Random) -> Settings:
    params = None
    if rng.random() < 0.6:
        params = tuple(
            rng.choice((lo, hi, rng.uniform(lo, hi)))
            for lo, hi in zip(LOWER_BOUNDS_PARAMETERS, UPPER_BOUNDS_PARAMETERS, strict=True)
        )
    elif rng.random() < 0.5:
        params = tuple(DEFAULT_PARAMETERS)

    def steps() -> tuple[float, ...]:
        return tuple(
            rng.choice((1.0, 10.0, 0.5, 1440.0, rng.uniform(0.01, 5000)))
            for _ in range(rng.choice((0, 1, 1, 2, 2, 3, 4)))
        )

    return Settings(
        desired_retention=rng.choice((0.9, 0.7, 0.99, rng.uniform(0.7, 0.99))),
        learning_steps_min=steps(),
        relearning_steps_min=steps(),
        maximum_interval=rng.choice((36500, 1, 2, 3, 30, 365, rng.randint(1, 36500))),
        parameters=params,
        leech_threshold=rng.choice((1, 2, 8)),
    ).validated()


def _card(rng: random.Random) -> CardState:
    state = rng.choice((1, 1, 2, 2, 2, 3))
    new = state == 1 and rng.random() < 0.4
    stability = None if new else rng.choice((0.001, 1e6, 0.1, rng.uniform(0.001, 400)))
    difficulty = None if new else rng.choice((1.0, 10.0, rng.uniform(1, 10)))
    if new:
        last = None if rng.random() < 0.8 else NOW - timedelta(minutes=rng.uniform(0, 50))
    elif state == 1 and rng.random() < 0.2:
        last = None  # stability without a last review (an import)
    else:
        last = NOW - timedelta(
            seconds=rng.choice(
                (
                    rng.uniform(0, 86400),  # the same day
                    86399.999999,
                    86400,
                    rng.uniform(0, 3000) * 86400,  # days to years
                    -rng.uniform(0, 86400 * 3),  # a clock set back
                )
            )
        )
    step = rng.choice((0, 0, 1, 2, 3, 5, None)) if state != 2 else rng.choice((None, None, 0, 2))
    return CardState(
        id=f"c{rng.randint(0, 999)}",
        deck="d",
        state=state,
        step=step,
        stability=stability,
        difficulty=difficulty,
        due=NOW,
        last_review=last,
        reps=0 if new else rng.randint(1, 30),
        lapses=rng.randint(0, 9),
        leech=rng.random() < 0.1,
        content_hash="h",
    )


def _by_fsrs(sched: Scheduler, card: CardState, now: datetime, key: str):
    """Each rating through fsrs's review_card (what preview did before the one pass)."""
    draw = _FirstDraw(sched._seed(card, key))
    fcard = card.to_fsrs(now)
    return {r: sched._review(card, r, now, draw, fcard) for r in Rating}


def _outcome_or_error(fn, *args):
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        return type(exc)


@pytest.mark.parametrize("seed", range(8))
def test_the_one_pass_preview_is_fsrs_bit_for_bit(seed: int) -> None:
    rng = random.Random(seed)
    compared = refused = fuzzed = 0
    for i in range(600):
        sched = Scheduler(_settings(rng), enable_fuzzing=rng.random() < 0.7, seed=rng.randint(0, 9))
        card = _card(rng)
        now = NOW + timedelta(microseconds=rng.randint(0, 10**6))
        key = f"dev:{i}"
        want = _outcome_or_error(_by_fsrs, sched, card, now, key)
        got = _outcome_or_error(sched.preview, card, now, key)
        assert got == want, (card, sched.settings, sched.enable_fuzzing)
        if isinstance(want, dict):
            compared += 1
            # exactly: floats bit for bit (== on the dataclasses compares them with ==)
            for r in Rating:
                a, b = got[r].state, want[r].state  # type: ignore[index]
                assert (a.stability, a.difficulty) == (b.stability, b.difficulty)
                assert type(a.state) is type(b.state) and a.step == b.step
            fuzzed += any(o.interval.days >= 3 for o in want.values())
        else:
            refused += 1
    assert compared > 400 and fuzzed > 50  # the comparison covered what it is meant to


def test_the_preview_runs_the_one_pass_not_fsrs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A card's preview is one pass of our own (fsrs's review_card runs 0 times, was 4)."""
    runs: list[str] = []
    real_review, real_four = fsrs.Scheduler.review_card, onepass.four
    monkeypatch.setattr(
        fsrs.Scheduler,
        "review_card",
        lambda self, *a, **k: runs.append("fsrs") or real_review(self, *a, **k),
    )
    monkeypatch.setattr(onepass, "four", lambda *a: runs.append("one") or real_four(*a))
    sched = Scheduler(Settings())
    review = CardState(
        id="r", state=2, step=None, stability=20.0, difficulty=5.0, due=NOW, reps=4,
        last_review=NOW - timedelta(days=21),
    )  # fmt: skip
    for card in (CardState(id="n"), review):
        runs.clear()
        sched.preview(card, NOW, "dev:1")
        assert runs == ["one"]


def test_a_state_fsrs_refuses_is_refused_by_the_preview() -> None:
    """What the one pass cannot compute goes to fsrs, which raises as it always did (the
    session's check that a stored state can be rated)."""
    sched = Scheduler(Settings())
    no_stability = CardState(id="x", state=2, step=None, last_review=NOW, reps=3)
    with pytest.raises(AssertionError):
        sched.preview(no_stability, NOW, "dev:1")
    no_step = CardState(id="y", state=3, step=None, stability=3.0, difficulty=5.0, reps=2,
                        last_review=NOW - timedelta(days=2))  # fmt: skip
    with pytest.raises(AssertionError):
        sched.preview(no_step, NOW, "dev:2")
