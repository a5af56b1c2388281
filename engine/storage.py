"""Progress in SQLite: the store owns the database, and every SQL statement prep runs is here.

Callers ask it (``store.card(id)``, ``store.count_due(now)``, ``store.dump()``); the tables and
their migrations are in engine/schema.py. Any sqlite3 error (a locked, read-only, full or
damaged database) leaves the store as a `StoreError` with a one-line message, so front ends
catch one type.

Every rating is committed in its own transaction the moment it is made (WAL, busy timeout),
so a crash or a kill loses nothing that was rated.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal, TypeVar

from prep.engine.reviewlog import Chain, from_us, state_json, to_us
from prep.engine.scheduler import CardState, Settings, State
from prep.engine.schema import (
    CARD_COLUMNS,
    DEMO_RUN_COLUMNS,
    MIGRATIONS,
    REVIEW_COLUMNS,
    SCHEDULE_COLUMNS,
    SCHEMA_VERSION,
    Upgrade,
    UpgradeTracker,
)
from prep.engine.sync import local as _local
from prep.engine.timeutil import fmt, parse, utcnow

BUSY_TIMEOUT_MS = 5000
# Store.open's ``progress``: told how a schema upgrade is going (see schema.Upgrade), from
# its start to its end (``done``); a front end shows it when the upgrade takes a while
Progress = Callable[[Upgrade], None]
_UPGRADE_CACHE_KIB = -262_144  # 256 MiB of page cache while the review log is rewritten
Table = Literal["cards", "reviews", "demo_runs"]
_COLUMNS: dict[str, tuple[str, ...]] = {
    "cards": CARD_COLUMNS,
    "reviews": REVIEW_COLUMNS,
    "demo_runs": DEMO_RUN_COLUMNS,
}


class StoreError(Exception):
    """A problem with the progress database, with a one-line message for the user.

    ``kind`` says what went wrong, so a front end can say what to do: "read-only" (the file
    or its folder cannot be written), "busy" (another prep holds a write lock), "damaged",
    "write" (a full disk, an I/O error) or "other". ``retryable``: the same write may succeed
    if tried again (busy, a full disk)."""

    def __init__(self, message: str, kind: str = "other", *, retryable: bool = False) -> None:
        super().__init__(message)
        self.kind = kind
        self.retryable = retryable


def _not_writable(target: Path) -> str | None:
    """Which of the database file and its folder cannot be written, in words, or None.
    (SQLite in WAL mode also creates FILE-wal and FILE-shm beside the file.)"""
    if target.exists() and not os.access(target, os.W_OK):
        return f"the file {target} is read-only"
    folder = target.parent
    if folder.exists() and not os.access(folder, os.W_OK | os.X_OK):
        return f"the folder {folder} is read-only (SQLite writes {target.name}-wal beside it)"
    return None


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
class Mark:
    """Anki's marks on one card: suspended (never served until unsuspended), buried (left out
    until ``buried_until``, the next study day) and flagged (served as usual, listed)."""

    suspended: bool = False
    buried_until: datetime | None = None
    flagged: bool = False


@dataclass(frozen=True)
class Review:
    id: int
    card_id: str
    rating: int
    reviewed_at: datetime
    duration_ms: int | None
    prev: CardState | None
    next: CardState


def _json_or_none(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _decode(rows: Iterable[tuple]) -> Iterator[tuple[Review, int | None]]:
    """Review log rows (``_REVIEW_COLS``, in id order, each card's from its first review)
    as Reviews, with the prev_state column beside each."""
    chain = Chain()
    for rid, cid, rating, at, dur, prev_state, prev, nxt in rows:
        p, n = chain.decode(cid, prev_state, prev, nxt)
        yield Review(rid, cid, rating, from_us(at), dur, p, n), prev_state


def _review_dict(review: Review, prev_state: int | None) -> dict[str, Any]:
    """A review as exported: schema.REVIEW_COLUMNS, states as JSON text."""
    return {
        "card_id": review.card_id,
        "reviewed_at": fmt(review.reviewed_at),
        "rating": review.rating,
        "duration_ms": review.duration_ms,
        "prev_state": prev_state,
        "prev": state_to_json(review.prev),
        "next": state_to_json(review.next),
    }


def state_to_json(s: CardState | None) -> str | None:
    if s is None:
        return None
    if isinstance(s, str):  # a reviewlog.LegacyState: kept verbatim
        return s
    return state_json(s)


def state_from_json(text: str | None) -> CardState | None:
    if text is None:
        return None
    d = json.loads(text)
    d["due"] = parse(d.get("due"))
    d["last_review"] = parse(d.get("last_review"))
    return CardState(**d)


_CARD_COLS = ", ".join(CARD_COLUMNS)
_REVIEW_COLS = "id, card_id, rating, at, duration_ms, prev_state, prev, next"


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


_DEMO_RUN_KEYS = ("id", *(c for c in DEMO_RUN_COLUMNS if c != "metrics"))


def _cannot_write(exc: BaseException) -> bool:
    """Whether opening failed only because the database or its folder cannot be written."""
    if isinstance(exc, StoreError):
        return "read-only" in str(exc) or "readonly" in str(exc)
    if isinstance(exc, sqlite3.DatabaseError):
        code = getattr(exc, "sqlite_errorcode", None)
        primary = None if code is None else code & 0xFF
        return primary in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM)
    return isinstance(exc, PermissionError)


class Store:
    """The progress database. Open with ``Store.open(path)`` or ``Store.memory()``."""

    read_only = False  # opened with Store.open(reading=True) where writing is not possible

    def __init__(
        self,
        conn: sqlite3.Connection,
        path: Path | None = None,
        *,
        lenient: bool = False,
        progress: Progress | None = None,
    ) -> None:
        """``lenient``: a schema version that cannot be read (a hand edit) does not stop a
        reader; the tables are read as they are (export is the rescue path). ``progress``:
        see open()."""
        self.conn = conn
        self.path = path
        self._db = None
        self._migrate(lenient=lenient, progress=progress)

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

    # --- marks: suspend, bury, flag (Anki's) --------------------------------------------
    #
    # One small table, created on the first mark (so marking needs no schema version of its
    # own): a row per marked card; a card with no mark has no row.

    _MARKS_SQL = (
        "CREATE TABLE IF NOT EXISTS card_marks (card_id TEXT PRIMARY KEY, "
        "suspended INTEGER NOT NULL DEFAULT 0, buried_until TEXT, "
        "flagged INTEGER NOT NULL DEFAULT 0)"
    )

    def _has_marks(self) -> bool:
        return (
            self.conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'card_marks'"
            ).fetchone()
            is not None
        )

    def mark(self, card_id: str) -> Mark:
        """The card's suspend / bury / flag state (all clear when never marked)."""
        if not self._has_marks():
            return Mark()
        row = self.conn.execute(
            "SELECT suspended, buried_until, flagged FROM card_marks WHERE card_id = ?",
            (card_id,),
        ).fetchone()
        if row is None:
            return Mark()
        return Mark(suspended=bool(row[0]), buried_until=parse(row[1]), flagged=bool(row[2]))

    def set_mark(self, card_id: str, mark: Mark, at: datetime | None = None) -> None:
        """Store ``mark`` for the card (committed at once); an all-clear mark deletes the row.
        Stamped ``at`` (default: now) by this device: the last writer wins on a sync."""
        with self.transaction():
            self.conn.execute(self._MARKS_SQL)
            _local.stamp_mark(self.conn, card_id, at or utcnow())
            if mark == Mark():
                self.conn.execute("DELETE FROM card_marks WHERE card_id = ?", (card_id,))
                return
            self.conn.execute(
                "INSERT INTO card_marks (card_id, suspended, buried_until, flagged) "
                "VALUES (?, ?, ?, ?) ON CONFLICT(card_id) DO UPDATE SET "
                "suspended = excluded.suspended, buried_until = excluded.buried_until, "
                "flagged = excluded.flagged",
                (card_id, int(mark.suspended), fmt(mark.buried_until), int(mark.flagged)),
            )

    def hidden_ids(self, now: datetime) -> set[str]:
        """Cards the queue leaves out at ``now``: suspended, or buried until later."""
        if not self._has_marks():
            return set()
        rows = self.conn.execute(
            "SELECT card_id FROM card_marks WHERE suspended = 1 OR buried_until > ?",
            (fmt(now),),
        )
        return {r[0] for r in rows}

    def mark_counts(self, now: datetime) -> dict[str, int]:
        """How many cards are suspended, buried (until later than ``now``) and flagged."""
        if not self._has_marks():
            return {"suspended": 0, "buried": 0, "flagged": 0}
        row = self.conn.execute(
            "SELECT COALESCE(SUM(suspended), 0), COALESCE(SUM(buried_until > ?), 0), "
            "COALESCE(SUM(flagged), 0) FROM card_marks",
            (fmt(now),),
        ).fetchone()
        return {"suspended": row[0], "buried": row[1], "flagged": row[2]}

    # The export's form of a mark (engine/export.py, engine/importer.py): card_id, suspended
    # (0/1), buried_until (UTC text or None), flagged (0/1), as stored.

    def mark_rows(self, card_id: str | None = None) -> list[dict[str, Any]]:
        """Every stored mark (or ``card_id``'s), in id order, as exported."""
        if not self._has_marks():
            return []
        where, args = ("WHERE card_id = ?", [card_id]) if card_id is not None else ("", [])
        rows = self.conn.execute(
            "SELECT card_id, suspended, buried_until, flagged FROM card_marks "
            f"{where} ORDER BY card_id",
            args,
        )
        keys = ("card_id", "suspended", "buried_until", "flagged")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def marks(self) -> dict[str, Mark]:
        """Every card with a stored mark, by id (in id order); a bury may have expired."""
        return {
            r["card_id"]: Mark(bool(r["suspended"]), parse(r["buried_until"]), bool(r["flagged"]))
            for r in self.mark_rows()
        }

    # --- who else has the database open ----------------------------------------------------
    #
    # Each open app keeps a heartbeat row in meta ("open:HOST:PID" -> UTC time), so a second
    # app on the same database can tell the user. Rows older than OPEN_STALE are ignored.

    OPEN_STALE = timedelta(minutes=2)

    def set_busy_timeout(self, ms: int) -> None:
        """How long a statement waits for another writer's lock before failing as busy (a front
        end that retries without blocking its screen sets it short)."""
        self.conn.execute(f"PRAGMA busy_timeout = {int(ms)}")

    def announce(self, instance: str, now: datetime) -> list[str]:
        """Record ``instance`` as open now; return the other instances open (fresh heartbeat)."""
        with self.transaction():
            self.conn.execute(
                "DELETE FROM meta WHERE key LIKE 'open:%' AND value < ?",
                (fmt(now - timedelta(days=1)),),
            )
            self.set_meta(f"open:{instance}", fmt(now))
        rows = self.conn.execute(
            "SELECT key FROM meta WHERE key LIKE 'open:%' AND key != ? AND value >= ?",
            (f"open:{instance}", fmt(now - self.OPEN_STALE)),
        )
        return [r[0].removeprefix("open:") for r in rows]

    def depart(self, instance: str) -> None:
        with self.transaction():
            self.conn.execute("DELETE FROM meta WHERE key = ?", (f"open:{instance}",))

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

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
    def open(
        cls,
        path: str | os.PathLike | None = None,
        *,
        reading: bool = False,
        progress: Progress | None = None,
    ) -> Store:
        """Open (creating on first use) the database at ``path`` (see resolve_db_path).

        ``reading``: the caller only reads (stats, export). A database or folder that cannot
        be written is then opened read-only instead of refused, and a schema version that
        cannot be read does not stop it. ``progress``: called as an older database is
        upgraded (one transaction: an upgrade cut short leaves the database as it was)."""
        target = resolve_db_path(path)
        if target.exists() and not target.is_file():
            # SQLite would take /dev/null for an empty database and make /dev/null-wal beside it
            what = "a folder" if target.is_dir() else "not a regular file (a device or FIFO)"
            raise StoreError(f"{target}: is {what}; --db names the database file")
        conn = None
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(target, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            return cls(conn, target, lenient=reading, progress=progress)
        except BaseException as exc:
            if conn is not None:
                conn.close()  # also when ``progress`` stopped the upgrade (rolled back)
            if not isinstance(exc, (sqlite3.DatabaseError, StoreError, OSError)):
                raise
            if reading and target.is_file() and _cannot_write(exc):
                return cls._open_read_only(target)
            if isinstance(exc, StoreError):
                raise
            verb = "open" if isinstance(exc, sqlite3.DatabaseError) else "create"
            readonly = _not_writable(target)
            if readonly is None and isinstance(exc, PermissionError):
                readonly = f"{exc.filename or target.parent} cannot be written"
            if readonly is None and "readonly" in str(exc).replace("-", "").replace(" ", ""):
                readonly = f"{target} cannot be written"
            if readonly is not None:
                raise StoreError(
                    f"{target}: cannot {verb} the progress database: {readonly}. Make it "
                    "writable, or keep your progress elsewhere with --db PATH (or PREP_DB)",
                    kind="read-only",
                ) from exc
            raise StoreError(
                f"{target}: cannot {verb} the progress database: {exc}",
                kind="busy" if "locked" in str(exc) else "other",
            ) from exc

    @staticmethod
    def pending_upgrade(path: str | os.PathLike | None = None) -> tuple[int, int] | None:
        """(schema version, this prep's) when the database at ``path`` exists and open()
        would upgrade it, else None (also when it cannot be read: open() says why). Cheap:
        a front end asks before opening, to show the upgrade's progress."""
        from urllib.parse import quote

        target = resolve_db_path(path)
        if not target.is_file():
            return None
        try:
            conn = sqlite3.connect(
                f"file:{quote(str(target))}?mode=ro", uri=True, isolation_level=None
            )
        except sqlite3.Error:
            return None
        try:
            store = Store.__new__(Store)
            store.conn, store.path, store._db = conn, target, None
            version = store.schema_version()
        except (sqlite3.Error, StoreError):
            return None
        finally:
            conn.close()
        return (version, SCHEMA_VERSION) if 0 < version < SCHEMA_VERSION else None

    @classmethod
    def _open_read_only(cls, target: Path) -> Store:
        """The database opened for reading only (a read-only file or folder)."""
        from urllib.parse import quote

        last: Exception | None = None
        # immutable=1 when even the WAL index cannot be made (a read-only folder)
        for query in ("mode=ro", "mode=ro&immutable=1"):
            conn = sqlite3.connect(
                f"file:{quote(str(target))}?{query}",
                uri=True,
                timeout=BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,
            )
            try:
                conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # can we read?
                store = cls.__new__(cls)
                store.conn, store.path, store._db, store.read_only = conn, target, None, True
                try:
                    version = store.schema_version()
                except StoreError:
                    version = SCHEMA_VERSION  # read the tables as they are
                if version != SCHEMA_VERSION:
                    conn.close()
                    raise StoreError(
                        f"{target}: the progress database is read-only and needs an upgrade "
                        f"(schema v{version}, this prep uses v{SCHEMA_VERSION}); make it writable",
                        kind="read-only",
                    )
                return store
            except sqlite3.DatabaseError as exc:
                conn.close()
                last = exc
        raise StoreError(f"{target}: cannot open the progress database: {last}") from last

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
        """One committed unit: BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error). Inside another
        transaction() it joins that one (the outer one commits or rolls back)."""
        if getattr(self, "_tx_depth", 0):
            self._tx_depth += 1
            try:
                yield
            finally:
                self._tx_depth -= 1
            return
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise self._error(exc) from exc
        self._tx_depth = 1
        try:
            yield
            self._tx_depth = 0
            self.conn.execute("COMMIT")
        except BaseException as exc:
            self._tx_depth = 0
            # SQLite may already have rolled back (a full disk, an I/O error)
            if self.conn.in_transaction:
                with suppress(sqlite3.Error):
                    self.conn.execute("ROLLBACK")
            if _is_database_error(exc):
                raise self._error(exc) from exc  # type: ignore[arg-type]
            raise

    def _error(self, exc: sqlite3.Error) -> StoreError:
        """The one-line StoreError for what SQLite refused."""
        where = self.path or ":memory:"
        code = getattr(exc, "sqlite_errorcode", None)
        primary = None if code is None else code & 0xFF
        if primary == sqlite3.SQLITE_READONLY:
            why = (_not_writable(self.path) if self.path else None) or str(exc)
            return StoreError(
                f"{where}: the progress database is read-only ({why}); nothing saved. Make "
                "it writable, or use --db PATH for another file",
                kind="read-only",
            )
        if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            return StoreError(
                f"{where}: database is busy: another prep is writing to it ({exc}); try again",
                kind="busy",
                retryable=True,
            )
        if primary in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
            return StoreError(
                f"{where}: the progress database is damaged ({exc}); restore it from a "
                "backup or a `prep export` file",
                kind="damaged",
            )
        if primary in _WRITE_ERRORS:
            return StoreError(
                f"{where}: cannot write the progress database ({exc}); nothing saved",
                kind="write",
                retryable=True,
            )
        return StoreError(f"{where}: the progress database failed: {exc}")

    # --- schema -------------------------------------------------------------------------

    def schema_version(self) -> int:
        has_meta = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ).fetchone()
        if not has_meta:
            return 0
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None:
            return 0
        try:
            return int(row[0])
        except (TypeError, ValueError):
            raise StoreError(
                f"{self.path or ':memory:'}: the schema version in the database is "
                f"{str(row[0])[:40]!r}, not a number (edited by hand?); `prep export` still "
                "reads it",
                kind="damaged",
            ) from None

    def _migrate(self, *, lenient: bool = False, progress: Progress | None = None) -> None:
        try:
            version = self.schema_version()
        except StoreError:
            if lenient:
                return  # a reader reads the tables as they are
            raise
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: database schema v{version} is newer than this prep (v{SCHEMA_VERSION}); upgrade prep"
            )
        if version == SCHEMA_VERSION:
            return
        # the reviews the upgrade rewrites (v4 -> v5), the bulk of its work
        rewrites = (
            0 < version < 5
            and self.conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'reviews'"
            ).fetchone()
        )
        reviews = self.conn.execute("SELECT count(*) FROM reviews").fetchone()[0] if rewrites else 0
        # (a new database is built, not upgraded: quick, and nothing to report)
        tracker = UpgradeTracker(version, SCHEMA_VERSION, reviews, progress if version else None)
        # a one-off rewrite of the whole log: a page cache that holds the new log and its
        # indexes while they are built (the old one is read once, in order); and the old
        # log's pages are freed without being zeroed first when that costs writes (builds
        # with SECURE_DELETE, Debian's, wrote every page of it again: ~5 s at 1M reviews):
        # its content is the new log's, and the VACUUM after it leaves none of the old pages
        # in the file. Both given back after.
        cache = self.conn.execute("PRAGMA cache_size").fetchone()[0]
        secure = self.conn.execute("PRAGMA secure_delete").fetchone()[0]
        if reviews:
            self.conn.execute(f"PRAGMA cache_size = {_UPGRADE_CACHE_KIB}")
            self.conn.execute("PRAGMA secure_delete = FAST")
        try:
            with self.transaction():
                for step in range(version, SCHEMA_VERSION):
                    MIGRATIONS[step](self.db, tracker)
                self.set_meta("schema_version", str(SCHEMA_VERSION))
            tracker.finished("commit")
            if 0 < version < 5 and self.path is not None:
                # v5 rewrote the review log in its compact form: give the space back (best
                # effort: the migration is committed; another prep holding the file open
                # only leaves the file its old size until a later VACUUM)
                with suppress(sqlite3.OperationalError):
                    self.conn.execute("VACUUM")
            tracker.finished("vacuum")
        finally:
            with suppress(sqlite3.Error):
                self.conn.execute(f"PRAGMA cache_size = {int(cache)}")
                self.conn.execute(f"PRAGMA secure_delete = {int(secure)}")
        tracker.done()

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

    def save_settings(self, settings: Settings, at: datetime | None = None) -> None:
        settings.validated()
        with self.transaction():
            self.set_meta("settings", json.dumps(settings.to_dict()))
            _local.stamp_settings(self.conn, at or utcnow())  # the last writer wins on a sync

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
        params: dict[str, Any] | None = None,
    ) -> int:
        """Write the new card state and the review in one committed transaction. ``params``:
        the scheduler's replay_params (default: the saved settings, fuzzed, seed 0), stored
        with the review so that a sync replays it as it was made."""
        prev_state = None if prev is None or prev.is_new else prev.state
        prev = None if prev is None or prev.is_new else prev
        if params is None:
            from prep.engine.scheduler import replay_params

            params = replay_params(self.settings(), True, 0)
        with self.transaction():
            pblob, nblob = self._chain(new.id).encode(new.id, prev_state, prev, new)
            self.put_card(new)
            cur = self.conn.execute(
                "INSERT INTO reviews (id, card_id, rating, at, duration_ms, prev_state, prev, "
                "next, dev, params) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    _local.next_review_id(self.conn),
                    new.id,
                    int(rating),
                    to_us(reviewed_at),
                    duration_ms,
                    prev_state,
                    pblob,
                    nblob,
                    _local.device(self.conn),
                    _local.params_n(self.conn, params),
                ),
            )
            return int(cur.lastrowid)

    def _card_log(self, card_id: str) -> list[tuple[Review, int | None]]:
        """One card's reviews, oldest first (its states are read along its chain)."""
        rows = self.conn.execute(
            f"SELECT {_REVIEW_COLS} FROM reviews WHERE card_id = ? ORDER BY id", (card_id,)
        )
        return list(_decode(rows))

    def _chain(self, card_id: str) -> Chain:
        """A chain positioned after the card's newest review, to append the next one."""
        chain = Chain()
        log = self._card_log(card_id)
        if log:
            chain.last[card_id] = log[-1][0].next
        return chain

    def rate_card(
        self,
        fresh: CardState,
        decide: Callable[[CardState], CardState],
        rating: int,
        reviewed_at: datetime,
        duration_ms: int | None = None,
        params: dict[str, Any] | None = None,
    ) -> tuple[int, CardState, CardState]:
        """Rate a card: read its stored state (``fresh`` when it has none), let ``decide``
        compute the next one, and write both, all inside one write transaction. Two sessions
        rating the same card serialise: the second reads the first one's result, so the review
        log stays a chain (each review's prev is the previous review's next) and ``reps``
        counts the reviews. Returns (review id, prev, next)."""
        with self.transaction():
            prev = self.card(fresh.id) or fresh
            new = decide(prev)
            if new.last_review is not None and new.last_review > reviewed_at:
                reviewed_at = new.last_review  # decide kept it after the card's last review
            rid = self.record_review(prev, new, rating, reviewed_at, duration_ms, params)
            return rid, prev, new

    def last_review(self) -> Review | None:
        row = self.conn.execute(
            "SELECT id, card_id FROM reviews ORDER BY id DESC LIMIT 1"
        ).fetchone()
        return None if row is None else self._card_log(row[1])[-1][0]

    def undo_last(self, expected_id: int | None = None) -> Review | None:
        """Remove the newest review and restore the card's exact previous state (or remove
        the card's row if it was new). Returns the undone review, or None if there is none —
        or, with ``expected_id``, if the newest review is another one (say another session's
        rating committed since): checked inside the same write transaction. Only this device's
        reviews are undone (one received by a sync is not "the last rating"), and only the
        newest of its card. The review leaves a tombstone that a sync takes to the others."""
        with self.transaction():
            row = self.conn.execute(
                "SELECT id, card_id FROM reviews WHERE dev = ? ORDER BY id DESC LIMIT 1",
                (_local.device(self.conn),),
            ).fetchone()
            if row is None or (expected_id is not None and row[0] != expected_id):
                return None
            review = self._card_log(row[1])[-1][0]
            if review.id != row[0]:
                return None  # a later review of the card (received by a sync) follows it
            _local.bury_review(self.conn, review.id, review.card_id, utcnow())
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
        if card_id is not None:
            out = [r for r, _ in self._card_log(card_id)]
        else:
            rows = self.conn.execute(f"SELECT {_REVIEW_COLS} FROM reviews ORDER BY id")
            out = [r for r, _ in _decode(rows)]
        if since is not None:
            out = [r for r in out if r.reviewed_at >= since]
        return out

    def count_reviews(
        self,
        since: datetime | None = None,
        *,
        new_only: bool = False,
        prev_state: int | None = None,
    ) -> int:
        """Reviews (since a time): all, only of new cards, or only of cards that were in one
        fsrs state when reviewed."""
        where: list[str] = []
        args: list[Any] = []
        if since is not None:
            where.append("at >= ?")
            args.append(to_us(since))
        if new_only:
            where.append("prev_state IS NULL")
        if prev_state is not None:
            where.append("prev_state = ?")
            args.append(prev_state)
        # no WHERE at all when nothing is filtered: SQLite then counts the smallest index's
        # pages instead of stepping every entry (a million reviews: 4 ms instead of 20)
        sql = "SELECT count(*) FROM reviews" + (f" WHERE {' AND '.join(where)}" if where else "")
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
                "INSERT INTO demo_runs (name, device, device_name, dtype, scale, seed, passed, seconds, metrics, ran_at, dev) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                    _local.device(self.conn),
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

    # --- counts for stats and the home screen ---------------------------------------------

    def count_cards(self) -> int:
        """Cards with stored progress that are still in the decks."""
        return int(self.conn.execute("SELECT count(*) FROM cards WHERE removed = 0").fetchone()[0])

    def count_due(self, at: datetime) -> int:
        """Cards due at ``at`` (removed cards are not served)."""
        return int(
            self.conn.execute(
                "SELECT count(*) FROM cards WHERE removed = 0 AND due <= ?", [fmt(at)]
            ).fetchone()[0]
        )

    def next_due(self, after: datetime) -> datetime | None:
        """The first due time after ``after`` (None when nothing is scheduled)."""
        row = self.conn.execute(
            "SELECT min(due) FROM cards WHERE removed = 0 AND due > ?", (fmt(after),)
        ).fetchone()
        return parse(row[0])

    def retention_counts(self, since: datetime | None = None) -> tuple[int, int]:
        """Reviews of cards in the Review state (since a time) and how many were not Again:
        true retention."""
        sql = "SELECT count(*), coalesce(sum(rating > 1), 0) FROM reviews WHERE prev_state = ?"
        args: list[Any] = [int(State.Review)]
        if since is not None:
            sql += " AND at >= ?"
            args.append(to_us(since))
        n, passed = self.conn.execute(sql, args).fetchone()
        return int(n), int(passed)

    def reviewed_between(self, start: datetime, end: datetime) -> bool:
        """Whether any review was made in [start, end) (one indexed probe)."""
        row = self.conn.execute(
            "SELECT 1 FROM reviews WHERE at >= ? AND at < ? LIMIT 1",
            [to_us(start), to_us(end)],
        ).fetchone()
        return row is not None

    def reviews_per_interval(self, bounds: list[datetime]) -> list[int]:
        """Reviews made in each [bounds[i], bounds[i + 1]): one indexed range count each
        (the caller draws the study days' bounds, DST and all; no date() per review)."""
        values = ", ".join("(?, ?)" for _ in bounds[1:])
        args = [to_us(t) for pair in zip(bounds[:-1], bounds[1:], strict=True) for t in pair]
        rows = self.conn.execute(
            f"WITH b(lo, hi) AS (VALUES {values}) "
            "SELECT (SELECT count(*) FROM reviews WHERE at >= b.lo AND at < b.hi) FROM b",
            args,
        )
        return [n for (n,) in rows]

    def due_per_interval(self, bounds: list[datetime]) -> list[int]:
        """Live cards due in each [bounds[i], bounds[i + 1]), the first interval open below
        (overdue cards count in it): one indexed range count each."""
        values = ", ".join("(?, ?)" for _ in bounds[1:])
        args = [fmt(t) for pair in zip(bounds[:-1], bounds[1:], strict=True) for t in pair]
        args[0] = ""  # before any due time
        rows = self.conn.execute(
            f"WITH b(lo, hi) AS (VALUES {values}) SELECT (SELECT count(*) FROM cards "
            "WHERE removed = 0 AND due >= b.lo AND due < b.hi) FROM b",
            args,
        )
        return [n for (n,) in rows]

    def deck_progress(self, mature_days: float) -> dict[str, tuple[int, int]]:
        """Per deck: (cards seen, cards whose stability reaches ``mature_days``)."""
        rows = self.conn.execute(
            "SELECT deck, count(*), sum(coalesce(stability, 0) >= ?) FROM cards "
            "WHERE removed = 0 GROUP BY deck",
            [mature_days],
        )
        return {deck: (int(seen), int(mature)) for deck, seen, mature in rows}

    def flagged(self, flag: Literal["leech", "changed"]) -> list[str]:
        """Ids of live cards marked as leeches, or whose text changed since their last review."""
        column = {"leech": "leech", "changed": "changed"}[flag]
        # the partial index holds only the flagged cards (the planner would rather walk the
        # (removed, ...) index over every live card)
        rows = self.conn.execute(
            f"SELECT id FROM cards INDEXED BY cards_{column} WHERE {column} = 1 AND removed = 0 "
            "ORDER BY id"
        )
        return [r[0] for r in rows]

    # --- deck cache (engine/deckcache.py decides; these are its tables) -----------------

    def deck_cache_files(self) -> dict[str, dict[str, Any]]:
        keys = ("path", "shown", "size", "mtime_ns", "sha256", "checked_ns")
        rows = self.conn.execute(f"SELECT {', '.join(keys)} FROM deck_files")
        return {r[0]: dict(zip(keys, r, strict=True)) for r in rows}

    def deck_cache_touch(self, path: str, size: int, mtime_ns: int, checked_ns: int) -> None:
        """The file was read and its hash is unchanged: remember its new size and mtime."""
        with self.transaction():
            self.conn.execute(
                "UPDATE deck_files SET size = ?, mtime_ns = ?, checked_ns = ? WHERE path = ?",
                (size, mtime_ns, checked_ns, path),
            )

    def deck_cache_put(
        self,
        path: str,
        *,
        shown: str,
        size: int,
        mtime_ns: int,
        sha256: str,
        checked_ns: int,
        info: str | None,
        declared: list[tuple[str, int]],
        errors: list[tuple[int, str]],
        cards: list[tuple[int, str, str, str | None, str, list[str], str, str, str]],
    ) -> None:
        """Replace one file's parse: its entry and its cards (line, id, deck, parent, demos,
        tags, content hash, fields, kind). The checks across files are then redone (assembly dropped)."""
        with self.transaction():
            self.conn.execute(
                "INSERT INTO deck_files "
                "(path, shown, size, mtime_ns, sha256, checked_ns, info, declared, errors, ord) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL) ON CONFLICT(path) DO UPDATE SET "
                "shown = excluded.shown, size = excluded.size, mtime_ns = excluded.mtime_ns, "
                "sha256 = excluded.sha256, checked_ns = excluded.checked_ns, "
                "info = excluded.info, declared = excluded.declared, errors = excluded.errors, "
                "ord = NULL",
                (
                    path,
                    shown,
                    size,
                    mtime_ns,
                    sha256,
                    checked_ns,
                    info,
                    json.dumps(declared),
                    json.dumps(errors),
                ),
            )
            lo, hi = self._deck_keys(path)
            self.conn.execute("DELETE FROM deck_cards WHERE key BETWEEN ? AND ?", (lo, hi))
            self.conn.execute("DELETE FROM deck_tags WHERE key BETWEEN ? AND ?", (lo, hi))
            self.conn.executemany(
                "INSERT INTO deck_cards (key, id, deck, parent, demos, chash, data, kind) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(lo + c[0], *c[1:5], *c[6:]) for c in cards],
            )
            self.conn.executemany(
                "INSERT OR IGNORE INTO deck_tags (id, tag, key) VALUES (?, ?, ?)",
                [(c[1], tag, lo + c[0]) for c in cards for tag in c[5]],
            )
            self.conn.execute("DELETE FROM meta WHERE key = 'deck_assembly'")

    def deck_cache_prune(self, paths: list[str]) -> None:
        """Forget the cached parse of these files (entry, cards, tags), in one transaction.
        Only the cache: progress (cards, reviews, marks) is another set of tables."""
        with self.transaction():
            for path in paths:
                row = self.conn.execute(
                    "SELECT fid FROM deck_files WHERE path = ?", (path,)
                ).fetchone()
                if row is None:
                    continue  # pruned meanwhile by another prep
                lo, hi = _key_range(row[0])
                self.conn.execute("DELETE FROM deck_cards WHERE key BETWEEN ? AND ?", (lo, hi))
                self.conn.execute("DELETE FROM deck_tags WHERE key BETWEEN ? AND ?", (lo, hi))
                self.conn.execute("DELETE FROM deck_files WHERE fid = ?", (row[0],))

    def _deck_keys(self, path: str) -> tuple[int, int]:
        """The range of deck_cards keys of one cached file (its id << 32 | line)."""
        fid = self.conn.execute("SELECT fid FROM deck_files WHERE path = ?", (path,)).fetchone()[0]
        return _key_range(fid)

    def deck_cache_parsed(
        self, paths: list[str]
    ) -> dict[str, tuple[str | None, list[tuple[int, str]]]]:
        out = {}
        for path in paths:
            info, errors = self.conn.execute(
                "SELECT info, errors FROM deck_files WHERE path = ?", (path,)
            ).fetchone()
            out[path] = (info, [(line, msg) for line, msg in json.loads(errors)])
        return out

    def deck_cache_outline(self, paths: list[str]) -> Iterator[tuple]:
        """(file, line, id, deck, parent, demos) of every cached card of ``paths``, in order."""
        for path in paths:
            yield from self.conn.execute(
                "SELECT ?, key & 0xFFFFFFFF, id, deck, parent, demos FROM deck_cards "
                "WHERE key BETWEEN ? AND ? ORDER BY key",
                (path, *self._deck_keys(path)),
            )

    def deck_cache_card(self, path: str, line: int) -> tuple[str, str | None, str, str]:
        """(deck, parent, demos, fields) of one cached card."""
        return self.conn.execute(
            "SELECT deck, parent, demos, data FROM deck_cards WHERE key = ?",
            (self._deck_keys(path)[0] | line,),
        ).fetchone()

    def deck_cache_ids(self, path: str) -> list[tuple[int, str, int]]:
        """(line, id, left out as a duplicate) of each cached card of one file, in order
        (from the covering index: the cards' text is not read)."""
        return self.conn.execute(
            "SELECT key & 0xFFFFFFFF, id, dup FROM deck_cards WHERE key BETWEEN ? AND ? "
            "ORDER BY key",
            self._deck_keys(path),
        ).fetchall()

    def deck_cache_declared(self, paths: list[str]) -> dict[str, list[tuple[str, int]]]:
        """(id, line) of every card entry of each file that names an id, valid or not."""
        out = {}
        for path in paths:
            (text,) = self.conn.execute(
                "SELECT declared FROM deck_files WHERE path = ?", (path,)
            ).fetchone()
            out[path] = [(cid, line) for cid, line in json.loads(text)]
        return out

    def deck_cache_card_data(self, paths: list[str]) -> Iterator[tuple[str, int, str]]:
        for path in paths:
            yield from self.conn.execute(
                "SELECT ?, key & 0xFFFFFFFF, data FROM deck_cards WHERE key BETWEEN ? AND ?",
                (path, *self._deck_keys(path)),
            )

    def deck_cache_assembly(self, key: str) -> dict[str, Any] | None:
        """The checks across files, if they were last run on exactly this state of the decks."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'deck_assembly'").fetchone()
        if row is None:
            return None
        saved = json.loads(row[0])
        return saved if saved.get("key") == key else None

    def deck_cache_save_assembly(
        self, key: str, paths: list[str], assembly: dict[str, Any]
    ) -> None:
        """Record which files are loaded now (in order) and which cards the checks across
        files left out (duplicate ids), for the queue's and the sync's SQL."""
        with self.transaction():
            self.conn.execute("UPDATE deck_files SET ord = NULL WHERE ord IS NOT NULL")
            self.conn.executemany(
                "UPDATE deck_files SET ord = ? WHERE path = ?",
                [(i, p) for i, p in enumerate(paths)],
            )
            self.conn.execute("UPDATE deck_cards SET dup = 0 WHERE dup = 1")
            self.conn.executemany(
                "UPDATE deck_cards SET dup = 1 WHERE key = ?",
                [(self._deck_keys(path)[0] | line,) for path, line in assembly["excluded_keys"]],
            )
            self.set_meta("deck_assembly", json.dumps({"key": key, **assembly}))

    def deck_sync_key(self) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'deck_sync'").fetchone()
        return row[0] if row else None

    _LIVE_DECK_CARDS = (
        "SELECT dc.id, dc.deck, dc.chash FROM deck_cards dc JOIN deck_files f ON f.fid = dc.key >> 32 "
        "WHERE f.ord IS NOT NULL AND +dc.dup = 0"
    )

    def sync_with_deck_cache(self, key: str) -> dict[str, int]:
        """Store.sync in SQL, against the cached cards of the loaded deck files: the same
        flags (changed, removed, restored), no card hashed, no Python loop over cards."""
        live = self._LIVE_DECK_CARDS
        with self.transaction():
            removed = self.conn.execute(
                f"UPDATE cards SET removed = 1 WHERE removed = 0 AND id NOT IN "
                f"(SELECT id FROM ({live}))"
            ).rowcount
            restored = self.conn.execute(
                f"UPDATE cards SET removed = 0 WHERE removed = 1 AND id IN "
                f"(SELECT id FROM ({live}))"
            ).rowcount
            changed = self.conn.execute(
                f"UPDATE cards SET changed = (cards.content_hash IS NOT l.chash) OR cards.changed, "
                f"content_hash = l.chash, deck = l.deck FROM ({live}) AS l "
                "WHERE cards.id = l.id AND (cards.content_hash IS NOT l.chash OR cards.deck != l.deck)"
            ).rowcount
            self.set_meta("deck_sync", key)
        return {"changed": changed, "removed": removed, "restored": restored}

    def deck_cache_tag_progress(self, mature_days: float) -> dict[str, tuple[int, int, int]]:
        """Per tag of the loaded deck cards: (cards, seen, mature), one grouped query that
        walks the tags in card-id order beside the cards' id index. The cards left out as
        duplicates are read once from their partial index (a handful, usually none): probing
        deck_cards by key for every tag row would read the cached cards' pages (their text)."""
        rows = self.conn.execute(
            "SELECT t.tag, count(*), count(c.id), "
            "coalesce(sum(c.id IS NOT NULL AND coalesce(c.stability, 0) >= ?), 0) "
            "FROM deck_tags t JOIN deck_files f ON f.fid = t.key >> 32 "
            "LEFT JOIN cards c INDEXED BY sqlite_autoindex_cards_1 "
            "ON c.id = t.id AND c.removed = 0 "
            "WHERE f.ord IS NOT NULL "
            "AND t.key NOT IN (SELECT key FROM deck_cards INDEXED BY deck_cards_dup WHERE dup = 1) "
            "GROUP BY t.tag",
            [mature_days],
        )
        return {tag: (int(n), int(seen), int(mature)) for tag, n, seen, mature in rows}

    def deck_cache_unseen(
        self, deck: str | None = None
    ) -> Iterator[tuple[str, str, str, str | None, bool]]:
        """(id, deck, kind, parent, parent seen) of each loaded deck card without progress,
        in deck order: file by file, each a rowid range that SQLite steps only as far as the
        caller reads (no sort, no set of seen ids)."""
        sql = (
            "SELECT id, deck, kind, parent, parent IS NOT NULL AND EXISTS "
            "(SELECT 1 FROM cards p WHERE p.id = deck_cards.parent) "
            "FROM deck_cards WHERE key BETWEEN ? AND ? AND +dup = 0 "
            "AND NOT EXISTS (SELECT 1 FROM cards c WHERE c.id = deck_cards.id)"
        )
        if deck is not None:
            sql += " AND deck = ?"
        files = self.conn.execute(
            "SELECT fid FROM deck_files WHERE ord IS NOT NULL ORDER BY ord"
        ).fetchall()
        for (fid,) in files:
            args: list[Any] = [fid << 32, (fid << 32) | 0xFFFFFFFF]
            if deck is not None:
                args.append(deck)
            for cid, cdeck, kind, parent, parent_seen in self.conn.execute(
                sql + " ORDER BY key", args
            ):
                yield cid, cdeck, kind, parent, bool(parent_seen)

    def deck_cache_unseen_from(
        self, path: str, kind: str, after: int | None, limit: int
    ) -> list[tuple[int, str, str, str | None, bool]]:
        """Up to ``limit`` cached cards of one file and one kind without progress (and not
        left out as duplicates), after key ``after`` (None: from the file's start), in file
        order: (key, id, deck, parent, parent seen). One range of the (kind, key) index: the
        new-card rotation reads only as far as the day's limit needs."""
        lo, hi = self._deck_keys(path)
        sql = (
            "SELECT key, id, deck, parent, parent IS NOT NULL AND EXISTS "
            "(SELECT 1 FROM cards p WHERE p.id = dc.parent) "
            "FROM deck_cards dc INDEXED BY deck_cards_kind "
            "WHERE kind = ? AND key > ? AND key <= ? AND dup = 0 "
            "AND NOT EXISTS (SELECT 1 FROM cards c WHERE c.id = dc.id)"
        )
        args = [kind, lo - 1 if after is None else after, hi, limit]
        rows = self.conn.execute(sql + " ORDER BY key LIMIT ?", args)
        return [(key, cid, d, parent, bool(seen)) for key, cid, d, parent, seen in rows]

    def deck_cache_citing(self, path: str) -> list[tuple[int, str, str]]:
        """(line, id, demos) of the cached cards of one file that cite a demo, in file order
        (from their partial index: the other cards are not read)."""
        return self.conn.execute(
            "SELECT key & 0xFFFFFFFF, id, demos FROM deck_cards INDEXED BY deck_cards_demos "
            "WHERE demos != '' AND key BETWEEN ? AND ? ORDER BY key",
            self._deck_keys(path),
        ).fetchall()

    def due_counts(self, now: datetime) -> dict[str, tuple[int, int]]:
        """Per deck: (learning or relearning cards due at ``now``, review cards due), of the
        cards still in the decks. One grouped count over the (removed, state, due, deck)
        index, per state as ``due_ids`` reads them; no card row is read."""
        others = [int(x) for x in State if x != State.Review]
        out: dict[str, list[int]] = {}
        for column, states in ((0, others), (1, [int(State.Review)])):
            rows = self.conn.execute(
                "SELECT deck, count(*) FROM cards INDEXED BY cards_removed_state_due "
                f"WHERE removed = 0 AND state IN ({', '.join('?' * len(states))}) AND due <= ? "
                "GROUP BY deck",
                [*states, fmt(now)],
            )
            for deck, n in rows:
                out.setdefault(deck, [0, 0])[column] += n
        return {deck: (n[0], n[1]) for deck, n in out.items()}

    # --- export and import ----------------------------------------------------------------

    def dump(self) -> dict[str, Any]:
        """Everything stored, as plain data: settings (None when never saved), cards,
        reviews (prev/next as objects), demo runs (metrics as an object) and marks, in one read
        transaction (a rating committed meanwhile is in both cards and reviews, or neither)."""
        own = not self.conn.in_transaction
        if own:
            self.conn.execute("BEGIN")
        try:
            cards = self._rows("cards", "ORDER BY id")
            rows = self.conn.execute(f"SELECT {_REVIEW_COLS} FROM reviews ORDER BY id")
            reviews = [
                r | {"prev": _json_or_none(r["prev"]), "next": _json_or_none(r["next"])}
                for r in (_review_dict(*x) for x in _decode(rows))
            ]
            runs = [
                r | {"metrics": _json_or_none(r["metrics"])}
                for r in self._rows("demo_runs", "ORDER BY id")
            ]
            return {
                "settings": self.saved_settings(),
                "cards": cards,
                "reviews": reviews,
                "demo_runs": runs,
                "marks": self.mark_rows(),
            }
        finally:
            if own:
                self.conn.execute("COMMIT")

    def _rows(self, table: Table, tail: str = "", args: Iterable[Any] = ()) -> list[dict[str, Any]]:
        columns = _COLUMNS[table]
        rows = self.conn.execute(f"SELECT {', '.join(columns)} FROM {table} {tail}", list(args))
        return [dict(zip(columns, row, strict=True)) for row in rows]

    def saved_settings(self) -> dict[str, Any] | None:
        """The settings as saved (a dict, unvalidated), or None when none were saved."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()
        if row is None:
            return None
        try:
            value = json.loads(row[0])
        except (TypeError, ValueError):
            return None  # unreadable (a hand edit): `prep config --reset` says so; export goes on
        return value if isinstance(value, dict) else None

    def card_row(self, card_id: str) -> dict[str, Any] | None:
        """The stored row of one card (columns as in schema.CARD_COLUMNS)."""
        rows = self._rows("cards", "WHERE id = ?", [card_id])
        return rows[0] if rows else None

    def review_row(self, card_id: str, reviewed_at: str, prev: str | None) -> dict[str, Any] | None:
        """The stored review of ``card_id`` at ``reviewed_at`` from state ``prev`` (JSON), as
        exported (columns as in schema.REVIEW_COLUMNS)."""
        for r in (_review_dict(*x) for x in self._card_log(card_id)):
            if (r["reviewed_at"], r["prev"]) == (reviewed_at, prev):
                return r
        return None

    def review_keys(self, card_id: str) -> set[tuple[str, str, str | None]]:
        """(card id, time, previous state JSON) of every stored review of ``card_id``."""
        return {
            (card_id, fmt(r.reviewed_at), state_to_json(r.prev)) for r, _ in self._card_log(card_id)
        }

    def demo_run_row(self, name: str, ran_at: str) -> dict[str, Any] | None:
        rows = self._rows("demo_runs", "WHERE name = ? AND ran_at = ?", [name, ran_at])
        return rows[0] if rows else None

    def insert_row(self, table: Table, row: dict[str, Any]) -> None:
        """Insert one row as exported (columns as in engine/schema.py), e.g. by an import."""
        if table == "reviews":
            cid = row["card_id"]
            prev, nxt = state_from_json(row["prev"]), state_from_json(row["next"])
            assert nxt is not None
            pblob, nblob = self._chain(cid).encode(cid, row["prev_state"], prev, nxt)
            self.conn.execute(
                "INSERT INTO reviews (id, dev, card_id, rating, at, duration_ms, prev_state, "
                "prev, next) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    _local.next_review_id(self.conn),
                    _local.device(self.conn),
                    cid,
                    row["rating"],
                    to_us(parse(row["reviewed_at"])),
                    row["duration_ms"],
                    row["prev_state"],
                    pblob,
                    nblob,
                ),
            )
            return
        columns = _COLUMNS[table]
        self.conn.execute(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
            [row[c] for c in columns],
        )

    def update_schedule(self, card_id: str, row: dict[str, Any]) -> None:
        """Set a card's schedule fields (schema.SCHEDULE_COLUMNS) from ``row``."""
        sets = ", ".join(f"{k} = ?" for k in SCHEDULE_COLUMNS)
        self.conn.execute(
            f"UPDATE cards SET {sets} WHERE id = ?", [*(row[k] for k in SCHEDULE_COLUMNS), card_id]
        )


# What the user's file or disk refuses (not a bug in our SQL).
_WRITE_ERRORS = {
    sqlite3.SQLITE_READONLY,
    sqlite3.SQLITE_FULL,
    sqlite3.SQLITE_IOERR,
    sqlite3.SQLITE_BUSY,
    sqlite3.SQLITE_LOCKED,
    sqlite3.SQLITE_CANTOPEN,
}


def _key_range(fid: int) -> tuple[int, int]:
    """The deck_cards keys of the cached file ``fid`` (its id << 32 | line)."""
    return fid << 32, (fid << 32) | 0xFFFFFFFF


def _is_database_error(exc: BaseException) -> bool:
    """An error of the database (locked, read-only, full, damaged, a constraint), as opposed
    to a misuse of the sqlite3 module (a closed connection, a wrong binding: a bug)."""
    return isinstance(exc, sqlite3.Error) and not isinstance(
        exc, sqlite3.ProgrammingError | sqlite3.InterfaceError
    )


F = TypeVar("F", bound=Callable[..., Any])


def _guarded(method: F) -> F:
    @functools.wraps(method)
    def wrapper(self: Store, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            if not _is_database_error(exc):
                raise
            raise self._error(exc) from exc

    return wrapper  # type: ignore[return-value]


# Every public method of Store turns sqlite3's errors into StoreError (transaction() does it
# itself: it is a context manager).
for _name, _value in list(vars(Store).items()):
    if not _name.startswith("_") and _name != "transaction" and callable(_value):
        setattr(Store, _name, _guarded(_value))
