"""Text from outside (a model name, a file path, an error quoting one) made safe to print on a
terminal: demos/ may not import engine/ (engine/decks/deck.py has the same rule for the rest of
prep), so the demos' command line and progress lines take it from here.

``one_line_safe``: every control character (newline, tab, ESC, C1 such as CSI \\x9b) written as
its escape, so the text is one line the terminal shows and never obeys.
"""

from __future__ import annotations

import re

# ... and the surrogates: a file name's bytes that are not UTF-8 (surrogateescape, \udc80-\udcff)
_ANY_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def _escape(m: re.Match[str]) -> str:
    char = m.group()
    if "\udc80" <= char <= "\udcff":  # a byte of a file name that is not UTF-8: that byte
        return f"\\x{ord(char) - 0xDC00:02x}"
    return repr(char)[1:-1]


def one_line_safe(text: str) -> str:
    """``text`` with every control character written as its Python escape (\\x1b, \\n), and a
    file name's bytes that are not UTF-8 as \\xff (never a UnicodeEncodeError)."""
    return _ANY_CONTROL.sub(_escape, text)
