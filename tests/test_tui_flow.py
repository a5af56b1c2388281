"""Pilot tests of the daily study flow (issue 14): the highlighted deck is the one every key
acts on, one back/quit convention, help at the current screen's section, the mock's guards."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from textual.widgets import DataTable

from prep.tui.app import PrepApp
from prep.tui.screens.home import HomeScreen
from prep.tui.screens.review import ReviewScreen
from prep.tui.testing import make_app
from tests.pilot import record_notes
from tests.test_tui import async_test

pytestmark = pytest.mark.usefixtures("utc_local_time")


@async_test
async def test_c_m_and_enter_act_on_the_highlighted_deck_and_the_cursor_stays(
    tmp_path: Path,
) -> None:
    from prep.tui.screens.cram import CramScreen
    from prep.tui.screens.mock import MockScreen

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.screen.query_one("#decks", DataTable)
        await pilot.press("down", "down")  # all decks, wo-core, [wo-sums]
        await pilot.press("c")
        assert isinstance(app.screen, CramScreen)
        assert app.screen.current_deck() == "wo-sums"
        await pilot.press("escape")
        assert isinstance(app.screen, HomeScreen)
        assert table.cursor_row == 2
        await pilot.press("up")  # wo-core
        await pilot.press("m")
        assert isinstance(app.screen, MockScreen)
        assert app.screen.mock is not None
        assert {step.card.deck for step in app.screen.mock.steps} == {"wo-core"}
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        assert table.cursor_row == 1
        await pilot.press("enter")
        assert isinstance(app.screen, ReviewScreen)
        assert app.screen.card.deck == "wo-core"
        await pilot.press("escape")
        assert table.cursor_row == 1
        await pilot.press("up", "s")  # all decks, then stats and back: still all decks
        await pilot.press("escape")
        assert isinstance(app.screen, HomeScreen)
        assert table.cursor_row == 0
        assert app.selected_deck is None


def _run_in_pty(argv: list[str], env: dict[str, str], keys: bytes, timeout: float = 30) -> str:
    """Run ``argv`` with a pseudo-terminal as stdin/stdout (isatty() is true), type ``keys``
    once it has printed its first line, and return everything it wrote."""
    import os
    import pty
    import select
    import subprocess
    import time

    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        argv, stdin=follower, stdout=follower, stderr=follower, env=env, close_fds=True
    )
    os.close(follower)
    out = b""
    sent = False
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(leader, 4096)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                out += chunk
                if not sent and b"\n" in out:
                    os.write(leader, keys)
                    sent = True
            elif proc.poll() is not None:
                break
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(leader)
    return out.decode("utf-8", "replace")


@pytest.mark.parametrize("term", ["dumb", "xterm-256color"])
def test_term_dumb_runs_the_line_mode(tmp_path: Path, small_deck_dir: Path, term: str) -> None:
    import os
    import sys

    prep = Path(sys.executable).with_name("prep")
    env = {**os.environ, "TERM": term, "PREP_DB": str(tmp_path / "p.db")}
    argv = [str(prep), "--questions", str(small_deck_dir), "quiz", "--deck", "small"]
    if term == "dumb":
        out = _run_in_pty(argv, env, b"q\n")
        assert "TERM=dumb cannot draw the full-screen app; running the line-oriented" in out
        assert "Press Enter to reveal" in out or "Pick a-" in out
        assert "\x1b[?1049h" not in out  # never switched to the full-screen buffer
    else:  # the contrast: a real terminal type gets the full-screen app
        out = _run_in_pty(argv, env, b"q")
        assert "line-oriented" not in out
        assert "\x1b[?1049h" in out


@async_test
async def test_help_opens_at_this_screens_section_and_ctrl_c_quits() -> None:
    from textual.containers import VerticalScroll

    from prep.tui.screens.help import HelpScreen

    def section_on_top(name: str) -> bool:
        scroll = app.screen.query_one("#help", VerticalScroll)
        section = app.screen.query_one(f"#help-{name}")
        return scroll.scroll_y > 0 and section.region.y - scroll.region.y <= 1

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.pause()
        assert section_on_top("HomeScreen") and not section_on_top("ReviewScreen")
        await pilot.press("escape", "enter", "question_mark")  # help from the review screen
        assert isinstance(app.screen, HelpScreen)
        await pilot.pause()
        assert section_on_top("ReviewScreen")
        await pilot.press("escape")
        assert isinstance(app.screen, ReviewScreen)
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert app.return_code == 0
    assert not app.is_running


@async_test
async def test_mock_asks_before_discarding_a_typed_answer_and_says_saved_in_place() -> None:
    from textual.widgets import Input

    from prep.engine.store import Store
    from prep.tui.screens.confirm import Confirm
    from prep.tui.screens.mock import MockScreen
    from tests.test_tui import text_of

    store = Store.memory()
    app = make_app(store=store)
    posted = record_notes(app)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("down", "m")  # wo-core: two-roles, then its follow-up
        screen = app.screen
        assert isinstance(screen, MockScreen)
        await pilot.press(*"mixes heads", "escape")  # leaves the answer box, text kept
        assert app.screen is screen and screen.focused is None
        await pilot.press("escape")  # leaves the mock: asks first, the answer would be lost
        assert isinstance(app.screen, Confirm)
        await pilot.press("n")  # stay: the answer is still there
        assert app.screen is screen
        assert screen.query_one("#mock-answer", Input).value == "mixes heads"
        await pilot.press("enter", "3")  # reveal, grade Good
        await pilot.pause()
        assert [r.rating for r in store.reviews()] == [3]
        # the grade is confirmed where the answer will appear, not in a toast over the grades
        assert "Saved: Good, next review in" in text_of(app, "#mock-reveal")
        assert not posted
        await pilot.press("enter", "4")  # the follow-up, answered aloud
        await pilot.pause()
        summary = text_of(app, "#mock-reveal")
        assert (
            "What are the two roles of `W_O` in multi-head attention?: " in summary
        )  # questions, not card ids
        assert "two-roles" not in summary and "identity-wo" not in summary
        await pilot.press("escape")  # nothing typed to lose: no question
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
    # with a typed answer, y leaves
    app = make_app(store=Store.memory())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("down", "m", *"x", "escape", "escape", "y")
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)


def test_intervals_and_counts_in_words() -> None:
    from datetime import timedelta

    from prep.engine.study.present import count, spoken_interval

    assert [count(n, "day") for n in (0, 1, 2)] == ["0 days", "1 day", "2 days"]
    assert spoken_interval(timedelta(days=1)) == "1 day"
    assert spoken_interval(timedelta(hours=47)) == "2 days"
    assert spoken_interval(timedelta(minutes=10)) == "10 minutes"
    assert spoken_interval(timedelta(days=45)) == "1.5 months"


@pytest.mark.parametrize("width", [80, 120])
def test_deck_names_use_the_width_at_80_columns(width: int) -> None:
    from prep.engine.decks.deck import parse_deck_text
    from prep.tui.testing import fixed_collection

    coll = fixed_collection().parsed()  # (its parse, to add a deck to)
    title = "A deck whose title runs long - parameters, folding, pruning and importance"
    info, cards, errors = parse_deck_text(
        f"deck: long\ntitle: {title}\ncards:\n  - id: x\n    kind: recall\n"
        "    prompt: Q?\n    answer: A.\n",
        "long.yaml",
        "long",
    )
    assert not errors
    coll.decks[info.name] = info
    for card in cards:
        coll.add(card)

    async def run() -> None:
        from prep.engine.decks.deckcache import from_parsed

        app = make_app(collection=from_parsed(coll))
        async with app.run_test(size=(width, 24)) as pilot:
            await pilot.pause()
            table = app.screen.query_one("#decks", DataTable)
            label = str(table.get_row_at(3)[0])
            # every count column stays on screen and the label takes the rest
            assert table.virtual_size.width <= table.size.width
            if width == 80:  # the title gives way; the deck's id stays
                assert label.endswith("…  long") and len(label) >= 43
            else:
                assert label == f"{title}  long"
                # shrunk to 80 columns: the counts stay on screen (the deck column shrinks)
                await pilot.resize_terminal(80, 24)
                await pilot.pause()
                await pilot.pause()
                assert table.virtual_size.width <= table.size.width
                assert str(table.get_row_at(3)[0]).endswith("…  long")

    import asyncio

    asyncio.run(run())


@async_test
async def test_card_text_keeps_a_readable_measure_on_a_wide_terminal() -> None:
    app = make_app()
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.press("enter", "space")
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)
        for selector in ("#prompt", "#answer", "#back"):
            assert app.screen.query_one(selector).size.width <= 100
        assert app.screen.query_one("#actions").size.width > 150  # the buttons still spread


def test_new_cards_mix_decks_and_wait_for_their_parent(small_collection, fresh_store, clock):
    from collections import Counter

    from prep.engine.decks.deckcache import load_collection
    from prep.engine.study.session import build_queue
    from prep.tui.testing import fixed_collection

    coll = fixed_collection()  # wo-core (recall, choice, follow-up, red-flag), wo-sums (recall)
    queue = build_queue(fresh_store, coll, clock(), new_limit=10)
    # one card of each (deck, kind) in turn; the follow-up after its parent
    assert queue.new == ["two-roles", "wo-shape", "identity-wo", "reshape-flag", "per-head-sum"]
    # the bundled decks: day 1 (20 new) starts at the basics and mixes every kind within the
    # curriculum (core roots, then what builds on them; not four turns a round for systems)
    bundled = load_collection([])
    queue = build_queue(fresh_store, bundled, clock(), new_limit=20)
    kinds = Counter(bundled.get(cid).kind for cid in queue.new)
    assert queue.new[0] == "wo-two-roles"
    assert set(kinds) == {"recall", "choice", "red-flag", "follow-up"}, kinds
    assert {bundled.get(cid).deck for cid in queue.new} <= {
        "wo-core",
        "wo-followups",
        "wo-practice",
        "wo-red-flags",
    }
    for cid in queue.new:  # every follow-up's parent is seen or earlier in the queue
        parent = bundled.get(cid).parent
        assert parent is None or queue.new.index(parent) < queue.new.index(cid)


def test_the_limit_is_named_and_study_more_adds_new_cards_today(tmp_path: Path, clock) -> None:
    from prep.engine.store import Store
    from prep.engine.study.scheduler import Rating, Settings
    from prep.engine.study.session import ReviewSession, add_new_today, build_queue, limits_today
    from prep.tui.testing import fixed_collection

    store = Store.memory()
    store.save_settings(Settings(new_per_day=2))
    coll = fixed_collection()
    session = ReviewSession(store, coll, clock=clock)
    while not session.finished:
        session.rate(Rating.Easy)
    queue = build_queue(store, coll, clock())
    assert queue.new == []
    limits = limits_today(store, coll, clock(), queue)
    assert limits.new_reached and limits.new_waiting == 3 and limits.new_done == 2
    from prep.engine.study.present import limit_lines

    assert limit_lines(limits) == [
        "Daily new-card limit reached (2 new a day, 0 left today); 3 unseen cards wait."
    ]
    assert add_new_today(store, clock(), 10) == 10
    assert len(build_queue(store, coll, clock()).new) == 3
    clock.advance(days=1)  # "study more" is for today only
    assert len(build_queue(store, coll, clock()).new) == 2


@async_test
async def test_home_says_the_daily_limit_caps_all_decks_and_the_decks_share_it() -> None:
    """note13: "All decks" New 20 while the decks below summed to 68, and nothing said the
    daily limit caps it: home says the limit, what is left of it today, that the decks share
    it, and how many more wait (before any card is studied, not only once it is reached)."""
    from prep.engine.store import Store
    from prep.engine.study.scheduler import Settings
    from tests.test_tui import text_of

    store = Store.memory()
    store.save_settings(Settings(new_per_day=2))
    app = make_app(store=store, review_first=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        table = app.screen.query_one("#decks", DataTable)
        news = [int(str(table.get_row_at(i)[1])) for i in range(table.row_count)]
        assert news[0] == 2 and sum(news[1:]) > 2  # the decks' counts do not add up to it
        unseen = len(app.collection)
        howto = text_of(app, "#howto")
        assert (
            "Daily new-card limit: 2 new a day, 2 left today, shared by the decks; "
            f"{unseen - 2} more unseen cards wait."
        ) in howto
        assert howto.count("n studies more") == 1  # the keys line says it; not once per limit
    # `prep --new 4` serves 4 whatever the day's 2: no line says the 2 caps them
    app = make_app(store=store, review_first=False, new=4)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        table = app.screen.query_one("#decks", DataTable)
        assert int(str(table.get_row_at(0)[1])) == 4
        howto = text_of(app, "#howto")
        assert "Daily new-card limit" not in howto and "--new 4 is in force" in howto


@async_test
async def test_study_more_from_home_and_review_ahead() -> None:
    from prep.engine.store import Store
    from prep.engine.study.scheduler import Rating, Settings
    from prep.tui.screens.study_more import StudyMore
    from prep.tui.testing import NOW
    from tests.conftest import Clock
    from tests.test_tui import text_of

    store = Store.memory()
    store.save_settings(Settings(new_per_day=1))
    clock = Clock(NOW)
    app = make_app(store=store, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter", "space", "4")  # the one new card of the day: Easy, 8 days
        await pilot.pause()
        assert (
            "Daily new-card limit reached (1 new a day, 0 left today); 4 unseen cards wait."
            in text_of(app, "#summary")
        )
        await pilot.press("n")
        assert isinstance(app.screen, StudyMore)
        await pilot.press("1")  # 10 more new cards today
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)
        assert app.screen.session.counts()[0] == 4
        await pilot.press("escape")
        await pilot.pause()
        assert "limit reached" not in text_of(app, "#howto")
        # review ahead: two days later the Easy card is due within the week: study it now
        clock.advance(days=2)
        await pilot.press("n")
        assert "next 7 days (1)" in text_of(app, "#more-text")
        await pilot.press("2")
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)
        assert app.screen.session.counts() == (0, 0, 1)
        await pilot.press("space", "3")
        await pilot.pause()
    assert [r.rating for r in store.reviews()] == [int(Rating.Easy), int(Rating.Good)]


@async_test
async def test_space_rates_good_and_a_three_choice_card_says_a_c() -> None:
    from prep.engine.store import Store
    from tests.test_tui import footer_keys

    store = Store.memory()
    app = make_app(store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("down", "enter")  # wo-core: recall, then a three-choice card
        await pilot.press("space", "space")  # reveal, then Good
        await pilot.pause()
        assert [(r.card_id, r.rating) for r in store.reviews()] == [("two-roles", 3)]
        assert app.screen.card.id == "wo-shape" and len(app.screen.card.choices) == 3
        assert "a-c" in footer_keys(app) and "a-d" not in footer_keys(app)
        await pilot.press("d")  # no choice d: nothing happens
        assert not app.screen.revealed
        await pilot.press("b", "space")  # a wrong pick suggests Again; space takes it
        await pilot.pause()
        assert [r.rating for r in store.reviews()] == [3, 1]


def test_suspend_bury_flag_are_stored_undoable_and_honoured(fresh_store, small_collection, clock):
    from prep.engine.study.session import ReviewSession, build_queue
    from prep.engine.study.stats import compute

    s = ReviewSession(fresh_store, small_collection, clock=clock, new_limit=10)
    assert s.current.id == "roles"
    s.set_mark("suspend")
    assert fresh_store.mark("roles").suspended and s.current.id == "pick-one"
    s.set_mark("flag")  # flagged: stays in the session
    assert s.current.id == "pick-one" and fresh_store.mark("pick-one").flagged
    s.set_mark("bury")
    assert fresh_store.mark("pick-one").buried_until > clock()
    queue = build_queue(fresh_store, small_collection, clock(), new_limit=10)
    assert "roles" not in queue.ids and "pick-one" not in queue.ids
    marks = compute(fresh_store, small_collection, clock()).marks
    assert (marks.suspended, marks.buried, marks.flagged) == (1, 1, 1)
    # undo goes back through the marks, one at a time
    assert s.undo().id == "pick-one" and fresh_store.mark("pick-one").buried_until is None
    assert s.current.id == "pick-one"
    assert s.undo().id == "pick-one" and not fresh_store.mark("pick-one").flagged
    assert s.undo().id == "roles" and not fresh_store.mark("roles").suspended
    assert s.current.id == "roles"
    # a buried card is back on the next study day; a suspended one is not
    s.set_mark("bury")
    s.set_mark("suspend")
    clock.advance(days=1)
    ids = build_queue(fresh_store, small_collection, clock(), new_limit=10).ids
    assert "roles" in ids and "pick-one" not in ids


@async_test
async def test_marks_from_the_review_screen_and_bullets_on_the_back(small_collection) -> None:
    from prep.engine.store import Store
    from tests.test_tui import text_of

    store = Store.memory()
    app = make_app(store=store, collection=small_collection)
    posted = record_notes(app)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter")
        assert app.screen.card.id == "roles"
        await pilot.press("space")
        answer = text_of(app, "#answer")
        assert "In 60 seconds" in answer and "mixing" in answer and "weighting" in answer
        await pilot.press("f")
        assert "⚑ flagged" in text_of(app, "#where") and store.mark("roles").flagged
        # The toast says where flagged cards are listed (stats and `prep marks`).
        told = list(posted)
        assert any(m.startswith("Flagged (stats and `prep marks` list it") for m in told), told
        assert store.mark_counts(datetime.now(UTC))["flagged"] == 1
        await pilot.press("minus")  # bury: on to the next card
        assert app.screen.card.id != "roles" and store.mark("roles").buried_until is not None
        assert "buried until tomorrow" in text_of(app, "#hint")
        await pilot.press("at")  # suspend this one
        # Undo, or later `prep unmark`, brings a suspended card back: the note says both.
        hint = text_of(app, "#hint")
        assert "not served until `prep unmark`" in hint and "(u undoes)" in hint, hint
        suspended = [c.id for c in small_collection.cards if store.mark(c.id).suspended]
        assert len(suspended) == 1
        await pilot.press("u", "u")  # both marks undone, in order
        assert app.screen.card.id == "roles" and store.mark("roles").buried_until is None
        assert not any(store.mark(c.id).suspended for c in small_collection.cards)


@async_test
async def test_a_folder_that_cannot_be_written_says_so_and_what_to_do(tmp_path: Path) -> None:
    import pytest as _pytest

    from prep.tui.app import PrepApp
    from prep.tui.screens.errors import ErrorScreen
    from prep.tui.testing import write_decks
    from tests.test_tui import text_of

    folder = tmp_path / "locked"
    real_mkdir = Path.mkdir

    def mkdir(self: Path, *args, **kwargs) -> None:
        if self == folder:  # as a user without write permission on tmp_path would see
            raise PermissionError(13, "Permission denied", str(folder))
        real_mkdir(self, *args, **kwargs)

    with _pytest.MonkeyPatch.context() as mp:
        mp.setattr(Path, "mkdir", mkdir)
        app = PrepApp(
            db=str(folder / "prep.db"),
            questions=[write_decks(tmp_path / "q")],
            include_bundled=False,
            demos={},
        )
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            assert isinstance(app.screen, ErrorScreen)
            title = text_of(app, "#error-title")
            assert "read-only" in title and "--db PATH" in title
            assert "another prep is writing" not in title
            assert f"{folder} cannot be written" in text_of(app, "#error-lines")


def test_a_read_only_file_is_named(tmp_path: Path, monkeypatch) -> None:
    from prep.engine.store import Store
    from prep.engine.store import core as storage

    db = tmp_path / "prep.db"
    Store.open(db).close()
    monkeypatch.setattr(storage.os, "access", lambda path, mode: Path(path) != db)
    assert storage._not_writable(db) == f"the file {db} is read-only"
    monkeypatch.setattr(storage.os, "access", lambda path, mode: Path(path) != tmp_path)
    assert storage._not_writable(db).startswith(f"the folder {tmp_path} is read-only")
    monkeypatch.undo()
    assert storage._not_writable(db) is None


STREAMING_DEMO = """\
import json, pathlib, sys, time
name, folder = sys.argv[1], pathlib.Path(sys.argv[2])

def wait_for(flag):  # the test says when to go on
    deadline = time.monotonic() + 30
    while not (folder / flag).exists() and time.monotonic() < deadline:
        time.sleep(0.02)

print("progress: building the model", file=sys.stderr, flush=True)
print("progress: measuring 12 checks", file=sys.stderr, flush=True)
wait_for("report")
checks = [{"name": f"check {i}: a long name that wraps at eighty columns for sure, twice over",
           "measured": 0.0, "expected": "== 0.0", "passed": True, "detail": ""}
          for i in range(12)]
report = {"name": name, "claim": "c", "device": "cpu", "device_name": "cpu", "dtype": "float32",
          "scale": "small", "seed": 0, "sizes": {}, "seconds": 0.5, "passed": True,
          "checks": checks, "contrast_label": "", "contrast": [], "notes": [], "cards": []}
print(json.dumps(report), flush=True)
wait_for("exit")  # still running after its report
"""


@async_test
async def test_demo_streams_progress_shows_checks_at_once_and_scrolls_to_the_end(
    tmp_path: Path,
) -> None:
    import sys

    from textual.containers import VerticalScroll

    from prep.tui.screens.demo import DemoScreen
    from tests.test_tui import text_of, wait_until

    script = tmp_path / "streaming.py"
    script.write_text(STREAMING_DEMO, encoding="utf-8")
    app = make_app(demo_command=lambda name: [sys.executable, str(script), name, str(tmp_path)])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("down", "enter", "space", "r")
        demo = app.screen
        assert isinstance(demo, DemoScreen)
        await wait_until(pilot, lambda: "measuring 12 checks" in text_of(app, "#demo-status"))
        status = text_of(app, "#demo-status")
        assert "Running block-diagonal" in status and " s · " in status  # elapsed time
        assert "progress: building the model" in demo.log_lines
        assert not demo.query_one("#checks").display
        (tmp_path / "report").touch()
        # the checks are on screen as soon as the report arrives, before the process ends
        await wait_until(pilot, lambda: demo.query_one("#checks").display)
        assert demo.running
        (tmp_path / "exit").touch()
        await wait_until(pilot, lambda: not demo.running)
        await pilot.pause()
        body = demo.query_one("#demo-body", VerticalScroll)
        assert body.max_scroll_y > 0 and body.scroll_y == body.max_scroll_y  # the real end
        assert text_of(app, "#demo-status").startswith("PASS: all 12 checks hold")


def _two_demos_app() -> PrepApp:
    """An app on one card that links two demos (`r` asks which)."""
    from prep.engine.decks.deck import ParsedDecks, parse_deck_text
    from prep.engine.decks.deckcache import from_parsed

    info, cards, errors = parse_deck_text(
        "deck: two\ncards:\n  - id: both\n    kind: recall\n    prompt: Q?\n    answer: A.\n"
        "    demo: [block-diagonal, per-head-sum]\n",
        "two.yaml",
        "two",
    )
    assert not errors
    coll = ParsedDecks()
    coll.decks[info.name] = info
    for card in cards:
        coll.add(card)
    return make_app(collection=from_parsed(coll))


@async_test
async def test_a_card_with_several_demos_asks_which() -> None:
    from prep.tui.screens.demo import DemoScreen
    from prep.tui.screens.demo_pick import DemoPick
    from tests.test_tui import text_of

    app = _two_demos_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter", "space")
        assert "run one of 2 demos" in text_of(app, "#demo-link")
        await pilot.press("r")
        assert isinstance(app.screen, DemoPick)
        await pilot.press("escape")
        assert isinstance(app.screen, ReviewScreen)
        await pilot.press("r", "2")
        await pilot.pause()
        assert isinstance(app.screen, DemoScreen) and app.screen.demo_name == "per-head-sum"
        await pilot.press("escape", "r", "down", "enter")
        await pilot.pause()
        assert isinstance(app.screen, DemoScreen) and app.screen.demo_name == "per-head-sum"


@async_test
async def test_the_demo_pick_footer_shows_its_own_keys() -> None:
    """The footer on screen under the pick is the pick's (Esc cancels, q quits), not the
    card's below it (its rating keys did nothing there)."""
    from textual.widgets._footer import FooterKey

    from prep.tui.screens.demo_pick import DemoPick
    from prep.tui.widgets.footer import Footer

    app = _two_demos_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter", "space", "r")
        await pilot.pause()
        assert isinstance(app.screen, DemoPick)
        widget, _ = app.get_widget_at(1, 23)  # the bottom row, where the keys are read
        footer = next((w for w in widget.ancestors_with_self if isinstance(w, Footer)), None)
        assert footer is not None and footer.screen is app.screen
        shown = [key.description for key in footer.query(FooterKey)]
        assert "Cancel" in shown and "Quit" in shown
        assert not {"Again", "Good", "Show answer"} & set(shown)
        await pilot.press("q")
        await pilot.pause()
    assert not app.is_running


@async_test
async def test_a_second_prep_on_the_database_is_told_and_undo_stays_honest(
    tmp_path: Path,
) -> None:
    from prep.engine.store import Store
    from prep.engine.study.scheduler import Rating
    from prep.engine.study.session import ReviewSession
    from prep.engine.timeutil import utcnow
    from prep.tui.testing import NOW
    from tests.test_tui import text_of

    db = tmp_path / "prep.db"
    other = Store.open(db)
    other.announce("elsewhere:1:0", utcnow())  # another prep (another host), open just now
    app = make_app(store=Store.open(db))
    posted = record_notes(app)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert any("Another prep has this database open" in n for n in posted)
        await pilot.press("down", "enter", "space", "3")  # our rating: two-roles, Good
        await pilot.pause()
        assert "(u undoes)" in text_of(app, "#hint")
        # the other prep rates a card after ours
        coll = app.collection
        ReviewSession(other, coll, queue=["per-head-sum"], clock=lambda: NOW).rate(Rating.Easy)
        await pilot.press("u")
        assert any("another prep has rated" in n for n in posted)
        assert "Undo is not possible now" in text_of(app, "#hint")
        assert app.screen.card.id == "wo-shape"  # nothing moved back
    with Store.open(db) as store:
        assert [(r.card_id, r.rating) for r in store.reviews()] == [
            ("two-roles", 3),
            ("per-head-sum", 4),
        ]
        assert not any(k.startswith("open:") and "elsewhere" not in k for k in store_keys(store))
    other.close()


def store_keys(store) -> list[str]:  # noqa: ANN001
    return [r[0] for r in store.conn.execute("SELECT key FROM meta")]


def test_ctrl_c_in_the_line_mode_quits_with_the_summary(fresh_store, small_collection, clock):
    import io

    from prep.engine.study.session import ReviewSession
    from prep.tui.plain import run_plain

    class CtrlC(io.StringIO):
        def readline(self, *args) -> str:  # noqa: ANN002
            raise KeyboardInterrupt

    out = io.StringIO()
    session = ReviewSession(fresh_store, small_collection, clock=clock)
    assert run_plain(session, CtrlC(), out) == 0
    assert "Session over: 0 reviewed" in out.getvalue()


def test_the_review_limit_is_named_too(fresh_store, clock) -> None:
    from prep.engine.study.present import limit_lines
    from prep.engine.study.scheduler import Settings
    from prep.engine.study.session import build_queue, limits_today
    from prep.tui.testing import fixed_collection, seed_due

    coll = fixed_collection()
    seed_due(fresh_store, coll, clock())  # every card a due review
    fresh_store.save_settings(Settings(review_limit=2))
    queue = build_queue(fresh_store, coll, clock())
    assert len(queue.due) == 2
    limits = limits_today(fresh_store, coll, clock(), queue)
    assert limits.reviews_reached and not limits.new_reached
    assert limit_lines(limits)[0].startswith("Daily review limit reached (2); more reviews are due")
    fresh_store.save_settings(Settings(review_limit=10))
    queue = build_queue(fresh_store, coll, clock())
    assert not limits_today(fresh_store, coll, clock(), queue).reviews_reached


@async_test
async def test_quiz_opens_on_the_first_card_and_builds_home_only_when_asked() -> None:
    """`prep quiz` starts on the first card with no home screen built under it; Esc builds
    home; Enter there starts a session again, and Esc goes back to that same home."""
    app = make_app(review_first=True)
    async with app.run_test(size=(80, 24)) as pilot:
        assert isinstance(app.screen, ReviewScreen)
        assert app.screen.card is not None
        assert not any(isinstance(s, HomeScreen) for s in app.screen_stack)
        await pilot.press("space", "3")  # a rating works as usual
        assert app.screen.session.done
        await pilot.press("escape")
        assert isinstance(app.screen, HomeScreen)
        home = app.screen
        assert len(app.screen_stack) == 2  # the bottom screen and home, nothing left over
        await pilot.press("enter")
        assert isinstance(app.screen, ReviewScreen)
        await pilot.press("escape")
        assert app.screen is home


@async_test
async def test_quiz_with_nothing_due_shows_the_summary_and_esc_goes_home() -> None:
    app = make_app(review_first=True, new=0)
    async with app.run_test(size=(80, 24)) as pilot:
        from prep.tui.screens.summary import SummaryScreen

        assert isinstance(app.screen, SummaryScreen)
        await pilot.press("escape")
        assert isinstance(app.screen, HomeScreen)


@async_test
async def test_reload_after_quiz_goes_home() -> None:
    app = make_app(review_first=True)
    async with app.run_test(size=(80, 24)) as pilot:
        assert isinstance(app.screen, ReviewScreen)
        app.action_reload()
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        assert len(app.screen_stack) == 2


@pytest.mark.parametrize("argv", [[], ["quiz"]])
def test_prep_and_prep_quiz_open_on_the_first_card(monkeypatch, tmp_path, argv):
    """DESIGN: `prep` is the same as `prep quiz`; both open the app on the first card."""
    from click.testing import CliRunner

    import prep.tui.app
    import prep.tui.cli
    import prep.tui.commands.common

    seen = {}

    def fake_run(**kwargs):
        seen.update(kwargs)
        return 0

    monkeypatch.setattr(prep.tui.app, "run", fake_run)
    monkeypatch.setattr(prep.tui.commands.common, "line_mode_reason", lambda: None)
    result = CliRunner().invoke(prep.tui.cli.main, ["--db", str(tmp_path / "p.db"), *argv])
    assert result.exit_code == 0, result.output
    assert seen["review_first"] is True


@async_test
async def test_study_more_works_under_a_new_override() -> None:
    """`prep --new 0`: the summary says the override holds the unseen cards back, and study
    more's "10 more new cards" serves them in this run too (it used to do nothing)."""
    from prep.tui.screens.study_more import StudyMore
    from prep.tui.screens.summary import SummaryScreen
    from tests.test_tui import text_of

    app = make_app(review_first=True, new=0)
    async with app.run_test(size=(80, 24)) as pilot:
        assert isinstance(app.screen, SummaryScreen)
        assert "--new 0 is in force for this run; 5 unseen cards wait." in text_of(app, "#summary")
        await pilot.press("n")
        assert isinstance(app.screen, StudyMore)
        await pilot.press("1")
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)
        assert app.screen.session.counts()[0] == 5
        assert app.new_limit == 10


@async_test
async def test_help_lists_its_own_keys_and_q_quits_from_it() -> None:
    from prep.tui.screens.help import HelpScreen
    from tests.test_tui import footer_keys

    app = make_app(review_first=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.pause()
        assert footer_keys(app) == ["escape", "q"]  # not the keys of the screen below
        await pilot.press("q")
        await pilot.pause()
    assert not app.is_running


@async_test
async def test_the_summary_names_the_session_limit_and_offers_undo_only_after_a_rating() -> None:
    from prep.tui.screens.summary import SummaryScreen
    from tests.test_tui import footer_keys, text_of

    app = make_app(review_first=True, limit=1)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("space", "4")  # Easy: days away, not back within this session
        await pilot.pause()
        assert isinstance(app.screen, SummaryScreen)
        summary = text_of(app, "#summary")
        assert "This session's limit is reached: 4 more cards of today's queue wait" in summary
        assert "u: undo" in summary and "u" in footer_keys(app)

    app = make_app(review_first=True, new=0)  # nothing studied: nothing to undo
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, SummaryScreen)
        assert "u: undo" not in text_of(app, "#summary")
        assert "u" not in footer_keys(app)
        assert "limit is reached" not in text_of(app, "#summary")


@async_test
async def test_stats_on_a_new_database_says_there_is_no_retention_yet() -> None:
    from prep.tui.screens.stats import StatsScreen
    from tests.test_tui import text_of

    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, StatsScreen)
        summary = text_of(app, "#stats-summary")
        assert "true retention: no reviews of learned cards yet" in summary
        assert "true —" not in summary


@async_test
async def test_quiz_goes_home_when_the_first_session_cannot_be_built() -> None:
    """A store error while building the first session: home (with the error said), not a
    bare screen with no keys."""
    from prep.engine.store import StoreError

    app = make_app(review_first=True)

    def locked(deck):
        raise StoreError("database is locked")

    app.new_session = locked
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        assert len(app.screen_stack) == 2
