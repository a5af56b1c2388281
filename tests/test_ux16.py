"""Round 16 (ux16): what ux15 left open across the 4 am rollover — study more's dialog, the
mock screen — and what a user pass over several days met."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from prep.engine.study.queue import review_ahead_ids
from tests.test_ux15 import _app, _setup


def test_study_more_left_open_across_the_rollover_counts_and_serves_the_new_day(
    new_york_local_time, tmp_path: Path
) -> None:
    """Study more opened at 03:50 lists the card that comes due at 4 am under "review ahead";
    left open past 04:00 (no key pressed), its count is the new day's list, and "2" serves
    that list: the card due today is today's session's, not review ahead's. Before: the
    dialog kept yesterday's count, and "2" served yesterday's list."""
    from prep.tui.screens.home import HomeScreen
    from prep.tui.screens.review import ReviewScreen
    from prep.tui.screens.study_more import AHEAD_DAYS, StudyMore
    from tests.pilot import text_of, wait_until

    store, coll, clock, rollover = _setup(tmp_path)
    before = review_ahead_ids(store, coll, clock.now, AHEAD_DAYS)
    after = review_ahead_ids(store, coll, rollover + timedelta(minutes=1), AHEAD_DAYS)
    # (the premise: one card of the evening's list is due today after the rollover, one not)
    assert after and len(after) < len(before), (before, after)

    def said(n: int) -> str:
        return f"Review ahead: cards due in the next {AHEAD_DAYS} days ({n})"

    async def run() -> None:
        app = _app(store, coll, clock)
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, HomeScreen))
            await pilot.press("n")
            await wait_until(pilot, lambda: isinstance(app.screen, StudyMore))
            await pilot.pause()
            assert said(len(before)) in text_of(app, "#more-text")
            clock.now = rollover + timedelta(minutes=1)
            await wait_until(pilot, lambda: said(len(after)) in text_of(app, "#more-text"), 5)
            await pilot.press("2")
            await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen))
            screen = app.screen
            assert isinstance(screen, ReviewScreen)
            assert list(screen.session.queue) == after

    with store:
        asyncio.run(run())
