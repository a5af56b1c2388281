"""Paths the user names, read as a shell reads them; and what an entry on disk is, in words
(the backups' folder and the sync folder name an entry that is no regular file alike); and the
URI SQLite opens a file by."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def expand_user(path: str | os.PathLike[str]) -> Path:
    """``~`` and ``~user`` expanded as a shell expands them: a ``~user`` that names no user (or
    a home directory that cannot be determined) stays as written, so the path is reported as
    not found, in one line, instead of ``Path.expanduser``'s RuntimeError ending the command
    as an internal error."""
    p = Path(path)
    try:
        return p.expanduser()
    except RuntimeError:
        return p


def sqlite_uri(path: str | os.PathLike[str], query: str) -> str:
    """``file:PATH?QUERY`` for ``sqlite3.connect(..., uri=True)``: the path's own bytes quoted
    (a name that is not UTF-8, ``\xff.db``, made quote() of its text raise UnicodeEncodeError),
    and a ``#`` or ``?`` in it quoted, so the URI never names another file."""
    from urllib.parse import quote

    return f"file:{quote(os.fsencode(path))}?{query}"


def odd_kind(mode: int) -> str | None:
    """None for a regular file; else what an entry of this ``st_mode`` is, in words."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    return "not a regular file"


def entry_kind(path: Path | str, gone: str | None = None) -> str | None:
    """What the entry at ``path`` is when it is no regular file (``odd_kind``; not followed
    if a link, so a FIFO at its end is never opened); None for a regular file, and ``gone``
    for one that cannot be looked at (removed meanwhile)."""
    try:
        return odd_kind(os.lstat(path).st_mode)
    except OSError:
        return gone
