"""Undo on the review and summary screens: the session's last rating or mark, said in one line
whatever happens (undone, nothing to undo, another prep rated since, the database refused)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from prep.engine.store import StoreError

if TYPE_CHECKING:
    from textual.screen import Screen

    from prep.engine.decks.deck import Card
    from prep.engine.study.session import ReviewSession

# u pressed before this session rated or marked anything (the footer does not offer it then)
NOTHING_TO_UNDO = "Nothing to undo yet: u undoes this session's last rating or mark."


def undo_last_rating(screen: Screen, session: ReviewSession) -> Card | None:
    """Undo the session's last rating or mark, telling the user when there is nothing to undo or
    the database refused; returns the card that is back, or None."""
    try:
        card = session.undo()
    except StoreError as exc:
        screen.notify(f"Cannot undo: {exc}", severity="error", timeout=8)
        return None
    if card is None and session.done:
        # the newest review in the database is another prep's: undoing ours would skip it
        screen.notify(
            "Cannot undo: another prep has rated a card since your last rating; yours stays saved.",
            severity="warning",
            timeout=8,
        )
        from prep.tui.screens.review import ReviewScreen

        if isinstance(screen, ReviewScreen):
            screen.set_hint(Text("Undo is not possible now: another prep rated since.", "dim"))
    elif card is None:
        screen.notify(NOTHING_TO_UNDO)
    return card
