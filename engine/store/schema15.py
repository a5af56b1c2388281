"""Schema v15: the deck cache's ``deck_files`` with its small columns first (issue 26, item 3).

Every open reads each cached deck file's entry (engine/decks/changed.py: size, mtime, hash,
identity; the assembly: ``info``, ``errors``; the files in order: ``ord``). v4's table put
``declared`` (every card id of the file with its line, JSON: ~80 KB for a generated file of
4,000 cards) in the middle of the row, and v12 added ``ident`` at its end: SQLite reads a
row's columns in order, so reading ``ident``, ``errors`` or ``ord`` walked the overflow pages
of ``declared`` first, about 20 pages a file. At a million cards (256 files) the two reads of
the entries an open makes took 8.4 ms each where the same columns without ``ident`` took 0.2;
``declared`` is read only when the checks across files are redone.

The step rebuilds the table with ``declared`` last (``ident`` and ``ord`` beside the other
small columns, ``errors`` after ``info``: a file's parse errors are capped, so a few hundred
bytes at most), keeping every row and its ``fid`` (the deck_cards keys are fid << 32 | line).
No statement changes: every one names its columns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prep.engine.store.schema import UpgradeTracker

DECK_FILES_SQL = (
    "CREATE TABLE deck_files (fid INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, "
    "shown TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, "
    "sha256 TEXT NOT NULL, checked_ns INTEGER NOT NULL, ident TEXT, ord INTEGER, info TEXT, "
    "errors TEXT NOT NULL, declared TEXT NOT NULL)"
)
_COLUMNS = (
    "fid, path, shown, size, mtime_ns, sha256, checked_ns, ident, ord, info, errors, declared"
)


def v14_to_v15(db: Any, progress: UpgradeTracker | None = None) -> None:
    conn = db.conn
    conn.execute("ALTER TABLE deck_files RENAME TO deck_files_v14")
    conn.execute(DECK_FILES_SQL)
    conn.execute(
        f"INSERT INTO deck_files ({_COLUMNS}) SELECT {_COLUMNS} FROM deck_files_v14 ORDER BY fid"
    )
    conn.execute("DROP TABLE deck_files_v14")
