"""A few lines of text, each kept on one line and cut with an ellipsis where it is longer than
the widget (the demo line under a revealed card: its claim wrapped past the two lines the line
holds and was cut mid-sentence, as if that were all of it; Textual's ``text-overflow: ellipsis``
does not cut a Content of several lines)."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from prep.tui.widgets.text import Static


class Clipped(Static):
    """A `Static` whose every line ends in "…" when it does not fit (never wraps)."""

    def __init__(self, content: Any = "", **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self._lines = Text(content) if isinstance(content, str) else content

    def update(self, content: Any = "", *, layout: bool = True) -> None:
        self._lines = Text(content) if isinstance(content, str) else content
        super().update(content, layout=layout)

    def render(self) -> Any:
        width = self.content_region.width
        if not isinstance(self._lines, Text) or width <= 0:
            return super().render()
        lines = self._lines.split("\n", allow_blank=True)
        for line in lines:
            line.truncate(width, overflow="ellipsis")
        return Text("\n").join(lines)
