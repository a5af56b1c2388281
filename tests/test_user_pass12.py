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
