"""The marked cards (suspended, buried, flagged: the review screen's @, - and f), listed and
cleared after their session: `prep marks`, `prep unmark` and the stats screen.

A bury that has run out (its study day is over) no longer counts: the card is listed only for
its other marks, and `unmark --bury` has nothing to clear.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from prep.engine.decks.deck import one_line_safe
from prep.engine.store import Mark, Store
from prep.engine.study.collection import Cards
from prep.engine.study.present import first_line
from prep.engine.textsafe import quoted
from prep.engine.timeutil import fmt

KINDS = ("suspended", "buried", "flagged")


@dataclass(frozen=True)
class MarkedCard:
    card_id: str
    deck: str  # "" when the card is in no loaded deck and was never reviewed
    prompt: str  # the prompt's first line; "" when the card is in no loaded deck
    suspended: bool
    buried_until: datetime | None  # None: not buried (or the bury ran out)
    flagged: bool

    @property
    def kinds(self) -> list[str]:
        on = (self.suspended, self.buried_until is not None, self.flagged)
        return [k for k, yes in zip(KINDS, on, strict=True) if yes]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.card_id,
            "deck": self.deck,
            "prompt": self.prompt,
            "suspended": self.suspended,
            "buried_until": fmt(self.buried_until),
            "flagged": self.flagged,
        }


def in_force(mark: Mark, now: datetime) -> Mark:
    """``mark`` without a bury that ran out by ``now``."""
    if mark.buried_until is not None and mark.buried_until <= now:
        return Mark(mark.suspended, None, mark.flagged)
    return mark


def marked_cards(store: Store, coll: Cards, now: datetime) -> list[MarkedCard]:
    """Every card suspended, buried (until later than ``now``) or flagged, in id order."""
    out = []
    for cid, stored in store.marks().items():
        mark = in_force(stored, now)
        if mark == Mark():
            continue
        card = coll.get(cid)
        if card is not None:
            deck, prompt = card.deck, one_line_safe(first_line(card.prompt))
        else:
            state = store.card(cid)
            deck, prompt = (state.deck or "") if state is not None else "", ""
        out.append(MarkedCard(cid, deck, prompt, mark.suspended, mark.buried_until, mark.flagged))
    return out


class UnknownCard(ValueError):
    def __init__(self, card_id: str) -> None:
        self.card_id = card_id
        super().__init__(
            f"no card {quoted(card_id)} in the decks or among the marked cards (see `prep marks`)"
        )


def unmark(
    store: Store,
    coll: Cards,
    card_ids: Iterable[str],
    now: datetime,
    kinds: Iterable[str] = KINDS,
) -> list[tuple[str, list[str]]]:
    """Clear the ``kinds`` of marks (of KINDS) of each card, in one transaction; returns each
    card with the marks it lost (none: it had none of them). An id that is neither a card of
    the decks nor marked raises UnknownCard before anything changes."""
    kinds = set(kinds)
    ids = list(dict.fromkeys(card_ids))
    marks = store.marks()
    for cid in ids:
        if cid not in marks and cid not in coll:
            raise UnknownCard(cid)
    done = []
    with store.transaction():
        for cid in ids:
            before = marks.get(cid, Mark())
            live = in_force(before, now)
            after = Mark(
                suspended=live.suspended and "suspended" not in kinds,
                buried_until=None if "buried" in kinds else live.buried_until,
                flagged=live.flagged and "flagged" not in kinds,
            )
            cleared = [
                k
                for k, was, now_on in (
                    ("suspended", live.suspended, after.suspended),
                    ("buried", live.buried_until is not None, after.buried_until is not None),
                    ("flagged", live.flagged, after.flagged),
                )
                if was and not now_on
            ]
            if after != before:
                store.set_mark(cid, after)
            done.append((cid, cleared))
    return done
