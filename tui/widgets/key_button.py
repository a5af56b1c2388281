"""A button for a key of the review screen: drawn and clicked like Textual's `Button`.

Textual's `Button` brings a stylesheet of every variant in every style (flat, ANSI, compact,
disabled, ...); parsing it is the largest single piece of CSS work before the first card is on
screen (5 ms of a 60 ms budget on the 2-core reference machine). The review screen needs four
variants of one style, never focus, and a click: this widget is that, with the same look (the
default style's colours and tall borders, a hover and a pressed flash).

Only the variants of the first card's button (default, primary) are here: the rating bar's
(success, warning, error) come with the bar (tui/widgets/rating_bar.py), parsed when it is
first shown at the first reveal, not on the way to the first card (issue 26).
"""

from __future__ import annotations

from textual import events
from textual.message import Message

from prep.tui.clicktime import pressed_at
from prep.tui.widgets.text import Static

VARIANTS = ("default", "primary", "success", "warning", "error")


class KeyButton(Static, can_focus=False):
    """A clickable label in a button's clothes; posts `KeyButton.Pressed` when clicked."""

    DEFAULT_CSS = """
    KeyButton {
        width: 1fr;
        min-width: 10;
        height: 3;
        text-align: center;
        content-align: center middle;
        text-style: bold;
        pointer: pointer;
        color: $button-foreground;
        background: $surface;
        border-top: tall $surface-lighten-1;
        border-bottom: tall $surface-darken-1;
        &:hover { border-top: tall $surface; background: $surface-darken-1; }
        &.-active {
            background: $surface;
            border-bottom: tall $surface-lighten-1;
            border-top: tall $surface-darken-1;
            tint: $background 30%;
        }
        &.-primary {
            color: $button-color-foreground;
            background: $primary;
            border-top: tall $primary-lighten-3;
            border-bottom: tall $primary-darken-3;
            &:hover { background: $primary-darken-2; border-top: tall $primary; }
            &.-active { background: $primary; border-bottom: tall $primary-lighten-3; border-top: tall $primary-darken-3; }
        }
    }
    """
    ACTIVE_SECONDS = 0.2  # the pressed look after a click, as Textual's Button

    class Pressed(Message):
        def __init__(self, button: KeyButton, pressed_at: float) -> None:
            self.button = button
            # when its mouse button was pressed (read from the terminal: tui/clicktime.py)
            self.pressed_at = pressed_at
            super().__init__()

    def __init__(self, label: str, *, variant: str = "default", id: str | None = None) -> None:
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, not {variant!r}")
        super().__init__(label, id=id, classes=f"-{variant}", markup=False)
        self._label = label

    @property
    def label(self) -> str:
        return self._label

    @label.setter
    def label(self, text: str) -> None:
        self._label = text
        self.update(text)

    def on_click(self, event: events.Click) -> None:
        event.stop()
        if self.has_class("-active") or not self.display:
            return
        self.add_class("-active")
        self.set_timer(self.ACTIVE_SECONDS, lambda: self.remove_class("-active"))
        self.post_message(self.Pressed(self, pressed_at(self, event)))
