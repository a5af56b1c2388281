"""How a count and its noun are written (``1 review``, ``2 reviews``): one helper for every
room (the decks may not import the study loop's present.py, which re-exports it)."""

from __future__ import annotations


def count(n: int, noun: str, plural: str | None = None, *, grouped: bool = False) -> str:
    """``1 day``, ``2 days``, ``0 reviews`` (``plural`` for irregular nouns; ``grouped``:
    the number with thousands separators, ``40,000 cards``)."""
    number = f"{n:,}" if grouped else str(n)
    return f"{number} {noun if n == 1 else plural or noun + 's'}"
