"""The review screen's answer side: the choices marked right and wrong, the answer, the demo
line and the rating bar with each rating's interval, mounted at the first reveal (each widget
costs the first card ~1 ms) and shown again for each card after.

A mixin of ReviewScreen (tui/screens/review.py), as TypedAnswer and HeldKeys are: the screen
keeps the states and their keys (check_action), this the widgets of the side that is revealed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text
from textual.containers import Vertical

from prep.engine.decks.deck import CHOICE_LETTERS
from prep.engine.store import StoreError
from prep.tui.cardtext import card_text, inline_text
from prep.tui.screens.review_text import back_markdown, demo_line
from prep.tui.widgets.text import Static

if TYPE_CHECKING:  # a mixin of the review screen (not a screen of its own)
    from prep.engine.decks.deck import Card
    from prep.engine.study.scheduler import Outcome, Rating
    from prep.engine.study.session import ReviewSession
    from prep.tui.base import PrepScreen as _Screen
    from prep.tui.widgets.rating_bar import RatingBar
else:
    _Screen = object


class AnswerSide(_Screen):
    """Mixed into ReviewScreen, which sets the card's state (``card``, ``picked``,
    ``suggested``, ``choices_shown``) and provides ``set_hint``."""

    session: ReviewSession
    card: Card | None
    revealed: bool
    choices_shown: bool
    picked: int | None
    suggested: Rating | None
    preview: dict[Rating, Outcome]
    ratings: RatingBar | None
    _back: Vertical | None
    _answer: Static | None
    _demo_link: Static | None

    def set_hint(self, text: Text | str) -> None:
        self.query_one("#hint", Static).update(text)

    def render_choices(self) -> None:
        widget = self.query_one("#choices", Static)
        card = self.card
        if card is None or not card.choices or not self.choices_shown:
            widget.display = False
            return
        widget.display = True
        # a grid, so a long choice wraps under its own text, not under its letter
        table = Table.grid(padding=(0, 1))
        table.add_column(width=1, no_wrap=True)
        table.add_column(no_wrap=True)
        table.add_column(ratio=1)
        for i, choice in enumerate(card.choices):
            letter = CHOICE_LETTERS[i]
            mark, style = "", ""
            if self.revealed:
                if i == card.correct:
                    mark, style = "✓", "bold green"
                elif i == self.picked:
                    mark, style = "✗", "bold red"
                else:
                    style = "dim"
            table.add_row(
                Text(mark, style=style),
                Text(f"{letter})", style="bold"),
                inline_text(choice, style),
            )
        widget.update(table)

    def reveal(self) -> None:
        from prep.engine.study.present import answer_sections
        from prep.tui.widgets.rating_bar import RatingBar

        card = self.card
        if card is None or self.revealed:
            return
        self.revealed = True
        self.choices_shown = True
        try:
            self.preview = self.session.preview()
        except StoreError as exc:
            self.preview = {}
            self.notify(f"Cannot read this card's schedule: {exc}", severity="error")
        self.render_choices()
        try:
            runs = self.session.store.latest_demo_runs() if card.demos else {}
        except StoreError:
            runs = {}
        sections = answer_sections(card, self.prep.demos, runs)
        if self._back is None:
            from prep.tui.widgets.clipped import Clipped

            self._answer, self._demo_link = Static(id="answer"), Clipped(id="demo-link")
            self._back = Vertical(self._answer, id="back")
            self.query_one("#card").mount(self._back)  # last: below the choices
            # the demo line sits below the scrolling card, above the ratings: visible however
            # long the answer is (at 80x24 it was below the fold)
            self.mount(self._demo_link, after=self.query_one("#card"))
        assert self._answer is not None and self._demo_link is not None
        self._answer.update(card_text(back_markdown(sections)))
        link = self._demo_link
        demos = next((s.demos for s in sections if s.key == "demos"), ())
        if demos:
            link.update(demo_line(demos))
        link.display = bool(demos)
        self._back.display = True
        self.query_one("#reveal").display = False
        if self.ratings is None:
            self.ratings = RatingBar(id="ratings")
            self.query_one("#actions").mount(self.ratings)
        self.ratings.show_preview(self.preview, self.suggested)
        self.ratings.display = True
        if self.picked is None:
            self.set_hint(
                Text.assemble("How well did you know it? ", ("1-4", "bold"), " (Enter = Good).")
            )
        self.refresh_bindings()
