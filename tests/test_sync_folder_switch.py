"""A sync folder that is new to a device (the user moved to another folder, or the old one
was wiped and made again) still carries everything: the device writes its whole history
there, and a device that had applied its journal files from the old folder reads the new
folder's files from the first, not from the number it reached in the old one."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from prep.engine.store import Mark, Store
from prep.engine.sync.run import sync
from tests.test_sync import T0, rate, view


def _two(tmp_path: Path) -> tuple[Store, Store]:
    return Store.open(tmp_path / "a.db"), Store.open(tmp_path / "b.db")


def _folder(tmp_path: Path, name: str) -> Path:
    (tmp_path / name).mkdir()
    return tmp_path / name


def test_a_new_folder_gets_the_whole_history(tmp_path: Path) -> None:
    a, c = _two(tmp_path)
    old, new = _folder(tmp_path, "old"), _folder(tmp_path, "new")
    rate(a, "x", 3, T0)
    rate(a, "y", 1, T0)
    a.set_mark("y", Mark(flagged=True), at=T0)
    sync(a, old)
    rate(a, "x", 4, T0 + timedelta(days=2))
    result = sync(a, new)  # a folder a has never written: everything goes there
    assert result.sent_reviews == 3
    sync(c, new)  # c only ever sees the new folder
    assert view(a) == view(c)
    assert c.mark("y").flagged


def test_a_device_that_read_the_old_folder_reads_the_new_one_from_the_start(
    tmp_path: Path,
) -> None:
    a, b = _two(tmp_path)
    old, new = _folder(tmp_path, "old"), _folder(tmp_path, "new")
    for day in range(3):  # three journal files of a's in the old folder, all applied by b
        rate(a, "x", 3, T0 + timedelta(days=day * 3))
        sync(a, old)
        sync(b, old)
    assert view(a) == view(b)
    rate(a, "y", 2, T0 + timedelta(days=10))
    sync(a, new)  # the new folder's file 1 of a's: b had applied up to 3 elsewhere
    assert sync(b, new).applied.reviews == 1
    assert view(a) == view(b)
    rate(b, "z", 3, T0 + timedelta(days=11))
    sync(b, new)
    sync(a, new)
    assert view(a) == view(b) and a.card("z") is not None


def test_more_files_in_the_new_folder_than_were_applied_from_the_old(tmp_path: Path) -> None:
    a, b = _two(tmp_path)
    old, new = _folder(tmp_path, "old"), _folder(tmp_path, "new")
    rate(a, "x", 3, T0)
    sync(a, old)
    sync(b, old)  # b applied a's file 1 (of the old folder)
    for day, cid in enumerate(("y", "z", "w"), 1):  # then a writes files 1..3 in the new one
        rate(a, cid, 3, T0 + timedelta(days=day))
        sync(a, new)
    sync(b, new)
    assert view(a) == view(b)  # y (file 1 of the new folder) too, not only z and w


def test_a_wiped_folder_is_written_again(tmp_path: Path) -> None:
    a, c = _two(tmp_path)
    folder = _folder(tmp_path, "shared")
    rate(a, "x", 3, T0)
    sync(a, folder)
    for f in (folder / next(iter(p.name for p in folder.iterdir()))).iterdir():
        f.unlink()  # the sync tool lost a's files (the folder made again, a bad restore)
    rate(a, "y", 3, T0 + timedelta(days=1))
    sync(a, folder)
    sync(c, folder)
    assert view(a) == view(c)


def test_syncing_again_sends_nothing_more(tmp_path: Path) -> None:
    a, b = _two(tmp_path)
    folder = _folder(tmp_path, "shared")
    rate(a, "x", 3, T0)
    sync(a, folder)
    sync(b, folder)
    assert sync(a, folder).sent_reviews == 0  # the folder has a's file: no resend
    assert sync(b, folder).applied.reviews == 0  # and b reads nothing twice
    assert len(list((folder).glob("*/*.jsonl"))) == 1


def test_a_fifo_in_place_of_a_journal_file_never_blocks_the_sync(tmp_path: Path) -> None:
    import os
    import threading

    a, b = _two(tmp_path)
    folder = _folder(tmp_path, "shared")
    rate(a, "x", 3, T0)
    sync(a, folder)
    sync(b, folder)
    (mine,) = [p for p in folder.iterdir()]
    (mine / "00000001.jsonl").unlink()
    os.mkfifo(mine / "00000001.jsonl")  # a hostile folder: the file b applied, now a FIFO
    b.close()
    done: list[object] = []

    def again() -> None:
        with Store.open(tmp_path / "b.db") as store:
            done.append(sync(store, folder))

    worker = threading.Thread(target=again, daemon=True)
    worker.start()
    worker.join(30)
    if worker.is_alive():  # unblock the reader before failing
        with open(mine / "00000001.jsonl", "wb"):
            pass
    assert done, "the sync blocked on a FIFO"
