"""Schema v17: the upgrade marks each card row that is its newest review's state (``logged``).

v14's upgrade left ``cards.logged`` NULL on every card rated before it, so the first rating of
each such card after the upgrade stored the state before it in full, and the benchmark's
collection (a v3 database, upgraded) did so on every answer it measured (round 13's find).
The marks are checked here against what the store itself decodes: a card is marked with its
newest review's id exactly when ``store.card(id)`` equals that review's ``next``."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import pytest

from prep.engine.store import SCHEMA_VERSION, Store
from prep.engine.store.schema import Schema
from prep.engine.store.schema17 import v16_to_v17
from tests.test_migration_v5 import v3_database
from tests.test_sync import T0, rate
from tests.test_sync_logged import _logged, _newest_prev_blob


def _expected(store: Store) -> dict[str, int | None]:
    """Each card's mark by the rule, from the store's own decoding of its log."""
    out: dict[str, int | None] = {}
    for (cid,) in store.conn.execute("SELECT id FROM cards ORDER BY id").fetchall():
        log = store.reviews(card_id=cid)
        out[cid] = log[-1].id if log and log[-1].next == store.card(cid) else None
    return out


def _marks(store: Store) -> dict[str, int | None]:
    return dict(store.conn.execute("SELECT id, logged FROM cards ORDER BY id").fetchall())


@pytest.fixture(scope="module")
def v3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("v3") / "v3.db"
    v3_database(path)
    return path


def test_an_upgraded_v3_database_marks_the_rows_that_are_their_newest_state(
    v3: Path, tmp_path: Path
) -> None:
    path = tmp_path / "prep.db"
    shutil.copyfile(v3, path)
    with Store.open(path) as store:
        assert store.schema_version() == SCHEMA_VERSION == 17
        expected = _expected(store)
        assert _marks(store) == expected
        # the generator's 12 cards: the one whose text changed after its newest review, the
        # one reset with a row left behind and the one whose newest state was kept verbatim
        # are not their newest state; the other nine are
        assert sum(v is not None for v in expected.values()) == 9, expected
        assert expected["c-0000003"] is None and expected["c-0000007"] is None
        # the next rating of a marked card stores "that review's next" and decodes to the row
        before = store.card("c-0000001")
        rate(store, "c-0000001", 3, T0 + timedelta(days=400))
        assert _newest_prev_blob(store, "c-0000001") is None
        assert store.reviews(card_id="c-0000001")[-1].prev == before
        # an unmarked one stores the row in full, which decodes to it as well
        before = store.card("c-0000003")
        rate(store, "c-0000003", 3, T0 + timedelta(days=400))
        assert _newest_prev_blob(store, "c-0000003") is not None
        assert store.reviews(card_id="c-0000003")[-1].prev == before
        assert store.undo_last() is not None
        assert store.card("c-0000003") == before


def _set_back(path: Path, *changes: tuple[str, tuple]) -> None:
    """The database as v16 left it: every row unmarked (after ``changes``)."""
    with Store.open(path) as store:
        for sql, args in changes:
            store.conn.execute(sql, args)
        store.conn.execute("UPDATE cards SET logged = NULL")
        store.set_meta("schema_version", "16")


def test_a_v16_database_is_marked_and_an_edited_or_damaged_card_is_not(tmp_path: Path) -> None:
    path = tmp_path / "prep.db"
    with Store.open(path) as store:
        for day in range(3):
            for cid in ("a", "b", "c", "d", "e"):
                rate(store, cid, 3 if day else 1, T0 + timedelta(days=day))
        newest = {cid: _logged(store, cid)[1] for cid in "abcde"}
    # b's text changed after its newest review; c's newest state cannot be read; e's due
    # time was edited by hand into text that is not a time
    _set_back(
        path,
        ("UPDATE cards SET changed = 1, content_hash = 'e' WHERE id = 'b'", ()),
        ("UPDATE revlog SET next = x'03ff' WHERE id = ?", (newest["c"],)),
        ("UPDATE cards SET due = 'tomorrow' WHERE id = 'e'", ()),
    )
    with Store.open(path) as store:  # upgraded: no error for the damaged row
        assert store.schema_version() == 17
        assert _marks(store) == {
            "a": newest["a"],
            "b": None,
            "c": None,
            "d": newest["d"],
            "e": None,
        }
        before = _marks(store)
        v16_to_v17(Schema(store.conn))  # again: nothing more to mark, nothing changed
        assert _marks(store) == before


def test_every_card_of_a_larger_log_is_marked_across_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step reads the unmarked cards a page at a time: none is skipped at a page's edge."""
    from prep.engine.store import schema17

    monkeypatch.setattr(schema17, "_PAGE", 3)
    path = tmp_path / "prep.db"
    cids = [f"k{i:02d}" for i in range(10)]
    with Store.open(path) as store:
        for day in range(2):
            for cid in cids:
                rate(store, cid, 3, T0 + timedelta(days=day))
    _set_back(path)
    with Store.open(path) as store:
        marks = _marks(store)
        assert marks == _expected(store)
        assert all(marks[c] is not None for c in cids)


def test_the_walk_is_said_as_it_goes_and_the_percentage_adds_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A v16 database's upgrade (every learner's this release) is v17's walk of the log: its
    percentage rises page by page and reaches most of the way before the commit, where it sat
    at 0% through the whole walk (~17 s at 1M reviews), then jumped to 49% and to 100%: the
    walk's weight was left out of the total and a conversion pass that never runs left in."""
    from prep.engine.store import schema17
    from prep.engine.store.schema import Upgrade

    monkeypatch.setattr(schema17, "_PAGE", 3)
    path = tmp_path / "prep.db"
    with Store.open(path) as store:
        for day in range(2):
            for cid in [f"k{i:02d}" for i in range(10)]:
                rate(store, cid, 3, T0 + timedelta(days=day))
    _set_back(path)
    seen: list[Upgrade] = []
    Store.open(path, progress=seen.append).close()
    assert {(u.from_version, u.to_version) for u in seen} == {(16, 17)}
    fractions = [u.fraction for u in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and seen[-1].done
    during = [f for f in fractions[:-1] if 0.0 < f < 1.0]
    assert len(set(during)) >= 4, fractions  # pages of the walk, then the steps after it
    assert fractions[-2] >= 0.9, fractions  # the steps' weights add up to the whole
