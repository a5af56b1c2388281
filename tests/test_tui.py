"""Pilot tests of the Textual app: a whole session against a temp database, undo, choice cards,
demos (pass, fail, crash), a locked database, broken decks, and import hygiene (no torch)."""

from __future__ import annotations

import asyncio
import functools
import json
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text
from textual.widgets import DataTable, Static

from prep.engine.store import Store
from prep.engine.study.scheduler import Rating
from prep.tui.app import PrepApp, pick_theme
from prep.tui.screens.demo import DemoScreen, parse_report
from prep.tui.screens.errors import ErrorScreen
from prep.tui.screens.help import HelpScreen
from prep.tui.screens.home import HomeScreen
from prep.tui.screens.review import ReviewScreen
from prep.tui.screens.stats import StatsScreen
from prep.tui.screens.summary import SummaryScreen
from prep.tui.testing import NOW, add_history, fake_demo_command, make_app, write_decks
from prep.tui.widgets.key_button import KeyButton
from tests.pilot import record_notes


def async_test(fn):
    """Run an async test on a fresh event loop (no pytest-asyncio needed)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        asyncio.run(fn(*args, **kwargs))

    return wrapper


pytestmark = pytest.mark.usefixtures("utc_local_time")


def text_of(app: PrepApp, selector: str) -> str:
    content = app.screen.query_one(selector, Static).content
    if isinstance(content, str | Text):
        return str(content)
    console = Console(width=200, color_system=None)  # a table or other Rich renderable
    with console.capture() as capture:
        console.print(content)
    return capture.get()


def footer_keys(app: PrepApp) -> list[str]:
    """The keys the footer shows now, in order."""
    return [
        b.binding.key_display or b.binding.key
        for b in app.screen.active_bindings.values()
        if b.enabled and b.binding.show
    ]


def reviews(db: Path) -> list[tuple[str, int]]:
    with Store.open(db) as store:
        return [(r.card_id, r.rating) for r in store.reviews()]


async def wait_until(pilot, condition, timeout: float = 20.0) -> None:
    """Pause until ``condition()`` holds (the box may be busy; never a fixed sleep)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await pilot.pause(0.05)


@async_test
async def test_whole_session_is_stored(tmp_path: Path) -> None:
    db = tmp_path / "prep.db"
    app = make_app(store=Store.open(db))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        await pilot.press("down", "enter")  # the wo-core deck: one card of each kind
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        assert screen.card.id == "two-roles"
        assert text_of(app, "#progress") == "new 4 · learning 0 · due 0"
        assert not screen.query("#back")  # the answer side is mounted at the first reveal
        # the footer lists what works now: no picks on a recall card, no demo before the answer
        # (no undo: nothing is rated or marked yet, user13)
        assert footer_keys(app) == ["space", "t", "escape", "q", "question_mark"]
        await pilot.press("d")
        assert app.screen is screen

        # reveal: the answer and the linked demo appear, the buttons show each interval
        await pilot.press("space")
        assert screen.revealed and screen.query_one("#back").display
        assert "block-diagonal" in text_of(app, "#demo-link")
        assert footer_keys(app) == ["space", "1-4", "r", "escape", "q", "question_mark"]
        labels = [b.label for b in screen.query(KeyButton) if b.id and b.id.startswith("rate-")]
        assert labels == ["1 Again 1m", "2 Hard 6m", "3 Good 10m", "4 Easy 8d"]

        # rate: committed at once
        await pilot.press("3")
        assert reviews(db) == [("two-roles", 3)]
        assert screen.card.id == "wo-shape"
        assert "Saved: Good, next in 10 minutes" in text_of(app, "#hint")

        # undo: the card is back on screen and nothing is stored
        await pilot.press("u")
        assert screen.card.id == "two-roles" and not screen.revealed
        assert reviews(db) == []
        with Store.open(db) as other:
            assert other.card("two-roles") is None
        await pilot.press("space", "4")
        assert reviews(db) == [("two-roles", 4)]

        # choice card: a wrong pick shows right/wrong and suggests Again; Enter takes it
        assert screen.card.id == "wo-shape"
        assert "Pick a-c, or space shows the answer" in text_of(app, "#hint")
        assert footer_keys(app)[:2] == ["space", "a-c"]  # three choices
        await pilot.press("1")  # ratings do nothing before the answer is shown
        assert reviews(db) == [("two-roles", 4)]
        await pilot.press("b")
        assert screen.revealed and screen.picked == 1 and screen.suggested == Rating.Again
        assert "Not quite: the answer is a" in text_of(app, "#hint")
        assert "✗ b)" in text_of(app, "#choices") and "✓ a)" in text_of(app, "#choices")
        assert "» 1 Again" in screen.query_one("#rate-1", KeyButton).label
        await pilot.press("enter")
        assert reviews(db)[-1] == ("wo-shape", 1)

        # follow-up: the parent question is shown for context
        assert screen.card.id == "identity-wo"
        assert screen.query_one("#context").display
        assert "two roles" in text_of(app, "#context")
        await pilot.press("space", "3")

        # red-flag: first say what is wrong (the choices are hidden, a-d pick nothing), then
        # space shows the choices; a right pick suggests Good
        assert screen.card.id == "reshape-flag"
        assert not screen.query_one("#choices").display
        assert "Say out loud what this answer gets wrong" in text_of(app, "#hint")
        assert "Show choices" in screen.query_one("#reveal", KeyButton).label
        await pilot.press("b")
        assert not screen.revealed and screen.picked is None
        await pilot.press("space")
        assert screen.query_one("#choices").display and not screen.revealed
        assert "b)" in text_of(app, "#choices")
        await pilot.press("b")
        assert "Right" in text_of(app, "#hint") and screen.suggested == Rating.Good
        await pilot.press("enter")

        # the learning-step card comes back (wo-shape, rated Again) ... then quit mid-session
        assert screen.card is not None
        await pilot.press("q")
    assert reviews(db) == [
        ("two-roles", 4),
        ("wo-shape", 1),
        ("identity-wo", 3),
        ("reshape-flag", 3),
    ]


@async_test
async def test_end_of_session_summary_and_undo_from_it(tmp_path: Path) -> None:
    app = make_app(limit=2)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter", "space", "4", "space", "4")
        assert isinstance(app.screen, SummaryScreen)
        summary = text_of(app, "#summary")
        assert "Session complete" in summary
        assert "Reviews          2  (2 cards)" in summary
        assert "Again-rate       0%" in summary
        assert "Next card due in" in summary
        await pilot.press("u")
        assert isinstance(app.screen, ReviewScreen)
        assert app.screen.card.id == "wo-shape"  # new cards alternate decks and kinds
        await pilot.press("space", "4")
        assert isinstance(app.screen, SummaryScreen)
        await pilot.press("enter")
        assert isinstance(app.screen, HomeScreen)
        # home shows today's reviews
        assert "2 reviews today" in text_of(app, "#today")


@async_test
async def test_nothing_due_shows_when_next(tmp_path: Path) -> None:
    app = make_app(new=0)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter")
        assert isinstance(app.screen, SummaryScreen)
        assert "Nothing due right now" in text_of(app, "#summary")


@async_test
async def test_home_counts_and_deck_choice(tmp_path: Path) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.screen.query_one("#decks", DataTable)
        assert table.row_count == 3  # all decks, wo-core, wo-sums
        assert [str(c) for c in table.get_row_at(2)[1:4]] == ["1", "0", "0"]
        await pilot.press("down", "down", "enter")
        assert isinstance(app.screen, ReviewScreen)
        assert app.screen.card.id == "per-head-sum"
        assert text_of(app, "#progress") == "new 1 · learning 0 · due 0"
        await pilot.press("escape")
        assert isinstance(app.screen, HomeScreen)


@async_test
async def test_demo_runs_streams_records_and_returns_to_the_card(tmp_path: Path) -> None:
    db = tmp_path / "prep.db"
    store = Store.open(db)
    app = make_app(store=store, demo_command=fake_demo_command(tmp_path, "pass"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter", "space")
        review = app.screen
        assert isinstance(review, ReviewScreen) and review.revealed
        await pilot.press("r")
        demo = app.screen
        assert isinstance(demo, DemoScreen)
        await wait_until(pilot, lambda: not demo.running)
        log = "\n".join(demo.log_lines)
        assert "building d_model=64" in log and "checking the claim" in log
        checks = text_of(app, "#checks")
        assert checks.count("PASS") == 3 and "FAIL" not in checks
        assert checks.index("what the claim says") < checks.index("contrast: a dense W_O")
        assert "measured 0.8123; must be at least 0.01" in checks
        assert "why this bar: a dense W_O writes everywhere" in checks
        assert "W_O block norms (figure)" in checks and "██" in checks  # the figure is drawn
        assert checks.index("W_O block norms") < checks.index("what the claim says")
        assert checks.count("[identity]") == 2 and checks.count("[measurement]") == 1
        assert text_of(app, "#demo-status").startswith("PASS: all 3 checks hold")
        runs = store.demo_runs()
        assert [(r["name"], r["passed"], r["device"]) for r in runs] == [
            ("block-diagonal", True, "cpu")
        ]
        (metrics,) = store.conn.execute("SELECT metrics FROM demo_runs").fetchone()
        assert "figures" not in json.loads(metrics)  # the summary, not the arrays
        await pilot.press("escape")
        assert app.screen is review and review.revealed and review.card.id == "two-roles"
        await pilot.press("3")
    assert reviews(db) == [("two-roles", 3)]


@pytest.mark.parametrize("mode", ["fail", "crash"])
@async_test
async def test_failing_or_crashing_demo_keeps_the_app_working(tmp_path: Path, mode: str) -> None:
    app = make_app(demo_command=fake_demo_command(tmp_path, mode))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter", "space", "r")
        demo = app.screen
        await wait_until(pilot, lambda: not demo.running)
        status = text_of(app, "#demo-status")
        if mode == "fail":
            assert status.startswith("FAIL: 1 of 3 checks failed")
            assert [r["passed"] for r in app.store.demo_runs()] == [False]
        else:
            assert status.startswith("CRASHED: the demo exited with code 1")
            assert "CUDA out of memory" in "\n".join(demo.log_lines)
            assert app.store.demo_runs() == []
        await pilot.press("r")  # run again
        await wait_until(pilot, lambda: not demo.running)
        await pilot.press("escape", "3")
        assert isinstance(app.screen, ReviewScreen) and app.screen.card.id == "wo-shape"


@async_test
async def test_escape_stops_a_running_demo(tmp_path: Path) -> None:
    slow = tmp_path / "slow.py"
    slow.write_text("import time\nprint('started', flush=True)\ntime.sleep(60)\n")
    app = make_app(demo_command=lambda name: [sys.executable, str(slow)])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter", "space", "r")
        demo = app.screen
        await wait_until(pilot, lambda: "started" in demo.log_lines)
        process = demo._process
        assert process is not None
        await pilot.press("escape")
        assert isinstance(app.screen, ReviewScreen)
        await wait_until(pilot, lambda: process.returncode is not None)


@async_test
async def test_locked_database_does_not_advance_or_crash(tmp_path: Path) -> None:
    db = tmp_path / "prep.db"
    store = Store.open(db)
    store.conn.execute("PRAGMA busy_timeout = 50")
    app = make_app(store=store)
    posted = record_notes(app)  # (an 8 s notification can be gone before a loaded test looks)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter", "space")
        screen = app.screen
        screen.RETRY_SECONDS = 0.6
        other = sqlite3.connect(db, isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")
        await pilot.press("3")
        # the screen stays live and says what is happening while it retries
        await wait_until(pilot, lambda: "the database is busy" in text_of(app, "#hint"))
        assert screen.card.id == "two-roles" and screen.revealed and screen.saving
        await wait_until(pilot, lambda: not screen.saving)  # gave up after RETRY_SECONDS
        assert screen.card.id == "two-roles" and screen.revealed
        assert any("Not saved" in message for message in posted)
        assert "Not saved; the card stays" in text_of(app, "#hint")
        # rate again; the other writer lets go while it retries: saved without another key
        screen.RETRY_SECONDS = 20
        await pilot.press("3")
        await wait_until(pilot, lambda: screen.saving)
        other.execute("ROLLBACK")
        other.close()
        await wait_until(pilot, lambda: screen.card.id == "wo-shape")
    assert reviews(db) == [("two-roles", 3)]


@async_test
async def test_database_that_cannot_open_shows_an_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    app = PrepApp(
        db=str(blocker / "prep.db"),
        questions=[write_decks(tmp_path / "q")],
        include_bundled=False,
        demos={},
        theme="textual-dark",
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ErrorScreen)
        assert "cannot create the progress database" in text_of(app, "#error-lines")
        await pilot.press("q")


@async_test
async def test_invalid_user_deck_shows_check_errors(tmp_path: Path) -> None:
    folder = write_decks(tmp_path / "q")
    (folder / "broken.yaml").write_text(
        textwrap.dedent(
            """\
            cards:
              - id: good-one
                kind: recall
                prompt: p
                answer: a
              - id: Bad Id
                kind: recall
                prompt: p
            """
        )
    )
    app = PrepApp(
        db=str(tmp_path / "p.db"),
        questions=[folder],
        include_bundled=False,
        demos={},
        theme="textual-dark",
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ErrorScreen)
        lines = text_of(app, "#error-lines")
        assert "broken.yaml:6: card 'Bad Id': missing required field 'answer'" in lines
        assert "2 errors in the decks" in text_of(app, "#error-title")
        # fix it and reload
        (folder / "broken.yaml").unlink()
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        # break it again and continue without the broken cards
        (folder / "broken.yaml").write_text("cards: [{id: x}]\n")
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, ErrorScreen)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        assert "x" not in app.collection


@async_test
async def test_help_stats_palette(tmp_path: Path) -> None:
    store = Store.memory()
    app = make_app(store=store)
    add_history(store, app.collection)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        import io

        from rich.console import Console

        console = Console(width=100, record=True, file=io.StringIO())
        for _screen, table in app.screen.tables():
            console.print(table)
        keys = [line.split()[0] for line in console.export_text().splitlines() if line.strip()]
        for expected in (
            "space",
            "1",
            "2",
            "3",
            "4",
            "a-d",
            "u",
            "d",
            "Esc",
            "?",
            "Ctrl+p",
            "Enter",
            "q",
            "s",
            "c",
            "m",
            "r",
        ):
            assert expected in keys, expected
        await pilot.press("escape", "s")
        assert isinstance(app.screen, StatsScreen)
        summary = text_of(app, "#stats-summary")
        assert "total 30" in summary and "streak 6 days" in summary
        assert "Demos verified  1 of 2" in text_of(app, "#stats-demos")
        await pilot.press("escape", "c")  # cram
        assert type(app.screen).__name__ == "CramScreen"
        await pilot.press("escape", "m")  # mock interview
        assert type(app.screen).__name__ == "MockScreen"
        await pilot.press("escape")
        assert isinstance(app.screen, HomeScreen)
        await pilot.press("ctrl+p")
        await pilot.press(*"statistics", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, StatsScreen))


def test_parse_report() -> None:
    report = parse_report('{"name": "x", "checks": [], "passed": true}')
    assert report is not None and report.name == "x" and report.checks == [] and report.passed
    assert parse_report('{"checks": [], "passed": true}') is None  # no name: not a report
    assert parse_report("{not json}") is None
    assert parse_report("[1, 2]") is None
    assert parse_report('{"other": 1}') is None


def test_theme_follows_the_terminal() -> None:
    assert pick_theme({}) == "textual-dark"
    assert pick_theme({"COLORFGBG": "0;15"}) == "textual-light"
    assert pick_theme({"COLORFGBG": "15;0"}) == "textual-dark"
    assert pick_theme({"PREP_THEME": "nord", "COLORFGBG": "0;15"}) == "nord"


def test_the_tui_never_imports_torch(tmp_path: Path) -> None:
    """Import every TUI module and drive a session, demo list and stats in a fresh process."""
    code = textwrap.dedent(
        f"""
        import asyncio, importlib, pkgutil, sys
        import prep.tui, prep.tui.screens, prep.tui.widgets
        for pkg in (prep.tui, prep.tui.screens, prep.tui.widgets):
            for mod in pkgutil.iter_modules(pkg.__path__, pkg.__name__ + "."):
                importlib.import_module(mod.name)
        from prep.engine.store import Store
        from prep.tui.app import PrepApp
        from prep.tui.testing import write_decks
        from pathlib import Path

        async def main():
            app = PrepApp(db={str(tmp_path / "p.db")!r},
                          questions=[write_decks(Path({str(tmp_path / "q")!r}))])
            async with app.run_test(size=(80, 24)) as pilot:
                await pilot.pause()
                await pilot.press("enter", "space", "3", "escape", "s", "escape", "d", "escape")
                await pilot.press("question_mark", "escape")
        asyncio.run(main())
        print("torch" in sys.modules)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "False"
    assert reviews(tmp_path / "p.db")


def test_fixed_clock_is_utc() -> None:
    assert NOW.utcoffset().total_seconds() == 0


@async_test
async def test_keys_that_work_are_in_the_footer(tmp_path: Path) -> None:
    """Enter on the deck and demo lists was hidden by the table's own (unlisted) binding; the
    palette listed two "Keys" commands."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert footer_keys(app)[:2] == ["enter", "s"]
        await pilot.press("d")
        assert footer_keys(app)[0] == "enter"
        await pilot.press("escape")
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert titles.count("Keys") == 1


@async_test
async def test_mock_enter_after_the_reveal_grades_good(tmp_path: Path) -> None:
    """As on the review screen, Enter takes the suggested grade, Good on a recall card."""
    store = Store.memory()
    app = make_app(store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("m")
        screen = app.screen
        assert type(screen).__name__ == "MockScreen"
        assert screen.mock.step.card.kind == "recall"
        await pilot.press("enter")  # reveal (nothing typed)
        assert "(Enter = Good)" in text_of(app, "#mock-grades")
        await pilot.press("enter")
        await pilot.pause()
        assert [r.rating for r in store.reviews()] == [3]


@async_test
async def test_long_text_wraps_under_itself_at_80_columns(tmp_path: Path) -> None:
    """Choices and cram bullets wrap with a hanging indent; the demo's checks wrap instead of
    being cut off at the right edge."""
    from prep.engine.study.cram import CramDeck, CramItem
    from prep.tui.screens.cram import sheet_text

    long = "word " * 30
    item = CramItem(card_id="x", prompt="Q?", bullets=(long.strip(),))
    text = sheet_text([CramDeck(name="d", title="D", items=(item,))], width=40).plain
    bullet_lines = [line for line in text.splitlines() if "word" in line]
    assert bullet_lines[0].startswith("  • word") and len(bullet_lines) > 2
    assert all(line.startswith("    word") for line in bullet_lines[1:])
    assert all(len(line) <= 40 for line in bullet_lines)

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("down", "enter", "space", "3")  # wo-core: on to the choice card
        assert app.screen.card.choices
        await pilot.press("b")
        console = Console(width=24, color_system=None)
        with console.capture() as capture:
            console.print(app.screen.query_one("#choices", Static).content)
        lines = capture.get().splitlines()
        # "✓ a) (d_model, n_heads *" then "     d_head)": under the text, not the letter
        assert lines[0].startswith("✓ a) (d_model")
        assert lines[1].startswith("     ") and lines[1].strip() == "d_head)"


@async_test
async def test_demo_screen_shows_progress_and_a_usage_error_line(tmp_path: Path) -> None:
    """A real-weight demo without the `real` extra exits 2 with one line: the status shows it."""
    script = tmp_path / "needs_extra.py"
    hint = "prep demo real-ov-rank: the real-weight demos need the optional `real` extra"
    script.write_text(
        "import os, sys\n"
        "assert os.environ.get('PREP_DEMO_PROGRESS') == '1'\n"
        "print('progress: loading all-MiniLM-L6-v2', file=sys.stderr, flush=True)\n"
        f"print({hint!r}, file=sys.stderr, flush=True)\n"
        "sys.exit(2)\n"
    )
    app = make_app(demo_command=lambda name: [sys.executable, str(script)])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter", "space", "r")
        demo = app.screen
        await wait_until(pilot, lambda: not demo.running)
        assert "progress: loading all-MiniLM-L6-v2" in demo.log_lines
        assert text_of(app, "#demo-status") == hint
        assert app.store.demo_runs() == []


@async_test
async def test_the_buttons_work_with_the_mouse(tmp_path: Path) -> None:
    """A click on "Show answer" reveals, a click on a rating button rates (and its pressed
    look goes away again); the rating bar exists only once an answer has been shown."""
    db = tmp_path / "prep.db"
    app = make_app(store=Store.open(db), review_first=True)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        assert not screen.query("#ratings")
        first = screen.card.id
        assert await pilot.click("#reveal")
        assert screen.revealed
        await pilot.pause()
        good = screen.query_one("#rate-3", KeyButton)
        assert good.region.width > 0  # laid out, on screen
        assert await pilot.click("#rate-3")
        await pilot.pause()
        assert reviews(db) == [(first, 3)]
        assert screen.card.id != first and not screen.revealed
        assert not screen.query_one("#ratings").display
        await wait_until(pilot, lambda: not good.has_class("-active"))
