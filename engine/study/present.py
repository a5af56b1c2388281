"""How a card and its outcomes read, as data every front end renders its own way.

A card's answer side is a list of `Section`s (correct option, answer, why, analogy, the
60-second bullets, sources, the linked demos with their latest runs): the review screen renders
them as Markdown, the mock screen as Rich text, the line mode as plain lines, the Anki export
as HTML. Nothing re-parses text. Beside them, the one wording of the choice verdict, the rating
choices, and the human forms of intervals, durations, clock times, percentages and counts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from prep.engine.decks.deck import CHOICE_LETTERS, Card
from prep.engine.study.plan import due_of, new_limit_text
from prep.engine.study.scheduler import RATING_NAMES, Outcome, Rating
from prep.engine.textsafe import count as count  # (re-exported: present.count)

if TYPE_CHECKING:
    from prep.engine.study.collection import Cards
    from prep.engine.study.plan import Plan

# --- numbers and times --------------------------------------------------------------------


def human_interval(delta: timedelta) -> str:
    """Short interval text, as on Anki's rating buttons: 45s, 10m, 3h, 4d, 2.5mo, 1.2y."""
    seconds = max(0.0, delta.total_seconds())
    if round(seconds) < 60:  # rounded first, so 23.9 hours reads 1d, not 24h
        return f"{round(seconds)}s"
    minutes = seconds / 60
    if round(minutes) < 60:
        return f"{round(minutes)}m"
    hours = minutes / 60
    if round(hours) < 24:
        return f"{round(hours)}h"
    days = hours / 24
    if days < 30:
        return f"{round(days)}d"
    if days < 365:
        months = days / 30.4
        return f"{months:.1f}mo".replace(".0mo", "mo")
    return f"{days / 365:.1f}y".replace(".0y", "y")


_UNIT_WORDS = {"s": "second", "m": "minute", "h": "hour", "d": "day", "mo": "month", "y": "year"}


def spoken_interval(delta: timedelta) -> str:
    """``human_interval`` in words, for sentences: 1 day, 2 days, 10 minutes, 2.5 months."""
    short = human_interval(delta)
    number = short.rstrip("smhdoy")
    word = _UNIT_WORDS[short[len(number) :]]
    return f"{number} {word}" + ("" if number == "1" else "s")


def next_text(outcome: Outcome, plan: Plan | None, collection: Cards, now: datetime) -> str:
    """When a rated card comes back, as "Saved: Good, ..." goes on: ``next in 8 days``, or,
    when an interview plan serves it sooner than FSRS's own due (a review brought to the day
    before the interview, a weak card to its morning), the plan's time and FSRS's beside it:
    ``next in 4 days, for the interview (FSRS alone: 8 days)``."""
    fsrs = spoken_interval(outcome.interval)
    due = due_of(plan, collection, outcome.state)
    if due is None or outcome.state.due is None or due >= outcome.state.due:
        return f"next in {fsrs}"
    return f"next in {spoken_interval(due - now)}, for the interview (FSRS alone: {fsrs})"


def coming_text(n: int) -> str:
    """The end of a session's ``N coming up by the end of tomorrow (reviews and learning
    steps)``: the forecast's count, which takes in learning steps, is not called "due" (home,
    the session bar and stats say due of reviews alone)."""
    return f"{n} coming up by the end of tomorrow (reviews and learning steps)"


def counts_text(counts: tuple[int, int, int]) -> str:
    """Anki's three numbers for what is left: ``new 12 · learning 2 · due 5``."""
    new, learning, due = counts
    return f"new {new} · learning {learning} · due {due}"


REVIEW_LIMIT_REACHED = "Daily review limit reached"  # how limit_lines' review line begins
NEW_LIMIT_CAPS = "Daily new-card limit:"  # how its line on a limit not yet reached begins


def limit_lines(limits: Any, shown: str = "") -> list[str]:
    """Why fewer cards are served than wait: today's limits (a session.Limits), one line each.
    ``shown``: what the screen says above them (the interview plan's line): a limit it
    already says ("29 new a day, 29 left today") is not said again."""
    lines = []
    extra = getattr(limits, "new_extra", 0)
    day = getattr(limits, "interview_day", False)
    said = new_limit_text(limits.new_per_day - extra, limits.new_done, extra, day)
    # the plan's line says the plan's limit: a deck the plan leaves out has the setting's,
    # in the same words when the numbers agree, and says it
    by_plan = getattr(limits, "by_plan", True)
    if by_plan and re.search(rf"(?<!\d){re.escape(said)}", shown):  # (not "19 new a day")
        reached, caps = "Daily new-card limit reached (the plan's)", f"{NEW_LIMIT_CAPS} the plan's"
    else:
        reached, caps = f"Daily new-card limit reached ({said})", f"{NEW_LIMIT_CAPS} {said}"
    if limits.new_reached:
        lines.append(f"{reached}; {count(limits.new_waiting, 'unseen card')} wait.")
    elif getattr(limits, "new_capped", False):
        # the New counts are each what a deck could take of the same few: say they share them
        lines.append(
            f"{caps}, shared by the decks; {count(limits.new_waiting, 'more unseen card')} wait."
        )
    if limits.reviews_reached:
        lines.append(
            f"{REVIEW_LIMIT_REACHED} ({limits.review_limit}); more reviews are due "
            "(prep config review_limit N raises it)."
        )
    return lines


def after_parents_text(n: int) -> str:
    """Home's line under the decks when All decks' New counts follow-ups no deck alone serves
    (queue.DeckCounts.after_parents)."""
    return (
        f"All decks' New counts {count(n, 'follow-up')} that come after a parent from another "
        "deck; a deck studied alone waits for those answers."
    )


def early_text(ahead: timedelta) -> str:
    """The label of a learning card shown before its step is due (learn-ahead)."""
    return f"early: its step is due in {spoken_interval(ahead)}"


def duration_text(seconds: float) -> str:
    """Time spent: 45s, 2m 05s, 1h 02m."""
    seconds = round(max(0.0, seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, sec = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {sec:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def clock_text(seconds: float) -> str:
    """A running clock: m:ss (h:mm:ss past an hour)."""
    s = max(0, int(seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


def percent(x: float | None) -> str:
    """A share as a whole percentage; an em dash when there is nothing to divide."""
    return "—" if x is None else f"{100 * x:.0f}%"


def shorten(text: str, width: int = 60) -> str:
    """One line of at most ``width`` characters, cut at a word with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[: width - 1].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + "…"


def first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


# --- the answer side ------------------------------------------------------------------------


@dataclass(frozen=True)
class DemoLink:
    """A demo a card links to, with its claim and latest recorded run (None: never run)."""

    name: str
    claim: str = ""
    passed: bool | None = None
    device: str = ""
    ran_at: str = ""  # UTC ISO-8601

    @property
    def command(self) -> str:
        return f"prep demo {self.name}"

    def last_run(self) -> str:
        """``last run PASS on cpu, 2025-03-10 12:00`` or ``never run``."""
        if self.passed is None:
            return "never run"
        when = self.ran_at[:16].replace("T", " ")
        where = f" on {self.device}" if self.device else ""
        return f"last run {'PASS' if self.passed else 'FAIL'}{where}, {when}".rstrip(", ")


@dataclass(frozen=True)
class Section:
    """One labelled part of a card's answer side.

    ``key`` is one of SECTION_KEYS; a section has ``text``, or ``items`` (bullets, sources), or
    ``demos``."""

    key: str
    label: str
    text: str = ""
    items: tuple[str, ...] = ()
    demos: tuple[DemoLink, ...] = ()


SECTION_KEYS = ("correct", "answer", "why", "analogy", "bullets", "sources", "demos")


def demo_links(
    card: Card,
    claims: Mapping[str, str] | None = None,
    runs: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[DemoLink, ...]:
    """The card's demos with their claims and latest runs (``runs``: name -> a row of
    Store.latest_demo_runs)."""
    links = []
    for name in card.demos:
        run = (runs or {}).get(name)
        links.append(
            DemoLink(
                name=name,
                claim=(claims or {}).get(name, ""),
                passed=None if run is None else bool(run["passed"]),
                device="" if run is None else str(run.get("device") or ""),
                ran_at="" if run is None else str(run.get("ran_at") or ""),
            )
        )
    return tuple(links)


def answer_sections(
    card: Card,
    claims: Mapping[str, str] | None = None,
    runs: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Section]:
    """The answer side of ``card``, in the order every front end shows it; a field the card
    leaves empty has no section."""
    sections = []
    if card.choices and card.correct is not None:
        letter = CHOICE_LETTERS[card.correct]
        sections.append(Section("correct", "Correct", f"{letter}) {card.choices[card.correct]}"))
    sections.append(Section("answer", "Answer", card.answer))
    if card.explain:
        sections.append(Section("why", "Why", card.explain))
    if card.analogy:
        sections.append(Section("analogy", "Analogy", card.analogy))
    if card.bullets:
        sections.append(Section("bullets", "In 60 seconds", items=tuple(card.bullets)))
    if card.sources:
        sections.append(Section("sources", "Sources", items=tuple(card.sources)))
    if card.demos:
        sections.append(Section("demos", "Check it", demos=demo_links(card, claims, runs)))
    return sections


def section_lines(sections: list[Section], *, results: bool = True) -> list[str]:
    """The sections as plain lines (the line mode; the mock screen bolds the labels)."""
    lines: list[str] = []
    for s in sections:
        lines.extend(label + rest for label, rest in section_parts(s, results=results))
    return lines


def section_parts(section: Section, *, results: bool = True) -> list[tuple[str, str]]:
    """Lines of one section as (label part, rest) pairs; the label part is empty on
    continuation lines. Front ends style the label part."""
    if section.key == "bullets":
        return [(f"{section.label}:", ""), *(("", f"  - {b}") for b in section.items)]
    if section.key == "sources":
        return [(f"{section.label}: ", "; ".join(section.items))]
    if section.key == "demos":
        out = []
        for link in section.demos:
            rest = link.command + (f" ({link.last_run()})" if results else "")
            out.append((f"{section.label}: ", rest))
        return out
    return [(f"{section.label}: ", section.text)]


# --- choices and ratings --------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """What a pick on a choice or red-flag card means."""

    right: bool
    suggested: Rating
    text: str  # "Right." or "Not quite: the answer is b."


def choice_verdict(card: Card, picked: int) -> Verdict:
    """Was the pick right, the rating we suggest (Good, or Again after a wrong pick), and the
    sentence that says so."""
    right = card.correct is not None and picked == card.correct
    text = "Right." if right else f"Not quite: the answer is {card.correct_letter}."
    return Verdict(right, Rating.Good if right else Rating.Again, text)


def rating_name(rating: Rating) -> str:
    """``3 Good``."""
    return f"{int(rating)} {RATING_NAMES[rating]}"


def rating_label(rating: Rating, outcome: Outcome | None = None) -> str:
    """``3 Good 4d``: a rating and the interval it would give."""
    interval = "" if outcome is None else f" {human_interval(outcome.interval)}"
    return rating_name(rating) + interval


def rating_choices(
    preview: Mapping[Rating, Outcome], suggested: Rating | None = None
) -> list[tuple[Rating, str, bool]]:
    """The rating line: (rating, ``3 Good 4d``, whether it is the suggested one) per rating."""
    return [(r, rating_label(r, o), r == suggested) for r, o in preview.items()]
