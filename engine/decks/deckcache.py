"""Parsed, validated decks cached in the progress database, so that opening prep costs what
changed, not how much exists.

Prep writes nothing but its database and the files the user names, so the cache lives in the
database, in tables the store owns (``deck_files``, ``deck_cards``). A deck file is re-parsed
only when it changed:

- its path, size, ``mtime_ns`` and identity (device, inode, ctime: see file_ident) match the
  cached entry, and the file was last modified at
  least ``RACY_NS`` before the entry was written -> the cached parse is used without reading
  the file (git's "racily clean" rule: an edit within the same clock tick as the cache
  write could keep size and mtime, so such a file is always read);
- otherwise the file is read and hashed (sha256): the same hash -> the cached parse is used
  and the entry's size and mtime are refreshed (``touch`` re-parses nothing); a different
  hash -> the file is parsed and validated again and its entry replaced.

The checks across files (duplicate ids, missing parents, parent cycles, unknown demos) run
again whenever the set of files, any file's content or the list of demos changed; otherwise
their result is read back with the cards (and each file's card count). Nothing per card is
read at open: the collection finds a card by its id (the cache's id index) and builds it from
its cached fields the first time it is asked for (``get``); the outline of every card (id,
deck, parent) is read only when a caller walks every card (``cards``, ``refs``), so that the
cold open costs what the day's cards need, not the collection's size.

Progress is reconciled with the decks (the store's reconcile) only when the decks changed
since the last reconciliation, in SQL against the cached outline, never by hashing every card.

The entries of deck files that no longer exist on disk (a deck folder deleted or moved) are
dropped as the decks load; those of files only not named this time are kept (``_prune`` in
engine/decks/assembly.py, where every load ends: the collection read back from the cache).

``prep check`` does not use the cache: it parses and validates every file.

What ``load`` returns is the one collection the study loop reads (``CachedCollection``,
engine/decks/collection.py). A database that cannot be written now (read-only, or another
prep holds the write lock) still opens through it: the cache is then private to the
connection (TEMP tables: Store.deck_cache_private) and filled by parsing the decks. Decks
parsed in memory (tests, benchmarks) are fed into a cache the same way (``from_parsed``):
no second implementation of the collection exists.
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import fields
from functools import cache, partial
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prep.engine.decks import assembly, fedcache, fillbatch
from prep.engine.decks.cachedinfo import info_json as _info_json
from prep.engine.decks.changed import (  # noqa: F401 - pending_fill, scan_decks: the front ends' question
    PARSER_SALT,
    RACY_NS,
    Scan,
    _fresh,
    _read_changed,
    _stat,
    _to_fill,
    file_ident,
    pending_fill,
    scan_decks,
)
from prep.engine.decks.checks import parse_decks
from prep.engine.decks.collection import (  # noqa: F401 - CachedCollection, card_from_fields: what load gives
    CachedCollection,
    CardRef,
    _fields_of,
    card_fields,
    card_from_fields,
)
from prep.engine.decks.deck import Card, DeckError, ParsedDecks
from prep.engine.decks.digest import sha256
from prep.engine.decks.files import collect_deck_files, deck_lister, read_deck_text
from prep.engine.decks.fill import INDEX, PARSE, STORE, Fill, Progress
from prep.engine.decks.fillbatch import Batch
from prep.engine.decks.parsepool import ParsePool

if TYPE_CHECKING:
    from prep.engine.store import Store

# Part of every assembly's key: raised when the checks across files change, so that a cached
# result of older checks is never served (2: duplicate deck names refused, cards that can
# never be served left out, as checks.parse_decks does since the hardening).
ASSEMBLY_VERSION = 2

# The cache's format: a database whose cache was written under any other format has it dropped
# and rebuilt before anything is read from it (the (size, mtime) fast path included):
# ``format_key()`` hashes the loader's version (raised whenever parse_deck_text accepts less
# or parses differently), Card's fields read from the dataclass itself (adding, removing,
# renaming or retyping a field changes the key with no version to remember) and the assembly's
# version; the store keeps it beside the cached rows.
LOADER_VERSION = (
    5  # (5: a subdivision flag only as UTS #51 spells one; 4: ZWNJ, ZWJ, Arabic signs taken)
)


def format_key() -> str:
    """What a cached parse depends on besides the files' text (see the comment above)."""
    return _format_key(LOADER_VERSION, Card, ASSEMBLY_VERSION)


@cache  # (asked twice an open: once is enough for a class and two versions)
def _format_key(loader: int, card_class: type, assembly: int) -> str:
    card = [[f.name, str(f.type)] for f in fields(card_class)]
    spec = {"loader": loader, "card": card, "assembly": assembly}
    return sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


def state_digest(fmt_key: str) -> Any:
    """The hash that names a state of the decks (the assembly's and the reconciliation's
    key): the cache's format, then each file's key (its real path) and text hash, the demos.
    Not how a path is shown: that depends on the working directory, and opening prep from
    another folder must not redo the checks across files and the reconciliation (a minute at
    a million cards); an assembly with errors is redone when the names they show changed."""
    return sha256(f"format {fmt_key}\nfiles by key\n".encode())


@contextmanager
def gc_paused() -> Iterator[None]:
    """Parsing a big deck allocates a million small objects, none of them garbage: the cyclic
    collector would walk them again and again (it doubled the YAML load at 100k cards)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _parse(text: str, shown: str, stem: str):
    from prep.engine.decks.fastdeck import parse_rows  # (imports yaml: only a parse needs it)

    return parse_rows(text, shown, stem)


def load(
    store: Store,
    paths: Iterable[Path] | None = None,
    *,
    demo_names: Sequence[str] | None = None,
    include_bundled: bool = True,
    progress: Progress | None = None,
    scan: Scan | None = None,
    private: bool = True,
) -> CachedCollection:
    """The decks (``checks.parse_decks``'s cards, errors, order) through the cache in
    ``store``, and the store's progress reconciled with the decks if they changed since the
    last time. A database that cannot be written now (read-only, busy) still opens: the
    cache is then private to this connection (TEMP tables), filled from the files, and
    progress is read as it is. ``progress`` is called with a Fill as each changed file is
    parsed and stored (fill.py). ``scan``: what ``scan_decks`` found just before, for these
    paths in this store (the deck files are then not listed, looked up and stat'ed again).
    ``private=False``: a StoreError is raised instead (a thread that fills the cache for
    the app: a private cache would be thrown away with its connection); one of kind
    "interrupted" (Store.stop_when: the caller stopped it) always is."""
    paths = None if paths is None else list(paths)
    coll = _load_once(store, paths, demo_names, include_bundled, progress, scan, private)
    # loaded again when another prep re-reads one of its files, or its folders list another
    # set of files (``refresh``): raising a StoreError then (the open collection is kept)
    coll._reload = partial(_load_once, store, paths, demo_names, include_bundled, None, None, False)
    coll._listing = deck_lister(paths, include_bundled)
    return coll


def _load_once(
    store: Store,
    paths: Iterable[Path] | None,
    demo_names: Sequence[str] | None,
    include_bundled: bool,
    progress: Progress | None,
    scan: Scan | None,
    private: bool,
) -> CachedCollection:
    from prep.engine.store import StoreError

    with gc_paused():  # a hundred thousand small objects, none of them garbage
        try:
            for tries in range(assembly.TRIES, 0, -1):  # (another prep dropped files of it)
                with suppress(assembly.CacheChanged):
                    return _load(store, paths, demo_names, include_bundled, progress, scan, tries)
                scan = None  # (what it found is what changed since)
            raise AssertionError("unreachable: the last try raises no CacheChanged")
        except StoreError as exc:
            if store.deck_cache_is_private() or not private or exc.kind == "interrupted":
                raise
            store.deck_cache_private()
            return _load(store, paths, demo_names, include_bundled, progress)


def load_collection(
    paths: Iterable[Path] | None = None,
    *,
    demo_names: Sequence[str] | None = None,
    include_bundled: bool = True,
) -> CachedCollection:
    """The decks parsed (``checks.parse_decks``) and fed into a new in-memory database's
    cache (``from_parsed``): for a caller without a database (tests, benchmarks); the
    collection moves into the cache of the database it is first asked about."""
    parsed = parse_decks(paths, demo_names=demo_names, include_bundled=include_bundled)
    return from_parsed(parsed)


def from_parsed(parsed: ParsedDecks, store: Store | None = None) -> CachedCollection:
    """``parsed`` fed into ``store``'s deck cache (a new in-memory database's when None) and
    read back as the one collection: cards in their order and with their text, each deck one
    cached entry named by its DeckInfo.file (cards whose deck has no entry get one, named
    after the deck), the parse's errors and warnings. Progress is reconciled with these
    decks, as ``load`` does; a database that cannot be written gets a private cache."""
    from prep.engine.store import Store as StoreClass
    from prep.engine.store import StoreError

    if store is None:
        store = StoreClass.memory()
    try:
        coll = fedcache.feed(store, parsed)
    except StoreError:
        if store.deck_cache_is_private():
            raise
        store.deck_cache_private()
        coll = fedcache.feed(store, parsed)
    coll.errors = list(parsed.errors)
    coll.warnings = list(parsed.warnings)
    for name, info in coll.decks.items():  # as parsed (a duplicate id is under both decks)
        if name in parsed.decks:
            info.card_ids = list(parsed.decks[name].card_ids)
    coll._source = parsed
    return coll


def _load(
    store: Store,
    paths: Iterable[Path] | None,
    demo_names: Sequence[str] | None,
    include_bundled: bool,
    progress: Progress | None = None,
    scan: Scan | None = None,
    tries: int = 1,
) -> CachedCollection:
    fmt_key = format_key()
    if scan is None or not scan.serves(paths, include_bundled) or scan.format != fmt_key:
        scan = None  # (a scan of other paths, or of a cache about to be reset: not used)
        warnings: list[DeckError] = []
        files = collect_deck_files(paths, include_bundled, warnings)  # as parse_decks
        if store.deck_cache_format() != fmt_key:
            # written by another version of the loader, Card or the checks: nothing of it is
            # trusted, not even the (size, mtime) of an unchanged file (progress is not touched)
            store.deck_cache_adopt(fmt_key)
        cached = store.deck_cache_files()
    else:  # the front end's scan of this open (app: _fill_first): not listed and read twice
        files, warnings, cached = scan.files, list(scan.warnings), scan.cached
    # each file stat'ed once: for the fill's question (with progress) and the freshness rule
    stats = {key: _stat(path) for key, path, _ in files} if scan is None else scan.stats
    now_ns = time.time_ns()
    fill = _to_fill(files, cached, stats) if progress is not None else None
    order: list[tuple[str, str]] = []  # (cache key, shown) of each readable deck file
    read_errors: list[DeckError] = []
    digest = state_digest(fmt_key)
    # both cores for a big fill: a worker parses each changed file as soon as it is read
    ahead = fill or (scan.pending if scan else None) or _to_fill(files, cached, stats)
    pool = ParsePool([], ahead.bytes_total, ahead.files_total)
    outline: dict[str, list[CardRef]] = {}  # of each file parsed now (the checks read it)
    now: dict[str, tuple[list[tuple[str, int]], bool]] = {}  # its ids' lines, aliases or not

    def parse_soon(key: str, path: Path, shown: str, text: str | None, sha: str) -> None:
        if text is not None and (cached.get(key) or {}).get("sha256") != sha:
            pool.submit(key, text, shown, path.stem)

    try:
        reads = _read_changed(files, cached, read_deck_text, stats, then=parse_soon)  # (counted)
        parsing = {
            key: len(read[1])
            for key, read in reads.items()
            if read[1] is not None and (cached.get(key) or {}).get("sha256") != read[3]
        }
        to_parse = sum(parsing.values())
        kept = sum(e["size"] for key, e in cached.items() if key not in parsing)
        bulk = to_parse >= max(fillbatch.BULK_CHARS, kept) and not store.deck_cache_is_private()
        # few transactions, each of whole files; a big fill in bulk (fillbatch.py)
        with Batch(store, bulk=bulk) as batch:
            _fill_files(
                store,
                files,
                cached,
                reads,
                pool,
                now_ns,
                fill,
                progress,
                order,
                read_errors,
                digest,
                batch,
                outline,
                now,
            )
    finally:
        pool.close()

    def indexing() -> None:
        if fill is not None and progress is not None:
            fill.stage = INDEX
            progress(fill)

    # a bulk fill's id index and tags built (or those of one killed half-way); else nothing
    store.deck_cache_bulk_finish(_fields_of(Card).index("tags"), indexing)
    digest.update(json.dumps(sorted(demo_names) if demo_names is not None else None).encode())
    return assembly.assemble_cached(
        store,
        files,
        cached,
        order,
        read_errors,
        digest,
        demo_names,
        warnings,
        fill,
        progress,
        outline,
        now=now,
        retry=tries > 1 and not store.deck_cache_is_private(),  # (TEMP tables: this one's)
    )


def _fill_files(
    store: Store,
    files: list[tuple[str, Path, str]],
    cached: dict[str, Any],
    reads: dict[str, Any],
    pool: ParsePool,
    now_ns: int,
    fill: Fill | None,
    progress: Progress | None,
    order: list[tuple[str, str]],
    read_errors: list[DeckError],
    digest: Any,
    batch: Batch,
    outline: dict[str, list[CardRef]] | None,
    now: dict[str, tuple[list[tuple[str, int]], bool]],
) -> None:
    """Each file's cached parse kept, refreshed or replaced; ``outline`` and ``now`` get the
    outline, the declared ids and whether any card lists an alias, of each file parsed now."""
    no_aliases = assembly.no_aliases()
    for key, path, shown in files:
        entry = cached.get(key)
        if key not in reads:
            assert entry is not None  # (only a cached file is left unread)
            sha = entry["sha256"]
        else:
            st, text, error, sha = reads.pop(key)
            if error is not None:
                read_errors.append(error)
                digest.update(f"{key}\0{error.line}\0{error.message}\n".encode())
                continue
            assert text is not None and st is not None
            # (a parse does not depend on how the path is shown: names are added on load)
            if entry is not None and entry["sha256"] == sha:
                batch.begin()
                store.deck_cache_touch(key, st.st_size, st.st_mtime_ns, now_ns, file_ident(st))
            else:
                if fill is not None and progress is not None:
                    fill.stage, fill.file = PARSE, shown
                    progress(fill)
                batch.pause(pool.ready(key, len(text)))  # (no lock held while waiting)
                info, rows, errors = pool.result(key, _parse, text, shown, path.stem)
                if fill is not None and progress is not None:
                    fill.stage, fill.cards = STORE, fill.cards + len(rows)
                    progress(fill)
                batch.begin()
                store.deck_cache_put(
                    key,
                    tags=not batch.bulk,
                    shown=shown,
                    size=st.st_size,
                    mtime_ns=st.st_mtime_ns,
                    sha256=sha,
                    checked_ns=now_ns,
                    ident=file_ident(st),
                    info=None if info is None else _info_json(info),
                    declared=[] if info is None else info.declared,
                    errors=[(e.line, e.message) for e in errors],
                    cards=rows,
                )
                if outline is not None:  # (built here, while the workers parse on)
                    outline[key], aliases = _outline(rows, shown, no_aliases)
                    now[key] = ([] if info is None else info.declared, aliases)
            if fill is not None and st is not None:
                fill.files_done += 1
                fill.bytes_done += st.st_size
        digest.update(f"{key}\0{sha}\n".encode())
        order.append((key, shown))


def _outline(
    rows: list[tuple[Any, ...]], shown: str, no_aliases: tuple[str, ...]
) -> tuple[list[CardRef], bool]:
    """The outline of a file's cache rows (as ``_refs`` reads it back), and whether any of its
    cards lists an alias (its JSON does not end as ``no_aliases``), built column by column
    with zip and map: no Python code per card (a million of them in a big fill)."""
    if not rows:
        return [], False
    lines, ids, decks, parents, demos, _, _, data, *_ = zip(*rows, strict=True)
    split = {d: tuple(d.split(",")) if d else () for d in set(demos)}  # (a deck's few)
    fields = zip(ids, decks, parents, map(split.__getitem__, demos), repeat(shown), lines)
    refs: list[CardRef] = list(map(tuple.__new__, repeat(CardRef), fields))  # CardRef._make
    return refs, not all(map(str.endswith, data, repeat(no_aliases)))
