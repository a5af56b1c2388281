"""When a click was made: the time its button press was read from the terminal.

Textual stamps an event when it is made, and the Click a button receives is made late: the app
builds it from the MouseDown and MouseUp when it processes them, after shifting each to the
widget's offset (a new event, a new time). A click read while a commit blocked the app therefore
reached the review screen stamped after the next card was shown, met the old rating bar (hidden,
but still where the compositor last drew it) and was dropped without a word. The app notes the
time of each MouseDown as the terminal driver made it (its read time, as a Key's), and a button
takes the press time from there: the screen's held-keys rule (tui/screens/held_keys.py) then
refuses a click meant for the last card in one line, as it does a key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import events
from textual.app import App

if TYPE_CHECKING:
    from textual.dom import DOMNode


class ClickTime(App):  # type: ignore[type-arg]  # (a mixin for PrepApp)
    """Notes when the last mouse button press was read (``mouse_down_read_at``)."""

    mouse_down_read_at: float | None = None

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.MouseDown) and not event.is_forwarded:
            self.mouse_down_read_at = event.time  # (the driver's event: its read time)
        await super().on_event(event)


def pressed_at(node: DOMNode, click: events.Click) -> float:
    """When ``click``'s button was pressed: the read time of the app's last MouseDown (the one
    this click began with), or the click's own time in an app that does not note it."""
    read = getattr(node.app, "mouse_down_read_at", None)
    return click.time if read is None else min(read, click.time)
