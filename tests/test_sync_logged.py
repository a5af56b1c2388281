"""A sync (and an import that merges reviews) writes a card's state with ``logged`` (schema
v14: the review whose state the row is), so the next rating here stores the state before it
as "that review's next" (NULL) and never reads or repeats it in full. Round seven's sync left
``logged`` NULL: the next local rating stored the state in full, once."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from prep.engine.store import Store
from prep.engine.sync.run import sync
from tests.test_sync import T0, rate, stores, view


def _logged(store: Store, cid: str) -> tuple[int | None, int | None]:
    """(cards.logged, the card's newest review row id)."""
    return store.conn.execute(
        "SELECT c.logged, (SELECT max(r.id) FROM revlog r JOIN review_cards k ON k.n = r.cn "
        "WHERE k.id = c.id) FROM cards c WHERE c.id = ?",
        (cid,),
    ).fetchone()


def _newest_prev_blob(store: Store, cid: str) -> bytes | None:
    return store.conn.execute(
        "SELECT r.prev FROM revlog r JOIN review_cards k ON k.n = r.cn WHERE k.id = ? "
        "ORDER BY r.id DESC LIMIT 1",
        (cid,),
    ).fetchone()[0]


def test_a_card_a_sync_brings_or_extends_is_logged_and_the_next_rating_stores_no_state(
    tmp_path: Path,
) -> None:
    (a, b), folder = stores(tmp_path, 2)
    rate(a, "new", 3, T0)  # new on b: replayed from nothing
    rate(b, "x", 3, T0)
    sync(b, folder)
    sync(a, folder)
    rate(a, "x", 3, T0 + timedelta(days=2))  # after b's last: appended to b's state
    rate(b, "y", 3, T0 + timedelta(days=1))
    rate(a, "y", 1, T0)  # before b's: y is replayed on b
    sync(a, folder)
    sync(b, folder)
    for cid in ("new", "x", "y"):
        logged, newest = _logged(b, cid)
        assert logged is not None and logged == newest, cid
        before = b.card(cid)
        rate(b, cid, 3, T0 + timedelta(days=30))
        assert _newest_prev_blob(b, cid) is None, cid  # "that review's next"
        assert b.reviews(card_id=cid)[-1].prev == before  # and it decodes to the row's state
    sync(b, folder)
    sync(a, folder)
    assert view(a) == view(b)


def test_a_replay_that_leaves_the_row_unlike_its_newest_review_is_not_logged(
    tmp_path: Path,
) -> None:
    """A row that a deck edit changed since (``changed``) keeps that flag through a replay;
    it is then not its newest review's state, and ``logged`` stays NULL (the next rating
    stores the state before it in full, as it must)."""
    (a, b), folder = stores(tmp_path, 2)
    rate(b, "x", 3, T0 + timedelta(days=1))
    b.conn.execute("UPDATE cards SET changed = 1 WHERE id = 'x'")
    rate(a, "x", 1, T0)
    sync(a, folder)
    sync(b, folder)
    assert b.card("x").changed
    assert _logged(b, "x")[0] is None
    before = b.card("x")
    rate(b, "x", 3, T0 + timedelta(days=30))
    assert b.reviews(card_id="x")[-1].prev == before
