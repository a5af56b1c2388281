"""An app left open across the 4 am rollover (round 15, ux15): every screen's counts become a
fresh session's with no key pressed (day14 made the queue the new day's at the next card; the
review bar, home, stats and a finished session's summary kept yesterday's numbers until
something was pressed). And the yes/no question's `?`."""

from __future__ import annotations

import asyncio
import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from prep.engine.decks.deckcache import load_collection
from prep.engine.store import Store
from prep.engine.study.queue import deck_counts
from prep.engine.study.scheduler import Rating, Scheduler
from prep.engine.study.session import ReviewSession
from prep.engine.timeutil import study_day_start
from tests.conftest import Clock


def local(*when: int) -> datetime:
    return datetime(*when).astimezone().astimezone(UTC)  # type: ignore[misc]


def _deck(folder: Path, n: int = 8) -> None:
    cards = "".join(
        f"  - id: one-{i}\n    kind: recall\n    prompt: Q one {i}?\n    answer: A {i}.\n"
        for i in range(n)
    )
    (folder / "one.yaml").write_text(f"deck: one\ntitle: One\ncards:\n{cards}", "utf-8")


def _setup(tmp_path: Path):
    """Two new cards a day; day 1 at 09:00 both rated Easy (reviews due days later). Returns
    the store, the decks, a clock at 03:50 on the morning the first comes due, and that
    morning's rollover."""
    folder = tmp_path / "decks"
    folder.mkdir()
    _deck(folder)
    coll = load_collection([folder], include_bundled=False)
    store = Store.open(tmp_path / "prep.db")
    store.update_settings(new_per_day=2)
    clock = Clock(local(2026, 3, 1, 9, 0))
    first = ReviewSession(store, coll, clock=clock, scheduler=Scheduler(store.settings()))
    while first.current is not None:
        first.rate(Rating.Easy, duration_ms=1000)
    due = min(s.due for s in store.cards(["one-0", "one-1"]).values() if s.due is not None)
    assert isinstance(due, datetime)
    rollover = study_day_start(due)
    clock.now = rollover - timedelta(minutes=10)
    return store, coll, clock, rollover


def _fresh(store: Store, coll, clock: Clock) -> tuple[int, int, int]:
    return ReviewSession(store, coll, clock=clock, scheduler=Scheduler(store.settings())).counts()


def _bar(text: str) -> tuple[int, int, int]:
    found = re.search(r"new (\d+) · learning (\d+) · due (\d+)", text)
    assert found is not None, text
    return int(found[1]), int(found[2]), int(found[3])


def test_the_counts_of_a_session_open_across_the_rollover_are_the_new_days_before_a_rating(
    new_york_local_time, tmp_path: Path
) -> None:
    """At 04:01 with yesterday's card still on screen, the session's three numbers are a fresh
    session's (the reviews due today in, the new-card limit the new day's), and the card on
    screen stays the current card. Before: yesterday's numbers until it was rated."""
    store, coll, clock, rollover = _setup(tmp_path)
    with store:
        session = ReviewSession(store, coll, clock=clock, scheduler=Scheduler(store.settings()))
        assert session.counts() == (2, 0, 0)
        shown = session.current
        assert shown is not None
        clock.now = rollover + timedelta(minutes=1)
        fresh = _fresh(store, coll, clock)
        assert fresh[2] >= 1  # (reviews come due that morning)
        assert session.counts() == fresh
        assert session.current is not None and session.current.id == shown.id
        session.rate(Rating.Good, duration_ms=1000, card_id=shown.id)  # (lands on it)
        assert session.counts() == _fresh(store, coll, clock)


def _app(store: Store, coll, clock: Clock, **kw):
    from prep.tui.app import PrepApp

    app = PrepApp(
        store=store,
        collection=coll,
        demos={},
        clock=clock,
        scheduler=Scheduler(store.settings(), enable_fuzzing=False),
        theme="textual-dark",
        **kw,
    )
    app.DAY_CHECK_S = 0.05  # (10 s in use: a clock read and a comparison each time)
    return app


def test_the_review_bar_left_open_across_the_rollover_counts_the_new_day(
    new_york_local_time, tmp_path: Path
) -> None:
    """The review screen open at 03:50; at 04:01, no key pressed, its bar reads a fresh
    session's numbers and the same card is on screen (a rating lands on it). Before: the bar
    kept 'new 2 · learning 0 · due 0' until the card was rated."""
    from prep.tui.screens.review import ReviewScreen
    from tests.pilot import text_of, wait_until

    store, coll, clock, rollover = _setup(tmp_path)

    async def run() -> None:
        app = _app(store, coll, clock, review_first=True)
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen))
            await pilot.pause()
            assert _bar(text_of(app, "#progress")) == (2, 0, 0)
            prompt = text_of(app, "#prompt")
            clock.now = rollover + timedelta(minutes=1)
            fresh = _fresh(store, coll, clock)
            await wait_until(pilot, lambda: _bar(text_of(app, "#progress")) == fresh, timeout=5)
            assert text_of(app, "#prompt") == prompt  # (the card on screen stays)
            await pilot.press("space")
            await pilot.press("3")
            await wait_until(pilot, lambda: text_of(app, "#prompt") != prompt)
            assert _bar(text_of(app, "#progress")) == _fresh(store, coll, clock)

    with store:
        asyncio.run(run())


def test_home_left_open_across_the_rollover_counts_the_new_day(
    new_york_local_time, tmp_path: Path
) -> None:
    """Home open at 03:50 says new 2 and nothing due; at 04:01, no key pressed, it says the new
    day's (a fresh session's, home's deck_counts then). Before: yesterday's until left and
    shown again."""
    from prep.tui.screens.home import HomeScreen
    from tests.pilot import text_of, wait_until

    store, coll, clock, rollover = _setup(tmp_path)

    async def run() -> None:
        async with app.run_test(size=(100, 40)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, HomeScreen))
            await pilot.pause()
            assert _bar(text_of(app, "#today")) == (2, 0, 0)
            clock.now = rollover + timedelta(minutes=1)
            row = deck_counts(store, coll, clock.now)[0]
            now_due = (row.new, row.learning, row.due)
            assert row.due >= 1 and now_due == _fresh(store, coll, clock)
            await wait_until(pilot, lambda: _bar(text_of(app, "#today")) == now_due, timeout=5)

    with store:
        app = _app(store, coll, clock)
        asyncio.run(run())


def test_stats_left_open_across_the_rollover_counts_the_new_day(
    new_york_local_time, tmp_path: Path
) -> None:
    """The stats screen open at 03:50: its Session line (home's numbers) becomes the new day's
    at 04:01 with no key pressed. Before: yesterday's until r."""
    from prep.tui.screens.home import HomeScreen
    from prep.tui.screens.stats import StatsScreen
    from tests.pilot import text_of, wait_until

    store, coll, clock, rollover = _setup(tmp_path)

    async def run() -> None:
        async with app.run_test(size=(100, 40)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, HomeScreen))
            await pilot.press("s")
            await wait_until(pilot, lambda: isinstance(app.screen, StatsScreen))
            await pilot.pause()
            assert _bar(text_of(app, "#stats-summary")) == (2, 0, 0)
            clock.now = rollover + timedelta(minutes=1)
            fresh = _fresh(store, coll, clock)
            assert fresh[2] >= 1
            await wait_until(
                pilot, lambda: _bar(text_of(app, "#stats-summary")) == fresh, timeout=5
            )

    with store:
        app = _app(store, coll, clock)
        asyncio.run(run())


def test_a_summary_left_open_across_the_rollover_offers_the_new_days_cards(
    new_york_local_time, tmp_path: Path
) -> None:
    """The day's two new cards rated by 03:55, the summary stays on screen; at 04:01 it says
    the new day's numbers (a fresh session's) and Enter starts them (Esc still goes home).
    Before: it kept 'Session complete' and its lines as they were, and Enter went home."""
    from prep.tui.screens.home import HomeScreen
    from prep.tui.screens.review import ReviewScreen
    from prep.tui.screens.summary import SummaryScreen
    from tests.pilot import text_of, wait_until

    store, coll, clock, rollover = _setup(tmp_path)

    async def run() -> None:
        async with app.run_test(size=(100, 40)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen))
            for _ in range(2):
                await pilot.press("space")
                await pilot.press("4")
            await wait_until(pilot, lambda: isinstance(app.screen, SummaryScreen))
            await pilot.pause()
            assert "Session complete" in text_of(app, "#summary")
            assert "new day" not in text_of(app, "#summary")
            clock.now = rollover + timedelta(minutes=1)
            fresh = _fresh(store, coll, clock)
            line = "A new study day has begun: new {} · learning {} · due {}".format(*fresh)
            await wait_until(pilot, lambda: line in text_of(app, "#summary"), timeout=5)
            assert "Session complete" in text_of(app, "#summary")  # (yesterday's still said)
            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen))
            await pilot.pause()
            assert _bar(text_of(app, "#progress")) == fresh
            await pilot.press("escape")  # home, then a new summary over it would go home
            await wait_until(pilot, lambda: isinstance(app.screen, HomeScreen))

    with store:
        app = _app(store, coll, clock, review_first=True)
        asyncio.run(run())


def test_the_app_looks_at_the_study_day_without_reading_the_database(
    new_york_local_time, tmp_path: Path
) -> None:
    """The app's day watch (every 10 s) before the rollover: a clock read and a comparison, no
    statement and no screen read again (a handful of Python calls)."""
    from prep.tui.screens.home import HomeScreen
    from tests.pilot import wait_until

    store, coll, clock, _rollover = _setup(tmp_path)
    calls: list[str] = []

    def counted(frame, event, arg) -> None:
        if event in ("call", "c_call"):
            calls.append(getattr(arg, "__qualname__", "") or frame.f_code.co_qualname)

    async def run() -> None:
        async with app.run_test(size=(100, 40)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, HomeScreen))
            sys.setprofile(counted)
            try:
                app.check_study_day()
            finally:
                sys.setprofile(None)

    with store:
        app = _app(store, coll, clock)
        asyncio.run(run())
    assert len(calls) <= 6, calls
    assert not any("execute" in c or "counts" in c for c in calls), calls


def test_question_mark_in_the_yes_no_question_opens_help_and_the_question_stays(
    tmp_path: Path,
) -> None:
    """`?` over the yes/no question (discarding a typed answer) opens help at its section;
    Esc comes back to the same question, whose y still answers it. Before: `?` did nothing."""
    from prep.tui.screens.confirm import Confirm
    from prep.tui.screens.help import HelpScreen
    from prep.tui.screens.review import ReviewScreen
    from prep.tui.testing import make_app
    from tests.pilot import text_of, wait_until

    async def run() -> None:
        app = make_app(review_first=True)
        async with app.run_test(size=(100, 40)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen))
            answered: list[bool] = []
            question = Confirm("Discard the answer you typed?")
            app.push_screen(question, answered.append)
            await wait_until(pilot, lambda: app.screen is question)
            await pilot.pause()
            assert "?  help" in text_of(app, "#confirm-keys")
            await pilot.press("question_mark")
            await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
            assert isinstance(app.screen, HelpScreen) and app.screen.at == "Confirm"
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.screen is question)
            assert answered == []  # (still asked)
            await pilot.press("y")
            await wait_until(pilot, lambda: answered == [True])
            assert isinstance(app.screen, ReviewScreen)

    asyncio.run(run())


def test_export_over_an_existing_file_says_replaced(tmp_path: Path, small_collection) -> None:
    """`prep export -o FILE` onto a file already there still writes it (the user named it) and
    says "Replaced FILE" (json, apkg), or marks each csv file it replaced; a new file is
    "Wrote". Nothing else is written. Before: "Wrote" either way."""
    from tests.test_export import cli, history

    db = tmp_path / "p.db"
    with Store.open(db) as store:
        history(store, small_collection)
    out = tmp_path / "out"
    out.mkdir()
    target = out / "progress.json"
    first = cli(db, "export", "-o", str(target))
    assert first.exit_code == 0 and first.output.startswith(f"Wrote {target}: "), first.output
    target.write_text("an older export", "utf-8")
    again = cli(db, "export", "-o", str(target))
    assert again.exit_code == 0 and again.output.startswith(f"Replaced {target}: "), again.output
    assert target.read_text("utf-8").startswith("{")
    anki = out / "decks.apkg"
    anki.write_bytes(b"old")
    said = cli(db, "export", "-o", str(anki)).output
    assert said.startswith(f"Replaced {anki}: "), said
    (out / "log.cards.csv").write_text("old", "utf-8")
    lines = cli(db, "export", "-o", str(out / "log.csv")).output.splitlines()
    assert lines[0].startswith("Wrote 6 files: ")
    assert f"  {out / 'log.cards.csv'} (replaced)" in lines
    assert f"  {out / 'log.csv'}" in lines  # (new: not said replaced)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["progress.json", "decks.apkg", "log.csv"]
        + [f"log.{k}.csv" for k in ("cards", "demo_runs", "marks", "settings", "undone")]
    )


def test_an_interview_date_in_the_past_or_more_than_a_year_ahead_is_refused(
    tmp_path: Path,
) -> None:
    """`prep config interview_date 2099-01-02` printed "26329 days ... in 26328 days" and
    saved it. A date in the past or more than a year ahead is one line naming it and what is
    taken, exit 2, nothing saved (nor a database made); today and a year ahead are taken."""
    from datetime import date

    from prep.engine.study.plan import study_date
    from prep.engine.timeutil import utcnow
    from tests.test_export import cli

    db = tmp_path / "p.db"
    today = study_date(utcnow())
    last = today + timedelta(days=365)
    for value in ["2099-01-02", (last + timedelta(days=1)).isoformat(), "2020-01-02"]:
        out = cli(db, "config", "interview_date", value)
        assert out.exit_code == 2, out.output
        (line,) = out.output.strip().splitlines()
        assert line.startswith(f"prep: interview_date: {value} is ")
        assert f"from today ({today}) to a year ahead ({last}), or none" in line
        assert not db.exists()  # (nothing made)
    far = cli(db, "config", "interview_date", "2099-01-02").output
    assert f"is {(date(2099, 1, 2) - today).days} days ahead, more than a year;" in far
    assert cli(db, "config", "interview_date", last.isoformat()).exit_code == 0
    out = cli(db, "config", "interview_date", (today - timedelta(days=1)).isoformat())
    assert out.exit_code == 2
    with Store.open(db) as store:
        assert store.settings().interview_date == last.isoformat()  # (the refused one not)
    assert cli(db, "config", "interview_date", today.isoformat()).exit_code == 0


def _days_to(*day: int) -> str:
    from datetime import date

    from prep.engine.study.plan import study_date
    from prep.engine.timeutil import utcnow

    return f"{(date(*day) - study_date(utcnow())).days} days"


def test_a_date_stored_more_than_a_year_ahead_says_it_is_too_far_to_plan(tmp_path: Path) -> None:
    """A date saved before the bound (an older database, or synced): home, --plain, stats and
    `prep config` read it without a crash, and the plan's line says it is too far to plan and
    how to set a nearer one (not "116 cards to see in 26327 days")."""
    from prep.tui.screens.home import HomeScreen
    from prep.tui.testing import fixed_collection, make_app
    from tests.pilot import text_of, wait_until
    from tests.test_export import cli

    db = tmp_path / "p.db"
    with Store.open(db) as store:
        store.update_settings(interview_date="2099-01-02")
    too_far = "more than a year away, too far to plan: `prep config interview_date` sets"
    plain = cli(db, "quiz", "--plain", input="q\n")
    assert plain.exit_code == 0 and too_far in plain.output
    (line,) = [s for s in plain.output.splitlines() if s.startswith("Interview: ")]
    assert line == f"Interview: Fri 2 Jan 2099, {_days_to(2099, 1, 2)} · {too_far} a nearer one"
    assert cli(db, "stats").exit_code == 0
    assert cli(db, "config").exit_code == 0

    async def run() -> None:
        with Store.open(db) as store:
            app = make_app(store=store, collection=fixed_collection())
            async with app.run_test(size=(160, 40)) as pilot:
                await wait_until(pilot, lambda: isinstance(app.screen, HomeScreen))
                await pilot.pause()
                said = text_of(app, "#today")
                assert "Interview: Fri 2 Jan 2099" in said and too_far in said, said

    asyncio.run(run())


def test_review_ahead_counts_and_serves_what_the_interview_plan_brings_forward(
    new_york_local_time, tmp_path: Path
) -> None:
    """Interview on Thu 5 Mar; on Mon 2 Mar a card rated Easy twice (20 Feb, 28 Feb) is due
    after it by FSRS (beyond the 7 days of review ahead), but the plan brings it to Wed (the
    day before).
    Study more's "review ahead (N)" counts it, and pressing it serves it: the count is what
    pressing it serves, by the plan's days. Before: 0, from FSRS's due alone (user14's
    note). Without a plan, FSRS's due as before (Anki's prop:due<=7)."""
    from prep.engine.study.queue import review_ahead_ids
    from prep.tui.screens.home import HomeScreen
    from prep.tui.screens.review import ReviewScreen
    from prep.tui.screens.study_more import AHEAD_DAYS, StudyMore
    from tests.pilot import text_of, wait_until

    folder = tmp_path / "decks"
    folder.mkdir()
    _deck(folder, 3)
    coll = load_collection([folder], include_bundled=False)
    clock = Clock(local(2026, 2, 20, 9, 0))
    with Store.open(tmp_path / "prep.db") as store:
        store.update_settings(new_per_day=1)
        for _ in range(2):
            session = ReviewSession(store, coll, clock=clock, scheduler=Scheduler(store.settings()))
            assert session.current is not None and session.current.id == "one-0"
            session.rate(Rating.Easy, duration_ms=1000)
            due = store.card("one-0").due  # type: ignore[union-attr]
            assert isinstance(due, datetime)
            clock.now = max(due, local(2026, 2, 28, 9, 0))
        clock.now = local(2026, 3, 2, 9, 0)
        store.update_settings(new_per_day=0)  # (only the reviewed card: nothing new today)
        state = store.card("one-0")
        assert state is not None and isinstance(state.due, datetime)
        assert state.due > study_day_start(clock.now, AHEAD_DAYS + 1)  # (FSRS: past 7 days)
        assert review_ahead_ids(store, coll, clock.now, AHEAD_DAYS) == []  # no plan: as Anki
        store.update_settings(interview_date="2026-03-20")  # (its last day beyond the 7)
        assert review_ahead_ids(store, coll, clock.now, AHEAD_DAYS) == []
        store.update_settings(interview_date="2026-03-05")
        assert review_ahead_ids(store, coll, clock.now, AHEAD_DAYS) == ["one-0"]
        assert review_ahead_ids(store, coll, clock.now, AHEAD_DAYS, "other") == []
        # the last day (Wed): today's queue serves it (brought forward), not review ahead
        wednesday = local(2026, 3, 4, 9, 0)
        assert review_ahead_ids(store, coll, wednesday, AHEAD_DAYS) == []

        async def run() -> None:
            app = _app(store, coll, clock)
            async with app.run_test(size=(100, 30)) as pilot:
                await wait_until(pilot, lambda: isinstance(app.screen, HomeScreen))
                await pilot.press("n")
                await wait_until(pilot, lambda: isinstance(app.screen, StudyMore))
                await pilot.pause()
                said = text_of(app, "#more-text")
                assert f"Review ahead: cards due in the next {AHEAD_DAYS} days (1)" in said
                await pilot.press("2")
                await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen))
                await pilot.pause()
                assert "Q one 0?" in text_of(app, "#prompt")

        asyncio.run(run())
