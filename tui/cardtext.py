"""Card text for the screen: rich's Markdown, or the same picture without it.

Importing ``rich.markdown`` (markdown-it and pygments with it) is the largest single cost between
`prep quiz` and its first card. Most prompts are plain sentences with at most a few `code` spans;
for those Markdown draws exactly what a `Text` with the code spans styled draws, so `card_text`
builds that `Text` and leaves Markdown for everything else (emphasis, lists, links, fences, ...).
Which texts take the short way is decided by `is_simple`, conservatively: anything that Markdown
could read as more than words and code spans goes to Markdown. A test renders every bundled prompt
and generated texts both ways inside Textual and requires the same cells and styles.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rich.default_styles import DEFAULT_STYLES
from rich.text import Text

if TYPE_CHECKING:
    from rich.console import RenderableType

CODE_STYLE = DEFAULT_STYLES["markdown.code"]  # what Markdown gives an inline code span

# a code span as the short way draws it: one backtick each side around text without backticks
# or white space (where Markdown wraps a line at a space inside a code span, that blank keeps
# the code background; a Text's wrap drops it)
_CODE = re.compile(r"`([^`\s]+)`")
# outside code spans: characters Markdown may read as syntax (emphasis, escapes, html, entities,
# headings, tables, strikethrough, stray backticks)
_SYNTAX = re.compile(r"[\\*<>#|~`\t\r]|&[#A-Za-z0-9]|\]\(|\]\[|\]:|!\[")
# an underscore is literal only between two letters or digits (W_O): elsewhere it may open or
# close emphasis
_LOOSE_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
# the start of a line that Markdown may read as a block: list items, numbered items, setext
# underlines, thematic breaks, indented code
_BLOCK_START = re.compile(r"^(?:[-+=_ ]|\d+[.)])")


def is_simple(text: str) -> bool:
    """Whether Markdown would draw ``text`` as plain paragraphs and inline code spans only."""
    if not text or text != text.strip() or "\n\n\n" in text:
        return False
    for line in text.split("\n"):
        if line and (line != line.rstrip() or _BLOCK_START.match(line)):
            return False
    words = _CODE.sub("\0", text)
    return not (_SYNTAX.search(words) or _LOOSE_UNDERSCORE.search(words))


def simple_text(text: str) -> Text:
    """``text`` (see `is_simple`) as Markdown draws it in Textual: paragraphs apart by a blank
    line, a line break inside a paragraph drawn as a space, code spans styled as code."""
    out = Text()
    for n, paragraph in enumerate(text.split("\n\n")):
        if n:
            out.append("\n\n")
        paragraph = paragraph.replace("\n", " ")
        end = 0
        for match in _CODE.finditer(paragraph):
            out.append(paragraph[end : match.start()])
            out.append(match.group(1), style=CODE_STYLE)
            end = match.end()
        out.append(paragraph[end:])
    return out


def markdown(text: str) -> RenderableType:
    """``text`` as rich's Markdown, with HTML read as text: a card about `<bos>` or `a < b`
    shows it (rich's parser drops what it takes for HTML tags)."""
    from markdown_it import MarkdownIt
    from rich.markdown import Markdown

    md = Markdown("", code_theme="ansi_dark", hyperlinks=False)
    md.markup = text
    parser = MarkdownIt("commonmark", {"html": False}).enable("strikethrough").enable("table")
    md.parsed = parser.parse(text)
    return md


def card_text(text: str) -> RenderableType:
    """A prompt or answer for the screen: the short way when it is simple, else Markdown."""
    if is_simple(text):
        return simple_text(text)
    return markdown(text)


# one line's inline Markdown, for a choice: a code span (any length of backticks), strong,
# emphasis, or a backslash escape; everything else is literal
_INLINE = re.compile(
    r"(?P<ticks>`+)(?P<code>.+?)(?P=ticks)"
    r"|\*\*(?P<strong>\S(?:.*?\S)?)\*\*"
    r"|\*(?P<em>\S(?:.*?\S)?)\*"
    r"|(?<![^\W_])_(?P<em2>\S(?:.*?\S)?)_(?![^\W_])"
    r"|\\(?P<escaped>[!-/:-@\[-`{-~])"
)


def inline_text(text: str, style: str = "") -> Text:
    """A one-line text with its inline Markdown drawn (code spans as code, **strong**,
    *emphasis*, escapes), in ``style``: a choice of a multiple-choice card sits in a grid beside
    its letter, where a Markdown block would not."""
    out = Text(style=style)
    end = 0
    for m in _INLINE.finditer(text):
        out.append(text[end : m.start()])
        if m["code"] is not None:
            code = m["code"]
            if code.startswith(" ") and code.endswith(" ") and code.strip():
                code = code[1:-1]  # CommonMark trims one blank each side
            out.append(code, style=CODE_STYLE)
        elif m["strong"] is not None:
            out.append(m["strong"], style="bold")
        elif m["em"] is not None or m["em2"] is not None:
            out.append(m["em"] if m["em"] is not None else m["em2"], style="italic")
        else:
            out.append(m["escaped"])
        end = m.end()
    out.append(text[end:])
    return out


def warm_up() -> None:
    """Import Markdown now (it takes tens of milliseconds), so that the first answer shown
    does not wait for it."""
    import rich.markdown  # noqa: F401
