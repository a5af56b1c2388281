"""Widgets that show text as text: card text, deck and tag names, file names and error messages
are user data, never Textual markup.

Textual reads ``[...]`` in a string as markup: ``[/]`` is an error that ends the app, ``[b]``
restyles what follows, ``W_O[h]`` loses its ``[h]`` and ``[@click=...]`` is an action. Every
prep screen takes its `Static` and `DataTable` from here (tests/test_text_is_text.py renders
hostile brackets on every screen; tests/test_architecture.py keeps the screens on these), and
`PrepApp.notify` never reads markup either. Styled text is built as `rich.text.Text`.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import DataTable as _DataTable
from textual.widgets import Static as _Static


class Static(_Static):
    """textual's Static with ``markup=False`` by default: a string is shown as it is."""

    def __init__(self, content: Any = "", *, markup: bool = False, **kwargs: Any) -> None:
        super().__init__(content, markup=markup, **kwargs)


def as_text(value: Any) -> Any:
    """A string as a `Text` (shown as it is); anything else unchanged."""
    return Text(value) if isinstance(value, str) else value


class DataTable(_DataTable):
    """textual's DataTable, whose string cells and labels are shown as they are (its default
    cell formatter reads a string as markup)."""

    def add_column(self, label: Any, *args: Any, **kwargs: Any) -> Any:
        return super().add_column(as_text(label), *args, **kwargs)

    def add_row(self, *cells: Any, label: Any = None, **kwargs: Any) -> Any:
        return super().add_row(*(as_text(c) for c in cells), label=as_text(label), **kwargs)

    def update_cell(self, row_key: Any, column_key: Any, value: Any, **kwargs: Any) -> None:
        super().update_cell(row_key, column_key, as_text(value), **kwargs)

    def update_cell_at(self, coordinate: Any, value: Any, **kwargs: Any) -> None:
        super().update_cell_at(coordinate, as_text(value), **kwargs)
