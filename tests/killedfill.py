"""A deck-cache fill killed half-way, and the next open that completes it (shared by
tests/test_fill_batch.py and tests/test_fill_bulk.py)."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from prep.engine.decks import deckcache
from prep.engine.decks.collection import CachedCollection
from prep.engine.decks.fill import PARSE
from prep.engine.store import Store

# argv: database, deck folder, the seconds a batch may last, BULK_CHARS ("" leaves it)
_KILLED_FILL = """
import os, signal, sys
from pathlib import Path
from prep.engine.decks import deckcache, fillbatch
from prep.engine.decks.fill import STORE
from prep.engine.store import Store
fillbatch.BATCH_SECONDS = float(sys.argv[3])
if sys.argv[4]:
    fillbatch.BULK_CHARS = int(sys.argv[4])

def progress(fill):
    if fill.stage == STORE and fill.files_done == 3:  # the 4th file parsed, not yet written
        os.kill(os.getpid(), signal.SIGKILL)

deckcache.load(Store.open(Path(sys.argv[1])), [Path(sys.argv[2])], include_bundled=False,
               progress=progress)
"""


def kill_a_fill(db: Path, decks: Path, seconds: float, bulk_chars: int | None = None) -> None:
    """Fill ``db``'s cache from ``decks`` in another process, SIGKILLed once three files are
    written and the fourth is parsed (``seconds``: how long a batch may last; 0 commits each
    file); the database it leaves passes SQLite's integrity check."""
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _KILLED_FILL,
            str(db),
            str(decks),
            str(seconds),
            "" if bulk_chars is None else str(bulk_chars),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        conn.close()


@contextmanager
def opened_noting_parsed(
    db: Path, decks: Path
) -> Iterator[tuple[Store, CachedCollection, list[str]]]:
    """The store at ``db``, the collection its open loads from ``decks``, and the files that
    open parsed (in order)."""
    parsed: list[str] = []
    with Store.open(db) as store:
        coll = deckcache.load(
            store,
            [decks],
            include_bundled=False,
            progress=lambda f: parsed.append(f.file) if f.stage == PARSE else None,
        )
        yield store, coll, parsed
