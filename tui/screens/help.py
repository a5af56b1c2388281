"""Help (`?`): every key on every screen, read from the screens' own BINDINGS so it stays true."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


def _sections() -> list[tuple[str, list[Binding]]]:
    from prep.tui.app import PrepApp
    from prep.tui.screens.cram import CramScreen
    from prep.tui.screens.demo import DemoScreen
    from prep.tui.screens.demos import DemoListScreen
    from prep.tui.screens.errors import ErrorScreen
    from prep.tui.screens.home import HomeScreen
    from prep.tui.screens.mock import MockScreen
    from prep.tui.screens.review import ReviewScreen
    from prep.tui.screens.stats import StatsScreen
    from prep.tui.screens.summary import SummaryScreen

    def bindings(cls: type) -> list[Binding]:
        return [b for b in cls.BINDINGS if isinstance(b, Binding)]

    return [
        ("Everywhere", bindings(PrepApp)),
        ("Home", bindings(HomeScreen)),
        ("Review", bindings(ReviewScreen)),
        ("End of session", bindings(SummaryScreen)),
        ("Demo", bindings(DemoScreen)),
        ("Demo list", bindings(DemoListScreen)),
        ("Stats", bindings(StatsScreen)),
        ("Cram", bindings(CramScreen)),
        ("Mock interview", bindings(MockScreen)),
        ("Deck or database errors", bindings(ErrorScreen)),
    ]


def key_label(binding: Binding) -> str:
    names = {"question_mark": "?", "space": "space", "enter": "Enter", "escape": "Esc"}
    key = binding.key
    if binding.key_display and binding.action.startswith("pick"):
        return binding.key_display
    return names.get(key, key.replace("ctrl+", "Ctrl+"))


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape", "close", "Close"),
        Binding("question_mark", "close", "Close"),
        Binding("q", "close", "Close"),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(self.keys_table(), id="help-keys")

    def keys_table(self) -> Table:
        table = Table.grid(padding=(0, 2))
        table.add_column(justify="right", style="bold", no_wrap=True)
        table.add_column()
        title = Text("prep — every key", style="bold")
        table.add_row("", title)
        for section, bindings in _sections():
            table.add_row("", "")
            table.add_row("", Text(section, style="bold underline"))
            seen: set[tuple[str, str]] = set()
            for binding in bindings:
                if binding.action.startswith("pick") and binding.key != "a":
                    continue  # a-d is one row
                label = key_label(binding)
                what = binding.tooltip or binding.description
                if binding.action.startswith("pick"):
                    what = "Pick a choice (choice and red-flag cards, before the answer)"
                if (label, what) in seen:
                    continue
                seen.add((label, what))
                table.add_row(label, what)
            if section == "Everywhere":
                table.add_row("↑↓", "Move in a list; scroll a long card or page")
                table.add_row("PgUp PgDn", "Scroll a page at a time")
        table.add_row("", "")
        table.add_row("", Text("Esc, ? or q closes this.", style="dim"))
        return table

    def action_close(self) -> None:
        self.dismiss()
