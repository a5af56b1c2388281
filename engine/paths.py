"""Paths the user names, read as a shell reads them."""

from __future__ import annotations

import os
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
