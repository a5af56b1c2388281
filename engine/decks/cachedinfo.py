"""A deck's entry in the cache (deck_files.info): its DeckInfo as JSON, and read back with the
file's cached parse errors (engine/decks/deckcache.py's load and feed)."""

from __future__ import annotations

import json

from prep.engine.decks.deck import DeckError, DeckInfo


def info_json(info: DeckInfo) -> str:
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


def info_and_errors(
    entry: tuple[str | None, list[tuple[int, str]]], shown: str, declared: list
) -> tuple[DeckInfo | None, list[DeckError]]:
    text, errors = entry
    deck_errors = [DeckError(shown, line, message) for line, message in errors]
    if text is None:
        return None, deck_errors
    d = json.loads(text)
    info = DeckInfo(
        name=d["name"],
        title=d["title"],
        description=d["description"],
        file=shown,
        line=d.get("line", 1),
        order=d.get("order"),
        declared=list(map(tuple, declared)),  # (JSON lists, or the parse's tuples: kept)
    )
    return info, deck_errors
