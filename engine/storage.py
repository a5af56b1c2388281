"""Progress in SQLite, through sqlite-utils.

Tables (schema version in ``meta``):

- ``cards``: scheduling state per card id (a row exists once a card has been reviewed).
- ``reviews``: the append-only log; each row keeps the card's state before (``prev``, NULL
  for a new card) and after (``next``) as JSON, so undo restores the exact previous state.
- ``demo_runs``: every demo run (name, device, passed, seconds, the full report).
- ``meta``: schema version and settings.

Every rating is committed in its own transaction the moment it is made (WAL, busy timeout),
so a crash or a kill loses nothing that was rated.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from prep.engine.scheduler import CardState, Settings, State
from prep.engine.timeutil import fmt, parse, utcnow

SCHEMA_VERSION = 3
BUSY_TIMEOUT_MS = 5000


class StoreError(Exception):
    """A problem with the progress database, with a one-line message for the user."""


def _import_sqlite_utils():
    """Import sqlite_utils without letting it pull in pandas/numpy (~0.25 s) when they are
    installed (fsrs's optimizer brings pandas). We never hand it DataFrames."""
    if "sqlite_utils" in sys.modules or "pandas" in sys.modules:
        import sqlite_utils

        return sqlite_utils
    saved = {name: sys.modules.get(name) for name in ("pandas", "numpy")}
    try:
        for name, mod in saved.items():
            if mod is None:
                sys.modules[name] = None  # type: ignore[assignment]  # makes `import` raise
        import sqlite_utils
    finally:
        for name, mod in saved.items():
            if mod is None:
                sys.modules.pop(name, None)
    return sqlite_utils


def default_db_path() -> Path:
    from platformdirs import user_data_path

    return user_data_path("prep", appauthor=False) / "prep.db"


def resolve_db_path(explicit: str | os.PathLike | None = None) -> Path:
    """--db PATH, else $PREP_DB, else the user data dir."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get("PREP_DB")
    if env:
        return Path(env).expanduser()
    return default_db_path()


@dataclass(frozen=True)
class Review:
    id: int
    card_id: str
    rating: int
    reviewed_at: datetime
    duration_ms: int | None
    prev: CardState | None
    next: CardState


def state_to_json(s: CardState | None) -> str | None:
    if s is None:
        return None
    d = asdict(s)
    d["due"] = fmt(s.due)
    d["last_review"] = fmt(s.last_review)
    return json.dumps(d)


def state_from_json(text: str | None) -> CardState | None:
    if text is None:
        return None
    d = json.loads(text)
    d["due"] = parse(d.get("due"))
    d["last_review"] = parse(d.get("last_review"))
    return CardState(**d)


_CARD_COLS = (
    "id, deck, state, step, stability, difficulty, due, last_review, reps, lapses, leech, "
    "content_hash, changed, removed"
)


def _row_to_state(row: tuple) -> CardState:
    (
        cid,
        deck,
        state,
        step,
        stab,
        diff,
        due,
        last,
        reps,
        lapses,
        leech,
        chash,
        changed,
        removed,
    ) = row
    return CardState(
        id=cid,
        deck=deck,
        state=state,
        step=step,
        stability=stab,
        difficulty=diff,
        due=parse(due),
        last_review=parse(last),
        reps=reps,
        lapses=lapses,
        leech=bool(leech),
        content_hash=chash or "",
        changed=bool(changed),
        removed=bool(removed),
    )


def state_to_row(s: CardState) -> dict[str, Any]:
    return {
        "id": s.id,
        "deck": s.deck,
        "state": s.state,
        "step": s.step,
        "stability": s.stability,
        "difficulty": s.difficulty,
        "due": fmt(s.due),
        "last_review": fmt(s.last_review),
        "reps": s.reps,
        "lapses": s.lapses,
        "leech": int(s.leech),
        "content_hash": s.content_hash,
        "changed": int(s.changed),
        "removed": int(s.removed),
    }


_DEMO_RUN_KEYS = (
    "id",
    "name",
    "device",
    "device_name",
    "dtype",
    "scale",
    "seed",
    "passed",
    "seconds",
    "ran_at",
)


class Store:
    """The progress database. Open with ``Store.open(path)`` or ``Store.memory()``."""

    def __init__(self, conn: sqlite3.Connection, path: Path | None = None) -> None:
        self.conn = conn
        self.path = path
        self._db = None
        self._migrate()

    @property
    def db(self):
        """A sqlite_utils.Database on the same connection, for schema work and export.

        Imported on first use: sqlite_utils (with dateutil) costs ~60 ms, and the paths a
        user waits on (open, rate, undo, queue) are plain SQL."""
        if self._db is None:
            self._db = _import_sqlite_utils().Database(self.conn)
        return self._db

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def put_card(self, state: CardState) -> None:
        row = state_to_row(state)
        cols = ", ".join(row)
        updates = ", ".join(f"{c} = excluded.{c}" for c in row if c != "id")
        self.conn.execute(
            f"INSERT INTO cards ({cols}) VALUES ({', '.join('?' * len(row))}) "
            f"ON CONFLICT(id) DO UPDATE SET {updates}",
            tuple(row.values()),
        )

    # --- opening ------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike | None = None) -> Store:
        """Open (creating on first use) the database at ``path`` (see resolve_db_path)."""
        target = resolve_db_path(path)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(target, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            return cls(conn, target)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{target}: cannot open the progress database: {exc}") from exc
        except OSError as exc:
            raise StoreError(f"{target}: cannot create the progress database: {exc}") from exc

    @classmethod
    def memory(cls) -> Store:
        return cls(sqlite3.connect(":memory:", isolation_level=None), None)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One committed unit: BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error)."""
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise StoreError(
                f"{self.path or ':memory:'}: database is busy ({exc}); try again"
            ) from exc
        try:
            yield
            self.conn.execute("COMMIT")
        except BaseException as exc:
            # SQLite may already have rolled back (a full disk, an I/O error)
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.OperationalError) and _is_write_error(exc):
                raise self._write_error(exc) from exc
            raise

    def _write_error(self, exc: sqlite3.OperationalError) -> StoreError:
        where = self.path or ":memory:"
        if exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_READONLY:
            return StoreError(f"{where}: the progress database is read-only ({exc}); nothing saved")
        if exc.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            return StoreError(f"{where}: database is busy ({exc}); try again")
        return StoreError(f"{where}: cannot write the progress database ({exc}); nothing saved")

    # --- schema -------------------------------------------------------------------------

    def schema_version(self) -> int:
        has_meta = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ).fetchone()
        if not has_meta:
            return 0
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else 0

    def _migrate(self) -> None:
        version = self.schema_version()
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: database schema v{version} is newer than this prep (v{SCHEMA_VERSION}); upgrade prep"
            )
        if version == SCHEMA_VERSION:
            return
        with self.transaction():
            for step in range(version, SCHEMA_VERSION):
                _MIGRATIONS[step](self)
            self.set_meta("schema_version", str(SCHEMA_VERSION))

    # --- settings -----------------------------------------------------------------------

    def settings(self) -> Settings:
        """The saved settings (defaults when none are saved). Settings saved by a hand edit or
        an older prep that fail validation are a StoreError, never a crash later on."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()
        if row is None:
            return Settings()
        try:
            return Settings.from_dict(json.loads(row[0])).validated()
        except (ValueError, TypeError, AttributeError) as exc:  # JSONDecodeError is a ValueError
            raise StoreError(
                f"{self.path or ':memory:'}: the saved settings are invalid ({exc}); "
                "`prep config --reset` restores the defaults"
            ) from None

    def save_settings(self, settings: Settings) -> None:
        settings.validated()
        with self.transaction():
            self.set_meta("settings", json.dumps(settings.to_dict()))

    # --- cards --------------------------------------------------------------------------

    def card(self, card_id: str) -> CardState | None:
        row = self.conn.execute(
            f"SELECT {_CARD_COLS} FROM cards WHERE id = ?", (card_id,)
        ).fetchone()
        return _row_to_state(row) if row else None

    def cards(self, ids: Iterable[str] | None = None) -> dict[str, CardState]:
        if ids is None:
            rows = self.conn.execute(f"SELECT {_CARD_COLS} FROM cards").fetchall()
        else:
            rows = []
            id_list = list(ids)
            for i in range(0, len(id_list), 900):
                chunk = id_list[i : i + 900]
                marks = ",".join("?" * len(chunk))
                rows += self.conn.execute(
                    f"SELECT {_CARD_COLS} FROM cards WHERE id IN ({marks})", chunk
                ).fetchall()
        return {r[0]: _row_to_state(r) for r in rows}

    def seen_ids(self) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT id FROM cards")}

    def due_ids(
        self,
        now: datetime,
        *,
        limit: int | None = None,
        decks: Iterable[str] | None = None,
        state: int | None = None,
        not_state: int | None = None,
    ) -> list[str]:
        """Ids of cards due at ``now``, most overdue first (uses the (removed, due) index),
        optionally only those in (or not in) one fsrs state."""
        by_state = state is not None or not_state is not None
        # with a state filter, walk the per-state index: few cards are in learning, while the
        # (removed, due) index would visit every overdue Review card to find them
        index = " INDEXED BY cards_removed_state_due" if by_state else ""
        sql = f"SELECT id FROM cards{index} WHERE removed = 0 AND due <= ?"
        args: list[Any] = [fmt(now)]
        if state is not None:
            sql += " AND state = ?"
            args.append(state)
        if not_state is not None:
            # as IN (...) so that SQLite takes one index range per state
            others = [int(x) for x in State if x != not_state]
            sql += f" AND state IN ({', '.join('?' * len(others))})"
            args += others
        if decks is not None:
            deck_list = list(decks)
            sql += f" AND deck IN ({','.join('?' * len(deck_list))})"
            args += deck_list
        sql += " ORDER BY due"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        return [r[0] for r in self.conn.execute(sql, args)]

    def sync(self, cards: Iterable[Any]) -> dict[str, int]:
        """Reconcile stored progress with the loaded deck cards (objects with id, deck and
        content_hash): a card whose text changed keeps its progress and is marked changed;
        a stored card missing from the decks keeps its history and is marked removed."""
        present = {c.id: c for c in cards}
        stored = {
            r[0]: (r[1], r[2], r[3])
            for r in self.conn.execute("SELECT id, content_hash, removed, deck FROM cards")
        }
        changed, removed, restored = [], [], []
        for cid, (chash, was_removed, deck) in stored.items():
            card = present.get(cid)
            if card is None:
                if not was_removed:
                    removed.append(cid)
                continue
            if was_removed:
                restored.append(cid)
            if card.content_hash != chash:
                changed.append((card.content_hash, card.deck, cid))
            elif card.deck != deck:
                changed.append((chash, card.deck, cid))
        if changed or removed or restored:
            with self.transaction():
                self.conn.executemany(
                    "UPDATE cards SET removed = 1 WHERE id = ?", [(c,) for c in removed]
                )
                self.conn.executemany(
                    "UPDATE cards SET removed = 0 WHERE id = ?", [(c,) for c in restored]
                )
                self.conn.executemany(
                    "UPDATE cards SET changed = (content_hash != ?) OR changed, content_hash = ?, deck = ? WHERE id = ?",
                    [(h, h, d, c) for h, d, c in changed],
                )
        return {"changed": len(changed), "removed": len(removed), "restored": len(restored)}

    # --- reviews ------------------------------------------------------------------------

    def record_review(
        self,
        prev: CardState | None,
        new: CardState,
        rating: int,
        reviewed_at: datetime,
        duration_ms: int | None = None,
    ) -> int:
        """Write the new card state and the review in one committed transaction."""
        with self.transaction():
            self.put_card(new)
            cur = self.conn.execute(
                "INSERT INTO reviews (card_id, rating, reviewed_at, duration_ms, prev_state, prev, next) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    new.id,
                    int(rating),
                    fmt(reviewed_at),
                    duration_ms,
                    None if prev is None or prev.is_new else prev.state,
                    state_to_json(None if prev is None or prev.is_new else prev),
                    state_to_json(new),
                ),
            )
            return int(cur.lastrowid)

    def last_review(self) -> Review | None:
        row = self.conn.execute(
            "SELECT id, card_id, rating, reviewed_at, duration_ms, prev, next FROM reviews ORDER BY id DESC LIMIT 1"
        ).fetchone()
        return self._review(row) if row else None

    @staticmethod
    def _review(row: tuple) -> Review:
        rid, cid, rating, at, dur, prev, nxt = row
        return Review(rid, cid, rating, parse(at), dur, state_from_json(prev), state_from_json(nxt))

    def undo_last(self, expected_id: int | None = None) -> Review | None:
        """Remove the newest review and restore the card's exact previous state (or remove
        the card's row if it was new). Returns the undone review, or None if there is none —
        or, with ``expected_id``, if the newest review is another one (say another session's
        rating committed since): checked inside the same write transaction."""
        with self.transaction():
            row = self.conn.execute(
                "SELECT id, card_id, rating, reviewed_at, duration_ms, prev, next FROM reviews ORDER BY id DESC LIMIT 1"
            ).fetchone()
            if row is None or (expected_id is not None and row[0] != expected_id):
                return None
            review = self._review(row)
            self.conn.execute("DELETE FROM reviews WHERE id = ?", (review.id,))
            if review.prev is None:
                self.conn.execute("DELETE FROM cards WHERE id = ?", (review.card_id,))
            else:
                current = self.card(review.card_id)
                restored = review.prev
                if current is not None:
                    # membership flags describe the deck now, not the card's history
                    restored = CardState(
                        **{**asdict(restored), "removed": current.removed, "deck": current.deck}
                    )
                self.put_card(restored)
            return review

    def reviews(self, since: datetime | None = None, card_id: str | None = None) -> list[Review]:
        sql = "SELECT id, card_id, rating, reviewed_at, duration_ms, prev, next FROM reviews WHERE 1=1"
        args: list[Any] = []
        if since is not None:
            sql += " AND reviewed_at >= ?"
            args.append(fmt(since))
        if card_id is not None:
            sql += " AND card_id = ?"
            args.append(card_id)
        return [self._review(r) for r in self.conn.execute(sql + " ORDER BY id", args)]

    def count_reviews(
        self,
        since: datetime | None = None,
        *,
        new_only: bool = False,
        prev_state: int | None = None,
    ) -> int:
        """Reviews (since a time): all, only of new cards, or only of cards that were in one
        fsrs state when reviewed."""
        sql = "SELECT count(*) FROM reviews WHERE 1=1"
        args: list[Any] = []
        if since is not None:
            sql += " AND reviewed_at >= ?"
            args.append(fmt(since))
        if new_only:
            sql += " AND prev IS NULL"
        if prev_state is not None:
            sql += " AND prev_state = ?"
            args.append(prev_state)
        return int(self.conn.execute(sql, args).fetchone()[0])

    # --- demo runs ----------------------------------------------------------------------

    def record_demo_run(
        self,
        *,
        name: str,
        device: str,
        passed: bool,
        seconds: float,
        device_name: str | None = None,
        dtype: str | None = None,
        scale: str | None = None,
        seed: int | None = None,
        metrics: dict | None = None,
        ran_at: datetime | None = None,
    ) -> int:
        with self.transaction():
            cur = self.conn.execute(
                "INSERT INTO demo_runs (name, device, device_name, dtype, scale, seed, passed, seconds, metrics, ran_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    name,
                    device,
                    device_name,
                    dtype,
                    scale,
                    seed,
                    int(bool(passed)),
                    float(seconds),
                    json.dumps(metrics or {}, default=str),
                    fmt(ran_at or utcnow()),
                ),
            )
            return int(cur.lastrowid)

    def demo_runs(self, *, latest: bool = False) -> list[dict[str, Any]]:
        """Every demo run, oldest first; with ``latest``, only each demo's newest run, by
        name."""
        where = " WHERE id IN (SELECT max(id) FROM demo_runs GROUP BY name)" if latest else ""
        order = "name" if latest else "id"
        rows = self.conn.execute(
            f"SELECT {', '.join(_DEMO_RUN_KEYS)} FROM demo_runs{where} ORDER BY {order}"
        )
        runs = [dict(zip(_DEMO_RUN_KEYS, r, strict=True)) for r in rows]
        return [run | {"passed": bool(run["passed"])} for run in runs]

    def latest_demo_runs(self) -> dict[str, dict[str, Any]]:
        """Each demo's newest run, by demo name."""
        return {run["name"]: run for run in self.demo_runs(latest=True)}


# What the user's file or disk refuses (not a bug in our SQL): reported as a StoreError.
_WRITE_ERRORS = {
    sqlite3.SQLITE_READONLY,
    sqlite3.SQLITE_FULL,
    sqlite3.SQLITE_IOERR,
    sqlite3.SQLITE_BUSY,
    sqlite3.SQLITE_LOCKED,
    sqlite3.SQLITE_CANTOPEN,
}


def _is_write_error(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in _WRITE_ERRORS


def _migrate_v0_to_v1(store: Store) -> None:
    db = store.db
    db["meta"].create({"key": str, "value": str}, pk="key", if_not_exists=True)
    db["cards"].create(
        {
            "id": str,
            "deck": str,
            "state": int,
            "step": int,
            "stability": float,
            "difficulty": float,
            "due": str,
            "last_review": str,
            "reps": int,
            "lapses": int,
            "leech": int,
            "content_hash": str,
            "changed": int,
            "removed": int,
        },
        pk="id",
        not_null={"deck", "state", "reps", "lapses", "leech", "changed", "removed"},
        defaults={"reps": 0, "lapses": 0, "leech": 0, "changed": 0, "removed": 0, "deck": ""},
        if_not_exists=True,
    )
    db["cards"].create_index(["removed", "due"], index_name="cards_removed_due", if_not_exists=True)
    db["reviews"].create(
        {
            "id": int,
            "card_id": str,
            "rating": int,
            "reviewed_at": str,
            "duration_ms": int,
            "prev_state": int,
            "prev": str,
            "next": str,
        },
        pk="id",
        not_null={"card_id", "rating", "reviewed_at", "next"},
        if_not_exists=True,
    )
    db["reviews"].create_index(["card_id"], index_name="reviews_card", if_not_exists=True)
    db["reviews"].create_index(["reviewed_at"], index_name="reviews_at", if_not_exists=True)
    db["demo_runs"].create(
        {
            "id": int,
            "name": str,
            "device": str,
            "device_name": str,
            "dtype": str,
            "scale": str,
            "seed": int,
            "passed": int,
            "seconds": float,
            "metrics": str,
            "ran_at": str,
        },
        pk="id",
        not_null={"name", "device", "passed", "seconds", "ran_at"},
        if_not_exists=True,
    )
    db["demo_runs"].create_index(["name"], index_name="demo_runs_name", if_not_exists=True)


def _migrate_v1_to_v2(store: Store) -> None:
    # true retention counts reviews by the state they were made in: a covering index keeps
    # `prep stats` quick on a log of a million reviews
    store.db["reviews"].create_index(
        ["prev_state", "reviewed_at", "rating"], index_name="reviews_state_at", if_not_exists=True
    )
    # mastery per deck is a grouped count over live cards
    store.db["cards"].create_index(
        ["removed", "deck", "stability"], index_name="cards_removed_deck", if_not_exists=True
    )


def _migrate_v2_to_v3(store: Store) -> None:
    # the queue asks for due cards by fsrs state (learning steps uncapped, reviews capped),
    # most overdue first: an index range per state instead of a walk over every due card
    store.db["cards"].create_index(
        ["removed", "state", "due"], index_name="cards_removed_state_due", if_not_exists=True
    )


# _MIGRATIONS[v] upgrades a database from schema v to v + 1, inside one transaction.
_MIGRATIONS = [_migrate_v0_to_v1, _migrate_v1_to_v2, _migrate_v2_to_v3]
