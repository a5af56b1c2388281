"""Study more (Anki's custom study): more new cards today, or review ahead.

``StudyMore(read)`` is a modal that returns "new" (the caller raises today's new-card limit by
``EXTRA_NEW``), "ahead" (the caller starts a review-ahead session over ``ahead``) or None
(cancelled). ``read()`` gives today's limits and the review-ahead list; it is read when the
dialog opens and again when the study day rolls over (4 am) while it is open, so its counts
and what "2" serves are the new day's, as the screens under it.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen

from prep.engine.store import StoreError
from prep.engine.study.session import Limits
from prep.tui.base import PrepScreen
from prep.tui.widgets.footer import Footer
from prep.tui.widgets.text import Static

EXTRA_NEW = 10  # the new cards one "study more" adds to today's limit
AHEAD_DAYS = 7  # review ahead: cards due within this many days (learning ones too)


class StudyMore(ModalScreen[str | None], PrepScreen[str | None]):
    """(A PrepScreen too: the app's day watch tells it of the rollover, as the screens under
    it. ModalScreen first: Textual takes a class's default CSS from its first base only, and
    a modal's translucent background, over the screen it was opened from, is ModalScreen's.)"""

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
        # a modal screen holds back the app's keys: q quits from here too, as everywhere
        Binding("q", "app.quit", "Quit"),
        # (a modal screen holds back the app's keys: ? opens help here too, at this section)
        Binding("question_mark", "app.help", "Help", tooltip="Every key"),
        Binding("f1", "app.help", "Help", show=False),
    ]

    def __init__(self, read: Callable[[], tuple[Limits, list[str]]]) -> None:
        super().__init__()
        self._read = read
        self.limits, self.ahead = read()  # (a StoreError: the caller says it, nothing shown)

    def compose(self) -> ComposeResult:
        with Vertical(id="more-box"):
            yield Static(self.text(), id="more-text")
        yield Footer()  # its own keys, not those of the screen below (home's: held back here)

    def study_day_changed(self) -> None:
        """The new day's limits and review-ahead list (yesterday's list held cards due today,
        which today's session serves)."""
        try:
            self.limits, self.ahead = self._read()
        except StoreError as exc:
            self.notify(f"Cannot read progress: {exc}", severity="error", timeout=8)
            return
        for shown in self.query("#more-text").results(Static):  # (none yet: composed with it)
            shown.update(self.text())

    def text(self) -> Text:
        text = Text.assemble(("Study more\n\n", "bold"))
        new_waiting, ahead = self.limits.new_waiting, len(self.ahead)
        # an option with nothing to give is drawn dim (choosing it says so)
        options = (
            ("1", f"{EXTRA_NEW} more new cards today", f"{new_waiting} unseen", new_waiting),
            ("2", f"Review ahead: cards due in the next {AHEAD_DAYS} days", str(ahead), ahead),
        )
        for key, label, detail, n in options:
            text.append(key, style="bold" if n else "dim")
            text.append(f"  {label} ", style="" if n else "dim")
            text.append(f"({detail})\n", style="dim")
        text.append("\n")
        text.append("Esc cancels. Reviewing ahead is allowed; FSRS counts the shorter wait.", "dim")
        return text

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice or None)
