"""A screen closed before it has finished opening closes once it has.

Keys come faster than screens open: in a terminal (tmux, a paste, a held key) `c` then Esc
reach the app in one tick, so the cram screen is pushed and popped before its widgets have run
their ``on_mount``. Textual then removes the screen's widgets (deepest first) while the screen's
own mount is still queued, and that mount finds half of its widgets gone: ``NoMatches`` ends
the app with a traceback (our screens' ``query_one`` in ``on_mount``, and Textual's own
``Header``; Textual's issue #4258, open). The cause is closing a screen that is still opening,
whichever screen it is, so the app removes such a screen only once its mount has run.

Only Textual's public screen API is used: a screen that is *installed* is taken off the stack
but not removed (``install_screen``'s documented purpose), so a screen closed while opening is
installed under a private name for the pop, and uninstalled and removed after its mount. (Round
11 overrode the private ``App._replace_screen`` instead.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import App

if TYPE_CHECKING:
    from textual.await_complete import AwaitComplete
    from textual.screen import Screen


class CloseAfterMount(App):  # type: ignore[type-arg]  # (a mixin for PrepApp)
    """Remove a closed screen only once its mount has run.

    ``pop_screen`` (which ``Screen.dismiss`` calls) and ``switch_screen`` still take the screen
    off the stack at once (the next Esc goes to the screen below, the result callback runs
    once); only the removal of its widgets waits. It is not awaited in place: the app's queue
    must stay free for what the mount set going (Textual's Header sets its title through the
    app's queue)."""

    def pop_screen(self) -> AwaitComplete:
        if len(self.screen_stack) > 1:
            self._keep_until_mounted(self.screen)
        return super().pop_screen()

    def switch_screen(self, screen: Screen | str) -> AwaitComplete:
        if self.screen_stack and screen is not self.screen:
            self._keep_until_mounted(self.screen)
        return super().switch_screen(screen)

    def _keep_until_mounted(self, screen: Screen) -> None:
        if screen.is_mounted or self.is_screen_installed(screen):
            return  # removed now as usual; or installed by its owner, who removes it
        name = f"prep-closing-{id(screen)}"
        self.install_screen(screen, name)

        def remove() -> None:  # on the screen's own queue: after its Mount, and a refresh
            if screen in self.screen_stack:
                return  # opened again meanwhile: it stays installed (Textual keeps it)
            self.uninstall_screen(name)
            self.call_next(screen.remove)

        screen.call_after_refresh(remove)
