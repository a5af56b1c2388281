"""Every screen counts the same things by the same names (user14, from tui14's note: `prep stats`
said "Due now 1" for a learning step where home said "0 due, 1 learning").

Over a few states of progress (nothing studied; a learning step a few minutes off; reviews
due; reviews capped by the daily review limit; a lapse relearning among reviews), each number
a screen names "new", "learning" or "due" is home's number of that name: home's line and
table source (deck_counts), the session bar (the app's and --plain's), `prep stats` and the
app's stats screen. The interview line reads the same in stats as on home.
"""

from __future__ import annotations

import asyncio
import io
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from prep.engine.decks.deckcache import load_collection
from prep.engine.store import Store
from prep.engine.study import stats as stats_mod
from prep.engine.study.queue import deck_counts
from prep.engine.study.scheduler import Rating, Scheduler
from prep.engine.study.session import ReviewSession
from prep.tui.plain import run_plain
from prep.tui.reports import stats_text
from tests.conftest import Clock

T0 = datetime(2026, 3, 3, 9, 20, tzinfo=UTC)  # a Tuesday, mid study day (local time is UTC)

NAMES = {
    # a number said before or after its name; "20 new a day" (a limit) is not a count of cards
    "new": r"\bnew\s+(\d+)\b|\b(\d+)\s+new\b(?! a day| today)",
    "learning": r"\blearning\s+(\d+)\b|\b(\d+)\s+learning\b",
    "due": r"\bdue\s+(?:now\s+)?(\d+)\b|\b(\d+)\s+due\b",
}


def named_counts(text: str) -> dict[str, set[int]]:
    """Every number each of the three names is given in ``text``."""
    out: dict[str, set[int]] = {}
    for name, pattern in NAMES.items():
        found = re.findall(pattern, text, flags=re.IGNORECASE)
        out[name] = {int(a or b) for a, b in found}
    return out


def rate(store: Store, coll, at: datetime, ratings: list[Rating]) -> None:
    session = ReviewSession(store, coll, clock=Clock(at), scheduler=Scheduler(store.settings()))
    for rating in ratings:
        if session.current is None:
            break
        session.rate(rating, duration_ms=1000)


def build(state: str, db_path: Path, small_deck_dir: Path) -> tuple[Store, object, datetime]:
    coll = load_collection([small_deck_dir], include_bundled=False)
    store = Store.open(db_path)
    if state == "nothing studied":
        return store, coll, T0
    if state == "a learning step minutes off":
        rate(store, coll, T0, [Rating.Good])  # its 10-minute step: due at 09:30
        return store, coll, T0 + timedelta(minutes=2)
    rate(store, coll, T0, [Rating.Good] * 20)  # every card learned: reviews two days on
    later = T0 + timedelta(days=3)
    if state == "all studied, none due yet":  # the next day: all four come tomorrow
        return store, coll, T0 + timedelta(days=1)
    if state == "reviews capped by the limit":
        store.save_settings(replace(store.settings(), review_limit=2))
    if state == "a lapse among reviews":
        rate(store, coll, later, [Rating.Again])
        later += timedelta(minutes=1)
    return store, coll, later


STATES = [
    "nothing studied",
    "all studied, none due yet",
    "a learning step minutes off",
    "reviews due",
    "reviews capped by the limit",
    "a lapse among reviews",
]


EXPECTED = {  # home's (new, learning, due) in each state
    "nothing studied": (4, 0, 0),
    "all studied, none due yet": (0, 0, 0),
    "a learning step minutes off": (3, 1, 0),
    "reviews due": (0, 0, 4),
    "reviews capped by the limit": (0, 0, 2),
    "a lapse among reviews": (0, 1, 3),
}


async def app_texts(store: Store, coll, now: datetime) -> dict[str, str]:
    """Home's line and keys, the stats screen's summary and the review bar, as the app shows."""
    from prep.tui.app import PrepApp
    from prep.tui.screens.home import HomeScreen
    from prep.tui.screens.review import ReviewScreen
    from prep.tui.screens.stats import StatsScreen
    from prep.tui.screens.summary import SummaryScreen
    from tests.pilot import at_home, text_of, wait_until

    out = {}
    app = PrepApp(store=store, collection=coll, demos={}, clock=lambda: now)
    async with app.run_test(size=(100, 40)) as pilot:
        await at_home(pilot, app)
        out["home"] = text_of(app, "#today") + "\n" + text_of(app, "#howto")
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(app.screen, StatsScreen))
        await pilot.pause()
        out["stats screen"] = text_of(app, "#stats-summary")
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, HomeScreen))
        await pilot.press("enter")
        await pilot.pause()
        if isinstance(app.screen, ReviewScreen):
            out["review bar"] = app.screen.progress_text().plain
        if isinstance(app.screen, SummaryScreen):  # (nothing to review: the end of session)
            out["summary"] = app.screen.summary_text().plain
    return out


@pytest.mark.parametrize("state", STATES)
def test_every_screen_names_home_s_numbers(
    utc_local_time, db_path: Path, small_deck_dir: Path, state: str
) -> None:
    store, coll, now = build(state, db_path, small_deck_dir)
    row = deck_counts(store, coll, now)[0]
    assert (row.new, row.learning, row.due) == EXPECTED[state]  # (the states are what they say)
    want = {"new": {row.new}, "learning": {row.learning}, "due": {row.due}}
    texts = {"prep stats": stats_text(stats_mod.compute(store, coll, now))}
    plain = io.StringIO()
    session = ReviewSession(store, coll, clock=Clock(now))
    run_plain(session, io.StringIO("q\n"), plain)
    texts["--plain"] = plain.getvalue()
    texts.update(asyncio.run(app_texts(store, coll, now)))
    if row.total:  # (with nothing to review no session opens: no bar, the summary instead)
        assert "review bar" in texts
    else:
        assert "summary" in texts and "4 coming up by the end of tomorrow" in texts["summary"]
    for where, text in texts.items():
        got = named_counts(text)
        for name, numbers in got.items():
            assert numbers <= want[name], f"{state}: {where} says {name} {numbers}:\n{text}"
        # each screen says all three (the stats screen and `prep stats` too); with nothing to
        # review home, the summary and --plain say so instead
        if row.total or where in ("prep stats", "stats screen"):
            assert all(got.values()), f"{state}: {where} leaves a count out:\n{text}"
    store.close()


def test_the_interview_line_reads_the_same_in_stats_as_on_home(
    utc_local_time, db_path: Path, small_deck_dir: Path
) -> None:
    from prep.engine.study.plan import plan_day
    from prep.tui.plain import today_lines

    store, coll, now = build("a learning step minutes off", db_path, small_deck_dir)
    for days in (4, 400):  # this year, and one in another year (its year said)
        friday = (now + timedelta(days=days)).date().isoformat()
        store.save_settings(replace(store.settings(), interview_date=friday))
        day = plan_day(store, coll, now)
        assert day is not None
        text = stats_text(stats_mod.compute(store, coll, now))
        assert day.heading() in text.splitlines()
        assert today_lines(store, coll, now, None, None)[0] == day.heading()
    store.close()
