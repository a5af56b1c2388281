"""Schema v13: the compact review log (issue 26, item 1), in one step.

Measured on a generated collection of 100k cards and 1M reviews (``dbstat``, after the
upgrade's VACUUM; tests/benchmarks/anki_bench.py): v12's review rows took 80 B each (a text
card id, and a 40-byte state record that repeated the row's own time as ``last_review``) and
its card index 18 B. Now:

- ``revlog`` holds the rows, with ``cn``, a card number, where ``reviews`` held the card's
  text id: ``review_cards (n, id)`` numbers every card the log names, once (a row there is
  never removed, so a number always names the same card). ``reviews_card`` indexes ``cn``.
- the states are the records of engine/store/reviewlog.py (about 26 bytes a usual review where
  v5's took 40): nothing the row or the card's chain already says is stored again.
- ``reviews`` is a view with v12's columns (``card_id`` the text id again), so that what reads
  or writes the log in SQL outside engine/store/ (sync's merge and journal) is unchanged:
  writes through it go to ``revlog`` by the triggers below (an INSERT takes its card's number,
  numbering a new card). The store's own statements on the paths a learner waits on (rating,
  undo, the counts) use ``revlog`` directly.

- ``reviews_at (at)`` replaces v11's ``reviews_at_state (at, prev_state, rating)`` (20.7 MB a
  million reviews, 16.9 now): the counts over the whole log by state and rating (true
  retention: it read all of that index, ~0.2 s at 1M reviews) are read from ``review_tally``,
  a dozen rows kept exact by triggers on ``revlog``; a range of time (today's counts, the last
  30 days' retention: ~60k reviews at 100k cards, ~15 ms more) reads the index's range and
  those rows.

``reviews_uid`` is v11's partial index, on ``revlog``.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from prep.engine.store.reviewlog import KEPT, Chain

if TYPE_CHECKING:
    from prep.engine.store.schema import UpgradeTracker

BATCH = 5_000
_COLS = "id, rating, at, duration_ms, prev_state, prev, next, dev, seq, params"
REVIEW_CARDS_SQL = (
    "CREATE TABLE IF NOT EXISTS review_cards (n INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE)"
)
REVLOG_SQL = (
    "CREATE TABLE IF NOT EXISTS revlog (id INTEGER PRIMARY KEY, cn INTEGER NOT NULL, "
    "rating INTEGER NOT NULL, at INTEGER NOT NULL, duration_ms INTEGER, "
    "prev_state INTEGER, prev BLOB, next BLOB NOT NULL, dev INTEGER NOT NULL DEFAULT 1, "
    "seq INTEGER, params INTEGER NOT NULL DEFAULT 1)"
)
VIEW_SQL = (
    "CREATE VIEW IF NOT EXISTS reviews AS SELECT r.id AS id, c.id AS card_id, r.rating AS rating, "
    "r.at AS at, r.duration_ms AS duration_ms, r.prev_state AS prev_state, r.prev AS prev, "
    "r.next AS next, r.dev AS dev, r.seq AS seq, r.params AS params "
    "FROM revlog AS r LEFT JOIN review_cards AS c ON c.n = r.cn"
)
_CN = "(SELECT n FROM review_cards WHERE id = new.card_id)"
TRIGGERS = (
    "CREATE TRIGGER IF NOT EXISTS reviews_insert INSTEAD OF INSERT ON reviews BEGIN "
    "INSERT OR IGNORE INTO review_cards (id) VALUES (new.card_id); "
    f"INSERT INTO revlog (cn, {_COLS}) VALUES ({_CN}, new.id, new.rating, new.at, "
    "new.duration_ms, new.prev_state, new.prev, new.next, coalesce(new.dev, 1), new.seq, "
    "coalesce(new.params, 1)); END",
    "CREATE TRIGGER IF NOT EXISTS reviews_update INSTEAD OF UPDATE ON reviews BEGIN "
    "INSERT OR IGNORE INTO review_cards (id) VALUES (new.card_id); "
    f"UPDATE revlog SET id = new.id, cn = {_CN}, rating = new.rating, at = new.at, "
    "duration_ms = new.duration_ms, prev_state = new.prev_state, prev = new.prev, "
    "next = new.next, dev = new.dev, seq = new.seq, params = new.params "
    "WHERE id = old.id; END",
    "CREATE TRIGGER IF NOT EXISTS reviews_delete INSTEAD OF DELETE ON reviews BEGIN "
    "DELETE FROM revlog WHERE id = old.id; END",
)


# the log's reviews counted by (fsrs state before, 0 for a new card; rating), kept exact by
# the triggers below: true retention and the counts over the whole log read a few rows
TALLY_SQL = (
    "CREATE TABLE IF NOT EXISTS review_tally (ps INTEGER NOT NULL, rating INTEGER NOT NULL, "
    "n INTEGER NOT NULL, PRIMARY KEY (ps, rating)) WITHOUT ROWID"
)
_COUNT = (
    "INSERT INTO review_tally (ps, rating, n) VALUES (coalesce(new.prev_state, 0), new.rating, 1) "
    "ON CONFLICT (ps, rating) DO UPDATE SET n = n + 1;"
)
_UNCOUNT = (
    "UPDATE review_tally SET n = n - 1 WHERE ps = coalesce(old.prev_state, 0) "
    "AND rating = old.rating;"
)
TALLY_TRIGGERS = (
    f"CREATE TRIGGER IF NOT EXISTS revlog_tally_insert AFTER INSERT ON revlog BEGIN {_COUNT} END",
    f"CREATE TRIGGER IF NOT EXISTS revlog_tally_delete AFTER DELETE ON revlog BEGIN {_UNCOUNT} END",
    "CREATE TRIGGER IF NOT EXISTS revlog_tally_update AFTER UPDATE OF prev_state, rating ON revlog "
    "WHEN old.prev_state IS NOT new.prev_state OR old.rating IS NOT new.rating "
    f"BEGIN {_UNCOUNT} {_COUNT} END",
)


def card_number(conn: sqlite3.Connection, card_id: str) -> int:
    """The number of ``card_id`` in review_cards (given one when the log first names it)."""
    row = conn.execute("SELECT n FROM review_cards WHERE id = ?", (card_id,)).fetchone()
    if row is not None:
        return int(row[0])
    return int(conn.execute("INSERT INTO review_cards (id) VALUES (?)", (card_id,)).lastrowid or 0)


def v12_to_v13(db: Any, progress: UpgradeTracker | None = None) -> None:
    conn = db.conn
    kind = conn.execute("SELECT type FROM sqlite_master WHERE name = 'reviews'").fetchone()
    if kind is not None and kind[0] == "table":
        _convert(conn, progress)
    # (and over a database that has it all: a test may set a newer one back to an older version)
    for sql in DDL:
        conn.execute(sql)
    if progress is not None:
        progress.finished("index")


DDL = (
    "CREATE INDEX IF NOT EXISTS reviews_card ON revlog (cn)",
    "CREATE INDEX IF NOT EXISTS reviews_at ON revlog (at)",
    "CREATE INDEX IF NOT EXISTS reviews_uid ON revlog (dev, seq) WHERE seq IS NOT NULL",
    VIEW_SQL,
    *TRIGGERS,
    *TALLY_TRIGGERS,
)


def _convert(conn: sqlite3.Connection, progress: UpgradeTracker | None) -> None:
    """v12's ``reviews`` table rewritten as ``revlog``, every row, and counted in the tally."""
    from prep.engine.store.reviewlog5 import Chain5

    conn.execute(REVIEW_CARDS_SQL)
    conn.execute(REVLOG_SQL)
    # the cards numbered in the order the log first names them
    conn.execute(
        "INSERT INTO review_cards (id) SELECT card_id FROM reviews GROUP BY card_id "
        "ORDER BY min(id)"
    )
    numbers = dict(conn.execute("SELECT id, n FROM review_cards"))
    old, new = Chain5(), Chain()
    cur = conn.execute(
        "SELECT id, card_id, rating, at, duration_ms, prev_state, prev, next, dev, seq, params "
        "FROM reviews ORDER BY id"
    )
    while rows := cur.fetchmany(BATCH):
        out = []
        for rid, cid, rating, at, dur, ps, prev, nxt, dev, seq, pn in rows:
            when = at if type(at) is int else None
            try:
                p, n = old.decode(cid, ps, prev, nxt)
                pb, nb = new.encode(cid, ps, p, n, when)
            except Exception:  # a damaged row (struct.error, ValueError, ...): kept as it was
                pb = None if prev is None else KEPT + _bytes(prev)
                nb = KEPT + _bytes(nxt)
            out.append((rid, numbers[cid], rating, at, dur, ps, pb, nb, dev, seq, pn))
        conn.executemany(
            "INSERT INTO revlog (id, cn, rating, at, duration_ms, prev_state, prev, next, dev, "
            "seq, params) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            out,
        )
        if progress is not None:
            progress.converted(len(out))
    drop_old_log_and_count(conn, progress)


def drop_old_log_and_count(conn: sqlite3.Connection, progress: UpgradeTracker | None) -> None:
    """After ``revlog`` is written: the old ``reviews`` table dropped (with its indexes) and
    the whole log counted into the tally (this step and engine/store/fused13.py's one pass)."""
    conn.execute("DROP TABLE reviews")  # and its indexes
    if progress is not None:
        progress.finished("drop")
    conn.execute(TALLY_SQL)
    conn.execute(
        "INSERT INTO review_tally (ps, rating, n) SELECT coalesce(prev_state, 0), rating, "
        "count(*) FROM revlog GROUP BY 1, 2"
    )


def _bytes(value: Any) -> bytes:
    """A damaged row's state column as bytes, whatever it holds (a hand edit: text, a number)."""
    return value if isinstance(value, bytes) else str(value).encode()
