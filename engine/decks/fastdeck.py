"""The deck cache's rows of a plain deck file in one pass: read, checked and turned into rows
without building the YAML objects, the Card objects or the error machinery first.

A first open of a large collection parses every file; most of its time went into the general
path (fastyaml's reader, then ``_parse_card``'s checks, then the cache row): ~37 µs a card.
Large decks are mostly written by tools in one plain shape::

    deck: name                       # the header: parsed by the general path (a few lines)
    title: ...
    cards:
      - id: c-1                      # each card: one line per field, at one indent
        kind: recall
        prompt: "one line of text"   # "double" (no escapes), 'single' (no ''), or plain text
        tags: [a, b]                 # a one-line flow list
      - id: c-2
        ...

``plain_rows`` reads exactly that shape, and only files in which every card is valid; it gives
what ``general_rows`` gives for the same text (the same DeckInfo, rows, no errors).
Anything else raises ``Undecided`` and the caller takes the general path, so every refusal,
every error message and every line number stays the general path's: a blank line or comment
among the cards, a block scalar, a field over several lines, an escape, an unknown or repeated
field, a card that fails a check. tests/test_fastdeck.py holds the two paths to identical
results on generated decks, on a corpus of cards each a step away from the shape and on
random edits of a plain deck.

``parse_rows`` (what the fill's workers run) takes this pass, or the general one
(``general_rows``) when it declines.
"""

from __future__ import annotations

import re
from functools import cache
from hashlib import sha256
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from operator import attrgetter
from typing import Any

from prep.engine.decks.collection import _TO_JSON, _fields_of
from prep.engine.decks.deck import (
    CARD_KEYS,
    CHOICE_LETTERS,
    DEFAULT_LEVEL,
    INVISIBLE_RANGES,
    KINDS,
    LEVELS,
    SLUG,
    Card,
    DeckError,
    DeckInfo,
    parse_deck_text,
)
from prep.engine.decks.fastyaml import _PLAIN_FIRST_BAD, Undecided, _Reader, _resolve

# The Card fields in the cached JSON, in the order built below (checked against Card itself:
# a Card with other fields takes the general path until this module is taught them).
_ORDER = (
    "kind",
    "prompt",
    "answer",
    "explain",
    "analogy",
    "choices",
    "correct",
    "demos",
    "tags",
    "sources",
    "bullets",
    "points",
    "aliases",
    "level",
)
_CARD_OK = _fields_of(Card) == _ORDER

# The `cards:` line that ends the header (nothing after the colon, no comment).
_CARDS = re.compile(r"^cards:\n", re.M)
# The characters a value may hold: those fastyaml's reader allows (its _ODD: no tab, CR,
# control, BOM...), as regex escapes; and the same without the double quote and backslash.
# Less the characters a card may not hold (deck.INVISIBLE: a bidi control, a zero-width
# character): a line with one is outside the shape, and the general path says why.
_OK_RANGES = (
    (0x20, 0x7E), (0xA0, 0x2027), (0x202A, 0xD7FF), (0xE000, 0xFEFE), (0xFF00, 0xFFFD),
    (0x10000, 0x10FFFF),
)  # fmt: skip


def _less(ranges: tuple[tuple[int, int], ...], out: tuple[tuple[int, int], ...]) -> str:
    """A regex class (of \\U escapes): the code points of ``ranges`` that are not in ``out``."""
    kept = list(ranges)
    for a, b in out:
        kept = [
            piece
            for lo, hi in kept
            for piece in ((lo, min(hi, a - 1)), (max(lo, b + 1), hi))
            if piece[0] <= piece[1]
        ]
    return "".join(f"\\U{lo:08x}" + (f"-\\U{hi:08x}" if hi != lo else "") for lo, hi in kept)


_OK = _less(_OK_RANGES, INVISIBLE_RANGES)
_TEXT = r"\x20\x21\x23-\x5b\x5d-\x7e" + _less(_OK_RANGES, ((0x20, 0x7E), *INVISIBLE_RANGES))


@cache
def _card_lines(inner: str) -> re.Pattern[str]:
    """The lines of one card (its item's ``- `` taken off the first): (key, the text of a
    "quoted" value, any other value), each line whole (so that every line of the card
    matching is the subset's character check too)."""
    return re.compile(rf'(?:\A|\n{inner})([a-z]+): (?:"([{_TEXT}]*)"|([{_OK}]+))(?=\n|\Z)')


# A one-line flow list of plain words: [a], [a, b-c].
_WORDS = re.compile(r"\[ *[A-Za-z_][A-Za-z0-9_-]*(?: *, *[A-Za-z_][A-Za-z0-9_-]*)* *\]\Z")
_LISTS = ("tags", "sources", "bullets", "points", "demo", "choices", "aliases")
_FLOW = _Reader("x: 1\n")  # (fastyaml's flow reader, for lists other than plain words)
# json.dumps(value, ensure_ascii=False) of a tuple, without JSONEncoder.encode's per-call set-up
_ENCODER = (
    None
    if c_make_encoder is None
    else c_make_encoder(None, None, encode_basestring, None, ": ", ", ", False, False, True)
)


def _json(value: tuple[Any, ...] | list[Any]) -> str:
    return _TO_JSON(value) if _ENCODER is None else "".join(_ENCODER(value, 0))


_WORD_VALUES: dict[str, Any] = {}  # plain scalars resolved so far (a deck's few tags, kinds)


def _plain(text: str) -> str:
    """A plain scalar as fastyaml's reader reads it on a key's line: text only."""
    value = _WORD_VALUES.get(text)
    if value is not None:
        return value
    first = text[0]
    if first in _PLAIN_FIRST_BAD and not (first in "-?:" and text[1:2] not in ("", " ")):
        raise Undecided(text)
    if "#" in text or ": " in text or text.endswith(":"):
        raise Undecided(text)  # (a comment, or a mapping: the general path decides)
    value = _resolve(text)
    if not isinstance(value, str):
        raise Undecided(text)  # (a number, a boolean, null: not text)
    if len(text) <= 24 and len(_WORD_VALUES) < 4096:
        _WORD_VALUES[text] = value
    return value


def _value(text: str) -> Any:
    """A field's value on its line: quoted text, a flow list or plain text."""
    first = text[0]
    if first == " " or text[-1] == " ":
        raise Undecided(text)  # (spaces the general path reads past)
    if first == '"':
        if text[-1] != '"' or len(text) < 2 or "\\" in text or text.count('"') != 2:
            raise Undecided(text)
        return text[1:-1]
    if first == "'":
        if text[-1] != "'" or len(text) < 2 or text.count("'") != 2:
            raise Undecided(text)
        return text[1:-1]
    if first == "[":
        if _WORDS.match(text):
            return [_plain(w.strip(" ")) for w in text[1:-1].split(",")]
        if "\\" in text or "{" in text:
            raise Undecided(text)
        items, rest = _FLOW.inline(text, 2)
        if rest:
            raise Undecided(text)
        return items
    if first == "{":
        raise Undecided(text)
    return _plain(text)


def _str_list(value: Any) -> tuple[str, ...]:
    """As deck.py's _str_list; Undecided where that gives None (the card has an error)."""
    if type(value) is str:
        return (value,)
    for item in value:  # (a list: a value here is text or a list)
        if type(item) is not str or not item.strip():
            raise Undecided(value)
    return tuple(value)


_LIST_KEYS = frozenset(_LISTS)


def _row(raw: dict[str, Any], line: int, deck: str) -> tuple[Any, ...]:
    """The cache row of a card that deck.py's _parse_card accepts; Undecided for any other.
    (Every value here is text or a list: _value gives nothing else.)"""
    keys = raw.keys()
    if not keys <= CARD_KEYS:
        raise Undecided("an unknown field")
    get = raw.get
    cid, kind, prompt, answer = get("id"), get("kind"), get("prompt"), get("answer")
    if type(cid) is not str or type(prompt) is not str or type(answer) is not str:
        raise Undecided("a required field")
    if kind not in KINDS or not SLUG.match(cid):  # (so both are text, not blank)
        raise Undecided(cid)
    prompt, answer = prompt.strip(), answer.strip()
    if not prompt or not answer:
        raise Undecided("a required field")
    explain, analogy, parent = get("explain", ""), get("analogy", ""), get("parent")
    if explain:
        if type(explain) is not str or not (explain := explain.strip()):
            raise Undecided(explain)
    elif "explain" in raw:
        raise Undecided("explain")
    if analogy:
        if type(analogy) is not str or not (analogy := analogy.strip()):
            raise Undecided(analogy)
    elif "analogy" in raw:
        raise Undecided("analogy")
    if parent is not None and (type(parent) is not str or not parent.strip()):
        raise Undecided(parent)
    lists = {key: _str_list(raw[key]) for key in keys & _LIST_KEYS} if len(raw) > 4 else {}
    correct: int | None = None
    choices = lists.get("choices", ())
    if kind == "choice" or kind == "red-flag":
        letter = get("correct")
        if not (
            "choices" in raw
            and 2 <= len(choices) <= len(CHOICE_LETTERS)
            and type(letter) is str
            and len(letter) == 1
            and letter.lower() in CHOICE_LETTERS[: len(choices)]
        ):
            raise Undecided("choices")
        correct = CHOICE_LETTERS.index(letter.lower())
        choices = tuple(c.strip() for c in choices)
    elif "choices" in raw or "correct" in raw:
        raise Undecided("choices")
    aliases = lists.get("aliases", ())
    for alias in aliases:
        if alias == cid or not SLUG.match(alias):
            raise Undecided(alias)
    level = get("level")
    if level is not None and level not in LEVELS:
        raise Undecided("level")
    if parent is None and kind == "follow-up":
        raise Undecided("parent")
    demos, tags = lists.get("demo", ()), lists.get("tags", ())
    content = _json(
        (
            kind,
            prompt,
            answer,
            explain,
            analogy,
            choices,
            correct,
            demos,
            tags,
            lists.get("sources", ()),
            lists.get("bullets", ()),
            lists.get("points", ()),
            aliases,
            level,
        )
    )
    payload = _json([kind, prompt, answer, list(choices), correct])
    chash = sha256(payload.encode()).hexdigest()[:16]
    rank = _RANK[level]
    return (line, cid, deck, parent, ",".join(demos), list(tags), chash, content, kind, rank)


_RANK: dict[str | None, int] = {name: i for i, name in enumerate(LEVELS)}
_RANK[None] = LEVELS.index(DEFAULT_LEVEL)  # (a card without a level is "core")


def plain_rows(
    text: str, file: str, stem: str
) -> tuple[DeckInfo | None, list[tuple[Any, ...]], list[DeckError]]:
    """``deckcache.parse_rows(text, file, stem)`` for a deck in the plain shape (see above)
    whose every card is valid; Undecided for any other text."""
    if not _CARD_OK:
        raise Undecided("Card's fields")
    m = _CARDS.search(text)
    if m is None:
        raise Undecided("no `cards:` line")
    head, body = text[: m.start()], text[m.end() :]
    if not body.endswith("\n"):
        raise Undecided("no line break at the end")
    first_line = head.count("\n") + 2  # the line of the first card
    indent = body[: len(body) - len(body.lstrip(" "))]
    cards = ("\n" + body[:-1]).split(f"\n{indent}- ")  # (a value is one line: no split in one)
    if len(cards) < 2 or cards[0]:
        raise Undecided("the first line is not an item")
    info, parsed, errors = parse_deck_text(head + "cards: []\n", file, stem)
    if info is None or errors or parsed:
        raise Undecided("the header")
    lines = _card_lines(indent + "  ")
    deck, declared, ids = info.name, info.declared, info.card_ids
    rows: list[tuple[Any, ...]] = []
    line = first_line
    for card in cards[1:]:
        n = card.count("\n") + 1
        raw = {
            key: _value(other) if other else quoted for key, quoted, other in lines.findall(card)
        }
        if len(raw) != n:  # (a line outside the shape: blank, comment, block...; a field twice)
            raise Undecided("a line outside the plain shape, or a repeated field")
        rows.append(_row(raw, line, deck))
        line += n
    for row in rows:
        declared.append((row[1], row[0]))
        ids.append(row[1])
    return info, rows, []


def parse_rows(
    text: str, shown: str, stem: str
) -> tuple[DeckInfo | None, list[tuple[Any, ...]], list[DeckError]]:
    """``parse_deck_text`` with each card as the row the cache stores: done where the file is
    parsed (in a worker of the parse pool, for a big fill), so that the process filling the
    cache only writes rows. A deck in the plain shape large collections are written in takes
    the one pass above (plain_rows: the same result, held by tests/test_fastdeck.py)."""
    try:
        return plain_rows(text, shown, stem)
    except Undecided:
        return general_rows(text, shown, stem)


def general_rows(
    text: str, shown: str, stem: str
) -> tuple[DeckInfo | None, list[tuple[Any, ...]], list[DeckError]]:
    """``parse_rows`` through ``parse_deck_text``: any deck, every error with file and line."""
    info, cards, errors = parse_deck_text(text, shown, stem)
    values = attrgetter(*_fields_of(Card))  # card_fields(c) is _TO_JSON(values(c)): a tuple
    rows = [cache_row(c, c.line, _TO_JSON(values(c))) for c in cards]
    return info, rows, errors


def cache_row(c: Card, line: int, content: str) -> tuple[Any, ...]:
    """The row the cache stores for card ``c`` at ``line``; ``content``: its card_fields."""
    return (
        line,
        c.id,
        c.deck,
        c.parent,
        ",".join(c.demos),
        list(c.tags),
        c.content_hash,
        content,
        c.kind,
        c.level_rank,
    )
