"""The answer box: a text area for a typed answer. Enter hands the answer in; Esc leaves.

While it has focus every key types text (so `q`, space and 1-4 do not act on the card).
It posts `AnswerBox.Submitted` (with the text) or `AnswerBox.Left` (with whatever was typed:
the screen asks before discarding it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual import events
from textual.message import Message
from textual.widgets import TextArea

from prep.tui.answertext import answer_text

MAX_CHARS = 20_000


class AnswerBox(TextArea):
    DEFAULT_CSS = """
    AnswerBox {
        height: auto;
        min-height: 4;
        max-height: 12;
        margin: 1 0 0 0;
        border: round $primary;
    }
    """

    @dataclass
    class Submitted(Message):
        box: AnswerBox
        answer: str

    @dataclass
    class Left(Message):
        box: AnswerBox
        answer: str

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(soft_wrap=True, show_line_numbers=False, tab_behavior="focus", **kwargs)
        self.border_title = "Your answer"
        self.border_subtitle = "Enter: grade and show the answer · Esc: leave"

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            typed = answer_text(self.text)  # (zero-width characters alone: nothing typed)
            if typed:
                self.post_message(self.Submitted(self, typed[:MAX_CHARS]))
            return
        if event.key == "escape":
            event.stop()
            event.prevent_default()
            self.post_message(self.Left(self, self.text))
            return
        await super()._on_key(event)
