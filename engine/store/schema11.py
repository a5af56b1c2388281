"""Schema v11: the indexes that earn their bytes (issue 26, item 5), in one step.

Measured on a generated collection of 100k cards and 1M reviews (``dbstat``; the queries each
index serves, read with EXPLAIN QUERY PLAN in tests/test_indexes.py):

- ``reviews_at (at)`` 17.1 MB and ``reviews_state_at (prev_state, at, rating)`` 20.7 MB are
  merged into ``reviews_at_state (at, prev_state, rating)`` (20.7 MB): today's counts (new
  cards introduced, reviews against the daily limit: ``at >= today`` and a state) read today's
  short range of it; the study-day histogram and ``reviewed_between`` are ranges of ``at``;
  true retention (``prev_state = 2`` over the whole log) reads it whole, covering, as it read
  the Review state's ~90% of the old index. Saves 17 MB a million reviews.
- ``reviews_uid (dev, seq)`` 10.0 MB becomes partial, ``WHERE seq IS NOT NULL``: only a
  review received from another device has a ``seq``; a review made here is found by its row
  id (the sync's ``dev = ? AND seq = ?`` / ``seq > ?`` still read the index, ``seq IS NULL
  AND id > ?`` reads the row-id range past the last review sent). Saves ~10 MB a million
  reviews made here.
- ``deck_cards_kind (kind, key, id, dup)`` 4.2 MB goes: every new-card read names a level,
  and ``deck_cards_level (kind, level, key, id, dup)`` serves a kind alone too.
- ``deck_cards_id (id)`` (2.6 MB at 100k cards) is new: the cold open finds the day's cards
  by id (engine/decks/deckcache.py's ``_locate``) instead of reading every cached id.
- ``deck_seen (deck, n)``, new, a few rows: the cards with progress per deck, kept exact by
  triggers on ``cards`` (insert, delete, a change of deck or of ``removed``), so that "which
  decks still have new cards" is read, not counted over every card (a GROUP BY over the
  cards' index took 0.39 of a 1.06 s cold open at 1M cards).
- ``reviews_card (card_id)`` 18.1 MB stays: a card's own log (undo, every rating's chain,
  sync replay) is one range of it, as Anki's ``ix_revlog_cid``.

The dropped indexes' pages are given back by the VACUUM after the upgrade (Store._migrate).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prep.engine.store.schema import UpgradeTracker


def v10_to_v11(db: Any, progress: UpgradeTracker | None = None) -> None:
    conn = db.conn
    log = conn.execute("SELECT type FROM sqlite_master WHERE name = 'reviews'").fetchone()
    if log == ("table",):  # (a view over v13's revlog when a test sets a newer database back)
        conn.execute("DROP INDEX IF EXISTS reviews_at")
        conn.execute("DROP INDEX IF EXISTS reviews_state_at")
        conn.execute(
            "CREATE INDEX IF NOT EXISTS reviews_at_state ON reviews (at, prev_state, rating)"
        )
        conn.execute("DROP INDEX IF EXISTS reviews_uid")
        conn.execute("CREATE INDEX reviews_uid ON reviews (dev, seq) WHERE seq IS NOT NULL")
    conn.execute("DROP INDEX IF EXISTS deck_cards_kind")
    conn.execute("CREATE INDEX IF NOT EXISTS deck_cards_id ON deck_cards (id)")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS deck_seen (deck TEXT PRIMARY KEY, n INTEGER NOT NULL) "
        "WITHOUT ROWID"
    )
    conn.execute("DELETE FROM deck_seen")
    conn.execute(
        "INSERT INTO deck_seen (deck, n) SELECT deck, count(*) FROM cards WHERE removed = 0 "
        "GROUP BY deck"
    )
    conn.execute(
        "CREATE TRIGGER IF NOT EXISTS cards_seen_insert AFTER INSERT ON cards "
        "WHEN new.removed = 0 BEGIN "
        "INSERT INTO deck_seen (deck, n) VALUES (new.deck, 1) "
        "ON CONFLICT (deck) DO UPDATE SET n = n + 1; END"
    )
    conn.execute(
        "CREATE TRIGGER IF NOT EXISTS cards_seen_delete AFTER DELETE ON cards "
        "WHEN old.removed = 0 BEGIN "
        "UPDATE deck_seen SET n = n - 1 WHERE deck = old.deck; END"
    )
    conn.execute(
        "CREATE TRIGGER IF NOT EXISTS cards_seen_update AFTER UPDATE OF deck, removed ON cards "
        "WHEN old.deck IS NOT new.deck OR old.removed IS NOT new.removed BEGIN "
        "UPDATE deck_seen SET n = n - 1 WHERE deck = old.deck AND old.removed = 0; "
        "INSERT INTO deck_seen (deck, n) SELECT new.deck, 1 WHERE new.removed = 0 "
        "ON CONFLICT (deck) DO UPDATE SET n = n + 1; END"
    )
