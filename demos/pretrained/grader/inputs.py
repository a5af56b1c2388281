"""Reading `prep grade`'s files and standard input within bounds: a rubric, an answers file
or an answer on stdin is read up to a size it could sensibly have, never whole whatever it is
(`--rubric /dev/zero` used to read until the memory ran out), and what cannot be read is
said in words (no such file, a folder, not UTF-8 text), one line for exit code 2."""

from __future__ import annotations

import errno
import sys
from pathlib import Path
from typing import BinaryIO

from prep.demos.pretrained.grader.rubric import RubricError

MAX_RUBRIC_BYTES = 1 << 20  # a rubric is a question and a few points
MAX_ANSWERS_BYTES = 64 << 20  # thousands of answers of 20,000 characters
STDIN = "-"  # a file named so is standard input (`--answers -`), as export's `-o -` is stdout


def shown(path: str | Path) -> str:
    """How a message names the file ``path``: "standard input" for ``-``."""
    return "standard input" if str(path) == STDIN else str(path)


def _why(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "no such file"
    if isinstance(exc, IsADirectoryError) or exc.errno == errno.EISDIR:
        return "is a folder, not a file"
    return exc.strerror or str(exc)


def read_bounded(stream: BinaryIO, limit: int, where: str) -> str:
    """At most ``limit`` bytes of ``stream`` as UTF-8 text; RubricError past it or on bytes
    that are not UTF-8."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise RubricError(f"{where}: more than {limit:,} bytes; too big to be read")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RubricError(f"{where}: not UTF-8 text (byte {exc.start + 1})") from None


def read_text(path: str | Path, limit: int) -> str:
    """The file ``path`` as UTF-8 text, read within ``limit`` bytes (a device or a FIFO too:
    never more than the limit). ``-`` is standard input."""
    if str(path) == STDIN:
        return read_bounded(sys.stdin.buffer, limit, shown(path))
    try:
        with open(path, "rb") as f:
            return read_bounded(f, limit, str(path))
    except OSError as exc:
        raise RubricError(f"{path}: cannot read it ({_why(exc)})") from None
