"""How a setting is read from text (`prep config KEY VALUE`): each parse type and the words for
what a bad value is not, as a field's metadata in engine/study/scheduler.py's Settings (so a new
setting brings its own parse type, no table elsewhere), and the one reader, ``parse_text``.

An empty value (what `prep config KEY "$UNSET_VAR"` gives) is never taken as "clear it": a setting
is cleared with a word (``clear``: interview_date none, plan_decks all, steps none).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from prep.engine.textsafe import quoted


def _items(text: str) -> list[str]:
    """The items of a list setting, separated by commas or spaces ("1,10", "1, 10", "1 10"):
    spaces were removed first, which made Anki's "1 10" the one step 110."""
    return [part for part in re.split(r"[,\s]+", text) if part]


def _minutes(text: str) -> tuple[float, ...]:
    """Learning steps as minutes, comma- or space-separated: "1,10" (Anki's default is 1m 10m);
    `none` for no steps (a card goes straight to review)."""
    if text.strip().lower() == "none":
        return ()
    return tuple(float(part) for part in _items(text))


# How a setting is read from text (`prep config KEY VALUE`), and what a bad value is not: a
# field's metadata, so that a new setting brings its own parse type (no table elsewhere).
_NUMBER = {"parse": float, "words": "a number"}
_WHOLE = {"parse": int, "words": "a whole number"}
_STEPS = {"parse": _minutes, "words": "minutes like 1,10 or none", "clear": "none"}


def _none_or(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    """A setting that `none` (or `all`) clears (interview_date, plan_decks)."""

    def read(text: str) -> Any:
        return None if text.strip().lower() in ("none", "all") else convert(text.strip())

    return read


def _deck_names(text: str) -> tuple[str, ...]:
    return tuple(_items(text))


_DATE = {"parse": _none_or(str), "words": "a date (YYYY-MM-DD) or none", "clear": "none"}
_DECKS = {
    "parse": _none_or(_deck_names),
    "words": "deck names like wo-core,wo-systems or all",
    "clear": "all",
}
_LEVEL = {"parse": str, "words": "a level"}


def parse_text(key: str, text: str, meta: Mapping[str, Any]) -> Any:
    """Setting ``key``'s value read from ``text`` by its ``meta``data; ValueError("KEY: 'TEXT' is
    not a number") for text that does not parse, and for an empty one (naming the word that
    clears the setting on purpose, where there is one)."""
    if not text.replace(",", " ").strip():
        # it silently dropped an interview plan (an unset shell variable)
        clear = meta.get("clear")
        how = f"; to clear it on purpose: prep config {key} {clear}" if clear else ""
        raise ValueError(
            f"{key}: an empty value (an unset shell variable?) is not {meta['words']}; "
            f"nothing changed{how}"
        )
    try:
        return meta["parse"](text)
    except ValueError:
        raise ValueError(f"{key}: {quoted(text)} is not {meta['words']}") from None
