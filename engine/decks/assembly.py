"""The collection a load serves, read from the deck cache's rows (engine/decks/deckcache.py's
module doc): the checks across files run on the cached outline (only when the state of the
decks changed; their result is saved for that state), progress reconciled with the decks,
the entries of deck files that are gone dropped. Both ways into the cache end here: the deck
files (``deckcache.load``) and decks parsed in memory (``fedcache.feed``)."""

from __future__ import annotations

import os
from contextlib import suppress
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prep.engine.decks.cachedinfo import info_and_errors as _info_and_errors
from prep.engine.decks.checks import assemble
from prep.engine.decks.collection import (
    _TO_JSON,
    CachedCollection,
    CardRef,
    _CachedDeckInfo,
    _fields_of,
    _refs,
)
from prep.engine.decks.deck import LEVELS, Card, DeckError, DeckInfo, ParsedDecks
from prep.engine.decks.fill import CHECK, DONE, RECONCILE, Fill, Progress

if TYPE_CHECKING:
    from collections.abc import Sequence

    from prep.engine.store import Store


def assemble_cached(
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
    *,
    now: dict[str, tuple[list[tuple[str, int]], bool]] | None = None,
    retry: bool = False,
) -> CachedCollection:
    """The collection of the files in ``order`` (filled, cached): the checks across files
    run (and saved) unless saved for this state. ``retry``: CacheChanged is raised when
    another prep dropped one of them from the cache since (a prune, a reset), for the caller
    to load again; otherwise such a file is served as one not cached any more (no card)."""
    state_key = digest.hexdigest()

    keys = [k for k, _ in order]
    # every read of the cache below from one snapshot (another prep may prune or reset it)
    with store.deck_cache_snapshot():
        parsed = store.deck_cache_parsed(keys)  # key -> (info json | None, errors)
        complete = len(parsed) == len(keys)  # (else pruned or reset by another prep since)
        if not complete:
            if retry:
                raise CacheChanged  # (the caller loads again: its fill puts them back)
            parsed = {key: parsed.get(key, (None, [])) for key in keys}  # (not cached any more)
        save = False
        assembled = store.deck_cache_assembly(state_key)
        shown_now = dict(order)
        if assembled is not None and assembled["errors"] and assembled.get("shown") != shown_now:
            assembled = None  # its messages name the files as shown from another folder
        worked = fill is not None and fill.files_total > 0  # (done: what the progress says)
        if assembled is None:
            worked = True
            save = complete  # (checks of a cache cut short: not kept for this state)
            _tell(fill, progress, stage=CHECK, step=0, steps=len(order) + 1)
            # the checks across files, on the outline of every card (only after a change)
            # (the files parsed now: as they were written, without reading them back)
            known = outline or {}
            refs_by_file = {}
            for i, (key, shown) in enumerate(order):
                refs_by_file[key] = known[key] if key in known else _refs(store, key, shown)
                _tell(fill, progress, step=i + 1)  # (file by file: a million cards take a while)
            now = now or {}  # (the files parsed now: their declared ids are not read back)
            declared = store.deck_cache_declared([key for key in keys if key not in now])
            declared.update((key, now[key][0]) for key in keys if key in now)
            coll = ParsedDecks()
            coll.errors.extend(read_errors)
            assemble(
                coll,
                (
                    (shown, *_info_and_errors(parsed[key], shown, declared[key]), refs_by_file[key])
                    for key, shown in order
                ),
                demo_names,
            )
            # (every card kept, as in most collections: no card to look up one by one)
            every = len(coll.cards) == sum(len(refs_by_file[key]) for key in keys)
            excluded = [
                [key, r.line]
                for key in (() if every else keys)
                for r in refs_by_file[key]
                if coll.get(r.id) is not r
            ]
            unlisted = {key for key, (_, aliases) in now.items() if not aliases}  # (no alias)
            from prep.engine.decks.aliases import check_cached_aliases  # (only after a change)

            check_cached_aliases(
                store,
                coll,
                [o for o in order if o[0] not in unlisted],
                refs_by_file,
                _fields_of(Card).index("aliases"),
                no_aliases(),
            )
            key_of = {shown: key for key, shown in order}
            renamed = {key_of[info.file]: name for name, info in coll.decks.items()}
            dropped = {(key, line) for key, line in excluded}
            assembled = {
                "errors": [[e.file, e.line, e.message] for e in coll.errors],
                "excluded_keys": excluded,
                "renamed": renamed,  # file key -> its deck's name
                "shown": shown_now,  # how the errors' messages name the files
                # the cards each file keeps: a later open counts without reading them
                "sizes": {
                    key: sum((key, r.line) not in dropped for r in refs_by_file[key])
                    if dropped
                    else len(refs_by_file[key])
                    for key in keys
                },
            }
        left_out = frozenset((key, line) for key, line in assembled["excluded_keys"])
        sizes = assembled.get("sizes")  # (an assembly saved before sizes were kept: counted)
        if sizes is None or set(sizes) != set(keys):
            counts = store.deck_cache_counts(keys)
            sizes = {key: counts[key] - sum(k == key for k, _ in left_out) for key in keys}
        # each file's id and hash as read here: what the collection serves is what was loaded
        fids = store.deck_cache_fids(keys)
    if save:
        store.deck_cache_save_assembly(state_key, keys, assembled)
    decks: dict[str, DeckInfo] = {}
    errors = [DeckError(f, line, m) for f, line, m in assembled["errors"]]
    loaded = CachedCollection(store, order, sizes, decks, errors, left_out, fids, files)
    loaded.warnings = warnings
    for key, shown in order:
        info, _ = _info_and_errors(parsed[key], shown, [])
        if info is None or key not in assembled["renamed"]:
            continue  # unparsable, or its deck name is already used (its cards left out)
        info.name = assembled["renamed"][key]
        # its card ids, read from the cache when first asked for (a plan, a deck's list)
        decks[info.name] = _CachedDeckInfo.of(info, partial(loaded.deck_ids, key))
    # (a private cache is for a database that cannot be written now: progress is read as it
    # is, and reconciled by the next prep that can write)
    if store.deck_reconcile_key() != state_key and not store.deck_cache_is_private():

        def step(done: int, steps: int) -> None:  # (a stop raised here: rolled back)
            _tell(fill, progress, stage=RECONCILE, step=done, steps=steps)

        worked = True
        step(0, 0)
        store.adopt_aliases(store.deck_cache_aliases(_fields_of(Card).index("aliases")))
        store.reconcile_with_deck_cache(state_key, step=step)
    _prune(store, cached, {key for key, _, _ in files})
    if worked:
        _tell(fill, progress, stage=DONE)
    return loaded


class CacheChanged(Exception):
    """Another prep dropped files of this load from the cache after its fill
    (``assemble_cached``)."""


TRIES = 3  # loads of one open while other preps keep dropping its files (then: served without)


def _tell(fill: Fill | None, progress: Progress | None, **now: Any) -> None:
    """The load's progress, when it is asked for: ``fill`` updated with ``now``, reported."""
    if fill is not None and progress is not None:
        for name, value in now.items():
            setattr(fill, name, value)
        progress(fill)


_NO_ALIASES = tuple(f", [], {_TO_JSON(level)}]" for level in (None, *LEVELS))


def no_aliases() -> tuple[str, ...]:
    """How the cached JSON of a card that lists no alias ends: its aliases empty, then its
    level (none when Card's fields are laid out otherwise: every card's JSON is then read)."""
    return _NO_ALIASES if _fields_of(Card)[-2:] == ("aliases", "level") else ()


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
    if not os.path.isabs(path):
        return False  # not a file's entry (decks fed from a parse: from_parsed)
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except (OSError, ValueError):
        return False
    return False
