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

Size: about 920 lines, because a card's validation (every field's refusal and its message),
the deck file's reading and the checks across files share the error vocabulary (DeckError,
quoted, the control-character rules). The next split is the checks across files
(``assemble``, ``_drop_unservable``) into their own module beside deckcache.py, which calls them
on the cached outline; the Card/Collection types would stay here.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import re
import stat
from collections.abc import Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from prep.engine.decks.refusal import MAX_DEPTH, Refused
from prep.engine.decks.refusal import one_line as _one_line

if TYPE_CHECKING:
    from prep.engine.store import Store

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
# Control characters (C0 and C1, DEL) other than newline and tab: ESC starts the terminal
# escape sequences (CSI, OSC) that recolour or retitle a terminal when a card is printed.
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def quoted(value: Any, limit: int = 60) -> str:
    """``repr(value)`` shortened for an error message: a hostile value stays one short line."""
    if isinstance(value, (dict, list)):
        text = f"a {'mapping' if isinstance(value, dict) else 'list'} of {len(value)} item(s)"
        return text
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


_ANY_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def one_line_safe(text: str) -> str:
    """``text`` with every control character (newline and tab too) written as its escape:
    safe to print as one line on a terminal."""
    return _ANY_CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def _control_problem(text: str) -> str | None:
    """Why ``text`` may not be shown on a terminal, or None when it may."""
    match = CONTROL.search(text)
    if match is None:
        return None
    char = match.group()
    what = "an escape character (ESC)" if char == "\x1b" else "a control character"
    return f"{what} {char!r} at position {match.start() + 1}; remove it"


@dataclass(frozen=True)
class DeckError:
    file: str
    line: int
    message: str

    def __str__(self) -> str:
        if self.line <= 0:  # about the file as a whole (it is missing)
            return f"{self.file}: {self.message}"
        return f"{self.file}:{self.line}: {self.message}"


@dataclass(frozen=True)
class Card:
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

    @property
    def content_hash(self) -> str:
        """Hash of what the user is tested on; a change flags the card as edited."""
        payload = _TO_JSON([self.kind, self.prompt, self.answer, list(self.choices), self.correct])
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


# json.dumps(value, ensure_ascii=False), without building an encoder per call (a first fill
# hashes every card: 100k calls)
_TO_JSON = json.JSONEncoder(ensure_ascii=False).encode


@dataclass
class DeckInfo:
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
class Collection:
    """Every card of every loaded deck, in file order."""

    cards: list[Card] = field(default_factory=list)
    decks: dict[str, DeckInfo] = field(default_factory=dict)
    errors: list[DeckError] = field(default_factory=list)
    # Problems that leave every deck usable (a --questions folder without decks)
    warnings: list[DeckError] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._by_id: dict[str, Card] = {c.id: c for c in self.cards}

    def deck_ranks(self) -> dict[str, int]:
        """Each deck's place in the curriculum (0 first): the decks that declare ``order:`` by
        it (ties in file order), then the others in file order."""
        names = list(self.decks)
        ordered = sorted(
            range(len(names)),
            key=lambda i: (self.decks[names[i]].order is None, self.decks[names[i]].order or 0, i),
        )
        return {names[i]: rank for rank, i in enumerate(ordered)}

    def add(self, card: Card) -> None:
        self.cards.append(card)
        self._by_id[card.id] = card

    def get(self, card_id: str) -> Card | None:
        return self._by_id.get(card_id)

    def __contains__(self, card_id: object) -> bool:
        return card_id in self._by_id

    def content_hash_now(self, card_id: str) -> str | None:
        """The hash of the card's text as the decks hold it now (a collection over the deck
        cache reads it again: another prep may have re-read an edited deck)."""
        card = self._by_id.get(card_id)
        return None if card is None else card.content_hash

    def __len__(self) -> int:
        return len(self.cards)

    def in_deck(self, deck: str | None) -> list[Card]:
        return [c for c in self.cards if deck is None or c.deck == deck]

    def children(self, card_id: str) -> list[Card]:
        return [c for c in self.cards if c.parent == card_id]

    def cards_for_demo(self, name: str) -> list[Card]:
        return [c for c in self.cards if name in c.demos]

    def ids_for_demo(self, name: str) -> list[str]:
        """The ids of the cards that cite demo ``name``, in order."""
        return [c.id for c in self.cards if name in c.demos]

    def outline(self) -> Iterator[tuple[str, str, str | None]]:
        """(id, deck, parent) of every card, in order, without building anything."""
        return ((c.id, c.deck, c.parent) for c in self.cards)

    def unseen(
        self, store: Store, deck: str | None = None, seen: set[str] | None = None
    ) -> Iterator[tuple[str, str, str, str | None, bool]]:
        """(id, deck, kind, parent, parent seen) of each card without stored progress, in
        deck order; ``seen`` (ids with progress) may be passed in when the caller holds it."""
        if seen is None:
            seen = store.seen_ids()
        for c in self.cards:
            if (deck is None or c.deck == deck) and c.id not in seen:
                yield c.id, c.deck, c.kind, c.parent, c.parent is not None and c.parent in seen

    def deck_sizes(self) -> dict[str, int]:
        """How many cards each deck has."""
        sizes: dict[str, int] = {}
        for card in self.cards:
            sizes[card.deck] = sizes.get(card.deck, 0) + 1
        return sizes

    def new_card_groups(
        self,
        store: Store,
        deck: str | None = None,
        seen: set[str] | None = None,
        among: AbstractSet[str] | None = None,
    ) -> list[Iterator[tuple[Any, str, str, str, str | None, bool]]]:
        """The cards without progress for the new-card rotation, one iterator per (level,
        kind) group: (place, id, deck, kind, parent, parent seen), in curriculum order. A
        place is (level rank, deck rank, position in the deck order): the cards of a group
        come in place order, and places order cards across groups. Iterators are read only
        as far as the day's limit needs (the deck cache reads them from SQL in steps).
        ``among``: only the cards of these decks (the caller knows the others have none
        without progress)."""
        ranks = self.deck_ranks()
        groups: dict[tuple[int, str], list[tuple[Any, str, str, str, str | None, bool]]] = {}
        for pos, (cid, cdeck, kind, parent, parent_seen) in enumerate(
            self.unseen(store, deck, seen)
        ):
            if among is not None and cdeck not in among:
                continue
            card = self._by_id[cid]
            place = (card.level_rank, ranks.get(cdeck, len(ranks)), pos)
            groups.setdefault((card.level_rank, kind), []).append(
                (place, cid, cdeck, kind, parent, parent_seen)
            )
        return [iter(sorted(group)) for group in groups.values()]

    def unseen_by_deck(self, store: Store) -> dict[str, int] | None:
        """How many cards of each deck have no progress, when that is known without walking
        the cards; None here (a parsed collection is not reconciled with the store on load, so
        only ``unseen`` can tell), a count per deck over the deck cache."""
        return None

    def aliases(self) -> dict[str, str]:
        """{alias: the id of the card that kept it} for every usable alias (see
        engine/decks/aliases.py: one naming a live card, or claimed twice, is not usable)."""
        from prep.engine.decks.aliases import alias_map

        return alias_map(((c.id, c.aliases) for c in self.cards), self)

    def reconcile(self, store: Store) -> None:
        """Reconcile the store's progress with these cards (see Store.reconcile)."""
        store.reconcile(self.cards)

    def tag_progress(self, store: Store, mature_days: float) -> dict[str, tuple[int, int, int]]:
        """Per tag: (cards, seen, mature: stability of at least ``mature_days``)."""
        tag_cards: dict[str, list[str]] = {}
        for card in self.cards:
            for tag in card.tags:
                tag_cards.setdefault(tag, []).append(card.id)
        tagged = store.cards({cid for ids in tag_cards.values() for cid in ids})
        out = {}
        for tag, ids in tag_cards.items():
            states = [tagged[c] for c in ids if c in tagged and not tagged[c].removed]
            mature = sum((s.stability or 0) >= mature_days for s in states)
            out[tag] = (len(ids), len(states), mature)
        return out


# --- YAML with line numbers ---------------------------------------------------------------


def display_path(path: Path | str) -> str:
    """A path as the user would type it: relative to the working directory when inside it."""
    shown = str(path)
    try:
        for candidate in (os.path.abspath(path), os.path.realpath(path)):
            relative = os.path.relpath(candidate)
            if relative != os.pardir and not relative.startswith(os.pardir + os.sep):
                shown = relative
                break
    except (ValueError, OSError):
        pass
    # a file name is printed on the user's terminal too, in a one-line message: escape what
    # would control the terminal or break the line
    return one_line_safe(shown)


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
    for key in checked if CONTROL.search("\n".join(texts)) else ():
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
        card = _parse_card(raw, name, file, fallback, errors)
        if card is not None:
            cards.append(card)
            info.card_ids.append(card.id)
    else:
        if unread:  # the cap was not reached: the unread items are needed after all
            return parse_deck_text(text, file, default_name, cards_budget=None)
    return info, cards, errors


def bundled_deck_files() -> list[Path]:
    """The YAML decks shipped in the ``prep.questions`` package. The package is always a
    folder (pip installs it unpacked), so its path is read directly: importlib.resources
    would import zipfile and its readers on every start for nothing."""
    from prep import questions

    root = Path(questions.__file__).parent
    return sorted(
        (p for p in root.iterdir() if p.name.endswith((".yaml", ".yml"))), key=lambda p: p.name
    )


def deck_files_in(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted([*path.glob("*.yaml"), *path.glob("*.yml")])
    return [path]


def read_regular_file(path: Path | str, max_bytes: int, what: str = "a deck") -> bytes:
    """The bytes of a regular file of at most ``max_bytes``. Raises OSError (with a message
    for the user) otherwise: a FIFO or a device such as /dev/zero is refused at once (opened
    without blocking, checked before any byte is read); so is a symbolic link loop."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(exc.errno, "a symbolic link loop") from None
        raise
    limit = f"{what} is at most {max_bytes / 1024 / 1024:g} MB"
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise OSError(errno.EISDIR, f"is a folder, not {what} file")
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a device, FIFO or socket)")
        if info.st_size > max_bytes:
            raise OSError(errno.EFBIG, f"{info.st_size} bytes; {limit}")
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 16):
            size += len(chunk)
            if size > max_bytes:  # grew while we read
                raise OSError(errno.EFBIG, limit)
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_deck_file(path: Path) -> str:
    """The text of one deck file (see read_regular_file; at most MAX_DECK_BYTES of UTF-8)."""
    data = read_regular_file(path, MAX_DECK_BYTES)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        column = exc.start - data.rfind(b"\n", 0, exc.start)
        error = OSError(errno.EILSEQ, f"not UTF-8 text (byte {column} of the line)")
        error.line = data.count(b"\n", 0, exc.start) + 1  # type: ignore[attr-defined]
        raise error from None


def collect_deck_files(
    paths: Iterable[Path] | None, include_bundled: bool, warnings: list[DeckError]
) -> list[tuple[str, Path, str]]:
    """(real path, path, shown name) of each deck file to load, each file once: the bundled
    ones (unless told not to), then each path's (a file, or a folder's *.yaml / *.yml); a
    path with none is a warning in ``warnings``."""
    files: list[Path] = list(bundled_deck_files()) if include_bundled else []
    for p in paths or ():
        found = deck_files_in(Path(p))
        if not found:
            warnings.append(
                DeckError(display_path(p), 1, "no deck here (no *.yaml or *.yml files)")
            )
        files.extend(found)
    out, seen = [], set()
    for path in files:
        key = os.path.realpath(path)  # never raises, even on a symlink loop
        if key not in seen:
            seen.add(key)
            out.append((key, path, display_path(path)))
    return out


def load_collection(
    paths: Iterable[Path] | None = None,
    *,
    demo_names: Sequence[str] | None = None,
    include_bundled: bool = True,
) -> Collection:
    """Load and validate decks: the bundled ones (unless told not to) plus ``paths``.

    ``paths`` may name files or folders of ``*.yaml``. ``demo_names`` is the set of demos a
    ``demo:`` field may name; None skips that check (engine stays free of torch, so the
    caller passes ``prep.demos.registry.names()``). Invalid cards are left out and every
    problem is in ``Collection.errors``.
    """
    coll = Collection()
    parsed = []
    for _, path, shown in collect_deck_files(paths, include_bundled, coll.warnings):
        text, error = read_deck_text(path, shown)
        if error is not None:
            coll.errors.append(error)
            continue
        assert text is not None
        info, cards, errors = parse_deck_text(text, shown, path.stem)
        parsed.append((shown, info, errors, cards))
    assemble(coll, parsed, demo_names)
    return coll


def read_deck_text(path: Path, shown: str) -> tuple[str | None, DeckError | None]:
    """The text of one deck file (see read_deck_file: a regular file of at most
    MAX_DECK_BYTES of UTF-8), or the one-line error saying why it cannot be read."""
    try:
        return read_deck_file(path), None
    except FileNotFoundError:
        return None, DeckError(shown, 0, "no such file or folder")
    except OSError as exc:
        line = getattr(exc, "line", 1)
        return None, DeckError(shown, line, f"cannot read: {exc.strerror or exc}")


def assemble(
    coll: Collection,
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
                    f"deck name {info.name!r} is already used by {first.file}:{first.line}; "
                    "give this deck its own `deck:` name",
                )
            )
            continue  # its cards are left out, as any invalid card is
        coll.decks[info.name] = info
        duplicates: set[int] = set()
        for card_id, line in info.declared:
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
        for card in cards:
            if card.line not in duplicates:
                coll.add(card)
        info.card_ids = [c for c in info.card_ids if c in coll]
    demo_set = set(demo_names) if demo_names is not None else None
    for card in coll.cards:
        if card.parent is not None and card.parent not in coll:
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
        if demo_set is not None:
            for name in card.demos:
                if name not in demo_set:
                    from difflib import get_close_matches

                    close = get_close_matches(name, sorted(demo_set), n=1)
                    hint = f" (did you mean {close[0]!r}?)" if close else ""
                    coll.errors.append(
                        DeckError(
                            card.file,
                            card.line,
                            f"card {quoted(card.id)}: no demo named {quoted(name)}{hint}",
                        )
                    )
    _report_cycles(coll)
    if any(getattr(c, "aliases", ()) for c in coll.cards):
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


def _report_cycles(coll: Collection) -> None:
    """One error per parent cycle, at its smallest id ("a -> b -> a"). Linear in the number of
    cards: each card is walked once (a chain of 4,000 follow-ups took 106 s when every card
    walked its whole chain and searched it as a list)."""
    done: set[str] = set()
    for card in coll.cards:
        if card.id in done:
            continue
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


def _drop_unservable(coll: Collection) -> None:
    """Leave out follow-ups that can never be served: a follow-up waits for its parent, so
    one whose parent is missing, itself, or in a cycle (and every card below it) would wait
    forever. Each is already an error above; leaving it out keeps 'valid cards' true."""
    servable: dict[str, bool] = {}
    for card in coll.cards:  # walk up each chain once, without recursion (chains may be long)
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

    keep = [c for c in coll.cards if servable[c.id]]
    if len(keep) == len(coll.cards):
        return
    dropped = {c.id for c in coll.cards} - {c.id for c in keep}
    coll.cards[:] = keep
    coll.__post_init__()
    for info in coll.decks.values():
        info.card_ids = [c for c in info.card_ids if c not in dropped]
