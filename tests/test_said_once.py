"""Home, --plain and the stats screen with an interview date say the plan's new cards a day once
(tui14's note: the plan's line, the why line and the limit line each said "29 new a day", ~9
lines at 40 columns)."""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from datetime import timedelta

import pytest

from prep.engine.store import Store
from prep.engine.study.plan import plan_day
from prep.engine.study.present import limit_lines
from prep.engine.study.queue import build_queue, limits_today
from prep.engine.study.scheduler import Settings
from prep.tui.plain import today_lines
from prep.tui.screens.home import HomeScreen
from prep.tui.testing import NOW, fixed_collection, make_app
from tests.pilot import text_of, wait_until

pytestmark = pytest.mark.usefixtures("utc_local_time")


def planned(days: int, new_per_day: int = 1) -> tuple[Store, object]:
    store = Store.memory()
    interview = (NOW + timedelta(days=days)).date().isoformat()
    store.save_settings(replace(Settings(), new_per_day=new_per_day, interview_date=interview))
    return store, fixed_collection()


def new_a_day(text: str) -> list[str]:
    return re.findall(r"\d+ new a day", text)


@pytest.mark.parametrize("days", [3, 4])
def test_plain_says_the_plan_s_new_cards_a_day_once(days: int) -> None:
    store, coll = planned(days)
    day = plan_day(store, coll, NOW)
    assert day is not None and day.raised
    lines = today_lines(store, coll, NOW, None, None)
    assert len(new_a_day("\n".join(lines))) == 1, lines
    # the why line still says why, and the limit line still says what it holds back
    assert any("every card seen twice" in line for line in lines), lines


def test_the_day_before_the_why_line_does_not_repeat_the_cards_to_see() -> None:
    """The day before: "5 of 5 cards to see today, ..." then "5 new today, not 1": said once."""
    store, coll = planned(1)
    day = plan_day(store, coll, NOW)
    assert day is not None and day.raised and day.plan.days_left == 1
    lines = today_lines(store, coll, NOW, None, None)
    assert f"{day.per_day} of {day.cards} cards to see today" in lines[0]
    assert lines[1] == "More than new_per_day (1) today: every card seen once before Tuesday"


def test_the_limit_line_keeps_its_number_when_nothing_above_says_it() -> None:
    """Without the plan's line above (the summary; no interview), the limit is said in full."""
    store, coll = planned(4)
    queue = build_queue(store, coll, NOW)
    limits = limits_today(store, coll, NOW, queue, None)
    alone = limit_lines(limits)
    day = plan_day(store, coll, NOW)
    assert day is not None
    assert any(new_a_day(line) for line in alone), alone
    below = limit_lines(limits, day.line())
    assert not any(new_a_day(line) for line in below), below
    assert len(below) == len(alone)  # the same lines, the number said once


def test_home_at_40_columns_says_it_once() -> None:
    store, coll = planned(4)

    async def run() -> str:
        app = make_app(store=store, collection=coll)
        async with app.run_test(size=(40, 40)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, HomeScreen))
            await pilot.pause()
            return text_of(app, "#today") + "\n" + text_of(app, "#howto")

    text = asyncio.run(run())
    assert len(new_a_day(text)) == 1, text


def test_a_limit_is_not_taken_for_another_that_ends_in_its_digits() -> None:
    """ "9 new a day, 19 left today" is not said by a line saying "19 new a day, 19 left
    today": the limit line keeps its own number."""
    from types import SimpleNamespace

    limits = SimpleNamespace(
        new_per_day=19, new_done=0, new_extra=10, new_reached=False, new_capped=True,
        new_waiting=5, reviews_reached=False, review_limit=200,
    )  # fmt: skip
    said = "9 new a day + 10 today, 19 left today"
    assert said in limit_lines(limits)[0]
    shown = "116 of 116 cards to see in 3 days: 19 new a day + 10 today, 19 left today"
    assert said in limit_lines(limits, shown)[0]
