"""How far the deck cache's fill has got: what `deckcache.load(progress=...)` reports while it
parses deck files that changed (the first open of a large collection parses them all), so
that the line mode and the app show progress instead of a silent wait.

Parsing is done a file at a time; `fraction` counts the bytes of the files to parse that are
done, and a stage names what happens now (parsing a file, storing its cards, indexing them after
a bulk fill, the checks across decks, reconciling progress with them).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from prep.engine.textsafe import count

PARSE, STORE, INDEX, CHECK, RECONCILE, DONE = (
    "parse",
    "store",
    "index",
    "check",
    "reconcile",
    "done",
)


@dataclass
class Fill:
    """How far a fill of the deck cache is (what its progress line shows)."""

    files_total: int  # files to parse (changed or never seen)
    bytes_total: int  # their size
    files_done: int = 0
    bytes_done: int = 0
    cards: int = 0  # cards parsed so far
    stage: str = PARSE
    file: str = ""  # the file being parsed (as shown to the user)
    started: float = field(default_factory=time.monotonic)
    # the checks across files and the reconciliation, done file by file: how far they are
    step: int = 0
    steps: int = 0

    @property
    def done(self) -> bool:
        return self.stage == DONE

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def fraction(self) -> float:
        if self.done:
            return 1.0
        if self.bytes_total <= 0:
            return 0.0
        return min(1.0, self.bytes_done / self.bytes_total)

    @property
    def overall(self) -> float:
        """How far the whole load is (a progress bar's): the parse by its bytes, then the
        checks across files and the reconciliation by their steps; never goes back."""
        if self.done:
            return 1.0
        parse = 0.8 if self.bytes_total > 0 else 0.0  # (0: nothing to parse, a re-check)
        if self.stage in (PARSE, STORE):
            return parse * self.fraction
        if self.stage == INDEX:
            return parse
        part = self.step / self.steps if self.steps else 0.0
        half = (1.0 - parse) / 2
        return parse + (half * part if self.stage == CHECK else half + half * part)

    @property
    def remaining(self) -> float | None:
        """Seconds left, from the bytes done so far (None until a file is done)."""
        if self.bytes_done <= 0 or self.done:
            return None
        return self.elapsed * (self.bytes_total - self.bytes_done) / self.bytes_done


Progress = Callable[[Fill], None]


def describe(fill: Fill) -> str:
    """One line, e.g. ``reading the decks into the cache: parsing big.yaml (file 1 of 3,
    40% of 24 MB), 40,000 cards so far, ~6 s left``."""
    if fill.done and not fill.files_total:
        return f"brought the deck cache up to date in {_seconds(fill.elapsed)}"
    if fill.done:
        return (
            f"read {count(fill.cards, 'card', grouped=True)} from "
            f"{count(fill.files_total, 'deck file')} into the cache in {_seconds(fill.elapsed)}"
        )
    if fill.files_total:
        head = "reading the decks into the cache (once; later starts skip this)"
    else:  # nothing to parse: the checks or the reconciliation are redone (an upgrade)
        head = "bringing the deck cache up to date (once after an upgrade or a change)"
    if fill.stage == PARSE:
        what = (
            f"parsing {fill.file} (file {fill.files_done + 1} of {fill.files_total}, "
            f"{int(fill.fraction * 100)}% of {_size(fill.bytes_total)})"
        )
    elif fill.stage == STORE:
        what = f"storing the cards of {fill.file}"
    elif fill.stage == INDEX:
        what = "indexing the cards' ids and tags"
    elif fill.stage == CHECK:
        what = "checking ids, parents and demos across the decks" + _checked(fill)
    else:
        what = "matching your progress to the cards" + _matched(fill)
    text = f"{head}: {what}"
    if fill.cards:
        text += f", {count(fill.cards, 'card', grouped=True)} so far"
    if fill.remaining is not None and fill.stage == PARSE:
        text += f", ~{_seconds(fill.remaining)} left"
    return text


def _checked(fill: Fill) -> str:
    """The checks' steps: each file's cards read, then all of them compared."""
    files = fill.steps - 1
    if files <= 0:
        return ""
    return f" (file {fill.step + 1} of {files})" if fill.step < files else " (comparing them)"


def _matched(fill: Fill) -> str:
    """The reconciliation's steps: the cards no deck holds now, then file by file."""
    files = fill.steps - 1
    if files < 0:
        return ""
    if fill.step == 0:
        return " (finding the cards no deck holds now)"
    return f" (file {min(fill.step, files)} of {files})"


def _size(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.0f} MB"
    return f"{max(1, n // 1000)} kB"


def _seconds(s: float) -> str:
    if s < 90:
        return f"{max(1, round(s))} s"
    return f"{round(s / 60)} min"
