"""The objects an answer makes (issue 26, round 15): the card states and outcomes of a preview,
moved to the time of the rating, are made from their fields' dict (not the frozen dataclass's
__init__, one object.__setattr__ per field), and a preview kept for the same card object is not
compared with it field by field. What they make is what the dataclasses make: equal, the same
hash and text, frozen, and the same outcomes whichever way the preview is reached."""

from __future__ import annotations

import dataclasses
import random
from datetime import UTC, datetime, timedelta

import pytest

from prep.engine.study import scheduler as sched
from prep.engine.study.scheduler import CardState, Outcome, Rating, Scheduler

NOW = datetime(2026, 12, 3, 6, 44, 18, 723875, tzinfo=UTC)


def _states(n: int) -> list[CardState]:
    rng = random.Random(15)
    out = [CardState(id="new", deck="d", content_hash="h")]
    for i in range(n):
        last = NOW - timedelta(days=rng.randrange(1, 400), seconds=rng.randrange(86400))
        state = rng.choice((1, 2, 3))
        out.append(
            CardState(
                id=f"c{i}",
                deck=rng.choice(("a", "b")),
                state=state,
                step=None if state == 2 else rng.randrange(2),
                stability=rng.uniform(0.5, 300),
                difficulty=rng.uniform(1, 10),
                due=last + timedelta(days=rng.randrange(1, 30)),
                last_review=last,
                reps=rng.randrange(1, 30),
                lapses=rng.randrange(5),
                leech=rng.random() < 0.1,
                content_hash=f"{rng.getrandbits(64):016x}",
                changed=rng.random() < 0.1,
            )
        )
    return out


def _same(a: object, b: object) -> None:
    assert a == b and hash(a) == hash(b) and repr(a) == repr(b)
    assert type(a) is type(b)
    for f in dataclasses.fields(a):  # type: ignore[arg-type]
        assert type(getattr(a, f.name)) is type(getattr(b, f.name)), f.name


def test_a_changed_state_is_what_replace_makes() -> None:
    """An outcome's state (made from the card's fields' dict, round 16 without a helper's
    keywords) is what dataclasses.replace makes of the card."""
    due = NOW + timedelta(days=3)
    for state in _states(60):
        for rating in Rating:
            made = Scheduler()._outcome(state, rating, NOW, 2, None, 5.5, 4.25, due, NOW).state
            lapsed = state.state == 2 and rating == Rating.Again
            lapses = state.lapses + lapsed
            want = dataclasses.replace(
                state,
                state=2,
                step=None,
                stability=5.5,
                difficulty=4.25,
                due=due,
                last_review=NOW,
                reps=state.reps + 1,
                lapses=lapses,
                leech=state.leech or lapses >= 8,
                changed=False,
            )
            _same(made, want)
            assert made.__dict__ is not state.__dict__ and state.due != due  # (a copy)
            with pytest.raises(dataclasses.FrozenInstanceError):
                made.due = None  # type: ignore[misc]


def test_previews_moved_and_reviews_kept_are_what_the_dataclasses_make() -> None:
    """Every outcome, its preview moved to a later time and the rating taken from it, against
    fsrs's own review at that time (bit for bit) and the dataclasses' constructors."""
    for fuzz in (True, False):
        for state in _states(60):
            made = Scheduler(enable_fuzzing=fuzz)
            plain = Scheduler(enable_fuzzing=fuzz)
            first = made.preview(state, NOW, "dev:1")
            later = NOW + timedelta(seconds=37, microseconds=11)
            moved = made.preview(state, later, "dev:1")
            for rating in Rating:
                seed = plain._seed(state, "dev:1")
                fsrs_s = plain._review(state, rating, later, sched._FirstDraw(seed))
                _same(moved[rating], fsrs_s)
                o = first[rating]
                by_hand = Outcome(
                    o.rating,
                    dataclasses.replace(
                        o.state, due=o.state.due + (later - NOW), last_review=later
                    ),
                    o.interval,
                    o.lapsed,
                )
                _same(moved[rating], by_hand)
                _same(made.review(state, rating, later, "dev:1"), fsrs_s)
                with pytest.raises(dataclasses.FrozenInstanceError):
                    moved[rating].state = state  # type: ignore[misc]


def test_a_kept_preview_is_not_compared_field_by_field_with_its_own_card(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The card shown, its preview on reveal and its rating pass the same state object:
    before, each compared it with the kept one field by field (a tuple of 14 a side)."""
    compared: list[object] = []
    eq = CardState.__eq__

    def counted(self: CardState, other: object) -> bool:
        compared.append(other)
        return eq(self, other)

    monkeypatch.setattr(CardState, "__eq__", counted)
    made = Scheduler()
    state = _states(3)[2]
    made.preview(state, NOW, "dev:1")
    made.preview(state, NOW + timedelta(seconds=3), "dev:1")
    made.review(state, Rating.Good, NOW + timedelta(seconds=5), "dev:1")
    assert compared == []
    made.preview(dataclasses.replace(state), NOW + timedelta(seconds=6), "dev:1")
    assert len(compared) == 1  # (another object: compared, and kept when equal)
