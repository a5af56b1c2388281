"""The mock interview's keys never act on a question the learner has not seen: a key read while
a grade was saving (the app blocked in the commit: another prep writing, a slow disk) reached the
next question once it was shown, so Enter revealed it with its clock at 0:00 and a grade key
graded it unseen. A key that acts on the question applies only if that question was on screen
when it was pressed (Textual stamps each key with its read time), as on the review screen
(tui/screens/held_keys.py)."""

from __future__ import annotations

import asyncio

from textual import events
from textual.widgets import Input

from prep.engine.decks.collection import CachedCollection
from prep.engine.store import Store
from prep.tui.screens.mock import MockScreen
from tests.pilot import record_notes
from tests.test_mock import FakeTimer, Host, coll, make_mock

__all__ = ["coll"]  # (the fixture, from test_mock)


def graded(store: Store) -> list[tuple[str, int]]:
    return [(r.card_id, r.rating) for r in store.reviews()]


def keys_while_saving(screen: MockScreen, *keys: str) -> None:
    """The session's rate, made to take the keys ``keys`` as the terminal would while the app
    is blocked in the commit: read (and stamped) now, handled once the commit returned."""
    assert screen.mock is not None
    session = screen.mock.session
    real = session.rate

    def rate(*args, **kwargs):
        for key in keys:
            character = key if len(key) == 1 else ("\r" if key == "enter" else None)
            screen.app.post_message(events.Key(key, character))
        session.rate = real  # type: ignore[method-assign]
        return real(*args, **kwargs)

    session.rate = rate  # type: ignore[method-assign]


def test_keys_pressed_while_a_grade_saves_never_reveal_or_grade_the_next_question(
    fresh_store: Store, coll: CachedCollection, clock
) -> None:
    mock = make_mock(fresh_store, coll, clock, FakeTimer(), minutes=2, main_id="other-main")

    async def run() -> None:
        app = Host(MockScreen(mock=mock))
        posted = record_notes(app)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, MockScreen)
            await pilot.press("enter")  # reveal the main question (answered aloud)
            assert screen.revealed
            keys_while_saving(screen, "enter", "4")  # "did it take?": Enter, then a grade
            await pilot.press("2")
            await pilot.pause()
            await pilot.pause()
            assert graded(fresh_store) == [("other-main", 2)]  # the follow-up: never graded
            assert mock.index == 1 and not screen.revealed  # shown, not revealed unseen
            assert screen.query_one("#mock-answer", Input).has_focus
            notes = list(posted)
            assert any("not applied" in n and "enter" in n for n in notes), notes
            await pilot.press("enter", "3")  # pressed with the question on screen: they act
            await pilot.pause()
            assert graded(fresh_store) == [("other-main", 2), ("other-follow", 3)]

    asyncio.run(run())


def test_r_runs_the_questions_demo_once_the_answer_is_shown() -> None:
    """The mock's reveal said "Check it: prep demo NAME" with no key to run it (note 11): inside
    the app `r` runs it on the demo screen, as on a card, and the footer shows it; before the
    reveal r is a letter of the answer; Esc comes back to the revealed question."""
    from prep.engine.study.mock import MockInterview
    from prep.tui.screens.demo import DemoScreen
    from prep.tui.testing import NOW, fixed_collection, make_app
    from tests.test_mock import text_of
    from tests.test_tui import footer_keys

    async def run() -> None:
        store, coll = Store.memory(), fixed_collection()
        mock = MockInterview(store, coll, main_id="two-roles", clock=lambda: NOW)
        app = make_app(store=store, collection=coll, mock_first=mock)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, MockScreen)
            assert "r" not in footer_keys(app)
            await pilot.press("r")  # typed: a letter of the answer
            await pilot.pause()
            assert screen.query_one("#mock-answer", Input).value == "r"
            await pilot.press("enter")
            await pilot.pause()
            reveal = text_of(screen, "#mock-reveal")
            assert "run the demo block-diagonal" in reveal and "prep demo" not in reveal
            assert "r" in footer_keys(app)
            await pilot.press("r")
            await pilot.pause()
            assert isinstance(app.screen, DemoScreen)
            assert app.screen.demo_name == "block-diagonal"
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen is screen and screen.revealed
            assert "run the demo block-diagonal" in text_of(screen, "#mock-reveal")
            await pilot.press("3")
            await pilot.pause()
            assert graded(store) == [("two-roles", 3)]

    asyncio.run(run())


def test_outside_the_app_the_mock_names_the_command() -> None:
    """A mock screen in a bare host app (no demo worker) keeps the command to type."""
    from prep.tui.testing import NOW, fixed_collection
    from tests.test_mock import Host, text_of

    async def run() -> None:
        store, coll = Store.memory(), fixed_collection()
        from prep.engine.study.mock import MockInterview

        mock = MockInterview(store, coll, main_id="two-roles", clock=lambda: NOW)
        app = Host(MockScreen(mock=mock))
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            await pilot.press("enter")
            await pilot.pause()
            assert "Check it: prep demo block-diagonal" in text_of(app.screen, "#mock-reveal")
            assert not app.screen.check_action("demo", ())

    asyncio.run(run())
