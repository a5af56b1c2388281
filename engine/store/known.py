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
from prep.engine.store.schema import CARD_COLUMNS

if TYPE_CHECKING:
    from prep.engine.store.reviews import ReviewsStore
    from prep.engine.study.scheduler import CardState

Mark = tuple[int, int]

# what a card's stored state and the id its review would get are read by (Store.card_and_key)
CARD_AND_STAMP = (
    f"SELECT s.*, {', '.join(f'c.{c}' for c in CARD_COLUMNS)} FROM ({devices.STAMP_SQL}) s "
    "LEFT JOIN cards c ON c.id = ?"
)
# what a card shown reads (shown_card): changes_mark's data_version, the saved settings, the
# number of the scheduler's parameters, the review's id, the card's row and what a rating
# reads of it besides (reviews._RATED_ROW's last three: logged, its number in the log, its
# newest review), in one statement (one snapshot)
SHOWN = (
    "SELECT v.data_version, (SELECT value FROM meta WHERE key = 'settings'), "
    "(SELECT n FROM sched_params WHERE value = ?), "
    f"{CARD_AND_STAMP.removeprefix('SELECT ').replace(' FROM (', ' FROM pragma_data_version() v, (', 1)}"
    " LEFT JOIN review_cards rc ON rc.id = ?"  # (the card's id again: it may have no row)
).replace(
    " FROM pragma_data_version() v,",
    ", c.logged, rc.n, (SELECT max(id) FROM revlog WHERE cn = rc.n) FROM pragma_data_version() v,",
    1,
)
# the same, with the card's row in the deck cache at its file and line (deck_cache_card's first
# lookup: its line, deck, parent, demos, fields and content hash) as the last six columns: the
# hash that a rating compares, and what the card shown first is built from (shown_card_text)
SHOWN_TEXT = (
    SHOWN.replace(
        " FROM pragma_data_version() v,",
        ", d.key & 0xFFFFFFFF, d.deck, d.parent, d.demos, d.data, d.chash "
        "FROM pragma_data_version() v,",
        1,
    )
    + " LEFT JOIN deck_cards d ON d.key = (SELECT fid FROM deck_files WHERE path = ?) << 32 | ?"
    " AND d.id = ?"
)

# Store.shown_card's answer: the mark, the saved settings' text, the card's stored state, the id
# its review would get, its text's hash in the deck cache and the row id of its newest review
ShownRead = tuple[Mark, "str | None", "CardState | None", str, "str | None", "int | None"]


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
