"""The bundled cards' rubrics (questions/*.yaml `points:`): every card is gradable.

A typed answer is graded point by point (`prep grade CARD_ID`, `t` in the app), so every
bundled card declares its own 3-5 points, each one checkable idea in the card's own terms.
The format rules (what `points:` may hold, the fallback to bullets) are in test_rubric_cards.py.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.engine.decks.deck import Card
from prep.engine.decks.deckcache import load_collection
from prep.engine.decks.rubric import card_rubric, single_idea

# Words (of 3+ letters) that say nothing about which card a point belongs to.
# fmt: off
_STOP = frozenset({
    "the", "and", "for", "are", "its", "with", "that", "this", "from", "not", "into", "than",
    "then", "their", "them", "they", "each", "only", "one", "can", "could", "would", "does",
    "has", "have", "which", "what", "when", "where", "while", "over", "per", "all", "any",
    "out", "but", "also", "both", "same", "still"
})
# fmt: on


@pytest.fixture(scope="module")
def cards() -> list[Card]:
    coll = load_collection(include_bundled=True)
    assert coll.errors == [], [str(e) for e in coll.errors]
    return coll.cards


def _terms(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9_^]+", text.lower()) if w not in _STOP and len(w) > 2}


def _card_terms(card: Card) -> set[str]:
    parts = [card.prompt, card.answer, card.explain or "", *card.choices, *card.bullets]
    return _terms(" ".join(parts))


def _foreign_points(card: Card, points: tuple[str, ...], floor: float = 0.3) -> list[str]:
    """The points less than `floor` of whose terms appear anywhere in the card's own text."""
    own = _card_terms(card)
    return [p for p in points if (t := _terms(p)) and len(t & own) / len(t) < floor]


def test_every_bundled_card_declares_three_to_five_points(cards):
    wrong = {}
    for card in cards:
        rubric = card_rubric(card)
        if rubric.problem or rubric.source != "points" or not 3 <= len(rubric.points) <= 5:
            wrong[card.id] = (rubric.source, len(rubric.points), rubric.problem)
    assert len(cards) >= 116
    assert not wrong, f"cards without 3-5 declared points: {wrong}"


def test_every_point_is_one_distinct_idea(cards):
    not_single = [(c.id, p) for c in cards for p in c.points if not single_idea(p)]
    assert not not_single, (
        f"points with more than one idea (';', two sentences, > 30 words): {not_single}"
    )
    repeated = [c.id for c in cards if len(set(c.points)) != len(c.points)]
    assert not repeated, f"cards that list a point twice: {repeated}"
    shared = [p for p, n in Counter(p for c in cards for p in c.points).items() if n > 1]
    assert not shared, f"points copied between cards: {shared}"
    unfinished = [(c.id, p) for c in cards for p in c.points if not p.rstrip().endswith(".")]
    assert not unfinished, f"points that are not a finished sentence: {unfinished}"


def test_points_speak_in_their_own_cards_terms(cards):
    drifted = {c.id: bad for c in cards if (bad := _foreign_points(c, c.points))}
    assert not drifted, (
        f"points whose terms the card never uses (pasted from elsewhere?): {drifted}"
    )


def test_the_terms_check_catches_points_moved_to_another_card(cards):
    # The counterexample: every card's points shifted onto a card of another deck.
    by_deck: dict[str, list[Card]] = {}
    for c in cards:
        by_deck.setdefault(c.deck, []).append(c)
    decks = sorted(by_deck)
    caught = total = 0
    for i, deck in enumerate(decks):
        other = by_deck[decks[(i + 1) % len(decks)]]
        for j, card in enumerate(by_deck[deck]):
            moved = other[j % len(other)].points
            total += 1
            caught += bool(_foreign_points(card, moved))
    # 106 of 116 are caught today; the rest land on a card that shares the deck-wide terms.
    assert caught >= 0.8 * total, f"only {caught} of {total} moved rubrics flagged"


def test_prep_check_finds_no_bundled_card_without_a_rubric(tmp_path: Path):
    from prep.tui.cli import main

    runner = CliRunner()
    env = {"PREP_QUESTIONS": str(tmp_path), "PREP_DB": str(tmp_path / "p.db")}
    result = runner.invoke(main, ["check"], env=env)
    assert result.exit_code == 0, result.output
    assert "rubric" not in result.output, result.output
    result = runner.invoke(main, ["check", "--rubrics"], env=env)
    assert result.exit_code == 0 and "no usable rubric" not in result.output, result.output
