"""The line mode: `prep quiz --plain` and `prep mock --plain` on stdin/stdout.

For screen readers, pipes and dumb terminals, and the thing end-to-end tests drive.
Quiz: Enter reveals; on a choice or red-flag card a-d picks first (a red-flag card first asks
you to say what the quoted answer gets wrong; Enter then shows the choices); t types an answer
(graded point by point where the card has a rubric and the `real` extra is installed; the grade
only suggests a rating); 1-4 rates (Enter takes the suggested rating after a pick or a grade);
u undoes the last rating; q (or end of input) quits.
Mock: type an answer (or say it aloud), Enter reveals, 1-4 grades, q quits; a typed answer is
graded the same way and the summary lists the points it missed.
Every rating is committed to the database before the next card is printed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from prep.engine.decks.deck import CHOICE_LETTERS, Card
from prep.engine.store import StoreError
from prep.engine.study.mock import MockError, MockInterview
from prep.engine.study.present import (
    answer_sections,
    choice_verdict,
    clock_text,
    coming_text,
    count,
    counts_text,
    duration_text,
    early_text,
    next_text,
    percent,
    rating_choices,
    rating_name,
    section_lines,
    spoken_interval,
)
from prep.engine.study.scheduler import RATING_NAMES, Outcome, Rating
from prep.engine.study.session import NotCurrentCard, ReviewSession
from prep.engine.study.takein import held_due
from prep.engine.timeutil import study_day_start
from prep.tui.mocktext import mock_summary_lines, took_text

if TYPE_CHECKING:
    from datetime import datetime

    from prep.demos.pretrained.grader.rubric import Grade
    from prep.engine.store import Store
    from prep.engine.study.collection import Cards
    from prep.tui.grading import Grading


class Quit(Exception):
    """The user typed q (or input ended)."""


class LineIO:
    """Line-oriented terminal I/O shared by the plain quiz and the plain mock interview."""

    MAX_LINE = 100_000  # characters: a typed answer is at most 20,000 (grader/batch.py)

    def __init__(self, stdin: TextIO, stdout: TextIO) -> None:
        self.stdin, self.stdout = stdin, stdout
        self.refused = False  # a line too long was refused: the session ends, exit code 2

    def say(self, text: str = "") -> None:
        self.stdout.write(text + "\n")
        self.stdout.flush()

    def ask(self, prompt: str) -> str:
        """The stripped line typed at ``prompt``; raises Quit on q, quit, exit, ctrl+c or end
        of input (every rating is already saved, so ctrl+c quits like q, with the summary)."""
        self.stdout.write(prompt)
        self.stdout.flush()
        try:
            line = self.stdin.readline(self.MAX_LINE + 1)  # never a whole endless line
        except KeyboardInterrupt:
            self.stdout.write("\n")
            raise Quit from None
        if line == "":  # end of input
            raise Quit
        if len(line) > self.MAX_LINE:  # (`< /dev/zero`, a binary file): said, then ended
            self.refused = True
            self.stdout.write("\n")
            print(
                f"prep: standard input: a line longer than {self.MAX_LINE:,} characters; "
                "stopped there (every rating before it is saved)",
                file=sys.stderr,
            )
            raise Quit
        text = line.strip()
        if text.lower() in ("q", "quit", "exit"):
            raise Quit
        return text


def rating_line(preview: dict[Rating, Outcome], suggested: Rating | None = None) -> str:
    """``1 Again 1m  2 Hard 6m  3 Good 10m*  4 Easy 4d`` (* marks the suggested rating)."""
    return "  ".join(
        label + ("*" if mark else "") for _r, label, mark in rating_choices(preview, suggested)
    )


def _reveal_lines(card: Card, runs: dict[str, dict]) -> list[str]:
    return section_lines(answer_sections(card, runs=runs))


# --- prep quiz --plain ----------------------------------------------------------------------


class PlainQuiz:
    def __init__(
        self,
        session: ReviewSession,
        io: LineIO,
        grading: Grading | None = None,
        today: Sequence[str] = (),
        today_at: Callable[[datetime], Sequence[str]] | None = None,
    ) -> None:
        self.session = session
        self.io = io
        self.today = today  # the plan and the daily limits, as home says them
        self.today_at = today_at  # ... for a later study day (the session open across 4 am)
        self.runs = session.store.latest_demo_runs()
        self._grading = grading

    @property
    def grading(self) -> Grading:
        if self._grading is None:
            from prep.tui.grading import Grading

            self._grading = Grading()
        return self._grading

    def typed_answer(self, card: Card) -> Rating | None:
        """`t`: read one line of answer, grade it, print the verdict; the suggested rating."""
        answer = self.io.ask("Your answer (one line): ")
        return grade_typed(self.io, self.grading, card, answer)[0]

    def ask(self, prompt: str) -> str:
        return self.io.ask(prompt).lower()

    def run(self) -> int:
        session, say = self.session, self.io.say
        if session.finished:
            for notice in session.take_notices():
                say(notice)
            for line in self.today:
                say(line)
            say("Nothing due right now. Come back later, or study new cards with --new N.")
            return 0
        say(
            f"{count(session.total, 'card')} in this session. "
            "Enter reveals, t types an answer, 1-4 rate, u undoes, q quits."
        )
        for line in self.today:
            say(line)
        day_end = study_day_start(session.clock(), 1)
        try:
            while not session.finished:
                card = session.current
                for notice in session.take_notices():
                    say(notice)
                assert card is not None
                now = session.clock()
                if now >= day_end:  # (the rating waited at its prompt across 4 am: it landed)
                    day_end = study_day_start(now, 1)
                    self.new_day(now)
                self.show_card(card)
        except Quit:
            pass
        finally:
            if self._grading is not None:
                self._grading.close()
        for notice in session.take_notices():
            say(notice)
        s = session.summary()
        say("")
        say(
            f"Session over: {s['reviewed']} reviewed, again-rate {percent(s['again_rate'])}, "
            f"{duration_text(s['seconds'])}."
        )
        if not session.finished:  # q with cards left: they are due now, not "in 23 hours"
            say(
                f"Left in this session: {counts_text(session.counts())}; "
                "prep quiz --plain goes on where you stopped."
            )
        elif s["next_due"] is not None:
            wait = spoken_interval(s["next_due"] - session.clock())
            # cards due now that --limit left for later: not "next due in 2 months"
            held = session.held_back and held_due(session)
            lead = (
                "Past those held back, the next card comes due in" if held else "Next card due in"
            )
            say(f"{lead} {wait}; {coming_text(s['due_by_tomorrow'])}.")
        return 2 if self.io.refused else 0

    def new_day(self, now: datetime) -> None:
        """Said at the first card after the study day rolled over (4 am) while a prompt
        waited: the session goes on with the new day's cards (its counts, in the line over
        the next card, are the new day's), and the day's plan and limits, as at a start."""
        self.io.say("")
        self.io.say("A new study day has begun: the session goes on with today's cards.")
        for line in self.today_at(now) if self.today_at is not None else ():
            self.io.say(line)

    def show_card(self, card: Card) -> None:
        session, say, ask = self.session, self.io.say, self.ask
        say("")
        say(f"[{counts_text(session.counts())}] {card.deck} · {card.kind}")
        early = session.early
        if early is not None:
            say(f"({early_text(early)}; nothing else is left)")
        state = session.store.card(card.id)
        if state is not None and state.changed:
            say("(edited since you last reviewed it)")
        if state is not None and state.leech:
            say(f"(leech: forgotten {count(state.lapses, 'time')}; consider rewriting it)")
        if card.parent:
            parent = session.collection.get(card.parent)
            if parent is not None:
                say(f"(follows: {parent.prompt.splitlines()[0]})")
        say(card.prompt)
        session.mark_shown()
        undo = "u undoes, " if session.undoable else ""  # (offered once there is something)
        suggested: Rating | None = None
        letters = CHOICE_LETTERS[: len(card.choices)]
        if card.kind == "red-flag" and card.choices:
            # in an interview the flaw must be said, not recognised: say it first, then pick
            answer = ask("Say what this answer gets wrong, then Enter shows the choices: ")
            if answer == "u":
                self.undo()
                return
        if card.choices:
            for letter, choice in zip(letters, card.choices, strict=False):
                say(f"  {letter}) {choice}")
            while True:
                answer = ask(
                    f"Pick {letters[0]}-{letters[-1]} (Enter reveals, t types an answer, "
                    f"{undo}q quits): "
                )
                if answer == "u":
                    self.undo()
                    return
                if answer == "t":
                    suggested = self.typed_answer(card)
                    break
                if answer == "":
                    break
                if len(answer) == 1 and answer in letters:
                    verdict = choice_verdict(card, letters.index(answer))
                    suggested = verdict.suggested
                    say(f"{verdict.text} Suggested rating: {rating_name(suggested)}.")
                    break
                say(f"Type a letter {letters[0]}-{letters[-1]}, Enter, t, u or q.")
        else:
            answer = ask(f"Press Enter to reveal (t types an answer, {undo}q quits): ")
            if answer == "u":
                self.undo()
                return
            if answer == "t":
                suggested = self.typed_answer(card)
        say("")
        for line in _reveal_lines(card, self.runs):
            say(line)
        while True:
            say(rating_line(session.preview(), suggested))
            hint = " (Enter takes the suggestion)" if suggested else ""
            answer = ask(f"Rate 1-4{hint}, {undo}q quits: ")
            if answer == "" and suggested is not None:
                answer = str(int(suggested))
            if answer in ("1", "2", "3", "4"):
                try:
                    outcome = session.rate(
                        Rating(int(answer)), card_id=card.id, content_hash=card.content_hash
                    )
                except NotCurrentCard as exc:  # never saved on another card: say so
                    say(f"Not saved: {exc}.")
                    return
                except StoreError as exc:
                    if not exc.retryable:  # read-only: no retry will save it
                        raise
                    # busy (another terminal holds the lock), a full disk: as the TUI does
                    say(f"Not saved: {exc}. The card stays; rate it again, or q to quit.")
                    continue
                when = next_text(outcome, session.plan, session.collection, session.clock())
                say(f"Saved: {RATING_NAMES[outcome.rating]}, {when}.")
                return
            if answer == "u":
                self.undo()
                return
            say("Type 1 (Again), 2 (Hard), 3 (Good), 4 (Easy), u or q.")

    def undo(self) -> None:
        card = self.session.undo()
        if card is None and self.session.done:  # the newest review is another prep's
            self.io.say("Cannot undo: another prep has rated a card since; yours stays saved.")
        elif card is None:
            self.io.say("Nothing to undo yet: u undoes this session's last rating.")
        else:
            self.io.say(f"Undone: {card.id} is back, with its previous schedule.")


def run_plain(
    session: ReviewSession,
    stdin: TextIO,
    stdout: TextIO,
    grading: Grading | None = None,
    today: Sequence[str] = (),
    today_at: Callable[[datetime], Sequence[str]] | None = None,
) -> int:
    """The review session line by line; returns the exit code. ``today``: lines said after
    the first (today_lines: the plan and the daily limits, as home says them); ``today_at``:
    the same lines for a study day begun while the session is open (4 am), said then."""
    return PlainQuiz(session, LineIO(stdin, stdout), grading, today, today_at).run()


def today_lines(
    store: Store, collection: Cards, now: datetime, deck: str | None, new_limit: int | None
) -> list[str]:
    """What home says above and below the decks, in the same words: the interview plan and
    why it raises the new cards, and a daily limit that holds cards back (``--new N``: the
    day's new-card limit does not apply to this run)."""
    from prep.engine.study.plan import plan_day
    from prep.engine.study.present import NEW_LIMIT_CAPS, limit_lines
    from prep.engine.study.queue import build_queue, limits_today

    lines = []
    day = plan_day(store, collection, now)
    if day is not None:
        lines.append(day.heading())
        why = day.why()
        if why:
            lines.append(why)
    queue = build_queue(store, collection, now, deck=deck, new_limit=new_limit)
    limits = limits_today(store, collection, now, queue, deck)
    # (--new N serves N whatever the day's limit: the line on what that limit caps is not for it)
    lines += [
        line
        for line in limit_lines(limits, lines[0] if day is not None else "")
        if new_limit is None or not line.startswith(NEW_LIMIT_CAPS)
    ]
    return lines


def grade_typed(
    io: LineIO, grading: Grading, card: Card, answer: str
) -> tuple[Rating | None, Grade | None]:
    """Grade a typed answer (the model worker; this may wait), print the point-by-point
    verdict and return the suggested rating and the grade; (None, None), and a line why,
    when it is not graded."""
    from prep.tui.answertext import answer_text
    from prep.tui.grading import grade_now, suggestion, verdict_lines

    if not answer_text(answer):  # (zero-width characters or NUL alone: no answer)
        io.say("(no answer typed)")
        return None, None
    io.say("Grading your answer…")
    grade, why = grade_now(grading, card, answer)
    if grade is None:
        io.say(why)
        return None, None
    rating = Rating(suggestion(grade))
    for line in verdict_lines(grade, int(rating)):
        io.say(line)
    return rating, grade


# --- prep mock --plain ----------------------------------------------------------------------


def _to_grade(mock: MockInterview) -> bool:
    """Whether the mock has a typed question with a rubric (else no model is loaded)."""
    from prep.tui.grading import rubric_for

    return any(not s.card.choices and rubric_for(s.card) is not None for s in mock.steps)


class GraderLoad:
    """The grader's model, loading in the worker from the mock's start (as the app's mock
    does) while the first question is read; the first typed answer waits only for what is
    left of the load, and is told so."""

    def __init__(self, grading: Grading) -> None:
        import threading

        self.grading = grading
        self.loading: Any = None  # the load's Future (None: nothing to load here)
        self.failed: str | None = None
        # (hint() and starting the worker take ~0.1 CPU-s: not before the first question)
        self._thread = threading.Thread(target=self._start, daemon=True)
        self._thread.start()

    def _start(self) -> None:
        try:
            self.loading = self.grading.warm()
        except Exception as exc:  # the worker could not start: one line, never a traceback
            self.failed = str(exc).splitlines()[0] if str(exc) else type(exc).__name__

    def wait(self, say: Callable[[str], None], timeout: float = 300.0) -> str | None:
        """Wait for the load (saying so when it is not done yet); None when it loaded (or
        needs no load), else why it failed, in one line."""
        import time

        self._thread.join()
        loading = self.loading
        if loading is None or self.failed is not None:
            return self.failed
        if not loading.done():
            started = getattr(self.grading, "load_started", None)
            since = f", {time.monotonic() - started:.0f} s so far" if started else ""
            say(f"The grader's model is still loading (once a mock{since})…")
        try:
            loading.result(timeout=timeout)
        except Exception as exc:  # the worker's one line (a missing model, a crash, a timeout)
            self.failed = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return self.failed


def run_mock_plain(
    mock: MockInterview, stdin: TextIO, stdout: TextIO, grading: Grading | None = None
) -> int:
    """The mock interview line by line: type an answer (or say it aloud) and press Enter to
    reveal; a typed answer is graded point by point (where the card has a rubric and the
    grader is installed); 1-4 grades; q (or end of input) quits. Grades are stored as they
    are given."""
    io = LineIO(stdin, stdout)
    say, ask = io.say, io.ask
    runs = mock.store.latest_demo_runs()
    follow = len(mock.steps) - 1
    say(
        f"Mock interview: 1 main question and {count(follow, 'follow-up')}, "
        f"{clock_text(mock.total_budget_s)} in all."
    )
    say("Answer aloud or type it; Enter reveals; then grade yourself 1-4. q quits.")
    if grading is None and _to_grade(mock):
        from prep.tui.grading import Grading

        grading = Grading()
    loader = GraderLoad(grading) if grading is not None and _to_grade(mock) else None
    try:
        while not mock.finished:
            step = mock.step
            assert step is not None
            card = step.card
            say("")
            say(
                f"[{mock.index + 1}/{len(mock.steps)}] {mock.label()}  ·  "
                f"budget {clock_text(step.budget_s)}, the clock is running"
            )
            say(card.prompt)
            letters = CHOICE_LETTERS[: len(card.choices)]
            for letter, choice in zip(letters, card.choices, strict=False):
                say(f"  {letter}) {choice}")
            mock.start()
            hint = f"pick {letters[0]}-{letters[-1]}, or " if letters else ""
            answer = ask(f"Your answer ({hint}type it, or say it aloud; Enter reveals): ")
            picked = letters and len(answer) == 1 and answer.lower() in letters
            if picked:
                verdict = mock.pick(letters.index(answer.lower()))
                say(f"{verdict.text} Suggested grade: {rating_name(verdict.suggested)}.")
            mock.reveal(answer)
            say("")
            say(took_text(step))
            if step.answer:
                say(f"Your answer: {step.answer}")
            if step.answer and not picked:
                from prep.tui.grading import Grading, rubric_for

                if grading is None:  # (a card with no rubric: grade_typed says why)
                    grading = Grading()
                graded = loader is not None and rubric_for(card) is not None
                failed = loader.wait(say) if graded and loader is not None else None
                if failed is not None:  # (one line a typed answer; the load is not retried)
                    suggested, grade = None, None
                    say(f"Not graded: the grader did not load ({failed}); grade it 1-4.")
                else:
                    suggested, grade = grade_typed(io, grading, card, step.answer)
                if grade is not None:
                    step.suggested = suggested
                    step.missed = tuple(p.text for p in grade.missed)
            for line in _reveal_lines(card, runs):
                say(line)
            while True:
                say(rating_line(mock.preview(), step.suggested))
                extra = " (Enter takes the suggestion)" if step.suggested else ""
                typed = ask(f"Grade yourself 1-4{extra}, q quits: ")
                if typed == "" and step.suggested is not None:
                    typed = str(int(step.suggested))
                if typed in ("1", "2", "3", "4"):
                    try:
                        outcome = mock.grade(int(typed))
                    except MockError as exc:  # never saved on another card: say so, end
                        say(f"Not saved: {exc}.")
                        raise Quit from None
                    say(
                        f"Saved: {RATING_NAMES[outcome.rating]}, "
                        f"next review in {spoken_interval(outcome.interval)}."
                    )
                    break
                say("Type 1 (Again), 2 (Hard), 3 (Good), 4 (Easy) or q.")
    except Quit:
        pass
    finally:
        if grading is not None:
            grading.close()
    say("")
    for line in mock_summary_lines(mock):
        say(line)
    return 2 if io.refused else 0
