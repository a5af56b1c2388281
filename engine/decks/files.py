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
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path

from prep.engine.decks import deck
from prep.engine.decks.deck import DeckError, one_line_safe

_DECKS = (".yaml", ".yml")  # a deck file's name ends so


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
    if shown == "-":  # the file named - (given as ./-): never "-:5:", which reads as stdin
        shown = os.curdir + os.sep + "-"
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


def _folder_decks(folder: Path) -> list[tuple[str, Path, str]] | None:
    """(real path, path, shown name) of each deck file in ``folder`` (what ``deck_files_in``
    lists: every entry named *.yaml or *.yml, dot-files, folders and dangling links too, by
    name), resolved and shown once per folder instead of once per file: a file that is not a
    symbolic link has the folder's real path and the folder's shown path, plus its name. A
    link is resolved on its own. The same triples as resolving each file (a test holds it);
    None when the folder cannot be listed so (not a folder, or the working directory is gone):
    the caller resolves each file then."""
    try:
        with os.scandir(folder) as it:
            entries = sorted((e for e in it if e.name.endswith(_DECKS)), key=lambda e: e.name)
        real = os.path.realpath(folder)
        # display_path's two candidates, for the folder: a file's is the folder's plus its name
        shown_dirs = [_inside_cwd(os.path.abspath(folder)), _inside_cwd(real)]
    except PermissionError:
        return []  # (as pathlib's glob: an unreadable folder lists nothing)
    except (OSError, ValueError):
        return None
    out = []
    for entry in entries:
        path = folder / entry.name
        try:
            link = entry.is_symlink()
        except OSError:
            link = True
        if link:
            out.append((os.path.realpath(path), path, display_path(path)))
            continue
        shown = str(path)
        for rel in shown_dirs:
            if rel is not None:
                shown = entry.name if rel == os.curdir else os.path.join(rel, entry.name)
                break
        out.append((os.path.join(real, entry.name), path, one_line_safe(shown)))
    return out


def _each(files: list[Path]) -> list[tuple[str, Path, str]]:
    """(real path, path, shown name) of each of ``files``, resolved one by one."""
    return [(os.path.realpath(f), f, display_path(f)) for f in files]  # (realpath never raises)


def _inside_cwd(candidate: str) -> str | None:
    """``candidate`` relative to the working directory when it is inside it (display_path's
    rule), else None."""
    relative = os.path.relpath(candidate)
    if relative != os.pardir and not relative.startswith(os.pardir + os.sep):
        return relative
    return None


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
    groups: list[list[tuple[str, Path, str]]] = []
    if include_bundled:
        from prep import questions

        found = _folder_decks(Path(questions.__file__).parent)
        groups.append(_each(bundled_deck_files()) if found is None else found)
    for p in paths or ():
        path = Path(p)
        found = _folder_decks(path) if path.is_dir() else None
        if found is None:
            found = _each(deck_files_in(path))
        if not found:
            warnings.append(
                DeckError(display_path(p), 1, "no deck here (no *.yaml or *.yml files)")
            )
        groups.append(found)
    out, seen = [], set()
    for group in groups:
        for key, path, shown in group:
            if key not in seen:
                seen.add(key)
                out.append((key, path, shown))
    return out


def deck_lister(
    paths: Iterable[Path] | None, include_bundled: bool
) -> Callable[[], frozenset[str]]:
    """What lists the deck files ``collect_deck_files`` would find for these paths, each as
    its path (folder and name, as ``collect_deck_files`` gives it; a path that is not a
    folder as itself): the folders listed, no file resolved or read. An open collection
    compares it with what it loaded to notice a deck file added to or removed from a folder."""
    folders = [str(Path(p)) for p in paths or ()]
    if include_bundled:
        from prep import questions

        folders.insert(0, str(Path(questions.__file__).parent))
    return partial(_listed, tuple(folders))


def _listed(folders: tuple[str, ...]) -> frozenset[str]:
    out: set[str] = set()
    for folder in folders:
        try:
            with os.scandir(folder) as it:
                out.update(os.path.join(folder, e.name) for e in it if e.name.endswith(_DECKS))
        except OSError:  # a file given (not a folder), or a path gone: as itself
            out.add(folder)
    return frozenset(out)


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
