"""Typing an answer on the review screen (`t`): the answer box, then the grade on the answer side.

`t` (before the reveal) opens the box; Enter hands the answer in, which reveals the card and
grades the answer in the model worker (a thread waits for it: the UI never blocks). The grade
marks each point ✓/✗ with the sentence that covers it and suggests a rating (every point:
Good; at least half: Hard; fewer: Again) that Enter or space takes and 1-4 override. Without
a rubric, or without the `real` extra, the typed answer is shown beside the points (or the
answer) for a self-check, with one line on why there is no grade. Esc leaves the box, asking
first when something was typed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import work

from prep.tui.answertext import answer_text
from prep.tui.widgets.text import Static

if TYPE_CHECKING:
    from prep.demos.pretrained.grader.rubric import Grade
    from prep.tui.widgets.answer_box import AnswerBox


class TypedAnswer:
    """Mixed into ReviewScreen (which provides card, revealed, suggested, preview, ratings,
    reveal(), set_hint(), refresh_bindings() and prep)."""

    typed: str | None = None
    grade: Grade | None = None
    _box: AnswerBox | None = None
    _typed_view: Static | None = None
    _grade_token = 0

    # --- state per card ---------------------------------------------------------------------

    def reset_typed(self) -> None:
        self.typed = None
        self.grade = None
        self._grade_token += 1
        if self._box is not None:
            self._box.remove()
            self._box = None
        if self._typed_view is not None:
            self._typed_view.display = False

    @property
    def box_open(self) -> bool:
        return self._box is not None

    def unsaved_typing(self) -> bool:
        """An answer typed in the box, not yet handed in (leaving the card would lose it)."""
        return self._box is not None and bool(answer_text(self._box.text))

    # --- the box ------------------------------------------------------------------------------

    def action_type_answer(self) -> None:
        screen: Any = self
        if screen.card is None or screen.revealed:
            return
        if self._box is None:
            # (TextArea's import is not on the way to the first card: warm_up imports it)
            from prep.tui.widgets.answer_box import AnswerBox

            self._box = AnswerBox(id="answer-box")
            screen.query_one("#card").mount(self._box, after=screen.query_one("#choices"))
            grading = screen.prep.grading
            grading.warm()  # the model loads while the learner types
        self._box.focus()
        screen.set_hint(
            Text.assemble(
                "Type your answer; ",
                ("Enter", "bold"),
                " grades it and shows the card's answer, ",
                ("Esc", "bold"),
                " leaves the box.",
            )
        )
        screen.refresh_bindings()

    def on_answer_box_left(self, event: AnswerBox.Left) -> None:
        event.stop()
        screen: Any = self
        if not answer_text(event.answer):
            self._close_box()
            return
        from prep.tui.screens.confirm import Confirm

        def answered(discard: bool | None) -> None:
            if discard:
                self._close_box()
            elif self._box is not None:
                self._box.focus()

        screen.prep.push_screen(Confirm("Discard the answer you typed?"), answered)

    def _close_box(self) -> None:
        screen: Any = self
        if self._box is not None:
            self._box.remove()
            self._box = None
        screen.set_hint(screen.front_hint())
        screen.refresh_bindings()

    def submit_box(self) -> bool:
        """The reveal button clicked while the box is open: hand in what was typed (nothing
        typed: close the box). True when the box was open."""
        if self._box is None:
            return False
        text = answer_text(self._box.text)
        if text:
            from prep.tui.widgets.answer_box import AnswerBox

            self.on_answer_box_submitted(AnswerBox.Submitted(self._box, text))
        else:
            self._close_box()
        return True

    def on_answer_box_submitted(self, event: AnswerBox.Submitted) -> None:
        event.stop()
        screen: Any = self
        if screen.card is None or screen.revealed:
            return
        self.typed = event.answer
        if self._box is not None:
            self._box.remove()
            self._box = None
        screen.reveal()
        self._show_typed()

    # --- the grade ----------------------------------------------------------------------------

    def _typed_widget(self) -> Static:
        screen: Any = self
        if self._typed_view is None:
            self._typed_view = Static(id="typed")
            screen.query_one("#card").mount(self._typed_view, after=screen.query_one("#choices"))
        self._typed_view.display = True
        return self._typed_view

    def _show_typed(self) -> None:
        from prep.tui.grading import rubric_for, self_check_text

        screen: Any = self
        card, answer = screen.card, self.typed
        assert card is not None and answer is not None
        view = self._typed_widget()
        rubric = rubric_for(card)
        hint = screen.prep.grading.hint()
        if rubric is None:
            why = "This card has no rubric (points:), so it is not graded: compare with the answer."
            view.update(self_check_text(answer, None, why))
            return
        if hint is not None:
            view.update(self_check_text(answer, rubric, f"Not graded here: {hint}"))
            return
        view.update(Text.assemble(("Grading your answer…", "italic dim")))
        self._grade_token += 1
        self.wait_for_grade(self._grade_token, card.id, rubric, answer)

    @work(thread=True, exclusive=True, group="grade", exit_on_error=False)
    def wait_for_grade(self, token: int, card_id: str, rubric: Any, answer: str) -> None:
        screen: Any = self
        try:
            grade = screen.prep.grading.grade(rubric, answer).result(timeout=120)
        except Exception as exc:  # the worker's one line, or a timeout
            why = str(exc) or type(exc).__name__
            screen.app.call_from_thread(self._grade_failed, token, why)
            return
        screen.app.call_from_thread(self._grade_arrived, token, card_id, grade)

    def _current(self, token: int) -> bool:
        screen: Any = self
        return token == self._grade_token and screen.card is not None and self.typed is not None

    def _grade_failed(self, token: int, why: str) -> None:
        from prep.tui.grading import rubric_for, self_check_text

        screen: Any = self
        if not self._current(token):
            return
        view = self._typed_widget()
        view.update(
            self_check_text(self.typed or "", rubric_for(screen.card), f"Not graded: {why}")
        )

    def _grade_arrived(self, token: int, card_id: str, grade: Grade) -> None:
        from prep.engine.study.present import rating_name
        from prep.engine.study.scheduler import Rating
        from prep.tui.grading import suggestion, verdict_text

        screen: Any = self
        if not self._current(token) or screen.card.id != card_id:
            return
        self.grade = grade
        self._typed_widget().update(verdict_text(grade))
        if screen.picked is None:  # a pick's own suggestion stands on a choice card
            screen.suggested = Rating(suggestion(grade))
            if screen.ratings is not None:
                screen.ratings.show_preview(screen.preview, screen.suggested)
            missed = len(grade.missed)
            hint = Text.assemble(
                "Suggested: ",
                (rating_name(screen.suggested), "bold"),
                f" ({missed} point{'s' if missed != 1 else ''} missed). " if missed else ". ",
                ("Enter", "bold"),
                " takes it; ",
                ("1-4", "bold"),
                " rate as you judge.",
            )
            screen.set_hint(hint)
        screen.refresh_bindings()
