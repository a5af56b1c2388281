"""A large first fill is written in bulk (issue 26, item 4; engine/store/deckfill.py): the cards'
id index and their tags are built once at the end instead of row by row. The cache it leaves
is the one a row-by-row fill leaves, and a fill killed half-way is completed by the next open
with nothing lost."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from prep.engine.decks import deckcache, fillbatch
from prep.engine.decks.deckcache import load_collection
from prep.engine.decks.fill import INDEX, PARSE, Fill, describe
from prep.engine.store import Store

from .killedfill import kill_a_fill, opened_noting_parsed


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
    row_by_row = "DELETE FROM deck_tags WHERE key BETWEEN"  # (each put deleting its tags)
    assert not any(s.startswith(row_by_row) for s in statements)
    from_json = "INSERT OR IGNORE INTO deck_tags (id, tag, key) SELECT dc.id"
    assert not any(s.startswith(from_json) for s in statements)  # (kept as they were put:
    assert any("FROM temp.deck_fill_tags" in s for s in statements)  # sorted by SQLite)
    assert INDEX in stages and stages.index(INDEX) > max(
        i for i, s in enumerate(stages) if s == PARSE
    )
    assert "indexing" in describe(Fill(files_total=6, bytes_total=1, stage=INDEX))
    by_rows, in_bulk = cache_contents(tmp_path / "rows.db"), cache_contents(tmp_path / "bulk.db")
    assert in_bulk == by_rows
    assert in_bulk[2] == [("deck_cards_id",)] and in_bulk[3] == []  # indexed, the mark gone
    assert len(in_bulk[1]) == 180 * 2


def test_a_bulk_fill_killed_half_way_is_completed_by_the_next_open(tmp_path: Path) -> None:
    decks = tagged_decks(tmp_path / "decks")
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        store.set_meta("kept", "yes")  # (something saved before the fill)
    kill_a_fill(db, decks, seconds=0.0, bulk_chars=0)  # a batch a file, in bulk
    cards, tags, index, mark = cache_contents(db)
    assert len(cards) == 3 * 30 and tags == [] and index == [] and mark == [("1",)]

    # a prep that may not write still opens it (its own private cache)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None)
    with Store(conn, db) as read_only:
        coll = deckcache.load(read_only, [decks], include_bundled=False)
        assert read_only.deck_cache_is_private() and len(coll) == 180
    assert cache_contents(db)[2:] == ([], [("1",)])  # (it wrote nothing)

    with opened_noting_parsed(db, decks) as (store, coll, parsed):
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


def test_a_file_parsed_again_row_by_row_replaces_its_tags_without_scanning_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small fill (row by row) of a changed file deletes that file's old tags by its
    cards' ids (deck_tags' key), not by a scan of every tag of the collection (which made
    each file's write cost the collection's size); the tags left are a fresh fill's."""
    decks = tagged_decks(tmp_path / "decks")
    monkeypatch.setattr(fillbatch, "BULK_CHARS", 10**12)  # row by row
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        deckcache.load(store, [decks], include_bundled=False)
    edited = decks / "tagged-2.yaml"
    text = edited.read_text(encoding="utf-8")
    text = text.replace("shared, ", "renamed, ").replace("t-00008", "t-99998")  # (an id too)
    edited.write_text(text, encoding="utf-8")
    statements: list[str] = []
    with Store.open(db) as store:
        store.conn.set_trace_callback(statements.append)
        deckcache.load(store, [decks], include_bundled=False)
        store.conn.set_trace_callback(None)
        deletes = [s for s in statements if s.startswith("DELETE FROM deck_tags")]
        assert len(deletes) == 1  # (the one file parsed again)
        plan = [r[3] for r in store.conn.execute("EXPLAIN QUERY PLAN " + deletes[0])]
        assert not any(step.startswith("SCAN deck_tags") for step in plan), plan
    with Store.open(tmp_path / "fresh.db") as store:
        deckcache.load(store, [decks], include_bundled=False)
    after, fresh = cache_contents(db), cache_contents(tmp_path / "fresh.db")
    assert after[1] == fresh[1]  # the tags: the edited file's new ones, the others kept
    assert sum(tag == "renamed" for _, tag, _ in after[1]) == 30
    assert not any(cid == "t-00008" for cid, _, _ in after[1])
