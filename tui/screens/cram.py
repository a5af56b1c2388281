"""Cram: the 60-second bullets of each main card, for the way to the call (`prep cram`).

Self-contained: ``CramScreen(collection, deck=None)``, or ``CramScreen()`` inside the prep app,
which then reads the app's collection and selected deck. The data is
prep.engine.study.cram.cram_sheet's, the same as `prep cram` prints.
"""

from __future__ import annotations

import textwrap

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll

from prep.engine.study.collection import Cards
from prep.engine.study.cram import CramDeck, cram_sheet, recall_text, weakest_first
from prep.engine.study.present import count
from prep.tui.base import PrepScreen
from prep.tui.widgets.footer import Footer
from prep.tui.widgets.text import Static

MEASURE = 100  # the longest line on a wide terminal: a readable measure


def sheet_text(sheet: list[CramDeck], width: int | None = None) -> Text:
    """The sheet as text; with ``width``, each bullet wraps under its own text (a hanging
    indent), not under the bullet."""
    text = Text()
    if not sheet:
        text.append("No 60-second bullets yet: no main card has 'bullets'.", style="italic")
        return text
    for i, deck in enumerate(sheet):
        if i:
            text.append("\n")
        text.append(f"{deck.title}\n", style="bold underline")
        for item in deck.items:
            text.append("\n")
            if item.recall is not None:
                text.append(recall_text(item), style="bold red" if item.recall < 0.9 else "dim")
            text.append(f"{item.prompt}\n", style="bold")
            for bullet in item.bullets:
                text.append("  • ")
                if width is not None:
                    bullet = "\n    ".join(textwrap.wrap(bullet, max(20, width - 4)) or [""])
                text.append(f"{bullet}\n")
    return text


class CramScreen(PrepScreen):
    """Every main card's bullets, grouped by deck; `a` switches between one deck and all."""

    DEFAULT_CSS = """
    CramScreen #cram-title {
        height: 1;
        background: $panel;
        padding: 0 1;
        text-style: bold;
    }
    CramScreen #cram-scroll {
        height: 1fr;
        padding: 1 2;
    }
    """

    BINDINGS = [
        Binding("escape", "back", "Back", tooltip="Back to where you were"),
        Binding(
            "a",
            "toggle_all",
            "All decks / this deck",
            tooltip="Show every deck, or only the selected one",
        ),
        Binding("j", "scroll(1)", "Down", show=False, tooltip="Scroll down"),
        Binding("k", "scroll(-1)", "Up", show=False, tooltip="Scroll up"),
    ]

    def __init__(self, collection: Cards | None = None, deck: str | None = None) -> None:
        super().__init__()
        self._collection = collection
        self.deck = deck
        self._deck_given = collection is not None
        self.show_all = False

    @property
    def collection(self) -> Cards:
        if self._collection is not None:
            return self._collection
        return self.prep.collection

    def compose(self) -> ComposeResult:
        yield Static(id="cram-title")
        with VerticalScroll(id="cram-scroll"):
            yield Static(id="cram-sheet")
        yield Footer()

    def on_mount(self) -> None:
        if not self._deck_given and self.deck is None:
            self.deck = self.prep.selected_deck
        self.show_all = self.deck is None
        self.render_sheet()
        self.query_one("#cram-scroll").focus()

    def current_deck(self) -> str | None:
        deck = None if self.show_all else self.deck
        return deck if deck in self.collection.decks else None

    def render_sheet(self) -> None:
        deck = self.current_deck()
        sheet = cram_sheet(self.collection, deck)
        store = getattr(self.prep, "store", None)  # (a host without progress: deck order)
        if store is not None:  # the day before the interview and the day: weakest first
            sheet = weakest_first(sheet, store, self.prep.now())
        items = sum(len(d.items) for d in sheet)
        where = f"deck {deck}" if deck else "all decks"
        self.query_one("#cram-title", Static).update(
            f"Cram · the 60-second bullets · {where} · {count(items, 'card')}"
        )
        # the screen less the padding and the scrollbar
        width = max(24, min(MEASURE, self.app.size.width - 6))
        self.query_one("#cram-sheet", Static).update(sheet_text(sheet, width))

    def on_resize(self) -> None:
        self.render_sheet()

    def study_day_changed(self) -> None:
        """The day before the interview begins (or the day after it): weakest first, or deck
        order again, as cram opened now would show it."""
        self.render_sheet()

    def action_toggle_all(self) -> None:
        if self.deck is None:
            self.notify("Showing every deck (no deck selected).")
            return
        self.show_all = not self.show_all
        self.render_sheet()

    def action_scroll(self, lines: int) -> None:
        scroll = self.query_one("#cram-scroll", VerticalScroll)
        scroll.scroll_relative(y=lines, animate=False)

    def action_back(self) -> None:
        self.dismiss()
