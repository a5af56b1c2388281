"""The cards of the loaded decks, as the study loop reads them (engine/study/collection.py's
``Cards`` protocol): the one implementation, over the deck cache in the progress database.

Only each file's card count is read at open; a card is found by its id through the cache's id
index and built from its cached fields the first time it is asked for, and the outline (deck,
parent, demos of every card) is read only by the calls that walk every card. Unseen cards,
counts per deck and tag progress are asked of SQL, joined with progress in the same database.

Where the cards come from: ``deckcache.load`` (the deck files, through the cache: what every
front end opens; a database that cannot be written gets a cache private to its connection) or
``deckcache.from_parsed`` (decks parsed in memory: tests, benchmarks, decks built by hand),
which feeds them into a cache the same way. A collection asked about the progress of another
database than the one it is cached in (the ``store`` each progress question names) is fed into
that database's cache first (``_bind``), so every answer comes from one SQL over one database.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import fields
from functools import cache
from itertools import repeat
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from prep.engine.decks.deck import KINDS, LEVELS, Card, DeckError, DeckInfo, ParsedDecks

if TYPE_CHECKING:
    from prep.engine.store import Store
    from prep.engine.store.known import ShownRead

_EXCLUDED = ("id", "deck", "file", "line", "parent")


@cache
def _fields_of(card_class: type) -> tuple[str, ...]:
    """The Card fields kept in the cache's JSON, in Card's order (id, deck and parent are
    columns of their own; file and line are the cache entry's)."""
    return tuple(f.name for f in fields(card_class) if f.name not in _EXCLUDED)


_TUPLES = frozenset({"choices", "demos", "tags", "sources", "bullets", "points", "aliases"})


class CardRef(NamedTuple):
    """What the checks across files and the queue need of a card, without its text (a
    tuple: a fill builds one per card, ~4x cheaper than a frozen dataclass)."""

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
    data: str,
    *,
    card_id: str,
    deck: str,
    parent: str | None,
    file: str,
    line: int,
    content_hash: str | None = None,
) -> Card:
    """The Card of a deck cache row: ``data`` its fields, ``content_hash`` its ``chash``
    column (or None). The cache writes that column and ``data`` from one parsed card, each
    parse path through Card.content_hash's formula (fastdeck's ``cache_row`` and its fast
    path's copy of it; tests/test_cached_hash.py holds them equal), and the cache is reset
    when the loader or Card changes (deckcache.format_key): so a card shown takes its hash
    from the row, where it was computed again (JSON and sha256) each time it was built."""
    values = json.loads(data)
    names = _fields_of(Card)
    if len(values) < len(names):  # cached before a field was added (the field's default)
        defaults = {f.name: f.default for f in fields(Card)}
        values += [defaults[f] for f in names[len(values) :]]
    kw: dict[str, Any] = {
        f: tuple(v) if f in _TUPLES else v for f, v in zip(names, values, strict=True)
    }
    card = Card(id=card_id, deck=deck, parent=parent, file=file, line=line, **kw)
    if content_hash is not None:
        card.__dict__["content_hash"] = content_hash  # (the cached_property's own slot)
    return card


class CachedCollection:
    """The cards of the loaded decks over the deck cache that reads no more than it is asked for: opening it
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
        listed: Iterable[tuple[str, object, str]] = (),
    ) -> None:
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
        self._source: ParsedDecks | None = None  # what fed the cache (from_parsed; or built)
        # how it was loaded from the deck files (deckcache.load), to load again (``refresh``)
        self._reload: Callable[[], CachedCollection] | None = None
        # the deck files its paths listed when it was loaded (each as its path), and how to
        # list them again (``refresh``: a file added to or removed from a folder since)
        self._listed = frozenset(str(path) for _, path, _ in listed)
        self._listing: Callable[[], frozenset[str]] | None = None
        self.new_errors: list[DeckError] = []  # errors of a refresh, for a front end to show

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
            with self._store.deck_cache_snapshot():  # (each file's hash, then its rows)
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
        found = self._best(self._store.deck_cache_locate(card_id))
        if len(self._found) < 100_000:  # (a caller walking every id builds the map instead)
            self._found[card_id] = found
        return found

    def _best(self, rows: Iterable[tuple[int, int, str]]) -> tuple[str, int, str] | None:
        """Of the cached entries (file id, line, sha) of one id, the collection's: in the
        first loaded file that holds it as loaded and did not leave it out."""
        best: tuple[int, str, int] | None = None
        for fid, line, sha in rows:
            key = self._key_of.get(fid)
            if key is None or sha != self._fids[key][1] or (key, line) in self._excluded:
                continue  # a file not loaded here or parsed again since, or a card left out
            if best is None or (self._place[key], line) < best[::2]:
                best = (self._place[key], key, line)
        return None if best is None else (best[1], best[2], self._shown[best[1]])

    def known(self, card_ids: Iterable[str]) -> list[str]:
        """Those of ``card_ids`` that are cards of this collection, in the order given: ``in``
        for many ids at once (the ids not looked up yet in one query, not one query an id:
        the day's due cards)."""
        ids = list(card_ids)
        found: dict[str, tuple[str, int, str] | None] = {}
        if self._where_map is None:
            todo = list(dict.fromkeys(c for c in ids if c not in self._found))
            rows: dict[str, list[tuple[int, int, str]]] = {c: [] for c in todo}
            if todo:
                for cid, fid, line, sha in self._store.deck_cache_locate_many(todo):
                    rows[cid].append((fid, line, sha))
            found = {cid: self._best(entries) for cid, entries in rows.items()}
            if len(self._found) < 100_000:
                self._found.update(found)
        return [c for c in ids if (found[c] if c in found else self._locate(c)) is not None]

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
    def cards(self) -> list[Card]:
        """Every card, in order (built on first use)."""
        if self._all is None:
            data: dict[tuple[str, int], str] = {}
            with self._store.deck_cache_snapshot():  # (the text and the outline: one state)
                for key, line, text in self._store.deck_cache_card_data(
                    [k for k, _ in self._files]
                ):
                    data[key, line] = text
                refs = self.refs()
            self._all = [
                self._built.get(r.id) or self._build(r, data[self._where[r.id][:2]]) for r in refs
            ]
        return self._all

    def _build(self, ref: CardRef, data: str, content_hash: str | None = None) -> Card:
        card = card_from_fields(
            data,
            card_id=ref.id,
            deck=ref.deck,
            parent=ref.parent,
            file=ref.file,
            line=ref.line,
            content_hash=content_hash,
        )
        self._built[ref.id] = card
        return card

    def deck_ranks(self) -> dict[str, int]:
        """Each deck's place in the curriculum (0 first): the decks that declare ``order:`` by
        it (ties in file order), then the others in file order."""
        names = list(self.decks)
        ordered = sorted(
            range(len(names)),
            key=lambda i: (self.decks[names[i]].order is None, self.decks[names[i]].order or 0, i),
        )
        return {names[i]: rank for rank, i in enumerate(ordered)}

    def aliases(self) -> dict[str, str]:
        """{alias: the id of the card that kept it} for every usable alias (see
        engine/decks/aliases.py: one naming a live card, or claimed twice, is not usable)."""
        from prep.engine.decks.aliases import alias_map

        return alias_map(((c.id, c.aliases) for c in self.cards), self)

    def parsed(self) -> ParsedDecks:
        """These decks as a parse gives them (cards, decks, errors, warnings): what feeds
        another database's cache (``_bind``), an Anki package, a test's edits."""
        if self._source is None:
            decks = {
                name: DeckInfo(
                    name=info.name,
                    title=info.title,
                    description=info.description,
                    file=info.file,
                    card_ids=list(info.card_ids),
                    line=info.line,
                    order=info.order,
                )
                for name, info in self.decks.items()
            }
            self._source = ParsedDecks(
                cards=list(self.cards),
                decks=decks,
                errors=list(self.errors),
                warnings=list(self.warnings),
            )
        return self._source

    def _bind(self, store: Store) -> None:
        """Answer from ``store`` from now on: the collection's cards fed into its deck cache
        (the progress questions join the cards with progress in one database's SQL). Also
        when the entries a feed wrote are gone from this store's cache (dropped by a format
        change): they are written again."""
        if store is self._store and (self._source is None or self._all_cached()):
            return
        from prep.engine.decks.deckcache import from_parsed

        source = self.parsed()
        fresh = from_parsed(source, store)
        self.__dict__.update(fresh.__dict__)
        self._source = source

    def _all_cached(self) -> bool:
        """Whether the cache still holds every file this collection loaded, as loaded."""
        return self._store.deck_cache_fids(self._shown) == self._fids

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
        line, deck, parent, demos, data, chash = row
        return self._build(CardRef(card_id, deck, parent, _demos(demos), shown, line), data, chash)

    def shown(
        self, card_id: str, params: dict[str, Any] | None
    ) -> tuple[Card | None, ShownRead | None]:
        """The card (as ``get``) and what a card shown reads (Store.shown_card_text): a card
        not built yet is built from its row read in the same statement. (None, _): gone."""
        card = self._built.get(card_id)
        if card is not None:
            return card, self._store.shown_card_text(card_id, self.place(card_id), params)[1]
        where = self._locate(card_id)
        if where is None:
            return None, None
        key, line, shown = where
        row, read = self._store.shown_card_text(card_id, (key, line), params)
        if row is None:  # not at its line: moved or gone (another prep re-read the deck)
            row = self._store.deck_cache_card(key, line, card_id)
            if row is None:
                return None, read
        line, deck, parent, demos, data, chash = row
        ref = CardRef(card_id, deck, parent, _demos(demos), shown, line)
        return self._build(ref, data, chash), read

    def content_hash_now(self, card_id: str) -> str | None:
        """The hash of the card's text in the deck cache now: another prep may have re-read
        an edited deck since this collection was loaded."""
        where = self._locate(card_id)
        if where is None:
            return None
        row = self._store.deck_cache_card(where[0], where[1], card_id)
        return None if row is None else row[5]

    def place(self, card_id: str) -> tuple[str, int] | None:
        """(file, line) of the card in the deck cache, where content_hash_now reads it first:
        for a statement that reads its hash beside other things (Store.shown_card)."""
        where = self._locate(card_id)
        return None if where is None else (where[0], where[1])

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
            with self._store.deck_cache_snapshot():  # (each file's hash, then its rows)
                self._citing = self._cited()
        return [cid for cid, demos in self._citing if name in demos]

    def _cited(self) -> list[tuple[str, tuple[str, ...]]]:
        return [
            (cid, _demos(demos))
            for key, _ in self._files
            if self._unchanged(key)
            for line, cid, demos in self._store.deck_cache_citing(key)
            if (key, line) not in self._excluded
        ]

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
            with self._store.deck_cache_snapshot():  # (the text and the outline: one state)
                data = {line: text for _, line, text in self._store.deck_cache_card_data([key])}
                refs = _refs(self._store, key, shown_of[key])
            for ref in refs:
                if where.get(ref.id, (None, None))[:2] == (key, ref.line):
                    out.append(self._built.get(ref.id) or self._build(ref, data[ref.line]))
        return out

    def refresh(self, store: Store) -> bool:
        """Load again when another prep re-read one of this collection's deck files since (the
        cache holds another text for it), or when its folders list a deck file added or
        removed since: its added cards are then served, its removed ones not, without a
        restart. One statement and a listing of the folders when nothing changed (each
        file's hash; the names, no file read); a collection not loaded from files (fed), in
        another database, or one whose reload fails (the database busy) is kept as it is.
        Errors the reload found that were not there before (bad YAML in a new file) are in
        ``new_errors`` (``take_new_errors``). Returns whether it was loaded again."""
        from prep.engine.store import StoreError

        if self._reload is None or store is not self._store:
            return False
        listing = self._listing
        listed = None if listing is None else listing()
        if self._all_cached() and (listed is None or listed == self._listed):
            return False
        try:
            fresh = self._reload()
        except StoreError:
            return False  # (the next change seen tries again)
        reload, before, said = self._reload, set(map(str, self.errors)), self.new_errors
        self.__dict__.update(fresh.__dict__)
        self._reload, self._listing = reload, listing  # (and again at the next change)
        self._listed = self._listed if listed is None else listed  # (a file listed twice: once)
        self.new_errors = said + [e for e in self.errors if str(e) not in before]
        return True

    def take_new_errors(self) -> list[DeckError]:
        """The deck errors refreshes found since the last call (once each)."""
        said, self.new_errors = self.new_errors, []
        return said

    def reconcile(self, store: Store) -> None:
        """Progress reconciled with these decks: done by ``load`` (or the feed) when the
        decks changed, so only a collection cached in another database has work here, or
        one whose deck file another prep re-read since it was loaded (``refresh``)."""
        self._bind(store)
        self.refresh(store)

    def tag_progress(self, store: Store, mature_days: float) -> dict[str, tuple[int, int, int]]:
        """Per tag: (cards, seen, mature: stability of at least ``mature_days``)."""
        self._bind(store)
        return self._store.deck_cache_tag_progress(mature_days)

    def unseen_by_deck(self, store: Store) -> dict[str, int]:
        """How many cards of each deck have no progress, from two counts: the deck's size
        and its cards with progress (grouped in SQL over the live cards, which ``load``'s
        reconciliation keeps to these decks), without reading the cards one by one."""
        self._bind(store)
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
        parse_decks: a duplicate id is listed under both decks, its card is the first)."""
        with self._store.deck_cache_snapshot():  # (the file's hash, then its rows)
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
        self._bind(store)
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
        self._bind(store)
        return (u for u in self._store.deck_cache_unseen(deck) if u[0] in self._where)


_LINE, _ID = itemgetter(0), itemgetter(1)  # of deck_cache_ids' rows


class _CachedDeckInfo(DeckInfo):
    """A deck of the cached collection: its card ids are read from the cache the first time
    they are asked for (a cold open needs the deck's name and size, not its ids)."""

    _ids: list[str] | None
    _read: Callable[[], list[str]]

    @classmethod
    def of(cls, info: DeckInfo, read: Callable[[], list[str]]) -> _CachedDeckInfo:
        # DeckInfo's fields are its instance dict (a plain dataclass): copied as they are,
        # without dataclasses.fields() and a second __init__ for each of a million cards'
        # 256 decks at every start (~1 ms of the first card, issue 26)
        out = cls.__new__(cls)
        out.__dict__.update(info.__dict__)
        out.__dict__.pop("card_ids", None)  # (the property reads them when first asked for)
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
