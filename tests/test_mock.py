"""`prep mock`: the main question and its follow-up chain, timers, self-grades that feed the
normal schedule; the --plain form and the TUI screen."""

from __future__ import annotations

import asyncio
import io
import random
from pathlib import Path

import pytest
from click.testing import CliRunner
from textual.app import App
from textual.widgets import Input, Static

from prep.engine.decks.collection import CachedCollection
from prep.engine.decks.deckcache import load_collection
from prep.engine.store import Store
from prep.engine.study.mock import MockError, MockInterview, follow_up_chain, pick_main
from prep.engine.study.present import clock_text
from prep.engine.study.scheduler import CardState, Rating, Scheduler
from prep.tui.cli import main
from prep.tui.plain import run_mock_plain
from prep.tui.screens.mock import MockScreen

INTERVIEW = """\
deck: interview
title: Interview chains
cards:
  - id: why-wo
    kind: recall
    prompt: Why does multi-head attention need W_O?
    answer: To mix the heads and map back to d_model.
    explain: Concat alone keeps heads in separate slices.
    bullets: [mixes heads, maps back]
  - id: why-wo-identity
    kind: follow-up
    parent: why-wo
    prompt: What if W_O were the identity?
    answer: No mixing; each head writes only its own slice.
  - id: why-wo-identity-deeper
    kind: follow-up
    parent: why-wo-identity
    prompt: Could a later layer make up for it?
    answer: Partly; the next layer's Q/K/V read all slices.
  - id: why-wo-rank
    kind: follow-up
    parent: why-wo
    prompt: What is the rank of one head's OV circuit?
    answer: At most d_head.
  - id: other-main
    kind: recall
    prompt: What does the softmax do?
    answer: Normalises scores per query.
  - id: other-follow
    kind: follow-up
    parent: other-main
    prompt: Why scale by sqrt(d_head)?
    answer: To keep the logits' variance near one.
  - id: lonely
    kind: recall
    prompt: No follow-ups here.
    answer: Never a main question.
"""


class FakeTimer:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def coll(tmp_path: Path) -> CachedCollection:
    folder = tmp_path / "interview"
    folder.mkdir()
    (folder / "interview.yaml").write_text(INTERVIEW, encoding="utf-8")
    c = load_collection([folder], include_bundled=False)
    assert not c.errors, c.errors
    return c


def make_mock(store: Store, coll: CachedCollection, clock, timer=None, **kwargs) -> MockInterview:
    return MockInterview(
        store,
        coll,
        scheduler=Scheduler(store.settings(), enable_fuzzing=False),
        clock=clock,
        timer=timer or FakeTimer(),
        **kwargs,
    )


# --- picking the chain --------------------------------------------------------------------------


def test_chain_is_depth_first(coll: CachedCollection) -> None:
    chain = follow_up_chain(coll, "why-wo")
    assert [(c.id, d) for c, d in chain] == [
        ("why-wo", 0),
        ("why-wo-identity", 1),
        ("why-wo-identity-deeper", 2),
        ("why-wo-rank", 1),
    ]


def test_pick_prefers_due_and_least_known_and_is_seeded(
    fresh_store: Store, coll: CachedCollection, clock
) -> None:
    sched = Scheduler(fresh_store.settings(), enable_fuzzing=False)
    picks = {pick_main(fresh_store, coll, sched, clock(), random.Random(s)).id for s in range(20)}
    assert picks == {"why-wo", "other-main"}  # both new; never the card without follow-ups
    assert (
        pick_main(fresh_store, coll, sched, clock(), random.Random(7)).id
        == pick_main(fresh_store, coll, sched, clock(), random.Random(7)).id
    )
    # why-wo known well and not due: other-main (new) is picked every time
    state = CardState(id="why-wo", deck="interview")
    for rating in (Rating.Easy, Rating.Easy):
        state = sched.review(state, rating, clock()).state
    fresh_store.record_review(None, state, Rating.Easy, clock())
    assert state.due > clock()
    for seed in range(10):
        assert pick_main(fresh_store, coll, sched, clock(), random.Random(seed)).id == "other-main"


def test_no_chain_or_unknown_deck_is_a_clear_error(
    fresh_store: Store, small_collection: CachedCollection, clock
) -> None:
    with pytest.raises(MockError, match=r"no deck named 'nope' \(decks: small\)"):
        make_mock(fresh_store, small_collection, clock, deck="nope")
    lonely = load_collection([], include_bundled=False)
    with pytest.raises(MockError, match="no card in the decks has follow-up questions"):
        make_mock(fresh_store, lonely, clock)
    with pytest.raises(MockError, match="--minutes must be more than 0"):
        make_mock(fresh_store, small_collection, clock, minutes=0)
    # infinite (or so large that seconds overflow): the clock text was an OverflowError
    for minutes in (float("inf"), 1e308, 99999999, 24 * 60 + 1):
        with pytest.raises(MockError, match="--minutes"):
            make_mock(fresh_store, small_collection, clock, minutes=minutes)


# --- running it ---------------------------------------------------------------------------------


def test_timers_budgets_and_grades_feed_the_schedule(
    fresh_store: Store, coll: CachedCollection, clock
) -> None:
    timer = FakeTimer()
    mock = make_mock(fresh_store, coll, clock, timer, minutes=5, main_id="why-wo")
    assert [round(s.budget_s) for s in mock.steps] == [120, 60, 60, 60]  # main counts double
    assert mock.label() == "Main question"
    mock.start()
    timer.t += 72
    assert mock.timer_text() == "1:12 / 2:00"
    assert mock.reveal("It mixes heads.") == 72
    timer.t += 30  # the clock stops at reveal
    assert mock.elapsed() == 72
    expected = Scheduler(fresh_store.settings(), enable_fuzzing=False).review(
        CardState(id="why-wo", deck="interview", content_hash=coll.get("why-wo").content_hash),
        Rating.Good,
        clock(),
    )
    outcome = mock.grade(Rating.Good)
    assert outcome.interval == expected.interval
    stored = fresh_store.card("why-wo")
    assert stored.stability == expected.state.stability and stored.due == expected.state.due
    review = fresh_store.last_review()
    assert (review.card_id, review.rating, review.duration_ms) == ("why-wo", 3, 72_000)

    assert mock.label() == "Follow-up to: Why does multi-head attention need W_O?"
    for rating, seconds in ((Rating.Again, 90), (Rating.Hard, 10), (Rating.Easy, 5)):
        timer.t += seconds
        mock.reveal()
        mock.grade(rating)
    assert mock.finished
    # each question asked once, even though Again/Good left learning steps due soon
    assert [r.card_id for r in fresh_store.reviews()] == [s.card.id for s in mock.steps]
    summary = mock.summary()
    assert summary["graded"] == 4 and summary["over_budget"] == 1
    assert summary["ratings"] == {"Again": 1, "Hard": 1, "Good": 1, "Easy": 1}
    assert summary["seconds"] == 72 + 90 + 10 + 5


def test_grade_before_reveal_is_refused(fresh_store: Store, coll: CachedCollection, clock) -> None:
    mock = make_mock(fresh_store, coll, clock, main_id="other-main")
    with pytest.raises(RuntimeError, match="reveal the answer first"):
        mock.grade(3)
    assert fresh_store.count_reviews() == 0


def test_clock_text() -> None:
    assert clock_text(0) == "0:00" and clock_text(72.9) == "1:12" and clock_text(3725) == "1:02:05"


def test_plain_mock(fresh_store: Store, coll: CachedCollection, clock) -> None:
    timer = FakeTimer()

    class Stdin(io.StringIO):
        def readline(self, *args) -> str:
            timer.t += 40  # every answer takes 40 seconds
            return super().readline(*args)

    mock = make_mock(fresh_store, coll, clock, timer, minutes=2, main_id="other-main")
    out = io.StringIO()
    run_mock_plain(mock, Stdin("it normalises\n3\n\nx\n2\n"), out)
    text = out.getvalue()
    assert "Mock interview: 1 main question and 1 follow-up, 2:00 in all." in text
    assert "[1/2] Main question  ·  budget 1:20, the clock is running" in text
    assert "You took 0:40 of 1:20." in text
    assert "Your answer: it normalises" in text
    assert "Answer: Normalises scores per query." in text
    assert "[2/2] Follow-up to: What does the softmax do?" in text
    assert "You took 0:40 of 0:40." in text
    assert "Type 1 (Again), 2 (Hard), 3 (Good), 4 (Easy) or q." in text  # the stray "x"
    assert "Mock over: 2 of 2 questions graded" in text
    assert [(r.card_id, r.rating) for r in fresh_store.reviews()] == [
        ("other-main", 3),
        ("other-follow", 2),
    ]


def test_plain_mock_quit_keeps_what_was_graded(
    fresh_store: Store, coll: CachedCollection, clock
) -> None:
    mock = make_mock(fresh_store, coll, clock, main_id="why-wo")
    out = io.StringIO()
    run_mock_plain(mock, io.StringIO("\n4\n\nq\n"), out)
    assert "Mock over: 1 of 4 questions graded" in out.getvalue()
    assert [r.card_id for r in fresh_store.reviews()] == ["why-wo"]


def test_cli_plain(tmp_path: Path) -> None:
    folder = tmp_path / "decks"
    folder.mkdir()
    (folder / "interview.yaml").write_text(INTERVIEW, encoding="utf-8")
    db = tmp_path / "p.db"
    base = ["--db", str(db), "--questions", str(folder), "mock", "--deck", "interview"]
    result = CliRunner().invoke(main, [*base, "--plain", "--seed", "1"], input="\n3\n" * 6)
    assert result.exit_code == 0, result.output
    assert "Mock over:" in result.output and "graded" in result.output
    with Store.open(db) as store:
        assert store.count_reviews() >= 2
    # not a terminal: plain even without --plain
    result = CliRunner().invoke(main, [*base, "--minutes", "3"], input="q\n")
    assert result.exit_code == 0 and "3:00 in all" in result.output
    result = CliRunner().invoke(main, [*base[:-2], "--deck", "nope", "--plain"])
    assert result.exit_code == 2 and result.stderr.startswith("prep: no deck named 'nope'")
    result = CliRunner().invoke(main, [*base, "--minutes", "0"])
    assert result.exit_code == 2
    result = CliRunner().invoke(main, [*base, "--minutes", "inf", "--plain"], input="q\n")
    assert result.exit_code == 2 and result.stderr.startswith("prep: --minutes")
    result = CliRunner().invoke(main, [*base, "--minutes", "99999999", "--plain"], input="q\n")
    assert result.exit_code == 2 and result.stderr.startswith("prep: --minutes must be at most")
    assert result.stderr.count("\n") == 1
    result = CliRunner().invoke(main, ["mock", "--help"])
    assert result.exit_code == 0 and "--minutes" in result.output and "--plain" in result.output


# --- the TUI screen -----------------------------------------------------------------------------


class Host(App):
    def __init__(self, screen: MockScreen) -> None:
        super().__init__()
        self._screen = screen
        self.result = "open"

    def on_mount(self) -> None:
        self.push_screen(self._screen, callback=lambda r: setattr(self, "result", r))


def text_of(screen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


def test_screen_runs_a_whole_mock(fresh_store: Store, coll: CachedCollection, clock) -> None:
    timer = FakeTimer()
    mock = make_mock(fresh_store, coll, clock, timer, minutes=2, main_id="other-main")

    async def run() -> None:
        app = Host(MockScreen(mock=mock))
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            screen = app.screen
            assert "[1/2] Main question" in text_of(screen, "#mock-label")
            assert "What does the softmax do?" in text_of(screen, "#mock-prompt")
            timer.t += 95  # over the 1:20 budget
            screen.tick()
            assert text_of(screen, "#mock-timer") == "1:35 / 1:20"
            assert screen.query_one("#mock-timer").has_class("over")
            await pilot.press("3")  # typed into the answer box before reveal: not a grade
            assert fresh_store.count_reviews() == 0
            assert screen.query_one("#mock-answer", Input).value == "3"
            await pilot.press("backspace", *"per query", "enter")
            await pilot.pause()
            reveal = text_of(screen, "#mock-reveal")
            assert "You took 1:35 of 1:20, 0:15 over." in reveal
            assert "Your answer: per query" in reveal and "Normalises scores per query." in reveal
            grades = text_of(screen, "#mock-grades")
            assert "1 Again" in grades and "3 Good" in grades
            await pilot.press("2")
            await pilot.pause()
            assert [(r.card_id, r.rating) for r in fresh_store.reviews()] == [("other-main", 2)]
            assert "Follow-up to: What does the softmax do?" in text_of(screen, "#mock-label")
            assert text_of(screen, "#mock-timer") == "0:00 / 0:40"
            await pilot.press("enter")  # reveal with nothing typed (answered aloud)
            await pilot.press("4")
            await pilot.pause()
            assert "done" in text_of(screen, "#mock-label")
            assert "Mock over: 2 of 2" in text_of(screen, "#mock-prompt")
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.result, dict) and app.result["graded"] == 2
        assert [r.rating for r in fresh_store.reviews()] == [2, 4]

    asyncio.run(run())


def test_screen_inside_the_prep_app(tmp_path: Path) -> None:
    from prep.tui.testing import make_app

    async def run() -> None:
        store = Store.memory()
        app = make_app(store=store)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            app.action_mock()
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, MockScreen)
            assert "Main question" in text_of(screen, "#mock-label")
            await pilot.press("enter")
            await pilot.pause()
            await pilot.press("3")
            await pilot.pause()
            assert store.count_reviews() == 1
            assert store.last_review().reviewed_at == app.now()  # the app's clock
            await pilot.press("escape")  # nothing typed: out of the mock at once
            await pilot.pause()
            assert not isinstance(app.screen, MockScreen)

    asyncio.run(run())


def test_screen_without_a_chain_says_why(small_deck_dir: Path) -> None:
    lonely = load_collection([], include_bundled=False)

    async def run() -> None:
        app = Host(MockScreen(lonely, Store.memory()))
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            assert "no card in the decks has follow-up questions" in text_of(
                app.screen, "#mock-prompt"
            )
            await pilot.press("escape")
            await pilot.pause()
            assert app.result is None

    asyncio.run(run())


def test_bindings_have_descriptions() -> None:
    keys = {b.key: b.description for b in MockScreen.BINDINGS}
    assert keys["escape"] == "Back"
    assert [keys[k] for k in "1234"] == ["Again", "Hard", "Good", "Easy"]
    assert all(keys.values())


def test_q_quits_and_esc_goes_home_when_prep_mock_opened_on_the_mock() -> None:
    """`prep mock` opens the app on the mock over home; q types in the answer box, and
    quits once Esc has left the box (what was typed stays)."""
    from textual.widgets import Input

    from prep.engine.study.mock import MockInterview
    from prep.tui.app import PrepApp
    from prep.tui.testing import NOW, fixed_collection

    seen: dict[str, object] = {}

    async def run(keys: tuple[str, ...]) -> PrepApp:
        store, coll = Store.memory(), fixed_collection()
        mock = MockInterview(store, coll, main_id="two-roles", clock=lambda: NOW)
        app = PrepApp(store=store, collection=coll, mock_first=mock, demos={}, clock=lambda: NOW)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            assert isinstance(app.screen, MockScreen)
            for key in keys:
                await pilot.press(key)
                await pilot.pause()
            seen["screen"] = app.screen
            seen["typed"] = app.screen.query_one("#mock-answer", Input).value
            seen["exiting"] = app._exit
        return app

    asyncio.run(run(("q",)))  # in the answer box: q is a letter of the answer
    assert isinstance(seen["screen"], MockScreen) and seen["typed"] == "q"
    assert not seen["exiting"]
    asyncio.run(run(("x", "escape", "q")))  # out of the box (x kept): q quits prep
    assert seen["exiting"]


def test_esc_from_prep_mock_goes_home_not_out_of_prep() -> None:
    from prep.engine.study.mock import MockInterview
    from prep.tui.app import PrepApp
    from prep.tui.screens.home import HomeScreen
    from prep.tui.testing import NOW, fixed_collection

    async def run() -> None:
        store, coll = Store.memory(), fixed_collection()
        mock = MockInterview(store, coll, main_id="two-roles", clock=lambda: NOW)
        app = PrepApp(store=store, collection=coll, mock_first=mock, demos={}, clock=lambda: NOW)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.screen, HomeScreen) and not app._exit

    asyncio.run(run())
