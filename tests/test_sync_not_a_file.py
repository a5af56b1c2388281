"""An entry of the sync folder named like a journal file (or a device's folder) that is no
regular file — a FIFO, a symbolic link (to /dev/zero, or nowhere), a folder — never stops a
sync: it is never opened (a FIFO never makes the sync wait), the rest syncs, and one line
names it and says why it was skipped, once (engine/sync/journal.py's NotAFile)."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from prep.engine.store import Store
from prep.engine.store import devices as local
from prep.engine.sync import journal, lines
from prep.engine.sync.run import sync
from prep.tui.cli import main
from tests.syncfaults import cards, three, three_with_c_unlisted
from tests.test_sync import T0, rate

KINDS: dict[str, tuple[Callable[[Path], None], str]] = {
    "fifo": (os.mkfifo, "a FIFO (named pipe)"),
    "link to /dev/zero": (lambda p: p.symlink_to("/dev/zero"), "a symbolic link"),
    "dangling link": (lambda p: p.symlink_to(p.parent / "nowhere"), "a symbolic link"),
    "folder": (lambda p: p.mkdir(), "a folder"),
}


def _unblock(path: Path) -> None:
    """Give a reader blocked on the FIFO ``path`` its end of file (if one is blocked)."""
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


def _cli_sync(db: Path, folder: Path, odd: Path) -> Result:
    """`prep sync` in a thread: one that blocks on ``odd`` (a FIFO) fails the test."""
    done: list[Result] = []
    worker = threading.Thread(
        target=lambda: done.append(
            CliRunner().invoke(main, ["--db", str(db), "sync", str(folder)])
        ),
        daemon=True,
    )
    worker.start()
    worker.join(60)
    if worker.is_alive():
        _unblock(odd)
        worker.join(10)
        pytest.fail("the sync waited on a FIFO")
    return done[0]


@pytest.mark.parametrize("kind", KINDS)
def test_in_another_devices_folder_the_rest_syncs(tmp_path: Path, kind: str) -> None:
    """A device's next file is no file: skipped, its later files and every other device's
    applied, b's own sent; said in one line (exit 0), once."""
    make, what = KINDS[kind]
    a, b, c, folder = three(tmp_path)
    odd = folder / local.device_id(a.conn) / "00000002.jsonl"
    make(odd)
    rate(a, "y", 3, T0 + timedelta(days=1))
    assert sync(a, folder).journal == odd.with_name("00000003.jsonl")  # numbered past it
    rate(b, "w", 3, T0 + timedelta(days=2))
    ids = [local.device_id(s.conn)[:4] for s in (a, c)]
    for s in (a, b, c):
        s.close()
    out = _cli_sync(tmp_path / "b.db", folder, odd)
    assert out.exit_code == 0, out.output
    said = out.output.splitlines()
    assert len(said) == 2 and said[0].startswith(f"{odd}: {what}, not a journal file: skipped")
    # (a and c unnamed: both the host's name, told apart by their ids since sync15)
    assert said[1].startswith("sent 1 review, received 1 review from ")
    assert all(f" ({i}" in said[1] for i in ids), said[1]
    assert cards(tmp_path / "b.db") == ["w", "x", "y", "z"]
    again = _cli_sync(tmp_path / "b.db", folder, odd)  # said once
    assert again.exit_code == 0 and again.output.splitlines() == [
        "sent 0 reviews, received no review, 0 cards rescheduled"
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_in_place_of_a_file_applied_what_it_held_stays(tmp_path: Path, kind: str) -> None:
    make, what = KINDS[kind]
    a, b, c, folder = three(tmp_path)
    applied = folder / local.device_id(a.conn) / "00000001.jsonl"
    applied.unlink()
    make(applied)
    for s in (a, b, c):
        s.close()
    out = _cli_sync(tmp_path / "b.db", folder, applied)
    assert out.exit_code == 0, out.output
    said = out.output.splitlines()
    assert said[0] == (
        f"{applied}: {what}, not a journal file: skipped (read once a file takes its place); "
        "what it held before kept."
    )
    assert len(said) == 2 and "received 1 review from" in said[1]
    assert cards(tmp_path / "b.db") == ["x", "z"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_file_that_takes_its_place_later_is_read(tmp_path: Path, kind: str) -> None:
    make, _what = KINDS[kind]
    a, b, _c, folder = three(tmp_path)
    rate(a, "y", 3, T0 + timedelta(days=1))
    written = sync(a, folder).journal
    assert written is not None
    whole = written.read_bytes()
    written.unlink()
    make(written)  # b finds a's file 2 as something else
    assert sync(b, folder).applied.reviews == 1  # c's
    assert b.card("y") is None
    if written.is_dir() and not written.is_symlink():
        written.rmdir()
    else:
        written.unlink()
    written.write_bytes(whole)  # a whole version arrives
    assert sync(b, folder).applied.reviews == 1
    assert b.card("y") is not None


@pytest.mark.parametrize("kind", KINDS)
def test_in_this_devices_own_folder_sending_goes_on(tmp_path: Path, kind: str) -> None:
    """Not a file the sync tool brings (nothing is arriving): set aside at once, said once,
    this device's reviews sent past it."""
    make, what = KINDS[kind]
    _a, b, _c, folder = three(tmp_path)
    mine = folder / local.device_id(b.conn)
    mine.mkdir()
    odd = mine / "00000001.jsonl"
    make(odd)
    rate(b, "w", 3, T0 + timedelta(days=2))
    b.close()
    out = _cli_sync(tmp_path / "b.db", folder, odd)
    assert out.exit_code == 0, out.output
    said = out.output.splitlines()
    assert said[0] == (
        f"{odd}: {what} in this device's journal folder, not a journal file: set aside, left "
        "in place; sending again."
    )
    assert len(said) == 2 and said[1].startswith("sent 1 review, received 1 review")
    assert (mine / "00000002.jsonl").is_file()
    again = _cli_sync(tmp_path / "b.db", folder, odd)
    assert again.output.splitlines() == ["sent 0 reviews, received no review, 0 cards rescheduled"]


@pytest.mark.parametrize("kind", ["fifo", "link to a device's folder", "file"])
def test_named_like_a_devices_folder(tmp_path: Path, kind: str) -> None:
    """An entry named like a device's folder that is none: skipped, said; the rest syncs
    (a link to another device's folder would have been read as a device whose files name
    another: refused before)."""
    a, b, c, folder = three(tmp_path)
    odd = folder / "0123456789abcdef"
    if kind == "fifo":
        os.mkfifo(odd)
    elif kind == "file":
        odd.write_text("not a folder\n")
    else:
        odd.symlink_to(folder / local.device_id(c.conn))
    what = {"fifo": "a FIFO (named pipe)", "file": "a file"}.get(
        kind, "a symbolic link to another device's folder of this sync folder"
    )
    for s in (a, b, c):
        s.close()
    out = _cli_sync(tmp_path / "b.db", folder, odd)
    assert out.exit_code == 0, out.output
    said = out.output.splitlines()
    assert said[0] == f"{odd}: {what}, not a device's journal folder: skipped."
    assert len(said) == 2 and "received 1 review from" in said[1]
    assert cards(tmp_path / "b.db") == ["x", "z"]


def test_reading_never_opens_what_is_no_file(tmp_path: Path, monkeypatch) -> None:
    """journal.read names what the entry is and opens none of them; one put in place
    between the look and the open (the look monkeypatched to see a file) is not waited on
    or followed either (O_NONBLOCK, O_NOFOLLOW, then fstat)."""
    dev = "0123456789abcdef"
    for i, (kind, (make, what)) in enumerate(KINDS.items()):
        path = tmp_path / str(i) / "00000001.jsonl"
        path.parent.mkdir()
        make(path)
        for look in (lines.entry_kind, lambda _p: None):
            monkeypatch.setattr(lines, "entry_kind", look)
            done: list[BaseException] = []

            def read(path: Path = path, done: list[BaseException] = done) -> None:
                try:
                    journal.read(path, dev)
                except Exception as exc:  # (what it raised: checked below)
                    done.append(exc)

            worker = threading.Thread(target=read, daemon=True)
            worker.start()
            worker.join(30)
            if worker.is_alive():
                _unblock(path)
                pytest.fail(f"journal.read waited on {kind}")
            assert isinstance(done[0], journal.NotAFile), (kind, done[0])
            assert str(done[0]) == f"{path}: {what}, not a journal file"
        monkeypatch.undo()


def test_a_fifo_named_like_a_temporary_file_never_blocks_writing(tmp_path: Path) -> None:
    """journal.write cleans up temporary files a killed sync left: a FIFO of that name in
    this device's folder is left alone, never opened."""
    folder = tmp_path / "shared"
    folder.mkdir()
    with Store.open(tmp_path / "a.db") as store:
        mine = folder / local.device_id(store.conn)
        rate(store, "x", 3, T0)
    mine.mkdir()
    fifo = mine / ".tmp-0123456789abcdef"
    os.mkfifo(fifo)
    done: list[object] = []

    def run() -> None:
        with Store.open(tmp_path / "a.db") as store:
            done.append(sync(store, folder))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(60)
    if worker.is_alive():
        _unblock(fifo)
        worker.join(10)
        pytest.fail("writing the journal waited on a FIFO")
    assert (mine / "00000001.jsonl").is_file() and fifo.exists()


def test_a_device_folder_that_cannot_be_listed_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another device's folder this machine may not list (permission denied): its files are
    skipped while it cannot, said in one line (once), the rest syncs. Before: skipped without a word. (The
    denial is made by hand: the tests may run as root, whom permissions do not stop.)"""
    folder, denied, allow = three_with_c_unlisted(tmp_path, monkeypatch)
    with Store.open(tmp_path / "b.db") as b:
        rate(b, "w", 3, T0 + timedelta(days=2))
    out = CliRunner().invoke(main, ["--db", str(tmp_path / "b.db"), "sync", str(folder)])
    assert out.exit_code == 0, out.output
    said = out.output.splitlines()
    assert said[0] == (
        f"{denied}: cannot list it (Permission denied): its files skipped until it can be listed."
    )
    assert len(said) == 2 and said[1].startswith("sent 1 review, received no review")
    allow()
    assert (
        "received 1 review"
        in CliRunner().invoke(main, ["--db", str(tmp_path / "b.db"), "sync", str(folder)]).output
    )


@pytest.mark.parametrize("kind", ["fifo", "file"])
def test_named_like_this_devices_own_folder(tmp_path: Path, kind: str) -> None:
    """Where this device's folder goes, a file or a FIFO: nothing sent, said plainly (before:
    'cannot write the journal (File exists)', and nothing received either)."""
    a, b, c, folder = three(tmp_path)
    odd = folder / local.device_id(b.conn)
    what = "a FIFO (named pipe)" if kind == "fifo" else "a file"
    if kind == "fifo":
        os.mkfifo(odd)
    else:
        odd.write_text("x\n")
    rate(b, "w", 3, T0 + timedelta(days=2))
    for s in (a, b, c):
        s.close()
    out = _cli_sync(tmp_path / "b.db", folder, odd)
    assert out.exit_code == 2, out.output
    assert out.stdout.startswith("sent 0 reviews, received 1 review")  # c's
    assert out.stderr == (
        f"prep: {odd}: {what}, not a folder; prep writes only a folder of its own; nothing sent\n"
    )
