"""What a typed answer says: the text without what shows nothing at its ends.

An answer of only zero-width characters (U+200B, a byte-order mark, a word joiner), controls
(NUL) or spaces is no answer, as an empty one is: it used to be graded 0 of N points. Every front
end that takes a typed answer (`prep grade`, the app's answer box, the mock interview, line
mode) asks here.
"""

from __future__ import annotations

import unicodedata


def _shows_nothing(char: str) -> bool:
    # spaces and line breaks, controls (Cc: NUL, ESC, C1) and format characters (Cf: zero-width
    # space and joiners, BOM, bidi marks, soft hyphen)
    return char.isspace() or unicodedata.category(char) in ("Cc", "Cf")


def answer_text(text: str) -> str:
    """``text`` with what shows nothing removed from both ends; "" when nothing else is left."""
    start, end = 0, len(text)
    while start < end and _shows_nothing(text[start]):
        start += 1
    while end > start and _shows_nothing(text[end - 1]):
        end -= 1
    return text[start:end]
