"""A long load of the decks: the first open of a large collection (its deck files parsed
into the deck cache), or the checks across files and the reconciliation of progress redone
over every card (after an upgrade or an edit). It runs in a thread, on its own connection
(PrepApp.boot), while this screen says what it does, how far it is and how long is left. q
stops it: each file's parse is stored as it is done, the checks and the reconciliation are
one transaction each, so the next start goes on from there."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import ProgressBar

from prep.engine.decks.fill import Fill, describe
from prep.tui.base import PrepScreen
from prep.tui.widgets.footer import Footer
from prep.tui.widgets.text import Static


class FillScreen(PrepScreen):
    DEFAULT_CSS = """
    FillScreen #fill-box {
        padding: 1 2;
        height: auto;
    }
    """

    class Progress(Message):
        """Posted from the filling thread (post_message is thread-safe)."""

        def __init__(self, fill: Fill) -> None:
            super().__init__()
            self.fill = fill
            self.line = describe(fill)  # the text as it was when posted
            self.fraction = fill.fraction
            self.overall = fill.overall  # (the bar: the parse, then the checks and matching)

    class Note(Message):
        """A line from the filling thread while it cannot go on (another prep writing)."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, pending: Fill) -> None:
        super().__init__()
        self.pending = pending
        self.line = ""

    def compose(self) -> ComposeResult:
        p = self.pending  # (no Header: a quick fill replaces this screen while it mounts)
        if p.files_total:
            title = (
                f"Reading {p.files_total} deck file{'s' if p.files_total != 1 else ''} "
                "into the deck cache before the first card. This happens once (and again "
                "only for a file that changes); q stops it, and the next start goes on "
                "from the files already read."
            )
        else:
            title = (
                "Checking the decks across files and matching your progress to their cards "
                "before the first card (after an upgrade of prep or of the database, or a "
                "change of the decks). Nothing is lost if it is stopped (q): the next start "
                "does it again."
            )
        with Vertical(id="fill-box"):
            yield Static(Text(title), id="fill-title")
            yield ProgressBar(total=100, show_eta=False, id="fill-bar")
            yield Static("", id="fill-line")
        yield Footer()

    def on_fill_screen_progress(self, message: Progress) -> None:
        self.query_one("#fill-bar", ProgressBar).update(progress=int(message.overall * 100))
        self.line = message.line[0].upper() + message.line[1:]
        self.query_one("#fill-line", Static).update(Text(self.line))

    def on_fill_screen_note(self, message: Note) -> None:
        self.line = message.text
        self.query_one("#fill-line", Static).update(Text(self.line))
