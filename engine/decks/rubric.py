"""A card's grading rubric: the points a typed answer is graded by (`prep grade`, `t`).

A card declares them as `points:` (3-5 single ideas). Without them, its 60-second `bullets`
serve, when each is a single idea: one sentence, no ';', at most MAX_IDEA_WORDS words. A
rubric needs at least MIN_POINTS points; `prep check` names the cards that have none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from prep.engine.decks.deck import Card

MIN_POINTS = 2
MAX_POINTS = 12
MAX_IDEA_WORDS = 30
_SENTENCE_BREAK = re.compile(r"[.!?]\s+[A-Z]")


@dataclass(frozen=True)
class CardRubric:
    points: tuple[str, ...]
    source: str  # "points" or "bullets"; "" when there is none
    problem: str | None  # why the card has no usable rubric, or None


def single_idea(text: str) -> bool:
    return (
        ";" not in text
        and len(text.split()) <= MAX_IDEA_WORDS
        and not _SENTENCE_BREAK.search(text.strip())
    )


def card_rubric(card: Card) -> CardRubric:
    """The card's rubric: its `points`, else its single-idea bullets; `problem` when neither."""
    if card.points:
        if len(card.points) > MAX_POINTS:
            return CardRubric((), "", f"{len(card.points)} points (at most {MAX_POINTS})")
        return CardRubric(card.points, "points", None)
    if not card.bullets:
        return CardRubric((), "", "no points: and no bullets")
    ideas = tuple(b for b in card.bullets if single_idea(b))
    if len(ideas) < MIN_POINTS:
        return CardRubric(
            (),
            "",
            f"no points:, and {len(ideas)} of its {len(card.bullets)} bullets are single ideas "
            f"(a rubric needs {MIN_POINTS})",
        )
    return CardRubric(ideas[:MAX_POINTS], "bullets", None)


def suggest_rating(n_points: int, n_covered: int) -> int:
    """A suggested FSRS rating from a grade: every point covered -> Good (3); at least half
    -> Hard (2); fewer -> Again (1). Easy stays the learner's own call."""
    if n_points <= 0:
        return 3
    if n_covered >= n_points:
        return 3
    return 2 if 2 * n_covered >= n_points else 1
