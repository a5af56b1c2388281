"""`prep cram`: the 60-second bullets of each main card, for the way to the call.

A main card is a card with ``bullets`` that is not a follow-up. The sheet is grouped by deck in
deck order; the TUI's cram screen renders the same data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prep.engine.decks.deck import Card, Collection
from prep.engine.study.present import first_line


@dataclass(frozen=True)
class CramItem:
    card_id: str
    prompt: str  # the first line of the prompt
    bullets: tuple[str, ...]
    tags: tuple[str, ...] = ()
    demos: tuple[str, ...] = ()


@dataclass
class CramDeck:
    name: str
    title: str
    items: list[CramItem] = field(default_factory=list)


class UnknownDeck(ValueError):
    def __init__(self, deck: str, decks: list[str]) -> None:
        self.deck = deck
        self.decks = decks
        super().__init__(f"no deck named {deck!r} (decks: {', '.join(decks) or 'none'})")


def is_main(card: Card) -> bool:
    return bool(card.bullets) and card.kind != "follow-up" and card.parent is None


def cram_sheet(collection: Collection, deck: str | None = None) -> list[CramDeck]:
    """The bullets of every main card, per deck (decks without any are left out).
    Raises UnknownDeck for a deck name that is not loaded."""
    if deck is not None and deck not in collection.decks:
        raise UnknownDeck(deck, list(collection.decks))
    sheet = []
    for name, info in collection.decks.items():
        if deck is not None and name != deck:
            continue
        items = [
            CramItem(c.id, first_line(c.prompt), c.bullets, c.tags, c.demos)
            for c in collection.in_deck(name)
            if is_main(c)
        ]
        if items:
            sheet.append(CramDeck(name, info.title, items))
    return sheet


def render(sheet: list[CramDeck]) -> str:
    """The plain-text sheet `prep cram` prints."""
    if not sheet:
        return "No 60-second bullets yet: no main card has 'bullets'."
    out: list[str] = []
    for d in sheet:
        if out:
            out.append("")
        out.append(f"== {d.title} ({d.name}) ==")
        for item in d.items:
            out.append("")
            out.append(item.prompt)
            out.extend(f"  - {b}" for b in item.bullets)
    return "\n".join(out)
