"""A short terminal (under 20 rows: a split pane, a laptop's tmux with a status line) keeps the
card readable. The buttons of the review screen are three rows tall (Textual's button look);
at 40x12 a revealed card's two rows of rating buttons (six rows) and the hints left the card
itself no row at all, so the answer could not be read. Below `SHORT_ROWS` the app carries the
class ``-short`` and app.tcss draws the buttons one row tall.
"""

from __future__ import annotations

from textual import events
from textual.app import App

SHORT_ROWS = 20


class ShortTerminal(App):  # type: ignore[type-arg]  # (a mixin for PrepApp)
    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.height < SHORT_ROWS, "-short")
