"""Finding and reading deck files: the bundled decks, a --questions path's files (each file
once), a file's text as a deck (a regular file of at most MAX_DECK_BYTES of UTF-8; a FIFO or a
device refused before any byte is read), and a path as the user would type it.

Split from deck.py (the cards, their validation and a file's parse), which it reads for the
error type and the size limit.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from prep.engine.decks import deck
from prep.engine.decks.deck import DeckError, one_line_safe


def display_path(path: Path | str) -> str:
    """A path as the user would type it: relative to the working directory when inside it."""
    shown = str(path)
    try:
        for candidate in (os.path.abspath(path), os.path.realpath(path)):
            relative = os.path.relpath(candidate)
            if relative != os.pardir and not relative.startswith(os.pardir + os.sep):
                shown = relative
                break
    except (ValueError, OSError):
        pass
    # a file name is printed on the user's terminal too, in a one-line message: escape what
    # would control the terminal or break the line
    return one_line_safe(shown)


def bundled_deck_files() -> list[Path]:
    """The YAML decks shipped in the ``prep.questions`` package. The package is always a
    folder (pip installs it unpacked), so its path is read directly: importlib.resources
    would import zipfile and its readers on every start for nothing."""
    from prep import questions

    root = Path(questions.__file__).parent
    return sorted(
        (p for p in root.iterdir() if p.name.endswith((".yaml", ".yml"))), key=lambda p: p.name
    )


def deck_files_in(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted([*path.glob("*.yaml"), *path.glob("*.yml")])
    return [path]


def read_regular_file(path: Path | str, max_bytes: int, what: str = "a deck") -> bytes:
    """The bytes of a regular file of at most ``max_bytes``. Raises OSError (with a message
    for the user) otherwise: a FIFO or a device such as /dev/zero is refused at once (opened
    without blocking, checked before any byte is read); so is a symbolic link loop."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(exc.errno, "a symbolic link loop") from None
        raise
    limit = f"{what} is at most {max_bytes / 1024 / 1024:g} MB"
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise OSError(errno.EISDIR, f"is a folder, not {what} file")
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a device, FIFO or socket)")
        if info.st_size > max_bytes:
            raise OSError(errno.EFBIG, f"{info.st_size} bytes; {limit}")
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 16):
            size += len(chunk)
            if size > max_bytes:  # grew while we read
                raise OSError(errno.EFBIG, limit)
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_deck_file(path: Path) -> str:
    """The text of one deck file (see read_regular_file; at most MAX_DECK_BYTES of UTF-8)."""
    data = read_regular_file(path, deck.MAX_DECK_BYTES)  # (deck.py's limit, read as it is now)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        column = exc.start - data.rfind(b"\n", 0, exc.start)
        error = OSError(errno.EILSEQ, f"not UTF-8 text (byte {column} of the line)")
        error.line = data.count(b"\n", 0, exc.start) + 1  # type: ignore[attr-defined]
        raise error from None


def collect_deck_files(
    paths: Iterable[Path] | None, include_bundled: bool, warnings: list[DeckError]
) -> list[tuple[str, Path, str]]:
    """(real path, path, shown name) of each deck file to load, each file once: the bundled
    ones (unless told not to), then each path's (a file, or a folder's *.yaml / *.yml); a
    path with none is a warning in ``warnings``."""
    files: list[Path] = list(bundled_deck_files()) if include_bundled else []
    for p in paths or ():
        found = deck_files_in(Path(p))
        if not found:
            warnings.append(
                DeckError(display_path(p), 1, "no deck here (no *.yaml or *.yml files)")
            )
        files.extend(found)
    out, seen = [], set()
    for path in files:
        key = os.path.realpath(path)  # never raises, even on a symlink loop
        if key not in seen:
            seen.add(key)
            out.append((key, path, display_path(path)))
    return out


def read_deck_text(path: Path, shown: str) -> tuple[str | None, DeckError | None]:
    """The text of one deck file (see read_deck_file: a regular file of at most
    MAX_DECK_BYTES of UTF-8), or the one-line error saying why it cannot be read."""
    try:
        return read_deck_file(path), None
    except FileNotFoundError:
        return None, DeckError(shown, 0, "no such file or folder")
    except OSError as exc:
        line = getattr(exc, "line", 1)
        return None, DeckError(shown, line, f"cannot read: {exc.strerror or exc}")
