"""A copied database (prep.db copied to a new laptop, an old backup put back by hand) shares
its device id with the one it was copied from: it finds that out at its next sync, takes a
new id, and the copies converge (engine/sync/fork.py)."""

from __future__ import annotations

import os
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prep.engine.store import Mark, Store
from prep.engine.store import devices as local
from prep.engine.store.backup import make, restore
from prep.engine.sync import fork
from prep.engine.sync.run import sync
from prep.tui.cli import main
from tests.test_sync import T0, rate, view


def _copy(tmp_path: Path, src: Store, name: str) -> Store:
    """A copy of ``src``'s file, as `cp` makes it (the source's changes are on disk)."""
    src.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copy(src.path, tmp_path / name)
    return Store.open(tmp_path / name)


def _setup(tmp_path: Path) -> tuple[Store, Path]:
    folder = tmp_path / "shared"
    folder.mkdir()
    return Store.open(tmp_path / "cp1.db"), folder


def _ids(store: Store) -> list[tuple]:
    return sorted(
        store.conn.execute(
            "SELECT d.id, coalesce(r.seq, r.id), r.card_id, r.at, r.rating FROM reviews r "
            "JOIN sync_devices d ON d.n = r.dev"
        ).fetchall()
    )


def _converged(*stores: Store) -> None:
    first = view(stores[0])
    for s in stores[1:]:
        assert view(s) == first
    ids = _ids(stores[0])
    assert len(ids) == len({(i[2], i[3], i[4]) for i in ids})  # no review held twice
    for s in stores[1:]:
        assert _ids(s) == ids


def test_a_copy_and_its_original_converge(tmp_path: Path) -> None:
    cp1, folder = _setup(tmp_path)
    rate(cp1, "x", 3, T0)
    sync(cp1, folder)  # synced once before the copy
    rate(cp1, "y", 3, T0 + timedelta(hours=1))  # not synced when copied: on both
    cp2 = _copy(tmp_path, cp1, "cp2.db")
    rate(cp1, "x", 4, T0 + timedelta(days=2))
    rate(cp1, "z", 1, T0 + timedelta(days=2, minutes=1))
    rate(cp2, "x", 2, T0 + timedelta(days=3))  # the same sequence number as cp1's "x"
    first = sync(cp1, folder)
    second = sync(cp2, folder)
    assert second.applied.reviews == 2  # cp1's two since the copy (its "y" was here already)
    assert second.sent_reviews == 1  # its own since the copy, under its new id
    third = sync(cp1, folder)
    assert third.applied.reviews == 1
    sync(cp2, folder)
    _converged(cp1, cp2)
    assert len(_ids(cp1)) == 5
    again = [sync(cp1, folder), sync(cp2, folder)]  # nothing more to send, nothing received
    assert [(r.sent_reviews, r.applied.reviews, r.forked) for r in again] == [(0, 0, None)] * 2
    _converged(cp1, cp2)
    assert first.forked is None and third.forked is None
    assert second.forked is not None and "copy" in second.forked
    assert local.device_id(cp2.conn) != local.device_id(cp1.conn)


def test_the_copy_that_syncs_first_keeps_the_id(tmp_path: Path) -> None:
    cp1, folder = _setup(tmp_path)
    rate(cp1, "x", 3, T0)
    cp2 = _copy(tmp_path, cp1, "cp2.db")  # never synced: every review on both unsent
    rate(cp1, "x", 3, T0 + timedelta(days=1))
    rate(cp2, "x", 1, T0 + timedelta(days=1, minutes=5))
    rate(cp2, "y", 4, T0 + timedelta(days=1, minutes=6))
    old = local.device_id(cp1.conn)
    first, second = sync(cp2, folder), sync(cp1, folder)  # cp1 finds cp2's file under its id
    for _ in range(2):
        sync(cp2, folder)
        sync(cp1, folder)
    _converged(cp1, cp2)
    assert len(_ids(cp1)) == 4  # x (before the copy, once), x on each, y
    assert first.forked is None and second.forked is not None
    assert local.device_id(cp2.conn) == old != local.device_id(cp1.conn)


def test_three_copies_converge(tmp_path: Path) -> None:
    cp1, folder = _setup(tmp_path)
    rate(cp1, "x", 3, T0)
    sync(cp1, folder)
    rate(cp1, "w", 2, T0 + timedelta(minutes=1))
    cps = [cp1, _copy(tmp_path, cp1, "cp2.db"), _copy(tmp_path, cp1, "cp3.db")]
    for i, s in enumerate(cps):
        rate(s, "x", 1 + i, T0 + timedelta(days=2, minutes=i))
        rate(s, f"only{i}", 3, T0 + timedelta(days=2, minutes=10 + i))
        s.set_mark(f"only{i}", Mark(flagged=True), at=T0 + timedelta(days=2, minutes=20 + i))
    firsts = [sync(s, folder) for s in cps]
    for _ in range(2):
        for s in cps:
            sync(s, folder)
    _converged(*cps)
    assert len(_ids(cp1)) == 1 + 1 + 3 * 2
    assert all(s.mark(f"only{i}").flagged for s in cps for i in range(3))
    assert firsts[0].forked is None and firsts[1].forked and firsts[2].forked
    assert len({local.device_id(s.conn) for s in cps}) == 3


def test_a_copy_that_never_rated(tmp_path: Path) -> None:
    cp1, folder = _setup(tmp_path)
    rate(cp1, "x", 3, T0)
    sync(cp1, folder)
    cp2 = _copy(tmp_path, cp1, "cp2.db")
    assert sync(cp2, folder).sent_reviews == 0  # nothing of its own: no file, no fork yet
    rate(cp1, "y", 3, T0 + timedelta(days=1))
    sync(cp1, folder)
    result = sync(cp2, folder)
    assert result.applied.reviews == 1 and result.sent_reviews == 0
    sync(cp1, folder)
    _converged(cp1, cp2)
    assert result.forked is not None


def test_undos_and_demo_runs_of_each_copy_stay_their_own(tmp_path: Path) -> None:
    cp1, folder = _setup(tmp_path)
    rate(cp1, "x", 3, T0)
    sync(cp1, folder)
    cp2 = _copy(tmp_path, cp1, "cp2.db")
    rate(cp1, "y", 3, T0 + timedelta(days=1))
    rate(cp2, "y", 1, T0 + timedelta(days=1, minutes=1))  # the same number as cp1's y
    assert cp2.undo_last() is not None  # its tombstone must not remove cp1's y
    rate(cp2, "z", 2, T0 + timedelta(days=1, minutes=2))
    for s, seconds in ((cp1, 1.0), (cp2, 2.0)):  # the same run number on each
        at = T0 + timedelta(days=1, seconds=seconds)
        s.record_demo_run(name="rank", device="cpu", passed=True, seconds=seconds, ran_at=at)
    sync(cp1, folder)
    sync(cp2, folder)
    sync(cp1, folder)
    sync(cp2, folder)
    _converged(cp1, cp2)
    assert cp1.card("y") is not None and [r.rating for r in cp1.reviews(card_id="y")] == [3]
    assert sorted(r["seconds"] for r in cp1.demo_runs()) == [1.0, 2.0]


def test_an_old_backup_copied_back_by_hand(tmp_path: Path) -> None:
    db, folder = _setup(tmp_path)
    other = Store.open(tmp_path / "other.db")
    rate(db, "x", 3, T0)
    sync(db, folder)
    old = _copy(tmp_path, db, "old.db")  # the backup
    old.close()
    rate(db, "x", 4, T0 + timedelta(days=2))
    rate(db, "y", 2, T0 + timedelta(days=2, minutes=1))
    sync(db, folder)  # written under the id; then the database is lost
    sync(other, folder)
    db.close()
    shutil.copy(tmp_path / "old.db", tmp_path / "cp1.db")
    for suffix in ("-wal", "-shm"):
        (tmp_path / f"cp1.db{suffix}").unlink(missing_ok=True)
    back = Store.open(tmp_path / "cp1.db")
    rate(back, "z", 3, T0 + timedelta(days=3))  # its next number was used by y
    result = sync(back, folder)
    assert result.applied.reviews == 2  # what it had made after the backup comes back
    sync(other, folder)
    sync(back, folder)
    _converged(back, other)
    assert len(_ids(back)) == 4
    assert result.forked is not None


def test_a_restore_from_a_backup_then_sync(tmp_path: Path) -> None:
    db, folder = _setup(tmp_path)
    other = Store.open(tmp_path / "other.db")
    rate(db, "x", 3, T0)
    sync(db, folder)
    saved = make(db, "test")
    rate(db, "x", 4, T0 + timedelta(days=2))
    rate(db, "y", 2, T0 + timedelta(days=2, minutes=1))
    sync(db, folder)
    restore(db, saved.name)
    rate(db, "z", 3, T0 + timedelta(days=3))
    result = sync(db, folder)
    assert result.applied.reviews == 2
    sync(other, folder)
    sync(db, folder)
    _converged(db, other)
    assert len(_ids(db)) == 4
    assert result.forked is None  # the restore took a new id already


def test_syncing_its_own_files_again_is_no_fork(tmp_path: Path) -> None:
    """Its own files (a sync killed after writing, two syncs at once, a folder left and come
    back to) are not another copy's."""
    db, folder = _setup(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    rate(db, "x", 3, T0)
    sync(db, folder)
    rate(db, "y", 3, T0 + timedelta(days=1))
    sync(db, other)
    sync(db, folder)  # back: its file 1 there is not the one it recorded last
    db.conn.execute("DELETE FROM meta WHERE key IN ('sync_file', 'sync_seen')")
    me = local.device_id(db.conn)
    result = sync(db, folder)
    assert local.device_id(db.conn) == me
    assert result.forked is None


def test_the_command_says_it_in_one_line(tmp_path: Path) -> None:
    cp1, folder = _setup(tmp_path)
    rate(cp1, "x", 3, T0)
    cp2 = _copy(tmp_path, cp1, "cp2.db")
    rate(cp1, "y", 3, T0 + timedelta(days=1))
    rate(cp2, "y", 1, T0 + timedelta(days=1))
    sync(cp1, folder)
    cp2.close()
    out = CliRunner().invoke(main, ["--db", str(tmp_path / "cp2.db"), "sync", str(folder)])
    assert out.exit_code == 0, out.output
    line = out.output.splitlines()[0]
    assert line.startswith("This database is a copy of another") and "now syncs as device" in line


def test_an_undo_on_the_copy_that_keeps_the_id_removes_only_its_own(tmp_path: Path) -> None:
    cp1, folder = _setup(tmp_path)
    rate(cp1, "x", 3, T0)
    sync(cp1, folder)
    cp2 = _copy(tmp_path, cp1, "cp2.db")
    rate(cp1, "y", 3, T0 + timedelta(days=1))
    assert cp1.undo_last() is not None  # the tombstone of cp1's y travels under the old id
    rate(cp1, "z", 2, T0 + timedelta(days=1, minutes=1))
    rate(cp2, "y", 1, T0 + timedelta(days=1, minutes=2))  # the number cp1's y had
    for _ in range(2):
        sync(cp1, folder)
        sync(cp2, folder)
    _converged(cp1, cp2)
    assert [r.rating for r in cp1.reviews(card_id="y")] == [1]
    assert len(_ids(cp1)) == 3


@settings(
    max_examples=300 if os.environ.get("PREP_LONG_FUZZ") else 25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    before=st.lists(st.tuples(st.sampled_from("rus"), st.sampled_from("xyz")), max_size=5),
    after=st.lists(
        st.tuples(st.integers(0, 2), st.sampled_from("rrus"), st.sampled_from("xyz")),
        max_size=14,
    ),
)
def test_copies_converge_whatever_they_do(tmp_path_factory, before, after) -> None:
    tmp_path = tmp_path_factory.mktemp("fork")
    cp1, folder = _setup(tmp_path)
    clock = iter(range(1, 10_000))

    def act(s: Store, op: str, cid: str) -> None:
        if op == "r":
            rate(s, cid, 1 + next(clock) % 4, T0 + timedelta(minutes=next(clock)))
        elif op == "u":
            s.undo_last()
        else:
            sync(s, folder)

    for op, cid in before:
        act(cp1, op, cid)
    cps = [cp1, _copy(tmp_path, cp1, "cp2.db"), _copy(tmp_path, cp1, "cp3.db")]
    shared = {(r[3], r[4]) for r in _ids(cp1)}
    for i, op, cid in after:
        act(cps[i], op, cid)
    made = set().union(  # what each copy holds as its own since the copy
        *({(r[3], r[4]) for r in _ids(s) if r[0] == local.device_id(s.conn)} - shared for s in cps)
    )
    for _ in range(2):
        for s in cps:
            sync(s, folder)
    _converged(*cps)
    assert made <= {(r[3], r[4]) for r in _ids(cp1)}  # nothing made since the copy is lost


def test_a_review_made_before_the_copy_and_undone_on_the_original(tmp_path: Path) -> None:
    cp1, folder = _setup(tmp_path)
    rate(cp1, "x", 3, T0)
    cps = [cp1, _copy(tmp_path, cp1, "cp2.db"), _copy(tmp_path, cp1, "cp3.db")]
    assert cp1.undo_last() is not None  # on the original only, after the copies were made
    for _ in range(2):
        for s in cps:
            sync(s, folder)
    _converged(*cps)  # (the two copies cannot tell it from one made since: it stays, once)
    assert len(_ids(cp1)) <= 1


def test_a_file_still_arriving_is_checked_once_whole(tmp_path: Path) -> None:
    cp1, folder = _setup(tmp_path)
    rate(cp1, "x", 3, T0)
    cp2 = _copy(tmp_path, cp1, "cp2.db")
    rate(cp1, "y", 3, T0 + timedelta(days=1))
    written = sync(cp1, folder).journal
    assert written is not None
    whole = written.read_bytes()
    written.write_bytes(whole[: len(whole) // 2])  # the sync tool has brought half of it
    assert sync(cp2, folder).forked is None
    written.write_bytes(whole)
    assert sync(cp2, folder).forked is not None
    sync(cp1, folder)
    sync(cp2, folder)
    _converged(cp1, cp2)


def test_an_undo_on_the_copy_of_its_last_review_before_the_copy(tmp_path: Path) -> None:
    cp1, folder = _setup(tmp_path)
    rate(cp1, "x", 3, T0)
    rate(cp1, "y", 3, T0 + timedelta(hours=1))
    sync(cp1, folder)
    cp2 = _copy(tmp_path, cp1, "cp2.db")
    assert cp2.undo_last() is not None  # y, the last review both hold: undone on the copy
    rate(cp1, "z", 3, T0 + timedelta(hours=2))
    sync(cp1, folder)
    assert sync(cp2, folder).forked is not None
    for _ in range(2):
        sync(cp1, folder)
        sync(cp2, folder)
    _converged(cp1, cp2)
    assert cp1.reviews(card_id="y") == [] and len(_ids(cp1)) == 2  # the undo is not lost


def _killed_after_writing(monkeypatch: pytest.MonkeyPatch, store: Store, folder: Path) -> None:
    """A sync killed once its journal file is written, before the transaction noting it."""

    def kill(*_args: object) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(fork, "wrote", kill)
        with pytest.raises(KeyboardInterrupt):
            sync(store, folder)


@pytest.mark.parametrize("change", ["undo", "mark"])
def test_a_sync_killed_after_writing_then_a_change_is_no_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    db, folder = _setup(tmp_path)
    other = Store.open(tmp_path / "other.db")
    rate(db, "x", 3, T0)
    sync(db, folder)
    rate(db, "y", 3, T0 + timedelta(hours=1))
    db.set_mark("x", Mark(suspended=True), at=T0 + timedelta(hours=1))
    _killed_after_writing(monkeypatch, db, folder)
    if change == "undo":
        assert db.undo_last() is not None  # y: the file written holds it, the database not
    else:
        db.set_mark("x", Mark(), at=T0 + timedelta(hours=2))
    me = local.device_id(db.conn)
    assert sync(db, folder).forked is None
    assert local.device_id(db.conn) == me
    for _ in range(2):
        sync(other, folder)
        sync(db, folder)
    assert view(other) == view(db)
    assert (db.reviews(card_id="y") == []) == (change == "undo")


def test_a_file_of_its_own_folder_still_arriving_holds_what_it_sends(tmp_path: Path) -> None:
    cp1, folder = _setup(tmp_path)
    other = Store.open(tmp_path / "other.db")
    rate(cp1, "x", 3, T0)
    sync(cp1, folder)
    rate(other, "w", 4, T0)
    sync(other, folder)
    cp2 = _copy(tmp_path, cp1, "cp2.db")
    rate(cp1, "y", 3, T0 + timedelta(days=1))
    written = sync(cp1, folder).journal
    assert written is not None
    whole = written.read_bytes()
    written.write_bytes(whole[: len(whole) // 2])  # the sync tool has brought half of it
    rate(cp2, "z", 2, T0 + timedelta(days=1, hours=2))
    held = sync(cp2, folder)
    assert held.journal is None and held.sent_reviews == 0 and held.forked is None
    assert held.held is not None and written.name in held.held
    assert held.applied.reviews == 1  # the other device's files are applied all the same
    cp2.close()
    out = CliRunner().invoke(main, ["--db", str(tmp_path / "cp2.db"), "sync", str(folder)])
    assert out.exit_code == 0, out.output
    assert out.output.splitlines()[0].endswith("nothing sent this time.")
    cp2 = Store.open(tmp_path / "cp2.db")
    written.write_bytes(whole)  # the sync tool finishes
    assert sync(cp2, folder).forked is not None
    for _ in range(2):
        for s in (cp1, cp2, other):
            sync(s, folder)
    _converged(cp1, cp2, other)
    assert len(_ids(cp1)) == 4
