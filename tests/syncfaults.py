"""Set-ups the sync tests share (test_sync_not_a_file, test_sync_stuck, test_sync14,
test_sync_hostile13): three devices that have synced, a folder this machine may not list, a
copy of a database whose first copy has written a file since, and how that ends. A denial is made by hand: the tests may run as root, whom
permissions do not stop."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from prep.engine.store import Store
from prep.engine.store import devices as local
from prep.engine.sync.run import sync
from tests.test_sync import T0, rate
from tests.test_sync_fork import _converged, _copy, _ids, _setup


def three(tmp_path: Path) -> tuple[Store, Store, Store, Path]:
    """a and c each sent a journal file, b applied a's (a's file 1, c's file 1 not yet)."""
    folder = tmp_path / "shared"
    folder.mkdir()
    a, b, c = (Store.open(tmp_path / f"{n}.db") for n in "abc")
    rate(a, "x", 3, T0)
    sync(a, folder)
    sync(b, folder)
    rate(c, "z", 3, T0)
    sync(c, folder)
    return a, b, c, folder


def cards(db: Path) -> list[str]:
    """The cards the database at ``db`` holds reviews of."""
    with Store.open(db) as s:
        return [r[0] for r in s.conn.execute("SELECT DISTINCT card_id FROM reviews ORDER BY 1")]


def refuse_listing(monkeypatch: pytest.MonkeyPatch, folder: Path) -> Callable[[], None]:
    """``os.scandir`` of ``folder`` (of it only) refused as a folder of mode 000 is; returns
    what lets it be listed again."""
    real = os.scandir

    def scandir(path):  # type: ignore[no-untyped-def]
        if Path(path) == folder:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    return lambda: monkeypatch.setattr(os, "scandir", real)


def three_with_c_unlisted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path, Callable[[], None]]:
    """`three`, its databases closed, and c's device folder refused to a listing: (the sync
    folder, c's folder, what lets it be listed again). b has c's reviews still to receive."""
    a, b, c, folder = three(tmp_path)
    denied = folder / local.device_id(c.conn)
    for s in (a, b, c):
        s.close()
    return folder, denied, refuse_listing(monkeypatch, denied)


def copied_then_written(tmp_path: Path) -> tuple[Store, Store, Store, Path, Path]:
    """cp2 a copy of cp1 (x rated, synced), then cp1 rated y and wrote a file under their id;
    other a database that has not synced: (cp1, cp2, other, folder, the file written)."""
    cp1, folder = _setup(tmp_path)
    other = Store.open(tmp_path / "other.db")
    rate(cp1, "x", 3, T0)
    sync(cp1, folder)
    cp2 = _copy(tmp_path, cp1, "cp2.db")
    rate(cp1, "y", 3, T0 + timedelta(days=1))
    written = sync(cp1, folder).journal
    assert written is not None
    return cp1, cp2, other, folder, written


def each_review_once(folder: Path, cp1: Store, cp2: Store, other: Store) -> None:
    """After `copied_then_written`'s copy is found (cp2 rated z): twice round, every database
    syncs; they converge, and x, y and z are held once each, none lost."""
    for _ in range(2):
        for s in (cp1, cp2, other):
            sync(s, folder)
    _converged(cp1, cp2, other)
    assert sorted(r[2] for r in _ids(cp1)) == ["x", "y", "z"]
