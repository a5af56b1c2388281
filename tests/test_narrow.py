"""A narrow terminal (40x12, a split pane, a phone's SSH client) keeps prep usable: the footer
keeps the screen's first key, Esc, `q` and `?` (Textual cut the row at the right edge: home lost
`q Quit` and `? Help` below ~70 columns), and home's deck table keeps its counts on screen (the
Learning/Due/Cards columns were cut below ~50 columns, the deck's title never shrinking below 16
cells)."""

from __future__ import annotations

from prep.tui.testing import make_app
from tests.pilot import async_test, wait_until


def footer_keys(app) -> list[str]:
    """The footer's keys wholly on screen, as the terminal shows them."""
    footer = app.screen.query_one("Footer")
    width = app.size.width
    return [
        key.key
        for key in footer.children
        if getattr(key, "key", None) and key.region.width and key.region.right <= width
    ]


async def _open_home(pilot, app) -> None:
    await wait_until(pilot, lambda: type(app.screen).__name__ in ("ReviewScreen", "HomeScreen"))
    if type(app.screen).__name__ == "ReviewScreen":
        await pilot.press("escape")
    await wait_until(pilot, lambda: type(app.screen).__name__ == "HomeScreen")
    await pilot.pause(0.2)


@async_test
async def test_the_footer_keeps_quit_and_help_when_narrow() -> None:
    app = make_app()
    async with app.run_test(size=(40, 12)) as pilot:
        await _open_home(pilot, app)
        keys = footer_keys(app)
        assert {"enter", "q", "question_mark"} <= set(keys), keys
        await pilot.press("enter")  # the first card
        await wait_until(pilot, lambda: type(app.screen).__name__ == "ReviewScreen")
        await pilot.pause(0.2)
        keys = footer_keys(app)
        assert {"space", "escape", "q", "question_mark"} <= set(keys), keys


@async_test
async def test_the_footer_shows_every_key_when_wide_and_follows_a_resize() -> None:
    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await _open_home(pilot, app)
        wide = footer_keys(app)
        assert {"enter", "s", "d", "c", "m", "n", "q", "question_mark", "ctrl+p"} <= set(wide)
        await pilot.resize_terminal(40, 12)
        await pilot.pause(0.3)
        narrow = footer_keys(app)
        assert {"q", "question_mark"} <= set(narrow) and len(narrow) < len(wide), narrow
        await pilot.resize_terminal(120, 30)
        await pilot.pause(0.3)
        assert footer_keys(app) == wide


def deck_table(app) -> tuple[list[str], list[str], bool]:
    """Home's column headers, its rows' first cells, and whether the table fits its width."""
    table = app.screen.query_one("#decks")
    headers = [str(column.label) for column in table.columns.values()]
    titles = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
    return headers, titles, table.virtual_size.width <= table.scrollable_content_region.width


@async_test
async def test_home_keeps_the_counts_on_screen_at_any_width() -> None:
    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await _open_home(pilot, app)
        headers, titles, fits = deck_table(app)
        assert headers == ["Deck", "New", "Learning", "Due", "Cards"] and fits
        full = titles
        for width in (60, 50, 40, 32, 80, 40, 120):
            await pilot.resize_terminal(width, 12)
            await pilot.pause(0.3)
            headers, titles, fits = deck_table(app)
            assert fits, (width, headers, titles)  # no count cut at the right edge
            assert {"New", "Due"} <= set(headers), (width, headers)
            # each deck still names itself: the start of its title
            for title, was in zip(titles, full, strict=True):
                shown = title.split("  ")[0].rstrip("…")
                assert was.startswith(shown) and len(shown) >= min(7, len(was)), (width, title)
        assert deck_table(app)[0] == ["Deck", "New", "Learning", "Due", "Cards"]


def test_every_screen_uses_prep_s_footer() -> None:
    """The narrow footer is prep's: a screen with Textual's own loses q and ? when narrow."""
    import re
    from pathlib import Path

    tui = Path(__file__).resolve().parent.parent / "tui"
    textual_footer = re.compile(r"from textual\.widgets import [^\n]*\bFooter\b")
    assert [p.name for p in tui.rglob("*.py") if textual_footer.search(p.read_text())] == [
        "footer.py"
    ]


@async_test
async def test_a_revealed_card_keeps_rows_for_its_answer_in_a_short_terminal() -> None:
    """At 40x12 the revealed card's rating buttons (two rows of two, three rows each) and the
    hints took every row: the answer had none. Below 20 rows the buttons are one row tall."""
    app = make_app()
    async with app.run_test(size=(40, 12)) as pilot:
        await _open_home(pilot, app)
        await pilot.press("enter", "space")
        await wait_until(pilot, lambda: getattr(app.screen, "revealed", False))
        await pilot.pause(0.2)
        card = app.screen.query_one("#card")
        bar = app.screen.query_one("#ratings")
        assert bar.region.height <= 2, bar.region
        assert card.region.height >= 4, card.region  # the answer can be read (and scrolled)
        await pilot.resize_terminal(100, 30)
        await pilot.pause(0.3)
        assert app.screen.query_one("#ratings").region.height == 3  # the usual look when tall


@async_test
async def test_the_demo_list_keeps_its_rows_in_a_short_terminal() -> None:
    """At 40x12 the demo list's intro and the highlighted claim took every row: no demo showed."""
    app = make_app()
    async with app.run_test(size=(40, 12)) as pilot:
        await _open_home(pilot, app)
        await pilot.press("d")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "DemoListScreen")
        await pilot.pause(0.2)
        table = app.screen.query_one("#demo-table")
        assert table.region.height >= 3, table.region  # its header and two demos at least
