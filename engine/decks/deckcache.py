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
dropped as the decks load; those of files only not named this time are kept (``_prune``).

``prep check`` does not use the cache: it parses and validates every file.

Size: about 770 lines: the loader (``load``, the format key, filling the cache with its
progress) and the collection it returns (``CachedCollection``, which reads the cache lazily)
share the cache's layout. The next split is ``CachedCollection`` into its own module (left
for after this round's merges: several issues edit it).
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager, suppress
from dataclasses import dataclass, fields
from functools import cache, partial
from itertools import repeat
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prep.engine.decks.changed import (  # noqa: F401 - pending_fill: the front ends' question
    PARSER_SALT,
    RACY_NS,
    _fresh,
    _read_changed,
    _to_fill,
    file_ident,
    pending_fill,
)
from prep.engine.decks.deck import (
    KINDS,
    LEVELS,
    Card,
    Collection,
    DeckError,
    DeckInfo,
    assemble,
    collect_deck_files,
    load_collection,
    parse_deck_text,
    read_deck_text,
)
from prep.engine.decks.fill import CHECK, DONE, PARSE, RECONCILE, STORE, Fill, Progress
from prep.engine.decks.fillbatch import Batch
from prep.engine.decks.parsepool import ParsePool

if TYPE_CHECKING:
    from prep.engine.store import Store

# Part of every assembly's key: raised when the checks across files change, so that a cached
# result of older checks is never served (2: duplicate deck names refused, cards that can
# never be served left out, as deck.load_collection does since the hardening).
ASSEMBLY_VERSION = 2

# The cache's format: a database whose cache was written under any other format has it dropped
# and rebuilt before anything is read from it (the (size, mtime) fast path included):
# ``format_key()`` hashes the loader's version (raised whenever parse_deck_text accepts less
# or parses differently), Card's fields read from the dataclass itself (adding, removing,
# renaming or retyping a field changes the key with no version to remember) and the assembly's
# version; the store keeps it beside the cached rows.
LOADER_VERSION = 2
_EXCLUDED = ("id", "deck", "file", "line", "parent")


@cache
def _fields_of(card_class: type) -> tuple[str, ...]:
    """The Card fields kept in the cache's JSON, in Card's order (id, deck and parent are
    columns of their own; file and line are the cache entry's)."""
    return tuple(f.name for f in fields(card_class) if f.name not in _EXCLUDED)


def format_key() -> str:
    """What a cached parse depends on besides the files' text: the loader's version, Card's
    fields (names and declared types, from the class as it is now) and the assembly's version."""
    card = [[f.name, str(f.type)] for f in fields(Card)]
    spec = {"loader": LOADER_VERSION, "card": card, "assembly": ASSEMBLY_VERSION}
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


_TUPLES = frozenset({"choices", "demos", "tags", "sources", "bullets", "points", "aliases"})


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


@dataclass(frozen=True, slots=True)
class CardRef:
    """What the checks across files and the queue need of a card, without its text."""

    id: str
    deck: str
    parent: str | None
    demos: tuple[str, ...]
    file: str
    line: int


def card_fields(card: Card) -> str:
    """The cached form of a card's content (JSON list in ``_fields_of(Card)`` order)."""
    return _TO_JSON([getattr(card, f) for f in _fields_of(Card)])


# json.dumps(value, ensure_ascii=False) without an encoder built per call (a fill: every card)
_TO_JSON = json.JSONEncoder(ensure_ascii=False).encode


def card_from_fields(
    data: str, *, card_id: str, deck: str, parent: str | None, file: str, line: int
) -> Card:
    values = json.loads(data)
    names = _fields_of(Card)
    if len(values) < len(names):  # cached before a field was added (the field's default)
        defaults = {f.name: f.default for f in fields(Card)}
        values += [defaults[f] for f in names[len(values) :]]
    kw: dict[str, Any] = {
        f: tuple(v) if f in _TUPLES else v for f, v in zip(names, values, strict=True)
    }
    return Card(id=card_id, deck=deck, parent=parent, file=file, line=line, **kw)


class CachedCollection(Collection):
    """A Collection over the deck cache that reads no more than it is asked for: opening it
    reads each file's size (kept in the assembly) and nothing per card; a card is found by
    its id through the cache's id index and built the first time it is asked for
    (``get``); the map of every id, and the outline (deck, parent, demos of every card), are
    read only by the calls that walk every card (``cards``, ``refs``, ``in_deck``...).

    Which cards are in it is fixed when it is loaded: the loaded files (in order, each with
    the hash of the text cached for it) less the cards the checks across files left out
    (``excluded``: duplicate ids, usually none). The cache is read live, so a row counts only
    while its file still holds the text loaded: once another prep has parsed an edited file,
    that file's rows are not this collection's, but a card found before (the day's queue: its
    due cards looked up, its new cards read) is followed to where it is now by ``get``."""

    def __init__(
        self,
        store: Store,
        files: list[tuple[str, str]],
        sizes: dict[str, int],
        decks: dict[str, DeckInfo],
        errors: list[DeckError],
        excluded: AbstractSet[tuple[str, int]] = frozenset(),
        fids: dict[str, tuple[int, str]] | None = None,
    ) -> None:
        # Collection's own fields, but ``cards`` is built on demand (see the property)
        self.decks = decks
        self.errors = errors
        self.warnings: list[DeckError] = []
        self._store = store
        self._files = files  # (cache key, shown name) of each file, in order
        self._shown = dict(files)
        self._place = {key: i for i, (key, _) in enumerate(files)}  # a file's place in order
        self._sizes = sizes  # the cards kept of each file
        self._excluded = excluded  # (key, line) of each card left out (a duplicate id)
        self._count = sum(sizes.values())
        # each file's id in the cache and the hash of the text loaded (read at load)
        self._fids = store.deck_cache_fids(self._shown) if fids is None else fids
        self._key_of = {fid: key for key, (fid, _) in self._fids.items()}
        self._found: dict[str, tuple[str, int, str] | None] = {}  # ids looked up one by one
        self._rows: dict[str, list[tuple[int, str, int]]] = {}  # each file's kept rows, read once
        self._where_map: dict[str, tuple[str, int, str]] | None = None
        self._built: dict[str, Card] = {}
        self._refs: list[CardRef] | None = None
        self._all: list[Card] | None = None
        self._citing: list[tuple[str, tuple[str, ...]]] | None = None  # cards citing a demo

    def _kept(self, key: str) -> list[tuple[int, str, int]]:
        """(line, id, dup) of the cards of one file that are in the collection, in order
        (read from the cache's covering index the first time a file is walked)."""
        rows = self._rows.get(key)
        if rows is None:
            # (none once another prep has parsed an edited file: not this collection's rows)
            rows = self._store.deck_cache_ids(key) if self._unchanged(key) else []
            if self._excluded:
                rows = [r for r in rows if (key, r[0]) not in self._excluded]
            self._rows[key] = rows
        return rows

    @property
    def _where(self) -> dict[str, tuple[str, int, str]]:
        """id -> (key, line, shown) of every card kept, built on first use by the calls that
        walk every card (the queue, a card shown, the counts never need it); by map/zip, not
        a Python loop per card."""
        if self._where_map is None:
            where: dict[str, tuple[str, int, str]] = {}
            for key, shown in self._files:
                kept = self._kept(key)
                places = zip(repeat(key), map(_LINE, kept), repeat(shown))
                where.update(zip(map(_ID, kept), places, strict=True))
            self._where_map = where
        return self._where_map

    def _locate(self, card_id: str) -> tuple[str, int, str] | None:
        """(key, line, shown) of the card ``card_id``: from the map of every id once it is
        built, else one lookup in the cache's id index (its entry in the first loaded file
        that holds it and did not leave it out)."""
        if self._where_map is not None:
            return self._where_map.get(card_id)
        if card_id in self._found:
            return self._found[card_id]
        best: tuple[int, str, int] | None = None
        for fid, line, sha in self._store.deck_cache_locate(card_id):
            key = self._key_of.get(fid)
            if key is None or sha != self._fids[key][1] or (key, line) in self._excluded:
                continue  # a file not loaded here or parsed again since, or a card left out
            if best is None or (self._place[key], line) < best[::2]:
                best = (self._place[key], key, line)
        found = None if best is None else (best[1], best[2], self._shown[best[1]])
        if len(self._found) < 100_000:  # (a caller walking every id builds the map instead)
            self._found[card_id] = found
        return found

    def refs(self) -> list[CardRef]:
        """Every card's outline, in order (read from the cache on first use)."""
        if self._refs is None:
            self._refs = [
                r
                for key, shown in self._files
                for r in _refs(self._store, key, shown)
                if self._where.get(r.id, (None, None))[:2] == (key, r.line)
            ]
        return self._refs

    @property
    def cards(self) -> list[Card]:  # type: ignore[override]  # (built on first use)
        if self._all is None:
            data: dict[tuple[str, int], str] = {}
            for key, line, text in self._store.deck_cache_card_data([k for k, _ in self._files]):
                data[key, line] = text
            self._all = [
                self._built.get(r.id) or self._build(r, data[self._where[r.id][:2]])
                for r in self.refs()
            ]
        return self._all

    def _build(self, ref: CardRef, data: str) -> Card:
        card = card_from_fields(
            data, card_id=ref.id, deck=ref.deck, parent=ref.parent, file=ref.file, line=ref.line
        )
        self._built[ref.id] = card
        return card

    def add(self, card: Card) -> None:
        raise TypeError("a cached collection is read-only; load_collection() builds one to edit")

    def get(self, card_id: str) -> Card | None:
        card = self._built.get(card_id)
        if card is not None:
            return card
        where = self._locate(card_id)
        if where is None:
            return None
        key, line, shown = where
        row = self._store.deck_cache_card(key, line, card_id)
        if row is None:  # another prep re-read an edited deck that no longer holds it
            return None
        line, deck, parent, demos, data, _ = row
        return self._build(CardRef(card_id, deck, parent, _demos(demos), shown, line), data)

    def content_hash_now(self, card_id: str) -> str | None:
        """The hash of the card's text in the deck cache now: another prep may have re-read
        an edited deck since this collection was loaded."""
        where = self._locate(card_id)
        if where is None:
            return None
        row = self._store.deck_cache_card(where[0], where[1], card_id)
        return None if row is None else row[5]

    def __contains__(self, card_id: object) -> bool:
        return isinstance(card_id, str) and self._locate(card_id) is not None

    def __len__(self) -> int:
        return self._count  # len(self._where), without building it

    def outline(self) -> Iterator[tuple[str, str, str | None]]:
        return ((r.id, r.deck, r.parent) for r in self.refs())

    def children(self, card_id: str) -> list[Card]:
        return [c for r in self.refs() if r.parent == card_id and (c := self.get(r.id))]

    def cards_for_demo(self, name: str) -> list[Card]:
        return [c for cid in self.ids_for_demo(name) if (c := self.get(cid))]

    def ids_for_demo(self, name: str) -> list[str]:
        """From the index of the cards that cite a demo: no other card is read or built."""
        if self._citing is None:  # read once: `prep demo --list` asks for every demo
            self._citing = [
                (cid, _demos(demos))
                for key, _ in self._files
                if self._unchanged(key)
                for line, cid, demos in self._store.deck_cache_citing(key)
                if (key, line) not in self._excluded
            ]
        return [cid for cid, demos in self._citing if name in demos]

    def _unchanged(self, key: str) -> bool:
        """Whether the cache still holds the text of file ``key`` this collection loaded."""
        entry = self._fids.get(key)
        return entry is not None and self._store.deck_cache_sha(entry[0]) == entry[1]

    def in_deck(self, deck: str | None) -> list[Card]:
        """The cards of ``deck`` (all cards for None), in order: a deck is one file, whose
        outline and text are read in one pass each (not a walk over every card per deck)."""
        if deck is None:
            return list(self.cards)
        where, shown_of = self._where, dict(self._files)
        out = []
        for _, key in self._deck_files(deck):
            data = {line: text for _, line, text in self._store.deck_cache_card_data([key])}
            for ref in _refs(self._store, key, shown_of[key]):
                if where.get(ref.id, (None, None))[:2] == (key, ref.line):
                    out.append(self._built.get(ref.id) or self._build(ref, data[ref.line]))
        return out

    def reconcile(self, store: Store) -> None:
        """Nothing to do: ``load`` reconciled the store with these decks when they changed."""

    def tag_progress(self, store: Store, mature_days: float) -> dict[str, tuple[int, int, int]]:
        return self._store.deck_cache_tag_progress(mature_days)

    def unseen_by_deck(self, store: Store) -> dict[str, int]:
        """How many cards of each deck have no progress, from two counts: the deck's size
        and its cards with progress (grouped in SQL over the live cards, which ``load``'s
        reconciliation keeps to these decks), without reading the cards one by one."""
        seen = store.seen_per_deck()
        return {deck: max(0, n - seen.get(deck, 0)) for deck, n in self.deck_sizes().items()}

    def _deck_files(
        self, deck: str | None, among: AbstractSet[str] | None = None
    ) -> list[tuple[int, str]]:
        """(order, cache key) of the loaded files whose cards are in the collection (a deck
        is one file: a second file of the same deck name has its cards left out), of
        ``deck`` and of the decks ``among`` when given."""
        named = {
            info.file
            for name, info in self.decks.items()
            if (deck is None or name == deck) and (among is None or name in among)
        }
        return [(i, key) for i, (key, shown) in enumerate(self._files) if shown in named]

    def deck_sizes(self) -> dict[str, int]:
        """Cards per deck, from each file's count (one pass over the files)."""
        deck_of = {info.file: name for name, info in self.decks.items()}
        sizes = dict.fromkeys(self.decks, 0)
        for key, shown in self._files:
            name = deck_of.get(shown)
            if name is not None:
                sizes[name] += self._sizes[key]
        return sizes

    def deck_ids(self, key: str) -> list[str]:
        """The ids of the file ``key``'s valid cards that are in the collection, in order (as
        load_collection: a duplicate id is listed under both decks, its card is the first)."""
        rows = self._store.deck_cache_ids(key) if self._unchanged(key) else []
        if not any(k == key for k, _ in self._excluded):
            return list(map(_ID, rows))  # every card of the file was kept
        where = self._where
        return [cid for _, cid, _ in rows if cid in where]

    def new_card_groups(
        self,
        store: Store,
        deck: str | None = None,
        seen: set[str] | None = None,
        among: AbstractSet[str] | None = None,
    ) -> list[Iterator[tuple[Any, str, str, str, str | None, bool]]]:
        """One group per (level, kind): the files in curriculum order (deck rank), each an
        index range of the (kind, level, key) index read from SQL in growing steps as the
        rotation asks (a level or kind a file lacks costs one probe)."""
        ranks = self.deck_ranks()
        name_of = {info.file: name for name, info in self.decks.items()}
        shown_of = dict(self._files)
        files = sorted(
            (ranks.get(name_of.get(shown_of[key], ""), len(ranks)), order, key)
            for order, key in self._deck_files(deck, among)
        )
        return [
            self._unseen_in_level(level, kind, files)
            for level in range(len(LEVELS))
            for kind in KINDS
        ]

    def _unseen_in_level(
        self, level: int, kind: str, files: list[tuple[int, int, str]]
    ) -> Iterator[tuple[Any, str, str, str, str | None, bool]]:
        for rank, order, key in files:
            after, size = None, 2  # the first card places the group; then growing steps
            while True:
                rows = self._store.deck_cache_unseen_from(key, kind, after, size, level)
                if not self._unchanged(key):
                    break  # parsed again by another prep since: not this collection's rows
                for row_key, cid, deck, parent, parent_seen in rows:
                    line = row_key & 0xFFFFFFFF
                    if (key, line) not in self._excluded:
                        # found here: followed by ``get`` even once another prep re-reads it
                        self._found.setdefault(cid, (key, line, self._shown[key]))
                        yield (level, rank, order, row_key), cid, deck, kind, parent, parent_seen
                if len(rows) < size:
                    break
                after, size = rows[-1][0], min(8 * size, 4096)

    def unseen(
        self, store: Store, deck: str | None = None, seen: set[str] | None = None
    ) -> Iterator[tuple[str, str, str, str | None, bool]]:
        # a collection loaded by another process with other decks may have re-ordered the
        # cache meanwhile: only this collection's cards are served
        return (u for u in self._store.deck_cache_unseen(deck) if u[0] in self._where)


_LINE, _ID = itemgetter(0), itemgetter(1)  # of deck_cache_ids' rows


class _CachedDeckInfo(DeckInfo):
    """A deck of the cached collection: its card ids are read from the cache the first time
    they are asked for (a cold open needs the deck's name and size, not its ids)."""

    _ids: list[str] | None
    _read: Callable[[], list[str]]

    @classmethod
    def of(cls, info: DeckInfo, read: Callable[[], list[str]]) -> _CachedDeckInfo:
        out = cls(**{f.name: getattr(info, f.name) for f in fields(DeckInfo)})
        out._ids, out._read = None, read
        return out

    @property  # type: ignore[override]  # (a field of DeckInfo, read on first use here)
    def card_ids(self) -> list[str]:
        if self._ids is None:
            self._ids = self._read()
        return self._ids

    @card_ids.setter
    def card_ids(self, value: list[str]) -> None:
        self._ids = value


def _demos(text: str) -> tuple[str, ...]:
    return tuple(text.split(",")) if text else ()


def _refs(store: Store, key: str, shown: str) -> list[CardRef]:
    return [
        CardRef(cid, deck, parent, _demos(demos), shown, line)
        for _, line, cid, deck, parent, demos in store.deck_cache_outline([key])
    ]


def _parse(text: str, shown: str, stem: str):
    return parse_rows(text, shown, stem)


def parse_rows(
    text: str, shown: str, stem: str
) -> tuple[DeckInfo | None, list[tuple[Any, ...]], list[DeckError]]:
    """``parse_deck_text`` with each card as the row the cache stores: done where the file is
    parsed (in a worker of the parse pool, for a big fill), so that the process filling the
    cache only writes rows."""
    info, cards, errors = parse_deck_text(text, shown, stem)
    values = attrgetter(*_fields_of(Card))  # card_fields(c) is _TO_JSON(values(c)): a tuple
    rows = [
        (
            c.line,
            c.id,
            c.deck,
            c.parent,
            ",".join(c.demos),
            list(c.tags),
            c.content_hash,
            _TO_JSON(values(c)),
            c.kind,
            c.level_rank,
        )
        for c in cards
    ]
    return info, rows, errors


def load(
    store: Store,
    paths: Iterable[Path] | None = None,
    *,
    demo_names: Sequence[str] | None = None,
    include_bundled: bool = True,
    progress: Progress | None = None,
) -> Collection:
    """``deck.load_collection`` through the cache in ``store`` (same cards, errors, order),
    and the store's progress reconciled with the decks if they changed since the last time.
    A database that cannot be written (read-only, busy) still opens: the decks are then
    parsed as ``load_collection`` does, and reconciled by the caller (``Collection.reconcile``).
    ``progress`` is called with a Fill as each changed file is parsed and stored (fill.py)."""
    from prep.engine.store import StoreError

    try:
        with gc_paused():  # a hundred thousand small objects, none of them garbage
            return _load(store, paths, demo_names, include_bundled, progress)
    except StoreError:
        return load_collection(paths, demo_names=demo_names, include_bundled=include_bundled)


def _load(
    store: Store,
    paths: Iterable[Path] | None,
    demo_names: Sequence[str] | None,
    include_bundled: bool,
    progress: Progress | None = None,
) -> Collection:
    warnings: list[DeckError] = []
    files = collect_deck_files(paths, include_bundled, warnings)  # as load_collection
    fmt_key = format_key()
    if store.deck_cache_format() != fmt_key:
        # written by another version of the loader, Card or the checks: nothing of it is
        # trusted, not even the (size, mtime) of an unchanged file (progress is not touched)
        store.deck_cache_reset(fmt_key)
    cached = store.deck_cache_files()
    now_ns = time.time_ns()
    fill = _to_fill(files, cached) if progress is not None else None
    order: list[tuple[str, str]] = []  # (cache key, shown) of each readable deck file
    read_errors: list[DeckError] = []
    digest = hashlib.sha256(f"format {fmt_key}\n".encode())
    reads = _read_changed(files, cached, read_deck_text)  # (tests count the reads)
    jobs = [
        (key, text, shown, path.stem)
        for key, path, shown in files
        if (read := reads.get(key)) is not None
        and (text := read[1]) is not None
        and (cached.get(key) or {}).get("sha256") != read[3]
    ]
    pool = ParsePool(jobs, sum(len(j[1]) for j in jobs))  # both cores, for a big fill
    outline: dict[str, list[CardRef]] = {}  # of each file parsed now (the checks read it)
    try:
        with Batch(store) as batch:  # few transactions, each of whole files (fillbatch.py)
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
            )
    finally:
        pool.close()
    digest.update(json.dumps(sorted(demo_names) if demo_names is not None else None).encode())
    return _assemble(
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
) -> None:
    for key, path, shown in files:
        entry = cached.get(key)
        if key not in reads:
            assert entry is not None  # (only a cached file is left unread)
            sha = entry["sha256"]
        else:
            st, text, error, sha = reads.pop(key)
            if error is not None:
                read_errors.append(error)
                digest.update(f"{key}\0{error}\n".encode())
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
                    outline[key] = [
                        CardRef(cid, deck, parent, _demos(demos), shown, line)
                        for line, cid, deck, parent, demos, *_ in rows
                    ]
            if fill is not None and st is not None:
                fill.files_done += 1
                fill.bytes_done += st.st_size
        digest.update(f"{key}\0{shown}\0{sha}\n".encode())
        order.append((key, shown))


def _assemble(
    store: Store,
    files: list[tuple[str, Path, str]],
    cached: dict[str, Any],
    order: list[tuple[str, str]],
    read_errors: list[DeckError],
    digest: Any,
    demo_names: Sequence[str] | None,
    warnings: list[DeckError],
    fill: Fill | None,
    progress: Progress | None,
    outline: dict[str, list[CardRef]] | None = None,
) -> Collection:
    state_key = digest.hexdigest()

    keys = [k for k, _ in order]
    parsed = store.deck_cache_parsed(keys)  # key -> (info json | None, errors)
    assembled = store.deck_cache_assembly(state_key)
    if assembled is None:
        if fill is not None and progress is not None and fill.files_total:
            fill.stage = CHECK
            progress(fill)
        # the checks across files, on the outline of every card (only after a change)
        # (the files parsed now: as they were written, without reading them back)
        known = outline or {}
        refs_by_file = {
            key: known[key] if key in known else _refs(store, key, shown) for key, shown in order
        }
        declared = store.deck_cache_declared(keys)
        coll = Collection()
        coll.errors.extend(read_errors)
        assemble(
            coll,
            (
                (shown, *_info_and_errors(parsed[key], shown, declared[key]), refs_by_file[key])
                for key, shown in order
            ),
            demo_names,
        )
        excluded = [
            [key, r.line] for key in keys for r in refs_by_file[key] if coll.get(r.id) is not r
        ]
        _check_aliases(store, coll, order, refs_by_file)
        renamed = {info.file: name for name, info in coll.decks.items()}
        dropped = {(key, line) for key, line in excluded}
        assembled = {
            "errors": [[e.file, e.line, e.message] for e in coll.errors],
            "excluded_keys": excluded,
            "renamed": renamed,
            # the cards each file keeps: a later open counts without reading them
            "sizes": {
                key: sum((key, r.line) not in dropped for r in refs_by_file[key]) for key in keys
            },
        }
        store.deck_cache_save_assembly(state_key, keys, assembled)
    left_out = frozenset((key, line) for key, line in assembled["excluded_keys"])
    sizes = assembled.get("sizes")  # (an assembly saved before sizes were kept: counted)
    if sizes is None or set(sizes) != set(keys):
        counts = store.deck_cache_counts(keys)
        sizes = {key: counts[key] - sum(k == key for k, _ in left_out) for key in keys}
    decks: dict[str, DeckInfo] = {}
    errors = [DeckError(f, line, m) for f, line, m in assembled["errors"]]
    coll = CachedCollection(store, order, sizes, decks, errors, left_out)
    # (it reads each file's id and hash now: what it serves is what was loaded)
    coll.warnings = warnings
    for key, shown in order:
        info, _ = _info_and_errors(parsed[key], shown, [])
        if info is None or shown not in assembled["renamed"]:
            continue  # unparsable, or its deck name is already used (its cards left out)
        info.name = assembled["renamed"][shown]
        # its card ids, read from the cache when first asked for (a plan, a deck's list)
        decks[info.name] = _CachedDeckInfo.of(info, partial(coll.deck_ids, key))
    if store.deck_reconcile_key() != state_key:
        if fill is not None and progress is not None and fill.files_total:
            fill.stage = RECONCILE
            progress(fill)
        store.adopt_aliases(store.deck_cache_aliases(_fields_of(Card).index("aliases")))
        store.reconcile_with_deck_cache(state_key)
    _prune(store, cached, {key for key, _, _ in files})
    if fill is not None and progress is not None and fill.files_total:
        fill.stage = DONE
        progress(fill)
    return coll


def _check_aliases(
    store: Store, coll: Collection, order: list[tuple[str, str]], refs: dict[str, list[CardRef]]
) -> None:
    """The aliases' checks of ``assemble`` (which sees the cards' outline only), on the
    aliases of the cached cards that were kept."""
    from prep.engine.decks.aliases import alias_errors

    field = _fields_of(Card).index("aliases")
    entries = []
    for key, _ in order:
        claims = store.deck_cache_alias_claims(key, field)
        if not claims:
            continue  # (most files: no card of it lists an alias)
        kept = {r.line for r in refs[key] if coll.get(r.id) is r}
        for line, cid, alias in claims:
            if line in kept:
                ref = coll.get(cid)
                assert ref is not None  # (kept: its line is in ``kept``)
                entries.append((cid, (alias,), ref.file, line))
    if entries:
        coll.errors.extend(alias_errors(entries, coll))
        coll.errors.sort(key=lambda e: (e.file, e.line))


def _prune(store: Store, cached: dict[str, Any], loaded: set[str]) -> None:
    """Forget the cached parse of deck files that no longer exist (a deck folder deleted or
    moved), so that the cache does not keep their text forever. Only the entries of files
    not loaded now are looked at (one stat each, usually none), and only a file that is
    gone goes: one merely not named this time (``--questions A``, then ``--questions B``)
    keeps its entry, and progress (card states, reviews, marks) is never touched. Best
    effort: a database that refuses the write keeps the entries until a later open."""
    from prep.engine.store import StoreError

    gone = [key for key in cached if key not in loaded and _gone(key)]
    if gone:
        with suppress(StoreError):
            store.deck_cache_prune(gone)


def _gone(path: str) -> bool:
    """The file does not exist (any other failure, say a folder we may not read, is not
    taken as gone)."""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except (OSError, ValueError):
        return False
    return False


def _info_json(info: DeckInfo) -> str:
    return json.dumps(
        {
            "name": info.name,
            "title": info.title,
            "description": info.description,
            "line": info.line,
            "order": info.order,
        },
        ensure_ascii=False,
    )


def _info_and_errors(
    entry: tuple[str | None, list[tuple[int, str]]], shown: str, declared: list
) -> tuple[DeckInfo | None, list[DeckError]]:
    info_json, errors = entry
    deck_errors = [DeckError(shown, line, message) for line, message in errors]
    if info_json is None:
        return None, deck_errors
    d = json.loads(info_json)
    info = DeckInfo(
        name=d["name"],
        title=d["title"],
        description=d["description"],
        file=shown,
        line=d.get("line", 1),
        order=d.get("order"),
        declared=[(cid, line) for cid, line in declared],
    )
    return info, deck_errors
