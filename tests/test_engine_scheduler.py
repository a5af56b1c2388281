"""Golden intervals from fsrs (FSRS-6 default parameters), fuzzing off, fixed UTC times."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from prep.engine.study.present import human_interval
from prep.engine.study.scheduler import CardState, Rating, Scheduler, Settings, State

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def intervals(s: Scheduler, card: CardState, now: datetime) -> dict[int, timedelta]:
    return {int(r): o.interval for r, o in s.preview(card, now).items()}


def test_new_card_golden_intervals() -> None:
    s = Scheduler(enable_fuzzing=False)
    assert intervals(s, CardState(id="x"), T0) == {
        1: timedelta(minutes=1),
        2: timedelta(minutes=5, seconds=30),
        3: timedelta(minutes=10),
        4: timedelta(days=8),
    }


def test_learning_to_review_to_relearning_golden() -> None:
    s = Scheduler(enable_fuzzing=False)
    card = s.review(CardState(id="x"), Rating.Good, T0).state
    assert (card.state, card.step) == (State.Learning, 1)
    now = card.due
    assert intervals(s, card, now) == {
        1: timedelta(minutes=1),
        2: timedelta(minutes=10),
        3: timedelta(days=2),
        4: timedelta(days=4),
    }
    out = s.review(card, Rating.Good, now)
    assert out.state.state == State.Review and out.interval == timedelta(days=2)
    card, now = out.state, out.state.due
    assert intervals(s, card, now) == {
        1: timedelta(minutes=10),
        2: timedelta(days=8),
        3: timedelta(days=11),
        4: timedelta(days=19),
    }
    lapse = s.review(card, Rating.Again, now)
    assert lapse.state.state == State.Relearning
    assert lapse.lapsed and lapse.state.lapses == 1
    assert lapse.interval == timedelta(minutes=10)
    assert lapse.state.reps == 3


def test_preview_equals_the_rating_it_previews_with_fuzz() -> None:
    """Fuzz is seeded by the card's history, so the button shows what the rating gives."""
    s = Scheduler(enable_fuzzing=True, seed=7)
    card = CardState(id="x")
    now = T0
    for _ in range(6):
        preview = s.preview(card, now)
        later = now + timedelta(seconds=30)
        out = s.review(card, Rating.Good, later)
        assert out.interval + (later - now) - preview[Rating.Good].interval < timedelta(minutes=1)
        card, now = out.state, out.state.due


def test_fuzz_is_seedable_and_on_by_default() -> None:
    card = CardState(id="x")
    now = T0
    plain = Scheduler(enable_fuzzing=False)
    for _ in range(4):
        out = plain.review(card, Rating.Good, now)
        card, now = out.state, out.state.due
    assert Scheduler().enable_fuzzing
    by_seed = {
        seed: Scheduler(enable_fuzzing=True, seed=seed).review(card, Rating.Good, now).interval
        for seed in range(12)
    }
    assert (
        by_seed[3] == Scheduler(enable_fuzzing=True, seed=3).review(card, Rating.Good, now).interval
    )
    assert len(set(by_seed.values())) > 1  # fuzz really varies with the seed
    unfuzzed = plain.review(card, Rating.Good, now).interval
    assert all(abs(v - unfuzzed) <= unfuzzed * 0.2 for v in by_seed.values())


def test_desired_retention_changes_intervals() -> None:
    card = Scheduler(enable_fuzzing=False).review(CardState(id="x"), Rating.Easy, T0).state
    lax = Scheduler(Settings(desired_retention=0.8), enable_fuzzing=False)
    strict = Scheduler(Settings(desired_retention=0.95), enable_fuzzing=False)
    assert (
        lax.review(card, Rating.Good, card.due).interval
        > strict.review(card, Rating.Good, card.due).interval
    )


def test_leech_flag_after_threshold_lapses() -> None:
    s = Scheduler(Settings(leech_threshold=2), enable_fuzzing=False)
    card = s.review(CardState(id="x"), Rating.Easy, T0).state
    for expected_lapses in (1, 2):
        card = s.review(card, Rating.Again, card.due).state
        assert card.lapses == expected_lapses
        assert card.leech == (expected_lapses >= 2)
        card = s.review(card, Rating.Good, card.due).state  # back to Review
        card = replace(card, due=card.due)


def test_non_utc_datetimes_are_converted_to_utc() -> None:
    from datetime import timezone as tz

    s = Scheduler(enable_fuzzing=False)
    cest = tz(timedelta(hours=2))
    out = s.review(CardState(id="x"), Rating.Good, datetime(2026, 3, 2, 11, 0, tzinfo=cest))
    assert out.state.last_review == T0 and out.state.last_review.tzinfo is UTC


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"desired_retention": 1.5}, "desired_retention"),
        ({"new_per_day": -1}, "new_per_day"),
        ({"parameters": (1.0,) * 3}, "parameters"),
        # values the queue's SQL (LIMIT ?) or fsrs's timedelta steps cannot take: refused
        # here, not a traceback on every later `prep quiz`
        ({"review_limit": 10**23}, "review_limit"),
        ({"new_per_day": 2**63}, "new_per_day"),
        ({"learning_steps_min": ("a",)}, "learning_steps_min"),
        ({"learning_steps_min": (1e300,)}, "learning_steps_min"),
        ({"relearning_steps_min": (-5.0,)}, "relearning_steps_min"),
        ({"relearning_steps_min": (float("nan"),)}, "relearning_steps_min"),
    ],
)
def test_settings_validation(bad: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Settings(**bad).validated()


def test_settings_round_trip() -> None:
    s = Settings(desired_retention=0.85, new_per_day=5, learning_steps_min=(2.0,))
    assert Settings.from_dict(s.to_dict()) == s


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        (timedelta(seconds=30), "30s"),
        (timedelta(minutes=10), "10m"),
        (timedelta(hours=3), "3h"),
        (timedelta(days=4), "4d"),
        (timedelta(days=61), "2mo"),
        (timedelta(days=400), "1.1y"),
        # rounded before the unit is chosen: 23.9 hours is "1d", not "24h"
        (timedelta(hours=23.9), "1d"),
        (timedelta(minutes=59.7), "1h"),
        (timedelta(hours=23.4), "23h"),
    ],
)
def test_human_interval(delta: timedelta, text: str) -> None:
    assert human_interval(delta) == text


def test_study_day_starts_at_4am_local_across_dst_changes(new_york_local_time) -> None:
    from prep.engine.timeutil import day_start, study_day_start

    # 03:30 EDT on Mar 8 is still Mar 7's study day, which began at 04:00 EST (09:00 UTC)
    assert day_start(datetime(2026, 3, 8, 7, 30, tzinfo=UTC)) == datetime(2026, 3, 7, 9, tzinfo=UTC)
    # 03:30 EST on Nov 1 is still Oct 31's, which began at 04:00 EDT (08:00 UTC)
    assert day_start(datetime(2026, 11, 1, 8, 30, tzinfo=UTC)) == datetime(
        2026, 10, 31, 8, tzinfo=UTC
    )
    # whole study days from there on are 23 or 25 hours long across the change
    noon = datetime(2026, 3, 9, 16, tzinfo=UTC)  # Mar 9, 12:00 EDT
    assert study_day_start(noon) == datetime(2026, 3, 9, 8, tzinfo=UTC)
    assert study_day_start(noon, -2) == datetime(2026, 3, 7, 9, tzinfo=UTC)
    assert study_day_start(noon, 1) == datetime(2026, 3, 10, 8, tzinfo=UTC)
    assert day_start(datetime(2026, 3, 2, 9, 0, tzinfo=UTC)).tzinfo is UTC
