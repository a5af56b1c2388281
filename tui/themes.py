"""The app's theme, kept between launches.

$PREP_THEME when set; else the theme last picked in the command palette (ctrl+p, Theme), kept
in this machine's database under the meta key ``theme`` (a machine setting, like sync_dir:
never synced, never exported); else light when the terminal says its background is light
(COLORFGBG), else dark. A theme given to the app (a test's fixed one) is never replaced.
"""

from __future__ import annotations

import os
import sqlite3
from typing import TYPE_CHECKING, Any

from prep.engine.textsafe import quoted

if TYPE_CHECKING:
    from textual.app import App
    from textual.theme import Theme

    from prep.engine.store import Store

THEME_KEY = "theme"


def pick_theme(environ: dict[str, str] | os._Environ[str] = os.environ) -> str:
    """$PREP_THEME, else light when the terminal says its background is light (COLORFGBG,
    set by rxvt, Konsole, iTerm2 and others), else dark."""
    explicit = environ.get("PREP_THEME")
    if explicit:
        return explicit
    fgbg = environ.get("COLORFGBG", "")
    background = fgbg.rsplit(";", 1)[-1]
    if background.isdigit() and int(background) in (7, 15):
        return "textual-light"
    return "textual-dark"


def first_theme(
    app: App[Any], given: str | None, environ: dict[str, str] | os._Environ[str] = os.environ
) -> str | None:
    """Show ``given``, else pick_theme()'s. A $PREP_THEME naming no theme (a typo, a theme of
    another Textual version) ended the app before it opened ("internal error", exit 70): the
    terminal's own default is shown instead; returns the line that says so (None: all well)."""
    name = given or pick_theme(environ)
    if given or name in app.available_themes:
        app.theme = name
        return None
    shown = pick_theme({k: v for k, v in environ.items() if k != "PREP_THEME"})
    app.theme = shown
    known = ", ".join(sorted(app.available_themes))
    return f"PREP_THEME={quoted(name[:40])} names no theme; showing {shown} (themes: {known})"


class ThemeMemory:
    """Restores the theme last picked once the database is open, and keeps each new pick."""

    def __init__(self, given: str | None, environ: dict[str, str] | os._Environ[str] = os.environ):
        # a theme named by the caller or by $PREP_THEME wins over the one kept
        self.fixed = given is not None or bool(environ.get("PREP_THEME"))
        self.kept: str | None = None
        self._store: Store | None = None

    def restore(self, app: App[Any], store: Store) -> None:
        """The database is open: show the theme last picked, then keep every change."""
        if self._store is store:
            return  # (a reload boots again on the same database)
        self._store = store
        self.kept = store.get_meta(THEME_KEY)
        if not self.fixed and self.kept and self.kept in app.available_themes:
            app.theme = self.kept
        app.theme_changed_signal.subscribe(app, self._changed)

    def _changed(self, theme: Theme) -> None:
        store = self._store
        if store is None or theme.name == self.kept:
            return  # (restoring it is no change: nothing written on the way to the card)
        from prep.engine.store import StoreError

        try:
            with store.transaction():
                store.set_meta(THEME_KEY, theme.name)
        except (StoreError, sqlite3.Error):  # read-only, busy: the pick shows, unkept
            return
        self.kept = theme.name


def rich_color(theme: Theme, name: str, fallback: str) -> str:
    """The theme's colour ``name`` (primary, warning, success, error) as Rich reads a colour in a
    `Text` style: the ANSI themes give Textual's own names (``ansi_blue``), which Rich cannot
    parse: the app ended with MissingStyle as the first card was drawn, at every launch once
    ansi-light was picked (it is remembered). ``fallback`` (a Rich colour) when it has none."""
    from textual.color import Color, ColorParseError

    value = getattr(theme, name, None) or fallback
    if value.startswith("ansi_"):
        return value.removeprefix("ansi_")  # Rich's names for the 16 ANSI colours
    try:
        return Color.parse(value).hex
    except ColorParseError:
        return fallback
