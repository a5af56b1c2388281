"""After a copy of a database finds itself (engine/sync/fork.py): its new id carries a name
of its own, and what it took in by an import and had not passed on yet is passed on."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from prep.engine.store import Store
from prep.engine.store import devices as local
from prep.engine.store.backup import make, restore
from prep.engine.sync import fork
from prep.engine.sync.run import sync
from prep.engine.transfer import importer
from tests.test_sync import T0, rate
from tests.test_sync_fork import _converged, _copy, _ids, _setup
from tests.test_sync_import import export


def test_a_copy_takes_a_name_of_its_own(tmp_path: Path) -> None:
    cp1, folder = _setup(tmp_path)
    other = Store.open(tmp_path / "other.db")
    local.set_name(other.conn, "desk")  # (unnamed it says the host's name, "vm" on some hosts)
    local.set_name(cp1.conn, "vm")
    rate(cp1, "x", 3, T0)
    sync(cp1, folder)
    cp2, cp3 = _copy(tmp_path, cp1, "cp2.db"), _copy(tmp_path, cp1, "cp3.db")
    for i, s in enumerate((cp1, cp2, cp3)):
        rate(s, "y", 1 + i, T0 + timedelta(days=1, minutes=i))
    sync(cp1, folder)
    forked = [sync(cp2, folder).forked, sync(cp3, folder).forked]  # before either sends
    names = [local.name(s.conn) for s in (cp1, cp2, cp3)]
    ids = [local.device_id(s.conn) for s in (cp1, cp2, cp3)]
    assert names == ["vm", f"vm (copy {ids[1][:4]})", f"vm (copy {ids[2][:4]})"]
    assert all(
        line is not None and repr(n) in line for line, n in zip(forked, names[1:], strict=True)
    )
    got = sync(other, folder).applied.by_device  # (by label: two of one name told apart)
    assert got == {"vm": 2, names[1]: 1, names[2]: 1}
    assert fork.copy_name("vm (copy 1a2b)", "77ffeedd00112233") == "vm (copy 77ff)"  # one suffix
    assert len(fork.copy_name("n" * 64, "77ffeedd00112233")) == 64
    for s in (cp1, cp2, cp3, other):
        sync(s, folder)
    _converged(cp1, cp2, cp3, other)


def _third_devices_review(tmp_path: Path, into: Store) -> tuple:
    """A review of a device that never syncs, taken in by an import of its export."""
    a = Store.open(tmp_path / "a.db")
    rate(a, "w", 4, T0 + timedelta(hours=5))
    importer.import_file(into, export(a, tmp_path / "a.json"))
    (review,) = [r for r in _ids(into) if r[0] == local.device_id(a.conn)]
    return review


def test_after_a_copy_is_found_an_import_not_passed_on_yet_is_passed_on(
    tmp_path: Path,
) -> None:
    cp1, folder = _setup(tmp_path)
    c = Store.open(tmp_path / "c.db")
    rate(cp1, "x", 3, T0)
    sync(cp1, folder)
    cp2 = _copy(tmp_path, cp1, "cp2.db")
    review = _third_devices_review(tmp_path, cp2)  # only the copy holds it
    rate(cp1, "y", 3, T0 + timedelta(days=1))
    rate(cp2, "z", 2, T0 + timedelta(days=1, minutes=1))
    sync(cp1, folder)  # cp1 keeps the id; cp2 finds the copy at its sync
    assert sync(cp2, folder).forked is not None
    for s in (c, cp1, cp2, c, cp1):
        sync(s, folder)
    assert review in _ids(c) and review in _ids(cp1)
    _converged(cp1, cp2, c)


def test_after_a_restore_an_import_not_passed_on_yet_is_passed_on(tmp_path: Path) -> None:
    db, folder = _setup(tmp_path)
    c = Store.open(tmp_path / "c.db")
    rate(db, "x", 3, T0)
    sync(db, folder)
    review = _third_devices_review(tmp_path, db)
    saved = make(db, "test")  # holds the import, not passed on
    restore(db, saved.name)
    sync(db, folder)
    sync(c, folder)
    assert review in _ids(c)
    _converged(db, c)
    assert sync(db, folder).sent_reviews == 0  # passed on once


def test_an_import_that_lands_before_a_review_held_is_passed_on(tmp_path: Path) -> None:
    """The import's replay writes the imported review under a row id freed below the synced
    mark ("x"): it is passed on all the same (hypothesis found it in test_sync_identity)."""
    folder = tmp_path / "f"
    folder.mkdir()
    a, b, c = (Store.open(tmp_path / f"{n}.db") for n in "abc")
    rate(a, "x", 1, T0)
    rate(b, "x", 1, T0 + timedelta(minutes=3))
    sync(b, folder)
    importer.import_file(b, export(a, tmp_path / "a.json"))  # lands before b's own review
    assert sync(b, folder).sent_reviews == 1
    sync(c, folder)
    _converged(b, c)
