"""Deck loading and validation.

A deck is one YAML file::

    deck: wo-core                 # optional; defaults to the file's stem
    title: W_O — the output projection
    description: ...
    cards:
      - id: wo-two-roles          # stable slug; progress keys on it
        kind: recall              # recall | choice | red-flag | follow-up
        prompt: ...
        answer: ...
        explain: ...              # why, in a short paragraph
        analogy: ...
        choices: [..., ...]       # choice / red-flag: 2-4 options, picked with a-d
        correct: b                # the letter of the right option
        demo: block-diagonal      # or a list of demo names
        parent: wo-two-roles      # follow-up: the card it follows
        tags: [roles]
        sources: ["Voita et al. 2019, ..."]
        bullets: [...]            # the 60-second bullets for `prep cram`
        points: [...]             # the rubric `prep grade` and `t` grade a typed answer by:
                                  # 3-5 single ideas (default: the bullets, where they are)
        aliases: [old-id]         # ids merged into this card: their progress lands here
        level: basics             # basics | core | advanced (default core): curriculum place

A deck may declare ``order: 10`` (a number): new cards of a lower order come first within a
level (bundled: core 10, follow-ups 15, practice 20, red flags 25, attribution 30, systems
40); a deck without one comes after every deck that has one, in file order.

Files are parsed with ``yaml.SafeLoader`` semantics, but every mapping remembers the line
of each key, so that every error is reported as ``FILE:LINE: message``. All errors of all
files are collected; nothing raises on bad input.

The deck's types (Card, DeckInfo, DeckError, ParsedDecks) and one file's parse and
validation live here; finding and reading the files is engine/decks/files.py, the checks
across files (and ``parse_decks``, every file parsed and checked) engine/decks/checks.py, and
what the study loop reads is the deck cache's collection (engine/decks/collection.py).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter
from typing import Any, TypeGuard

from prep.engine.decks.digest import sha256
from prep.engine.decks.refusal import MAX_DEPTH, Refused
from prep.engine.decks.refusal import one_line as _one_line
from prep.engine.decks.unshown import ALLOWED_FORMAT_RANGES as ALLOWED_FORMAT_RANGES
from prep.engine.decks.unshown import CONTROL as CONTROL  # (re-exported: callers)
from prep.engine.decks.unshown import INVISIBLE as INVISIBLE
from prep.engine.decks.unshown import INVISIBLE_RANGES as INVISIBLE_RANGES
from prep.engine.decks.unshown import UNSHOWN
from prep.engine.decks.unshown import control_problem as _control_problem
from prep.engine.textsafe import one_line_safe as one_line_safe  # (re-exported: callers)
from prep.engine.textsafe import quoted
from prep.engine.textsafe import quoted_all as quoted_all
from prep.engine.textsafe import text_safe as text_safe

KINDS = ("recall", "choice", "red-flag", "follow-up")
CARD_KEYS = frozenset(
    {
        "id",
        "kind",
        "prompt",
        "answer",
        "explain",
        "analogy",
        "choices",
        "correct",
        "demo",
        "parent",
        "tags",
        "sources",
        "bullets",
        "points",
        "aliases",
        "level",
    }
)
DECK_KEYS = frozenset({"deck", "title", "description", "cards", "order"})
# A card's place in the curriculum: new cards come level by level (a card without one is
# "core"), then by the deck's ``order:``, then by position in the file.
LEVELS = ("basics", "core", "advanced")
DEFAULT_LEVEL = "core"
CHOICE_LETTERS = "abcd"
SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")  # \Z: "$" would take a trailing newline
# A deck is a few dozen kB; anything past this is not a deck (and reading it would only cost memory).
MAX_DECK_BYTES = 2 * 1024 * 1024
MAX_ERRORS_PER_FILE = 50  # a file with more says how many more, in one line


@dataclass(frozen=True)
class DeckError:
    """A problem in a deck file, reported as FILE:LINE: message."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        if self.line <= 0:  # about the file as a whole (it is missing)
            return f"{self.file}: {self.message}"
        return f"{self.file}:{self.line}: {self.message}"


@dataclass(frozen=True)
class Card:
    """One card of a deck, as parsed and validated (the study loop's unit)."""

    id: str
    kind: str
    prompt: str
    answer: str
    deck: str
    file: str = ""
    line: int = 0
    explain: str = ""
    analogy: str = ""
    choices: tuple[str, ...] = ()
    correct: int | None = None  # index into choices
    demos: tuple[str, ...] = ()
    parent: str | None = None
    tags: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    bullets: tuple[str, ...] = ()
    points: tuple[str, ...] = ()  # the grading rubric; engine.rubric defaults it to bullets
    aliases: tuple[str, ...] = ()  # ids of cards merged into this one (engine/aliases.py)
    level: str | None = None  # basics | core | advanced, as declared (None: core)

    @property
    def level_rank(self) -> int:
        """0 for basics, 1 for core (and a card without a level), 2 for advanced."""
        return LEVELS.index(self.level or DEFAULT_LEVEL)

    @property
    def demo(self) -> str | None:
        """The first linked demo, or None."""
        return self.demos[0] if self.demos else None

    @property
    def correct_letter(self) -> str | None:
        return None if self.correct is None else CHOICE_LETTERS[self.correct]

    @cached_property
    def content_hash(self) -> str:
        """Hash of what the user is tested on; a change flags the card as edited. Computed
        once a card (its fields never change): every answer asks for it."""
        payload = _TO_JSON([self.kind, self.prompt, self.answer, list(self.choices), self.correct])
        return sha256(payload.encode()).hexdigest()[:16]


# json.dumps(value, ensure_ascii=False), without building an encoder per call (a first fill
# hashes every card: 100k calls)
_TO_JSON = json.JSONEncoder(ensure_ascii=False).encode


@dataclass
class DeckInfo:
    """A deck: its name, title, description, file and card ids in file order."""

    name: str
    title: str
    description: str
    file: str
    card_ids: list[str] = field(default_factory=list)
    line: int = 1  # of the `deck:` key (or 1): where a duplicate deck name is reported
    # (id, line) of every card entry that names an id, valid or not: duplicates are
    # reported even when one of the two entries has other errors.
    declared: list[tuple[str, int]] = field(default_factory=list)
    order: float | None = None  # the deck's `order:` (None: after every deck that has one)


@dataclass
class ParsedDecks:
    """What parsing and validating deck files gives: every valid card of every deck, in file
    order, and the problems found. Not what the study loop reads (that is the deck cache's
    ``CachedCollection``, engine/decks/collection.py, which a parse feeds: deckcache.load,
    deckcache.from_parsed); `prep check` reads it as it is."""

    cards: list[Card] = field(default_factory=list)
    decks: dict[str, DeckInfo] = field(default_factory=dict)
    errors: list[DeckError] = field(default_factory=list)
    # Problems that leave every deck usable (a --questions folder without decks)
    warnings: list[DeckError] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._by_id: dict[str, Card] = {c.id: c for c in self.cards}

    def add(self, card: Card) -> None:
        self.cards.append(card)
        self._by_id[card.id] = card

    def extend(self, cards: list[Any]) -> None:
        """``add`` each of ``cards``, in one step (a large fill's checks add 100k cards)."""
        self.cards.extend(cards)
        self._by_id.update(zip(map(attrgetter("id"), cards), cards, strict=True))

    def get(self, card_id: str) -> Card | None:
        return self._by_id.get(card_id)

    def __contains__(self, card_id: object) -> bool:
        return card_id in self._by_id

    def __len__(self) -> int:
        return len(self.cards)


# --- validation ---------------------------------------------------------------------------


def _text(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and value.strip() != ""


def _str_list(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(_text(v) for v in value):
        return tuple(value)
    return None


def _scalar_hint(key: str, value: Any) -> str:
    """Why YAML did not read a value as text: yes/no/on/off are booleans, 12 a number."""
    if isinstance(value, bool):
        word = "yes" if value else "no"
        return f' (YAML read it as the boolean {value}: quote it, e.g. {key}: "{word}")'
    if isinstance(value, int | float):
        return f' (YAML read it as the number {value}: quote it, e.g. {key}: "{value}")'
    return ""


def _why_not_text(value: Any) -> str:
    items = value if isinstance(value, list) else [value]
    for i, item in enumerate(items, 1):
        if isinstance(item, bool):
            return f' (item {i} is read as the boolean {item}: quote it, e.g. "yes")'
        if not _text(item):
            return f" (item {i} is {quoted(item)})"
    return ""


def _parse_card(
    raw: Any, deck: str, file: str, fallback_line: int, errors: list[DeckError]
) -> Card | None:
    def err(line: int, message: str) -> None:
        errors.append(DeckError(file, line, message))

    if not isinstance(raw, dict):
        err(fallback_line, "a card must be a mapping of fields (id, kind, prompt, answer, ...)")
        return None
    line = getattr(raw, "line", fallback_line)
    key_lines: dict[Any, int] = getattr(raw, "key_lines", {})

    def at(key: str) -> int:
        return key_lines.get(key, line)

    card_id = raw.get("id")
    label = f"card {quoted(card_id)}" if _text(card_id) else "card"
    ok = True
    for key, key_line in getattr(raw, "duplicate_keys", []):
        err(key_line, f"{label}: field {quoted(key)} appears twice")
        ok = False
    for key in () if CARD_KEYS.issuperset(raw) else raw:
        if key not in CARD_KEYS:
            known = ", ".join(sorted(CARD_KEYS))
            err(at(key), f"{label}: unknown field {quoted(key)} (known fields: {known})")
            ok = False
    for key in ("id", "kind", "prompt", "answer"):
        if key not in raw:
            err(line, f"{label}: missing required field {key!r}")
            ok = False
        elif not _text(raw[key]):
            err(
                at(key),
                f"{label}: field {key!r} must be non-empty text{_scalar_hint(key, raw[key])}",
            )
            ok = False
    if _text(card_id) and not SLUG.match(card_id):
        err(
            at("id"),
            f"card id {quoted(card_id)} is not a slug (lowercase letters, digits, dashes)",
        )
        ok = False
    kind = raw.get("kind")
    if _text(kind) and kind not in KINDS:
        err(
            at("kind"),
            f"{label}: unknown kind {quoted(kind)} (expected one of: {', '.join(KINDS)})",
        )
        ok = False
    for key in ("explain", "analogy", "parent"):
        if key in raw and not _text(raw[key]):
            err(
                at(key),
                f"{label}: field {key!r} must be non-empty text{_scalar_hint(key, raw[key])}",
            )
            ok = False
    lists: dict[str, tuple[str, ...]] = {}
    for key in ("tags", "sources", "bullets", "points", "demo", "choices", "aliases"):
        if key in raw:
            value = _str_list(raw[key])
            if value is None:
                err(
                    at(key),
                    f"{label}: field {key!r} must be text or a list of texts{_why_not_text(raw[key])}",
                )
                ok = False
            else:
                lists[key] = value

    texts = [raw[key] for key in ("prompt", "answer", "explain", "analogy") if _text(raw.get(key))]
    for value in lists.values():
        texts += value
    # one search over every text first: the loop below only runs to say which field
    checked = ("prompt", "answer", "explain", "analogy", *lists)
    for key in checked if UNSHOWN.search("\n".join(texts)) else ():
        values = lists.get(key) or ((raw[key],) if _text(raw.get(key)) else ())
        for text in values:
            why = _control_problem(text)
            if why is not None:
                err(at(key), f"{label}: field {key!r} has {why}")
                ok = False
                break
    correct: int | None = None
    if kind in ("choice", "red-flag"):
        choices = lists.get("choices", ())
        if "choices" not in raw:
            err(line, f"{label}: a {kind} card needs 'choices' (2 to 4 options)")
            ok = False
        elif not 2 <= len(choices) <= len(CHOICE_LETTERS):
            err(at("choices"), f"{label}: needs 2 to 4 choices, has {len(choices)}")
            ok = False
        letter = raw.get("correct")
        if "correct" not in raw:
            err(line, f"{label}: a {kind} card needs 'correct' (the letter of the right choice)")
            ok = False
        elif not (
            isinstance(letter, str)
            and len(letter) == 1
            and letter.lower() in CHOICE_LETTERS[: max(len(choices), 1)]
        ):
            valid = ", ".join(CHOICE_LETTERS[: len(choices)]) or "a letter"
            err(at("correct"), f"{label}: 'correct' is {quoted(letter)}; expected one of {valid}")
            ok = False
        else:
            correct = CHOICE_LETTERS.index(letter.lower())
    else:
        for key in ("choices", "correct"):
            if key in raw and _text(kind):
                err(at(key), f"{label}: {key!r} only belongs on choice and red-flag cards")
                ok = False
    for alias in lists.get("aliases", ()):
        if not SLUG.match(alias) or alias == card_id:
            why = "is this card's own id" if alias == card_id else "is not a slug"
            err(at("aliases"), f"{label}: alias {quoted(alias)} {why}")
            ok = False
    level = raw.get("level")
    if "level" in raw and level not in LEVELS:
        err(
            at("level"),
            f"{label}: unknown level {quoted(level)} (expected one of: {', '.join(LEVELS)})",
        )
        ok = False
    if kind == "follow-up" and "parent" not in raw:
        err(line, f"{label}: a follow-up card needs 'parent' (the id of the card it follows)")
        ok = False
    if not ok:
        return None
    assert isinstance(card_id, str) and isinstance(kind, str)  # (checked above)
    return Card(
        id=card_id,
        kind=kind,
        prompt=raw["prompt"].strip(),
        answer=raw["answer"].strip(),
        deck=deck,
        file=file,
        line=line,
        explain=(raw.get("explain") or "").strip(),
        analogy=(raw.get("analogy") or "").strip(),
        choices=tuple(c.strip() for c in lists.get("choices", ())),
        correct=correct,
        demos=lists.get("demo", ()),
        parent=raw.get("parent"),
        tags=lists.get("tags", ()),
        sources=lists.get("sources", ()),
        bullets=lists.get("bullets", ()),
        points=lists.get("points", ()),
        aliases=lists.get("aliases", ()),
        level=level,
    )


def _deck_order(value: Any) -> float | None:
    """A deck's ``order:`` as a number, or None when it is not one (bool is not a number)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


# A file of more cards than this whose tail is only trivial items (``- {}``, ``-``) has the
# tail counted, not read, while the problems of the cards before it reach the cap (fastyaml.skim).
CARDS_READ_FIRST = 1000


def _item_lines(text: str, after: int) -> list[int]:
    """The line of each item of the block sequence that follows line ``after`` (the `cards:`
    key's): the lines that open an item (``- ``) at the sequence's own indentation; [] for a
    flow sequence (``cards: [...]``), whose items are then reported at the key's line."""
    lines = text.split("\n")
    out: list[int] = []
    indent: int | None = None
    for i in range(after, len(lines)):  # lines[after] is line after + 1
        stripped = lines[i].lstrip(" ")
        if not stripped.strip() or stripped.startswith("#"):
            continue
        depth = len(lines[i]) - len(stripped)
        opens = stripped.rstrip() == "-" or stripped.startswith("- ")
        if indent is None:
            if not opens:
                return out
            indent = depth
        if depth < indent or (depth == indent and not opens):
            break
        if depth == indent:
            out.append(i + 1)
    return out


def parse_deck_text(
    text: str, file: str, default_name: str, *, cards_budget: int | None = CARDS_READ_FIRST
) -> tuple[DeckInfo | None, list[Card], list[DeckError]]:
    """Parse one deck's YAML text. Returns (info, cards, errors); never raises on bad input."""
    import yaml  # here, not at the top: the deck cache serves unchanged decks without it

    from prep.engine.decks.deckyaml import load_yaml

    errors: list[DeckError] = []
    try:
        data = load_yaml(text, cards_budget=cards_budget)
    except Refused as exc:
        return None, [], [DeckError(file, exc.line, exc.message)]
    except RecursionError:
        return None, [], [DeckError(file, 1, f"nested more than {MAX_DEPTH} levels deep")]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        problem = _one_line(exc.problem or exc.context or "invalid YAML")
        if exc.context_mark is not None and "quoted scalar" in (exc.context or ""):
            # the scanner notices only where the text ends: name where the quote opened
            quote = text[exc.context_mark.index] if exc.context_mark.index < len(text) else '"'
            line = exc.context_mark.line + 1
            problem = f"unclosed {quote} quote (the text quoted here never ends)"
        return None, [], [DeckError(file, line, f"YAML syntax error: {problem}")]
    except yaml.YAMLError as exc:
        return None, [], [DeckError(file, 1, f"YAML error: {_one_line(str(exc))}")]

    if data is None:
        return None, [], [DeckError(file, 1, "empty deck file (expected a mapping with 'cards')")]
    if not isinstance(data, dict):
        return None, [], [DeckError(file, 1, "a deck file must be a mapping with a 'cards' list")]
    key_lines = getattr(data, "key_lines", {})
    for key, line in getattr(data, "duplicate_keys", []):
        errors.append(DeckError(file, line, f"deck field {quoted(key)} appears twice"))
    for key in data:
        if key not in DECK_KEYS:
            errors.append(
                DeckError(
                    file,
                    key_lines.get(key, 1),
                    f"unknown deck field {quoted(key)} (known: {', '.join(sorted(DECK_KEYS))})",
                )
            )
    for key in ("title", "description"):
        if key not in data:
            continue
        if not _text(data[key]):
            errors.append(
                DeckError(file, key_lines.get(key, 1), f"deck field {key!r} must be non-empty text")
            )
        elif (why := _control_problem(data[key])) is not None:
            errors.append(DeckError(file, key_lines.get(key, 1), f"deck field {key!r}: {why}"))
    order = None
    if "order" in data:
        order = _deck_order(data["order"])
        if order is None:
            errors.append(
                DeckError(
                    file,
                    key_lines.get("order", 1),
                    f"deck field 'order' must be a number (e.g. order: 50), not {quoted(data['order'])}",
                )
            )
    name = data.get("deck", default_name)
    if not (isinstance(name, str) and SLUG.match(name)):
        errors.append(
            DeckError(file, key_lines.get("deck", 1), f"deck name {quoted(name)} is not a slug")
        )
        name = default_name
    raw_cards = data.get("cards")
    if not isinstance(raw_cards, list):
        errors.append(DeckError(file, key_lines.get("cards", 1), "'cards' must be a list of cards"))
        raw_cards = []
    title, description = data.get("title"), data.get("description")
    info = DeckInfo(
        name=name,
        line=key_lines.get("deck", 1),
        title=title.strip() if _text(title) and not _control_problem(title) else name,
        description=description.strip()
        if _text(description) and not _control_problem(description)
        else "",
        file=file,
        order=order,
    )
    cards = []
    fallback = key_lines.get("cards", 1)
    item_lines: list[int] | None = None  # each card item's line, found once when needed
    unread = getattr(raw_cards, "skipped", 0)  # trivial items the reader counted, not read
    for n, raw in enumerate(raw_cards):
        if len(errors) >= MAX_ERRORS_PER_FILE:  # a file of broken cards: stop here, say so
            rest = len(raw_cards) + unread - n
            errors.append(
                DeckError(
                    file,
                    getattr(raw, "line", fallback),
                    f"... {rest:,} more card{'s' if rest != 1 else ''} from here on not "
                    f"checked (over {MAX_ERRORS_PER_FILE} problems above; fix those first)",
                )
            )
            break
        if isinstance(raw, dict) and _text(raw.get("id")):
            info.declared.append((raw["id"], getattr(raw, "line", fallback)))
        where = fallback
        if not isinstance(raw, dict):  # a scalar or a list knows no line: find its `- `
            items = item_lines if item_lines is not None else _item_lines(text, fallback)
            item_lines = items
            where = items[n] if n < len(items) else fallback
        card = _parse_card(raw, name, file, where, errors)
        if card is not None:
            cards.append(card)
            info.card_ids.append(card.id)
    else:
        if unread:  # the cap was not reached: the unread items are needed after all
            return parse_deck_text(text, file, default_name, cards_budget=None)
    return info, cards, errors
