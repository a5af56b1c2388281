"""What the next load of the decks will do, asked before it runs, so that a front end can run
a long one off its UI thread with progress (the app: tui/startup.py) and a quick one where it
is: how many deck bytes it parses, and whether it redoes the work over every cached card — a
bulk fill's indexes, the checks across files, the reconciliation of progress. A load redoes
those when the decks' state key changed: a deck edited, the demos changed, an upgrade of prep
that changed the key or of the database that cleared the reconciliation's (at a million
cards, about a minute).

The key is predicted exactly when no file is to be read: it is the one ``deckcache._load``
computes (``state_digest``, then each file's key and text hash in order, then the demos).
When files are to be read it cannot be known without reading them, and the load is taken to
redo the checks (a changed file usually changes the key)."""

from __future__ import annotations

import json
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prep.engine.decks.changed import Scan
from prep.engine.decks.deckcache import format_key, state_digest

if TYPE_CHECKING:
    from prep.engine.store import Store


@dataclass(frozen=True)
class OpenWork:
    """What a load of the decks is about to do (see ``open_work``)."""

    parse_bytes: int  # deck bytes the load reads and parses
    deck_bytes: int  # every loaded deck file's size (a measure of the collection)
    redo: bool  # it walks every cached card: indexes, checks across files, reconciliation

    def large(self, threshold: int) -> bool:
        """Worth a progress screen: many bytes to parse, or the work over every card of a
        collection of at least ``threshold`` deck bytes."""
        return self.parse_bytes >= threshold or (self.redo and self.deck_bytes >= threshold)


def open_work(store: Store, scan: Scan, demo_names: Sequence[str] | None) -> OpenWork:
    """What loading ``scan``'s files into ``store`` (``deckcache.load(scan=scan)``) will do."""
    deck_bytes = sum(
        st.st_size for st in scan.stats.values() if st is not None and stat.S_ISREG(st.st_mode)
    )
    fmt_key = format_key()
    if scan.format != fmt_key:  # the cache is dropped and every file parsed again
        return OpenWork(deck_bytes, deck_bytes, True)
    parse_bytes = scan.pending.bytes_total
    if scan.pending.files_total or store.deck_cache_bulk_pending():
        return OpenWork(parse_bytes, deck_bytes, True)
    key = state_key(scan, demo_names)
    assembled = store.deck_cache_assembly(key)
    if assembled is not None and assembled["errors"]:
        shown = {key: shown for key, _, shown in scan.files}
        if assembled.get("shown") != shown:
            assembled = None  # (its messages name the files as shown from another folder)
    private = store.deck_cache_is_private()
    redo = assembled is None or (store.deck_reconcile_key() != key and not private)
    return OpenWork(parse_bytes, deck_bytes, redo)


def state_key(scan: Scan, demo_names: Sequence[str] | None) -> str:
    """The decks' state key as ``deckcache._load`` computes it, for a scan whose every file's
    cached parse is used as it is (nothing to read)."""
    digest = state_digest(scan.format or "")
    for key, _, _ in scan.files:
        digest.update(f"{key}\0{scan.cached[key]['sha256']}\n".encode())
    digest.update(json.dumps(sorted(demo_names) if demo_names is not None else None).encode())
    return str(digest.hexdigest())
