"""`prep quiz --plain`: a review session line by line on stdin/stdout.

For screen readers, pipes and dumb terminals, and the thing end-to-end tests drive.
Enter reveals; on a choice or red-flag card a-d picks first; 1-4 rates (Enter takes the
suggested rating after a pick); u undoes the last rating; q (or end of input) quits.
Every rating is committed to the database before the next card is printed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from prep.engine.deck import CHOICE_LETTERS, Card
from prep.engine.scheduler import RATING_NAMES, Rating
from prep.engine.session import ReviewSession, choice_feedback
from prep.engine.timeutil import human_interval, plural, spoken_interval


class Quit(Exception):
    """The user typed q (or input ended)."""


class LineIO:
    """Line-oriented terminal I/O shared by the plain quiz and the plain mock interview."""

    def __init__(self, stdin: TextIO, stdout: TextIO) -> None:
        self.stdin, self.stdout = stdin, stdout

    def say(self, text: str = "") -> None:
        self.stdout.write(text + "\n")
        self.stdout.flush()

    def ask(self, prompt: str) -> str:
        """The stripped line typed at ``prompt``; raises Quit on q, quit, exit or end of input."""
        self.stdout.write(prompt)
        self.stdout.flush()
        line = self.stdin.readline()
        if line == "":  # end of input
            raise Quit
        text = line.strip()
        if text.lower() in ("q", "quit", "exit"):
            raise Quit
        return text


def card_header(session: ReviewSession, card: Card) -> str:
    return f"[{session.position}/{session.total}] {card.deck} · {card.kind}"


def rating_line(session: ReviewSession, suggested: Rating | None = None) -> str:
    parts = []
    for rating, outcome in session.preview().items():
        mark = "*" if rating == suggested else ""
        parts.append(
            f"{int(rating)} {RATING_NAMES[rating]} {human_interval(outcome.interval)}{mark}"
        )
    return "  ".join(parts)


def run_plain(session: ReviewSession, stdin: TextIO, stdout: TextIO) -> int:
    io = LineIO(stdin, stdout)
    say = io.say

    def ask(prompt: str) -> str:
        return io.ask(prompt).lower()

    if session.finished:
        say("Nothing due right now. Come back later, or study new cards with --new N.")
        return 0
    say(
        f"{plural(session.total, 'card')} in this session. Enter reveals, 1-4 rate, u undoes, q quits."
    )
    try:
        while not session.finished:
            card = session.current
            assert card is not None
            _show_card(session, card, say, ask)
    except Quit:
        pass
    s = session.summary()
    say("")
    say(
        f"Session over: {s['reviewed']} reviewed, again-rate {100 * s['again_rate']:.0f}%, "
        f"{s['seconds']:.0f}s."
    )
    if s["next_due"] is not None:
        wait = spoken_interval(s["next_due"] - session.clock())
        say(f"Next card due in {wait}; {s['due_by_tomorrow']} due by the end of tomorrow.")
    return 0


def _show_card(
    session: ReviewSession, card: Card, say: Callable[[str], None], ask: Callable[[str], str]
) -> None:
    say("")
    say(card_header(session, card))
    state = session.store.card(card.id)
    if state is not None and state.changed:
        say("(edited since you last reviewed it)")
    if state is not None and state.leech:
        say(f"(leech: forgotten {state.lapses} times; consider rewriting it)")
    if card.parent:
        parent = session.collection.get(card.parent)
        if parent is not None:
            say(f"(follows: {parent.prompt.splitlines()[0]})")
    say(card.prompt)
    session.mark_shown()
    suggested: Rating | None = None
    letters = CHOICE_LETTERS[: len(card.choices)]
    if card.choices:
        for letter, choice in zip(letters, card.choices, strict=False):
            say(f"  {letter}) {choice}")
        while True:
            answer = ask(f"Pick {letters[0]}-{letters[-1]} (Enter reveals, u undoes, q quits): ")
            if answer == "u":
                _undo(session, say)
                return
            if answer == "":
                break
            if len(answer) == 1 and answer in letters:
                right, suggested = choice_feedback(card, letters.index(answer))
                verdict = "Right." if right else f"Not quite: the answer is {card.correct_letter}."
                say(f"{verdict} Suggested rating: {int(suggested)} {RATING_NAMES[suggested]}.")
                break
            say(f"Type a letter {letters[0]}-{letters[-1]}, Enter, u or q.")
    else:
        answer = ask("Press Enter to reveal (u undoes, q quits): ")
        if answer == "u":
            _undo(session, say)
            return
    _reveal(card, say)
    while True:
        say(rating_line(session, suggested))
        hint = " (Enter takes the suggestion)" if suggested else ""
        answer = ask(f"Rate 1-4{hint}, u undoes, q quits: ")
        if answer == "" and suggested is not None:
            answer = str(int(suggested))
        if answer in ("1", "2", "3", "4"):
            outcome = session.rate(Rating(int(answer)))
            say(
                f"Saved: {RATING_NAMES[outcome.rating]}, next in {spoken_interval(outcome.interval)}."
            )
            return
        if answer == "u":
            _undo(session, say)
            return
        say("Type 1 (Again), 2 (Hard), 3 (Good), 4 (Easy), u or q.")


def _reveal(card: Card, say: Callable[[str], None]) -> None:
    say("")
    if card.choices and card.correct_letter:
        say(f"Correct: {card.correct_letter}) {card.choices[card.correct or 0]}")
    say(f"Answer: {card.answer}")
    if card.explain:
        say(f"Why: {card.explain}")
    if card.analogy:
        say(f"Analogy: {card.analogy}")
    for name in card.demos:
        say(f"Check it: prep demo {name}")


def _undo(session: ReviewSession, say: Callable[[str], None]) -> None:
    card = session.undo()
    if card is None:
        say("Nothing to undo in this session.")
    else:
        say(f"Undone: {card.id} is back, with its previous schedule.")
