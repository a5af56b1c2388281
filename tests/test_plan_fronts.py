"""The interview plan where a learner meets it: `prep config interview_date`, `prep stats`, the
home screen's field and the stats screen."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from textual.widgets import Static

from prep.engine.store import Store
from prep.engine.study.plan import plan_day
from prep.engine.study.scheduler import Settings
from prep.engine.study.session import build_queue
from prep.tui.screens.home import HomeScreen
from prep.tui.screens.stats import StatsScreen
from prep.tui.testing import NOW, fixed_collection, make_app
from tests.test_cli import review_first_card, run_cli


def test_config_interview_date_sets_says_and_clears(db_path: Path, small_deck_dir: Path) -> None:
    review_first_card(small_deck_dir, db_path, "3")
    with Store.open(db_path) as store:
        before = store.dump()
    from datetime import date

    from prep.engine.study.plan import short_date

    day = date.today() + timedelta(days=40)  # (a year ahead at most: test_ux15.py)
    out = run_cli(
        "--questions", str(small_deck_dir), "config", "interview_date", day.isoformat(), db=db_path
    )
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0] == f"interview_date = {day}"
    assert lines[1].startswith(f"Interview: {short_date(day)}") and " cards to see in " in lines[1]
    assert f"interview_date = {day}" in run_cli("config", db=db_path).output
    cleared = run_cli("config", "interview_date", "none", db=db_path)
    assert cleared.exit_code == 0
    assert cleared.output.startswith("interview_date = none")
    assert "interview_date = none" in run_cli("config", db=db_path).output
    with Store.open(db_path) as store:
        assert store.settings().interview_date is None
        after = store.dump()
    assert after["cards"] == before["cards"] and after["reviews"] == before["reviews"]


@pytest.mark.parametrize("value", ["2026-02-30", "friday", "12/11/2026", "2026-1-5", "20261211"])
def test_a_bad_interview_date_is_one_line_exit_2(db_path: Path, value: str) -> None:
    out = run_cli("config", "interview_date", value, db=db_path)
    assert out.exit_code == 2
    assert out.output.strip().splitlines() == [
        f"prep: interview_date must be a date like 2026-12-11 (YYYY-MM-DD), got {value!r}"
    ]


@pytest.mark.parametrize("value", ["0001-01-01", "9999-12-31"])
def test_an_interview_date_out_of_range_is_one_line_exit_2(db_path: Path, value: str) -> None:
    assert run_cli("config", "new_per_day", "20", db=db_path).exit_code == 0  # (a database)
    out = run_cli("config", "interview_date", value, db=db_path)
    assert out.exit_code == 2
    assert out.output.strip().splitlines() == [
        f"prep: interview_date must be in the years 1900 to 9998, got {value!r}"
    ]
    assert run_cli("stats", db=db_path).exit_code == 0


def test_plan_decks_and_level_are_checked(db_path: Path, small_deck_dir: Path) -> None:
    q = ["--questions", str(small_deck_dir)]
    bad = run_cli(*q, "config", "plan_decks", "small,nope", db=db_path)
    assert bad.exit_code == 2 and "no deck named 'nope'" in bad.output
    assert run_cli(*q, "config", "plan_decks", "small", db=db_path).output == "plan_decks = small\n"
    assert run_cli(*q, "config", "plan_decks", "all", db=db_path).output == "plan_decks = all\n"
    bad = run_cli("config", "plan_level", "expert", db=db_path)
    assert bad.exit_code == 2 and "plan_level must be one of basics, core, advanced" in bad.output


def test_stats_shows_recall_on_the_day_per_deck_and_tag(
    db_path: Path, small_deck_dir: Path
) -> None:
    review_first_card(small_deck_dir, db_path, "3")
    q = ["--questions", str(small_deck_dir)]
    assert "Predicted recall" not in run_cli(*q, "stats", db=db_path).output
    with Store.open(db_path) as store:  # (stored: `prep config` takes a year ahead at most)
        store.update_settings(interview_date="2099-01-02")
    data = json.loads(run_cli(*q, "stats", "--json", db=db_path).output)["interview"]
    assert data["date"] == "2099-01-02" and data["target"] == 0.9
    assert "small" in data["decks"] and "wo-core" in data["decks"]
    small = data["decks"]["small"]
    assert small["cards"] == 4 and small["seen"] == 1
    # a card reviewed now has decayed to almost nothing by 2099: FSRS's curve, not a constant
    assert 0 < small["recall"] < 0.25 and small["below_target"] == 4
    assert set(data["tags"]) >= {"roles"}
    text = run_cli(*q, "stats", db=db_path).output
    assert "Predicted recall on the day (FSRS's forgetting curve" in text
    assert any(
        line.startswith("small ") and line.split()[1:3] == ["4", "1"] for line in text.splitlines()
    )
    assert "Tag (weakest first)" in text


def _async(fn):
    def run(*args, **kwargs):
        asyncio.run(fn(*args, **kwargs))

    run.__name__ = fn.__name__
    return run


@pytest.mark.usefixtures("utc_local_time")
@_async
async def test_home_and_stats_screens_show_the_plan() -> None:
    store = Store.memory()
    friday = (NOW + timedelta(days=4)).date().isoformat()  # NOW is a Monday
    store.save_settings(replace(Settings(), new_per_day=1, interview_date=friday))
    collection = fixed_collection()
    day = plan_day(store, collection, NOW)
    assert day is not None and day.raised
    app = make_app(store=store, collection=collection)
    async with app.run_test(size=(110, 30)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        today = str(app.screen.query_one("#today", Static).content)
        n = len(collection)
        per_day = -(-n // 3)
        assert (
            f"Interview: Fri 14 Mar, 4 days · {n} of {n} cards to see in 3 days: {per_day} new a "
            f"day, {per_day} left today"
        ) in today
        assert "2 reviews each before Friday" in today
        assert "More than new_per_day (1) a day: every card seen twice" in today
        assert today.count(f"{per_day} new a day") == 1  # said once (user14)
        # the All decks row serves the plan's new cards, not the setting's one
        assert len(build_queue(store, collection, NOW).new) == per_day
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, StatsScreen)
        shown = app.screen.query_one("#stats-interview", Static)
        assert shown.display
        assert "Predicted recall on the day" in str(shown.content)
    # without a date the field is not there
    store.save_settings(replace(store.settings(), interview_date=None))
    app = make_app(store=store, collection=collection)
    async with app.run_test(size=(110, 30)) as pilot:
        await pilot.pause()
        assert "Interview" not in str(app.screen.query_one("#today", Static).content)


def test_prep_cram_is_weakest_first_the_day_before(db_path: Path, small_deck_dir: Path) -> None:
    from prep.engine.study.plan import study_date
    from prep.engine.timeutil import utcnow

    q = ["--questions", str(small_deck_dir)]
    assert run_cli(*q, "cram", "--deck", "small", db=db_path).output.startswith("== A small")
    tomorrow = (study_date(utcnow()) + timedelta(days=1)).isoformat()
    assert run_cli("config", "interview_date", tomorrow, db=db_path).exit_code == 0
    out = run_cli(*q, "cram", "--deck", "small", db=db_path).output
    assert out.startswith("== Weakest first: predicted recall at the interview")
    assert "[0% on the day] Name two roles of W_O" in out  # never studied: nothing to recall


@pytest.mark.usefixtures("utc_local_time")
def test_plain_says_the_limit_and_the_plan_as_home_and_config_do(db_path: Path) -> None:
    """note13: home and config said "28 new a day" beside the session's "new 26" (2 studied
    today), and --plain said neither. Each says the limit and what is left of it today, in the
    same words: the plan's line as `prep config interview_date` prints it, and the limit."""
    from datetime import date

    run_cli("config", "new_per_day", "3", db=db_path)
    out = run_cli("quiz", "--plain", input="\n3\nq\n", db=db_path).output  # one new card
    assert "Daily new-card limit: 3 new a day, 3 left today, shared by the decks;" in out
    out = run_cli("quiz", "--plain", input="q\n", db=db_path).output
    assert "Daily new-card limit: 3 new a day, 2 left today, shared by the decks;" in out
    assert "[new 2 · learning" in out  # the session's count is what is left
    # --new N serves N whatever the day's limit: no line on what that limit caps
    out = run_cli("quiz", "--plain", "--new", "30", input="q\n", db=db_path).output
    assert "[new 30 · learning" in out and "Daily new-card limit" not in out
    day = (date.today() + timedelta(days=6)).isoformat()
    said = run_cli("config", "interview_date", day, db=db_path).output.splitlines()[-1]
    header, plan = said.split(" · ", 1)  # (as home says it)
    assert " left today, " in plan
    out = run_cli("quiz", "--plain", input="q\n", db=db_path).output
    assert f"{header} · {plan}" in out.splitlines()
    # the cards to see and the seen ones add up to the cards `prep stats` counts
    stats = run_cli("stats", db=db_path).output
    seen, total = re.search(r"Cards +(\d+) of (\d+) seen", stats).groups()
    assert seen == "1" and plan.startswith(f"{int(total) - 1} of {total} cards to see")
