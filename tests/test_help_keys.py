"""Help (`?`) lists every key of every screen that has keys, from the screens' own bindings, so a
key added to a screen cannot be left out (tui14's note: the demo picker and "study more" had no
section)."""

from __future__ import annotations

import re

from textual.binding import Binding


def test_every_key_of_every_screen_is_in_help() -> None:
    """Each screen with keys has a section, and each of its bindings is a row of it (its key
    and what it does): a key added to a screen cannot be left out of help."""
    from rich.console import Console

    from prep.tui.screens.help import HelpScreen, key_label
    from prep.tui.screens.registry import SCREENS

    tables = dict(HelpScreen().tables())
    console = Console(width=200, color_system=None)
    for spec in SCREENS:
        if spec.name == "help":  # help itself: its footer says Esc closes it
            continue
        # the keys prep's classes bind (not textual's own tab and copy, which every screen has)
        keys = [
            b
            for k in spec.load().__mro__
            if k.__module__.startswith("prep.")
            for b in vars(k).get("BINDINGS", [])
            if isinstance(b, Binding)
        ]
        if not keys:
            continue
        assert spec.cls in tables, f"{spec.cls} has keys {[b.key for b in keys]}: no help section"
        with console.capture() as capture:
            console.print(tables[spec.cls])
        rows = capture.get()
        for b in keys:
            if b.action.startswith("pick") and b.key_display != "a-d":
                continue  # the choices a-d are one row
            what = b.tooltip or b.description
            if b.action.startswith("pick"):
                what = "Pick a choice"  # (one row for the four, said once for all)
            row = re.compile(rf"^\s*{re.escape(key_label(b))}\s+{re.escape(what)}", re.M)
            assert row.search(rows), f"{spec.cls}: {key_label(b)} ({what}) not in help:\n{rows}"


def test_help_has_the_demo_picker_and_study_more() -> None:
    from prep.tui.screens.help import HelpScreen

    shown = [name for name, _ in HelpScreen().tables()]
    assert "DemoPick" in shown and "StudyMore" in shown


def test_question_mark_opens_help_at_study_more_s_section() -> None:
    """A modal dialog holds back the app's keys: ? did nothing over "study more"."""
    import asyncio

    from prep.tui.screens.help import HelpScreen
    from prep.tui.screens.home import HomeScreen
    from prep.tui.screens.study_more import StudyMore
    from prep.tui.testing import make_app
    from tests.pilot import wait_until

    async def run() -> None:
        app = make_app()
        async with app.run_test(size=(100, 40)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, HomeScreen))
            await pilot.press("n")
            await wait_until(pilot, lambda: isinstance(app.screen, StudyMore))
            await pilot.press("question_mark")
            await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
            assert isinstance(app.screen, HelpScreen) and app.screen.at == "StudyMore"
            await pilot.press("escape")  # back to the dialog, as it was
            await wait_until(pilot, lambda: isinstance(app.screen, StudyMore))

    asyncio.run(run())
