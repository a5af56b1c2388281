"""What a card's text may not hold: control characters, and the characters a terminal does not
show that change what it shows (bidi controls, zero-width characters...); the format
characters text needs are taken. deck.py's checks and fastdeck's one-pass reader share it."""

from __future__ import annotations

import re

# Control characters (C0 and C1, DEL) other than newline and tab: ESC starts the terminal
# escape sequences (CSI, OSC) that recolour or retitle a terminal when a card is printed.
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Characters a terminal does not show that change what it shows, refused in a card's text: the
# bidirectional controls (a right-to-left override, U+202E, makes a card read aloud other than
# it is stored; U+061C, U+200E/F, U+202A-202E, U+2066-2069), the zero-width space, word joiner
# and invisible operators (U+200B, U+2060-2064: "two\u200bwords" shows as "twowords"), the
# deprecated format characters U+206A-206F, U+FEFF (a byte order mark) inside text, the line
# and paragraph separators U+2028/2029 (a line break YAML and a terminal disagree on), the
# interlinear annotation characters U+FFF9-FFFB, the soft hyphen U+00AD (shown by some
# terminals as "-" and by others as nothing: a card would read differently on each, and no
# text needs it), the language tag U+E0001 and the layout controls of scripts and notations
# whose text no card holds (Mongolian U+180E, Egyptian U+13430-13438, Duployan
# U+1BCA0-1BCA3, musical beams U+1D173-1D17A). The tag characters U+E0020-E007F are refused
# too, except in an emoji tag sequence (U+1F3F4, tags, U+E007F: the flag of Scotland).
INVISIBLE_RANGES = (
    (0xAD, 0xAD), (0x61C, 0x61C), (0x180E, 0x180E), (0x200B, 0x200B), (0x200E, 0x200F),
    (0x2028, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F), (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB),
    (0x13430, 0x13438), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
)  # fmt: skip
# The rest of Unicode 14's format characters (Cf; tests/test_polish17.py holds the two lists
# to unicodedata), which text needs and a card may hold: U+200C ZERO WIDTH NON-JOINER (Persian
# and Indic spelling), U+200D ZERO WIDTH JOINER (emoji sequences, Indic conjuncts), and the
# prepended concatenation marks, which display (Arabic number sign U+0600-0605, end of ayah
# U+06DD, U+0890/0891, U+08E2, Syriac U+070F, Kaithi U+110BD/110CD).
ALLOWED_FORMAT_RANGES = (
    (0x600, 0x605), (0x6DD, 0x6DD), (0x70F, 0x70F), (0x890, 0x891), (0x8E2, 0x8E2),
    (0x200C, 0x200D), (0x110BD, 0x110BD), (0x110CD, 0x110CD),
)  # fmt: skip
INVISIBLE = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in INVISIBLE_RANGES)  # (a regex class)
UNSHOWN = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{INVISIBLE}]")
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# an emoji tag sequence as Unicode's subdivision flags are spelled (UTS #51: a black flag, a
# region code of 2 tag letters and a subdivision of 1-4 tag letters or digits, a cancel tag:
# the flag of Scotland is "gbsct"), nothing more: tag spaces, capitals or a long run would be
# ASCII text hidden in a card behind a flag
_TAG_SEQUENCE = (
    "\U0001f3f4[\U000e0061-\U000e007a]{2}[\U000e0030-\U000e0039\U000e0061-\U000e007a]{1,4}"
    "\U000e007f"
)
# one scan: a flag is taken whole (and passes), anything else refused is a match of its own
_SCAN = re.compile(f"{_TAG_SEQUENCE}|{UNSHOWN.pattern}")
# what to write instead, where there is an obvious alternative (else: remove it)
_INSTEAD = {
    "\u00ad": "write a hyphen (-) where the word breaks, or nothing",
    "\u200b": "use a plain space, or nothing",
    "\u2060": "remove it (a no-break space, U+00A0, keeps two words on one line)",
    "\ufeff": "remove it (a no-break space, U+00A0, keeps two words on one line)",
    "\u2028": "use a new line",
    "\u2029": "use a blank line",
    "\u2062": "write the operator (* or ×), or nothing",
    "\u2063": "write a comma, or nothing",
    "\u2064": "write a plus sign (+), or nothing",
}


def control_problem(text: str) -> str | None:
    """Why ``text`` may not be shown on a terminal, or None when it may."""
    for match in _SCAN.finditer(text):  # (linear: each flag is matched once, as a whole)
        char = match.group()
        if len(char) > 1:
            continue  # (a subdivision flag: shown as the flag)
        where = f"at position {match.start() + 1}"
        if CONTROL.match(char):
            what = "an escape character (ESC)" if char == "\x1b" else "a control character"
            return f"{what} {char!r} {where}; remove it"
        import unicodedata

        name = unicodedata.name(char, "")
        point = f"U+{ord(char):04X}" + (f" ({name})" if name else "")
        what = "a bidirectional control" if char in _BIDI else "an invisible character"
        instead = _INSTEAD.get(char, "remove it")
        return f"{what} {point} {where} (a card must read as it is stored); {instead}"
    return None
