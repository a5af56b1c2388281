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
their result is read back with the cards. Cards are not built at open: the collection holds a
light outline (id, deck, parent) and builds a Card from its cached fields the first time it
is asked for (``get``), or all at once when a caller walks ``cards``.

Progress is reconciled with the decks (the store's reconcile) only when the decks changed
since the last reconciliation, in SQL against the cached outline, never by hashing every card.

The entries of deck files that no longer exist on disk (a deck folder deleted or moved) are
dropped as the decks load; those of files only not named this time are kept (``_prune``).

``prep check`` does not use the cache: it parses and validates every file.

Size: about 690 lines: the loader (``load``, the format key, filling the cache with its
progress) and the collection it returns (``CachedCollection``, which reads the cache lazily)
share the cache's layout. The next split is ``CachedCollection`` into its own module.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import time
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager, suppress
from dataclasses import dataclass, fields
from functools import cache
from itertools import repeat
from operator import itemgetter
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
    return json.dumps([getattr(card, f) for f in _fields_of(Card)], ensure_ascii=False)


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
    """A Collection over the deck cache: only the ids in memory (in order, with where each
    card is cached); a Card is built the first time it is asked for, and the outline (deck,
    parent, demos of every card) is read only by the calls that walk every card."""

    def __init__(
        self,
        store: Store,
        files: list[tuple[str, str]],
        rows: dict[str, list[tuple[int, str, int]]],
        decks: dict[str, DeckInfo],
        errors: list[DeckError],
    ) -> None:
        # Collection's own fields, but ``cards`` is built on demand (see the property)
        self.decks = decks
        self.errors = errors
        self.warnings: list[DeckError] = []
        self._store = store
        self._files = files  # (cache key, shown name) of each file, in order
        # the cards kept of each file (not left out as duplicates: their ids are unique)
        self._kept = {key: _kept(rows[key]) for key, _ in files}
        self._count = sum(map(len, self._kept.values()))
        self._where_map: dict[str, tuple[str, int, str]] | None = None
        self._built: dict[str, Card] = {}
        self._refs: list[CardRef] | None = None
        self._all: list[Card] | None = None
        self._citing: list[tuple[str, tuple[str, ...]]] | None = None  # cards citing a demo

    @property
    def _where(self) -> dict[str, tuple[str, int, str]]:
        """id -> (key, line, shown) of each card kept, built on first use (`prep stats` needs
        only the counts); by map/zip, not a Python loop per card."""
        if self._where_map is None:
            where: dict[str, tuple[str, int, str]] = {}
            for key, shown in self._files:
                kept = self._kept[key]
                places = zip(repeat(key), map(_LINE, kept), repeat(shown))
                where.update(zip(map(_ID, kept), places, strict=True))
            self._where_map = where
        return self._where_map

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
        where = self._where.get(card_id)
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
        where = self._where.get(card_id)
        if where is None:
            return None
        row = self._store.deck_cache_card(where[0], where[1], card_id)
        return None if row is None else row[5]

    def __contains__(self, card_id: object) -> bool:
        return card_id in self._where

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
                for line, cid, demos in self._store.deck_cache_citing(key)
                if self._kept_at(key, line, cid)
            ]
        return [cid for cid, demos in self._citing if name in demos]

    def _kept_at(self, key: str, line: int, cid: str) -> bool:
        """Whether the card ``cid`` at ``line`` of file ``key`` is one of this collection's
        (another prep may have parsed an edited file since): by bisection in the file's kept
        rows, without the map of every id."""
        kept = self._kept[key]
        i = bisect_left(kept, (line,))
        return i < len(kept) and kept[i][0] == line and kept[i][1] == cid

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
        seen = {deck: n for deck, (n, _) in store.deck_progress(0.0).items()}
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
        return {
            name: sum(len(self._kept[key]) for _, key in self._deck_files(name))
            for name in self.decks
        }

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
                for row_key, cid, deck, parent, parent_seen in rows:
                    # as ``unseen``: only this collection's cards are served
                    if self._kept_at(key, row_key & 0xFFFFFFFF, cid):
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


_LINE, _ID, _DUP = itemgetter(0), itemgetter(1), itemgetter(2)  # of deck_cache_ids' rows


def _kept(rows: list[tuple[int, str, int]]) -> list[tuple[int, str, int]]:
    """The rows of one file not left out as duplicates (usually all of them, as they are)."""
    return [r for r in rows if not r[2]] if any(map(_DUP, rows)) else rows


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
    rows = [
        (
            c.line,
            c.id,
            c.deck,
            c.parent,
            ",".join(c.demos),
            list(c.tags),
            c.content_hash,
            card_fields(c),
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
    try:
        _fill_files(
            store, files, cached, reads, pool, now_ns, fill, progress, order, read_errors, digest
        )
    finally:
        pool.close()
    digest.update(json.dumps(sorted(demo_names) if demo_names is not None else None).encode())
    return _assemble(
        store, files, cached, order, read_errors, digest, demo_names, warnings, fill, progress
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
                store.deck_cache_touch(key, st.st_size, st.st_mtime_ns, now_ns, file_ident(st))
            else:
                if fill is not None and progress is not None:
                    fill.stage, fill.file = PARSE, shown
                    progress(fill)
                info, rows, errors = pool.result(key, _parse, text, shown, path.stem)
                if fill is not None and progress is not None:
                    fill.stage, fill.cards = STORE, fill.cards + len(rows)
                    progress(fill)
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
        refs_by_file = {key: _refs(store, key, shown) for key, shown in order}
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
        assembled = {
            "errors": [[e.file, e.line, e.message] for e in coll.errors],
            "excluded_keys": excluded,
            "renamed": renamed,
        }
        store.deck_cache_save_assembly(state_key, keys, assembled)
    rows = {key: store.deck_cache_ids(key) for key in keys}  # (line, id, duplicate)
    decks: dict[str, DeckInfo] = {}
    errors = [DeckError(f, line, m) for f, line, m in assembled["errors"]]
    coll = CachedCollection(store, order, rows, decks, errors)
    coll.warnings = warnings
    for key, shown in order:
        info, _ = _info_and_errors(parsed[key], shown, [])
        if info is None or shown not in assembled["renamed"]:
            continue  # unparsable, or its deck name is already used (its cards left out)
        info.name = assembled["renamed"][shown]
        # as load_collection: the file's valid ids that are in the collection (a duplicate
        # id is listed under both decks, its card is the first one)
        file_rows = rows[key]
        if any(map(_DUP, file_rows)):
            where = coll._where  # `cid in coll`, without a method call per card
            info.card_ids = [cid for _, cid, _ in file_rows if cid in where]
        else:  # every card of the file was kept, so is in the collection
            info.card_ids = list(map(_ID, file_rows))
        decks[info.name] = info
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
        kept = {r.line for r in refs[key] if coll.get(r.id) is r}
        for line, cid, alias in store.deck_cache_alias_claims(key, field):
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
