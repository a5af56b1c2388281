"""Words in a message: how a count and its noun are written (``1 review``, ``2 reviews``), and
how a value from outside (an argument, a file name, a setting, a line of a file) is shown in
one line of a message: control characters as escapes, and a byte that is not UTF-8 (which
Python decodes to a surrogate, \\udcff) as that byte, \\xff. One module at the engine's root
so that every room (the store too, which may not import the decks) quotes alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# In a repr: an escaped backslash (kept as it is), or a byte of a file name or argument that
# is not UTF-8 (surrogateescape's \udc80-\udcff), which one_line_safe writes as that byte.
_REPR_BYTE = re.compile(r"(\\\\)|\\udc([89a-f][0-9a-f])")


def quoted(value: Any, limit: int = 60) -> str:
    """``repr(value)`` shortened for an error message: a hostile value stays one short line of
    at most ``limit`` characters. A byte that is not UTF-8 (an argument's or a file name's,
    ``$'\\xff'``) shows as \\xff, as one_line_safe writes it, not as the surrogate \\udcff
    that Python decodes it to. Text cut short keeps its closing quote, then "…" ('xxxx'…):
    where the value ends stays plain, and no escape is cut in half."""
    if isinstance(value, (dict, list)):
        text = f"a {'mapping' if isinstance(value, dict) else 'list'} of {len(value)} item(s)"
        return text
    text = _shown(value)
    if len(text) <= limit:
        return text
    if not isinstance(value, str):
        return text[: limit - 1] + "…"
    low, high = 0, limit  # the most characters whose quoted text fits: between the two
    while high - low > 1:  # (an escape is longer than its character: a search, not a slice)
        mid = (low + high) // 2
        low, high = (mid, high) if len(_shown(value[:mid])) <= limit - 1 else (low, mid)
    return _shown(value[:low]) + "…"


def _shown(value: Any) -> str:
    return _REPR_BYTE.sub(lambda m: m.group(1) or f"\\x{m.group(2)}", repr(value))


def quoted_all(values: Iterable[Any], limit: int = 60) -> str:
    """Each of ``values`` quoted (as ``quoted`` does), joined by ", ": a list from a user."""
    return ", ".join(quoted(v, limit) for v in values)


# ... and the surrogates: a file name's bytes that are not UTF-8 arrive as \udc80-\udcff
# (surrogateescape); printed as they are they raise UnicodeEncodeError or show as "?"
_ANY_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_SHOWN_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def _escape(m: re.Match[str]) -> str:
    """A control character as its Python escape (\\x1b, \\n); a byte of a file name that is
    not UTF-8 as that byte (\\xff, as ``os.fsencode(name)`` holds it); another lone
    surrogate as its escape (\\ud800)."""
    char = m.group()
    if "\udc80" <= char <= "\udcff":
        return f"\\x{ord(char) - 0xDC00:02x}"
    return repr(char)[1:-1]


def one_line_safe(text: str) -> str:
    """``text`` with every control character (newline and tab too) written as its escape, and
    a file name's bytes that are not UTF-8 as \\xff: safe to print as one line on a
    terminal, whatever its encoding (never a UnicodeEncodeError)."""
    return _ANY_CONTROL.sub(_escape, text)


def text_safe(text: str) -> str:
    """``text`` with its control characters written as escapes, lines and tabs kept: text from
    outside (a typed or pasted answer, an error) that a terminal must show, not obey."""
    return _SHOWN_CONTROL.sub(_escape, text)


def count(n: int, noun: str, plural: str | None = None, *, grouped: bool = False) -> str:
    """``1 day``, ``2 days``, ``0 reviews`` (``plural`` for irregular nouns; ``grouped``:
    the number with thousands separators, ``40,000 cards``)."""
    number = f"{n:,}" if grouped else str(n)
    return f"{number} {noun if n == 1 else plural or noun + 's'}"


def is_utf8(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8 (SQLite's text): an argument with a byte that
    is not UTF-8 holds a surrogate (\\udcff), which cannot."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
