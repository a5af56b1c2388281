"""The reconciliation of progress with the decks matches only what changed since the last one
(engine/store/reconcile.py), with the same result as redoing it over every card: each edit
below is reconciled both ways (the whole, on a copy that forgot what the last one saw) and
the card rows must agree. And it is proportional: an edit of one file matches one file."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from prep.engine.decks import deckcache
from prep.engine.store import Store
from prep.engine.store.reconcile import RECORD_KEY


def card(cid: str, prompt: str) -> list[str]:
    return [f"  - id: {cid}", "    kind: recall", f"    prompt: {prompt}", "    answer: A."]


def write(folder: Path, name: str, deck: str, cards: list[tuple[str, str]]) -> None:
    lines = [f"deck: {deck}", f"title: {deck}", "cards:"]
    for cid, prompt in cards:
        lines += card(cid, prompt)
    path = folder / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    old = path.stat().st_mtime - 60  # (not racily clean)
    os.utime(path, (old, old))


def rows(db: Path) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(
            "SELECT id, deck, content_hash, changed, removed FROM cards ORDER BY id"
        ).fetchall()
    finally:
        conn.close()


def copy_of(db: Path, to: Path) -> Path:
    src, dst = sqlite3.connect(db), sqlite3.connect(to)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()
    return to


@pytest.fixture
def decks(tmp_path: Path) -> Path:
    folder = tmp_path / "decks"
    folder.mkdir()
    for f in range(4):
        write(folder, f"d{f}.yaml", f"deck{f}", [(f"c{f}-{i}", f"q {f} {i}") for i in range(6)])
    return folder


def test_each_edit_reconciled_by_what_changed_equals_the_whole(
    tmp_path: Path, decks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        deckcache.load(store, [decks], include_bundled=False)
        with store.transaction():  # progress for every card
            store.conn.execute(
                "INSERT INTO cards (id, deck, state, content_hash) "
                "SELECT id, deck, 1, chash FROM deck_cards"
            )
    matched: list[int] = []
    real = Store.reconcile_with_deck_cache

    def counting(self, key, step=None):  # noqa: ANN001, ANN202
        out = real(self, key, step)
        matched.append(out["files"])
        return out

    monkeypatch.setattr(Store, "reconcile_with_deck_cache", counting)

    def edit_text() -> None:
        write(decks, "d1.yaml", "deck1", [(f"c1-{i}", f"q 1 {i} edited") for i in range(6)])

    def drop_a_card() -> None:
        write(decks, "d2.yaml", "deck2", [(f"c2-{i}", f"q 2 {i}") for i in range(5)])

    def bring_it_back() -> None:
        write(decks, "d2.yaml", "deck2", [(f"c2-{i}", f"q 2 {i}") for i in range(6)])

    def move_a_card() -> None:  # c3-0 moves from deck3 to deck0
        write(decks, "d3.yaml", "deck3", [(f"c3-{i}", f"q 3 {i}") for i in range(1, 6)])
        write(
            decks,
            "d0.yaml",
            "deck0",
            [(f"c0-{i}", f"q 0 {i}") for i in range(6)] + [("c3-0", "q 3 0")],
        )

    def a_duplicate_earlier() -> None:  # d0 (loaded first) now also holds c1-2
        write(
            decks,
            "d0.yaml",
            "deck0",
            [(f"c0-{i}", f"q 0 {i}") for i in range(6)] + [("c3-0", "q 3 0"), ("c1-2", "dup")],
        )

    def the_duplicate_gone_again() -> None:  # c1-2 is d1's again (d1 itself unchanged)
        write(
            decks,
            "d0.yaml",
            "deck0",
            [(f"c0-{i}", f"q 0 {i}") for i in range(6)] + [("c3-0", "q 3 0")],
        )

    def rename_a_deck() -> None:
        write(decks, "d2.yaml", "renamed", [(f"c2-{i}", f"q 2 {i}") for i in range(6)])

    def delete_a_file() -> None:
        (decks / "d3.yaml").unlink()

    def import_a_stray_row() -> None:  # a card row no deck holds, written by an import
        with Store.open(db) as store, store.transaction():
            store.conn.execute(
                "INSERT INTO cards (id, deck, state, content_hash, removed) "
                "VALUES ('stray', 'elsewhere', 1, 'x', 0)"
            )
            store.conn.execute("UPDATE meta SET value = value || '!' WHERE key = 'deck_sync'")
            store.conn.execute(
                "UPDATE meta SET value = json_set(value, '$.key', "
                "(SELECT value FROM meta WHERE key = 'deck_sync')) WHERE key = ?",
                (RECORD_KEY,),
            )

    edits = [
        edit_text,
        drop_a_card,
        bring_it_back,
        move_a_card,
        a_duplicate_earlier,
        the_duplicate_gone_again,
        rename_a_deck,
        delete_a_file,
        import_a_stray_row,
    ]
    for n, edit in enumerate(edits):
        edit()
        whole = copy_of(db, tmp_path / f"whole-{n}.db")
        with Store.open(whole) as store, store.transaction():
            store.conn.execute("DELETE FROM meta WHERE key = ?", (RECORD_KEY,))
        matched.clear()
        for path in (db, whole):
            with Store.open(path) as store:
                deckcache.load(store, [decks], include_bundled=False)
        assert rows(db) == rows(whole), edit.__name__
        assert len(matched) == 2 and matched[1] == len(list(decks.iterdir()))  # the whole
        assert matched[0] <= 2, edit.__name__  # what changed: one or two files
    final = {r[0]: r for r in rows(db)}
    assert final["c1-0"][3] == 1  # edited: flagged
    assert final["c3-0"][1] == "deck0" and final["c3-0"][4] == 0  # moved
    assert final["c2-1"][1] == "renamed"
    assert final["c1-2"][1] == "deck1"  # its duplicate gone: d1's card again
    assert final["c3-3"][4] == 1  # its file deleted: removed (history kept)
    assert final["stray"][4] == 1


def test_a_change_of_the_demos_alone_matches_no_file(tmp_path: Path, decks: Path) -> None:
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        deckcache.load(store, [decks], include_bundled=False, demo_names=["a"])
        key = store.deck_reconcile_key()
        out = store.reconcile_with_deck_cache(key + "x")  # as the load does for new demos
        assert out["files"] == 0
        with store.transaction():  # an upgrade or a sync cleared the key: the whole again
            store.conn.execute("DELETE FROM meta WHERE key = 'deck_sync'")
        assert store.reconcile_with_deck_cache(key)["files"] == 4
