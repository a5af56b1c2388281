"""The progress database's own files, which no export may write over.

SQLite keeps a database in up to four files: the database, its ``-wal`` (committed pages not yet
copied back), ``-shm`` (the WAL's index) and ``-journal``. ``prep export -o`` naming any of them
(by its name, through a symlink or another hard link) would replace progress with its own
export; the export is refused first, in one line.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from prep.engine.paths import expand_user

SIDECARS = ("", "-wal", "-shm", "-journal")


def database_files(db: Path) -> list[Path]:
    """The database and the files SQLite keeps beside it (existing or not)."""
    return [db.with_name(db.name + suffix) for suffix in SIDECARS]


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)  # the same inode: a symlink or another hard link
    except OSError:
        pass  # one of them does not exist (yet): compare where they would be
    try:
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        return False


def database_target(targets: Iterable[Path], db: Path) -> tuple[Path, Path] | None:
    """(target, database file) for the first target that is one of ``db``'s files, else None."""
    protected = database_files(db)
    for target in targets:
        for kept in protected:
            if _same(expand_user(target), kept):
                return Path(target), kept
    return None
