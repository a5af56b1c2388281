"""Write files all or nothing: the files a user names (`prep export -o FILE`, the Anki package).

Each file goes to a temporary file beside its target first; only when every one is written are
they renamed into place, so a full disk or a refused folder leaves the old files as they were
and no half-written ones. `write_files` and `WriteError` are the whole API.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


class WriteError(Exception):
    """A file cannot be written; a one-line message naming it."""


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_files(files: dict[Path, str | bytes | Callable[[Path], None]]) -> None:
    """Write every file or none: each goes to a temporary file beside its target first, and
    only when all are written are they renamed into place. A value may be text, bytes, or a
    function that writes the file at the path it is given."""
    temps: list[tuple[Path, Path]] = []
    try:
        for target, content in files.items():
            target = Path(target)
            if target.is_dir():
                raise WriteError(f"{target}: is a folder; give a file name")
            try:
                fd, tmp_name = tempfile.mkstemp(
                    prefix=f".{target.name}.", suffix=".tmp", dir=target.parent
                )
            except FileNotFoundError:
                raise WriteError(f"cannot write {target}: no folder {target.parent}") from None
            except OSError as exc:
                raise WriteError(f"cannot write {target}: {exc.strerror or exc}") from None
            tmp = Path(tmp_name)
            temps.append((tmp, target))
            try:
                if callable(content):
                    os.close(fd)
                    content(tmp)
                else:
                    data = content.encode("utf-8") if isinstance(content, str) else content
                    with os.fdopen(fd, "wb") as fh:
                        fh.write(data)
            except OSError as exc:
                raise WriteError(f"cannot write {target}: {exc.strerror or exc}") from None
        for tmp, target in temps:
            try:
                os.chmod(tmp, 0o666 & ~_umask())  # as open() would have made it
                os.replace(tmp, target)
            except OSError as exc:
                raise WriteError(f"cannot write {target}: {exc.strerror or exc}") from None
    finally:
        for tmp, _ in temps:
            tmp.unlink(missing_ok=True)
