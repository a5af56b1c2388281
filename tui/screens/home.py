"""Home: the decks with what today's session would serve, the streak, and how to start."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from prep.engine.storage import StoreError


class DeckTable(DataTable):
    """The deck list; its Enter is listed in the footer (a plain DataTable hides it)."""

    BINDINGS = [
        Binding("enter", "select_cursor", "Start", tooltip="Start the highlighted deck's session")
    ]


class HomeScreen(Screen):
    BINDINGS = [
        Binding("enter", "start", "Start", tooltip="Start today's session on the highlighted deck"),
        Binding("s", "app.stats", "Stats", tooltip="Statistics"),
        Binding("d", "app.demos", "Demos", tooltip="Every demo; run one"),
        Binding("c", "app.cram", "Cram", tooltip="Cram: the 60-second bullets"),
        Binding("m", "app.mock", "Mock", tooltip="Mock interview"),
        Binding("r", "app.reload", "Reload", show=False, tooltip="Read the deck files again"),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="today")
        table: DataTable = DeckTable(id="decks", cursor_type="row", zebra_stripes=False)
        table.add_column("Deck", key="deck")
        table.add_column("New", key="new")
        table.add_column("Learning", key="learning")
        table.add_column("Due", key="due")
        table.add_column("Cards", key="cards")
        yield table
        yield Static(id="howto")
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_counts()
        # the counts are coloured from the theme: redraw them when it changes
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.refresh_counts())

    def on_screen_resume(self) -> None:
        self.refresh_counts()

    def on_resize(self) -> None:
        self.refresh_counts()

    def refresh_counts(self) -> None:
        table = self.query_one("#decks", DataTable)
        try:
            rows = self.app.deck_counts()
            today = self.app.today()
        except StoreError as exc:
            self.query_one("#today", Static).update(
                Text(f"Cannot read progress: {exc}", style="bold red")
            )
            return
        table.clear()
        selected = 0
        for i, row in enumerate(rows):
            label = Text(row.title, style="bold" if i == 0 else "")
            if row.name:
                label.append(f"  {row.name}", style="dim")
            # keep the count columns on screen at 80 columns: the deck label gives way
            label.truncate(max(16, self.app.size.width - 44), overflow="ellipsis")
            theme = self.app.current_theme
            table.add_row(
                label,
                _count(row.new, theme.primary),
                _count(row.learning, theme.warning or theme.primary),
                _count(row.due, theme.success or theme.primary),
                Text(str(row.cards), style="dim"),
                key=row.name,
            )
            if row.name and row.name == self.app.selected_deck:
                selected = i
        table.move_cursor(row=selected)
        total = rows[0] if rows else None
        streak = today["streak"]
        line = Text()
        if total is None or total.total == 0:
            line.append("Nothing to review right now.", style="bold")
        else:
            line.append(f"{total.total} to review", style="bold")
            line.append(f": {total.due} due, {total.learning} learning, {total.new} new")
        line.append(f" · streak {streak} day{'s' if streak != 1 else ''}")
        line.append(f" · {today['reviews']} review{'s' if today['reviews'] != 1 else ''} today")
        self.query_one("#today", Static).update(line)
        howto = Text.assemble(
            ("↑↓", "bold"),
            " choose a deck, ",
            ("Enter", "bold"),
            " starts its session. ",
            ("?", "bold"),
            " lists every key.",
        )
        self.query_one("#howto", Static).update(howto)
        table.focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.app.action_start(event.row_key.value or "")

    def action_start(self) -> None:
        table = self.query_one("#decks", DataTable)
        deck = ""
        if table.row_count:
            deck = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value or ""
        self.app.action_start(deck)


def _count(n: int, color: str) -> Text:
    if n == 0:
        return Text("0", style="dim")
    return Text(str(n), style=f"bold {color}")
