"""Merged cards: the ids a card keeps as ``aliases``.

When two cards that test the same fact are merged, the card that stays lists the dropped
card's id under ``aliases:``. Progress keyed by that id (a card state, its reviews, its
marks) then belongs to the card that stayed: the store moves it there when it reconciles
progress with the decks (Store.adopt_aliases), and an import that names the old id lands on
the kept card (``map_export``). An alias that names a live card, or that two cards claim, is
an error (reported at the claiming card) and is not used.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from prep.engine.decks.deck import DeckError, quoted
from prep.engine.store.aliasrules import alias_map, keeps_alias_state

if TYPE_CHECKING:
    from prep.engine.decks.collection import CardRef
    from prep.engine.decks.deck import ParsedDecks
    from prep.engine.store import Store

__all__ = ["alias_errors", "alias_map", "keeps_alias_state", "map_export", "merge_marks"]


def alias_errors(
    entries: Iterable[tuple[str, Iterable[str], str, int]], live: Container[str]
) -> list[DeckError]:
    """The problems of the aliases of (card id, aliases, file, line) ``entries``: an alias
    that is a live card's id, or that an earlier card already claims."""
    errors: list[DeckError] = []
    claimed: dict[str, tuple[str, str, int]] = {}
    for card_id, aliases, file, line in entries:
        for alias in aliases:
            if alias in live:
                errors.append(
                    DeckError(
                        file,
                        line,
                        f"card {quoted(card_id)}: alias {quoted(alias)} is the id of a card "
                        "in the decks (an alias names a card merged away: remove one of them)",
                    )
                )
            elif alias in claimed and claimed[alias][0] != card_id:
                first, first_file, first_line = claimed[alias]
                errors.append(
                    DeckError(
                        file,
                        line,
                        f"card {quoted(card_id)}: alias {quoted(alias)} is already claimed by "
                        f"card {quoted(first)} ({first_file}:{first_line})",
                    )
                )
            else:
                claimed.setdefault(alias, (card_id, file, line))
    return errors


def merge_marks(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """Two mark rows (export form) as one: suspended or flagged if either is, buried until
    the later of the two."""
    buried = [x for x in (a.get("buried_until"), b.get("buried_until")) if x]
    return {
        **b,
        "suspended": int(bool(a.get("suspended")) or bool(b.get("suspended"))),
        "flagged": int(bool(a.get("flagged")) or bool(b.get("flagged"))),
        "buried_until": max(buried) if buried else None,
    }


def map_export(data: Any, aliases: Mapping[str, str]) -> Any:
    """``data`` (an importer.ExportData) with every row that names an alias moved onto the
    kept card, as the store moves its own progress: the reviews (their states untouched),
    the card state reviewed last, the marks combined."""
    # (every review names a card of the file: importer._check_file holds that before)
    named = {c["id"] for c in data.cards} | {m["card_id"] for m in data.marks}
    if not named & aliases.keys():
        return data
    from dataclasses import replace

    cards: dict[str, dict[str, Any]] = {}
    own = {row["id"]: row for row in data.cards if row["id"] not in aliases}
    for row in data.cards:
        if row["id"] not in aliases:
            cards.setdefault(row["id"], row)  # unless a merged-away state won above
            continue
        cid = aliases[row["id"]]
        there = cards.get(cid) or own.get(cid)
        # the kept card's own state, unless the merged-away one was reviewed later
        if there is None or keeps_alias_state(row.get("last_review"), there.get("last_review")):
            cards[cid] = {**row, "id": cid}
    order = {
        cid: i
        for i, cid in enumerate(dict.fromkeys(aliases.get(r["id"], r["id"]) for r in data.cards))
    }
    cards = dict(sorted(cards.items(), key=lambda kv: order[kv[0]]))
    marks: dict[str, dict[str, Any]] = {}
    for row in data.marks:
        cid = aliases.get(row["card_id"], row["card_id"])
        row = {**row, "card_id": cid}
        marks[cid] = merge_marks(marks[cid], row) if cid in marks else row

    def kept(r: dict[str, Any]) -> dict[str, Any]:
        return {**r, "card_id": aliases.get(r["card_id"], r["card_id"])}

    # the reviews of an export read from a file (importer's Rows) stay there: mapped as
    # they are read again
    rows = data.reviews
    reviews = rows.map(kept) if hasattr(rows, "map") else [kept(r) for r in rows]
    return replace(data, cards=list(cards.values()), reviews=reviews, marks=list(marks.values()))


def check_cached_aliases(
    store: Store,
    coll: ParsedDecks,
    order: list[tuple[str, str]],
    refs: dict[str, list[CardRef]],
    field: int,
    empty: tuple[str, ...],
) -> None:
    """The aliases' checks of ``assemble`` (which sees the cards' outline only), on the
    aliases of the cached cards of the files in ``order`` that were kept (assembly's
    ``assemble_cached``; ``field``, ``empty``: as Store.deck_cache_alias_claims reads them)."""
    entries = []
    for key, _ in order:
        claims = store.deck_cache_alias_claims(key, field, empty)
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
