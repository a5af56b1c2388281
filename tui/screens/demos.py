"""Every demo, the claim it checks, its last run; Enter runs the highlighted one."""

from __future__ import annotations

from contextlib import suppress

from rich.text import Text
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

    def on_mount(self) -> None:
        table = self.query_one("#demo-table", DataTable)
        table.add_column("Demo", key="name")
        table.add_column("Last run", key="last")
        table.add_column("Cards", key="cards")
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

    def refresh_rows(self) -> None:
        table = self.query_one("#demo-table", DataTable)
        latest: dict[str, dict] = {}
        if self.prep.store is not None:
            with suppress(StoreError):  # the list still shows; "Last run" stays empty
                latest = self.prep.store.latest_demo_runs()
        row = table.cursor_row
        table.clear()
        for name in self.prep.demos:
            run = latest.get(name)
            if run is None:
                last = Text("never run", style="dim")
            else:
                mark = (
                    Text("PASS", style="bold green")
                    if run["passed"]
                    else Text("FAIL", style="bold red")
                )
                last = Text.assemble(
                    mark, f"  {run['device']}  {run['ran_at'][:16].replace('T', ' ')}"
                )
            cards = len(self.prep.collection.ids_for_demo(name))
            table.add_row(name, last, str(cards), key=name)
        if table.row_count:
            table.move_cursor(row=min(row, table.row_count - 1))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        name = event.row_key.value if event.row_key else None
        claim = self.prep.demos.get(name or "", "")
        self.query_one("#demo-claim-detail", Static).update(Text(claim, style="italic"))

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
