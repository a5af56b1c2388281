"""Is the database file prep opened still the one its path names?

SQLite keeps writing through the file it opened: when that file is removed (``rm``), or another
is put in its place (``mv``, a restore by hand, a sync tool writing a new version beside it and
renaming it over), every commit still succeeds, into a file nobody will open again, and is lost
when prep closes it. So the store notes the file's identity (st_dev, st_ino) when it opens it,
and every write transaction checks, just before its COMMIT, that the path still names that file
(one stat, ~1-2 µs; transaction() in core.py). Before COMMIT, not after: after it the rating
would already be in the unlinked file and shown as saved; before BEGIN would leave the
transaction's own statements open to a swap.

When the path names another file (or none), nothing of the transaction is written: it is rolled
back, and the open connection, which still reads the removed file, is copied once into the
backups folder (``NAME-...-replaced.db``), so the ratings shown as saved before the swap are not
lost with it, and the old file's WAL is taken from beside the path (the next open would
read it as the WAL of the file there now: SQLite keeps no record of which file a WAL is of); the StoreError (kind "replaced") says where they are and to restart prep. A file
replaced by one of the same content is still another file (prep's writes would go to the old
one): it is refused as well, and a restart opens it.

prep's own `backup --restore` writes the backup into the open database through SQLite (the same
file, the same inode), so it passes, and another prep running on that file reads the restored
content through SQLite as it reads another prep's commits.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING

from prep.engine.store.dbfile import StoreError

if TYPE_CHECKING:
    from prep.engine.store.core import StoreCore

Identity = tuple[int, int]


def identity(path: Path) -> Identity | None:
    """The file's (st_dev, st_ino), None when it cannot be read (nothing to compare)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def changed(path: Path | None, known: Identity) -> str | None:
    """ "removed" or "replaced" when ``path`` no longer names the file ``known``, else None (a
    stat that fails otherwise, e.g. a folder made unreadable, is left to SQLite's own errors)."""
    if path is None:
        return None
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "removed"
    except OSError:
        return None
    return None if (st.st_dev, st.st_ino) == known else "replaced"


def refuse(store: StoreCore, what: str) -> StoreError:
    """Roll the open transaction back, rescue what the old file holds (once), and the error."""
    with suppress(sqlite3.Error):
        if store.conn.in_transaction:
            store.conn.execute("ROLLBACK")
    path = store.path
    assert path is not None
    rescued = getattr(store, "_rescued", None)
    if rescued is None:
        rescued = store._rescued = _rescue(store, what)  # type: ignore[attr-defined]
    return StoreError(
        f"{path}: the progress database was {what} while prep was running; this was not "
        f"saved (it would have gone into the {what} file, lost when prep closes it). "
        f"{rescued}; restart prep",
        kind="replaced",
    )


def _set_aside_wal(store: StoreCore) -> None:
    """Remove the open file's WAL (and its index) from beside the path, now that the copy
    holds all of it: SQLite does not checkpoint a moved file on close and leaves them there,
    where the next open would read them as the WAL of the file there now (SQLite cannot tell:
    a mixed, damaged database). A WAL there that is not this file's is left alone."""
    wal = Path(f"{store.path}-wal")
    if store._wal is None or identity(wal) != store._wal:
        return
    with suppress(OSError):
        wal.unlink()  # (prep's open connection keeps reading it)
        Path(f"{store.path}-shm").unlink(missing_ok=True)


def _rescue(store: StoreCore, what: str) -> str:
    """A copy of the file prep has open (the one removed or replaced), in the backups folder;
    the sentence that says where it is."""
    from prep.engine.store import backup

    try:
        copy = backup.make(store, "replaced")  # type: ignore[arg-type]
    except backup.BackupError as exc:
        return f"What was saved before it could not be copied out ({exc})"
    assert copy is not None  # (a database with a path)
    _set_aside_wal(store)
    after = " (the file there now is backed up first)" if what == "replaced" else ""
    return (
        f"Everything saved before it is copied to {copy}: `prep backup --restore "
        f"{copy.name}` puts it back{after}"
    )
