"""The decks parsed and checked across files: ``parse_decks`` reads every file (engine/decks/
files.py) and parses it (deck.py's ``parse_deck_text``); ``assemble`` runs the checks that need
every file: duplicate ids (the first one wins), missing parents, own parents, unknown demos,
parent cycles, aliases, and leaves out the follow-ups that could never be served. The deck
cache (deckcache.py) runs the same ``assemble`` on its cached outline.

`prep check` reads what ``parse_decks`` gives as it is (``ParsedDecks``); the study loop reads
the deck cache's collection, which a parse feeds (deckcache.load, deckcache.from_parsed).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import repeat
from operator import itemgetter
from pathlib import Path
from typing import Any

from prep.engine.decks.deck import (
    MAX_ERRORS_PER_FILE,
    Card,
    DeckError,
    DeckInfo,
    ParsedDecks,
    parse_deck_text,
    quoted,
)
from prep.engine.decks.files import collect_deck_files, read_deck_text


def parse_decks(
    paths: Iterable[Path] | None = None,
    *,
    demo_names: Sequence[str] | None = None,
    include_bundled: bool = True,
    piped: str | None = None,
) -> ParsedDecks:
    """Parse and validate decks: the bundled ones (unless told not to) plus ``paths``.

    ``paths`` may name files or folders of ``*.yaml``. ``demo_names`` is the set of demos a
    ``demo:`` field may name; None skips that check (engine stays free of torch, so the
    caller passes ``prep.demos.registry.names()``). ``piped``: the text of one more deck,
    read from standard input (`prep check -`), named "standard input" in its errors, its
    deck name "stdin" unless it gives one. Invalid cards are left out and every problem is
    in ``ParsedDecks.errors``.
    """
    coll = ParsedDecks()
    parsed = []
    for _, path, shown in collect_deck_files(paths, include_bundled, coll.warnings):
        text, error = read_deck_text(path, shown)
        if error is not None:
            coll.errors.append(error)
            continue
        assert text is not None
        info, cards, errors = parse_deck_text(text, shown, path.stem)
        parsed.append((shown, info, errors, cards))
    if piped is not None:
        info, cards, errors = parse_deck_text(piped, "standard input", "stdin")
        parsed.append(("standard input", info, errors, cards))
    assemble(coll, parsed, demo_names)
    return coll


def assemble(
    coll: ParsedDecks,
    parsed: Iterable[tuple[str, DeckInfo | None, list[DeckError], list[Any]]],
    demo_names: Sequence[str] | None,
) -> None:
    """Add each parsed file's (shown name, info, errors, cards) to ``coll`` in order, then
    run the checks across files: duplicate ids (the first one wins), parents that do not
    exist, cards that are their own parent, unknown demos, parent cycles. A card only needs
    id, deck, parent, demos, file and line (the deck cache passes light references)."""
    first_seen: dict[str, tuple[str, int]] = {}
    for shown, info, errors, cards in parsed:
        coll.errors.extend(errors)
        if info is None:
            continue
        if info.name in coll.decks:
            first = coll.decks[info.name]
            coll.errors.append(
                DeckError(
                    shown,
                    info.line,
                    f"deck name {quoted(info.name)} is already used by {first.file}:{first.line}; "
                    "give this deck its own `deck:` name",
                )
            )
            continue  # its cards are left out, as any invalid card is
        coll.decks[info.name] = info
        duplicates: set[int] = set()
        ids = [card_id for card_id, _ in info.declared]
        fresh = first_seen.keys().isdisjoint(ids) and len(set(ids)) == len(ids)
        if fresh:  # no id seen before (most files): all of them kept in one step
            places = zip(repeat(shown), map(itemgetter(1), info.declared), strict=False)
            first_seen.update(zip(ids, places, strict=False))
        for card_id, line in () if fresh else info.declared:
            if card_id in first_seen:
                first_file, first_line = first_seen[card_id]
                coll.errors.append(
                    DeckError(
                        shown,
                        line,
                        f"duplicate card id {quoted(card_id)} (first defined at {first_file}:{first_line})",
                    )
                )
                duplicates.add(line)
            else:
                first_seen[card_id] = (shown, line)
        if duplicates:
            cards = [card for card in cards if card.line not in duplicates]
        coll.extend(cards)
        info.card_ids = [c for c in info.card_ids if c in coll]
    demo_set = set(demo_names) if demo_names is not None else None
    for card in coll.cards:
        if card.parent is not None:
            if card.parent not in coll:
                coll.errors.append(
                    DeckError(
                        card.file,
                        card.line,
                        f"card {quoted(card.id)}: parent {quoted(card.parent)} does not exist",
                    )
                )
            if card.parent == card.id:
                coll.errors.append(
                    DeckError(card.file, card.line, f"card {quoted(card.id)} is its own parent")
                )
        if demo_set is not None and card.demos:
            for name in card.demos:
                if name not in demo_set:
                    from difflib import get_close_matches

                    close = get_close_matches(name, sorted(demo_set), n=1)
                    hint = f" (did you mean {quoted(close[0])}?)" if close else ""
                    coll.errors.append(
                        DeckError(
                            card.file,
                            card.line,
                            f"card {quoted(card.id)}: no demo named {quoted(name)}{hint}",
                        )
                    )
    _report_cycles(coll)
    # (only a Card has aliases: the deck cache checks those of its light references itself)
    if any(isinstance(c, Card) and c.aliases for c in coll.cards):
        from prep.engine.decks.aliases import alias_errors

        coll.errors.extend(
            alias_errors(((c.id, c.aliases, c.file, c.line) for c in coll.cards), coll)
        )
    _drop_unservable(coll)
    coll.errors.sort(key=lambda e: (e.file, e.line))
    coll.errors[:] = _capped(coll.errors)


def _capped(errors: list[DeckError]) -> list[DeckError]:
    """At most MAX_ERRORS_PER_FILE errors per file (sorted by file), then one line counting
    the rest: a file of 400,000 broken cards is 51 lines, not 2.8 million."""
    out: list[DeckError] = []
    i = 0
    while i < len(errors):
        j = i
        while j < len(errors) and errors[j].file == errors[i].file:
            j += 1
        group = errors[i:j]
        notes = [e for e in group if e.message.startswith("... ")]  # cards not checked
        found = [e for e in group if not e.message.startswith("... ")]
        if len(found) > MAX_ERRORS_PER_FILE + 1:
            rest = len(found) - MAX_ERRORS_PER_FILE
            found = found[:MAX_ERRORS_PER_FILE]
            found.append(DeckError(errors[i].file, 0, f"... and {rest:,} more problems"))
        out.extend(found + notes)
        i = j
    return out


def _report_cycles(coll: ParsedDecks) -> None:
    """One error per parent cycle, at its smallest id ("a -> b -> a"). Linear in the number of
    cards: each card is walked once (a chain of 4,000 follow-ups took 106 s when every card
    walked its whole chain and searched it as a list)."""
    done: set[str] = set()
    for card in coll.cards:
        if card.parent is None or card.id in done:
            continue  # (a card without a parent is in no cycle)
        path: list[str] = []
        index: dict[str, int] = {}
        node: Card | None = card
        while node is not None and node.id not in done and node.id not in index:
            index[node.id] = len(path)
            path.append(node.id)
            if node.parent is None or node.parent == node.id:  # own parent: reported above
                node = None
                break
            node = coll.get(node.parent)
        if node is not None and node.id in index:  # back onto this walk: a cycle
            cycle = path[index[node.id] :]
            start = cycle.index(min(cycle))
            cycle = cycle[start:] + cycle[:start]
            first = coll.get(cycle[0])
            assert first is not None
            shown = [*cycle, cycle[0]]
            if len(cycle) > 8:  # one line, whatever the length
                shown = [*shown[:4], "...", *shown[-3:]]
            text = " -> ".join(shown) + (f" ({len(cycle)} cards)" if len(cycle) > 8 else "")
            coll.errors.append(DeckError(first.file, first.line, f"parent cycle: {text}"))
        done.update(path)


def _drop_unservable(coll: ParsedDecks) -> None:
    """Leave out follow-ups that can never be served: a follow-up waits for its parent, so
    one whose parent is missing, itself, or in a cycle (and every card below it) would wait
    forever. Each is already an error above; leaving it out keeps 'valid cards' true."""
    servable: dict[str, bool] = {}
    for card in coll.cards:  # walk up each chain once, without recursion (chains may be long)
        if card.parent is None:
            continue  # (servable: not walked, not kept in ``servable``)
        path: list[str] = []
        on_path: set[str] = set()
        node_id: str | None = card.id
        while True:
            if node_id in servable:
                result = servable[node_id]
                break
            node = coll.get(node_id) if node_id is not None else None
            if node is None or node.id in on_path:
                result = False  # a missing parent, or a cycle
                break
            path.append(node.id)
            on_path.add(node.id)
            if node.parent is None:
                result = True
                break
            node_id = node.parent
        for cid in path:
            servable[cid] = result

    keep = [c for c in coll.cards if c.parent is None or servable[c.id]]
    if len(keep) == len(coll.cards):
        return
    dropped = {c.id for c in coll.cards} - {c.id for c in keep}
    coll.cards[:] = keep
    coll.__post_init__()
    for info in coll.decks.values():
        info.card_ids = [c for c in info.card_ids if c not in dropped]
