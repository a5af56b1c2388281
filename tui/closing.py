"""A screen closed before it has finished opening closes once it has.

Keys come faster than screens open: in a terminal (tmux, a paste, a held key) `c` then Esc
reach the app in one tick, so the cram screen is pushed and popped before its widgets have run
their ``on_mount``. Textual then removes the screen's widgets (deepest first) while the screen's
own mount is still queued, and that mount finds half of its widgets gone: ``NoMatches`` ends
the app with a traceback (our screens' ``query_one`` in ``on_mount``, and Textual's own
``Header``). The cause is closing a screen that is still opening, whichever screen it is, so
the app waits for the screen's mount to finish before it removes the screen.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from textual.app import App

if TYPE_CHECKING:
    from textual.screen import Screen


class CloseAfterMount(App):  # type: ignore[type-arg]  # (a mixin for PrepApp)
    """Remove a closed screen only once its mount has run.

    Textual's ``pop_screen`` takes the screen off the stack at once (the next Esc goes to the
    screen below, the result callback runs once) and then removes its widgets in
    ``_replace_screen``; only that removal waits here. It is not awaited in place: the app's
    queue must stay free for what the mount set going (Textual's Header sets its title
    through the app's queue)."""

    async def _replace_screen(self, screen: Screen) -> Screen:
        if screen.is_mounted:
            return await super()._replace_screen(screen)
        replace = super()._replace_screen

        def later() -> None:  # on the screen's own queue: after its Mount, and a refresh
            self.call_next(replace, screen)

        screen.call_after_refresh(later)
        return screen


def quit_on_terminate(app: App) -> None:  # type: ignore[type-arg]
    """SIGTERM (`kill PID`, a logout, `timeout`) quits the app as q does. Without it Python
    died at once: the terminal left in the app's screen with mouse reporting on (every move
    typed escape codes into the shell), and the quit's own work (the last sync, the worker
    closed) not done. Every rating shown as saved was already committed either way."""
    import asyncio
    import signal

    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        # (NotImplementedError: no signals on this loop; ValueError: not the main thread)
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, app.exit)
