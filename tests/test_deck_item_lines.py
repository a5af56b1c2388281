"""A card item that is not a mapping (a number, a text, a list, an empty item) is reported at
its own line, as every other problem is; it used to be reported at the `cards:` key's line,
all of them on one line, with nothing to tell which item was meant."""

from __future__ import annotations

import pytest

from prep.engine.decks.deck import parse_deck_text

MESSAGE = "a card must be a mapping of fields (id, kind, prompt, answer, ...)"
CARD = "  - id: a1\n    kind: recall\n    prompt: |\n      - not an item\n    answer: a\n"


@pytest.mark.parametrize("anchor", ["", "x: &a 1\n"], ids=["fast reader", "hardened loader"])
def test_each_item_is_reported_at_its_line(anchor: str) -> None:
    text = f'deck: d\n{anchor}cards:\n{CARD}  - 42\n  # a comment\n  - "text"\n  - [1, 2]\n  -\n'
    first = 2 + bool(anchor)  # the `cards:` key's line
    _info, cards, errors = parse_deck_text(text, "d.yaml", "d")
    assert [c.id for c in cards] == ["a1"]
    lines = [e.line for e in errors if e.message == MESSAGE]
    assert lines == [first + 6, first + 8, first + 9, first + 10]


def test_items_at_the_keys_own_indentation() -> None:
    text = (
        "deck: d\ncards:\n- 5\n- id: a1\n  kind: recall\n  prompt: p\n  answer: a\n- x\ntitle: t\n"
    )
    _info, _cards, errors = parse_deck_text(text, "d.yaml", "d")
    assert [e.line for e in errors if e.message == MESSAGE] == [3, 8]


def test_a_flow_list_is_reported_at_its_key() -> None:
    _info, _cards, errors = parse_deck_text("deck: d\ncards: [1, 2]\n", "d.yaml", "d")
    assert [e.line for e in errors if e.message == MESSAGE] == [2, 2]
