"""Round 13's user pass (a learner over days, tmux under faketime): what was met, each with a
test that fails before its fix."""

from __future__ import annotations

from prep.tui.testing import make_app
from tests.pilot import async_test, notes_of, record_notes, wait_until
from tests.test_narrow import footer_keys as drawn_keys


def notes(app) -> list[str]:
    return notes_of(app)


async def _first_card(app, pilot) -> None:
    from prep.tui.screens.review import ReviewScreen

    await pilot.press("enter")  # home -> the first card
    await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen))
    await pilot.pause()


# --- undo: offered only when it would do something, and u always answers -------------------


@async_test
async def test_undo_is_not_offered_on_the_first_card_and_u_says_why() -> None:
    """`u Undo` was in the footer of a session's first card, with nothing to undo; the footer
    offers it once a rating or mark is made, and u before that says so in one line."""
    app = make_app()
    record_notes(app)
    async with app.run_test(size=(120, 30)) as pilot:
        await _first_card(app, pilot)
        assert "u" not in drawn_keys(app)
        await pilot.press("space")  # revealed: still nothing to undo
        await pilot.pause()
        assert "u" not in drawn_keys(app)
        await pilot.press("u")
        await pilot.pause()
        said = [n for n in notes(app) if "undo" in n.lower()]
        assert said == ["Nothing to undo yet: u undoes this session's last rating or mark."]
        await pilot.press("3")  # rated: now u undoes it
        await wait_until(pilot, lambda: bool(app.screen.session.done))
        await pilot.pause()
        assert "u" in drawn_keys(app)
        await pilot.press("u")
        await wait_until(pilot, lambda: not app.screen.session.done)
        await pilot.pause()
        assert "u" not in drawn_keys(app)  # back to nothing to undo


@async_test
async def test_a_flag_is_offered_for_undo_at_once() -> None:
    """f flags the card on screen (it stays); the footer then offers u, which unflags it."""
    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await _first_card(app, pilot)
        card = app.screen.card
        await pilot.press("f")
        await pilot.pause()
        assert "u" in drawn_keys(app)
        await pilot.press("u")
        await pilot.pause()
        assert not app.screen.session.store.mark(card.id).flagged
        assert "u" not in drawn_keys(app)


@async_test
async def test_the_summary_says_when_there_is_nothing_to_undo() -> None:
    """At the end of a session that rated nothing (every card buried, then undone, or an empty
    queue) u answers in one line instead of doing nothing."""
    from prep.tui.screens.summary import SummaryScreen

    app = make_app()
    record_notes(app)
    async with app.run_test(size=(120, 30)) as pilot:
        await _first_card(app, pilot)
        app.screen.session.queue.clear()  # (the queue done: the summary comes next)
        app.screen.show_card()
        await wait_until(pilot, lambda: isinstance(app.screen, SummaryScreen))
        await pilot.pause()
        assert "u" not in drawn_keys(app)
        await pilot.press("u")
        await pilot.pause()
        assert "Nothing to undo yet: u undoes this session's last rating or mark." in notes(app)


# --- the demo list at narrow widths ----------------------------------------------------------


def _row_texts(table) -> list[list[str]]:
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


async def _demo_list(app, pilot, store) -> object:
    from datetime import UTC, datetime

    store.record_demo_run(
        name="block-diagonal",
        device="cpu",
        passed=True,
        seconds=0.5,
        ran_at=datetime(2026, 12, 2, 22, 40, tzinfo=UTC),
    )
    await pilot.pause()
    await pilot.press("d")
    await wait_until(pilot, lambda: type(app.screen).__name__ == "DemoListScreen")
    await pilot.pause(0.2)
    return app.screen.query_one("#demo-table")


async def _resized(app, pilot, width: int) -> None:
    """Wait until the demo list has handled the resize to ``width`` columns: its columns are
    built for the layout its own fit picks at that width (a fixed pause let a loaded machine
    check the 34-column layout at 30 columns). The check that the columns fit stays the test's."""
    screen = app.screen
    await wait_until(pilot, lambda: app.size.width == width and screen._layout == screen._fit())
    await pilot.pause()


def _fully_shown(app, table) -> None:
    """Every column ends inside the terminal, and no cell is wider than its column."""
    widths = [column.get_render_width(table) for column in table.ordered_columns]
    assert table.region.x + sum(widths) <= app.size.width, (widths, app.size)
    for i, column in enumerate(table.ordered_columns):
        for row in _row_texts(table):
            assert len(row[i]) <= column.content_width, (row[i], column.content_width)


@async_test
async def test_the_demo_list_at_40_columns_drops_columns_by_priority() -> None:
    """At 40 columns the demo list cut "Last run" and "Cards" at the right edge (and the names
    were left whole only by luck). Now the columns fit: the name whole, PASS/FAIL, and the
    line under the table says the rest (device, date, cards) for the highlighted demo."""
    from prep.engine.store import Store

    store = Store.memory()
    app = make_app(store=store)
    async with app.run_test(size=(40, 20)) as pilot:
        table = await _demo_list(app, pilot, store)
        _fully_shown(app, table)
        rows = {row[0]: row for row in _row_texts(table)}
        assert rows["block-diagonal"][1] == "PASS"
        table.move_cursor(row=list(rows).index("block-diagonal"))
        await pilot.pause()
        detail = str(app.screen.query_one("#demo-claim-detail").render())
        assert "Last run: PASS  cpu  2026-12-02 22:40 · cards:" in detail, detail
        await pilot.resize_terminal(120, 30)  # wide: every column in full, as before
        await _resized(app, pilot, 120)
        rows = {row[0]: row for row in _row_texts(table)}
        assert rows["block-diagonal"][1] == "PASS  cpu  2026-12-02 22:40"
        assert len(rows["block-diagonal"]) == 3
        _fully_shown(app, table)


@async_test
async def test_the_demo_list_fits_every_width_from_30_to_100_columns() -> None:
    """With every shipped demo (names up to 20 cells: real-block-structure)."""
    from prep.engine.store import Store
    from prep.tui.app import demo_infos

    store = Store.memory()
    app = make_app(store=store)
    app.demos = demo_infos()
    async with app.run_test(size=(100, 24)) as pilot:
        table = await _demo_list(app, pilot, store)
        for width in (100, 70, 64, 60, 52, 46, 40, 34, 30):
            await pilot.resize_terminal(width, 24)
            await _resized(app, pilot, width)
            _fully_shown(app, table)


# --- the footer's reading of Textual's FooterKey, held by a test ------------------------------


@async_test
async def test_the_footer_measures_each_key_as_textual_lays_it_out() -> None:
    """tui/widgets/footer.py chooses the keys that fit by reading each FooterKey's ``key``,
    ``key_display`` and ``description`` (Textual does not export the class) and its padding
    rules. Should Textual rename one or change its padding, the fitting would go wrong quietly:
    this holds every key's computed width to the width Textual gives it, wide and compact, on
    home, a card's front and its revealed side."""
    from prep.tui.widgets.footer import _width

    app = make_app()
    async with app.run_test(size=(200, 30)) as pilot:
        await pilot.pause(0.2)

        async def check() -> None:
            for width in (200, 40):
                await pilot.resize_terminal(width, 30)
                await pilot.pause(0.3)
                footer = app.screen.query_one("Footer")

                def keys(footer=footer) -> list:
                    return [k for k in footer.children if type(k).__name__ == "FooterKey"]

                await wait_until(pilot, lambda: keys() and all(k.region.width for k in keys()))
                assert len(keys()) >= 3, footer.children
                for key in keys():
                    assert isinstance(key.key, str) and isinstance(key.key_display, str), key
                    assert isinstance(key.description, str), key
                    want = _width(key, compact=footer.compact)
                    margin = key.styles.margin  # (compact: a margin after each key)
                    laid_out = key.region.width + margin.left + margin.right
                    assert want == laid_out, (width, key.key, want, key.region, margin)

        await check()  # home
        await pilot.press("enter")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "ReviewScreen")
        await check()  # a card's front
        await pilot.press("space")
        await check()  # revealed


@async_test
async def test_the_demo_list_draws_whole_names_in_a_40x12_terminal() -> None:
    """In the real app at 40x12 the rows were drawn at the columns' first widths ("bloc",
    "neve") until the cursor passed over them: the table does not widen a column after drawing
    its rows. Every row drawn shows its demo's whole name."""
    from prep.engine.store import Store
    from prep.tui.app import demo_infos
    from tests.test_user_pass12 import shown_lines

    store = Store.memory()
    app = make_app(store=store)
    app.demos = demo_infos()
    async with app.run_test(size=(40, 12)) as pilot:
        table = await _demo_list(app, pilot, store)
        await pilot.pause(0.3)
        drawn = [line.split() for line in shown_lines(table)[1:] if line.strip()]
        assert len(drawn) >= 3, drawn
        names = list(app.demos)
        for i, cells in enumerate(drawn):
            assert cells[0] == names[i], (cells, names[i])


# --- --plain: the same rule for undo ---------------------------------------------------------


def test_plain_offers_undo_only_once_there_is_a_rating_and_says_so_when_not(
    small_collection,
) -> None:
    """`prep quiz --plain`'s first prompt said "u undoes" with nothing to undo (the TUI's first
    card did too); u there now says why nothing happened, and the prompts offer u after a
    rating."""
    import io

    from prep.engine.store import Store
    from prep.engine.study.session import ReviewSession
    from prep.tui.plain import run_plain

    session = ReviewSession(Store.memory(), small_collection)
    out = io.StringIO()
    # u on the first card, reveal, Good, reveal the next, quit
    run_plain(session, io.StringIO("u\n\n3\n\nq\n"), out)
    text = out.getvalue()
    prompts = [line for line in text.splitlines() if "q quits" in line][1:]  # (after the intro)
    assert prompts[0].startswith("Press Enter to reveal (t types an answer, q quits): "), prompts
    rate = [p for p in prompts if p.startswith("Rate 1-4")]
    assert rate[0].startswith("Rate 1-4, q quits: "), prompts  # (before the first rating)
    assert text.count("Nothing to undo yet: u undoes this session's last rating.") == 1, text
    assert rate[-1].startswith("Rate 1-4, u undoes, q quits"), prompts  # the next card
