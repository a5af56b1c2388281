"""Mock interview: a main question, then its follow-up chain, each with a visible timer.

Type the answer (or say it aloud) and press Enter to reveal; grade yourself 1-4 (the interval
each grade gives is shown first); every grade is stored through the normal scheduler.

Self-contained: ``MockScreen(collection, store, minutes=10, deck=None, seed=None, clock=...)``,
``MockScreen(mock=MockInterview(...))``, or ``MockScreen()`` inside the prep app, which then
reads the app's collection, store, selected deck, clock and scheduler. ``run_mock(interview)`` runs the screen in a minimal app (`prep mock`).
"""

from __future__ import annotations

from concurrent.futures import Future
from contextlib import suppress
from time import monotonic
from typing import Any

from rich.text import Text
from textual import events, work
from textual._time import get_time  # the clock Key events are stamped with
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Input

from prep.engine.decks.deck import CHOICE_LETTERS, Card
from prep.engine.store import Store, StoreError
from prep.engine.study.collection import Cards
from prep.engine.study.mock import MockError, MockInterview
from prep.engine.study.present import (
    DemoLink,
    answer_sections,
    rating_choices,
    section_parts,
    spoken_interval,
)
from prep.engine.study.scheduler import RATING_NAMES, Rating
from prep.engine.timeutil import Clock, utcnow
from prep.tui.answertext import answer_text
from prep.tui.base import PrepScreen
from prep.tui.mocktext import grades_text, mock_summary_lines, took_text
from prep.tui.widgets.footer import Footer
from prep.tui.widgets.text import Static


class MockScreen(PrepScreen):
    DEFAULT_CSS = """
    MockScreen #mock-top {
        height: 1;
        background: $panel;
        padding: 0 1;
    }
    MockScreen #mock-label {
        width: 1fr;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    MockScreen #mock-timer {
        width: auto;
        padding-left: 2;
        text-style: bold;
    }
    MockScreen #mock-timer.over {
        color: $error;
    }
    MockScreen #mock-body {
        height: 1fr;
        padding: 1 2 0 2;
    }
    MockScreen #mock-prompt {
        text-style: bold;
        margin-bottom: 1;
    }
    MockScreen #mock-answer {
        margin-bottom: 1;
    }
    MockScreen #mock-grades {
        height: auto;
        padding: 0 2;
        background: $panel;
    }
    """

    # the keys that act on the question shown: reveal it, grade it (Enter does either)
    QUESTION_KEYS = frozenset({"enter", "ctrl+r", "1", "2", "3", "4"})

    BINDINGS = [
        Binding("escape", "back", "Back", tooltip="Leave the mock (grades given so far are saved)"),
        Binding("ctrl+r", "reveal", "Reveal", tooltip="Stop the clock and show the answer"),
        Binding("1", "grade(1)", "Again", tooltip="Grade Again (could not answer)"),
        Binding("2", "grade(2)", "Hard", tooltip="Grade Hard"),
        Binding("3", "grade(3)", "Good", tooltip="Grade Good"),
        Binding("4", "grade(4)", "Easy", tooltip="Grade Easy"),
        Binding(
            "r",
            "demo",
            "Run demo",
            tooltip="Run the question's linked demo, once the answer is shown (as on a card)",
        ),
        Binding(
            "enter",
            "suggested",
            "Take suggestion",
            show=False,
            tooltip="Once revealed: take the suggested grade (Good when none is suggested)",
        ),
    ]

    def __init__(
        self,
        collection: Cards | None = None,
        store: Store | None = None,
        *,
        minutes: float = 10.0,
        deck: str | None = None,
        seed: int | None = None,
        clock: Clock | None = None,
        mock: MockInterview | None = None,
    ) -> None:
        super().__init__()
        self._collection = collection
        self._store = store
        self.minutes = minutes
        self.deck = deck
        self.seed = seed
        self._clock = clock
        self.mock: MockInterview | None = mock
        self.error: str | None = None
        self.runs: dict[str, dict] = {}  # demo name -> its latest run, for the answer side
        self._grades: tuple[str, list[str]] = ("", [])  # the grade line's head and options

    # --- building -------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Horizontal(id="mock-top"):
            yield Static(id="mock-label")
            yield Static(id="mock-timer")
        with VerticalScroll(id="mock-body"):
            yield Static(id="mock-prompt")
            yield Input(
                placeholder="Type your answer, or say it aloud; Enter reveals", id="mock-answer"
            )
            yield Static(id="mock-reveal")
        yield Static(id="mock-grades")
        yield Footer()

    def _build(self) -> MockInterview:
        if self._store is not None and self._collection is not None:
            return MockInterview(
                self._store,
                self._collection,
                minutes=self.minutes,
                deck=self.deck,
                seed=self.seed,
                clock=self._clock or utcnow,
            )
        app = self.prep
        if app.store is None:
            raise MockError("no progress database loaded")
        return MockInterview(
            app.store,
            self._collection or app.collection,
            minutes=self.minutes,
            deck=self.deck if self.deck is not None else app.selected_deck,
            seed=self.seed,
            clock=self._clock or app.clock,
            scheduler=app.scheduler,
        )

    def on_mount(self) -> None:
        if self.mock is None:
            try:
                self.mock = self._build()
            except (MockError, StoreError) as exc:
                self.error = str(exc)
        if self.mock is not None:
            try:
                self.runs = self.mock.store.latest_demo_runs()
            except StoreError:
                self.runs = {}
        self.set_interval(0.5, self.tick)
        if self.mock is not None:
            self._load_grader()  # the model loads while the first question is read
        self.show_step()

    # --- showing --------------------------------------------------------------------------

    @property
    def revealed(self) -> bool:
        step = self.mock.step if self.mock else None
        return step is not None and step.revealed

    def show_step(self) -> None:
        label = self.query_one("#mock-label", Static)
        prompt = self.query_one("#mock-prompt", Static)
        answer = self.query_one("#mock-answer", Input)
        reveal = self.query_one("#mock-reveal", Static)
        grades = self.query_one("#mock-grades", Static)
        mock = self.mock
        if mock is None or mock.finished:
            answer.display = False
            grades.display = False
            if mock is None:
                label.update("Mock interview")
                prompt.update(Text(self.error or "No mock interview.", style="bold"))
                reveal.update("Esc goes back.")
            else:
                label.update("Mock interview · done")
                lines = mock_summary_lines(mock)
                prompt.update(Text(lines[0]))  # card text is user data, never markup
                reveal.update(
                    Text("\n".join([*lines[1:], "", "Your grades are saved. Esc goes back."]))
                )
            self.tick()
            self.refresh_bindings()
            return
        step = mock.step
        assert step is not None
        card = step.card
        label.update(f"[{mock.index + 1}/{len(mock.steps)}] {mock.label()}")
        text = Text(card.prompt, style="bold")
        for letter, choice in zip(CHOICE_LETTERS, card.choices, strict=False):
            text.append(f"\n  {letter}) ", style="bold")
            text.append(choice, style="none")
        prompt.update(text)
        hint = (
            f"Pick {CHOICE_LETTERS[0]}-{CHOICE_LETTERS[len(card.choices) - 1]} or type"
            if card.choices
            else "Type"
        )
        answer.placeholder = f"{hint} your answer, or say it aloud; Enter reveals"
        answer.value = ""
        answer.display = True
        answer.disabled = False
        reveal.update("")
        grades.display = False
        mock.start()
        self._grading_since = None  # (a grade still on its way is for the question before)
        answer.focus()
        self._shown_at = get_time()
        self.tick()
        self.refresh_bindings()

    # --- keys read before the question was shown ----------------------------------------------

    _shown_at = float("-inf")  # when the question on screen was shown
    _refused: tuple[str, ...] = ()

    def on_key(self, event: events.Key) -> None:
        """A key that acts on the question, read before this question was shown (while the last
        grade was saving: the commit blocks the app), is refused, never given to a question the
        learner has not seen (as on the review screen, tui/screens/held_keys.py). Textual stamps
        a key when the terminal's bytes are read."""
        if event.time >= self._shown_at or event.key not in self.QUESTION_KEYS:
            return
        event.stop()
        event.prevent_default()
        if not self._refused:
            self.call_later(self._say_refused)
        self._refused = (*self._refused, event.key)

    def _say_refused(self) -> None:
        keys, self._refused = self._refused, ()
        self.notify(
            f"Key{'s' if len(keys) > 1 else ''} {', '.join(keys)} not applied: pressed before "
            "this question was shown.",
            severity="warning",
            timeout=6,
        )

    def tick(self) -> None:
        timer = self.query_one("#mock-timer", Static)
        mock = self.mock
        if mock is None or mock.finished:
            timer.update("")
            return
        step = mock.step
        assert step is not None
        timer.update(mock.timer_text())
        timer.set_class(mock.elapsed() > step.budget_s, "over")
        if self._grading_since is not None and step.revealed:  # the wait, second by second
            self._grade_note = self._waiting_note()
            self.query_one("#mock-reveal", Static).update(self._reveal_text())

    def _show_grades(self) -> None:
        """The grade line in the screen's width (less #mock-grades' padding of 2 a side)."""
        grades = self.query_one("#mock-grades", Static)
        grades.update(grades_text(*self._grades, max(20, self.size.width - 4)))
        grades.display = True

    def on_resize(self) -> None:
        if self.revealed and self._grades[1]:
            self._show_grades()

    def show_reveal(self) -> None:
        mock = self.mock
        assert mock is not None and mock.step is not None
        answer = self.query_one("#mock-answer", Input)
        answer.disabled = True
        answer.display = False
        self.query_one("#mock-reveal", Static).update(self._reveal_text())
        parts = [
            ("» " if suggested else "") + label  # as on the rating bar
            for _rating, label, suggested in rating_choices(mock.preview(), mock.step.suggested)
        ]
        take = mock.step.suggested or Rating.Good
        self._grades = (f"Grade 1-4 (Enter = {RATING_NAMES[take]}):", parts)
        self._show_grades()
        self.query_one("#mock-body").focus()
        self.tick()
        self.refresh_bindings()

    def _reveal_text(self) -> Text:
        """The revealed question: the verdict, the time taken, the typed answer with its grade,
        the answer's sections and the demo line."""
        assert self.mock is not None and self.mock.step is not None
        step = self.mock.step
        text = Text()
        if step.verdict is not None:
            text.append(step.verdict.text + "\n\n", style="bold")
        text.append(took_text(step) + "\n\n", style="bold red" if step.over_budget else "bold")
        lines: list[tuple[str, str]] = []
        if step.answer:
            lines.append(("Your answer: ", step.answer))
        demos: tuple[DemoLink, ...] = ()
        claims = self.prep.demos if self._runs_demos() else None
        for section in answer_sections(step.card, claims, runs=self.runs):
            if section.key == "demos" and self._runs_demos():
                demos = section.demos  # shown last, with the key that runs it (as on a card)
                continue
            lines.extend(section_parts(section))
        for i, (label, rest) in enumerate(lines):
            if i:
                text.append("\n")
            text.append(label, style="bold")
            text.append(rest)
            if i == 0 and step.answer and self._grade_note is not None:
                text.append("\n")
                text.append_text(self._grade_note)
        if demos:
            from prep.tui.screens.review_text import demo_line

            text.append("\n\n")
            text.append_text(demo_line(demos))
        return text

    # --- actions --------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        active = self.mock is not None and not self.mock.finished
        if action == "reveal":
            return active and not self.revealed
        if action == "grade":
            return active and self.revealed
        if action == "suggested":
            return active and self.revealed
        if action == "demo":
            step = self.mock.step if active and self.mock else None
            return (
                step is not None and self.revealed and bool(step.card.demos) and self._runs_demos()
            )
        return True

    def _runs_demos(self) -> bool:
        """Inside the prep app (its demo worker and demo list): `r` runs a demo from here."""
        return getattr(self.app, "demos", None) is not None and hasattr(self.app, "demo_worker")

    def action_demo(self) -> None:
        """r, once the answer is shown: the question's demo on the demo screen (Esc comes back
        here, the clock still stopped); with several demos, pick one first."""
        step = self.mock.step if self.mock and not self.mock.finished else None
        if step is None or not self.revealed or not step.card.demos or not self._runs_demos():
            return
        from prep.tui.screens.demo_pick import run_card_demo

        run_card_demo(self.prep, step.card)

    def on_screen_suspend(self) -> None:
        """Help, a yes/no box, the palette or a demo over the question: its clock holds (as
        Anki's answer timer while a dialog is open); it runs on when this screen is back."""
        if self.mock is not None:
            self.mock.pause()

    def on_screen_resume(self) -> None:
        """Back from help or a box: the clock runs on. Back from a demo: its run is the latest,
        shown beside its name."""
        if self.mock is not None:
            self.mock.resume()
            self.tick()
        if self.mock is not None and not self.mock.finished and self.revealed:
            with suppress(StoreError):  # (unreadable: the runs shown before stay)
                self.runs = self.mock.store.latest_demo_runs()
            self.show_reveal()

    def unsaved_typing(self) -> bool:
        """An answer typed to the question on screen, before its reveal (not saved)."""
        if self.revealed or self.mock is None or self.mock.finished:
            return False
        return bool(answer_text(self.query_one("#mock-answer", Input).value))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_reveal()

    def action_reveal(self) -> None:
        mock = self.mock
        if mock is None or mock.finished or self.revealed:
            return
        step = mock.step
        assert step is not None
        typed = answer_text(self.query_one("#mock-answer", Input).value)
        letters = CHOICE_LETTERS[: len(step.card.choices)]
        picked = bool(letters) and len(typed) == 1 and typed.lower() in letters
        if picked:
            mock.pick(letters.index(typed.lower()))
        mock.reveal(typed)
        self._grade_note = None
        if typed and not picked:
            self._start_grade(mock.index, step.card, typed)
        self.show_reveal()

    # --- grading a typed answer (the model worker, waited on in a thread) ---------------------

    _grade_note: Text | None = None
    _grading_since: float | None = None  # when the answer went to the grader (monotonic)
    _grader_failed: str | None = None  # why the grader's model did not load

    @work(thread=True, exclusive=True, group="mock-grader", exit_on_error=False)
    def _load_grader(self) -> None:
        """Load the grader's model in the worker when the mock starts, off the UI thread
        (asking whether it can run here and starting the worker take ~0.1 CPU-s), and say so
        at once when the load fails."""
        from prep.tui.grading import rubric_for

        mock, grading = self.mock, getattr(self.app, "grading", None)
        if mock is None or grading is None:
            return
        if not any(not s.card.choices and rubric_for(s.card) is not None for s in mock.steps):
            return  # nothing in this mock to grade
        loading = grading.warm()
        if not isinstance(loading, Future):
            return  # not here (the answer says why), or a grader that needs no load
        try:
            loading.result()
        except Exception as exc:  # the worker's one line (a missing model, a crash)
            with suppress(RuntimeError):  # (the app closed meanwhile)
                self.app.call_from_thread(self._grader_load_failed, str(exc) or type(exc).__name__)

    def _grader_load_failed(self, why: str) -> None:
        self._grader_failed = why
        self.notify(
            f"The grader did not load: {why}. Typed answers are not graded; grade them 1-4.",
            severity="warning",
            timeout=10,
        )

    def _waiting_note(self) -> Text:
        """``Grading your answer… 3 s``, and while the model still loads, since when."""
        now = monotonic()
        grading = getattr(self.app, "grading", None)
        started = getattr(grading, "load_started", None)
        waited = f"{now - (self._grading_since or now):.0f} s"
        if getattr(grading, "loading", False) and started is not None:
            return Text(
                f"Grading your answer… {waited} (the grader's model is loading, once a "
                f"session: {now - started:.0f} s so far; 1-4 grades without waiting)",
                style="italic dim",
            )
        return Text(f"Grading your answer… {waited}", style="italic dim")

    def _start_grade(self, index: int, card: Card, answer: str) -> None:
        from prep.tui.grading import rubric_for

        grading = getattr(self.app, "grading", None)
        if grading is None or rubric_for(card) is None:
            return
        hint = grading.hint()
        if hint is not None:
            self._grade_note = Text(f"Not graded here: {hint}", style="dim")
            return
        if self._grader_failed is not None:
            self._grade_note = Text(
                f"Not graded: the grader did not load ({self._grader_failed}).", style="dim"
            )
            return
        self._grading_since = monotonic()
        self._grade_note = self._waiting_note()
        self._wait_grade(grading, index, card, answer)

    @work(thread=True, exclusive=True, group="mock-grade", exit_on_error=False)
    def _wait_grade(self, grading: Any, index: int, card: Card, answer: str) -> None:
        from prep.tui.grading import grade_now

        grade, why = grade_now(grading, card, answer)
        self.app.call_from_thread(self._grade_arrived, index, grade, why)

    def _grade_arrived(self, index: int, grade: Any, why: str) -> None:
        from prep.tui.grading import suggestion, verdict_text

        mock = self.mock
        if mock is None or mock.finished or mock.index != index or mock.step is None:
            return  # graded by hand meanwhile: the learner's rating stands
        self._grading_since = None
        step = mock.step
        if grade is None:
            self._grade_note = Text(why, style="dim")
        else:
            self._grade_note = verdict_text(grade)
            step.missed = tuple(p.text for p in grade.missed)
            if step.verdict is None:
                step.suggested = Rating(suggestion(grade))
        self.show_reveal()

    def action_grade(self, rating: int) -> None:
        mock = self.mock
        if mock is None or mock.finished or not self.revealed:
            return
        try:
            outcome = mock.grade(Rating(rating))
        except (StoreError, MockError) as exc:  # a locked database: say so, nothing advances
            self.notify(f"Could not save the grade: {exc}", severity="error")
            return
        self.show_step()
        # said where the answer will appear, not in a toast (which covered the grade line)
        saved = Text.assemble(
            ("Saved: ", "dim"),
            (RATING_NAMES[outcome.rating], "bold"),
            (f", next review in {spoken_interval(outcome.interval)}.", "dim"),
        )
        if self.mock is not None and not self.mock.finished:
            self.query_one("#mock-reveal", Static).update(saved)

    def action_suggested(self) -> None:
        """Enter after the reveal: the suggested grade, else Good (as on the review screen)."""
        step = self.mock.step if self.mock else None
        if step is not None and step.revealed:
            self.action_grade(int(step.suggested or Rating.Good))

    def action_back(self) -> None:
        """Esc: in the answer box with an answer typed, leave the box (the answer stays; then
        q quits and Esc leaves the mock); otherwise leave the mock, asking first when a typed
        answer would be thrown away."""
        box = self.query_one("#mock-answer", Input)
        if box.has_focus and answer_text(box.value):
            self.set_focus(None)  # what was typed stays (the footer says: Esc Back, q Quit)
            return
        if self.unsaved_typing():
            from prep.tui.screens.confirm import Confirm

            question = "Leave the mock interview? Your typed answer is not saved."
            self.app.push_screen(Confirm(question), self._leave_if)
            return
        self.dismiss(self.mock.summary() if self.mock else None)

    def _leave_if(self, leave: bool | None) -> None:
        if leave:
            self.dismiss(self.mock.summary() if self.mock else None)
        else:
            self.query_one("#mock-answer", Input).focus()


def run_mock(mock: MockInterview) -> int:
    """Run `prep mock` in the terminal: the app opened on the mock, over home (Esc goes
    home, q quits, as when `m` opens it); returns the exit code."""
    from prep.tui.app import PrepApp

    app = PrepApp(store=mock.store, collection=mock.collection, mock_first=mock)
    result = app.run()
    return app.return_code or int(result or 0)
