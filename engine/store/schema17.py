"""Schema v17: each card row that is its newest review's state is marked so (``logged``).

v14 added ``cards.logged`` (engine/store/schema14.py): the id of the review whose ``next``
state the card's row is, set by each rating, sync and import since. Its upgrade left the
column NULL on every card rated before it, so each such card's next rating stores the state
before it in full (a whole record, two ``pack`` calls, a bigger row) instead of as "that
review's next". A learner pays it once a card; the benchmark collection (generated as a v3
database and upgraded) paid it on every answer it measured.

This step walks the log of each card still unmarked, in id order along its chain (as undo
and export read it), and marks the row with its newest review's id when the row is exactly
that review's ``next`` state: the test a sync and an import make before they mark a row
(engine/store/transfer.py ``log_if_newest``). A row that differs, a log that cannot be read
(damaged, or a state kept verbatim) or a card without reviews stays NULL: stored in full by
its next rating, never wrong. Run again over a marked database, it visits nothing.

Measured on the generated 100k cards / 1M reviews: ~17 s of CPU on the 2-core machine,
once (decoding every state of the log).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prep.engine.store.schema import UpgradeTracker

_PAGE = 5_000  # cards read, walked and marked at a time (memory stays bounded at 1M cards)


def v16_to_v17(db: Any, progress: UpgradeTracker | None = None) -> None:
    from prep.engine.store.cards import _row_to_state
    from prep.engine.store.reviewlog import Chain
    from prep.engine.store.schema import CARD_COLUMNS

    conn = db.conn
    cols = ", ".join(f"c.{c}" for c in CARD_COLUMNS)
    after = -1
    last = (
        0
        if progress is None
        else conn.execute("SELECT max(n) FROM review_cards").fetchone()[0] or 0
    )
    while True:
        # a page of unmarked cards in the log's card order (read whole, so that no statement
        # writes a table another is still stepping through)
        page = conn.execute(
            f"SELECT rc.n, {cols} FROM review_cards rc JOIN cards c ON c.id = rc.id "
            "WHERE rc.n > ? AND c.logged IS NULL ORDER BY rc.n LIMIT ?",
            (after, _PAGE),
        ).fetchall()
        if not page:
            break
        after = page[-1][0]
        marks = []
        for n, *row in page:
            mark = _newest_if_row(conn, n, row, Chain(), _row_to_state)
            if mark is not None:
                marks.append((mark, row[0]))
        conn.executemany("UPDATE cards SET logged = ? WHERE id = ?", marks)
        if progress is not None and last:  # (the walk is ~17 s at 1M reviews: said as it goes)
            progress.part("logged", after / last)
    if progress is not None:
        progress.finished("logged")


def _newest_if_row(conn: Any, n: int, row: list, chain: Any, to_state: Any) -> int | None:
    """The id of card number ``n``'s newest review when ``row`` (its cards row) is exactly
    that review's ``next`` state; None when it is not, the card has no review, or its log
    cannot be read."""
    cid = row[0]
    newest = state = None
    try:
        for rid, prev_state, prev, nxt, at in conn.execute(
            "SELECT id, prev_state, prev, next, at FROM revlog WHERE cn = ? ORDER BY id", (n,)
        ):
            _prev, state = chain.decode(cid, prev_state, prev, nxt, at)
            newest = rid
        return newest if newest is not None and to_state(row) == state else None
    except Exception:  # struct.error, ValueError...: whatever a damaged or hand-edited row holds
        return None
