"""What a rating already knows when nothing has been written since the card was shown (issue 26).

A rating guards against other writers (another terminal, a sync, `prep config`) by reading,
inside its write transaction, the card's row, the review's id and its parameters' number. But
the card shown was read a moment before by one statement (Store.shown_card) under a changes
mark, ``(PRAGMA data_version, total_changes)``: SQLite moves data_version whenever another
connection commits, and total_changes counts every row this connection writes. So when the
caller, holding the write lock (after BEGIN IMMEDIATE), reads the same mark again, nothing has
been written anywhere in between, and what shown_card read is what the rating would read: it is
used instead. Any other mark (a commit from elsewhere, a write of this connection's own: a mark,
an undo, a sync, a rolled-back rating) takes the reads as before.

The same statement reads the number of the scheduler's parameters (sched_params), which the
rating stores with its review, when they are the parameters the rating is made with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from prep.engine.store import devices

if TYPE_CHECKING:
    from prep.engine.store.reviews import ReviewsStore
    from prep.engine.study.scheduler import CardState

Mark = tuple[int, int]


class Shown(NamedTuple):
    """What shown_card read of a card, under ``mark``: its row (None when it has none), the
    review its row is the state after, its number in the log and its newest review, the
    stamp its review would take (devices.review_stamp) and the number of the scheduler's
    parameters in sched_params (None when not stored yet)."""

    card_id: str
    mark: Mark
    state: CardState | None
    logged: int | None
    cn: int | None
    last: int | None
    stamp: tuple[int, str, int]
    params: tuple[str | None, int | None]  # the parameters as stored, and their number


def rating(
    store: ReviewsStore, card_id: str, mark: Mark | None, params: dict[str, Any] | None
) -> tuple[Shown, int] | None:
    """What the rating of ``card_id`` can take without reading (the card as shown and its
    parameters' number), or None when anything may have changed since it was read."""
    shown = store._shown_read
    store._shown_read = None  # (used once: the rating writes)
    if mark is None or params is None or shown is None:
        return None
    if shown.card_id != card_id or shown.mark != mark:
        return None
    text, n = shown.params
    if n is None or text != devices.params_text(params):  # (settings followed since)
        return None
    return shown, n


def forget(store: ReviewsStore) -> None:
    """Nothing kept holds any more (the file's content was replaced under this connection)."""
    store._shown_read = None
