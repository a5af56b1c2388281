"""The YAML side of deck parsing: a SafeLoader that remembers every key's line, and the
checks run on the composed tree before anything is built.

Its own module so that ``import prep.engine.decks.deck`` does not import PyYAML: the deck cache in
the database serves unchanged decks without parsing them, so the app starts without it.
"""

from __future__ import annotations

import gc
from typing import Any

import yaml

from prep.engine.decks.fastyaml import Undecided, _LineDict, fast_load
from prep.engine.decks.refusal import MAX_DEPTH, Refused, one_line

# The C parser (libyaml) when PyYAML has it: same nodes and marks, several times faster.
_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _LineLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as exc:
            # SafeConstructor's own conversions: a date like 2024-13-45, an int of 5000 digits
            line = node.start_mark.line + 1
            raise Refused(line, f"cannot read this value: {one_line(str(exc))}") from None


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> _LineDict:
    loader.flatten_mapping(node)
    result = _LineDict()
    result.line = node.start_mark.line + 1
    result.key_lines = {}
    result.duplicate_keys = []
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        try:
            hash(key)
        except TypeError:
            key = str(key)
        if key in result:
            result.duplicate_keys.append((key, line))
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = line
    return result


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _tree_problem(root: yaml.Node) -> tuple[int, str] | None:
    """(line, why) when the composed YAML is not deck-shaped enough to build safely.

    Aliases are refused: ``*name`` reuses a node, so a few hundred bytes of nested aliases
    expand to gigabytes once the value is printed or compared (the "billion laughs"). A
    reused node is how an alias shows in the composed tree, and a recursive one (``&a [*a]``)
    is a node inside itself; both are found here, before anything is constructed. So is
    structure nested deeper than any deck needs. The walk is iterative: no recursion limit.
    """
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, int, int]] = [(root, 1, root.start_mark.line + 1)]
    while stack:
        node, depth, line = stack.pop()
        if id(node) in seen:
            return line, "YAML aliases (*name) are not allowed in decks; write the value out"
        seen.add(id(node))
        if depth > MAX_DEPTH:
            return line, f"nested more than {MAX_DEPTH} levels deep; a deck is a list of cards"
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                key_line = key.start_mark.line + 1
                if (
                    not isinstance(key, yaml.ScalarNode) and id(key) not in seen
                ):  # (an alias: below)
                    return key_line, "a mapping key must be plain text, not a list or mapping"
                stack.append((key, depth + 1, key_line))
                stack.append((value, depth + 1, key_line))
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                stack.append((item, depth + 1, item.start_mark.line + 1))
    return None


def _first_alias_line(text: str) -> int | None:
    """The line of the first ``*alias`` (only asked once an alias has been found)."""
    try:
        for event in yaml.parse(text, Loader=_BaseLoader):
            if isinstance(event, yaml.AliasEvent):
                return event.start_mark.line + 1
    except yaml.YAMLError:
        pass
    return None


def load_yaml(text: str, *, fast: bool = True, cards_budget: int | None = None) -> Any:
    """The YAML document in ``text``, built with line numbers; raises yaml.YAMLError or
    Refused before building anything unsafe. The plain decks most files are go through
    fastyaml's reader (the same objects, several times faster); whatever it does not decide,
    and everything with ``fast=False``, through the hardened loader below. ``cards_budget``:
    see fastyaml.fast_load (the hardened loader reads every card)."""
    # a deck is many small containers, none of them garbage: the cyclic collector would walk
    # them again and again (it more than doubled the read of a 2 MB deck of empty cards)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _load(text, fast, cards_budget)
    finally:
        if was_enabled:
            gc.enable()


def _load(text: str, fast: bool, cards_budget: int | None) -> Any:
    if fast:
        try:
            return fast_load(text, cards_budget)
        except Undecided:
            pass
    loader = _LineLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        problem = _tree_problem(node)
        if problem is not None:
            line, message = problem
            if message.startswith("YAML aliases"):
                line = _first_alias_line(text) or line
            raise Refused(line, message)
        return loader.construct_document(node)
    finally:
        loader.dispose()
