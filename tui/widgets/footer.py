"""The footer: Textual's, rebuilt only when the keys it shows change.

Textual's Footer rebuilds all its keys (a widget each) after every "bindings changed" signal,
and a screen sends several while it opens (its mount, the focus settling, the first card
asking for its keys): five rebuilds before the first card's frame. This one coalesces the
signals that arrive before the next refresh into one look at the screen's keys, and rebuilds
only when what it would show differs from what it shows.

In a narrow terminal the keys that do not fit give way, not the way out: Textual cuts the row
at the right edge, so below ~70 columns home lost `q Quit` and `? Help` (the app's keys come
last). This one drops the command palette's key first, then the keys at the right end, keeping
the screen's first key (what it is for: Start, Show answer), Esc, `q` and `?` (which lists
every key; a dropped key still works).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from rich.cells import cell_len
from textual.widgets import Footer as _Footer

if TYPE_CHECKING:
    from textual import events
    from textual.app import ComposeResult
    from textual.screen import Screen
    from textual.widget import Widget

Shown = tuple[tuple[str, str, str, bool, str], ...]


class Footer(_Footer):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._shown: Shown | None = None  # what the keys show now (None: not built yet)
        self._asked = False  # a look is scheduled after the next refresh
        self._built_for: int | None = None  # the width the keys were chosen for

    def compose(self) -> ComposeResult:
        self._built_for = self.app.size.width
        keys, compact = fitted(list(super().compose()), self._built_for)
        self.compact = compact  # (Footer's reactive: its keys follow it)
        yield from keys

    def on_resize(self, event: events.Resize) -> None:
        if self._built_for is not None and self.app.size.width != self._built_for:
            self._built_for = self.app.size.width
            self.call_after_refresh(self.recompose)

    def shown(self) -> Shown:
        """What the footer would show now: every key the screen offers and whether it can be
        pressed (the palette's key and the compact style are fixed for its life)."""
        return tuple(
            (binding.key, binding.action, binding.description, enabled, tooltip)
            for _, binding, enabled, tooltip in self.screen.active_bindings.values()
            if binding.show
        )

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._asked:
            self._asked = True
            self.call_after_refresh(self._rebuild_if_changed)

    async def _rebuild_if_changed(self) -> None:
        self._asked = False
        if not self.is_attached:
            return
        shown = self.shown()
        if shown != self._shown:
            self._shown = shown
            await self.recompose()


KEPT = frozenset({"escape", "q", "question_mark", "f1"})  # the way back, out, to every key


def _width(key: Widget, *, compact: bool = False) -> int:
    """A key's cells: Textual's style pads the key with a space each side and the description
    with one after (compact: one space between them and one after); the palette's key is
    always compact, with a border and a right padding."""
    display = getattr(key, "key_display", None)  # a FooterKey (Textual does not export it)
    if not isinstance(display, str):
        return 0  # (a binding group's label: prep declares none)
    description = str(getattr(key, "description", ""))
    if compact or key.has_class("-command-palette"):  # (Textual leaves that one compact)
        width = cell_len(display) + (1 + cell_len(description) if description else 0)
        return width + (2 if key.has_class("-command-palette") else 1)
    return cell_len(display) + 2 + (cell_len(description) + 1 if description else 0)


def fitted(keys: Iterable[Widget], width: int) -> tuple[list[Widget], bool]:
    """The keys that fit in ``width`` cells, and whether in the compact style: the palette's key
    goes first, then from the right end every key but the first and those in `KEPT`; then the
    style turns compact; then Esc goes (`?` still lists it)."""
    keys = list(keys)
    palette = [k for k in keys if k.has_class("-command-palette")]
    droppable = palette + [
        k
        for k in reversed(keys[1:])
        if _width(k) and k not in palette and getattr(k, "key", None) not in KEPT
    ]
    # the last key's trailing space may fall off the edge (or under the palette's border)
    kept = list(keys)
    for key in [*droppable, None]:
        if sum(_width(k) for k in kept) - 1 <= width:
            return kept, False
        if key is not None:
            kept.remove(key)
    for key in [None, *(k for k in kept[1:] if getattr(k, "key", None) == "escape")]:
        if key is not None:
            kept.remove(key)
        if sum(_width(k, compact=True) for k in kept) - 1 <= width:
            break
    return kept, True
