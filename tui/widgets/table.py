"""textual's DataTable with markup off (see tui/widgets/text.py): home, stats and the demo list
take theirs from here."""

from __future__ import annotations

from typing import Any

from textual.widgets import DataTable as _DataTable

from prep.tui.widgets.text import as_text


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
