"""Progress in SQLite: the store owns the database, and every SQL statement prep runs is in
engine/store/.

The one `Store` (engine/store/__init__.py) is split per table, as Anki's rslib splits its storage:
this module opens and closes the database, runs transactions and schema migrations, turns sqlite3's
errors into `StoreError`, and keeps meta and settings; cards.py, reviews.py, marks.py, demoruns.py,
deckcache.py and transfer.py hold each table's SQL. Callers ask the store (``store.card(id)``,
``store.count_due(now)``, ``store.dump()``); the tables and their migrations are in schema.py. Any
sqlite3 error (a locked, read-only, full or damaged database) leaves the store as a `StoreError`
with a one-line message, so front ends catch one type.

Every rating is committed in its own transaction the moment it is made (WAL, busy timeout),
so a crash or a kill loses nothing that was rated.

Size: about 550 lines: opening (with the read-only and upgrade paths), transactions and the
error translation are one concern, and each is read with the others; the database file's own
checks before the open (its path, writable, prep's or another program's) are in dbfile.py.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import sys
from collections.abc import Callable
from contextlib import suppress
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar

from prep.engine.paths import sqlite_uri
from prep.engine.store import samefile
from prep.engine.store.dbfile import (  # (the file's checks before the open; re-exported)
    StoreError,
    _cannot_write,
    _discard_unmade,
    _fix,
    _not_writable,
    _read_with_wal,
    _refuse_foreign,
    disk_full,
    is_empty_file,
    resolve_db_path,
)
from prep.engine.store.schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    Schema,
    Upgrade,
    UpgradeTracker,
)
from prep.engine.study.scheduler import Settings
from prep.engine.textsafe import quoted
from prep.engine.timeutil import fmt

if TYPE_CHECKING:
    from prep.engine.store import Store

BUSY_TIMEOUT_MS = 5000
# Store.open's ``progress``: told how a schema upgrade is going (see schema.Upgrade), from
# its start to its end (``done``); a front end shows it when the upgrade takes a while
Progress = Callable[[Upgrade], None]
_STOP_EVERY = 50_000  # steps of SQLite's machine between two asks of stop_when's callable
_UPGRADE_CACHE_KIB = -262_144  # 256 MiB of page cache while the review log is rewritten


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


# What the user's file or disk refuses (not a bug in our SQL).
_WRITE_ERRORS = {
    sqlite3.SQLITE_READONLY,
    sqlite3.SQLITE_FULL,
    sqlite3.SQLITE_IOERR,
    sqlite3.SQLITE_BUSY,
    sqlite3.SQLITE_LOCKED,
    sqlite3.SQLITE_CANTOPEN,
}


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


class _Transaction:
    """StoreCore.transaction()'s context: a class, not a generator (contextlib's): an answer
    enters three, nested (the session's, rate_card's, record_review's), and a generator's
    context costs twice the calls of a class's (issue 26)."""

    __slots__ = ("joined", "store")

    def __init__(self, store: StoreCore) -> None:
        self.store = store
        self.joined = False

    def __enter__(self) -> None:
        store = self.store
        if store._tx_depth:
            store._tx_depth += 1
            self.joined = True
            return
        try:
            store.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise store._error(exc) from exc
        store._tx_depth = 1

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        store = self.store
        if self.joined:
            store._tx_depth -= 1
            return
        store._tx_depth = 0
        try:
            if exc is None:
                if store._file is not None and (what := samefile.changed(store.path, store._file)):
                    raise samefile.refuse(store, what)  # (rolled back: nothing written)
                store.conn.execute("COMMIT")
                return
        except BaseException as failed:
            exc = failed
        # SQLite may already have rolled back (a full disk, an I/O error)
        if store.conn.in_transaction:
            with suppress(sqlite3.Error):
                store.conn.execute("ROLLBACK")
        if _is_database_error(exc):
            raise store._error(exc) from exc  # type: ignore[arg-type]
        if exc is not None and kind is None:
            raise exc  # (the COMMIT's own failure; the body's is raised again by ``with``)


class StoreCore:
    """The progress database's core (see the module docstring); `Store` adds the tables.

    Open with ``Store.open(path)`` or ``Store.memory()``."""

    _tx_depth: int = 0  # transactions entered and not yet left (see transaction)
    read_only = False  # opened with Store.open(reading=True) where writing is not possible
    damaged_reviews: list[Any] = []  # DamagedReview rows left out by the last dump() (export)
    _file: samefile.Identity | None = None  # the file opened at path (checked at each COMMIT)
    _wal: samefile.Identity | None = None  # and its WAL file (samefile.refuse sets it aside)

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
        self._file = None if path is None else samefile.identity(path)
        self._migrate(lenient=lenient, progress=progress)
        self._wal = None if path is None else samefile.identity(Path(f"{path}-wal"))

    @property
    def db(self):
        """A sqlite_utils.Database on the same connection, for tests and work by hand: prep's
        own paths (open, a new database's schema, the migrations, rate, export) are plain SQL.

        Imported on first use: sqlite_utils (with dateutil) costs ~60 ms."""
        if self._db is None:
            self._db = _import_sqlite_utils().Database(self.conn)
        return self._db

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    # --- who else has the database open ----------------------------------------------------
    #
    # Each open app keeps a heartbeat row in meta ("open:HOST:PID" -> UTC time), so a second
    # app on the same database can tell the user. Rows older than OPEN_STALE are ignored.

    OPEN_STALE = timedelta(minutes=2)

    def set_busy_timeout(self, ms: int) -> None:
        """How long a statement waits for another writer's lock before failing as busy (a front
        end that retries without blocking its screen sets it short)."""
        self.conn.execute(f"PRAGMA busy_timeout = {int(ms)}")

    def stop_when(self, stopped: Callable[[], bool], every: int | None = None) -> None:
        """A statement of this connection, however long (a whole-collection UPDATE), stops
        soon after ``stopped()`` turns true: SQLite asks it every ``every`` steps of its
        virtual machine (about a millisecond), and the statement ends as a StoreError of kind
        "interrupted", its transaction rolled back. (A wait for another writer's lock is not
        a statement step: a caller that must stop promptly keeps its busy timeout short.)"""
        self.conn.set_progress_handler(lambda: bool(stopped()), every or _STOP_EVERY)

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

    # --- opening ------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike | None = None,
        *,
        reading: bool = False,
        create: bool = True,
        progress: Progress | None = None,
        say: Callable[[str], None] | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> Self:
        """Open (creating on first use) the database at ``path`` (see resolve_db_path).

        ``reading``: the caller only reads (stats, export). A database that does not exist is
        then refused (nothing is created: no file, no folder), one that cannot be written is
        opened read-only instead of refused, and a schema version that cannot be read does not
        stop it. ``create`` false: a database that does not exist is refused the same way
        (kind "missing", nothing created), for a command that changes only existing progress
        (tui/commands/common.CREATES says which commands may create one). ``progress``:
        called as an older database is
        upgraded (one transaction: an upgrade cut short leaves the database as it was).

        Every open that upgrades (whatever the caller: a review, the app, a command that
        only reads) first checks the free space and makes the backup copy
        (backup.before_upgrading: too little space is a StoreError of kind "space", and
        nothing is written); ``say``: told, for a big database, that it is being copied.
        ``stop``: as stop_when, from the start (an upgrade's long statements stop too)."""
        target = resolve_db_path(path)
        if str(target) in (":memory:", "") or str(target).startswith("file:"):
            # sqlite3 would open an in-memory database: every rating "saved", then gone
            raise StoreError(
                f"--db {quoted(str(target))}: names no file (SQLite would keep nothing); give the "
                "path of the progress database"
            )
        if (reading or not create) and (not target.exists() or is_empty_file(target)):
            # a command that only reads (stats, export, sync --status, backup --list), or only
            # changes what is saved (optimize, unmark, a restore), never creates a database,
            # nor the folders above it: a mistyped --db is said as such
            # (an empty file too, `touch prep.db`: a read would fill it with prep's tables)
            raise StoreError(
                f"{target}: {'an empty file, ' if target.exists() else ''}no progress "
                f"database here (nothing to "
                f"{'read' if reading else 'change'}; a review with `prep quiz` creates it, "
                "or name yours with --db PATH or PREP_DB)",
                kind="missing",
            )
        if target.exists() and not target.is_file():
            # SQLite would take /dev/null for an empty database and make /dev/null-wal beside it
            what = "a folder" if target.is_dir() else "not a regular file (a device or FIFO)"
            raise StoreError(f"{target}: is {what}; --db names the database file")
        conn = None
        # what this open makes (a new database, the folders above it): removed again when
        # the open fails (a full disk, an unwritable folder, q), so a refused open leaves no
        # half-made file for the next one to take as a database
        fresh = None if target.exists() else target
        folders = [p for p in (target.parent, *target.parent.parents) if not p.exists()]
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(target, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if stop is not None:
                conn.set_progress_handler(lambda: bool(stop()), _STOP_EVERY)
            _refuse_foreign(conn, target)  # before WAL mode changes another program's file
            from prep.engine.store import backup  # (room, then the backup copy, when due)

            backup.before_upgrading(conn, target, say, stop)
            conn.execute("PRAGMA journal_mode = WAL")
            # every commit (each rating's) is synced to disk, as Anki does: WAL with NORMAL
            # leaves the last commits to a power cut (README: "shown as saved is on disk")
            conn.execute("PRAGMA synchronous = FULL")
            return cls(conn, target, lenient=reading, progress=progress)
        except BaseException as exc:
            if conn is not None:
                conn.close()  # also when ``progress`` stopped the upgrade (rolled back)
            if fresh is not None:
                _discard_unmade(fresh, folders)
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
                    f"{target}: cannot {verb} the progress database: {readonly}. "
                    f"{_fix(readonly)}, or keep your progress elsewhere with --db PATH (or "
                    "PREP_DB)",
                    kind="read-only",
                ) from exc
            full = disk_full(target, exc)
            if full is not None:
                raise StoreError(
                    f"{target}: cannot {verb} the progress database: {full}", kind="write"
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
        from prep.engine.store import Store  # the whole store: schema_version() is guarded

        try:
            target = resolve_db_path(path)
        except StoreError:  # (no default place: HOME not there; open() says so)
            return None
        if not target.is_file():
            return None
        try:
            conn = sqlite3.connect(sqlite_uri(target, "mode=ro"), uri=True, isolation_level=None)
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
    def _open_read_only(cls, target: Path) -> Self:
        """The database opened for reading only (a read-only file or folder)."""
        last: Exception | None = None
        # immutable=1 when even the WAL index cannot be made (a read-only folder); but
        # immutable reads past a WAL, so committed reviews still in one are read from a copy
        for query in ("mode=ro", "mode=ro&immutable=1"):
            wal = Path(f"{target}-wal")
            if query != "mode=ro" and wal.is_file() and wal.stat().st_size > 0:
                conn = _read_with_wal(target, wal)
            else:
                conn = sqlite3.connect(
                    sqlite_uri(target, query),
                    uri=True,
                    timeout=BUSY_TIMEOUT_MS / 1000,
                    isolation_level=None,
                )
            try:
                conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # can we read?
                _refuse_foreign(conn, target)
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
        full = None if last is None else disk_full(target, last)
        if full is not None:
            raise StoreError(f"{target}: cannot open the progress database: {full}") from last
        raise StoreError(f"{target}: cannot open the progress database: {last}") from last

    @classmethod
    def memory(cls) -> Self:
        return cls(sqlite3.connect(":memory:", isolation_level=None), None)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def transaction(self) -> _Transaction:
        """One committed unit: BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error). Inside another
        transaction() it joins that one (the outer one commits or rolls back)."""
        return _Transaction(self)

    def _error(self, exc: sqlite3.Error) -> StoreError:
        """The one-line StoreError for what SQLite refused."""
        where = self.path or ":memory:"
        code = getattr(exc, "sqlite_errorcode", None)
        primary = None if code is None else code & 0xFF
        if primary == sqlite3.SQLITE_READONLY:
            why = (_not_writable(self.path) if self.path else None) or str(exc)
            return StoreError(
                f"{where}: the progress database is read-only ({why}); nothing saved. "
                f"{_fix(why)}, or use --db PATH for another file",
                kind="read-only",
            )
        if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            return StoreError(
                f"{where}: database is busy: another prep is writing to it ({exc}); try again",
                kind="busy",
                retryable=True,
            )
        if primary == sqlite3.SQLITE_INTERRUPT:
            return StoreError(
                f"{where}: stopped before it finished (rolled back: nothing of it was saved)",
                kind="interrupted",
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
            if not self.conn.execute(
                "SELECT 1 FROM sqlite_master WHERE name IN ('cards', 'revlog', 'reviews')"
            ).fetchone():
                return 0  # (a new database is made in one transaction, its version row in it)
            row = (None,)  # its row deleted: rerunning every migration failed on its tables
        try:
            version = int(row[0])
        except (TypeError, ValueError):
            version = None
        if version is None or version < 1:  # 0 or -1 would rerun (or index) the migrations
            said = "missing" if row[0] is None else quoted(str(row[0])[:40])
            raise StoreError(
                f"{self.path or ':memory:'}: the schema version in the database is {said}, "
                "not one prep wrote (edited by hand?); `prep export` still reads it",
                kind="damaged",
            ) from None
        return version

    def _check_not_newer(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: database schema v{version} is newer than this prep (v{SCHEMA_VERSION}); upgrade prep"
            )

    def _migrate(self, *, lenient: bool = False, progress: Progress | None = None) -> None:
        try:
            version = self.schema_version()
        except StoreError:
            if lenient:
                return  # a reader reads the tables as they are
            raise
        self._check_not_newer(version)
        if version == SCHEMA_VERSION:
            return
        # the reviews the upgrade rewrites (v4 -> v5, v12 -> v13), the bulk of its work
        rewrites = (
            0 < version < 13
            and self.conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'reviews'"
            ).fetchone()
        )
        # and those v17's walk reads (engine/store/schema17.py: ~17 s at 1M, said as it goes)
        walks = not rewrites and 13 <= version < 17
        reviews = (
            self.conn.execute("SELECT count(*) FROM reviews").fetchone()[0]
            if rewrites
            else self.conn.execute("SELECT count(*) FROM revlog").fetchone()[0]
            if walks
            else 0
        )
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
            schema = Schema(self.conn)  # (plain SQL: sqlite_utils is not imported)
            with self.transaction():
                # read again under the write lock: another prep opening the same database may
                # have upgraded it since (two opening a new one at once both read 0, and the
                # second ran every step again on the first's tables: "views may not be indexed")
                version = self.schema_version()
                self._check_not_newer(version)
                for step in range(version, SCHEMA_VERSION):
                    MIGRATIONS[step](schema, tracker)
                if version < SCHEMA_VERSION:
                    self.set_meta("schema_version", str(SCHEMA_VERSION))
            tracker.finished("commit")
            if 0 < version < 13 and self.path is not None:
                # v5 and v13 rewrote the review log in compact forms, v11 dropped indexes:
                # give the space back (best effort: the migration is committed; another prep
                # holding the file open only leaves the file its old size until a later VACUUM)
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
        return self.settings_from(None if row is None else row[0])

    def settings_from(self, text: str | None) -> Settings:
        """``settings()`` from the saved text read by another statement (None: none saved)."""
        if text is None:
            return Settings()
        seen = getattr(self, "_settings_seen", None)
        if seen is not None and seen[0] == text:
            return seen[1]  # the same text as last read (each rating asks): parsed once
        try:
            settings = Settings.from_dict(json.loads(text)).validated()
            self._settings_seen = (text, settings)
            return settings
        except (ValueError, TypeError, AttributeError) as exc:  # JSONDecodeError is a ValueError
            raise StoreError(
                f"{self.path or ':memory:'}: the saved settings are invalid ({exc}); "
                "`prep config --reset` restores the defaults"
            ) from None

    def update_settings(self, **changes: Any) -> Settings:
        """Change only the named settings, against the settings saved now (read and written in
        one write transaction): a long `prep optimize` or a prompt left open never writes back
        what another `prep config` changed meanwhile. Returns the saved settings."""
        from prep.engine.store import devices
        from prep.engine.timeutil import utcnow

        with self.transaction():
            updated = replace(self.settings(), **changes).validated()
            self.set_meta("settings", json.dumps(updated.to_dict()))
            devices.stamp_settings(self.conn, utcnow())  # the last writer wins on a sync
        return updated

    def save_settings(self, settings: Settings, at: datetime | None = None) -> None:
        from prep.engine.store import devices
        from prep.engine.timeutil import utcnow

        settings.validated()
        with self.transaction():
            self.set_meta("settings", json.dumps(settings.to_dict()))
            devices.stamp_settings(self.conn, at or utcnow())  # the last writer wins on a sync
