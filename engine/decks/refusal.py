"""What the deck reader and the YAML loader share: the depth past which a file is not a deck,
the refusal the loader raises at a line, and how a message is kept to one line.

Its own module so that deckyaml.py (which imports PyYAML) and deck.py (which imports
deckyaml lazily, only when a file is parsed) both depend on it and not on each other.
"""

from __future__ import annotations

# Decks nest four levels (file > cards > card > list); deeper structure is not a deck.
MAX_DEPTH = 32


class Refused(Exception):
    """The YAML loader refuses the file at ``line`` (the reader reports FILE:LINE: message)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def one_line(text: str, limit: int = 160) -> str:
    """``text`` with its whitespace runs as single spaces, cut to ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
