"""One meaning per key on the review screen (issue 19 item 6): a-d pick a choice, and only
while the answer is hidden; r runs the card's demo; d never runs a demo there."""

from __future__ import annotations

import pytest

from prep.engine.decks.collection import CachedCollection
from prep.engine.decks.deck import ParsedDecks, parse_deck_text
from prep.engine.decks.deckcache import from_parsed
from prep.tui.screens.demo import DemoScreen
from prep.tui.screens.help import HelpScreen
from prep.tui.screens.review import ReviewScreen
from prep.tui.testing import make_app
from tests.test_tui import async_test, footer_keys

pytestmark = pytest.mark.usefixtures("utc_local_time")

FOUR = """\
deck: keys
cards:
  - id: four
    kind: choice
    prompt: Which one?
    choices: [one, two, three, four]
    correct: a
    answer: one
    demo: block-diagonal
"""


def four_choice() -> CachedCollection:
    info, cards, errors = parse_deck_text(FOUR, "keys.yaml", "keys")
    assert info is not None and not errors
    coll = ParsedDecks()
    coll.decks[info.name] = info
    for card in cards:
        coll.add(card)
    return from_parsed(coll)


@async_test
async def test_d_picks_only_before_the_answer_and_r_runs_the_demo() -> None:
    app = make_app(collection=four_choice())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, ReviewScreen) and screen.card.id == "four"
        assert "r" not in footer_keys(app)  # no demo before the answer
        await pilot.press("d")  # picks choice d (a wrong pick), and reveals
        await pilot.pause()
        assert screen.revealed and screen.picked == 3
        assert "r" in footer_keys(app) and "d" not in footer_keys(app)
        await pilot.press("d")  # once revealed: d does nothing (neither a pick nor a demo)
        await pilot.pause()
        assert app.screen is screen and screen.picked == 3
        await pilot.press("a")  # nor does a: the pick is made
        assert screen.picked == 3
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, DemoScreen)


@async_test
async def test_help_says_r_runs_the_demo_on_the_review_screen() -> None:
    app = make_app()
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("enter", "question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        review = dict(app.screen.tables())["ReviewScreen"]
        from rich.console import Console

        console = Console(width=120, color_system=None)
        with console.capture() as out:
            console.print(review)
        lines = [line.split(None, 1) for line in out.get().splitlines() if line.strip()]
        meaning = {parts[0]: parts[1] if len(parts) > 1 else "" for parts in lines}
        assert "demo" in meaning["r"].lower()
        assert "d" not in meaning or "demo" not in meaning["d"].lower()


@async_test
async def test_the_demo_line_stays_in_view_at_80x24() -> None:
    """A long answer (the bundled two-roles card) at 80x24: the card's demo line is on
    screen once the answer shows, not below the fold (issue 19 item 9)."""
    from prep.engine.decks.deckcache import load_collection

    bundled = load_collection()
    coll = ParsedDecks()
    info = bundled.decks["wo-core"]
    coll.decks["wo-core"] = info
    coll.add(bundled.get("wo-two-roles"))
    app = make_app(collection=from_parsed(coll))
    app.demos.update({name: "a claim" for name in bundled.get("wo-two-roles").demos})
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter", "space")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReviewScreen) and screen.revealed
        card = screen.query_one("#card")
        assert card.virtual_size.height > card.size.height  # the answer does overflow
        link = screen.query_one("#demo-link")
        assert link.display and link.region.height >= 1
        assert link.region.y >= 0 and link.region.bottom <= 24 - 4  # above ratings and footer
        assert "run one of 3 demos" in str(link.render())
