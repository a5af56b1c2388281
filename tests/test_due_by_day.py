"""Review cards are due by day, as in Anki (engine/study/due.py): rated Good twice at 09:20 on
day 1, the cards are due on day 3 from the 4am rollover, so at 09:00 on day 3 every place that
counts or serves due cards (home, the session, `prep quiz --plain`, `prep stats`, the forecast,
the plan, the app that `prep serve` shows) says and serves the same four cards. Learning steps
stay due by exact time, with the learn-ahead limit. Local time is New York's (not UTC)."""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prep.engine.decks.deckcache import load_collection
from prep.engine.store import Mark, Store
from prep.engine.study import stats as stats_mod
from prep.engine.study.due import by_day, is_due, next_due, reviews_until
from prep.engine.study.queue import build_queue, deck_counts, review_ahead_ids
from prep.engine.study.scheduler import Rating, Scheduler, State
from prep.engine.study.session import ReviewSession
from tests.conftest import Clock

IDS = {"roles", "pick-one", "roles-follow", "flag"}  # conftest's SMALL_DECK
_TICK = timedelta(microseconds=1)


def local(*when: int) -> datetime:
    """A local wall-clock time (the zone the test pinned) in UTC."""
    return datetime(*when).astimezone().astimezone(UTC)  # type: ignore[misc]


def rate_all_good_twice(store: Store, coll, at: datetime) -> None:
    """Every card of the deck rated Good, then Good again on its 10-minute step (shown early:
    nothing else is left), all at ``at``."""
    session = ReviewSession(store, coll, clock=Clock(at), scheduler=Scheduler(store.settings()))
    for _ in range(20):
        if session.current is None:
            break
        session.rate(Rating.Good, duration_ms=1000)
    assert session.current is None


@pytest.fixture
def rated(new_york_local_time, db_path: Path, small_deck_dir: Path):
    coll = load_collection([small_deck_dir], include_bundled=False)
    store = Store.open(db_path)
    rate_all_good_twice(store, coll, local(2026, 3, 3, 9, 20))
    states = store.cards()
    assert set(states) == IDS
    for s in states.values():  # two days on: due at 09:20 on day 3
        assert s.state == State.Review
        assert local(2026, 3, 5, 9, 20) <= s.due < local(2026, 3, 5, 9, 21)
    yield store, coll
    store.close()


def counts_at(store: Store, coll, now: datetime) -> dict[str, object]:
    """What each place says is due at ``now``."""
    home = deck_counts(store, coll, now)[0]
    queue = build_queue(store, coll, now)
    stats = stats_mod.compute(store, coll, now)
    session = ReviewSession(store, coll, clock=Clock(now))
    return {
        "home": (home.new, home.learning, home.due),
        "queue": (len(queue.new), queue.learning, len(queue.due) - queue.learning),
        "stats session": (stats.session.new, stats.session.learning, stats.session.due),
        "session": session.counts(),
        "stats due now": stats.due.now,
        "stats today": stats.due.today,
        "forecast today": stats.forecast[0].due,
    }


def test_at_nine_on_day_three_every_place_counts_the_cards_due_at_nine_twenty(rated) -> None:
    store, coll = rated
    now = local(2026, 3, 5, 9, 0)
    assert counts_at(store, coll, now) == {
        "home": (0, 0, 4),
        "queue": (0, 0, 4),
        "stats session": (0, 0, 4),
        "session": (0, 0, 4),
        "stats due now": 4,
        "stats today": 4,
        "forecast today": 4,
    }
    assert set(build_queue(store, coll, now).due) == IDS
    # the session serves them: each rated at 09:00, none left
    session = ReviewSession(store, coll, clock=Clock(now))
    served = []
    while session.current is not None:
        served.append(session.current.id)
        session.rate(Rating.Good, duration_ms=1000)
    assert set(served) == IDS and len(served) == 4


def test_across_the_rollover(rated) -> None:
    """Due on day 3's study day: not at 03:59 local (day 2's study day still), from 04:00."""
    store, coll = rated
    nothing = {
        "home": (0, 0, 0),
        "queue": (0, 0, 0),
        "stats session": (0, 0, 0),
        "session": (0, 0, 0),
        "stats due now": 0,
        "stats today": 0,
        "forecast today": 0,
    }
    assert counts_at(store, coll, local(2026, 3, 4, 23, 59)) == nothing
    assert counts_at(store, coll, local(2026, 3, 5, 3, 59)) == nothing
    stats = stats_mod.compute(store, coll, local(2026, 3, 5, 3, 59))
    assert stats.due.tomorrow == 4 and stats.forecast[1].due == 4
    at_four = counts_at(store, coll, local(2026, 3, 5, 4, 0))
    assert at_four["home"] == at_four["session"] == (0, 0, 4)
    assert at_four["stats due now"] == 4
    assert reviews_until(local(2026, 3, 5, 4, 0)) == local(2026, 3, 6, 4, 0) - timedelta(
        microseconds=1
    )


def test_across_a_dst_change(new_york_local_time, db_path: Path, small_deck_dir: Path) -> None:
    """Rated on Friday 6 March (EST), due Sunday 8 March, the day clocks go forward: the study
    day still starts at 04:00 local (08:00 UTC that day, not 09:00)."""
    coll = load_collection([small_deck_dir], include_bundled=False)
    with Store.open(db_path) as store:
        rate_all_good_twice(store, coll, local(2026, 3, 6, 9, 20))
        assert counts_at(store, coll, local(2026, 3, 8, 3, 59))["home"] == (0, 0, 0)
        assert local(2026, 3, 8, 4, 0) == datetime(2026, 3, 8, 8, 0, tzinfo=UTC)
        assert counts_at(store, coll, local(2026, 3, 8, 4, 0))["home"] == (0, 0, 4)


def test_learning_steps_stay_due_by_exact_time_with_learn_ahead(
    new_york_local_time, small_deck_dir: Path
) -> None:
    """A learning step due at 09:20 is counted (and shown early) at 09:00 within the 20-minute
    learn-ahead limit, not at 08:59; a step due at 09:30 is not counted at 09:00."""
    coll = load_collection([small_deck_dir], include_bundled=False)
    store = Store.memory()
    session = ReviewSession(store, coll, clock=Clock(local(2026, 3, 5, 9, 10)))
    session.rate(Rating.Good, duration_ms=1000)  # its first card: the next step at 09:20
    (stepped,) = [s for s in store.cards().values()]
    assert stepped.state == State.Learning and stepped.due == local(2026, 3, 5, 9, 20)
    ahead = timedelta(minutes=20)
    assert is_due(stepped, local(2026, 3, 5, 9, 0), ahead)
    assert not is_due(stepped, local(2026, 3, 5, 8, 59), ahead)
    assert not is_due(stepped, local(2026, 3, 5, 9, 19))  # exact time: not yet
    assert deck_counts(store, coll, local(2026, 3, 5, 9, 0))[0].learning == 1
    assert deck_counts(store, coll, local(2026, 3, 5, 8, 59))[0].learning == 0
    later = replace(stepped, due=local(2026, 3, 5, 9, 30))
    store.put_card(later)
    assert deck_counts(store, coll, local(2026, 3, 5, 9, 0))[0].learning == 0
    assert stats_mod.compute(store, coll, local(2026, 3, 5, 9, 0)).due.now == 0


def test_next_due_and_due_by_tomorrow_say_the_rollover(rated) -> None:
    """The end-of-session line: the next card comes due at day 3's rollover (not 09:20), and
    "due by the end of tomorrow" counts day 3's cards from day 2 on."""
    store, coll = rated
    assert next_due(store, local(2026, 3, 3, 10, 0)) == local(2026, 3, 5, 4, 0)
    day1 = ReviewSession(store, coll, clock=Clock(local(2026, 3, 3, 10, 0))).summary()
    assert day1["next_due"] == local(2026, 3, 5, 4, 0) and day1["due_by_tomorrow"] == 0
    day2 = ReviewSession(store, coll, clock=Clock(local(2026, 3, 4, 9, 0))).summary()
    assert day2["due_by_tomorrow"] == 4
    # review ahead one day on day 2: tomorrow's cards, whatever their hour
    assert set(review_ahead_ids(store, coll, local(2026, 3, 4, 9, 0), days=1)) == IDS
    assert review_ahead_ids(store, coll, local(2026, 3, 5, 9, 0), days=1) == []  # due now


def test_plain_quiz_serves_them(rated) -> None:
    from prep.tui.plain import run_plain

    store, coll = rated
    out = io.StringIO()
    session = ReviewSession(store, coll, clock=Clock(local(2026, 3, 5, 9, 0)))
    # (the red-flag card, last: Enter shows its choices, Enter again reveals)
    assert run_plain(session, io.StringIO("\n3\n" * 3 + "\n\n3\n" + "q\n"), out) == 0
    text = out.getvalue()
    for left in (4, 3, 2, 1):
        assert f"[new 0 · learning 0 · due {left}]" in text
    assert "Session over: 4 reviewed" in text
    assert len(store.reviews()) == 8 + 4  # two each on day 1, one each now


def test_a_plan_counts_a_card_due_later_today_once(rated) -> None:
    """The day before the interview, a review FSRS makes due at 09:20 is due at 09:00 by FSRS
    (by day): counted and served once, not also as brought forward."""
    store, coll = rated
    store.update_settings(interview_date="2026-03-06")
    now = local(2026, 3, 5, 9, 0)
    queue = build_queue(store, coll, now)
    assert sorted(queue.due) == sorted(set(queue.due)) and set(queue.due) == IDS
    assert deck_counts(store, coll, now)[0].due == 4
    assert stats_mod.compute(store, coll, now).due.now == 4


def test_suspended_and_buried_cards_are_not_counted_due(rated) -> None:
    store, coll = rated
    store.set_mark("roles", Mark(suspended=True), at=local(2026, 3, 4, 9, 0))
    now = local(2026, 3, 5, 9, 0)
    store.set_mark("flag", Mark(buried_until=local(2026, 3, 6, 4, 0)), at=now)
    got = counts_at(store, coll, now)
    assert got["home"] == got["session"] == got["stats session"] == (0, 0, 2)
    assert got["stats due now"] == got["stats today"] == got["forecast today"] == 2


def test_the_app_home_says_four_due(rated) -> None:
    """The app (what `prep serve` shows in a browser) at 09:00 on day 3: home's line."""
    from prep.tui.app import PrepApp
    from tests.pilot import at_home, text_of

    store, coll = rated
    now = local(2026, 3, 5, 9, 0)

    async def run() -> str:
        app = PrepApp(store=store, collection=coll, demos={}, clock=lambda: now)
        async with app.run_test(size=(100, 30)) as pilot:
            await at_home(pilot, app)
            return text_of(app, "#today")

    line = asyncio.run(run())
    assert line.startswith("4 to review (new 0 · learning 0 · due 4)"), line


@pytest.mark.skipif(shutil.which("faketime") is None, reason="faketime not installed")
def test_the_command_line_at_nine_on_day_three(rated, db_path: Path, small_deck_dir: Path):
    """`prep stats --json` and `prep quiz --plain` themselves, under faketime at 09:00 local
    on day 3 (New York)."""
    store, _coll = rated
    store.update_settings(new_per_day=0)  # (the bundled decks load too: none of their cards)
    store.close()
    env = {**os.environ, "TZ": "America/New_York", "FAKETIME_DONT_RESET": "1"}
    base = [sys.executable, "-m", "prep.tui.cli", "--db", str(db_path)]
    base += ["--questions", str(small_deck_dir)]

    def prep(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
        return subprocess.run(
            ["faketime", "2026-03-05 09:00:00", *base, *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )

    done = prep("stats", "--json")
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)
    assert stats["now"].startswith("2026-03-05T14:00")  # 09:00 EST
    assert stats["session"] == {"new": 0, "learning": 0, "due": 4}
    assert stats["due"]["now"] == 4 and stats["due"]["today"] == 4
    assert stats["forecast"][0] == {"date": "2026-03-05", "due": 4}
    done = prep("quiz", "--plain", stdin="q\n")
    assert done.returncode == 0, done.stderr
    assert "[new 0 · learning 0 · due 4]" in done.stdout


# --- every screen's numbers are the cards the session serves --------------------------------


def _two_decks() -> object:
    from prep.engine.decks.deck import Card, DeckInfo, ParsedDecks
    from prep.engine.decks.deckcache import from_parsed

    parsed = ParsedDecks()
    for deck in ("alpha", "beta"):
        info = DeckInfo(name=deck, title=deck.title(), description="", file=f"{deck}.yaml")
        parsed.decks[deck] = info
        for i in range(6):
            cid = f"{deck}-{i}"
            parsed.add(Card(id=cid, kind="recall", prompt=f"{cid}?", answer="A.", deck=deck))
            info.card_ids.append(cid)
    return from_parsed(parsed)


_KINDS = (None, State.Learning, State.Review, State.Relearning)


@given(
    cards=st.lists(
        st.tuples(
            st.sampled_from(_KINDS),
            st.integers(-3 * 24 * 60, 3 * 24 * 60),  # due, minutes from now
            st.sampled_from(("", "suspended", "buried")),
            # a step's last review: 10 minutes before (intraday, unless that crosses the
            # rollover) or a day or more before its due (an interday step, due by day)
            st.sampled_from((10, 24 * 60, 3 * 24 * 60)),
        ),
        min_size=12,
        max_size=12,
    ),
    hour=st.integers(0, 23),
    minute=st.sampled_from((0, 20, 59)),
    review_limit=st.integers(0, 8),
    new_per_day=st.integers(0, 4),
    learn_ahead=st.sampled_from((0, 20, 90)),
)
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_every_count_is_what_the_session_serves(
    new_york_local_time, cards, hour, minute, review_limit, new_per_day, learn_ahead
) -> None:
    from prep.engine.study.scheduler import CardState

    coll = _two_decks()
    store = Store.memory()
    store.update_settings(
        review_limit=review_limit, new_per_day=new_per_day, learn_ahead_min=learn_ahead
    )
    now = local(2026, 3, 5, hour, minute)
    ids = [c.id for c in coll.cards]
    for cid, (kind, minutes, mark, step) in zip(ids, cards, strict=True):
        if kind is not None:
            due = now + timedelta(minutes=minutes)
            back = timedelta(days=2) if kind == State.Review else timedelta(minutes=step)
            store.put_card(
                CardState(
                    id=cid,
                    deck=cid.split("-")[0],
                    state=int(kind),
                    step=None if kind == State.Review else 0,
                    stability=2.0,
                    difficulty=5.0,
                    due=due,
                    last_review=min(due, now) - back,
                    reps=2,
                )
            )
        if mark == "suspended":
            store.set_mark(cid, Mark(suspended=True), at=now)
        elif mark == "buried":  # until tomorrow's rollover, as the review screen's bury
            store.set_mark(cid, Mark(buried_until=reviews_until(now) + _TICK), at=now)
    stats = stats_mod.compute(store, coll, now)
    by_tomorrow = ReviewSession(store, coll, clock=Clock(now)).summary()["due_by_tomorrow"]
    rows = deck_counts(store, coll, now)
    for row in rows:
        deck = row.name or None
        session = ReviewSession(store, coll, clock=Clock(now), deck=deck)
        assert session.counts() == (row.new, row.learning, row.due), deck
        # (the queue holds the steps due now; the session takes those of the learn-ahead
        # window as they come, so only the other two numbers are the queue's alone)
        queue = build_queue(store, coll, now, deck=deck)
        assert (len(queue.new), len(queue.due) - queue.learning) == (row.new, row.due), deck
    home = rows[0]
    assert (stats.session.new, stats.session.learning, stats.session.due) == (
        home.new,
        home.learning,
        home.due,
    )
    # what it serves, rated Easy (graduated: none comes back today), by its kind when shown
    before = store.cards()
    hidden = store.hidden_ids(now)
    session = ReviewSession(
        store, coll, clock=Clock(now), scheduler=Scheduler(enable_fuzzing=False)
    )
    served: list[str] = []
    while session.current is not None and len(served) < 30:
        served.append(session.current.id)
        session.rate(Rating.Easy, duration_ms=1000)
    assert len(set(served)) == len(served)
    new = [cid for cid in served if cid not in before]
    learning = [cid for cid in served if cid in before and before[cid].state != State.Review]
    review = [cid for cid in served if cid in before and before[cid].state == State.Review]
    assert (len(new), len(learning), len(review)) == (home.new, home.learning, home.due)
    ahead = timedelta(minutes=learn_ahead)
    assert all(is_due(before[cid], now, ahead) and cid not in hidden for cid in learning + review)
    # every due card not hidden is served, the cards due by day (reviews, interday steps: the
    # interday steps first) up to the review limit; stats' "due now" counts them all
    due_now = {c for c, s in before.items() if is_due(s, now, ahead) and c not in hidden}
    daily = {c for c in due_now if by_day(before[c])}
    interday = {c for c in daily if before[c].state != State.Review}
    assert stats.due.now == len(due_now) == home.steps + home.waiting
    assert home.waiting == len(daily)
    taken = min(review_limit, len(interday))
    assert home.learning == len(due_now) - len(daily) + taken
    assert home.due == min(review_limit - taken, len(daily) - len(interday))
    # the interday steps are counted by day: due today whatever the hour of their due
    assert all(before[c].due <= reviews_until(now) for c in interday)
    # today: every card not hidden whose due falls in today's study day or earlier
    today = {c for c, s in before.items() if c not in hidden and s.due <= reviews_until(now)}
    assert stats.due.today == stats.forecast[0].due == len(today)
    # tomorrow: the cards due then, and the buried cards due by then (back tomorrow); no
    # suspended card on any day (engine/study/forecast.py)
    buried = {c for c, (_, _, m, _) in zip(ids, cards, strict=True) if m == "buried"}
    tomorrow = {
        c
        for c, s in before.items()
        if c not in hidden - buried
        and s.due <= reviews_until(now, 1)
        and (c in buried or s.due > reviews_until(now))
    }
    assert stats.due.tomorrow == stats.forecast[1].due == len(tomorrow)
    assert by_tomorrow == len(today) + len(tomorrow)  # the end-of-session line
