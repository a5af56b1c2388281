"""Widgets that show text as text: card text, deck and tag names, file names and error messages
are user data, never Textual markup.

Textual reads ``[...]`` in a string as markup: ``[/]`` is an error that ends the app, ``[b]``
restyles what follows, ``W_O[h]`` loses its ``[h]`` and ``[@click=...]`` is an action. Every
prep screen takes its `Static` from here and its `DataTable` from tui/widgets/table.py (apart:
the first card's screen shows no table, and Textual's DataTable costs it ~5 ms to import;
tests/test_text_is_text.py renders hostile brackets on every screen and keeps the screens on
these), and
`PrepApp.notify` never reads markup either. Styled text is built as `rich.text.Text`.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static as _Static


class Static(_Static):
    """textual's Static with ``markup=False`` by default: a string is shown as it is."""

    def __init__(self, content: Any = "", *, markup: bool = False, **kwargs: Any) -> None:
        super().__init__(content, markup=markup, **kwargs)


def as_text(value: Any) -> Any:
    """A string as a `Text` (shown as it is); anything else unchanged."""
    return Text(value) if isinstance(value, str) else value
