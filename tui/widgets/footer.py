"""The footer: Textual's, rebuilt only when the keys it shows change.

Textual's Footer rebuilds all its keys (a widget each) after every "bindings changed" signal,
and a screen sends several while it opens (its mount, the focus settling, the first card
asking for its keys): five rebuilds before the first card's frame. This one coalesces the
signals that arrive before the next refresh into one look at the screen's keys, and rebuilds
only when what it would show differs from what it shows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widgets import Footer as _Footer

if TYPE_CHECKING:
    from textual.screen import Screen

Shown = tuple[tuple[str, str, str, bool, str], ...]


class Footer(_Footer):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._shown: Shown | None = None  # what the keys show now (None: not built yet)
        self._asked = False  # a look is scheduled after the next refresh

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
