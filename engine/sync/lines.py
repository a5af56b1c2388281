"""Reading a journal file's lines (engine/sync/journal.py checks them): never an entry that
is no regular file, never a file over MAX_FILE_BYTES, never a line over MAX_LINE bytes (a line
of 300 MB is refused once 16 MB of it is read, not read whole: a journal is read on every
sync, whoever wrote it)."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import BinaryIO

from prep.engine.paths import entry_kind, odd_kind
from prep.engine.sync.journal import (
    _NO_WAIT,
    MAX_FILE_BYTES,
    MAX_LINE,
    JournalError,
    NotAFile,
    _cut,
)


def open_file(path: Path) -> BinaryIO:
    """The regular file at ``path``, open to read: an entry of another kind is never opened
    (a FIFO would wait for a writer, a link may lead to /dev/zero): NotAFile; nor, when it
    is put in place between the look and the open, read (no wait, no link followed)."""
    kind = entry_kind(path)
    if kind is not None:
        raise NotAFile(path, kind)
    try:
        fd = os.open(path, _NO_WAIT)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):  # (a link put in place since the look)
            raise NotAFile(path, "a symbolic link") from None
        raise
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    kind = odd_kind(st.st_mode)
    if kind is not None:
        os.close(fd)
        raise NotAFile(path, kind)
    if st.st_size > MAX_FILE_BYTES:
        os.close(fd)
        raise JournalError(f"{path}: {st.st_size:,} bytes, more than a journal file can hold")
    return os.fdopen(fd, "rb")


def read_lines(path: Path) -> list[str]:
    """The lines of the journal file at ``path`` (each with its end of line), each read no
    further than MAX_LINE bytes: a longer one is refused before the rest of it is read."""
    lines: list[str] = []
    total = 0
    with open_file(path) as f:
        while line := f.readline(MAX_LINE + 1):
            total += len(line)
            if total > MAX_FILE_BYTES:  # (grown since the look)
                raise JournalError(f"{path}: more than a journal file can hold")
            if len(line) > MAX_LINE:
                start = line[:60].decode("utf-8", "replace")
                raise JournalError(
                    f"{path}: line {len(lines) + 1}: longer than {MAX_LINE:,} bytes, more than "
                    f"a journal line holds (it starts {_cut(start)}); nothing of it applied"
                )
            try:
                lines.append(line.decode("utf-8"))
            except UnicodeDecodeError:
                raise JournalError(
                    f"{path}: line {len(lines) + 1}: damaged (not UTF-8 text); nothing of it applied"
                ) from None
    return lines
