"""The short way to draw card text (`prep.tui.cardtext`) draws what rich's Markdown draws.

Every bundled prompt and answer, hand-picked edge cases and a few hundred generated texts are
drawn inside Textual both ways, at three widths, in a Static styled like the review screen's
prompt; wherever `is_simple` says yes, every cell (character and style) must match.
"""

from __future__ import annotations

import asyncio
import random

import pytest
from rich.markdown import Markdown
from rich.style import Style
from rich.text import Text
from textual.app import App
from textual.visual import Visual, visualize
from textual.widgets import Static

from prep.engine.decks.deckcache import load_collection
from prep.tui.cardtext import card_text, is_simple, markdown, simple_text

EDGE = [
    "What does `W_O` do?",
    "`W_o = nn.Linear(d_model, d_model)` is applied to the concatenated heads.",
    "Two\nlines",
    "One paragraph.\n\nAnother one, with `code` at the end `x`",
    "A very long question that keeps going " * 6 + "`and code that wraps around a line`.",
    "W_Q, W_K, W_V and W_O: which one mixes heads?",
    "Brackets [3] stay, ratio 3:1, 50% & more; (a/b) ^ 2 — × √ … ·",
    "Ends with a question mark?",
    "Unicode: Größe, naïve, 注意力 heads",
    "Shape (d_model, n_heads * d_head) or 2 * 3 * 4?",
    "x * y * z and `code` * 2 * `W_O` — a product " * 4 + "* 5",
    "2 * 3\nnext line * here\n\nnew paragraph * end",
]
NOT_SIMPLE = [
    "*emphasis*",
    "* a list item",
    "a\n* b",
    "a*b*c",
    "**strong**",
    "_under_",
    "snake_case_",
    "- a list item",
    "1. numbered",
    "# heading",
    "> quote",
    "a [link](http://x)",
    "an &amp; entity",
    "a \\* escape",
    "<b>html</b>",
    "~~strike~~",
    "| a | b |",
    "    indented code",
    "trailing space \nnext",
    "three\n\n\nbreaks",
    "``double``",
    "` spaced `",
    "stray ` backtick",
    "setext\n===",
    "rule\n---",
    "",
]

WORDS = [
    "W_O",
    "head",
    "d_model",
    "the",
    "x",
    "Größe",
    "3",
    "h=8",
    "(rank)",
    "a/b",
    "ok,",
    "why?",
    "*",
]
MARKS = ["", "", "", ",", ".", ":", ";", "!", "?", "'", '"', "-", "[1]", "50%", "&", "—", "_", "*"]


def generated(n: int, seed: int = 15) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 30)):
            r = rng.random()
            if r < 0.12:
                parts.append("`" + rng.choice(WORDS) + rng.choice(["", " x", "(1)"]) + "`")
            elif r < 0.18:
                parts.append(rng.choice(["\n", "\n\n"]))
            else:
                parts.append(rng.choice(WORDS) + rng.choice(MARKS))
        texts.append(" ".join(parts).replace(" \n", "\n").replace("\n ", "\n").strip())
    return texts


def bundled_texts() -> list[str]:
    coll = load_collection([])
    cards = list(coll.cards.values()) if isinstance(coll.cards, dict) else list(coll.cards)
    return [c.prompt for c in cards] + [c.answer for c in cards if c.answer]


class Both(App):
    CSS = "Static { text-style: bold; width: auto; max-width: 100%; }"

    def compose(self):
        yield Static(id="s")


def color(c) -> str:
    """A colour by what it is, not how it was named ("cyan" and "color(6)" are one colour)."""
    if c is None:
        return "-"
    return f"{c.number}" if c.triplet is None else c.triplet.hex


def shown(ch: str, style: Style) -> str:
    """What shows of ``style`` in a cell holding ``ch``."""
    lines = (bool(style.underline), bool(style.strike), bool(style.overline))
    if ch == " ":  # a blank shows its background, and lines drawn through it
        fg = color(style.color) if any(lines) else "-"
        return f"{fg} on {color(style.bgcolor)} {bool(style.reverse)} {lines}"
    flags = [bool(f) for f in (style.bold, style.dim, style.italic, style.reverse, style.blink)]
    return f"{color(style.color)} on {color(style.bgcolor)} {flags} {lines} {style.link}"


def cells(widget: Static, renderable, width: int) -> list[list[tuple[str, str]]]:
    """Every cell ``widget`` draws for ``renderable`` at ``width``, the way a Static draws its
    content: (character, style), row by row. A style is compared by its definition (colours,
    attributes, link): Textual adds selection offsets as meta data to the cells of a Text, which
    Markdown's cells lack; they do not show. A blank cell is compared by what shows on a blank:
    its background and the lines drawn through it (Markdown pads its lines with bold blanks, a
    Text with plain ones)."""
    visual = visualize(widget, renderable)
    rows = []
    for strip in Visual.to_strips(widget, visual, width, None, widget.visual_style, pad=True):
        row = []
        for seg in strip:
            row.extend((ch, shown(ch, seg.style)) for ch in seg.text)
        rows.append(row)
    return rows


async def draw_both(texts: list[str], widths=(24, 57, 100), short=simple_text) -> list[str]:
    """Texts (from those `is_simple` accepts) that the short way draws differently."""
    app = Both()
    differ = []
    async with app.run_test(size=(100, 60)):
        widget = app.query_one(Static)
        for width in widths:
            for text in texts:
                if not is_simple(text):
                    continue
                want = cells(widget, markdown(text), width)
                if cells(widget, short(text), width) != want:
                    differ.append(f"{width}: {text!r}")
    return differ


def test_short_way_draws_what_markdown_draws():
    texts = EDGE + bundled_texts() + generated(300)
    simple = [t for t in texts if is_simple(t)]
    # the short way must be the common way for card prompts, or it saves nothing
    assert len(simple) >= len(EDGE) + 100
    assert asyncio.run(draw_both(texts)) == []


def test_the_comparison_catches_a_wrong_short_way():
    """The check above fails when the short way is wrong (here: code spans left unstyled)."""

    def unstyled(text: str) -> Text:
        return Text(text.replace("`", ""))

    assert asyncio.run(draw_both(EDGE[:2], widths=(57,), short=unstyled))


@pytest.mark.parametrize("text", NOT_SIMPLE)
def test_markdown_syntax_goes_to_markdown(text):
    assert not is_simple(text)
    assert isinstance(card_text(text), Markdown)


def test_simple_text_is_a_text():
    assert isinstance(card_text(EDGE[0]), Text)
    assert [s.style for s in simple_text("a `b` c").spans] == [simple_text("`b`").spans[0].style]


def test_the_comparison_catches_a_code_span_with_a_space(monkeypatch):
    """Why code spans with a blank take the long way: where Markdown wraps a line at that
    blank, the blank keeps the code background, and the short way would drop it. Letting such
    spans through makes the cell-for-cell comparison fail."""
    import re

    from prep.tui import cardtext

    monkeypatch.setattr(cardtext, "_CODE", re.compile(r"`([^`\n ](?:[^`\n]*[^`\n ])?)`"))
    texts = ["A very long question that keeps going " * 6 + "`and code that wraps around a line`."]
    assert all(cardtext.is_simple(t) for t in texts)
    assert asyncio.run(draw_both(texts, short=cardtext.simple_text))


def test_markdown_shows_what_looks_like_html():
    """A card about `<bos>` or `a < b` outside code keeps its text (rich's parser alone drops
    what it takes for HTML)."""
    from rich.console import Console

    console = Console(width=80, color_system=None)
    with console.capture() as out:
        console.print(markdown("Prepend <bos> when a < b, then **stop**."))
    assert "Prepend <bos> when a < b, then stop." in out.get()


@pytest.mark.parametrize(
    ("choice", "plain", "styled"),
    [
        ("`W_o.weight[h*d_head:(h+1)*d_head, :]`", "W_o.weight[h*d_head:(h+1)*d_head, :]", "code"),
        ("*none* of these", "none of these", "italic"),
        ("all of **these**", "all of these", "bold"),
        ("(d_model, n_heads * d_head)", "(d_model, n_heads * d_head)", None),
        ("snake_case and _em_", "snake_case and em", "italic"),
        ("a \\* b", "a * b", None),
        ("`` a`b ``", "a`b", "code"),
        # as markdown-it reads them (a review found a hand-written reading wrong on these)
        ("a*(b+c)*d", "a*(b+c)*d", None),
        ("W_o.weight[h*d_head:(h+1)*d_head, :]", "W_o.weight[h*d_head:(h+1)*d_head, :]", None),
        ("__init__", "init", "bold"),
    ],
)
def test_a_choice_draws_its_inline_markdown(choice, plain, styled):
    from prep.tui.cardtext import CODE_STYLE, inline_text

    text = inline_text(choice, "dim")
    assert text.plain == plain
    assert text.style == "dim"
    want = {"code": CODE_STYLE, "italic": "italic", "bold": "bold", None: None}[styled]
    assert [span.style for span in text.spans] == ([] if want is None else [want])


def test_a_choice_with_two_spans_of_emphasis():
    from prep.tui.cardtext import inline_text

    for choice, style in (("*Q* and *K*", "italic"), ("**Q** and **K**", "bold")):
        text = inline_text(choice)
        assert text.plain == "Q and K"
        assert [(s.start, s.end, s.style) for s in text.spans] == [(0, 1, style), (6, 7, style)]


def test_two_backticks_together_take_markdowns_way():
    """`a``b`: one code span "a``b" to Markdown, two spans to a naive reading."""
    assert not is_simple("Use `a``b` here")
    assert asyncio.run(draw_both(["Use `a``b` here"], widths=(57,))) == []
