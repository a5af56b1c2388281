"""A yes/no question as a modal: ``push_screen(Confirm("Leave?"), callback)`` gets True or False."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen

from prep.tui.widgets.footer import Footer
from prep.tui.widgets.text import Static


class Confirm(ModalScreen[bool]):
    DEFAULT_CSS = """
    Confirm {
        align: center middle;
    }
    Confirm #confirm-box {
        width: 64;
        max-width: 95%;
        height: auto;
        border: round $warning;
        background: $surface;
        padding: 1 2;
    }
    Confirm #confirm-keys {
        color: $text-muted;
        margin-top: 1;
    }
    """

    BINDINGS = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n", "answer(False)", "No"),
        Binding("escape", "answer(False)", "No", show=False),
        # (a modal screen holds back the app's keys: ? opens help here too, at this section;
        # Esc there comes back to the question, still asked)
        Binding("question_mark", "app.help", "Help", tooltip="Every key"),
        Binding("f1", "app.help", "Help", show=False),
        # (and q quits from here too, as help says it does from anywhere; every rating is saved)
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self, question: str, yes: str = "y  yes", no: str = "n or Esc  no") -> None:
        super().__init__()
        self.question = question
        self.keys = f"{yes}    {no}    ?  help    q  quit"

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(self.question, id="confirm-question")
            yield Static(self.keys, id="confirm-keys")
        # its own keys, not those of the screen below (held back here: Reveal, Hint...)
        yield Footer()

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
