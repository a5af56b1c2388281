"""The file writer (engine/transfer/atomic.py): whole files, and nothing but the files named.

The blocker that started this (issue 10): run as root, `prep export -o /dev/null` made a
temporary file beside the target and renamed it over /dev/null. These tests never touch the
real /dev/null: a device node made inside tmp_path (where the system allows mknod) or a FIFO
stands in for it.
"""

from __future__ import annotations

import io
import os
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from prep.engine.transfer.atomic import WriteError, write_files


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_new_file_gets_the_mode_open_would_give(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    write_files({target: "hello"})
    assert target.read_text() == "hello"
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask()
    assert leftovers(tmp_path) == []


def test_existing_file_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "private.json"
    target.write_text("old")
    target.chmod(0o600)
    write_files({target: "new"})
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600  # not 0o644


def test_existing_file_keeps_its_hard_links(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old content, longer than the new one")
    other = tmp_path / "backup" / "linked.json"
    other.parent.mkdir()
    os.link(target, other)
    inode = target.stat().st_ino
    write_files({target: "new"})
    assert target.read_text() == "new" and other.read_text() == "new"
    assert target.stat().st_ino == inode and target.stat().st_nlink == 2
    assert leftovers(tmp_path) == []


def test_symlink_is_followed_and_stays_a_link(tmp_path: Path) -> None:
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    real = real_dir / "export.json"
    real.write_text("old")
    real.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(real_dir / "new.json")
    write_files({link: "new", dangling: "made"})
    assert link.is_symlink() and dangling.is_symlink()
    assert real.read_text() == "new" and stat.S_IMODE(real.stat().st_mode) == 0o640
    assert (real_dir / "new.json").read_text() == "made"
    assert leftovers(tmp_path) == [] and leftovers(real_dir) == []


def test_fifo_is_written_directly(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_files({fifo: "through the pipe"})
    reader.join(10)
    assert got == [b"through the pipe"]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)  # still a FIFO, not a regular file
    assert leftovers(tmp_path) == []


def test_character_device_is_written_directly_never_replaced(tmp_path: Path) -> None:
    # A device node like /dev/null (major 1, minor 3), made inside tmp_path: writing to it
    # discards the bytes, and the real /dev/null is never at risk.
    node = tmp_path / "null"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        with open(node, "wb") as fh:  # some containers allow mknod but not opening devices
            fh.write(b"")
    except OSError:
        pytest.skip("this system does not allow a device node in a temporary folder")
    write_files({node: "discarded"})
    assert stat.S_ISCHR(node.lstat().st_mode)
    assert node.lstat().st_rdev == os.makedev(1, 3)
    assert leftovers(tmp_path) == []


def test_dash_means_standard_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = io.BytesIO()
    write_files({"-": "to stdout"}, stdout=out)
    assert out.getvalue() == b"to stdout"
    assert list(tmp_path.iterdir()) == []  # no file named "-"


STDOUT_SCRIPT = (
    "import sys; from prep.engine.transfer.atomic import write_files; "
    "write_files({sys.argv[1]: 'via ' + sys.argv[1] + chr(10)})"
)


@pytest.mark.parametrize("name", ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"])
def test_dev_stdout_is_our_standard_output(tmp_path: Path, name: str) -> None:
    if not os.path.exists(name):
        pytest.skip(f"no {name} here")
    # to a pipe
    done = subprocess.run(
        [sys.executable, "-c", STDOUT_SCRIPT, name], capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"via {name}\n".encode()
    # to a file the shell opened for appending: written at its end, the file not replaced
    log = tmp_path / "log.txt"
    log.write_text("before\n")
    inode = log.stat().st_ino
    with open(log, "ab") as fh:
        done = subprocess.run(
            [sys.executable, "-c", STDOUT_SCRIPT, name], stdout=fh, stderr=subprocess.PIPE
        )
    assert done.returncode == 0, done.stderr
    assert log.read_text() == f"before\nvia {name}\n"
    assert log.stat().st_ino == inode and leftovers(tmp_path) == []


def test_refusals_are_one_line(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    cases = {
        tmp_path: "is a folder; give a file name",
        loop: "a symbolic link loop",
        tmp_path / "missing" / "x.json": "no folder",
    }
    for target, why in cases.items():
        with pytest.raises(WriteError) as info:
            write_files({target: "x"})
        assert why in str(info.value) and "\n" not in str(info.value)
    assert leftovers(tmp_path) == []


def test_read_only_file_is_not_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "ro.json"
    target.write_text("keep")
    target.chmod(0o444)
    if os.geteuid() == 0:  # root may write anything: ask as a user would be answered
        monkeypatch.setattr(os, "access", lambda path, mode: mode != os.W_OK)
    with pytest.raises(WriteError, match="read-only"):
        write_files({target: "new"})
    assert target.read_text() == "keep"


def test_failed_write_leaves_no_temporary_and_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "out.apkg"
    target.write_text("old")
    second = tmp_path / "second.csv"

    def disk_full(path: Path) -> None:
        path.write_bytes(b"partial")
        raise OSError(28, "No space left on device")

    with pytest.raises(WriteError) as info:
        write_files({second: "ok", target: disk_full})
    assert str(info.value) == f"cannot write {target}: No space left on device"
    assert target.read_text() == "old"
    assert not second.exists()  # nothing is put in place until every content is complete
    assert leftovers(tmp_path) == []


SLOW_WRITER = """
import sys, time
from pathlib import Path
from prep.engine.transfer.atomic import write_files

def slow(path):
    path.write_text("partial")
    print("writing", flush=True)
    time.sleep(30)

write_files({Path(sys.argv[1]): slow})
"""


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_during_write_removes_the_temporary(tmp_path: Path, signum: int) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_WRITER, str(target)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as a command started in a terminal's foreground: a shell without job control starts
        # background jobs with SIGINT ignored, and Python then installs no Ctrl-C handler
        preexec_fn=_default_sigint,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "writing\n"
    assert len(leftovers(tmp_path)) == 1  # the temporary exists while writing
    proc.send_signal(signum)
    proc.communicate(timeout=20)
    assert proc.returncode in (-signum, 128 + signum, 1)
    assert leftovers(tmp_path) == []
    assert target.read_text() == "old"


def test_every_content_kind(tmp_path: Path) -> None:
    def by_path(path: Path) -> None:
        path.write_bytes(b"\x00binary")

    files = {tmp_path / "a.txt": "text é", tmp_path / "b.bin": b"\xff", tmp_path / "c": by_path}
    write_files(files)
    assert [p.read_bytes() for p in files] == ["text é".encode(), b"\xff", b"\x00binary"]
