"""A schema upgrade's progress, as the command line shows it (the app has its own screen,
tui/screens/upgrade.py): one line on stderr, updated in place on a terminal, a plain line now
and then when stderr is a file or a pipe, and nothing at all for an upgrade that is over
within SHOW_AFTER_S (a fresh database, a small one).

    prep: upgrading the progress database (schema 3 → 7): 41% of 1,000,000 reviews, ~20 s left
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

from prep.engine.store.schema import Upgrade
from prep.engine.textsafe import count

if TYPE_CHECKING:
    import os

    from prep.engine.store import Store, StoreError

SHOW_AFTER_S = 1.0  # an upgrade shorter than this shows nothing
FILL_SHOW_AFTER_S = 1.0  # the same for the deck cache's fill (FillLine)
PLAIN_EVERY_S = 5.0  # not a terminal: at most a line this often (and the last one)
TTY_EVERY_S = 0.1  # a terminal: the line is redrawn at most this often


def describe(u: Upgrade, arrow: str = "→") -> str:
    """The line's text (without ``prep: ``), e.g. ``upgrading the progress database (schema
    3 → 7): 41% of 1,000,000 reviews, ~20 s left``."""
    versions = f"schema {u.from_version} {arrow} {u.to_version}"
    if u.done:
        what = f", {count(u.reviews, 'review', grouped=True)}" if u.reviews else ""
        return f"upgraded the progress database ({versions}{what}) in {_seconds(u.elapsed)}"
    text = f"upgrading the progress database ({versions}): {int(u.fraction * 100)}%"
    if u.reviews:
        text += f" of {count(u.reviews, 'review', grouped=True)}"
    if u.remaining is not None:
        text += f", ~{_seconds(u.remaining)} left"
    return text


def _seconds(s: float) -> str:
    if s < 90:
        return f"{max(1, round(s))} s"
    return f"{round(s / 60)} min"


class UpgradeLine:
    """Store.open's ``progress`` for a command: renders each Upgrade on ``stream``."""

    def __init__(self, stream: TextIO | None = None, *, after: float | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.after = SHOW_AFTER_S if after is None else after
        self.tty = _isatty(self.stream)
        self.shown = False
        self._open = False  # a line drawn on the terminal and not yet ended
        self._last = 0.0  # monotonic time of the last line drawn
        self._arrow = "→" if _can_encode(self.stream, "→") else "->"

    def __call__(self, u: Upgrade) -> None:
        if not self.shown and (u.done or u.elapsed < self.after):
            return  # over quickly: not worth a line
        now = time.monotonic()
        every = TTY_EVERY_S if self.tty else PLAIN_EVERY_S
        if self.shown and not u.done and now - self._last < every:
            return
        self.shown, self._last = True, now
        line = "prep: " + self.text(u)
        if self.tty:
            # \r and erase the line: the same line, redrawn; a newline once it is done
            self._write("\r\x1b[K" + line + ("\n" if u.done else ""))
            self._open = not u.done
        else:
            self._write(line + "\n")

    def text(self, u: Any) -> str:
        return describe(u, self._arrow)

    def say(self, text: str) -> None:
        """One line of its own (what happens before the upgrade: its backup copy)."""
        self.close()
        self._write(f"prep: {text}\n")

    def close(self) -> None:
        """End a line left open on a terminal (the upgrade stopped short: an error, Ctrl-C),
        so that what is printed next starts a line of its own."""
        if self._open:
            self._open = False
            self._write("\n")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass  # a closed or broken stderr: the upgrade itself goes on


class FillLine(UpgradeLine):
    """deckcache.load's ``progress`` for a command: the first open of a large collection (or
    a big deck file changed) says what it is reading, as an upgrade does."""

    def __init__(self, stream: TextIO | None = None, *, after: float | None = None) -> None:
        super().__init__(stream, after=FILL_SHOW_AFTER_S if after is None else after)

    def text(self, u: Any) -> str:
        from prep.engine.decks.fill import describe as describe_fill

        return describe_fill(u)


def open_store(db: str | os.PathLike | None, **kwargs: Any) -> Store:
    """Store.open for a command: an older database's upgrade (its backup copy first, which
    Store.open makes for every caller) shows as lines on stderr, and the line is ended even
    when the open fails."""
    from prep.engine.store import Store

    line = UpgradeLine()
    try:
        return Store.open(db, progress=line, say=line.say, **kwargs)
    finally:
        line.close()


def upgrade_room(db: str | os.PathLike | None, from_version: int) -> StoreError | None:
    """Why the upgrade of ``db`` and its backup copy would not fit (a StoreError of kind
    "space", one line), or None (also when the free space cannot be asked). The app asks
    before it shows the upgrade's screen; Store.open checks again (the same function) as it
    upgrades."""
    from prep.engine.store import StoreError, resolve_db_path
    from prep.engine.store.backup import SpaceError, check_upgrade_space

    try:
        check_upgrade_space(resolve_db_path(db), from_version)
    except SpaceError as exc:
        return StoreError(str(exc), kind="space")
    except OSError:
        return None
    return None


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def _can_encode(stream: TextIO, text: str) -> bool:
    encoding = getattr(stream, "encoding", None)
    if encoding is None:
        return True  # text kept as text (io.StringIO)
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True
