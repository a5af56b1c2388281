"""A large first fill is written in bulk (issue 26, item 4; engine/store/deckfill.py): the cards'
id index and their tags are built once at the end instead of row by row. The cache it leaves
is the one a row-by-row fill leaves, and a fill killed half-way is completed by the next open
with nothing lost."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from prep.engine.decks import deckcache, fillbatch
from prep.engine.decks.deckcache import load_collection
from prep.engine.decks.fill import INDEX, PARSE, Fill, describe
from prep.engine.store import Store


def tagged_decks(folder: Path, n_files: int = 6, per_file: int = 30) -> Path:
    """Decks whose ids interleave across files (as a generated collection's) and carry tags
    (one repeated: the cache keeps each (id, tag) once)."""
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(n_files):
        lines = [f"deck: tagged-{f}", "cards:"]
        for i in range(per_file):
            n = i * n_files + f
            lines += [
                f"  - id: t-{n:05d}",
                "    kind: recall",
                f"    prompt: What does card {n} ask?",
                "    answer: Its answer.",
                f"    tags: [tag-{n % 7}, shared, tag-{n % 7}]",
            ]
        (folder / f"tagged-{f}.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def cache_contents(db: Path) -> tuple[list, list, list, list]:
    conn = sqlite3.connect(db)
    try:
        cards = conn.execute(
            "SELECT key, id, deck, parent, demos, chash, data, dup, kind, level FROM deck_cards "
            "ORDER BY key"
        ).fetchall()
        tags = conn.execute("SELECT id, tag, key FROM deck_tags ORDER BY id, tag, key").fetchall()
        index = conn.execute(
            "SELECT name FROM sqlite_master WHERE name = 'deck_cards_id'"
        ).fetchall()
        mark = conn.execute("SELECT value FROM meta WHERE key = 'deck_cache_bulk'").fetchall()
    finally:
        conn.close()
    return cards, tags, index, mark


def test_a_bulk_fill_caches_what_a_row_by_row_fill_caches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decks = tagged_decks(tmp_path / "decks")
    monkeypatch.setattr(fillbatch, "BULK_CHARS", 10**12)  # row by row
    with Store.open(tmp_path / "rows.db") as store:
        row_ids = [c.id for c in deckcache.load(store, [decks], include_bundled=False).cards]
    monkeypatch.setattr(fillbatch, "BULK_CHARS", 0)  # in bulk
    statements: list[str] = []
    stages: list[str] = []

    def progress(fill: Fill) -> None:
        stages.append(fill.stage)

    with Store.open(tmp_path / "bulk.db") as store:
        store.conn.set_trace_callback(statements.append)
        bulk = deckcache.load(store, [decks], include_bundled=False, progress=progress)
        store.conn.set_trace_callback(None)
        assert [c.id for c in bulk.cards] == row_ids
        assert store.deck_cache_tag_progress(21.0) == {
            "shared": (180, 0, 0),
            **{f"tag-{k}": (len([n for n in range(180) if n % 7 == k]), 0, 0) for k in range(7)},
        }
    assert any("DROP INDEX IF EXISTS deck_cards_id" in s for s in statements)  # it was bulk
    row_by_row = "DELETE FROM deck_tags WHERE key BETWEEN"  # (each put's scan of every tag)
    assert not any(s.startswith(row_by_row) for s in statements)
    from_json = "INSERT OR IGNORE INTO deck_tags (id, tag, key) SELECT"
    assert not any(s.startswith(from_json) for s in statements)  # (kept as they were put)
    assert INDEX in stages and stages.index(INDEX) > max(
        i for i, s in enumerate(stages) if s == PARSE
    )
    assert "indexing" in describe(Fill(files_total=6, bytes_total=1, stage=INDEX))
    by_rows, in_bulk = cache_contents(tmp_path / "rows.db"), cache_contents(tmp_path / "bulk.db")
    assert in_bulk == by_rows
    assert in_bulk[2] == [("deck_cards_id",)] and in_bulk[3] == []  # indexed, the mark gone
    assert len(in_bulk[1]) == 180 * 2


_KILLED_BULK_FILL = """
import os, signal, sys
from pathlib import Path
from prep.engine.decks import deckcache, fillbatch
from prep.engine.decks.fill import STORE
from prep.engine.store import Store
fillbatch.BATCH_SECONDS = 0.0  # a batch a file: three files committed when killed
fillbatch.BULK_CHARS = 0

def progress(fill):
    if fill.stage == STORE and fill.files_done == 3:  # the 4th file parsed, not yet written
        os.kill(os.getpid(), signal.SIGKILL)

deckcache.load(Store.open(Path(sys.argv[1])), [Path(sys.argv[2])], include_bundled=False,
               progress=progress)
"""


def test_a_bulk_fill_killed_half_way_is_completed_by_the_next_open(tmp_path: Path) -> None:
    decks = tagged_decks(tmp_path / "decks")
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        store.set_meta("kept", "yes")  # (something saved before the fill)
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_BULK_FILL, str(db), str(decks)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    cards, tags, index, mark = cache_contents(db)
    assert len(cards) == 3 * 30 and tags == [] and index == [] and mark == [("1",)]
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()

    # a prep that may not write still opens it (its own private cache)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None)
    with Store(conn, db) as read_only:
        coll = deckcache.load(read_only, [decks], include_bundled=False)
        assert read_only.deck_cache_is_private() and len(coll) == 180
    assert cache_contents(db)[2:] == ([], [("1",)])  # (it wrote nothing)

    parsed: list[str] = []
    with Store.open(db) as store:
        coll = deckcache.load(
            store,
            [decks],
            include_bundled=False,
            progress=lambda f: parsed.append(f.file) if f.stage == PARSE else None,
        )
        assert len(parsed) == 3  # only the files the killed fill had not committed
        assert [c.id for c in coll.cards] == [
            c.id for c in load_collection([decks], include_bundled=False).cards
        ]
        assert store.get_meta("kept") == "yes"
    with Store.open(tmp_path / "fresh.db") as store:
        deckcache.load(store, [decks], include_bundled=False)
    assert cache_contents(db) == cache_contents(tmp_path / "fresh.db")
    assert cache_contents(db)[2:] == ([("deck_cards_id",)], [])


def test_a_bulk_fill_beside_cached_files_keeps_their_tags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files cached before a bulk fill (not parsed again) keep their tags: the end reads
    every card's tags back from the cache, not only those put now."""
    small = tagged_decks(tmp_path / "small", n_files=1, per_file=10)
    big = tagged_decks(tmp_path / "big", n_files=4, per_file=30)
    for path in big.glob("*.yaml"):  # (other deck names and ids than the small folder's)
        path.write_text(path.read_text().replace("tagged-", "big-").replace("t-0", "b-0"))
    monkeypatch.setattr(fillbatch, "BULK_CHARS", 0)
    with Store.open(tmp_path / "p.db") as store:
        deckcache.load(store, [small], include_bundled=False)  # in bulk, alone
        statements: list[str] = []
        store.conn.set_trace_callback(statements.append)
        deckcache.load(store, [small, big], include_bundled=False)  # in bulk, beside it
        store.conn.set_trace_callback(None)
    assert any("DROP INDEX IF EXISTS deck_cards_id" in s for s in statements)
    monkeypatch.setattr(fillbatch, "BULK_CHARS", 10**12)
    with Store.open(tmp_path / "rows.db") as store:
        deckcache.load(store, [small, big], include_bundled=False)
    assert cache_contents(tmp_path / "p.db") == cache_contents(tmp_path / "rows.db")
