"""`prep cram`: the 60-second bullets of each main card, for the way to the call.

A main card is a card with ``bullets`` that is not a follow-up. The sheet is grouped by deck in
deck order; the TUI's cram screen renders the same data. The day before an interview and the
day itself (engine/study/plan.py) it is one list instead, weakest first: the lowest predicted
recall at the interview (FSRS's forgetting curve) on top.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING

from prep.engine.decks.deck import Card
from prep.engine.study import plan as plan_mod
from prep.engine.study.collection import Cards
from prep.engine.study.present import first_line
from prep.engine.textsafe import quoted

if TYPE_CHECKING:
    from prep.engine.store import Store


@dataclass(frozen=True)
class CramItem:
    card_id: str
    prompt: str  # the first line of the prompt
    bullets: tuple[str, ...]
    tags: tuple[str, ...] = ()
    demos: tuple[str, ...] = ()
    recall: float | None = None  # predicted recall at the interview (weakest-first sheets)


@dataclass
class CramDeck:
    name: str
    title: str
    items: list[CramItem] = field(default_factory=list)


class UnknownDeck(ValueError):
    def __init__(self, deck: str, decks: list[str]) -> None:
        self.deck = deck
        self.decks = decks
        super().__init__(f"no deck named {quoted(deck)} (decks: {', '.join(decks) or 'none'})")


def is_main(card: Card) -> bool:
    return bool(card.bullets) and card.kind != "follow-up" and card.parent is None


def cram_sheet(collection: Cards, deck: str | None = None) -> list[CramDeck]:
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


def weakest_first(sheet: list[CramDeck], store: Store, now: datetime) -> list[CramDeck]:
    """The sheet as one list, lowest predicted recall at the interview first, on the day
    before the interview and the day itself; the sheet unchanged on any other day."""
    plan = plan_mod.Plan.of(store.settings(), now)
    if plan is None or not plan.cramming or not sheet:
        return sheet
    items = [item for deck in sheet for item in deck.items]
    states = store.cards(item.card_id for item in items)
    recall = {item.card_id: plan.retrievability(states.get(item.card_id)) for item in items}
    ranked = sorted(items, key=lambda item: recall[item.card_id])  # stable: deck order ties
    title = f"Weakest first: predicted recall at the interview, {plan_mod.short_date(plan.date)}"
    name = sheet[0].name if len(sheet) == 1 else ""
    return [CramDeck(name, title, [replace(i, recall=recall[i.card_id]) for i in ranked])]


def recall_text(item: CramItem) -> str:
    """``[62% on the day] `` before a prompt of a weakest-first sheet, else nothing."""
    return "" if item.recall is None else f"[{100 * item.recall:.0f}% on the day] "
