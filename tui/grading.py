"""Typed answers in the front ends: the card's rubric, the worker that grades, and the verdict.

`Grading` is the app's handle on grading through the one worker (prep.tui.worker, shared
with the demos when the app passes its client): it says whether
grading can run here (`hint()`: one line on what to install, or None), warms the worker up in
the background and grades through it. Tests replace it with a fake of the same shape.
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from typing import Any

from rich.text import Text

from prep.demos.pretrained.grader.rubric import Grade, Rubric
from prep.engine.decks.deck import Card, one_line_safe, text_safe
from prep.engine.decks.rubric import card_rubric, suggest_rating
from prep.engine.textsafe import count
from prep.tui.worker import WorkerClient

SYMBOL = {True: "✓", False: "✗"}
RATING_NAMES = {1: "Again", 2: "Hard", 3: "Good", 4: "Easy"}


def rubric_for(card: Card) -> Rubric | None:
    found = card_rubric(card)
    return None if found.problem else Rubric.from_texts(card.prompt, found.points)


class Grading:
    def __init__(self, client: WorkerClient | None = None) -> None:
        self._client = client
        self._hint: str | None | bool = False  # False: not asked yet
        self._loading: Future[Any] | None = None  # the model's load in the worker
        self.load_started: float | None = None  # when it was asked for (time.monotonic)

    def hint(self) -> str | None:
        """One line on how to install grading, or None when it can run here (asked once)."""
        if self._hint is False:
            from prep.demos.pretrained.grader.batch import missing

            self._hint = missing()
        return self._hint  # type: ignore[return-value]

    @property
    def client(self) -> WorkerClient:
        if self._client is None:
            self._client = WorkerClient()
        return self._client

    def warm(self) -> Future[Any] | None:
        """Start the worker and let it load the model while the learner types (once; again
        after a load that failed). Returns the load's Future (it raises WorkerError when the
        load failed), or None where grading cannot run here (`hint()`). Call it off the UI
        thread where it may be the first: asking `hint()` and starting the worker take ~0.1
        CPU-s."""
        if self.hint() is not None:
            return None
        loading = self._loading
        if loading is None or (loading.done() and loading.exception() is not None):
            self.load_started = time.monotonic()
            self._loading = loading = self.client.request("ping", warm="grader")
        return loading

    @property
    def loading(self) -> bool:
        """Whether the model is still loading (asked for and not yet answered)."""
        return self._loading is not None and not self._loading.done()

    def grade(self, rubric: Rubric, answer: str) -> Future[Grade]:
        """A Future of the Grade (raises prep.tui.worker.WorkerError on failure)."""
        inner = self.client.request("grade", rubric=rubric.to_dict(), answer=answer)
        out: Future[Grade] = Future()

        def done(f: Future[Any]) -> None:
            exc = f.exception()
            if exc is not None:
                out.set_exception(exc)
            else:
                out.set_result(Grade.from_dict(f.result()))

        inner.add_done_callback(done)
        return out

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def suggestion(grade: Grade) -> int:
    return suggest_rating(len(grade.points), len(grade.points) - len(grade.missed))


def verdict_text(grade: Grade) -> Text:
    """✓/✗ per point with the sentence that covers it; card and answer text stay plain text."""
    covered = len(grade.points) - len(grade.missed)
    text = Text.assemble(
        (f"Your answer covers {covered} of {count(len(grade.points), 'point')}", "bold")
    )
    for p in grade.points:
        text.append("\n")
        text.append("✓ " if p.covered else "✗ ", style="bold green" if p.covered else "bold red")
        text.append(text_safe(p.text))
        text.append(f"  {p.score:.2f}", style="dim")
        if p.covered and p.sentence:
            text.append("\n    “", style="dim")
            text.append(text_safe(p.sentence), style="italic dim")
            text.append("”", style="dim")
    if grade.note:
        text.append("\n")
        text.append(one_line_safe(grade.note), style="dim")
    return text


def self_check_text(answer: str, rubric: Rubric | None, why: str) -> Text:
    """Without a grade: the typed answer beside the points to check it against, and why."""
    text = Text.assemble(("Your answer:", "bold"), "\n")
    text.append(text_safe(answer))
    if rubric is not None:
        text.append("\nCheck it against these points:", style="bold")
        for p in rubric.points:
            text.append("\n• ")
            text.append(text_safe(p.text))
    text.append("\n")
    text.append(why, style="dim")
    return text


def verdict_lines(result, rating: int) -> list[str]:  # noqa: ANN001 - a Grade
    """The point-by-point verdict as plain lines (the CLI and the line mode print these); the
    answer's sentences and a rubric file's points are shown, never obeyed by the terminal."""
    covered = len(result.points) - len(result.missed)
    lines = [f"{covered} of {count(len(result.points), 'point')} covered"]
    for p in result.points:
        lines.append(f"  {SYMBOL[p.covered]} {one_line_safe(p.text)}  ({p.score:.2f})")
        if p.covered and p.sentence:
            lines.append(f"      covered by: {one_line_safe(p.sentence)}")
    lines.append(f"suggested rating: {RATING_NAMES[rating]} (you rate; the grade only suggests)")
    if result.note:
        lines.append(one_line_safe(result.note))
    return lines


def grade_now(
    grading: Grading, card: Card, answer: str, timeout: float = 120.0
) -> tuple[Grade | None, str]:
    """For the line modes (which may block): (grade, "") or (None, why it is not graded)."""
    rubric = rubric_for(card)
    if rubric is None:
        return None, "This card has no rubric (points:), so it is not graded."
    hint = grading.hint()
    if hint is not None:
        points = "; ".join(p.text for p in rubric.points)
        return None, f"Not graded here ({hint}). Check it against: {points}"
    try:
        return grading.grade(rubric, answer).result(timeout=timeout), ""
    except Exception as exc:  # the worker's one line, or a timeout
        return None, f"Not graded: {exc or type(exc).__name__}"
