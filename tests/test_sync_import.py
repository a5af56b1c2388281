"""`prep import` merges by `prep sync`'s rules (issue 24 item 5): an undo travels in an export
(its tombstone) and removes the review wherever an earlier export or a sync brought it; marks
and settings are last-writer-wins registers whichever way they arrive; and after a restore
(a new device id) what the old id had not sent is sent."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest

from prep.engine.store import Mark, Store, devices
from prep.engine.study.scheduler import CardState, Scheduler, Settings
from prep.engine.sync.run import sync
from prep.engine.transfer import export as ex
from prep.engine.transfer import importer
from tests.test_sync import T0, rate, stores, view
from tests.test_sync_identity import held_once, ids


def export(store: Store, path: Path) -> Path:
    if path.suffix == ".csv":
        ex.export_csv(store, path)
    else:
        ex.export_json(store, path, T0)
    return path


def graves(store: Store) -> set[tuple[str, int]]:
    return set(
        store.conn.execute(
            "SELECT d.id, g.seq FROM review_graves g JOIN sync_devices d ON d.n = g.dev"
        )
    )


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_an_undo_travels_through_a_later_import(tmp_path: Path, fmt: str) -> None:
    """b imported a's reviews; a undoes two of them (its newest: x's second, then y) and
    exports again: b's import removes them and replays x, as a sync would."""
    (a, b), _ = stores(tmp_path, 2)
    rate(a, "x", 3, T0)
    rate(a, "y", 3, T0)
    rate(a, "x", 4, T0 + timedelta(days=2))
    importer.import_file(b, export(a, tmp_path / f"1.{fmt}"))
    assert len(b.reviews(card_id="x")) == 2 and held_once(b)
    assert a.undo_last() is not None and a.undo_last() is not None
    result = importer.import_file(b, export(a, tmp_path / f"2.{fmt}"))
    assert result.reviews_undone == 2 and "2 reviews undone" in result.summary()
    assert b.reviews(card_id="y") == [] and b.card("y") is None
    assert [r.rating for r in b.reviews(card_id="x")] == [3]
    assert b.card("x") == a.card("x")
    assert view(a) == view(b) and held_once(b)
    assert graves(a) == graves(b)
    # idempotent: the same file again changes nothing
    before = b.dump()
    again = importer.import_file(b, tmp_path / f"2.{fmt}")
    assert again.reviews_undone == 0 and b.dump() == before


def test_an_undo_in_the_middle_of_a_merged_history_replays_the_card(tmp_path: Path) -> None:
    """b holds a's review of x and rated x after it; a undoes its review: b's x is replayed
    from b's own review alone (c learns the same undo by a sync: the same result)."""
    (a, b, c), folder = stores(tmp_path, 3)
    rate(a, "x", 1, T0)
    for s in (b, c):
        importer.import_file(s, export(a, tmp_path / "1.json"))
        rate(s, "x", 4, T0 + timedelta(days=1))
    assert a.undo_last() is not None
    importer.import_file(b, export(a, tmp_path / "2.json"))
    sync(a, folder)
    sync(c, folder)
    for s in (b, c):
        (only,) = s.dump()["reviews"]
        assert only["rating"] == 4 and only["prev"] is None  # x's first review now
        key = f"{only['device']}:{only['seq']}"
        alone = Scheduler(s.settings()).review(CardState(id="x"), 4, T0 + timedelta(days=1), key)
        card = s.card("x")
        assert card is not None
        assert (card.due, card.stability, card.reps) == (alone.state.due, alone.state.stability, 1)


def test_an_undo_taken_in_by_an_import_is_passed_on_by_sync(tmp_path: Path) -> None:
    """c got a's review from b's sync (b had imported it); a never syncs, it only exports:
    its undo reaches b by an import and c through b's next sync."""
    (a, b, c), folder = stores(tmp_path, 3)
    rate(a, "x", 3, T0)
    importer.import_file(b, export(a, tmp_path / "1.json"))
    sync(b, folder)
    sync(c, folder)
    assert len(c.reviews(card_id="x")) == 1
    assert a.undo_last() is not None
    importer.import_file(b, export(a, tmp_path / "2.json"))
    sent = sync(b, folder)
    assert sent.sent_other == 1  # the undo, passed on
    got = sync(c, folder)
    assert got.applied.undone == 1 and c.reviews(card_id="x") == []
    assert view(b) == view(c)
    # and it is not sent again
    assert sync(b, folder).sent_other == 0


def test_an_undo_in_a_file_reaches_a_review_that_arrives_later(tmp_path: Path) -> None:
    """The tombstone is kept: the review, arriving afterwards (an older export), is not taken."""
    (a, b), _ = stores(tmp_path, 2)
    rate(a, "x", 3, T0)
    export(a, tmp_path / "old.json")
    assert a.undo_last() is not None
    importer.import_file(b, export(a, tmp_path / "new.json"))
    result = importer.import_file(b, tmp_path / "old.json")
    assert result.reviews_added == 0 and b.reviews() == []


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_marks_merge_through_import_by_the_later_writer(tmp_path: Path, fmt: str) -> None:
    (a, b), _ = stores(tmp_path, 2)
    rate(a, "x", 3, T0)
    a.set_mark("x", Mark(suspended=True), at=T0)
    a.set_mark("y", Mark(flagged=True), at=T0)
    importer.import_file(b, export(a, tmp_path / f"1.{fmt}"))
    assert b.mark("x") == Mark(suspended=True)
    a.set_mark("x", Mark(), at=T0 + timedelta(hours=1))  # unsuspended on a, later
    b.set_mark("y", Mark(), at=T0 + timedelta(hours=2))  # unflagged on b, later than a's
    result = importer.import_file(b, export(a, tmp_path / f"2.{fmt}"))
    assert b.mark("x") == Mark()  # a's later unsuspend wins (today: "kept as marked here")
    assert b.mark("y") == Mark()  # b's later unflag stays
    assert result.marks_kept == 1
    importer.import_file(a, export(b, tmp_path / f"3.{fmt}"))
    assert a.mark("y") == Mark() and a.marks() == b.marks()


def test_settings_merge_through_import_by_the_later_writer(tmp_path: Path) -> None:
    (a, b), _ = stores(tmp_path, 2)
    b.save_settings(Settings(new_per_day=5))  # b's own, earlier
    a.save_settings(Settings(new_per_day=9))  # saved later: the last writer
    result = importer.import_file(b, export(a, tmp_path / "1.json"))
    assert result.settings == "imported" and b.settings().new_per_day == 9
    b.save_settings(Settings(new_per_day=3))
    result = importer.import_file(b, export(a, tmp_path / "1.json"))  # a's, older now
    assert result.settings == "kept" and b.settings().new_per_day == 3
    importer.import_file(a, export(b, tmp_path / "2.csv"))
    assert a.settings().new_per_day == 3


def test_a_bad_clock_or_undo_is_refused_in_one_line(tmp_path: Path) -> None:
    (a, b), _ = stores(tmp_path, 2)
    rate(a, "x", 3, T0)
    rate(a, "y", 3, T0)
    assert a.undo_last() is not None
    a.set_mark("x", Mark(flagged=True), at=T0)
    a.save_settings(Settings(new_per_day=9))
    good = json.loads(ex.to_json(a, T0))
    assert good["undone"] and good["marks"][0]["stamp"] and good["settings_clock"]
    cases = [
        (("undone", 0, "device"), "../x", "undone[0]: device must be 16 hex digits"),
        (("undone", 0, "seq"), 0, "undone[0]: seq must be between 1"),
        (("undone", 0, "at"), "soon", "undone[0]: at is not a time"),
        (("marks", 0, "stamp"), None, "marks[0]: at, device and stamp come together"),
        (("marks", 0, "device"), "ABC", "marks[0]: device must be 16 hex digits"),
        (("settings_clock", "at"), 5, "settings_clock: at must be a UTC time"),
    ]
    for where, value, message in cases:
        data = json.loads(json.dumps(good))
        node = data
        for key in where[:-1]:
            node = node[key]
        node[where[-1]] = value
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(data))
        with pytest.raises(ex.ExportError, match=re.escape(message)) as err:
            importer.import_file(b, path)
        assert "\n" not in str(err.value) and str(path) in str(err.value)
        assert b.count_reviews() == 0 and b.marks() == {} and not graves(b)


def test_after_a_restore_the_old_ids_unsent_marks_settings_and_undos_are_sent(
    tmp_path: Path,
) -> None:
    """A restore gives the database a new device id; what the old id had made but not sent
    (a mark, the settings, an undo) is sent by the next sync, as its unsent reviews are."""
    (a, b), folder = stores(tmp_path, 2)
    rate(a, "x", 3, T0)
    rate(a, "y", 3, T0)
    sync(a, folder)
    sync(b, folder)
    a.set_mark("x", Mark(suspended=True), at=T0 + timedelta(hours=1))  # none of these sent
    a.save_settings(Settings(new_per_day=4))
    assert a.undo_last() is not None  # y
    with a.transaction():
        devices.new_device(a.conn)
    sent = sync(a, folder)
    assert sent.sent_other == 3  # the mark, the settings, the undo
    got = sync(b, folder)
    assert b.mark("x") == Mark(suspended=True)
    assert b.settings().new_per_day == 4
    assert b.reviews(card_id="y") == [] and got.applied.undone == 1
    assert view(a) == view(b) and held_once(b)
    assert sync(a, folder).sent_other == 0  # not twice
    assert ids(a) == ids(b)
