"""Every demo, the claim it checks, its last run; Enter runs the highlighted one.

In a narrow terminal the columns give way by priority, never cut mid-word: the name stays
whole, the last run loses its device and year, then keeps only PASS/FAIL, then the Cards
column goes, then the last run's; the line under the table says all of it for the highlighted demo.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Header

from prep.engine.store import StoreError
from prep.tui.base import PrepScreen
from prep.tui.widgets.footer import Footer
from prep.tui.widgets.table import DataTable
from prep.tui.widgets.text import Static


class DemoTable(DataTable):
    """The demo list; its Enter is listed in the footer (a plain DataTable hides it)."""

    BINDINGS = [Binding("enter", "select_cursor", "Run", tooltip="Run the highlighted demo")]


class DemoListScreen(PrepScreen):
    DEFAULT_CSS = """
    DemoListScreen #demos-intro {
        padding: 1 2 0 2;
        color: $text-muted;
    }

    DemoListScreen #demo-table {
        height: 1fr;
        margin: 1 2 0 2;
    }

    DemoListScreen #demo-claim-detail {
        height: auto;
        max-height: 8;
        padding: 0 2;
    }
    """
    BINDINGS = [
        Binding("enter", "run", "Run", tooltip="Run the highlighted demo"),
        Binding("escape", "back", "Back", tooltip="Back"),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="demos-intro")
        yield DemoTable(id="demo-table", cursor_type="row")
        yield Static(id="demo-claim-detail")
        yield Footer()

    def __init__(self) -> None:
        super().__init__()
        self._latest: dict[str, dict] = {}
        self._layout: str | None = None  # the layout the columns were built for

    def on_mount(self) -> None:
        table = self.query_one("#demo-table", DataTable)
        self.query_one("#demos-intro", Static).update(
            "Each demo checks one claim in PyTorch and the contrast that would make it false. "
            "Enter runs the highlighted one."
            if self.prep.demos
            else "No demos are installed."
        )
        self.refresh_rows()
        table.focus()

    def on_screen_resume(self) -> None:
        self.refresh_rows()

    def on_resize(self, event: events.Resize) -> None:
        if self._layout is not None and self._fit() != self._layout:
            self.refresh_rows(read=False)

    def refresh_rows(self, *, read: bool = True) -> None:
        table = self.query_one("#demo-table", DataTable)
        if read:
            self._latest = {}
            if self.prep.store is not None:
                with suppress(StoreError):  # the list still shows; "Last run" stays empty
                    self._latest = self.prep.store.latest_demo_runs()
        row = table.cursor_row
        layout = self._layout = self._fit()
        table.clear(columns=True)
        # each column as wide as its widest cell, given: the table does not widen a column after
        # its rows are drawn, which left rows cut at the old width until the cursor passed
        for label, key, width in self._columns(layout):
            table.add_column(label, key=key, width=width)
        for name in self.prep.demos:
            cells: list[Any] = [name]
            if layout != "name":
                cells.append(last_run(self._latest.get(name), layout))
            if layout in ("full", "short", "mark"):
                cells.append(str(len(self.prep.collection.ids_for_demo(name))))
            table.add_row(*cells, key=name)
        if table.row_count:
            table.move_cursor(row=min(row, table.row_count - 1))

    def _columns(self, layout: str) -> list[tuple[str, str, int]]:
        """(label, key, width) of each column in ``layout``, as wide as its widest cell."""
        names = max((cell_len(n) for n in self.prep.demos), default=0)
        columns = [("Demo", "name", max(names, 4))]
        if layout != "name":
            label = "Last run" if layout in ("full", "short") else "Last"
            runs = [None, *self._latest.values()]
            width = max(cell_len(label), *(last_run(r, layout).cell_len for r in runs))
            columns.append((label, "last", width))
        if layout in ("full", "short", "mark"):
            cards = (len(self.prep.collection.ids_for_demo(n)) for n in self.prep.demos)
            columns.append(("Cards", "cards", max([5, *(len(str(n)) for n in cards)])))
        return columns

    def _fit(self) -> str:
        """The widest layout whose columns fit the terminal's width (the table's margins, its
        cells' padding and a scrollbar counted)."""
        for layout in LAYOUTS:
            widths = [width for _, _, width in self._columns(layout)]
            if sum(widths) + 2 * len(widths) + 2 + 4 <= self.app.size.width:
                return layout
        return LAYOUTS[-1]

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        name = event.row_key.value if event.row_key else None
        claim = Text(self.prep.demos.get(name or "", ""), style="italic")
        if name and self._layout != "full":  # what the columns left out, for this demo
            run = last_run(self._latest.get(name), "full")
            cards = len(self.prep.collection.ids_for_demo(name))
            # first: short, and in a short terminal the claim's end may be below the fold
            claim = Text.assemble(
                ("Last run: ", "dim"), run, (f" · cards: {cards}", "dim"), "\n", claim
            )
        self.query_one("#demo-claim-detail", Static).update(claim)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value:
            self.prep.action_run_demo(event.row_key.value)

    def action_run(self) -> None:
        table = self.query_one("#demo-table", DataTable)
        if table.row_count:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
            if key:
                self.prep.action_run_demo(key)

    def action_back(self) -> None:
        self.dismiss()


# the table's layouts, widest first: the last run with device and date, without the device and
# year, PASS/FAIL only, then without the Cards column, then the names alone
LAYOUTS = ("full", "short", "mark", "bare", "name")


def last_run(run: dict | None, layout: str) -> Text:
    """A demo's last run as its cell shows it in ``layout``."""
    if run is None:
        return Text("never run" if layout in ("full", "short") else "never", style="dim")
    mark = Text("PASS", style="bold green") if run["passed"] else Text("FAIL", style="bold red")
    when = run["ran_at"][:16].replace("T", " ")  # 2026-12-02 22:40
    if layout == "full":
        return Text.assemble(mark, f"  {run['device']}  {when}")
    if layout == "short":
        return Text.assemble(mark, f"  {when[5:]}")
    return mark
