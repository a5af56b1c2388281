"""A fast reader for the YAML that decks are written in, beside the hardened loader.

The first open of a large collection spends most of its time turning YAML into Python
objects: libyaml scans fast, but PyYAML builds every node and constructs every value in
Python (0.7 s for a 1.8 MB deck of 4,000 cards). Decks use a small part of YAML: block
mappings and sequences, plain and quoted one-line scalars, one-line flow lists and mappings,
``>``/``|`` block scalars, comments. ``fast_load`` reads exactly that part, line by line, and
builds the same objects the hardened loader (deckyaml.py) builds, line numbers included:
``_LineDict`` with ``line``, ``key_lines`` and ``duplicate_keys``.

It decides only what it is sure of. Anything else raises ``Undecided`` and the caller
(``deckyaml.load_yaml``) reads the file with the hardened loader, so every refusal stays
that loader's: anchors, aliases (``&``/``*``) and tags (``!``) are never read here, nor
directives, document markers, tabs, carriage returns, odd line breaks, control characters,
multi-line plain or quoted scalars, a scalar that would resolve to a date, a float written
oddly or an int of many digits, a key that is neither a plain word nor one-line quoted
text, flow collections across lines, nesting deeper than ``MAX_FAST_DEPTH``, and every syntax
error. tests/test_fastyaml.py holds the two loaders to identical results on every bundled deck
and a corpus of odd, hostile and random YAML.

A deck of a million empty cards is refused by its first fifty: ``fast_load(cards_budget=N)``
reads N items of the card list and, when everything after them is trivial items (``- {}``,
``-``), only counts those (``Cards.skipped``); parse_deck_text reads the file again whole in
the rare case its error cap was not reached by then.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from prep.engine.decks.refusal import MAX_DEPTH


class Undecided(Exception):
    """The text is outside the subset read here: the hardened loader reads it."""


class _LineDict(dict):
    """A dict that remembers the 1-based line of itself and of each key (as deckyaml's)."""

    line: int = 0
    key_lines: dict[Any, int]
    duplicate_keys: list[tuple[Any, int]]


# Well below the hardened loader's MAX_DEPTH, so that its refusal of deep nesting is its own.
MAX_FAST_DEPTH = MAX_DEPTH // 2

# Everything the subset never contains, anywhere in the file: tabs, CR and the other YAML
# line breaks (NEL, LS, PS), a BOM, C0/C1 controls and DEL, surrogates, non-characters.
_ODD = re.compile(
    "[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
)
# Lines that may start or end a document, or carry a directive.
_MARKER = re.compile(r"^(?:---|\.\.\.)(?:[ ]|$)|^%", re.M)

# A plain key and the spaces after its colon.
_KEY = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_-]*):(?: +|$)")
_DQ = re.compile(r'"([^"\\]*(?:\\.[^"\\]*)*)"')
_SQ = re.compile(r"'([^']*(?:''[^']*)*)'")
_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)")
_SIMPLE_ESCAPES = {
    "0": "\0",
    "a": "\x07",
    "b": "\x08",
    "t": "\t",
    "n": "\n",
    "v": "\x0b",
    "f": "\x0c",
    "r": "\r",
    "e": "\x1b",
    " ": " ",
    '"': '"',
    "\\": "\\",
    "/": "/",
    "N": "\x85",
    "_": "\xa0",
    "L": "\u2028",
    "P": "\u2029",
}
# A plain scalar in block context: no indicator first, no ": " or " #" inside.
_PLAIN_FIRST_BAD = frozenset("-?:,[]{}#&*!|>'\"%@`")
_FLOW_PLAIN = re.compile(r"[^\s,\[\]{}:#?'\"&*!|>%@`-][^,\[\]{}:#?]*")
_BLOCK_HEADER = re.compile(r"([|>])([-+]?) *\Z")
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]{0,17})\Z")
_FLOAT = re.compile(r"[-+]?(?:0|[1-9][0-9]{0,17})\.[0-9]{0,17}(?:[eE][-+][0-9]{1,3})?\Z")

_RESOLVERS = Resolver.yaml_implicit_resolvers
_WILDCARD = _RESOLVERS.get(None, [])
_BOOLS = SafeConstructor.bool_values
_STR, _NULL = "tag:yaml.org,2002:str", "tag:yaml.org,2002:null"
_BOOL, _INT_TAG = "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"


def _resolve(value: str) -> Any:
    """A plain scalar's value as PyYAML's resolver and SafeConstructor give it; Undecided for
    the kinds not read here (dates, merge keys, odd numbers)."""
    resolvers = _RESOLVERS.get(value[:1] if value else "")
    if _WILDCARD:  # (none in PyYAML's own table)
        resolvers = (resolvers or []) + _WILDCARD
    if not resolvers:
        return value
    tag = next((tag for tag, regexp in resolvers if regexp.match(value)), None)
    if tag is None:
        return value
    if tag == _NULL:
        return None
    if tag == _BOOL:
        return _BOOLS[value.lower()]
    if tag == _INT_TAG and _INT.match(value):
        return int(value)
    if tag == _FLOAT_TAG and _FLOAT.match(value):
        return float(value)
    raise Undecided(value)


_KEYS: dict[str, Any] = {}  # plain keys read so far, resolved (few: a deck's field names)


def _resolve_key(word: str) -> Any:
    key = _resolve(word)
    if key is not None and len(_KEYS) < 1000:
        _KEYS[word] = key
    return key


_QUOTED_KEY = re.compile(r"""(?:"([^"\\]*(?:\\.[^"\\]*)*)"|'([^']*(?:''[^']*)*)'):(?: +|$)""")


def _key(body: str) -> tuple[Any, int] | None:
    """The key a mapping line starts with (a plain word or a quoted text, then ": " or ":" at
    the end) and where its value starts; None when the line does not start with one."""
    m = _KEY.match(body)
    if m is not None:
        key = _KEYS.get(m.group(1))
        return (_resolve_key(m.group(1)) if key is None else key), m.end()
    m = _QUOTED_KEY.match(body)
    if m is None:
        return None
    if m.group(1) is not None:
        text = m.group(1)
        return (_ESCAPE.sub(_unescape, text) if "\\" in text else text), m.end()
    return m.group(2).replace("''", "'"), m.end()


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    if len(code) == 1:
        try:
            return _SIMPLE_ESCAPES[code]
        except KeyError:
            raise Undecided(code) from None
    point = int(code[1:], 16)
    if 0xD800 <= point <= 0xDFFF or point > 0x10FFFF:
        raise Undecided(code)
    return chr(point)


def _new_dict(line: int) -> _LineDict:
    result = _LineDict()
    result.line = line
    result.key_lines = {}
    result.duplicate_keys = []
    return result


def _put(mapping: _LineDict, key: Any, value: Any, line: int) -> None:
    """As deckyaml's _construct_mapping: a repeated key is remembered, the last value kept."""
    if key in mapping:
        mapping.duplicate_keys.append((key, line))
    mapping[key] = value
    mapping.key_lines[key] = line


class Cards(list):
    """A deck's card list read up to a budget; ``skipped`` trivial items follow (see skim)."""

    skipped: int = 0


class _Reader:
    def __init__(self, text: str, cards_budget: int | None = None) -> None:
        if _ODD.search(text) or _MARKER.search(text):
            raise Undecided("outside the subset")
        self.ends_with_break = text.endswith("\n")
        self.lines = text.split("\n")
        if self.ends_with_break:
            self.lines.pop()
        self.n = len(self.lines)
        self.line_no = 0  # the line of the value being read (a flow mapping's line)
        self.budget = cards_budget
        self.cards_next = False  # the next sequence read is the deck's card list

    # --- lines ------------------------------------------------------------------------------

    def skip(self, i: int) -> int:
        """The index of the next line with content (not blank, not only a comment)."""
        lines, n = self.lines, self.n
        while i < n:
            stripped = lines[i].lstrip(" ")
            if stripped and stripped[0] != "#":
                return i
            i += 1
        return i

    def indent(self, i: int) -> int:
        line = self.lines[i]
        return len(line) - len(line.lstrip(" "))

    # --- scalars and flow on one line -------------------------------------------------------

    def tail(self, rest: str) -> None:
        """What follows a value on its line: nothing, or a comment after a space."""
        if rest and not (rest[0] == " " and rest.lstrip(" ")[:1] in ("", "#")):
            raise Undecided(rest)

    def inline(self, rest: str, depth: int) -> tuple[Any, str]:
        """A quoted scalar or a flow collection at the start of ``rest``: (value, what follows)."""
        first = rest[0]
        if first == '"':
            m = _DQ.match(rest)
            if m is None:
                raise Undecided(rest)
            body = m.group(1)
            return (_ESCAPE.sub(_unescape, body) if "\\" in body else body), rest[m.end() :]
        if first == "'":
            m = _SQ.match(rest)
            if m is None:
                raise Undecided(rest)
            return m.group(1).replace("''", "'"), rest[m.end() :]
        if depth > MAX_FAST_DEPTH:
            raise Undecided("deep")
        if first == "[":
            items: list[Any] = []
            rest = rest[1:].lstrip(" ")
            if rest[:1] == "]":
                return items, rest[1:]
            while True:
                value, rest = self.flow_item(rest, depth + 1)
                items.append(value)
                rest = rest.lstrip(" ")
                if rest[:1] == "]":
                    return items, rest[1:]
                if rest[:1] != ",":
                    raise Undecided(rest)
                rest = rest[1:].lstrip(" ")
                if rest[:1] in ("]", ",", ""):
                    raise Undecided(rest)  # a trailing or empty entry
        if first == "{":
            mapping = _new_dict(self.line_no)
            rest = rest[1:].lstrip(" ")
            if rest[:1] == "}":
                return mapping, rest[1:]
            while True:
                found = _key(rest)
                if found is None or rest[found[1] - 1] != " ":
                    raise Undecided(rest)
                key = found[0]
                value, rest = self.flow_item(rest[found[1] :], depth + 1)
                _put(mapping, key, value, self.line_no)
                rest = rest.lstrip(" ")
                if rest[:1] == "}":
                    return mapping, rest[1:]
                if rest[:1] != ",":
                    raise Undecided(rest)
                rest = rest[1:].lstrip(" ")
                if rest[:1] in ("}", ",", ""):
                    raise Undecided(rest)
        raise Undecided(rest)

    def flow_item(self, rest: str, depth: int) -> tuple[Any, str]:
        if rest[:1] in ('"', "'", "[", "{"):
            return self.inline(rest, depth)
        m = _FLOW_PLAIN.match(rest)
        if m is None:
            raise Undecided(rest)
        after = rest[m.end() :]
        if after[:1] not in (",", "]", "}"):
            raise Undecided(rest)
        value = m.group(0).rstrip(" ")
        return _resolve(value), after

    def scalar(
        self, rest: str, i: int, indent: int, depth: int, block_ok: bool = False
    ) -> tuple[Any, int]:
        """The value that starts at ``rest`` on line ``i`` (a mapping's value or a sequence's
        item at ``indent``): (value, the next line to read)."""
        first = rest[0]
        if first in ('"', "'", "[", "{"):
            value, after = self.inline(rest, depth)
            self.tail(after)
            return value, i + 1
        if first in "|>" and block_ok:
            return self.block_scalar(rest, i, indent)
        if first in _PLAIN_FIRST_BAD and not (first in "-?:" and rest[1:2] not in ("", " ")):
            raise Undecided(rest)  # (-x, ?x and :x are text; "- ", "? ", ": " are not)
        cut = rest.find(" #")
        if cut >= 0:
            rest = rest[:cut]
        value = rest.rstrip(" ")
        if ": " in value or value.endswith(":"):
            raise Undecided(value)
        return _resolve(value), i + 1

    def block_scalar(self, header: str, i: int, indent: int) -> tuple[str, int]:
        m = _BLOCK_HEADER.match(header)
        if m is None:
            raise Undecided(header)
        folded, chomp = m.group(1) == ">", m.group(2)
        lines, n = self.lines, self.n
        j = i + 1
        if j >= n or not lines[j].strip(" "):
            raise Undecided("a block scalar that starts with a blank line")
        block = self.indent(j)
        if block <= indent:
            raise Undecided("an empty block scalar")
        chunks: list[str] = []
        breaks = 0  # blank lines since the last line of text
        last = j
        flush_before = True  # the last line of text started at the block's indent
        while j < n:
            line = lines[j]
            stripped = line.lstrip(" ")
            if not stripped:
                if len(line) > block:
                    raise Undecided("spaces past the indent on a blank line")
                breaks += 1
                j += 1
                continue
            if len(line) - len(stripped) < block:
                break
            # a more indented line keeps its breaks in a folded scalar (as PyYAML's scanner)
            flush = len(line) - len(stripped) == block
            if chunks:
                if not (folded and flush and flush_before):
                    chunks.append("\n" * (breaks + 1))
                else:
                    chunks.append("\n" * breaks if breaks else " ")
            chunks.append(line[block:])
            flush_before = flush
            breaks = 0
            last = j
            j += 1
        final_break = "\n" if (last + 1 < n or self.ends_with_break) else ""
        if chomp == "-":
            pass
        elif chomp == "+":
            if j >= n and not self.ends_with_break:
                raise Undecided("kept breaks at the end of the file")
            chunks.append(final_break + "\n" * breaks)
        else:
            chunks.append(final_break)
        return "".join(chunks), j

    # --- block structure --------------------------------------------------------------------

    def node(self, i: int, parent: int, depth: int) -> tuple[Any, int]:
        """The block collection on content line ``i`` (indented past ``parent``)."""
        if depth > MAX_FAST_DEPTH:
            raise Undecided("deep")
        indent = self.indent(i)
        body = self.lines[i][indent:]
        if body == "-" or body.startswith("- "):
            return self.sequence(i, indent, depth)
        if _key(body) is None:
            raise Undecided(body)  # a scalar on a line of its own, over several lines
        return self.mapping(i, indent, depth, body)

    def value_below(self, i: int, indent: int, depth: int, in_mapping: bool) -> tuple[Any, int]:
        """The value of a key or item whose line ends after its indicator: the block below,
        an indentless sequence (a mapping's value only), or null."""
        j = self.skip(i + 1)
        if j < self.n:
            k = self.indent(j)
            if k > indent:
                return self.node(j, indent, depth + 1)
            if k == indent and in_mapping:
                body = self.lines[j][k:]
                if body == "-" or body.startswith("- "):
                    return self.sequence(j, k, depth + 1)
        return None, i + 1

    def skim(self, i: int, indent: int, items: list[Any]) -> Cards | None:
        """The deck's card list cut after ``budget`` items, when every line from ``i`` to the
        end is one trivial item (``- {}``, ``-``, ``- id:``, ``- word``...) at this indent, a
        blank line or a comment: what follows is then certainly YAML, and only its count of
        items is kept. None for any other shape (the caller reads on)."""
        pad = " " * indent
        item = re.compile(rf"{pad}-(?: +(?:\{{\}}|\[\]|''|\"\"|~|[A-Za-z_][A-Za-z_-]*:?))? *\Z")
        other = re.compile(r" *(?:#.*)?\Z")  # a blank line or a comment
        skipped = 0
        for line, count in Counter(self.lines[i:]).items():  # (a few distinct lines)
            if item.match(line):
                skipped += count
            elif not other.match(line):
                return None
        cards = Cards(items)
        cards.skipped = skipped
        return cards

    def mapping(self, i: int, indent: int, depth: int, body: str) -> tuple[_LineDict, int]:
        self.cards_next = False
        result = _new_dict(i + 1)
        key_lines, lines, n = result.key_lines, self.lines, self.n
        while True:
            found = _key(body)
            if found is None:
                raise Undecided(body)
            key, start = found
            rest = body[start:]
            key_line = self.line_no = i + 1
            first = rest[:1]
            if first == '"' and (q := _DQ.match(rest)) is not None and q.end() == len(rest):
                value: Any = q.group(1)  # the common case: a quoted line of text
                if "\\" in value:
                    value = _ESCAPE.sub(_unescape, value)
                i += 1
            elif not first or first == "#":
                self.cards_next = depth == 1 and key == "cards" and self.budget is not None
                value, i = self.value_below(i, indent, depth, in_mapping=True)
                self.cards_next = False
            else:
                value, i = self.scalar(rest, i, indent, depth + 1, block_ok=True)
            if key in result:
                result.duplicate_keys.append((key, key_line))
            result[key] = value
            key_lines[key] = key_line
            if i < n:  # the next line, most often a key of this mapping
                body = lines[i].lstrip(" ")
                if not body or body[0] == "#":
                    i = self.skip(i)
                    if i >= n:
                        return result, i
                    body = lines[i].lstrip(" ")
            else:
                return result, i
            k = len(lines[i]) - len(body)
            if k < indent:
                return result, i
            if k > indent:
                raise Undecided("a line indented past its mapping")

    def sequence(self, i: int, indent: int, depth: int) -> tuple[list[Any], int]:
        items: list[Any] = []
        budget, self.cards_next = (self.budget if self.cards_next else None), False
        while True:
            if budget is not None and len(items) >= budget:
                cut = self.skim(i, indent, items)
                if cut is not None:
                    return cut, self.n
                budget = None
            body = self.lines[i][indent:]
            if body == "-":
                rest = ""
            elif body.startswith("- "):
                rest = body[2:].lstrip(" ")
            else:
                return items, i  # the mapping around an indentless sequence goes on
            self.line_no = i + 1
            if not rest or rest[0] == "#":
                value, i = self.value_below(i, indent, depth, in_mapping=False)
            elif rest.startswith("- ") or rest == "-":  # a sequence starting on this line
                if depth + 1 > MAX_FAST_DEPTH:
                    raise Undecided("deep")
                value, i = self.sequence(i, len(self.lines[i]) - len(rest), depth + 1)
            elif _key(rest) is not None:
                column = len(self.lines[i]) - len(rest)
                if depth + 1 > MAX_FAST_DEPTH:
                    raise Undecided("deep")
                value, i = self.mapping(i, column, depth + 1, rest)
            else:
                value, i = self.scalar(rest, i, indent, depth + 1)
            items.append(value)
            i = self.skip(i)
            if i >= self.n:
                return items, i
            k = self.indent(i)
            if k < indent:
                return items, i
            if k > indent:
                raise Undecided("a line indented past its sequence")


def fast_load(text: str, cards_budget: int | None = None) -> _LineDict:
    """The deck mapping in ``text`` as the hardened loader builds it; raises Undecided for
    anything outside the subset (the caller then uses the hardened loader).

    ``cards_budget``: read at most that many items of the top-level ``cards`` list when all
    the rest of the file is trivial items (a file of empty cards): the list is then a
    ``Cards`` that counts the items left unread, and the caller, which stops checking a file
    after so many problems, reads the file again without a budget if it needs them."""
    reader = _Reader(text, cards_budget)
    i = reader.skip(0)
    if i >= reader.n or reader.indent(i) != 0:
        raise Undecided("not a mapping at the top")
    body = reader.lines[i]
    if _key(body) is None:
        raise Undecided("not a mapping at the top")
    reader.line_no = i + 1
    result, i = reader.mapping(i, 0, 1, body)
    if reader.skip(i) < reader.n:
        raise Undecided("text after the mapping")
    return result
