"""What went wrong before the app could start: deck errors (as `prep check` prints them) or a
progress database that cannot be opened. r reloads after a fix; q quits."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Header

from prep.engine.study.collection import Cards
from prep.engine.study.present import count
from prep.tui.base import PrepScreen
from prep.tui.widgets.footer import Footer
from prep.tui.widgets.text import Static


class ErrorScreen(PrepScreen):
    DEFAULT_CSS = """
    ErrorScreen #error-title {
        padding: 1 2;
        color: $error;
    }

    ErrorScreen #error-list {
        padding: 0 2;
    }
    """
    BINDINGS = [
        Binding("r", "app.reload", "Reload", tooltip="Fix the problem, then reload"),
        Binding(
            "enter", "continue", "Continue anyway", tooltip="Continue without the broken cards"
        ),
    ]

    def __init__(self, title: str, lines: list[str], *, can_continue: bool) -> None:
        super().__init__()
        self.title_text = title
        self.lines = lines
        self.can_continue = can_continue

    @classmethod
    def deck_errors(cls, collection: Cards) -> ErrorScreen:
        n = len(collection.errors)
        title = (
            f"{count(n, 'error')} in the decks (what `prep check` reports). "
            "Fix them and press r to reload, or q to quit."
        )
        if collection.cards:
            title += f" Enter continues with the {count(len(collection.cards), 'valid card')}."
        return cls(title, [str(e) for e in collection.errors], can_continue=bool(collection.cards))

    @classmethod
    def database(cls, message: str, kind: str = "other") -> ErrorScreen:
        """What went wrong opening the database (``kind`` from StoreError) and what to do."""
        todo = {
            "read-only": "It is read-only, so nothing could be saved: make the file and its "
            "folder writable (or start prep with --db PATH for another file), then press r "
            "to retry; q quits.",
            "busy": "Another prep is writing to it: wait a moment and press r to retry; q quits.",
            "space": "There is not enough free space to upgrade it (and keep a backup copy); "
            "nothing was changed. Free the space the line below names, then press r to retry; "
            "q quits.",
            "damaged": "It is damaged: restore it from a backup or a `prep export` file (or "
            "start prep with --db PATH for a new one); q quits.",
        }.get(kind, "Fix what the line below says, then press r to retry; q quits.")
        return cls(f"The progress database cannot be opened. {todo}", [message], can_continue=False)

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text(self.title_text, style="bold"), id="error-title")
        with VerticalScroll(id="error-list"):
            yield Static(Text("\n".join(self.lines)), id="error-lines")
        yield Footer()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "continue":
            return self.can_continue
        return True

    def action_continue(self) -> None:
        if self.can_continue:
            self.prep.boot(ignore_deck_errors=True)
