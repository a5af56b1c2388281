"""The database file before the store opens it: where it is (--db, $PREP_DB, the user data dir),
whether it can be written, whether it is prep's at all, and a read of one whose WAL cannot be
indexed where it lies. Split from core.py (which opens, upgrades and guards the connection):
nothing here runs a statement of prep's own tables beyond reading what the file is.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

from prep.engine.paths import expand_user, sqlite_uri


class StoreError(Exception):
    """A problem with the progress database, with a one-line message for the user.

    ``kind`` says what went wrong, so a front end can say what to do: "read-only" (the file
    or its folder cannot be written), "missing" (a command that only reads found no database),
    "busy" (another prep holds a write lock), "damaged",
    "write" (a full disk, an I/O error) or "other". ``retryable``: the same write may succeed
    if tried again (busy, a full disk)."""

    def __init__(self, message: str, kind: str = "other", *, retryable: bool = False) -> None:
        super().__init__(message)
        self.kind = kind
        self.retryable = retryable


def _not_writable(target: Path) -> str | None:
    """Which of the database file and its folder cannot be written, in words, or None.
    (SQLite in WAL mode also creates FILE-wal and FILE-shm beside the file.) A file system
    mounted read-only is said as that: no change to the file's permissions would help."""
    where = target if target.exists() else target.parent
    if where.exists() and _read_only_mount(where):
        return f"the file system holding {where} is read-only (mounted read-only)"
    if target.exists() and not os.access(target, os.W_OK):
        return f"the file {target} is read-only"
    folder = target.parent
    if folder.exists() and not os.access(folder, os.W_OK | os.X_OK):
        return f"the folder {folder} is read-only (SQLite writes {target.name}-wal beside it)"
    return None


def _fix(why: str) -> str:
    """What to do about ``_not_writable``'s answer, as the start of a sentence."""
    if why.startswith("the file system"):
        return "Remount it read-write (or copy the database off it)"
    return "Make it writable"


def _read_only_mount(path: Path) -> bool:
    """Whether ``path`` lies on a file system mounted read-only (False where that cannot be
    told: no statvfs, or it fails)."""
    try:
        flags = os.statvfs(path).f_flag
    except (OSError, AttributeError):
        return False
    return bool(flags & getattr(os, "ST_RDONLY", 0))


def default_db_path() -> Path:
    """prep.db in the user data folder (platformdirs': ~/.local/share/prep on Linux, or
    $XDG_DATA_HOME/prep). StoreError when that lies in a home folder that is not there (HOME
    naming a folder that does not exist, or a file; an empty or relative HOME, which
    platformdirs takes for unset, leading to a password-database home that is not there),
    or when there is no home folder at all (HOME unset or not absolute, and no password
    entry: a container's `--user 1000`): prep makes its own folders in the home folder's
    data folder, never the home folder itself, and writes nowhere a user did not choose;
    --db PATH or PREP_DB names the database instead."""
    from platformdirs import user_data_path

    fix = "set HOME to your home folder, or name the database with --db PATH or PREP_DB"
    try:
        path = user_data_path("prep", appauthor=False) / "prep.db"
    except RuntimeError:  # (platformdirs: no absolute home to be found)
        raise StoreError(
            f"no home folder: {_home_said()} and user id {os.getuid()} has no home in the "
            f"password database, so the progress database has no default place; {fix}; "
            "nothing made"
        ) from None
    home = _home()
    if home is not None and home in path.parents and not home.is_dir():
        what = "is not a folder" if os.path.lexists(home) else "does not exist"
        if _home_env_absolute():
            said = f"HOME {home} {what}"
        else:
            said = f"{_home_said()}, and the home folder {home} (the password database's) {what}"
        raise StoreError(
            f"{said}, and the progress database's default place is in it ({path}); {fix}; "
            "nothing made",
        )
    return path


def _home_env_absolute() -> bool:
    return os.path.isabs(os.environ.get("HOME") or "")


def _home() -> Path | None:
    """The home folder as platformdirs works it out on POSIX: HOME when it is an absolute
    path, else (unset, empty or relative) the user's password-database entry; None when
    there is none. (``~`` expanded would give / for an empty HOME and the relative folder
    itself for a relative one: not where platformdirs puts the data folder.)"""
    home = os.environ.get("HOME")
    if home is not None and os.path.isabs(home):
        return Path(home)
    try:
        import pwd

        entry = pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError):
        return None
    return Path(entry) if os.path.isabs(entry) else None


def _home_said() -> str:
    """HOME as a message says it when it is not an absolute path."""
    home = os.environ.get("HOME")
    if home is None:
        return "HOME is not set"
    if home == "":
        return "HOME is empty"
    return f"HOME {home} is not an absolute path"


def _read_with_wal(target: Path, wal: Path) -> sqlite3.Connection:
    """An in-memory copy of a database whose WAL cannot be indexed where it lies (a read-only
    folder without its -shm file): the two files are copied to a private folder, where SQLite
    reads the WAL's commits in, and the result into memory; the folder is removed at once."""
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="prep-read-")
    try:
        copy = Path(folder) / "progress.db"
        shutil.copyfile(target, copy)
        shutil.copyfile(wal, f"{copy}-wal")
        disk = sqlite3.connect(copy, isolation_level=None)
        try:
            memory = sqlite3.connect(":memory:", isolation_level=None)
            disk.backup(memory)
        finally:
            disk.close()
        return memory
    except OSError as exc:
        raise StoreError(
            f"{target}: cannot read the reviews still in {wal.name} ({exc.strerror or exc})",
            kind="read-only",
        ) from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _refuse_foreign(conn: sqlite3.Connection, target: Path) -> None:
    """A StoreError when ``conn`` is another program's SQLite database (tables, but none of
    prep's ``meta``): prep would add its tables and switch the file to WAL mode."""
    tables = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    if not tables:
        return  # a new (or empty) file: prep's to fill
    try:
        ours = "meta" in tables and (
            # prep's, its version row edited away (the log: v13's revlog, before it reviews)
            ({"cards", "reviews"} <= set(tables) or {"cards", "revlog"} <= set(tables))
            or conn.execute("SELECT 1 FROM meta WHERE key = 'schema_version'").fetchone()
        )
    except sqlite3.OperationalError:
        ours = False  # a table named meta, not prep's
    if not ours:
        shown = ", ".join(sorted(tables)[:4]) + (", ..." if len(tables) > 4 else "")
        raise StoreError(
            f"{target}: is another program's SQLite database (tables: {shown}), not prep's "
            "progress; --db (or PREP_DB) names prep's own file",
            kind="foreign",
        )


def resolve_db_path(explicit: str | os.PathLike | None = None) -> Path:
    """--db PATH, else $PREP_DB, else the user data dir."""
    if explicit:
        return expand_user(explicit)
    env = os.environ.get("PREP_DB")
    if env:
        return expand_user(env)
    return default_db_path()


def _cannot_write(exc: BaseException) -> bool:
    """Whether opening failed only because the database or its folder cannot be written."""
    if isinstance(exc, StoreError):
        return "read-only" in str(exc) or "readonly" in str(exc)
    if isinstance(exc, sqlite3.DatabaseError):
        code = getattr(exc, "sqlite_errorcode", None)
        primary = None if code is None else code & 0xFF
        return primary in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM)
    return isinstance(exc, PermissionError)


# Free space under which an I/O error is the disk being full. SQLite's WAL index (-shm) is
# 32 KiB and a first commit writes a -wal of a few 4 KiB pages: with less than 1 MiB free, an
# open that fails "disk I/O error" (SQLite's word when it cannot grow the -shm) is that.
FULL_BELOW = 1 << 20


def disk_full(target: Path, exc: BaseException) -> str | None:
    """``the disk holding FOLDER is full (N KiB free)...`` when ``exc`` is an I/O error or a full
    disk and the database's folder has (almost) no free space left; None otherwise."""
    code = getattr(exc, "sqlite_errorcode", None)
    io = code is not None and code & 0xFF in (sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL)
    io = io or isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)
    said = str(exc)
    if not (io or "disk I/O error" in said or "database or disk is full" in said):
        return None
    folder = target.parent
    try:
        fs = os.statvfs(folder)
    except (OSError, ValueError):
        return None
    free = fs.f_bavail * fs.f_frsize  # what a user (not root's reserve) may write
    if free >= FULL_BELOW:
        return None
    return (
        f"the disk holding {folder} is full ({free // 1024} KiB free); nothing saved is lost: "
        "free some space and try again"
    )


def _discard_unmade(target: Path, folders: list[Path]) -> None:
    """Remove what a failed open made: the database file ``target`` (which did not exist
    before) and ``folders``, those above it that did not, innermost first. The file goes only
    while nothing was committed to it (no ``meta`` table: not another prep's database made in
    the same moment), with the files SQLite keeps beside it; a folder only when empty."""
    from contextlib import suppress

    if target.is_file():
        try:
            conn = sqlite3.connect(sqlite_uri(target, "mode=ro"), uri=True)
            try:
                ours = conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
                ).fetchone()
            finally:
                conn.close()
        except sqlite3.Error:
            ours = None  # (unreadable: nothing committed to read either)
        if ours is None:
            for suffix in ("", "-wal", "-shm", "-journal"):
                with suppress(OSError):
                    os.unlink(f"{target}{suffix}")
    for folder in folders:
        with suppress(OSError):
            folder.rmdir()


def is_empty_file(target: Path) -> bool:
    """Whether ``target`` is an empty regular file with no WAL content beside it: no database
    yet (prep's own, once made, is never empty: WAL mode writes its first page at once)."""
    try:
        if not target.is_file() or target.stat().st_size:
            return False
        return not os.path.exists(f"{target}-wal") or os.path.getsize(f"{target}-wal") == 0
    except OSError:
        return False
