"""Schema v14: what one answer writes (issue 26, answer -> next card), in one step.

Measured on the generated collection of 100k cards and 1M reviews right after its upgrade
(tests/benchmarks/answer_bench.py --profile: the WAL frames of each answer's commit, each
mapped to the b-tree that owns its page): a v13 answer wrote 23 pages (94 KB, all synced),
~4 in each of the three ``cards`` indexes that an answer moves (the upgrade's VACUUM leaves
every page full, so an entry inserted splits its page), and it read the card's whole review
log to decide how to store the state before the review. v14: 14 pages (57 KB), no log read.

- ``cards_due (removed, due, state, deck)`` is the one index of every card's due time, where
  v13 had two: ``cards_removed_due (removed, due)`` and ``cards_removed_state_due (removed,
  state, due, deck)``. The queue's reviews, the counts of cards due and the forecast are
  ranges of it; home's count of review cards due per deck reads it covering.
- ``cards_learning (removed, state, due, deck) WHERE state != 2``: the few cards in learning
  or relearning (and any other state but Review), so that the learning steps due are found
  without stepping over every overdue Review card (each answer asks). A Review card that
  stays in Review is not in it: its answer does not touch it.
- ``cards_removed_deck (removed, deck, stability)`` goes (2.6 MB at 100k cards; an answer
  moved its entry by the card's new stability): mastery per deck reads the cards seen and,
  new, the mature ones (stability >= 21 days) from ``deck_seen`` (schema v11), whose
  triggers on ``cards`` now count both. An answer writes ``deck_seen`` only when its card
  crosses the threshold.
- ``review_tally`` (v13: the log counted by state before and rating, kept by a trigger on
  every insert, one page written by every answer) counts the rows up to a mark, its row
  ``(-1, 0)`` whose ``n`` is the highest row id counted: the rows past it, a rating's own
  among them, are counted when read (a range of row ids, at most FOLD of them after a
  rating) and folded in by the rating whose id is a multiple of FOLD. Deletes and edits of
  counted rows keep the tally exact by triggers, as in v13.
- ``cards.logged``: the id of the review whose ``next`` state this row is, exactly (set by
  each rating, made NULL by the trigger below on any other change of the row). When it is
  still the card's newest review, a rating stores the state before it as NULL ("that
  review's next": engine/store/reviewlog.py) without reading the card's log, which v13 read
  whole on every rating; in any other case (a card last rated before v14, or changed since
  by a sync, an undo, a deck edit) the state before is stored in full (a whole record,
  once), as a sync stores the first review of a chain it starts. The log is read only by
  what needs its states (undo, export, replay).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prep.engine.store.schema import UpgradeTracker

MATURE_DAYS = 21.0  # engine/study/stats.py's (Anki's threshold for a "mature" card)
_MATURE = f"(coalesce({{row}}.stability, 0) >= {MATURE_DAYS!r})"  # 1 or 0
NOT_REVIEW_SQL = "state != 2"  # cards_learning's condition (fsrs State.Review is 2)
_OLD, _NEW = _MATURE.format(row="old"), _MATURE.format(row="new")
# deck_seen (schema v11) counts the live cards per deck and, since v14, the mature ones
SEEN_TRIGGERS = (
    "CREATE TRIGGER cards_seen_insert AFTER INSERT ON cards WHEN new.removed = 0 BEGIN "
    f"INSERT INTO deck_seen (deck, n, mature) VALUES (new.deck, 1, {_NEW}) "
    "ON CONFLICT (deck) DO UPDATE SET n = n + 1, mature = mature + excluded.mature; END",
    "CREATE TRIGGER cards_seen_delete AFTER DELETE ON cards WHEN old.removed = 0 BEGIN "
    f"UPDATE deck_seen SET n = n - 1, mature = mature - {_OLD} WHERE deck = old.deck; END",
    "CREATE TRIGGER cards_seen_update AFTER UPDATE OF deck, removed, stability ON cards "
    f"WHEN old.deck IS NOT new.deck OR old.removed IS NOT new.removed OR {_OLD} != {_NEW} "
    "BEGIN "
    f"UPDATE deck_seen SET n = n - 1, mature = mature - {_OLD} "
    "WHERE deck = old.deck AND old.removed = 0; "
    f"INSERT INTO deck_seen (deck, n, mature) SELECT new.deck, 1, {_NEW} WHERE new.removed = 0 "
    "ON CONFLICT (deck) DO UPDATE SET n = n + 1, mature = mature + excluded.mature; END",
)

FOLD = 1024  # rows past the tally's mark read by a count before a rating folds them in
TALLY_MARK = "(SELECT n FROM review_tally WHERE ps = -1 AND rating = 0)"
_COUNT = (
    "INSERT INTO review_tally (ps, rating, n) SELECT coalesce(new.prev_state, 0), new.rating, "
    f"1 WHERE new.id <= {TALLY_MARK} ON CONFLICT (ps, rating) DO UPDATE SET n = n + 1;"
)
_UNCOUNT = (
    "UPDATE review_tally SET n = n - 1 WHERE ps = coalesce(old.prev_state, 0) "
    f"AND rating = old.rating AND old.id <= {TALLY_MARK};"
)
TALLY_TRIGGERS = (
    f"CREATE TRIGGER revlog_tally_insert AFTER INSERT ON revlog WHEN new.id <= {TALLY_MARK} "
    f"BEGIN {_COUNT} END",
    f"CREATE TRIGGER revlog_tally_delete AFTER DELETE ON revlog WHEN old.id <= {TALLY_MARK} "
    f"BEGIN {_UNCOUNT} END",
    "CREATE TRIGGER revlog_tally_update AFTER UPDATE OF id, prev_state, rating ON revlog "
    "WHEN old.id IS NOT new.id OR old.prev_state IS NOT new.prev_state "
    f"OR old.rating IS NOT new.rating BEGIN {_UNCOUNT} {_COUNT} END",
)


def fold_tally(conn: Any) -> None:
    """Count the log's rows past the tally's mark into it and move the mark to the newest
    row (inside the caller's write transaction). A database without the mark (none yet)
    is left as it is."""
    mark = conn.execute(f"SELECT {TALLY_MARK}").fetchone()[0]
    if mark is None:
        return
    conn.execute(
        "INSERT INTO review_tally (ps, rating, n) SELECT coalesce(prev_state, 0), rating, "
        "count(*) FROM revlog WHERE id > ? GROUP BY 1, 2 "
        "ON CONFLICT (ps, rating) DO UPDATE SET n = n + excluded.n",
        (mark,),
    )
    conn.execute(
        "UPDATE review_tally SET n = (SELECT coalesce(max(id), ?) FROM revlog) "
        "WHERE ps = -1 AND rating = 0",
        (mark,),
    )


def catch_up_tally(conn: Any) -> bool:
    """Fold the tally when FOLD rows or more wait past its mark (inside the caller's write
    transaction): the end of an import or a sync that added many rows, which no rating folds
    in, so a count never reads more than FOLD rows past the mark. True when it folded."""
    mark = conn.execute(f"SELECT {TALLY_MARK}").fetchone()[0]
    if mark is None:
        return False
    (waiting,) = conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM revlog WHERE id > ? LIMIT ?)", (mark, FOLD)
    ).fetchone()
    if waiting < FOLD:
        return False
    fold_tally(conn)
    return True


DDL = (
    "DROP INDEX IF EXISTS cards_removed_due",
    "DROP INDEX IF EXISTS cards_removed_state_due",
    "DROP INDEX IF EXISTS cards_removed_deck",
    "CREATE INDEX IF NOT EXISTS cards_due ON cards (removed, due, state, deck)",
    "CREATE INDEX IF NOT EXISTS cards_learning ON cards (removed, state, due, deck) "
    f"WHERE {NOT_REVIEW_SQL}",
    # any change of a row but a rating's (which sets logged to its own review) clears it
    "CREATE TRIGGER IF NOT EXISTS cards_logged AFTER UPDATE ON cards "
    "WHEN old.logged IS NOT NULL AND new.logged IS old.logged BEGIN "
    "UPDATE cards SET logged = NULL WHERE id = new.id; END",
)


def v13_to_v14(db: Any, progress: UpgradeTracker | None = None) -> None:
    conn = db.conn
    # (written to run again over a database that has it all: a test sets a newer one back)
    if not any(r[1] == "logged" for r in conn.execute("PRAGMA table_info(cards)")):
        conn.execute("ALTER TABLE cards ADD COLUMN logged INTEGER")
    if not any(r[1] == "mature" for r in conn.execute("PRAGMA table_info(deck_seen)")):
        conn.execute("ALTER TABLE deck_seen ADD COLUMN mature INTEGER NOT NULL DEFAULT 0")
    for sql in DDL:
        conn.execute(sql)
    # the tally (exact over the whole log until now) gets its mark: or, over a database that
    # has one (a test sets a newer one back), the rows past it are folded in first
    if conn.execute(f"SELECT {TALLY_MARK}").fetchone()[0] is None:
        conn.execute(
            "INSERT INTO review_tally (ps, rating, n) "
            "SELECT -1, 0, coalesce(max(id), 0) FROM revlog WHERE 1"
        )
    else:
        fold_tally(conn)
    for name in ("insert", "delete", "update"):
        conn.execute(f"DROP TRIGGER IF EXISTS revlog_tally_{name}")
    for sql in TALLY_TRIGGERS:
        conn.execute(sql)
    for name in ("insert", "delete", "update"):
        conn.execute(f"DROP TRIGGER IF EXISTS cards_seen_{name}")
    for sql in SEEN_TRIGGERS:
        conn.execute(sql)
    conn.execute("DELETE FROM deck_seen")
    conn.execute(
        f"INSERT INTO deck_seen (deck, n, mature) SELECT deck, count(*), sum({_MATURE.format(row='cards')}) "
        "FROM cards WHERE removed = 0 GROUP BY deck"
    )
