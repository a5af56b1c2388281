"""The journal writer's temporary files (split from journal.py): which ones a sync of this
device killed while writing left, and may be removed. Only a file it can prove is its own is
removed (named as journal.write names them, a regular file, its header naming this device,
held by no prep), so this device's folder may be a link to a folder elsewhere that holds
other files too (folders.own_link)."""

from __future__ import annotations

import contextlib
import os
import re
import stat
from pathlib import Path
from typing import Any

__all__ = ["STALE_TMP_S", "remove", "written_by"]

STALE_TMP_S = 3600  # without locks: a temporary file this old was left by a killed sync
# opening a file never waits (a FIFO) nor follows a link (journal.py's rule)
_NO_WAIT = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
_TMP_RE = re.compile(r"\.tmp-[0-9a-f]{16}")  # (journal.write names them so)
# how json.dumps of a header journal.write puts begins: format, version, device
_OWN_HEAD = re.compile(
    rb'\{"format": "prep-journal", "version": [0-9]+, "device": "([0-9a-f]{16})"'
)


def written_by(fd: int) -> str | None:
    """The device whose header (as write() puts it) begins the file open as ``fd``, or None:
    the proof a file is that device's (a temporary file cut short keeps its header's start)."""
    os.lseek(fd, 0, os.SEEK_SET)  # (os.pread: not on Windows)
    m = _OWN_HEAD.match(os.read(fd, 128))
    return m.group(1).decode() if m else None


def remove(folder: Path, device: str, fcntl: Any) -> None:
    """Remove temporary files left by a sync of this device killed while writing: a regular
    file named as write() names them, whose header names ``device`` (or empty and an hour
    old: killed before its first byte), that no prep holds locked (one being written now, by another prep on the same database, is locked; with
    ``fcntl`` None, where there are no advisory locks: one over STALE_TMP_S old). Any other
    file is left as it is (a folder kept elsewhere through a link may hold others')."""
    import time

    with os.scandir(folder) as found:
        # (only a regular file is opened: never a FIFO, a device, a link)
        found_stale = [
            folder / e.name
            for e in found
            if _TMP_RE.fullmatch(e.name) and e.is_file(follow_symlinks=False)
        ]
    for path in found_stale:
        with contextlib.suppress(OSError):
            fd = os.open(path, _NO_WAIT)  # (never a link followed, never a FIFO waited on)
            try:
                st = os.fstat(fd)
                # an empty one (a sync killed between creating and writing it) holds nothing to
                # lose, and no header to prove whose it is: removed once it is an hour old
                empty = st.st_size == 0 and time.time() - st.st_mtime > STALE_TMP_S
                if not stat.S_ISREG(st.st_mode) or not (empty or written_by(fd) == device):
                    continue
                if fcntl is None:
                    if time.time() - st.st_mtime > STALE_TMP_S:
                        path.unlink()
                    continue
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError: in use
                path.unlink()
            finally:
                os.close(fd)
