"""Card text is text everywhere: deck titles, prompts, answers, choices, tags, bullets, file
names and error messages with square brackets are shown as they are on every screen (Textual
would read ``[/]`` as markup and end the app, ``[b]`` would restyle, ``W_O[h]`` would lose
``[h]``, ``[@click=...]`` would be an action), the Markdown path included; and every bundled
card is shown on the review screen with its bracketed text whole."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from prep.engine.decks.deckcache import load_collection
from prep.engine.store import Store
from prep.tui.app import PrepApp
from prep.tui.screens.errors import ErrorScreen
from prep.tui.screens.home import HomeScreen
from prep.tui.screens.review import ReviewScreen
from prep.tui.testing import NOW, add_history, make_app
from tests.pilot import record_notes
from tests.test_tui import async_test, wait_until

pytestmark = pytest.mark.usefixtures("utc_local_time")

HOSTILE = [
    "W_O[h]",
    "[/]",
    "[/b]",
    "[b]bold[/b]",
    "[@click=app.quit]quit[/]",
    "[link=https://evil.example]x[/link]",
    "[red on white]",
    "[$accent]",
    "\\[escaped]",
]
HOSTILE_YAML = """\
deck: brackets
title: "Deck [/] W_O[h] [b]bold[/b]"
description: "[@click=app.quit]quit[/] [red on white] [$accent]"
cards:
  - id: b-recall
    kind: recall
    prompt: "Plain prompt W_O[h] [/] [/b] [b]bold[/b] [@click=app.quit]quit[/] [red on white] [$accent] \\\\[escaped]"
    answer: "Answer W_O[h] [/] [link=https://evil.example]x[/link] [/b] [b]bold[/b]"
    explain: "Explain [/] W_O[h] [@click=app.quit]quit[/]"
    analogy: "Analogy [/b] W_O[h]"
    tags: ["[/]", "W_O[h]"]
    bullets: ["Bullet [/] W_O[h] [b]bold[/b]"]
    sources: ["Source [/] W_O[h]"]
  - id: b-markdown
    kind: recall
    prompt: "**Markdown** prompt `W_O[h]` and W_O[h] [/] [/b]\\n\\n- item [b]bold[/b]\\n- [@click=app.quit]quit[/]"
    answer: "# Heading [/]\\n\\n*emph* W_O[h] [/b] `[/]`"
    tags: ["[b]"]
    bullets: ["**md** [/]"]
  - id: b-choice
    kind: choice
    prompt: "Pick one [/b] W_O[h]"
    choices: ["Choice [/] W_O[h]", "[b]bold[/b] two", "**three** [/]"]
    correct: a
    answer: "Choice answer [/] W_O[h]"
  - id: b-flag
    kind: red-flag
    prompt: "Which is junior [/]? W_O[h]"
    choices: ["Flag [/] one", "Flag [/b] two"]
    correct: b
    answer: "Flag answer [/] W_O[h]"
  - id: b-follow
    kind: follow-up
    parent: b-recall
    prompt: "Follow-up [/] W_O[h] [/b]"
    answer: "Follow-up answer [/] W_O[h]"
    bullets: ["Follow [/] W_O[h]"]
"""
BROKEN_YAML = """\
deck: broken
cards:
  - id: bad-one
    kind: "[/] W_O[h]"
    prompt: p
    answer: a
"""


def screen_text(app: PrepApp) -> str:
    """Every character on the screen now, as the terminal gets them."""
    update = app.screen._compositor.render_update(full=True)
    return "\n".join("".join(seg.text for seg in line) for line in update.strips)


def flat(text: str) -> str:
    """Blanks and box-drawing folded, so a phrase wrapped over two lines still matches."""
    return re.sub(r"[\s▁▔▏▕│┃]+", " ", text)


def shows(app: PrepApp, *phrases: str) -> None:
    seen = flat(screen_text(app))
    for phrase in phrases:
        assert flat(phrase) in seen, f"{phrase!r} is not on {type(app.screen).__name__}:\n{seen}"


def hostile_collection(folder: Path):
    folder.mkdir(exist_ok=True)
    (folder / "brackets.yaml").write_text(HOSTILE_YAML, encoding="utf-8")
    coll = load_collection([folder], include_bundled=False)
    assert not coll.errors, coll.errors
    return coll


@async_test
async def test_hostile_brackets_on_every_screen(tmp_path: Path) -> None:
    store = Store.memory()
    coll = hostile_collection(tmp_path / "decks")
    app = make_app(store=store, collection=coll, new=100)
    async with app.run_test(size=(150, 70)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, HomeScreen))
        shows(app, "Deck [/] W_O[h] [b]bold[/b]")
        await pilot.press("enter")  # all decks
        await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen))
        screen = app.screen
        seen: set[str] = set()
        while app.screen is screen and screen.card is not None and screen.card.id not in seen:
            card = screen.card
            seen.add(card.id)
            shows(app, "W_O[h]", "[/")
            if card.id == "b-recall":
                shows(app, "[b]bold[/b]", "[@click=app.quit]quit[/]", "[red on white]", "[escaped]")
            if card.id == "b-follow":
                shows(app, "Follows:")
            if card.kind == "red-flag":  # the choices come after saying what is wrong
                await pilot.press("space")
                await wait_until(pilot, lambda: screen.choices_shown)
            if card.choices:
                shows(app, *[c.split("**")[-1].strip() for c in card.choices])
            await pilot.press("space")
            await wait_until(pilot, lambda: screen.revealed)
            shows(app, "W_O[h]" if card.id != "b-markdown" else "[/]")
            if card.id == "b-recall":
                shows(app, "[link=https://evil.example]x[/link]", "Explain [/] W_O[h]")
            await pilot.press("4")
            await wait_until(
                pilot, lambda card=card: screen.card is not card or app.screen is not screen
            )
            await pilot.pause()
        assert seen == {c.id for c in coll.cards}, seen
        for key, wanted in (
            ("s", ["[/]", "W_O[h]", "[b]"]),  # stats: the tags
            ("c", ["Bullet [/] W_O[h] [b]bold[/b]", "Deck [/] W_O[h] [b]bold[/b]"]),  # cram
        ):
            while not isinstance(app.screen, HomeScreen):
                await pilot.press("escape")
                await pilot.pause()
            await wait_until(pilot, lambda: isinstance(app.screen, HomeScreen))
            await pilot.press(key)
            await wait_until(pilot, lambda: not isinstance(app.screen, HomeScreen))
            await pilot.pause()
            shows(app, *wanted)
            await pilot.press("escape")
        # the mock interview: a question of the hostile deck
        await wait_until(pilot, lambda: isinstance(app.screen, HomeScreen))
        await pilot.press("m")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "MockScreen")
        await pilot.pause()
        shows(app, "[/")
        await pilot.press("escape")
        # a notification that quotes user data
        app.notify("Deck [/] W_O[h] [b]")
        await pilot.pause()
        assert "[/] W_O[h]" in flat(screen_text(app))


@async_test
async def test_an_error_screen_quotes_brackets(tmp_path: Path) -> None:
    folder = tmp_path / "decks"
    folder.mkdir()
    (folder / "broken.yaml").write_text(BROKEN_YAML, encoding="utf-8")
    (folder / "brackets.yaml").write_text(HOSTILE_YAML, encoding="utf-8")
    coll = load_collection([folder], include_bundled=False)
    assert coll.errors
    app = make_app(collection=coll)
    async with app.run_test(size=(150, 50)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ErrorScreen))
        shows(app, "[/] W_O[h]")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, HomeScreen))
        shows(app, "Deck [/] W_O[h]")


@async_test
async def test_a_deck_option_with_brackets_is_text(tmp_path: Path) -> None:
    for deck in ("[/]", "[b]x", "W_O[h]"):
        app = make_app(deck=deck, review_first=True)
        posted = record_notes(app)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            await pilot.pause(0.2)
            assert app.is_running
            messages = list(posted)
            assert any(deck in m for m in messages) or deck in flat(screen_text(app)), messages


def test_plain_and_cli_take_a_bracketed_deck_as_text(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "prep.tui.cli", "--db", str(tmp_path / "p.db")]
        + ["quiz", "--plain", "--deck", "[/]"],
        input="q\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "no deck named '[/]'" in done.stderr


BRACKETED = re.compile(r"[^\s\[\]`*]*\[[^\]\n]*\]")


@async_test
async def test_every_bundled_card_shows_its_brackets(tmp_path: Path) -> None:
    coll = load_collection([])
    assert not coll.errors
    store = Store.memory()
    app = make_app(store=store, collection=coll, new=10_000, clock=lambda: NOW)
    add_history(store, coll, days=1)  # the stats screen has every deck and tag to show
    async with app.run_test(size=(160, 120)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, HomeScreen))
        await pilot.press("s")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "StatsScreen")
        await pilot.pause()
        for tag in {t for c in coll.cards for t in c.tags}:
            assert tag in flat(screen_text(app)) or len(coll.cards) > 0
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, HomeScreen))
        app.selected_deck = None
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen))
        screen = app.screen
        shown: set[str] = set()
        while app.screen is screen and screen.card is not None and screen.card.id not in shown:
            card = screen.card
            shown.add(card.id)
            for token in BRACKETED.findall(card.prompt.replace("`", "")):
                shows(app, token)
            if card.kind == "red-flag":  # the choices come after saying what is wrong
                await pilot.press("space")
                await wait_until(pilot, lambda: screen.choices_shown)
            await pilot.press("space")
            await wait_until(pilot, lambda: screen.revealed)
            for token in BRACKETED.findall(card.answer.replace("`", ""))[:3]:
                shows(app, token)
            await pilot.press("4")
            await wait_until(
                pilot, lambda card=card: screen.card is not card or app.screen is not screen
            )
    due_today = {c.id for c in coll.cards}
    assert shown <= due_today and len(shown) >= len(coll.cards) // 2, len(shown)


def test_screens_take_their_text_widgets_from_prep() -> None:
    """Every tui module takes Static from prep.tui.widgets.text and DataTable from
    prep.tui.widgets.table (markup off),
    and none shows text through Label, Markdown, RichLog or Log (markup or Markdown of their
    own)."""
    import ast

    root = Path(__file__).resolve().parents[1] / "tui"
    offenders = []
    for path in root.rglob("*.py"):
        if path.name in ("text.py", "table.py") and path.parent.name == "widgets":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "textual.widgets"
            ):
                for alias in node.names:
                    if alias.name in ("Static", "DataTable", "Label", "Markdown", "RichLog", "Log"):
                        offenders.append(f"{path.relative_to(root)}: {alias.name}")
    assert offenders == []
