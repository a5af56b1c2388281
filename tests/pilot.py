"""Helpers for the app's Pilot tests: run an async test, wait for a condition, read a Static."""

from __future__ import annotations

import asyncio
import functools
import time

from rich.console import Console
from rich.text import Text
from textual.widgets import Static


def async_test(fn):
    """Run an async test on a fresh event loop (no pytest-asyncio needed)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        asyncio.run(fn(*args, **kwargs))

    return wrapper


async def wait_until(pilot, condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await pilot.pause(0.05)


def record_notes(app) -> list[str]:
    """Every notification's message the app posts from now on, kept: ``app._notifications``
    drops one once its timeout has passed (on a loaded machine, before the test looks)."""
    posted: list[str] = []
    notify = app.notify

    def recording(message, *args, **kwargs):
        posted.append(str(message))
        return notify(message, *args, **kwargs)

    app.notify = recording
    app._recorded_notes = posted
    return posted


def notes_of(app) -> list[str]:
    """The messages ``record_notes(app)`` has kept so far (called on the app before it runs)."""
    posted = getattr(app, "_recorded_notes", None)
    assert posted is not None, "record_notes(app) was not called before the app ran"
    return list(posted)


def text_of(app, selector: str) -> str:
    """The text a Static on the app's screen shows (rendered if it is not plain text)."""
    content = app.screen.query_one(selector, Static).content
    if isinstance(content, str | Text):
        return str(content)
    console = Console(width=200, color_system=None)
    with console.capture() as capture:
        console.print(content)
    return capture.get()


async def at_home(pilot, app) -> None:
    """The app on its home screen: a screen shown over it at start (the summary, a study
    screen) closed with escape, and the home screen settled."""
    from prep.tui.screens.home import HomeScreen

    await pilot.pause()
    if not isinstance(app.screen, HomeScreen):
        await pilot.press("escape")
    await wait_until(pilot, lambda: isinstance(app.screen, HomeScreen))
    await pilot.pause()
