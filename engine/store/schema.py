"""The progress database's tables: their columns (in one order, shared by the SELECTs, the
export and its CSV headers) and the migrations that build them.

Tables (the schema version is in ``meta``):

- ``cards``: scheduling state per card id (a row exists once a card has been reviewed);
  since v14 indexed by due time once, and by the review whose state it is (``logged``):
  engine/store/schema14.py; v17 marks the rows rated before v14 (engine/store/schema17.py).
- ``reviews``: the append-only log: card, time (whole microseconds since the epoch, UTC),
  rating, duration, the fsrs state before, and the card's state before and after in the
  compact form of engine/store/reviewlog.py (v13; v5 to v12 wrote reviewlog5.py's, up to v4
  both states were JSON text), so undo restores the exact previous state and the export
  gives both. Since v13 a view over ``revlog``, whose rows name their card by number
  (``review_cards``), with ``review_tally`` counting them by state and rating:
  engine/store/schema13.py.
- ``deck_files``, ``deck_cards``, ``deck_tags``: the parsed decks (engine/decks/deckcache.py), so
  that start-up re-parses only what changed (v4; v6 added each card's kind; v8 indexes the
  unseen cards by kind and the cards that cite a demo; v9 adds each card's curriculum level;
  v12 each file's identity, ``ident``, which older preps added on the first write needing it;
  v15 puts the files' small columns before ``declared``: engine/store/schema15.py).
- ``card_marks``: suspend / bury / flag (v10; before it, created on the first mark).
- ``demo_runs``: every demo run (name, device, passed, seconds, the full report); v16
  indexes it by (name, ran_at): engine/store/schema16.py.
- ``meta``: schema version and settings.
- ``sync_devices``, ``sched_params``, ``review_graves``, ``mark_clock`` (v9): what merging
  progress between installations needs (engine/sync/): every review's globally unique id
  (its device and sequence number), the scheduler parameters it was made with, the undone
  reviews (tombstones), and each mark's last-writer-wins stamp.

Only engine/store/ uses this module directly; the export reuses the column lists.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prep.engine.store.schema11 import v10_to_v11
from prep.engine.store.schema13 import v12_to_v13
from prep.engine.store.schema14 import v13_to_v14
from prep.engine.store.schema15 import v14_to_v15
from prep.engine.store.schema16 import v15_to_v16
from prep.engine.store.schema17 import v16_to_v17

SCHEMA_VERSION = 17
BATCH = 5_000  # review log rows rewritten per executemany (and per progress report)

CARD_COLUMNS = (
    "id",  # card id (the slug in the deck file)
    "deck",  # deck name when last reconciled
    "state",  # fsrs state: 1 learning, 2 review, 3 relearning
    "step",  # learning step index (empty in the review state)
    "stability",  # FSRS stability, days
    "difficulty",  # FSRS difficulty, 1..10
    "due",  # next due time, UTC ISO-8601
    "last_review",  # last review time, UTC ISO-8601
    "reps",  # number of reviews
    "lapses",  # times forgotten after graduating
    "leech",  # 1 when lapses reached the leech threshold
    "content_hash",  # hash of the card text when last reconciled
    "changed",  # 1 when the card text changed since the last review
    "removed",  # 1 when the card is no longer in any deck
)
REVIEW_COLUMNS = (
    "card_id",
    "reviewed_at",  # UTC ISO-8601
    "rating",  # 1 Again, 2 Hard, 3 Good, 4 Easy
    "duration_ms",  # time from showing the card to rating it
    "prev_state",  # fsrs state before the review (empty for a new card)
    "prev",  # card state before the review, JSON (empty for a new card)
    "next",  # card state after the review, JSON
    # the review's own id, everywhere it travels (export, import, sync): the device that made
    # it (16 hex digits) and its sequence number there (empty in exports of older preps)
    "device",
    "seq",
    # the scheduler parameters it was made with (a replay on any machine uses them): in JSON
    # the key of the export's "params" object, in CSV the parameters as JSON
    "params",
)
# the columns an export from before review ids has (an import still reads it)
REVIEW_COLUMNS_V1 = REVIEW_COLUMNS[:7]
DEMO_RUN_COLUMNS = (
    "name",
    "device",
    "device_name",
    "dtype",
    "scale",
    "seed",
    "passed",  # 1 when every check held
    "seconds",
    "metrics",  # the demo's report, JSON
    "ran_at",  # UTC ISO-8601
)
MARK_COLUMNS = (
    "card_id",
    "suspended",  # 1 when suspended (never served until unsuspended)
    "buried_until",  # UTC ISO-8601: left out of the queue until then (empty: not buried)
    "flagged",  # 1 when flagged
)
MARKS_SQL = (
    "CREATE TABLE IF NOT EXISTS card_marks (card_id TEXT PRIMARY KEY, "
    "suspended INTEGER NOT NULL DEFAULT 0, buried_until TEXT, "
    "flagged INTEGER NOT NULL DEFAULT 0)"
)
# Fields that describe a card's schedule (deck, content_hash, changed and removed describe the
# local decks and are reconciled by Store.reconcile).
SCHEDULE_COLUMNS = (
    "state",
    "step",
    "stability",
    "difficulty",
    "due",
    "last_review",
    "reps",
    "lapses",
    "leech",
)


# The first three steps, in the words sqlite_utils wrote them in (its Table.create and
# create_index, which built them until round nine): sqlite_master keeps each statement's text,
# so a new database and one made by an older prep hold the same schema, and a new database
# is made without importing sqlite_utils (and click, and pandas when installed) at all
# (tests/test_schema_plain.py holds the text equal to sqlite_utils').
def _table(name: str, columns: str) -> str:
    body = ",\n".join(f"   {c}" for c in columns.strip().splitlines())
    return f'CREATE TABLE IF NOT EXISTS "{name}" (\n{body}\n)'


def _index(name: str, table: str, *columns: str) -> str:
    cols = ", ".join(f'"{c}"' for c in columns)
    return f'CREATE INDEX IF NOT EXISTS "{name}"\n    ON "{table}" ({cols})'


V1 = (
    _table(
        "meta",
        """
"key" TEXT PRIMARY KEY
"value" TEXT
""",
    ),
    _table(
        "cards",
        """
"id" TEXT PRIMARY KEY
"deck" TEXT NOT NULL DEFAULT \'\'
"state" INTEGER NOT NULL
"step" INTEGER
"stability" REAL
"difficulty" REAL
"due" TEXT
"last_review" TEXT
"reps" INTEGER NOT NULL DEFAULT 0
"lapses" INTEGER NOT NULL DEFAULT 0
"leech" INTEGER NOT NULL DEFAULT 0
"content_hash" TEXT
"changed" INTEGER NOT NULL DEFAULT 0
"removed" INTEGER NOT NULL DEFAULT 0
""",
    ),
    _index("cards_removed_due", "cards", "removed", "due"),
    _table(
        "reviews",
        """
"id" INTEGER PRIMARY KEY
"card_id" TEXT NOT NULL
"rating" INTEGER NOT NULL
"reviewed_at" TEXT NOT NULL
"duration_ms" INTEGER
"prev_state" INTEGER
"prev" TEXT
"next" TEXT NOT NULL
""",
    ),
    _index("reviews_card", "reviews", "card_id"),
    _index("reviews_at", "reviews", "reviewed_at"),
    _table(
        "demo_runs",
        """
"id" INTEGER PRIMARY KEY
"name" TEXT NOT NULL
"device" TEXT NOT NULL
"device_name" TEXT
"dtype" TEXT
"scale" TEXT
"seed" INTEGER
"passed" INTEGER NOT NULL
"seconds" REAL NOT NULL
"metrics" TEXT
"ran_at" TEXT NOT NULL
""",
    ),
    _index("demo_runs_name", "demo_runs", "name"),
)


def _v0_to_v1(db: Any, progress: UpgradeTracker | None = None) -> None:
    for sql in V1:
        db.execute(sql)


def _v1_to_v2(db: Any, progress: UpgradeTracker | None = None) -> None:
    # true retention counts reviews by the state they were made in: a covering index keeps
    # `prep stats` quick on a log of a million reviews
    db.execute(_index("reviews_state_at", "reviews", "prev_state", "reviewed_at", "rating"))
    # mastery per deck is a grouped count over live cards
    db.execute(_index("cards_removed_deck", "cards", "removed", "deck", "stability"))


def _v2_to_v3(db: Any, progress: UpgradeTracker | None = None) -> None:
    # the queue asks for due cards by fsrs state (learning steps uncapped, reviews capped),
    # most overdue first: an index range per state instead of a walk over every due card
    db.execute(_index("cards_removed_state_due", "cards", "removed", "state", "due"))


def _v3_to_v4(db: Any, progress: UpgradeTracker | None = None) -> None:
    # the deck cache (engine/decks/deckcache.py): one row per deck file (its stat, hash, parse
    # errors), one per card (the outline columns the queue and the reconciliation read in SQL, and the
    # card's fields as JSON, read when the card is shown), keyed by file id << 32 | line so
    # that a file's cards are one rowid range, in file order, with no index beside
    db.execute(
        "CREATE TABLE IF NOT EXISTS deck_files (fid INTEGER PRIMARY KEY, "
        "path TEXT NOT NULL UNIQUE, shown TEXT NOT NULL, "
        "size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, sha256 TEXT NOT NULL, "
        "checked_ns INTEGER NOT NULL, info TEXT, declared TEXT NOT NULL, errors TEXT NOT NULL, "
        "ord INTEGER)"
    )
    db.execute(
        "CREATE TABLE IF NOT EXISTS deck_cards (key INTEGER PRIMARY KEY, "
        "id TEXT NOT NULL, deck TEXT NOT NULL, parent TEXT, demos TEXT NOT NULL, "
        "chash TEXT NOT NULL, data TEXT NOT NULL, dup INTEGER NOT NULL DEFAULT 0)"
    )
    # the few cards the checks across files left out (duplicate ids), by key
    db.execute("CREATE INDEX IF NOT EXISTS deck_cards_dup ON deck_cards (key) WHERE dup = 1")
    # each tag of each card, in id order: mastery per tag walks it beside the cards' id index
    db.execute(
        "CREATE TABLE IF NOT EXISTS deck_tags (id TEXT NOT NULL, tag TEXT NOT NULL, "
        "key INTEGER NOT NULL, PRIMARY KEY (id, tag, key)) WITHOUT ROWID"
    )


def _v4_to_v5(db: Any, progress: UpgradeTracker | None = None) -> None:
    # the compact review log (engine/store/reviewlog.py): every row converted, nothing lost; the
    # store vacuums afterwards so that the file shrinks
    if progress is not None and progress.straight_to_v13:
        # an upgrade past v13: the log goes to v13's form in one pass (engine/store/fused13.py)
        from prep.engine.store.fused13 import v4_log_to_v13

        v4_log_to_v13(db.conn, progress)
        db.execute("CREATE INDEX IF NOT EXISTS cards_leech ON cards (id) WHERE leech = 1")
        db.execute("CREATE INDEX IF NOT EXISTS cards_changed ON cards (id) WHERE changed = 1")
        return
    from prep.engine.store.reviewlog import legacy_state, to_us
    from prep.engine.store.reviewlog5 import Chain5 as Chain
    from prep.engine.timeutil import parse

    db.execute(
        "CREATE TABLE reviews_v5 (id INTEGER PRIMARY KEY, card_id TEXT NOT NULL, "
        "rating INTEGER NOT NULL, at INTEGER NOT NULL, duration_ms INTEGER, "
        "prev_state INTEGER, prev BLOB, next BLOB NOT NULL)"
    )
    chain = Chain()
    last_text: dict[str, str] = {}  # each card's latest next, as text: most prevs equal it
    cur = db.conn.execute(
        "SELECT id, card_id, rating, reviewed_at, duration_ms, prev_state, prev, next "
        "FROM reviews ORDER BY id"
    )
    while rows := cur.fetchmany(BATCH):
        out = []
        for rid, cid, rating, at, dur, prev_state, prev, nxt in rows:
            same = prev is not None and prev == last_text.get(cid)
            # the states' fields are checked against the record by packing them (a state
            # that does not fit is kept verbatim: asked again, with the check)
            prev_s = chain.last[cid] if same else legacy_state(prev, check=False)
            try:
                pb, nb = chain.encode(cid, prev_state, prev_s, legacy_state(nxt, check=False))
            except (ValueError, OverflowError, struct.error):
                prev_s = chain.last[cid] if same else legacy_state(prev)
                pb, nb = chain.encode(cid, prev_state, prev_s, legacy_state(nxt))
            last_text[cid] = nxt
            out.append((rid, cid, rating, to_us(parse(at)), dur, prev_state, pb, nb))
        db.conn.executemany("INSERT INTO reviews_v5 VALUES (?, ?, ?, ?, ?, ?, ?, ?)", out)
        if progress is not None:
            progress.converted(len(out))
    db.execute("DROP TABLE reviews")
    if progress is not None:
        progress.finished("drop")
    db.execute("ALTER TABLE reviews_v5 RENAME TO reviews")
    db.execute("CREATE INDEX reviews_card ON reviews (card_id)")
    db.execute("CREATE INDEX reviews_at ON reviews (at)")
    # true retention and the daily review limit count reviews by the state they were made
    # in: covering, so neither reads the table
    db.execute("CREATE INDEX reviews_state_at ON reviews (prev_state, at, rating)")
    if progress is not None:
        progress.finished("index")
    # leeches and edited cards are few: partial indexes, so stats never walks every card
    db.execute("CREATE INDEX IF NOT EXISTS cards_leech ON cards (id) WHERE leech = 1")
    db.execute("CREATE INDEX IF NOT EXISTS cards_changed ON cards (id) WHERE changed = 1")


def _v5_to_v6(db: Any, progress: UpgradeTracker | None = None) -> None:
    # each cached card's kind as a column: the new-card rotation over (deck, kind) groups
    # reads it for the unseen cards in SQL. The cache is emptied (it is rebuilt from the deck
    # files on the next open; progress is untouched).
    db.execute("ALTER TABLE deck_cards ADD COLUMN kind TEXT NOT NULL DEFAULT ''")
    db.execute("DELETE FROM deck_tags")
    db.execute("DELETE FROM deck_cards")
    db.execute("DELETE FROM deck_files")
    db.execute("DELETE FROM meta WHERE key IN ('deck_assembly', 'deck_sync')")


def _v6_to_v7(db: Any, progress: UpgradeTracker | None = None) -> None:
    # every open reads each loaded card's (line, id, duplicate) by key range: from this
    # covering index, not from the table's rows, whose cached card text (JSON) would be
    # read along (at 100k cards: ~40 MB of pages for ~4 MB of ids)
    db.execute("CREATE INDEX IF NOT EXISTS deck_cards_ids ON deck_cards (key, id, dup)")


def _v7_to_v8(db: Any, progress: UpgradeTracker | None = None) -> None:
    # the new-card rotation reads each loaded file's unseen cards of one kind, in file order,
    # only as far as the day's limit needs: an index range per (kind, file), not a walk over
    # the file's rows (a kind a file lacks costs one probe)
    db.execute("CREATE INDEX IF NOT EXISTS deck_cards_kind ON deck_cards (kind, key, id, dup)")
    # home's counts per deck (learning steps and reviews due now) are one grouped count over
    # the due cards of each state: with the deck in the index, that count reads no card row
    db.execute("DROP INDEX IF EXISTS cards_removed_state_due")
    db.execute("CREATE INDEX cards_removed_state_due ON cards (removed, state, due, deck)")
    # "cards that cite this demo": the few cards that cite any, not every cached card's text
    db.execute(
        "CREATE INDEX IF NOT EXISTS deck_cards_demos ON deck_cards (key, id, demos) "
        "WHERE demos != ''"
    )


def _v8_to_v9(db: Any, progress: UpgradeTracker | None = None) -> None:
    # the curriculum: each cached card's level (0 basics, 1 core, 2 advanced) as a column, so
    # that the day's new cards are read level by level, kind by kind, from an index range per
    # (kind, level, file), only as far as the new-card limit needs. The cache is emptied: its
    # cards were cached without a level (it is rebuilt from the deck files on the next open;
    # progress is untouched).
    columns = {row[1] for row in db.execute("PRAGMA table_info(deck_cards)").fetchall()}
    if "level" not in columns:  # (a test may hand a newer table back as an older version)
        db.execute("ALTER TABLE deck_cards ADD COLUMN level INTEGER NOT NULL DEFAULT 1")
    db.execute("DELETE FROM deck_tags")
    db.execute("DELETE FROM deck_cards")
    db.execute("DELETE FROM deck_files")
    db.execute("DELETE FROM meta WHERE key IN ('deck_assembly', 'deck_sync')")
    db.execute(
        "CREATE INDEX IF NOT EXISTS deck_cards_level ON deck_cards (kind, level, key, id, dup)"
    )


def _v9_to_v10(db: Any, progress: UpgradeTracker | None = None) -> None:
    # progress on several machines (engine/sync/): cheap on a big log. ALTER ... ADD COLUMN
    # rewrites no row: every existing review is this device's (dev 1), its sequence number
    # its row id (seq NULL), made with the settings saved now (params 1). (Written to run
    # again over a database that has it all: a test sets an older version back.)
    import json
    import secrets
    import socket

    from prep.engine.study.scheduler import Settings, replay_params

    conn = db.conn

    def columns(table: str) -> set[str]:
        return {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}

    conn.execute(
        "CREATE TABLE IF NOT EXISTS sync_devices (n INTEGER PRIMARY KEY, id TEXT NOT NULL "
        "UNIQUE, name TEXT NOT NULL DEFAULT '', applied INTEGER NOT NULL DEFAULT 0, "
        "wrote_at TEXT, applied_at TEXT)"
    )
    conn.execute(
        "INSERT OR IGNORE INTO sync_devices (n, id, name) VALUES (1, ?, ?)",
        (secrets.token_hex(8), socket.gethostname()[:64]),
    )
    conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('device', '1')")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS sched_params (n INTEGER PRIMARY KEY, "
        "value TEXT NOT NULL UNIQUE)"
    )
    row = conn.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()
    try:
        settings = Settings.from_dict(json.loads(row[0])).validated() if row else Settings()
    except (TypeError, ValueError, AttributeError):
        settings = Settings()
    conn.execute(
        "INSERT OR IGNORE INTO sched_params (n, value) VALUES (1, ?)",
        (json.dumps(replay_params(settings, True, 0, fuzz_by=None), sort_keys=True),),
    )
    have = columns("reviews")
    for column, kind in (
        ("dev", "INTEGER NOT NULL DEFAULT 1"),
        ("seq", "INTEGER"),
        ("params", "INTEGER NOT NULL DEFAULT 1"),
    ):
        if column not in have:
            conn.execute(f"ALTER TABLE reviews ADD COLUMN {column} {kind}")
    # a review's id is (device, coalesce(seq, id)): one index finds a review by it, and the
    # reviews this device has not yet written to its journal (dev = me, id past the last sent)
    if conn.execute("SELECT type FROM sqlite_master WHERE name = 'reviews'").fetchone() == (
        "table",
    ):  # (since v13 a view over revlog, which has it: a test may set a newer database back)
        conn.execute("CREATE INDEX IF NOT EXISTS reviews_uid ON reviews (dev, seq)")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS review_graves (dev INTEGER NOT NULL, seq INTEGER NOT NULL, "
        "card_id TEXT NOT NULL, by_dev INTEGER NOT NULL, at INTEGER NOT NULL, "
        "UNIQUE (dev, seq))"
    )
    conn.execute("CREATE INDEX IF NOT EXISTS review_graves_by ON review_graves (by_dev)")
    conn.execute(MARKS_SQL)
    # last-writer-wins: each card's mark was last set at ``at`` (us) by device ``dev``, that
    # device's ``seq``-th stamp; compared as (at, device id, seq)
    conn.execute(
        "CREATE TABLE IF NOT EXISTS mark_clock (card_id TEXT PRIMARY KEY, at INTEGER NOT NULL, "
        "dev INTEGER NOT NULL, seq INTEGER NOT NULL)"
    )
    conn.execute("CREATE INDEX IF NOT EXISTS mark_clock_dev ON mark_clock (dev, seq)")
    now_us = int(time.time() * 1_000_000)
    stamp = int((conn.execute("SELECT max(seq) FROM mark_clock").fetchone()[0]) or 0)
    unstamped = conn.execute(
        "SELECT card_id FROM card_marks WHERE card_id NOT IN (SELECT card_id FROM mark_clock) "
        "ORDER BY card_id"
    ).fetchall()
    conn.executemany(
        "INSERT INTO mark_clock (card_id, at, dev, seq) VALUES (?, ?, 1, ?)",
        [(cid, now_us, stamp + i) for i, (cid,) in enumerate(unstamped, 1)],
    )
    stamp += len(unstamped)
    conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('sync_stamp', ?)", (str(stamp),))
    if row is not None:
        conn.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES ('settings_clock', ?)",
            (json.dumps([now_us, 1, 0]),),
        )
    have = columns("demo_runs")
    for column, kind in (("dev", "INTEGER NOT NULL DEFAULT 1"), ("seq", "INTEGER")):
        if column not in have:
            conn.execute(f"ALTER TABLE demo_runs ADD COLUMN {column} {kind}")
    conn.execute("CREATE INDEX IF NOT EXISTS demo_runs_uid ON demo_runs (dev, seq)")


def _v11_to_v12(db: Any, progress: UpgradeTracker | None = None) -> None:
    # Every table and column in the chain: the deck cache's ``ident`` (device, inode, ctime of
    # each file as last read) and ``card_marks`` were created by the first write that needed
    # them, so a database's schema depended on what it had been used for. Both are created
    # here when missing (in the same words as before, so that a fresh database and an
    # upgraded one end with the same sqlite_master: tests/test_schema_chain.py).
    conn = db.conn
    if not any(r[1] == "ident" for r in conn.execute("PRAGMA table_info(deck_files)")):
        conn.execute("ALTER TABLE deck_files ADD COLUMN ident TEXT")
    conn.execute(MARKS_SQL)


@dataclass(frozen=True)
class Upgrade:
    """Where a schema upgrade stands, for a front end to show (Store.open's ``progress``).

    ``fraction`` is of the whole upgrade's estimated work (never decreasing, 1.0 only when
    ``done``); ``reviews`` are the review log rows the upgrade rewrites (0 when it rewrites
    none), ``converted`` how many of them it has."""

    from_version: int
    to_version: int
    reviews: int
    converted: int
    fraction: float
    elapsed: float  # seconds since the upgrade began
    done: bool = False

    @property
    def remaining(self) -> float | None:
        """Estimated seconds left, or None before there is enough to go on."""
        if self.done:
            return 0.0
        if self.fraction < 0.02:
            return None
        return self.elapsed * (1.0 - self.fraction) / self.fraction


class UpgradeTracker:
    """Counts an upgrade's work and reports it as an Upgrade to ``callback``.

    The work is the review log's rows (rewritten by v4 -> v5 and by v12 -> v13, or by
    both at once: ``straight_to_v13``), one unit each per pass, and the
    steps after them, each weighed as a number of units per review: measured on a v3
    database of 100k cards and 1M reviews (tests/benchmarks, 2-core machine), dropping the
    old log took ~0.02 of the conversion's time, building the indexes ~0.09, the commit
    ~0.04 and the VACUUM ~0.07; v17's walk of the log (marking each row that is its newest
    review's state: engine/store/schema17.py) ~0.6 (17 s at 100k cards / 1M reviews, one run). Estimates, so the percentage is one too; it never goes
    back, and the last report (``done``) is 100%."""

    TAIL = {"drop": 0.02, "index": 0.09, "commit": 0.04, "vacuum": 0.07, "logged": 0.6}

    def __init__(
        self,
        from_version: int,
        to_version: int,
        reviews: int,
        callback: Callable[[Upgrade], None] | None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.from_version, self.to_version = from_version, to_version
        self.reviews = reviews
        self.callback = callback
        self.clock = clock
        self.start = clock()
        # the log is rewritten by v4 -> v5 and by v12 -> v13: each pass converts every row,
        # drops the old log and builds the indexes
        # (a store's upgrade from v4 or older past v13 does both in one: engine/store/fused13.py)
        self.straight_to_v13 = 0 < from_version < 5 and to_version >= 13
        rewrites = (0 < from_version < 5) + (from_version < 13 <= to_version)
        conversions = 1 if self.straight_to_v13 else rewrites  # 0 from v13 on (v16 -> v17 sat
        self.passes = max(1, conversions)  # at 0% when a pass that never runs was weighed in)
        self.converted_rows, self.tail_done = 0, 0.0  # (rows: over all passes)
        per_pass = 1.0 + self.TAIL["drop"] + self.TAIL["index"]
        walk = self.TAIL["logged"] if from_version < 17 <= to_version else 0.0  # (schema17.py)
        tail = self.TAIL["commit"] + self.TAIL["vacuum"] + walk
        self.total = reviews * (conversions * per_pass + tail)
        self.partial = 0.0  # the share of a step under way (``part``), until it is finished
        self._report()

    def _report(self, done: bool = False) -> None:
        if self.callback is None:
            return
        work = self.converted_rows + (self.tail_done + self.partial) * self.reviews
        fraction = 1.0 if done else min(0.999, work / self.total) if self.total else 0.0
        self.callback(
            Upgrade(
                self.from_version,
                self.to_version,
                self.reviews,
                self.converted_rows // self.passes,
                fraction,
                self.clock() - self.start,
                done,
            )
        )

    def converted(self, rows: int) -> None:
        """``rows`` more rows of the review log rewritten."""
        self.converted_rows = min(self.reviews * self.passes, self.converted_rows + rows)
        self._report()

    def part(self, step: str, fraction: float) -> None:
        """``fraction`` of a long step after the conversion (TAIL: v17's walk) is done."""
        self.partial = self.TAIL[step] * min(1.0, max(0.0, fraction))
        self._report()

    def finished(self, step: str) -> None:
        """One of the steps after the conversion (TAIL) is done."""
        self.partial = 0.0
        self.tail_done += self.TAIL[step]
        self._report()

    def done(self) -> None:
        self.converted_rows = self.reviews * self.passes
        self._report(done=True)


class Schema:
    """What a migration step is given: the connection (``conn``) and ``execute``, the part of
    sqlite_utils.Database the steps use (a Database works as well: tests build old versions
    with one)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def execute(self, sql: str, parameters: Any = ()) -> Any:
        return self.conn.execute(sql, parameters)


# MIGRATIONS[v] upgrades a database (a Schema) from schema v to v + 1, telling
# the tracker (when there is one) how far it is; the store runs them inside one transaction.
MIGRATIONS: list[Callable[[Any, UpgradeTracker | None], None]] = [
    _v0_to_v1,
    _v1_to_v2,
    _v2_to_v3,
    _v3_to_v4,
    _v4_to_v5,
    _v5_to_v6,
    _v6_to_v7,
    _v7_to_v8,
    _v8_to_v9,
    _v9_to_v10,
    v10_to_v11,
    _v11_to_v12,
    v12_to_v13,
    v13_to_v14,
    v14_to_v15,
    v15_to_v16,
    v16_to_v17,
]
assert len(MIGRATIONS) == SCHEMA_VERSION
