"""A file of this device's own journal folder that stays unreadable stops it sending only
while the file may still be arriving (engine/sync/stuck.py)."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from prep.engine.store import Store
from prep.engine.store import devices as local
from prep.engine.sync import stuck
from prep.engine.sync.journal import JournalError
from prep.engine.sync.run import sync
from prep.tui.cli import main
from tests.syncfaults import copied_then_written, each_review_once
from tests.test_sync import T0, rate
from tests.test_sync_fork import _setup


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def _half_arrived(tmp_path: Path) -> tuple[Store, Store, Store, Path, Path, bytes]:
    """cp2 a copy of cp1; cp1's file under their id half arrived in the folder cp2 syncs."""
    cp1, cp2, other, folder, written = copied_then_written(tmp_path)
    whole = written.read_bytes()
    written.write_bytes(whole[: len(whole) // 2])
    rate(cp2, "z", 2, T0 + timedelta(days=1, hours=2))
    return cp1, cp2, other, folder, written, whole


def test_a_file_unchanged_and_old_is_set_aside_once_and_sending_resumes(tmp_path: Path) -> None:
    cp1, cp2, other, folder, written, whole = _half_arrived(tmp_path)
    _age(written, stuck.STUCK_S + 60)
    first = sync(cp2, folder)
    assert first.held is not None and first.sent_reviews == 0 and first.set_aside is None
    cp2.close()  # the command says it in one line, then sends
    out = CliRunner().invoke(main, ["--db", str(tmp_path / "cp2.db"), "sync", str(folder)])
    assert out.exit_code == 0, out.output
    said = out.output.splitlines()
    assert said[0].startswith(str(written)) and "set aside, left in place" in said[0]
    assert "nothing sent" not in out.output and said[-1].startswith("sent 1 review")
    assert written.read_bytes() == whole[: len(whole) // 2]  # left where it is, as it is
    cp2 = Store.open(tmp_path / "cp2.db")
    again = sync(cp2, folder)  # said once
    assert again.set_aside is None and again.held is None
    written.write_bytes(whole)  # it arrives after all: checked again, the copy is found
    assert sync(cp2, folder).forked is not None
    each_review_once(folder, cp1, cp2, other)


def test_a_file_still_changing_or_changed_lately_is_waited_for(tmp_path: Path) -> None:
    _cp1, cp2, _other, folder, written, whole = _half_arrived(tmp_path)
    for k in range(3):  # still arriving: longer at each sync
        written.write_bytes(whole[: len(whole) // 2 + k])
        _age(written, stuck.STUCK_S + 60)
        result = sync(cp2, folder)
        assert result.held is not None and result.set_aside is None and result.sent_reviews == 0
    _age(written, 60)  # unchanged but written a minute ago: may still be arriving
    for _ in range(2):
        result = sync(cp2, folder)
        assert result.held is not None and result.set_aside is None


def test_its_own_file_damaged_is_set_aside_at_once(tmp_path: Path) -> None:
    db, folder = _setup(tmp_path)
    other = Store.open(tmp_path / "other.db")
    rate(db, "x", 3, T0)
    first = sync(db, folder).journal
    rate(db, "y", 3, T0 + timedelta(days=1))
    second = sync(db, folder).journal
    assert first is not None and second is not None
    # a disk fault cuts its own files; the database's mark of the files it checked is gone
    db.conn.execute("DELETE FROM meta WHERE key IN ('sync_seen', 'sync_file', 'sync_ctime')")
    first.write_bytes(first.read_bytes()[:-5])
    rate(db, "z", 3, T0 + timedelta(days=2))
    result = sync(db, folder)
    assert result.set_aside is not None and "damaged since it wrote it" in result.set_aside
    assert result.held is None and result.sent_reviews == 1 and result.forked is None
    assert local.device_id(db.conn) == first.parent.name
    with pytest.raises(JournalError, match=f"{first}: damaged"):  # (as any damaged file)
        sync(other, folder)
