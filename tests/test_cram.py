"""`prep cram`: the 60-second bullets of each main card; the TUI's cram screen."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from click.testing import CliRunner
from textual.app import App
from textual.widgets import Static

from prep.engine.decks.collection import CachedCollection
from prep.engine.decks.deckcache import load_collection
from prep.engine.study.cram import UnknownDeck, cram_sheet
from prep.tui.cli import main
from prep.tui.reports import cram_text as render
from prep.tui.screens.cram import CramScreen

SECOND = """\
deck: second
title: Second deck
cards:
  - id: multi-line
    kind: recall
    prompt: |
      Why does W_O exist at all?
      (Think about what concat cannot do.)
    answer: To mix heads.
    bullets: [concat only stacks, W_O mixes, it maps back to d_model]
  - id: no-bullets
    kind: recall
    prompt: A card without bullets.
    answer: Not on the sheet.
  - id: follow-with-bullets
    kind: follow-up
    parent: multi-line
    prompt: A follow-up with bullets.
    answer: Not a main card.
    bullets: [not shown]
"""


@pytest.fixture
def coll(small_deck_dir: Path) -> CachedCollection:
    (small_deck_dir / "second.yaml").write_text(SECOND, encoding="utf-8")
    c = load_collection([small_deck_dir], include_bundled=False)
    assert not c.errors, c.errors
    return c


def test_sheet_has_main_cards_with_bullets_only(coll: CachedCollection) -> None:
    sheet = cram_sheet(coll)
    assert [d.name for d in sheet] == ["second", "small"]  # deck (file) order
    assert [i.card_id for d in sheet for i in d.items] == ["multi-line", "roles"]
    item = sheet[0].items[0]
    assert item.prompt == "Why does W_O exist at all?"  # the first line only
    assert item.bullets == ("concat only stacks", "W_O mixes", "it maps back to d_model")


def test_deck_filter_and_unknown_deck(coll: CachedCollection) -> None:
    assert [d.name for d in cram_sheet(coll, "second")] == ["second"]
    with pytest.raises(UnknownDeck, match=r"no deck named 'nope' \(decks: second, small\)"):
        cram_sheet(coll, "nope")


def test_render() -> None:
    assert "No 60-second bullets" in render([])


def test_render_lists_bullets(coll: CachedCollection) -> None:
    text = render(cram_sheet(coll))
    assert text.splitlines()[0] == "== Second deck (second) =="
    assert "== A small test deck (small) ==" in text
    assert "Name two roles of W_O beyond shape preservation.\n  - mixing\n  - weighting" in text
    assert "not shown" not in text and "A card without bullets" not in text


def test_cli(small_deck_dir: Path, tmp_path: Path) -> None:
    (small_deck_dir / "second.yaml").write_text(SECOND, encoding="utf-8")
    args = ["--db", str(tmp_path / "p.db"), "--questions", str(small_deck_dir), "cram"]
    result = CliRunner().invoke(main, [*args, "--deck", "second"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("== Second deck (second) ==")
    assert "  - W_O mixes" in result.output and "mixing" not in result.output
    result = CliRunner().invoke(main, [*args, "--deck", "nope"])
    assert result.exit_code == 2
    assert result.stderr.startswith("prep: no deck named 'nope' (decks: ")
    assert "second" in result.stderr
    result = CliRunner().invoke(main, ["cram", "--help"])
    assert result.exit_code == 0 and "60-second bullets" in result.output


# --- the TUI screen -----------------------------------------------------------------------------


class Host(App):
    def __init__(self, screen: CramScreen) -> None:
        super().__init__()
        self._screen = screen
        self.closed = False

    def on_mount(self) -> None:
        self.push_screen(self._screen, callback=lambda _: setattr(self, "closed", True))


def test_screen_shows_the_sheet_and_escape_goes_back(coll: CachedCollection) -> None:
    async def run() -> None:
        app = Host(CramScreen(coll, deck="second"))
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, CramScreen)
            title = str(screen.query_one("#cram-title", Static).render())
            assert "deck second" in title and title.endswith("· 1 card")
            sheet = str(screen.query_one("#cram-sheet", Static).render())
            assert "Why does W_O exist at all?" in sheet and "W_O mixes" in sheet
            assert "mixing" not in sheet
            await pilot.press("a")  # all decks
            sheet = str(screen.query_one("#cram-sheet", Static).render())
            assert "mixing" in sheet and "W_O mixes" in sheet
            await pilot.press("escape")
            await pilot.pause()
            assert app.closed

    asyncio.run(run())


def test_screen_inside_the_prep_app_reads_the_app() -> None:
    from prep.tui.testing import make_app

    async def run() -> None:
        app = make_app()
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            app.action_cram()
            await pilot.pause()
            assert isinstance(app.screen, CramScreen)
            # the test deck has no bullets: the screen says so instead of failing
            text = str(app.screen.query_one("#cram-sheet", Static).render())
            assert "No 60-second bullets" in text or "•" in text
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, CramScreen)

    asyncio.run(run())


def test_bindings_have_descriptions() -> None:
    for binding in CramScreen.BINDINGS:
        assert binding.description
    assert any(b.key == "escape" for b in CramScreen.BINDINGS)
