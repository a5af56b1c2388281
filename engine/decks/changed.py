"""Which deck files a load must read: the cache's freshness rule (see deckcache's module doc)
and the reads themselves, apart from the cache's bookkeeping so that a front end can ask how
much is to be read (pending_fill, scan_decks) before it loads: the scan it asked with is
handed to the load (``deckcache.load(scan=...)``), so the deck files are listed, resolved,
looked up in the cache and stat'ed once per open, not once for the question and again for
the load."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prep.engine.decks.deck import MAX_DECK_BYTES, DeckError
from prep.engine.decks.files import collect_deck_files, read_deck_text
from prep.engine.decks.fill import Fill

if TYPE_CHECKING:
    from prep.engine.store import Store

# Hashed with every file's text: raised whenever parse_deck_text accepts less than before.
# (4: cards carry `points` and `aliases`, fields the cached JSON of older parses lacks;
# 5: a card's text holds no bidi control or zero-width character; 6: it may hold ZWNJ, ZWJ,
# the displaying Arabic signs and subdivision flags, so a file refused by 5 is parsed again)
PARSER_SALT = b"parser 7\n"
RACY_NS = 2_000_000_000  # 2 s: coarser than any file system's mtime tick we expect


def _read_changed(
    files: list[tuple[str, Path, str]],
    cached: dict[str, Any],
    read: Any = read_deck_text,
    stats: dict[str, os.stat_result | None] | None = None,
    then: Callable[[str, Path, str, str | None, str], None] | None = None,
) -> dict[str, tuple[os.stat_result | None, str | None, DeckError | None, str]]:
    """key -> (stat, text, read error, sha256) of each file whose cached parse cannot be used
    as it is (the others are not read at all); ``stats``: each file's stat, when a scan made
    them already. ``then(key, path, shown, text, sha256)`` is called as each is read (the
    fill's workers start on it while the next is read)."""
    reads = {}
    for key, path, shown in files:
        st = _stat(path) if stats is None else stats[key]
        if _fresh(cached.get(key), st):
            continue
        import hashlib  # (OpenSSL's: the fastest on whole files; loaded once a file is read)

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


def _to_fill(
    files: list[tuple[str, Path, str]],
    cached: dict[str, Any],
    stats: dict[str, os.stat_result | None] | None = None,
) -> Fill:
    """What a load will read: the files whose cached parse cannot be used as it is."""
    sizes = []
    for key, path, _ in files:
        st = _stat(path) if stats is None else stats[key]
        if not _fresh(cached.get(key), st):
            sizes.append(st.st_size if st is not None and stat.S_ISREG(st.st_mode) else 0)
    return Fill(files_total=len(sizes), bytes_total=sum(sizes))


@dataclass
class Scan:
    """The deck files of one open, as the cache sees them: listed and resolved
    (collect_deck_files), their cached entries (read with the format they were written
    under) and their stat, and what a load would read (``pending``). Made by
    ``scan_decks``; ``deckcache.load(scan=...)`` uses it instead of doing it all again."""

    request: tuple[tuple[str, ...], bool]  # (the paths asked for, include_bundled)
    files: list[tuple[str, Path, str]]
    warnings: list[DeckError]
    format: str | None  # the cache's format when its entries were read
    cached: dict[str, Any]
    stats: dict[str, os.stat_result | None] = field(repr=False)
    pending: Fill

    def serves(self, paths: Iterable[Path] | None, include_bundled: bool) -> bool:
        """Whether the scan is of these paths (a load of other paths scans its own)."""
        return self.request == _request(paths, include_bundled)


def _request(paths: Iterable[Path] | None, include_bundled: bool) -> tuple[tuple[str, ...], bool]:
    return tuple(str(p) for p in paths or ()), include_bundled


def scan_decks(
    store: Store, paths: Iterable[Path] | None = None, *, include_bundled: bool = True
) -> Scan:
    """The deck files to load and how much the next load will read, without reading them
    (one listing, one query, one stat a file)."""
    paths = list(paths or ())
    warnings: list[DeckError] = []
    files = collect_deck_files(paths, include_bundled, warnings)
    cached = store.deck_cache_files()
    stats = {key: _stat(path) for key, path, _ in files}
    return Scan(
        _request(paths, include_bundled),
        files,
        warnings,
        store.deck_cache_format(),
        cached,
        stats,
        _to_fill(files, cached, stats),
    )


def pending_fill(
    store: Store, paths: Iterable[Path] | None = None, *, include_bundled: bool = True
) -> Fill:
    """Without loading: how many deck files (and bytes) the next load will read, and parse
    unless their hash is unchanged (stat calls and one query). A front end shows progress
    when there is much to do (``scan_decks`` keeps what it found for the load)."""
    return scan_decks(store, paths, include_bundled=include_bundled).pending
