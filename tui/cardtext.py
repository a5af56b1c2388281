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

import functools
import re
from typing import TYPE_CHECKING

from rich.default_styles import DEFAULT_STYLES
from rich.text import Text

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from rich.console import RenderableType

CODE_STYLE = DEFAULT_STYLES["markdown.code"]  # what Markdown gives an inline code span

# a code span as the short way draws it: one backtick each side around text without backticks
# or white space (where Markdown wraps a line at a space inside a code span, that blank keeps
# the code background; a Text's wrap drops it)
_CODE = re.compile(r"`([^`\s]+)`")
# outside code spans: characters Markdown may read as syntax (emphasis, escapes, html, entities,
# headings, tables, strikethrough, stray backticks); an asterisk with a blank on each side (a
# product, `n_heads * d_head`) can neither open nor close emphasis
_SYNTAX = re.compile(r"[\\<>#|~`\t\r]|&[#A-Za-z0-9]|\]\(|\]\[|\]:|!\[|(?<! )\*|\*(?! )")
# an underscore is literal only between two letters or digits (W_O): elsewhere it may open or
# close emphasis
_LOOSE_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
# the start of a line that Markdown may read as a block: list items, numbered items, setext
# underlines, thematic breaks, indented code
_BLOCK_START = re.compile(r"^(?:[-+=_* ]|\d+[.)])")


def is_simple(text: str) -> bool:
    """Whether Markdown would draw ``text`` as plain paragraphs and inline code spans only."""
    if not text or text != text.strip() or "\n\n\n" in text or "``" in text:
        return False  # (two backticks together: a span of a longer run, or two spans)
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


@functools.cache
def _parser() -> MarkdownIt:
    """The one markdown-it parser of card text (built once: it takes milliseconds): rich's
    own configuration (strikethrough, tables) with HTML read as text."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("strikethrough").enable("table")


def markdown(text: str) -> RenderableType:
    """``text`` as rich's Markdown, with HTML read as text: a card about `<bos>` or `a < b`
    shows it (rich's parser drops what it takes for HTML tags)."""
    from rich.markdown import Markdown

    md = Markdown("", code_theme="ansi_dark", hyperlinks=False)
    md.markup = text
    md.parsed = _parser().parse(text)
    return md


def card_text(text: str) -> RenderableType:
    """A prompt or answer for the screen: the short way when it is simple, else Markdown."""
    if is_simple(text):
        return simple_text(text)
    return markdown(text)


def inline_text(text: str, style: str = "") -> Text:
    """A one-line text with its inline Markdown drawn (code spans as code, strong, emphasis,
    strikethrough; links as their text), in ``style``: a choice of a multiple-choice card sits
    in a grid beside its letter, where a Markdown block would not. A simple text takes the
    short way; any other is parsed by markdown-it, the parser Markdown itself uses."""
    if is_simple(text):
        out = simple_text(text)
        out.style = style
        return out
    out = Text(style=style)
    styles: list[str] = []
    for block in _parser().parse(text):
        for token in block.children or ():
            kind = token.type
            if kind.endswith("_open") and kind[:-5] in _INLINE_STYLES:
                styles.append(_INLINE_STYLES[kind[:-5]])
            elif kind.endswith("_close") and kind[:-6] in _INLINE_STYLES:
                styles.pop()
            elif kind == "code_inline":
                out.append(token.content, style=CODE_STYLE)
            elif kind in ("softbreak", "hardbreak"):
                out.append(" ", style=" ".join(styles))
            elif kind == "image" or kind == "text" or kind == "html_inline":
                out.append(token.content, style=" ".join(styles))
    return out


_INLINE_STYLES = {"strong": "bold", "em": "italic", "s": "strike", "link": "underline"}


def warm_up() -> None:
    """Import Markdown and build the parser now (tens of milliseconds), so that the first
    answer shown does not wait for them."""
    import rich.markdown  # noqa: F401

    _parser()
