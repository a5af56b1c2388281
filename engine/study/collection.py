"""The cards the study loop reads: one protocol, which the session, the queue, stats, mock and
cram are written against.

One class answers it: the deck cache's ``CachedCollection`` (engine/decks/collection.py: cards
built on demand, unseen cards and counts asked of SQL beside progress). Every source of decks
feeds that cache: the deck files (deckcache.load, what every front end opens; a private cache
for a database that cannot be written now) and decks parsed in memory (deckcache.from_parsed:
tests, benchmarks). `prep check` reads the parse itself (checks.parse_decks gives
deck.ParsedDecks), which is not a collection of this protocol.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any, Protocol

from prep.engine.decks.deck import Card, DeckError, DeckInfo

if TYPE_CHECKING:
    from prep.engine.store import Store

# (position, id, deck, kind, parent, parent seen) of one card of the new-card rotation
Unseen = tuple[Any, str, str, str, str | None, bool]


class Cards(Protocol):
    """Every card of the loaded decks, in deck order, and what the study loop asks of them."""

    decks: dict[str, DeckInfo]
    errors: list[DeckError]
    warnings: list[DeckError]

    @property
    def cards(self) -> list[Card]: ...
    def get(self, card_id: str) -> Card | None: ...
    def content_hash_now(self, card_id: str) -> str | None: ...
    def place(self, card_id: str) -> tuple[str, int] | None: ...
    def __contains__(self, card_id: object) -> bool: ...
    def known(self, card_ids: Iterable[str]) -> list[str]: ...
    def __len__(self) -> int: ...
    def in_deck(self, deck: str | None) -> list[Card]: ...
    def children(self, card_id: str) -> list[Card]: ...
    def cards_for_demo(self, name: str) -> list[Card]: ...
    def ids_for_demo(self, name: str) -> list[str]: ...
    def outline(self) -> Iterator[tuple[str, str, str | None]]: ...
    def deck_sizes(self) -> dict[str, int]: ...
    def unseen(
        self, store: Store, deck: str | None = None, seen: set[str] | None = None
    ) -> Iterator[tuple[str, str, str, str | None, bool]]: ...
    def unseen_by_deck(self, store: Store) -> dict[str, int]: ...
    def new_card_groups(
        self,
        store: Store,
        deck: str | None = None,
        seen: set[str] | None = None,
        among: AbstractSet[str] | None = None,
    ) -> list[Iterator[Unseen]]: ...
    def reconcile(self, store: Store) -> None: ...
    def tag_progress(self, store: Store, mature_days: float) -> dict[str, tuple[int, int, int]]: ...
