"""Text from outside (a user's file, a model name, an answer) made safe to print on a terminal:
demos/ may not import engine/ (engine/decks/deck.py has the same rules for the rest of prep),
so the demos' command line and the grader's output take them from here.

- ``one_line_safe``: every control character (newline, tab, ESC, C1 such as CSI \\x9b) written
  as its escape, so the text is one line the terminal shows and never obeys;
- ``json_line``: ``json.dumps`` that keeps non-ASCII text readable (``ensure_ascii=False``) but
  writes DEL and the C1 controls (\\x7f-\\x9f) as \\u escapes: json escapes only those below
  \\x20, and a raw \\x9b is CSI to a terminal reading the output.
"""

from __future__ import annotations

import json
import re
from typing import Any

_ANY_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_C1 = re.compile(r"[\x7f-\x9f]")


def one_line_safe(text: str) -> str:
    """``text`` with every control character written as its Python escape (\\x1b, \\n)."""
    return _ANY_CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def json_line(value: Any) -> str:
    """``value`` as one line of JSON, no raw control character in it (C1 as \\u0080-\\u009f).
    These characters occur only inside JSON strings (the syntax is ASCII), where \\u escapes
    mean the same characters."""
    return _C1.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(value, ensure_ascii=False))
