"""Help (`?`): every key on every screen, read from the screens' own BINDINGS so it stays true."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.css.query import DOMQuery
from textual.dom import DOMNode
from textual.screen import ModalScreen
from textual.widget import Widget

from prep.tui.widgets.footer import Footer
from prep.tui.widgets.text import Static


def _sections() -> list[tuple[str, str, list[Binding | tuple[str, str]]]]:
    """(title, screen class name, keys) for every section, in order: the app's own keys,
    then each screen the registry gives a section (tui/screens/registry.py). A screen's keys
    are its BINDINGS, then its ``HELP_KEYS``: (key, what) of the keys its widgets or its
    on_key handle (a demo's number in the picker)."""
    from prep.tui.app import PrepApp
    from prep.tui.screens.registry import help_sections

    def keys(cls: type[DOMNode]) -> list[Binding | tuple[str, str]]:
        extra: list[tuple[str, str]] = getattr(cls, "HELP_KEYS", [])
        return [*extra, *(b for b in cls.BINDINGS if isinstance(b, Binding))]

    sections = [("Everywhere", PrepApp.__name__, keys(PrepApp))]
    for spec in help_sections():
        assert spec.help is not None
        sections.append((spec.help, spec.cls, keys(spec.load())))
    return sections


def key_label(binding: Binding) -> str:
    names = {"question_mark": "?", "space": "space", "enter": "Enter", "escape": "Esc"}
    key = binding.key
    if binding.key_display and (binding.action.startswith("pick") or len(binding.key_display) == 1):
        return binding.key_display
    return names.get(key, key.replace("ctrl+", "Ctrl+"))


CONVENTION = "Esc goes back one screen (and closes this); q or ctrl+c quits prep from anywhere."
KEY_WIDTH = 9  # the widest key label ("PgUp PgDn"), so every section's keys line up


class HelpScreen(ModalScreen[None]):
    """Every key, one section per screen; opens scrolled to the section of ``at`` (the class
    name of the screen it was opened from)."""

    DEFAULT_CSS = """
    HelpScreen {
        align: center middle;
    }

    HelpScreen #help {
        width: 90%;
        max-width: 100;
        height: 90%;
        border: round $primary;
        background: $surface;
        padding: 0 1;
    }
    """

    BINDINGS = [
        Binding("escape", "close", "Close"),
        Binding("question_mark", "close", "Close", show=False),
        Binding("f1", "close", "Close", show=False),
        # a modal screen holds back the app's keys: q quits from here too, as everywhere
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self, at: str | None = None) -> None:
        super().__init__()
        self.at = at

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(
                Text.assemble(("prep — every key\n", "bold"), (CONVENTION, "dim")), id="help-top"
            )
            for screen, table in self.tables():
                yield Static(table, id=f"help-{screen}")
        yield Footer()  # its own keys (Esc closes), not those of the screen below

    def tables(self) -> list[tuple[str, Table]]:
        """(screen class name, its keys table) for every section."""
        return [(screen, self.keys_table(title, keys)) for title, screen, keys in _sections()]

    def on_mount(self) -> None:
        sections: Sequence[Widget] | DOMQuery[Widget] = (
            self.query(f"#help-{self.at}") if self.at else []
        )
        if sections:
            self.call_after_refresh(
                self.query_one("#help", VerticalScroll).scroll_to_widget,
                sections[0],
                top=True,
                animate=False,
            )

    def keys_table(self, section: str, bindings: list[Binding | tuple[str, str]]) -> Table:
        table = Table.grid(padding=(0, 2))
        table.add_column(justify="right", style="bold", no_wrap=True, min_width=KEY_WIDTH)
        table.add_column()
        table.add_row("", "")
        table.add_row("", Text(section, style="bold underline"))
        seen: set[tuple[str, str]] = set()
        for binding in bindings:
            if isinstance(binding, tuple):  # (a key the screen's widgets or on_key handle)
                table.add_row(*binding)
                continue
            if binding.action.startswith("pick") and binding.key_display != "a-d":
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
            table.add_row("ctrl+c", "Quit too (copies instead while text is selected)")
            table.add_row("↑↓", "Move in a list; scroll a long card or page")
            table.add_row("PgUp PgDn", "Scroll a page at a time")
        return table

    def action_close(self) -> None:
        self.dismiss()
