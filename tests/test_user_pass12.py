"""Round 12's user pass (a learner over a week, tmux under faketime): the small things met, each
with a test that fails before its fix."""

from __future__ import annotations

from textual.geometry import Region

from prep.tui.testing import make_app
from tests.pilot import async_test, wait_until


def shown_lines(widget) -> list[str]:
    """The lines a widget draws, as the terminal shows them."""
    strips = widget.render_lines(Region(0, 0, widget.region.width, widget.region.height))
    return ["".join(segment.text for segment in strip).rstrip() for strip in strips]


@async_test
async def test_a_long_demo_claim_under_the_answer_is_cut_with_an_ellipsis() -> None:
    """The demo line under a revealed card holds two lines: a claim that wrapped past them was
    cut mid-sentence ("…matches the layer with head i removed,") as if that were all of it."""
    app = make_app()
    async with app.run_test(size=(60, 30)) as pilot:
        await pilot.press("enter", "space")  # home -> two-roles, revealed (demo block-diagonal)
        await wait_until(pilot, lambda: app.screen.query("#demo-link"))
        await pilot.pause()
        lines = [line for line in shown_lines(app.screen.query_one("#demo-link")) if line]
        assert lines[0].lstrip().startswith("r  run the demo block-diagonal"), lines
        assert len(lines) == 2 and lines[1].lstrip().startswith("With a block-diagonal W_O"), lines
        assert lines[1].endswith("…"), lines  # cut, and seen to be


@async_test
async def test_every_builtin_theme_draws_home_and_a_card() -> None:
    """ansi-light (picked in the palette, and remembered) ended the app with MissingStyle at
    every later launch: the counts were styled with its colour names (``ansi_blue``), which
    Rich cannot parse. Every theme Textual ships draws home and a card's header."""
    from textual.theme import BUILTIN_THEMES

    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        for name in BUILTIN_THEMES:
            app.theme = name  # home redraws its counts in the theme's colours
            await pilot.pause()
        await pilot.press("enter")  # the first card: its header counts in the theme's colours
        await wait_until(pilot, lambda: type(app.screen).__name__ == "ReviewScreen")
        for name in BUILTIN_THEMES:
            app.theme = name
            app.screen.query_one("#progress").update(app.screen.progress_text())
            await pilot.pause()
        assert app.is_running and app.return_code is None


def test_a_session_limit_holding_due_cards_does_not_say_the_next_is_days_away(
    small_collection,
) -> None:
    """`prep quiz --limit 2` ended with "62 more cards of today's queue wait" and "Next card due
    in 9 days; 7 due by the end of tomorrow": the first due time after now, skipping the cards
    due now that the session's own limit held back (user11 fixed the daily review limit's)."""
    from datetime import timedelta

    from prep.engine.study.scheduler import State
    from prep.tui.screens.review import ReviewScreen
    from prep.tui.screens.summary import SummaryScreen
    from tests.conftest import reviewed_store
    from tests.pilot import text_of

    store = reviewed_store(small_collection)
    dues = sorted(s.due for s in store.cards().values() if s.state == State.Review)
    now = dues[1] + timedelta(minutes=1)  # two reviews due; the session serves one

    @async_test
    async def run() -> None:
        app = make_app(store=store, collection=small_collection, clock=lambda: now, limit=1)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen))
            await pilot.press("space")
            if not app.screen.revealed:  # a red flag shows its choices first
                await pilot.press("space")
            await pilot.press("3")
            await wait_until(pilot, lambda: isinstance(app.screen, SummaryScreen))
            summary = text_of(app, "#summary")
            assert "This session's limit is reached" in summary, summary
            assert "Next card due in" not in summary, summary
            assert "Past those held back, the next card comes due in" in summary, summary

    run()


def test_plain_quiz_with_a_limit_holding_due_cards_says_so(small_collection) -> None:
    """The plain quiz's last line had the same untruth under `--limit`."""
    import io
    from datetime import timedelta

    from prep.engine.study.scheduler import State
    from prep.engine.study.session import ReviewSession
    from prep.tui.plain import run_plain
    from tests.conftest import reviewed_store

    store = reviewed_store(small_collection)
    dues = sorted(s.due for s in store.cards().values() if s.state == State.Review)
    now = dues[1] + timedelta(minutes=1)
    session = ReviewSession(store, small_collection, clock=lambda: now, limit=1, requeue=False)
    assert session.held_back
    out = io.StringIO()
    run_plain(session, io.StringIO("\n\n3\n" * session.total + "q\n"), out)
    text = out.getvalue()
    assert session.finished and "Next card due in" not in text, text
    assert "Past those held back, the next card comes due in" in text, text
