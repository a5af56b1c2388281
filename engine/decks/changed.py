"""Which deck files a load must read: the cache's freshness rule (see deckcache's module doc)
and the reads themselves, apart from the cache's bookkeeping so that a front end can ask how
much is to be read (pending_fill) before it loads."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prep.engine.decks.deck import MAX_DECK_BYTES, DeckError
from prep.engine.decks.files import collect_deck_files, read_deck_text
from prep.engine.decks.fill import Fill

if TYPE_CHECKING:
    from prep.engine.store import Store

# Hashed with every file's text: raised whenever parse_deck_text accepts less than before.
# Hashed with every file's text: raised whenever parse_deck_text accepts less than before.
# (4: cards carry `points` and `aliases`, fields the cached JSON of older parses lacks)
PARSER_SALT = b"parser 4\n"
RACY_NS = 2_000_000_000  # 2 s: coarser than any file system's mtime tick we expect


def _read_changed(
    files: list[tuple[str, Path, str]],
    cached: dict[str, Any],
    read: Any = read_deck_text,
    then: Callable[[str, Path, str, str | None, str], None] | None = None,
) -> dict[str, tuple[os.stat_result | None, str | None, DeckError | None, str]]:
    """key -> (stat, text, read error, sha256) of each file whose cached parse cannot be used
    as it is (the others are not read at all). ``then(key, path, shown, text, sha256)`` is
    called as each is read (the fill's workers start on it while the next is read)."""
    reads = {}
    for key, path, shown in files:
        st = _stat(path)
        if _fresh(cached.get(key), st):
            continue
        text, error = read(path, shown)
        # the parser's version is hashed with the text: a parse by an older parser
        # (before a refusal was added) is never served
        sha = "" if text is None else hashlib.sha256(PARSER_SALT + text.encode("utf-8")).hexdigest()
        reads[key] = (st, text, error, sha)
        if then is not None:
            then(key, path, shown, text, sha)
    return reads


def _fresh(entry: Any, st: os.stat_result | None) -> bool:
    """The cached parse of this file can be used without reading it (see the module doc)."""
    return (
        st is not None
        and stat.S_ISREG(st.st_mode)  # anything else is read (and refused) as the loader does
        and st.st_size <= MAX_DECK_BYTES
        and entry is not None
        and (entry["size"], entry["mtime_ns"]) == (st.st_size, st.st_mtime_ns)
        and entry.get("ident") == file_ident(st)
        and entry["checked_ns"] - st.st_mtime_ns >= RACY_NS
    )


def file_ident(st: os.stat_result) -> str:
    """What no edit keeps: the device and inode (a file replaced by rename, `cp`, an editor's
    save) and the ctime, which every write, chmod or `touch -d` sets to now and no tool can set
    back (git's index keeps the same). Size and mtime alone are kept by `touch -d`, `cp -p`
    and `rsync -t`."""
    return f"{st.st_dev}:{st.st_ino}:{st.st_ctime_ns}"


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None


def _to_fill(files: list[tuple[str, Path, str]], cached: dict[str, Any]) -> Fill:
    """What a load will read: the files whose cached parse cannot be used as it is."""
    sizes = [
        st.st_size if st is not None and stat.S_ISREG(st.st_mode) else 0
        for key, path, _ in files
        if not _fresh(cached.get(key), st := _stat(path))
    ]
    return Fill(files_total=len(sizes), bytes_total=sum(sizes))


def pending_fill(
    store: Store, paths: Iterable[Path] | None = None, *, include_bundled: bool = True
) -> Fill:
    """Without loading: how many deck files (and bytes) the next load will read, and parse
    unless their hash is unchanged (stat calls and one query). A front end shows progress
    when there is much to do."""
    files = collect_deck_files(paths, include_bundled, [])
    return _to_fill(files, store.deck_cache_files())
