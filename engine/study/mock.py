"""`prep mock`: a mock interview.

A main question (a card with follow-up cards under it; due and least-known ones first, ties
broken by a seeded random choice), then its follow-up chain depth-first, each with a time budget
(``--minutes`` split over the chain, the main question counting double) and a running clock.
The candidate answers aloud or types, reveals, and grades themselves 1-4; each grade goes
through the normal scheduler and is stored like a quiz review (a ReviewSession over the chain).

`MockInterview` is the state machine both front ends drive: the line mode's `run_mock_plain`
(tui/plain.py, like `prep quiz --plain`) and the TUI's MockScreen (tui/screens/mock.py).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from prep.engine.decks.deck import Card
from prep.engine.store import Store
from prep.engine.study import plan as plan_mod
from prep.engine.study.collection import Cards
from prep.engine.study.due import is_due
from prep.engine.study.present import Verdict, choice_verdict, clock_text, first_line, shorten
from prep.engine.study.scheduler import RATING_NAMES, Outcome, Rating, Scheduler
from prep.engine.study.session import ReviewSession
from prep.engine.textsafe import quoted
from prep.engine.timeutil import Clock, utcnow

MAIN_WEIGHT = 2  # the main question's share of the time, relative to one follow-up


class MockError(ValueError):
    """No mock interview can be built (unknown deck, no card with follow-ups)."""


def main_candidates(collection: Cards, deck: str | None = None) -> list[Card]:
    """Cards that open a chain: they have follow-ups and (preferably) no parent."""
    cards = collection.in_deck(deck)
    with_children = [c for c in cards if collection.children(c.id)]
    roots = [c for c in with_children if c.parent is None]
    return roots or with_children


def follow_up_chain(collection: Cards, main_id: str) -> list[tuple[Card, int]]:
    """The main card and every card under it, depth-first in deck order, with its depth."""
    out: list[tuple[Card, int]] = []
    seen: set[str] = set()

    def visit(card: Card, depth: int) -> None:
        if card.id in seen:
            return
        seen.add(card.id)
        out.append((card, depth))
        for child in collection.children(card.id):
            visit(child, depth + 1)

    main = collection.get(main_id)
    if main is None:
        raise MockError(f"no card named {quoted(main_id)}")
    visit(main, 0)
    return out


def pick_main(
    store: Store,
    collection: Cards,
    scheduler: Scheduler,
    now: datetime,
    rng: random.Random,
    deck: str | None = None,
) -> Card:
    """Due (or never seen) main questions first, then the least known (lowest retrievability);
    ties broken by ``rng``. The day before an interview and the day itself, the chain whose
    root is weakest at the interview (lowest predicted recall then)."""
    if deck is not None and deck not in collection.decks:
        raise MockError(
            f"no deck named {quoted(deck)} (decks: {', '.join(collection.decks) or 'none'})"
        )
    candidates = main_candidates(collection, deck)
    if not candidates:
        where = f"deck {quoted(deck)}" if deck else "the decks"
        raise MockError(
            f"no card in {where} has follow-up questions, so there is no mock interview to run"
        )
    states = store.cards(c.id for c in candidates)
    plan = plan_mod.Plan.of(store.settings(), now)
    if plan is not None and plan.cramming:
        on_the_day = {c.id: round(plan.retrievability(states.get(c.id)), 2) for c in candidates}
        best_r = min(on_the_day.values())
        return rng.choice([c for c in candidates if on_the_day[c.id] == best_r])

    def key(card: Card) -> tuple[int, float]:
        state = states.get(card.id)
        if state is None or state.is_new:
            return (0, 0.0)
        if not isinstance(state.due, datetime) or not isinstance(state.last_review, datetime):
            return (1, 0.0)  # a hand-edited time: the session skips it with a message
        due = is_due(state, now)  # (by day for a review: engine/study/due.py)
        return (0 if due else 1, round(scheduler.retrievability(state, now), 2))

    keyed = [(key(c), c) for c in candidates]
    best = min(k for k, _ in keyed)
    return rng.choice([c for k, c in keyed if k == best])


@dataclass
class MockStep:
    card: Card
    depth: int  # 0: the main question; 1: a follow-up; 2: a follow-up's follow-up ...
    budget_s: float
    answer: str = ""
    picked: int | None = None  # choice cards: the option picked
    verdict: Verdict | None = None  # ... and what the pick means
    suggested: Rating | None = None
    elapsed_s: float | None = None  # frozen at reveal
    rating: Rating | None = None
    interval: timedelta | None = None
    missed: tuple[str, ...] = ()  # a graded typed answer: the rubric points it missed

    @property
    def revealed(self) -> bool:
        return self.elapsed_s is not None

    @property
    def over_budget(self) -> bool:
        return self.elapsed_s is not None and self.elapsed_s > self.budget_s


MAX_MINUTES = 24 * 60  # a mock is one interview's chain; a day is already far past one


class MockInterview:
    """One mock interview over a main question and its follow-up chain.

    Drive it: ``start()`` when a question is shown (starts its clock), ``elapsed()`` for the
    timer, optionally ``pick(i)`` on a choice card, ``reveal(answer)``, ``preview()`` for the
    rating buttons, ``grade(rating)`` (stored at once; the next question's clock starts).
    ``timer`` (seconds, monotonic) and ``clock`` (UTC now) are injectable for tests.
    """

    def __init__(
        self,
        store: Store,
        collection: Cards,
        *,
        minutes: float = 10.0,
        deck: str | None = None,
        main_id: str | None = None,
        seed: int | None = None,
        scheduler: Scheduler | None = None,
        clock: Clock = utcnow,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        if not minutes > 0:
            raise MockError(f"--minutes must be more than 0, got {minutes}")
        if minutes > MAX_MINUTES:  # 99999999 made a 1,666,666-hour clock (and inf, 1e308:
            # a clock of no whole seconds; "must be a finite number" was said of 1e308)
            raise MockError(f"--minutes must be at most {MAX_MINUTES} (a day), got {minutes:g}")
        self.store = store
        self.collection = collection
        self.minutes = minutes
        self.timer = timer
        self.clock = clock
        scheduler = scheduler or Scheduler(store.settings())
        if main_id is None:
            main = pick_main(store, collection, scheduler, clock(), random.Random(seed), deck)
            main_id = main.id
        chain = follow_up_chain(collection, main_id)
        weights = [MAIN_WEIGHT if depth == 0 else 1 for _, depth in chain]
        total = minutes * 60
        self.steps = [
            MockStep(card, depth, total * w / sum(weights))
            for (card, depth), w in zip(chain, weights, strict=True)
        ]
        self.index = 0
        self.session = ReviewSession(
            store,
            collection,
            scheduler=scheduler,
            clock=clock,
            queue=[s.card.id for s in self.steps],
            requeue=False,  # a mock asks each question once
        )
        self._started: float | None = None
        self._paused: float | None = None  # when the clock was paused (pause/resume)

    # --- where we are ----------------------------------------------------------------------

    @property
    def main(self) -> Card:
        return self.steps[0].card

    @property
    def finished(self) -> bool:
        return self.index >= len(self.steps)

    @property
    def step(self) -> MockStep | None:
        return None if self.finished else self.steps[self.index]

    @property
    def current(self) -> Card | None:
        step = self.step
        return None if step is None else step.card

    @property
    def total_budget_s(self) -> float:
        return self.minutes * 60

    def label(self, step: MockStep | None = None) -> str:
        """ "Main question" or "Follow-up to: <parent's first line>"."""
        step = step or self.step
        if step is None:
            return ""
        if step.depth == 0:
            return "Main question"
        parent = self.collection.get(step.card.parent or "")
        first = first_line(parent.prompt) if parent else ""
        return f"Follow-up to: {shorten(first)}" if first else "Follow-up"

    # --- the clock -------------------------------------------------------------------------

    def start(self) -> None:
        """Start (or restart) the current question's clock."""
        self._started = self.timer()
        self._paused = None
        self.session.mark_shown()

    def pause(self) -> None:
        """Hold the current question's clock (help or a dialog is open over the question: as
        Anki's answer timer, time spent there is not the answer's); resume() goes on."""
        if self._paused is None and self._started is not None and not self.finished:
            self._paused = self.timer()

    def resume(self) -> None:
        """Run the clock again after pause(), the paused time left out."""
        if self._paused is not None:
            if self._started is not None:
                self._started += self.timer() - self._paused
            self._paused = None

    def elapsed(self) -> float:
        step = self.step
        if step is None:
            return 0.0
        if step.elapsed_s is not None:
            return step.elapsed_s
        if self._started is None:
            self.start()
        assert self._started is not None
        now = self.timer() if self._paused is None else self._paused
        return max(0.0, now - self._started)

    def timer_text(self) -> str:
        """ "1:12 / 2:00" for the current question."""
        step = self.step
        if step is None:
            return ""
        return f"{clock_text(self.elapsed())} / {clock_text(step.budget_s)}"

    # --- answering -------------------------------------------------------------------------

    def pick(self, index: int) -> Verdict:
        """On a choice / red-flag card: pick option ``index``; returns the verdict."""
        step = self._require(revealed=False)
        if not step.card.choices or not 0 <= index < len(step.card.choices):
            raise ValueError(f"no option {index} on card {step.card.id!r}")
        verdict = choice_verdict(step.card, index)
        step.picked, step.verdict, step.suggested = index, verdict, verdict.suggested
        return verdict

    def reveal(self, answer: str = "") -> float:
        """Stop the clock and keep the typed answer; returns the seconds taken."""
        step = self._require(revealed=False)
        step.elapsed_s = self.elapsed()
        step.answer = answer.strip()
        return step.elapsed_s

    def preview(self) -> dict[Rating, Outcome]:
        """The outcome of each grade for the current question (computed before grading)."""
        return {} if self.finished else self.session.preview()

    def grade(self, rating: Rating | int) -> Outcome:
        """Store the self-grade through the normal scheduler and move to the next question."""
        step = self._require(revealed=True)
        assert step.elapsed_s is not None  # frozen at reveal
        rating = Rating(rating)
        shown = self.session.current
        if shown is None or shown.id != step.card.id:
            why = self.session.skipped[-1][1] if self.session.skipped else "it cannot be rated"
            raise MockError(f"card {step.card.id} cannot be graded: {why}")
        outcome = self.session.rate(
            rating,
            duration_ms=int(step.elapsed_s * 1000),
            card_id=step.card.id,  # the question asked: never another card
            content_hash=step.card.content_hash,
        )
        step.rating, step.interval = rating, outcome.interval
        self.index += 1
        self._started = self._paused = None
        if not self.finished:
            self.start()
        return outcome

    def _require(self, *, revealed: bool) -> MockStep:
        step = self.step
        if step is None:
            raise RuntimeError("the mock interview is over")
        if step.revealed != revealed:
            raise RuntimeError("reveal the answer first" if revealed else "already revealed")
        return step

    # --- the end ---------------------------------------------------------------------------

    def summary(self) -> dict:
        graded = [s for s in self.steps if s.rating is not None]
        return {
            "main": self.main.id,
            "questions": len(self.steps),
            "graded": len(graded),
            "seconds": round(sum(s.elapsed_s or 0.0 for s in graded), 1),
            "budget_seconds": round(self.total_budget_s, 1),
            "over_budget": sum(1 for s in graded if s.over_budget),
            "ratings": {RATING_NAMES[r]: sum(1 for s in graded if s.rating == r) for r in Rating},
            "steps": [
                {
                    "card_id": s.card.id,
                    "depth": s.depth,
                    "budget_seconds": round(s.budget_s, 1),
                    "seconds": None if s.elapsed_s is None else round(s.elapsed_s, 1),
                    "rating": None if s.rating is None else int(s.rating),
                    "missed": list(s.missed),
                }
                for s in self.steps
            ],
        }
