"""The mock loads the grader's model when it starts, off the UI thread, says how long the first
grade has waited for it, and says so at once when the load fails (note13: "Grading your
answer…" waited ~25 s under load with nothing moving). The worker is faked: its load and its
grade are Futures the test resolves."""

from __future__ import annotations

import re
import time
from concurrent.futures import Future
from typing import Any

import pytest
from textual.widgets import Static

from prep.demos.pretrained.grader.rubric import Grade, PointVerdict, Rubric
from prep.engine.decks.collection import CachedCollection
from prep.engine.decks.deck import ParsedDecks, parse_deck_text
from prep.engine.decks.deckcache import from_parsed
from prep.engine.study.mock import MockInterview
from prep.engine.study.scheduler import Rating
from prep.tui.worker import WorkerError
from tests.pilot import record_notes
from tests.test_tui import async_test, wait_until

pytestmark = pytest.mark.usefixtures("utc_local_time")

# the main question is a choice (nothing to grade), its follow-up is typed and graded
DECK = """\
deck: chain
title: A choice, then a typed follow-up
cards:
  - id: pick
    kind: choice
    prompt: Which matrix maps the heads back to d_model?
    choices: [W_O, W_Q]
    correct: a
    answer: W_O.
  - id: why
    kind: follow-up
    parent: pick
    prompt: Why is it needed beyond the shape?
    answer: It mixes the heads.
    points:
      - W_O mixes the heads.
"""


class LoadingGrading:
    """The Grading shape with a model load and grades that wait until the test says."""

    def __init__(self) -> None:
        self.load: Future[Any] = Future()
        self.load_started: float | None = None
        self.warmed = 0
        self.graded: list[Future[Grade]] = []

    def hint(self) -> str | None:
        return None

    def warm(self) -> Future[Any]:
        self.warmed += 1
        if self.load_started is None:
            self.load_started = time.monotonic()
        return self.load

    @property
    def loading(self) -> bool:
        return not self.load.done()

    def grade(self, rubric: Rubric, answer: str) -> Future[Grade]:
        fut: Future[Grade] = Future()
        self.graded.append(fut)
        return fut

    def close(self) -> None:
        for fut in (self.load, *self.graded):
            if not fut.done():
                fut.set_exception(WorkerError("the worker is closed"))


def _collection() -> CachedCollection:
    coll = ParsedDecks()
    info, cards, errors = parse_deck_text(DECK, "chain.yaml", "chain")
    assert not errors
    coll.decks[info.name] = info
    for card in cards:
        coll.add(card)
    return from_parsed(coll)


def _app(store, grading: LoadingGrading):  # noqa: ANN001, ANN202 - a Store; a PrepApp
    from prep.tui.app import PrepApp

    mock = MockInterview(store, _collection(), main_id="pick", seed=0)
    assert [s.card.id for s in mock.steps] == ["pick", "why"]
    return PrepApp(store=store, collection=mock.collection, mock_first=mock, grading=grading)


def _reveal(app) -> str:  # noqa: ANN001 - a PrepApp
    return str(app.screen.query_one("#mock-reveal", Static).render())


async def _answer_the_follow_up(pilot, app) -> None:  # noqa: ANN001 - a Pilot, a PrepApp
    """The choice answered, revealed and graded; the follow-up typed and sent."""
    await pilot.press("a", "enter", "3")
    await wait_until(pilot, lambda: app.screen.mock.index == 1)
    await pilot.press(*"W_O mixes the heads.", "enter")


@async_test
@pytest.mark.parametrize("load", ["loading", "fails"])
async def test_the_load_starts_with_the_mock_and_a_failure_is_said_at_once(fresh_store, load):
    """The load starts at the first question, a choice (before: nothing loaded until the typed
    follow-up showed). One that fails is said at once, and answers are then not sent."""
    grading = LoadingGrading()
    app = _app(fresh_store, grading)
    posted = record_notes(app)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_until(pilot, lambda: grading.warmed == 1)
        assert app.screen.mock.index == 0
        if load == "loading":
            return
        grading.load.set_exception(WorkerError("model.safetensors: no such file"))
        await wait_until(
            pilot,
            lambda: any("did not load: model.safetensors" in n for n in posted),
        )
        await _answer_the_follow_up(pilot, app)
        await wait_until(pilot, lambda: "Not graded: the grader did not load" in _reveal(app))
        assert grading.graded == []  # never a second wait for a model that is not there


@async_test
async def test_the_first_grade_says_it_waits_for_the_load_and_keys_still_grade(fresh_store):
    grading = LoadingGrading()
    app = _app(fresh_store, grading)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("a", "enter", "3")  # the choice, revealed and graded
        await wait_until(pilot, lambda: app.screen.mock.index == 1)
        assert grading.load_started is not None
        grading.load_started -= 12  # the model has been loading for 12 s
        await pilot.press(*"W_O mixes the heads.", "enter")
        await wait_until(pilot, lambda: len(grading.graded) == 1)
        await wait_until(pilot, lambda: "s so far" in _reveal(app))
        said = re.search(
            r"Grading your answer… (\d+) s \(the grader's model is loading, once a "
            r"session: (\d+) s so far",
            _reveal(app),
        )
        assert said is not None, _reveal(app)
        assert int(said[2]) >= 12 and int(said[2]) >= int(said[1])
        grading.load.set_result({"grader": True})
        await wait_until(pilot, lambda: "loading" not in _reveal(app))
        assert "Grading your answer…" in _reveal(app)  # loaded: the grade itself is awaited
        grading.graded[0].set_result(
            Grade([PointVerdict("p1", "W_O mixes the heads.", True, 0.9, "")])
        )
        await wait_until(pilot, lambda: "covers 1 of 1 point" in _reveal(app))
        assert "Grading your answer" not in _reveal(app)


@async_test
async def test_a_grade_by_hand_does_not_wait_for_the_load(fresh_store):
    grading = LoadingGrading()
    app = _app(fresh_store, grading)
    async with app.run_test(size=(100, 40)) as pilot:
        await _answer_the_follow_up(pilot, app)
        await wait_until(pilot, lambda: "Grading your answer" in _reveal(app))
        await pilot.press("2")  # the model still loads: the learner's grade is taken now
        await wait_until(pilot, lambda: app.screen.mock.finished)
        assert app.screen.mock.steps[1].rating == Rating.Hard
