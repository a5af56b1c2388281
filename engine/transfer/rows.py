"""The rows of an export's long lists (reviews, demo runs), read again each time they are
iterated: `prep import` checks them all in a first reading and merges them in a second, so
that what it holds grows with the cards of the file (a few hundred bytes each), never with
its reviews (a 250 MB export is almost all reviews).

``Rows`` is the re-readable sequence; ``ReviewIds`` what a first reading keeps of the
reviews to check the file as a whole (every review names a card of the file; no review
twice) without holding them: the first place each card is named, and a hash of each
review's identity (a repeated hash is confirmed by one more reading, exactly).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

Row = dict[str, Any]
Key = tuple[str, str, str | None]


class Rows:
    """A sequence of checked rows that reads them again (from the file) when iterated."""

    def __init__(self, read: Callable[[], Iterator[Row]], n: int) -> None:
        self._read, self._n = read, n
        self.ids: ReviewIds | None = None  # (reviews) gathered by the first reading

    def __iter__(self) -> Iterator[Row]:
        return self._read()

    def __len__(self) -> int:
        return self._n

    def map(self, change: Callable[[Row], Row]) -> Rows:
        mapped = Rows(lambda: (change(r) for r in self._read()), self._n)
        mapped.ids = self.ids
        return mapped


class ReviewIds:
    def __init__(self, key: Callable[[Row], Key]) -> None:
        self.key = key
        self.first: dict[str, int] = {}  # card id -> the first review that names it
        self.hashes: set[int] = set()
        self.repeated: set[int] = set()  # hashes seen twice (the same review, or by chance)
        self.newest: tuple[str, int] | None = None  # the latest reviewed_at, and its first row

    def add(self, i: int, review: Row) -> None:
        self.first.setdefault(review["card_id"], i)
        at = review["reviewed_at"]  # (fixed-width UTC text: ordered as the times are)
        if self.newest is None or at > self.newest[0]:
            self.newest = (at, i)
        h = hash(self.key(review))
        if h in self.hashes:
            self.repeated.add(h)
        self.hashes.add(h)

    def unknown_card(self, cards: set[str]) -> tuple[int, str] | None:
        """The first review (index, card) that names a card not in ``cards``."""
        missing = [(i, cid) for cid, i in self.first.items() if cid not in cards]
        return min(missing) if missing else None

    def repeat(self, reviews: Iterable[Row]) -> tuple[int, Row] | None:
        """The first review that repeats an earlier one (reading ``reviews`` again only when
        two hashes met)."""
        if not self.repeated:
            return None
        seen: set[Key] = set()
        for i, r in enumerate(reviews):
            key = self.key(r)
            if hash(key) in self.repeated:
                if key in seen:
                    return i, r
                seen.add(key)
        return None


def stamp(path: Path) -> tuple[int, int, int, int]:
    """What tells a file changed between two readings (size, times, inode)."""
    info = os.stat(path)
    return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
