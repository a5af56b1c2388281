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


CHUNK = 1 << 20  # read this much at a time


def read_lines(path: Path) -> tuple[list[str], bool]:
    """The lines of the journal file at ``path`` (without their ends of line), and whether
    the file ends with one (False: cut short, or empty). It is read a chunk at a time; a line
    of MAX_LINE bytes or more (its end of line not counted) is refused once that much of it is
    read, before the rest of it."""
    lines: list[str] = []
    pending: list[bytes] = []  # the pieces of the line not ended yet
    size = total = 0
    with open_file(path) as f:
        while chunk := f.read(CHUNK):
            total += len(chunk)
            if total > MAX_FILE_BYTES:  # (grown since the look)
                raise JournalError(f"{path}: more than a journal file can hold")
            end = chunk.rfind(b"\n")
            if end < 0:
                pending.append(chunk)
                size += len(chunk)
                if size >= MAX_LINE:
                    # (the line's start: its first pieces, the first may be a few bytes)
                    _too_long(path, len(lines) + 1, b"".join(p[:60] for p in pending))
                continue
            whole = b"".join([*pending, chunk[: end + 1]])  # (whole lines: ending in "\n")
            pending, size = [chunk[end + 1 :]], len(chunk) - end - 1
            parts = whole.split(b"\n")
            parts.pop()
            for n, part in enumerate(parts, len(lines) + 1):
                if len(part) >= MAX_LINE:
                    _too_long(path, n, part)
            try:  # (a character never spans an end of line: whole lines decode alone)
                lines += whole.decode("utf-8").split("\n")[:-1]
            except UnicodeDecodeError:
                for n, part in enumerate(parts, len(lines) + 1):
                    try:
                        part.decode("utf-8")
                    except UnicodeDecodeError:
                        raise JournalError(
                            f"{path}: line {n}: damaged (not UTF-8 text); nothing of it applied"
                        ) from None
                raise  # (never: one of the lines fails)
    return lines, total > 0 and size == 0


def first_line(path: Path) -> bytes:
    """The first line of the journal file at ``path`` (its header), without its end of line,
    bounded as read_lines bounds a line (JournalError at MAX_LINE bytes): a header may hold
    many parameter sets. Read through the file's buffer up to its end of line only (a look
    at a header reads a few kB of a file of many MB)."""
    with open_file(path) as f:
        line = f.readline(MAX_LINE)
    if line.endswith(b"\n"):
        return line[:-1]
    if len(line) >= MAX_LINE:
        _too_long(path, 1, line[:60])
    return line


def _too_long(path: Path, line: int, start: bytes) -> None:
    raise JournalError(
        f"{path}: line {line}: {MAX_LINE:,} bytes or more, more than a journal line holds "
        f"(it starts {_started(start)}); nothing of it applied"
    )


def _started(start: bytes) -> str:
    """The start of a line too long, quoted and closed, always with an ellipsis after it
    (the line goes on)."""
    shown = _cut(start[:60].decode("utf-8", "replace"))
    return shown if shown.endswith("…") else f"{shown}…"
