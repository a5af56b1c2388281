"""The rules of merged cards that the store applies itself (engine/decks/aliases.py has the
rest): which alias goes to which kept card, and whose state a merged card keeps. Pure
functions, below the decks so that the store can use them without importing a deck module."""

from __future__ import annotations

from collections.abc import Container, Iterable
from datetime import datetime
from typing import Any


def alias_map(entries: Iterable[tuple[str, Iterable[str]]], live: Container[str]) -> dict[str, str]:
    """{alias: kept id} of (card id, aliases) ``entries``: the first claim of each alias
    that is not a live id (the others are errors, see ``alias_errors``)."""
    out: dict[str, str] = {}
    for card_id, aliases in entries:
        for alias in aliases:
            if alias not in live and alias not in out:
                out[alias] = card_id
    return out


def _later(a: Any, b: Any) -> bool:
    """Whether last review ``a`` is later than ``b`` (None: never reviewed)."""
    if a is None:
        return False
    if b is None:
        return True
    if isinstance(a, str) or isinstance(b, str):
        return str(a) > str(b)  # the export's fixed-width UTC text sorts as time does
    assert isinstance(a, datetime) and isinstance(b, datetime)
    return a > b


def keeps_alias_state(alias_last: Any, kept_last: Any) -> bool:
    """When a merged-away card and the card that kept it both have a state, the one
    reviewed last is the card's state (the reviews of both stay in the log)."""
    return _later(alias_last, kept_last)
