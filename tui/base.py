"""The typed way from a screen to the app (posting's ``cast("Posting", self.app)`` habit).

Every prep screen derives from `PrepScreen` and reads the store, the decks, the clock and the
scheduler through ``self.prep``, so a type checker (and a reader) knows what it gets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar, cast

from textual.screen import Screen

if TYPE_CHECKING:
    from prep.tui.app import PrepApp

ResultType = TypeVar("ResultType")


class PrepScreen(Screen[ResultType], Generic[ResultType]):
    """A screen of the prep app."""

    @property
    def prep(self) -> PrepApp:
        return cast("PrepApp", self.app)

    def unsaved_typing(self) -> bool:
        """Whether this screen holds a typed answer that leaving it would throw away (the
        palette's commands and Esc ask first then, as Esc from the box does)."""
        return False

    def study_day_changed(self) -> None:
        """The study day rolled over (4 am) while this screen was open (PrepApp's day watch):
        a screen that shows today's numbers reads them again. Nothing here by default."""
