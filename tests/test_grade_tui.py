"""Typed answers in the app (Pilot): `t` opens the answer box before the reveal, keys type
text while it has focus, Enter grades and reveals, the grade marks each point and suggests a
rating that Enter takes and 1-4 override; Esc asks before discarding typed text; without the
grader (or a rubric) the typed answer is shown for a self-check. The worker is faked here
(tests/test_grader.py grades for real)."""

from __future__ import annotations

from concurrent.futures import Future

import pytest
from textual.widgets import Static

from prep.demos.pretrained.grader.rubric import Grade, PointVerdict, Rubric
from prep.engine.decks.collection import CachedCollection
from prep.engine.decks.deck import ParsedDecks, parse_deck_text
from prep.engine.decks.deckcache import from_parsed
from prep.engine.study.scheduler import Rating
from prep.tui.screens.review import ReviewScreen
from prep.tui.testing import make_app
from prep.tui.widgets.answer_box import AnswerBox
from tests.test_tui import async_test

pytestmark = pytest.mark.usefixtures("utc_local_time")

DECK = """\
deck: typed
title: Typed answers
cards:
  - id: roles
    kind: recall
    prompt: What does W_O do beyond shape preservation?
    answer: It mixes heads and weights them; without it heads keep fixed slices.
    points:
      - W_O mixes heads along shared directions.
      - W_O weights each head.
      - "Without W_O each head keeps a fixed [slice] of the residual."
  - id: bare
    kind: recall
    prompt: Say anything.
    answer: Anything goes.
"""


class FakeGrading:
    """A point is covered when the answer holds its key word (KEYS): enough to drive the
    screen, never a claim about grading."""

    KEYS = {"p1": "mixes", "p2": "weights", "p3": "slice"}

    def __init__(self, hint: str | None = None) -> None:
        self._hint = hint
        self.warmed = 0
        self.asked: list[tuple[Rubric, str]] = []

    def hint(self) -> str | None:
        return self._hint

    def warm(self) -> None:
        self.warmed += 1

    def grade(self, rubric: Rubric, answer: str) -> Future[Grade]:
        self.asked.append((rubric, answer))
        points = []
        for p in rubric.points:
            hit = self.KEYS[p.id] in answer.lower()
            points.append(
                PointVerdict(p.id, p.text, hit, 0.9 if hit else 0.1, answer if hit else "")
            )
        fut: Future[Grade] = Future()
        fut.set_result(Grade(points))
        return fut

    def close(self) -> None:
        pass


def collection() -> CachedCollection:
    coll = ParsedDecks()
    info, cards, errors = parse_deck_text(DECK, "typed.yaml", "typed")
    assert info is not None and not errors, errors
    coll.decks[info.name] = info
    for card in cards:
        coll.add(card)
    return from_parsed(coll)


async def _open_review(app, pilot) -> ReviewScreen:
    await pilot.press("enter")  # home: study the highlighted deck
    await pilot.pause()
    assert isinstance(app.screen, ReviewScreen)
    return app.screen


def _typed_text(screen: ReviewScreen) -> str:
    return str(screen.query_one("#typed", Static).render())


@async_test
async def test_t_types_an_answer_that_is_graded_and_suggests_a_rating() -> None:
    grading = FakeGrading()
    app = make_app(collection=collection(), grading=grading)
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await _open_review(app, pilot)
        assert screen.card.id == "roles"
        await pilot.press("t")
        box = screen.query_one(AnswerBox)
        assert box.has_focus and grading.warmed == 1
        # while the box has focus, q, space, 1 and a type text (nothing quits or rates)
        await pilot.press(*"q 1a ", "backspace", "backspace", "backspace", "backspace", "backspace")
        assert app.is_running and not screen.revealed
        assert box.text == ""
        await pilot.press(*"It mixes heads. It weights heads too.")
        await pilot.press("enter")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.revealed and not screen.box_open
        assert grading.asked[0][1] == "It mixes heads. It weights heads too."
        shown = _typed_text(screen)
        assert "2 of 3 points" in shown and "✗ Without W_O" in shown
        assert "[slice]" in shown  # card text is user data, never markup
        assert screen.suggested == Rating.Hard
        await pilot.press("enter")  # takes the suggestion
        await pilot.pause()
        await app.workers.wait_for_complete()
        reviews = app.store.db.execute("SELECT card_id, rating FROM reviews").fetchall()
        assert [tuple(r) for r in reviews] == [("roles", int(Rating.Hard))]


@async_test
async def test_the_learner_overrides_the_suggestion() -> None:
    app = make_app(collection=collection(), grading=FakeGrading())
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await _open_review(app, pilot)
        await pilot.press("t", *"nothing relevant", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.suggested == Rating.Again
        await pilot.press("3")
        await pilot.pause()
        await app.workers.wait_for_complete()
        reviews = app.store.db.execute("SELECT rating FROM reviews").fetchall()
        assert [r[0] for r in reviews] == [int(Rating.Good)]


@async_test
async def test_escape_asks_before_discarding_typed_text() -> None:
    from prep.tui.screens.confirm import Confirm

    app = make_app(collection=collection(), grading=FakeGrading())
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await _open_review(app, pilot)
        await pilot.press("t", *"half an answer", "escape")
        await pilot.pause()
        assert isinstance(app.screen, Confirm)
        await pilot.press("n")  # keep it
        await pilot.pause()
        assert app.screen is screen and screen.query_one(AnswerBox).text == "half an answer"
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("y")  # discard
        await pilot.pause()
        assert app.screen is screen and not screen.box_open and not screen.revealed
        # an empty box leaves without asking; Esc again goes home as always
        await pilot.press("t", "escape")
        await pilot.pause()
        assert app.screen is screen and not screen.box_open
        await pilot.press("space")  # the card's keys work again
        assert screen.revealed


@async_test
async def test_without_the_grader_the_answer_is_shown_beside_the_points() -> None:
    hint = "grading typed answers needs the optional `real` extra: pip install 'prep[real]'"
    grading = FakeGrading(hint=hint)
    app = make_app(collection=collection(), grading=grading)
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await _open_review(app, pilot)
        await pilot.press("t", *"my answer", "enter")
        await pilot.pause()
        shown = _typed_text(screen)
        assert "my answer" in shown and "W_O weights each head." in shown
        assert "pip install 'prep[real]'" in shown
        assert grading.asked == [] and screen.suggested is None


@async_test
async def test_a_card_without_a_rubric_shows_the_typed_answer_for_self_check() -> None:
    grading = FakeGrading()
    app = make_app(collection=collection(), grading=grading)
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await _open_review(app, pilot)
        await pilot.press("space", "3")  # rate the first card
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.card.id == "bare"
        await pilot.press("t", *"whatever", "enter")
        await pilot.pause()
        assert "no rubric" in _typed_text(screen) and grading.asked == []


# --- the line mode ---------------------------------------------------------------------------


def _session(store, coll):
    from datetime import UTC, datetime

    from prep.engine.study.scheduler import Scheduler
    from prep.engine.study.session import ReviewSession

    now = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    return ReviewSession(
        store,
        coll,
        scheduler=Scheduler(store.settings(), enable_fuzzing=False),
        clock=lambda: now,
        requeue=False,
    )


def test_line_mode_t_grades_a_typed_answer_and_enter_takes_the_suggestion(fresh_store):
    import io

    from prep.tui.plain import run_plain

    grading = FakeGrading()
    out = io.StringIO()
    stdin = io.StringIO("t\nIt mixes heads. It weights them.\n\nq\n")
    assert run_plain(_session(fresh_store, collection()), stdin, out, grading) == 0
    text = out.getvalue()
    assert "t types an answer" in text
    assert "2 of 3 points covered" in text
    assert "✗ Without W_O each head keeps a fixed [slice] of the residual." in text
    assert "covered by: It mixes heads. It weights them." in text
    assert "suggested rating: Hard" in text
    assert "Saved: Hard" in text
    rows = fresh_store.db.execute("SELECT card_id, rating FROM reviews").fetchall()
    assert [tuple(r) for r in rows] == [("roles", int(Rating.Hard))]


def test_line_mode_without_the_grader_shows_the_points_to_check(fresh_store):
    import io

    from prep.tui.plain import run_plain

    grading = FakeGrading(hint="needs the `real` extra: pip install 'prep[real]'")
    out = io.StringIO()
    run_plain(
        _session(fresh_store, collection()), io.StringIO("t\nmy answer\n3\nq\n"), out, grading
    )
    text = out.getvalue()
    assert "Not graded here (needs the `real` extra" in text
    assert "Check it against: W_O mixes heads along shared directions.;" in text
    assert grading.asked == [] and "Saved: Good" in text


def test_mock_line_mode_grades_typed_answers_and_the_summary_lists_missed_points(fresh_store):
    import io

    from prep.engine.study.mock import MockInterview
    from prep.tui.plain import run_mock_plain

    mock = MockInterview(fresh_store, collection(), main_id="roles", seed=0)
    out = io.StringIO()
    grading = FakeGrading()
    run_mock_plain(mock, io.StringIO("W_O mixes heads.\n\nq\n"), out, grading)
    text = out.getvalue()
    assert "1 of 3 points covered" in text
    summary = text[text.index("Mock over") :]
    assert "missed: W_O weights each head." in summary
    assert "missed: Without W_O each head keeps a fixed [slice] of the residual." in summary
    assert mock.steps[0].rating == Rating.Again  # Enter took the suggestion: 1 of 3 -> Again


@async_test
async def test_mock_screen_grades_the_typed_answer_and_its_summary_lists_missed_points(
    fresh_store,
):
    from prep.engine.study.mock import MockInterview
    from prep.tui.app import PrepApp

    mock = MockInterview(fresh_store, collection(), main_id="roles", seed=0)
    app = PrepApp(
        store=fresh_store, collection=mock.collection, mock_first=mock, grading=FakeGrading()
    )
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        await pilot.press(*"It mixes heads and weights them.", "enter")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        reveal = str(app.screen.query_one("#mock-reveal", Static).render())
        assert "2 of 3 points" in reveal and "✗ Without W_O" in reveal
        assert mock.steps[0].suggested == Rating.Hard
        await pilot.press("enter")  # takes the suggestion; the mock is over
        await pilot.pause()
        assert mock.steps[0].rating == Rating.Hard
        summary = str(app.screen.query_one("#mock-reveal", Static).render())
        assert "missed: Without W_O each head keeps a fixed [slice] of the residual." in summary
