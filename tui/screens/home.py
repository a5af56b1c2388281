"""Home: the decks with what today's session would serve, the streak, the interview plan when
a date is set, and how to start."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Header

from prep.engine.store import StoreError
from prep.engine.study.plan import PlanDay, plan_day
from prep.engine.study.present import after_parents_text, count, counts_text
from prep.tui.base import PrepScreen
from prep.tui.themes import rich_color
from prep.tui.widgets.footer import Footer
from prep.tui.widgets.syncline import SyncLine
from prep.tui.widgets.table import DataTable
from prep.tui.widgets.text import Static

if TYPE_CHECKING:
    from prep.tui.app import DeckCounts


class DeckTable(DataTable):
    """The deck list; its Enter is listed in the footer (a plain DataTable hides it)."""

    BINDINGS = [
        Binding("enter", "select_cursor", "Start", tooltip="Start the highlighted deck's session")
    ]


class HomeScreen(PrepScreen):
    DEFAULT_CSS = """
    HomeScreen #today {
        height: auto;
        padding: 1 2 0 2;
    }

    HomeScreen #decks {
        height: auto;
        max-height: 70%;
        margin: 1 2;
    }

    HomeScreen #howto {
        height: auto;
        padding: 0 2 1 2;
        color: $text-muted;
    }

    /* a short terminal: the table takes the rows left and scrolls inside itself (the screen
       scrolling took two more columns for its scrollbar and hid the footer's keys line) */
    HomeScreen.-short #today { padding: 0 1; }
    HomeScreen.-short #decks { height: 1fr; max-height: 100%; margin: 0 1; }
    HomeScreen.-short #howto { display: none; }
    """
    is_home = True  # what the app pops back to (without importing this module to ask)
    BINDINGS = [
        Binding("enter", "start", "Start", tooltip="Start today's session on the highlighted deck"),
        Binding("s", "app.stats", "Stats", tooltip="Statistics"),
        Binding("d", "app.demos", "Demos", tooltip="Every demo; run one"),
        Binding("c", "app.cram", "Cram", tooltip="Cram: the 60-second bullets"),
        Binding("m", "app.mock", "Mock", tooltip="Mock interview"),
        Binding(
            "n",
            "app.study_more",
            "More",
            tooltip="More new cards today, or review ahead (Anki's custom study)",
        ),
        Binding("r", "app.reload", "Reload", show=False, tooltip="Read the deck files again"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._reasons: dict[str | None, list[str]] = {}  # limit lines per deck, this refresh
        # what the table shows (read by refresh_counts); a resize only truncates labels anew
        self._counts: tuple[list[DeckCounts], dict[str, int]] | None = None
        self._plan: PlanDay | None = None  # today's share of the interview plan, if any
        self._width: int | None = None  # the width the labels were truncated for
        self._resume_read = False  # the first ScreenResume follows on_mount's own read

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="today")
        yield DeckTable(id="decks", cursor_type="row", zebra_stripes=False)
        yield Static(id="howto")
        yield SyncLine()
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_counts()
        # pushed screens are mounted once on top: the ScreenResume posted by the push comes
        # next, and reading the same counts twice before the first frame is wasted work (a
        # read that failed is tried again then)
        self._resume_read = self.is_active and self._counts is not None
        # the counts are coloured from the theme: redraw them when it changes
        self.prep.theme_changed_signal.subscribe(self, lambda _theme: self.refresh_counts())

    def on_screen_resume(self) -> None:
        if self._resume_read:
            self._resume_read = False
            return
        self.refresh_counts()

    def study_day_changed(self) -> None:
        if self.is_current:  # (else read again when it is shown: on_screen_resume)
            self.refresh_counts()

    def on_resize(self) -> None:
        self.set_class(self.app.size.height < SHORT, "-short")
        # only the labels' truncation depends on the size: redraw the counts already read
        if self.app.size.width != self._width:
            self.refresh_counts(reread=False)

    def refresh_counts(self, *, reread: bool = True) -> None:
        self._resume_read = False
        table = self.query_one("#decks", DataTable)
        if reread or self._counts is None:
            self._reasons.clear()
            try:
                self._counts = (self.prep.deck_counts(), self.prep.today())
                store, now = self.prep.store, self.prep.now()
                self._plan = plan_day(store, self.prep.collection, now) if store else None
            except StoreError as exc:
                self._counts = None
                self.query_one("#today", Static).update(
                    Text(f"Cannot read progress: {exc}", style="bold red")
                )
                return
        rows, today = self._counts
        self._width = self.app.size.width
        # the columns anew too: a column sized for a wider window never shrinks by itself,
        # and would push the counts off a narrower one
        table.clear(columns=True)
        counts = [(r.new, r.learning, r.due, r.cards) for r in rows]
        short = self.app.size.height < SHORT
        self.set_class(short, "-short")
        headers, room, with_ids = columns_for(self.app.size.width - 2 * short, rows, counts)
        for label in ("Deck", *headers):
            table.add_column(label, key=label.lower())
        selected = 0
        for i, row in enumerate(rows):
            # the title gives way first, then (when narrow) the deck's id (what --deck takes)
            name = f"  {row.name}" if row.name and with_ids else ""
            title = Text(row.title, style="bold" if i == 0 else "")
            title.truncate(max(MIN_TITLE, room - len(name)), overflow="ellipsis")
            title.append(name, style="dim")
            theme = self.prep.current_theme
            primary = rich_color(theme, "primary", "blue")
            table.add_row(
                title,
                _count(row.new, primary),
                _count(row.learning, rich_color(theme, "warning", primary)),
                _count(row.due, rich_color(theme, "success", primary)),
                *([Text(str(row.cards), style="dim")] if len(headers) == 4 else []),
                key=row.name,
            )
            if row.name and row.name == self.prep.selected_deck:
                selected = i
        table.move_cursor(row=selected)
        total = rows[0] if rows else None
        streak = today["streak"]
        line = Text()
        if total is None or total.total == 0:
            line.append("Nothing to review right now.", style="bold")
        else:
            line.append(f"{total.total} to review", style="bold")
            # the three numbers in the words of the session bar, stats and --plain
            line.append(f" ({counts_text((total.new, total.learning, total.due))})")
        line.append(f" · streak {count(streak, 'day')}")
        line.append(f" · {count(today['reviews'], 'review')} today")
        if self._plan is not None:  # "Interview: Fri 12 Dec, 4 days · 108 cards in 3 days: ..."
            line.append("\n")
            line.append(self._plan.plan.header(), style="bold")
            line.append(f" · {self._plan.line()}")
            why = self._plan.why()
            if why:
                line.append(f"\n{why}", style="dim")
        self.query_one("#today", Static).update(line)
        self.refresh_howto()
        table.focus()

    def refresh_howto(self) -> None:
        """The keys line, after any daily limit that holds cards back for the selected deck."""
        howto = Text()
        deck = self.prep.selected_deck
        if deck not in self._reasons:  # once per deck per refresh, not per arrow key
            # (a limit the plan's line says above is not said again)
            shown = self._plan.line() if self._plan is not None else ""
            self._reasons[deck] = self.prep.limit_reasons(shown)
        reasons = [*self._reasons[deck], *self._after_parents()]
        for reason in reasons:  # (the keys line below says n studies more)
            howto.append(reason + "\n", style="bold")
        howto.append_text(
            Text.assemble(
                ("↑↓", "bold"),
                " choose a deck, ",
                ("Enter", "bold"),
                " starts its session, ",
                ("n", "bold"),
                " studies more. ",
                ("?", "bold"),
                " lists every key.",
            )
        )
        self.query_one("#howto", Static).update(howto)

    def _after_parents(self) -> list[str]:
        """Why All decks' New is more than its decks' add up to (ux17: 108 beside 96), when it
        is: follow-ups served after their parents from other decks, which no deck alone serves
        until those are answered. (Anki's parent deck never counts more than its children: here
        all decks together serve a chain that no deck alone does.)"""
        rows = self._counts[0] if self._counts else []
        if not rows or not rows[0].after_parents or rows[0].new <= sum(r.new for r in rows[1:]):
            return []
        return [after_parents_text(rows[0].after_parents)]

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The highlighted row is the selected deck: Enter, c (cram) and m (mock) act on it,
        and it stays highlighted when you come back (the first row is all decks)."""
        event.stop()
        if self.prep.selected_deck != (event.row_key.value or None):
            self.prep.selected_deck = event.row_key.value or None
            self.refresh_howto()  # the limit line follows the deck

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.prep.action_start(event.row_key.value or "")

    def action_start(self) -> None:
        table = self.query_one("#decks", DataTable)
        deck = ""
        if table.row_count:
            deck = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value or ""
        self.prep.action_start(deck)


SHORT = 20  # rows: below it home drops the keys line and its margins (the footer has the keys)
MIN_TITLE = 8  # cells of a deck's title, however narrow (its start names it)
WIDE = ("New", "Learning", "Due", "Cards")
NARROW = ("New", "Lrn", "Due")  # Anki's phone deck list: the counts, no total


def columns_for(
    width: int, rows: list[DeckCounts], counts: list[tuple[int, int, int, int]]
) -> tuple[tuple[str, ...], int, bool]:
    """Home's count columns for a terminal ``width`` cells wide, the cells left for a deck's
    title and id, and whether the ids fit. The counts never leave the screen: as the terminal
    narrows the ids go, then the Cards total (and Learning is shortened), then the ids of the
    narrow table, then the titles shrink to `MIN_TITLE`."""
    ids = max((len(r.name) + 2 for r in rows if r.name), default=0)
    for headers, least in ((WIDE, 16), (NARROW, 12)):
        widths = [
            max([len(header), *(len(str(c[i])) for c in counts)])
            for i, header in enumerate(headers)
        ]
        # less the table's margin, each cell's padding and a scrollbar's width
        room = width - 4 - 2 * (len(widths) + 1) - sum(widths) - 2
        if room >= least + ids:
            return headers, room, True
        if room >= least:
            return headers, room, False
    return headers, room, False


def _count(n: int, color: str) -> Text:
    if n == 0:
        return Text("0", style="dim")
    return Text(str(n), style=f"bold {color}")
