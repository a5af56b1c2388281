"""Study more (Anki's custom study): more new cards today, or review ahead.

``StudyMore(deck)`` is a modal that returns "new" (today's new-card limit was raised by
``EXTRA_NEW``), "ahead" (the caller starts a review-ahead session) or None (cancelled).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen

from prep.tui.widgets.text import Static

EXTRA_NEW = 10  # the new cards one "study more" adds to today's limit
AHEAD_DAYS = 7  # review ahead: cards due within this many days (learning ones too)


class StudyMore(ModalScreen[str | None]):
    DEFAULT_CSS = """
    StudyMore {
        align: center middle;
    }
    StudyMore #more-box {
        width: 72;
        max-width: 95%;
        height: auto;
        border: round $primary;
        background: $surface;
        padding: 1 2;
    }
    """

    BINDINGS = [
        Binding("1", "choose('new')", f"+{EXTRA_NEW} new", tooltip="More new cards today"),
        Binding("2", "choose('ahead')", "Review ahead", tooltip="Cards due this week, now"),
        Binding("escape", "choose('')", "Cancel"),
        # (a modal screen holds back the app's keys: ? opens help here too, at this section)
        Binding("question_mark", "app.help", "Help", tooltip="Every key"),
    ]

    def __init__(self, new_waiting: int, ahead: int) -> None:
        super().__init__()
        self.new_waiting = new_waiting
        self.ahead = ahead

    def compose(self) -> ComposeResult:
        text = Text.assemble(("Study more\n\n", "bold"))
        # an option with nothing to give is drawn dim (choosing it says so)
        options = (
            (
                "1",
                f"{EXTRA_NEW} more new cards today",
                f"{self.new_waiting} unseen",
                self.new_waiting,
            ),
            (
                "2",
                f"Review ahead: cards due in the next {AHEAD_DAYS} days",
                str(self.ahead),
                self.ahead,
            ),
        )
        for key, label, detail, n in options:
            text.append(key, style="bold" if n else "dim")
            text.append(f"  {label} ", style="" if n else "dim")
            text.append(f"({detail})\n", style="dim")
        text.append("\n")
        text.append("Esc cancels. Reviewing ahead is allowed; FSRS counts the shorter wait.", "dim")
        with Vertical(id="more-box"):
            yield Static(text, id="more-text")

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice or None)
