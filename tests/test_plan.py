"""The interview plan (engine/study/plan.py): a simulated week with an injected clock and a learner
who answers at a fixed accuracy (seeded)."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import fsrs
import pytest

from prep.engine.decks.collection import CachedCollection
from prep.engine.decks.deck import Card, DeckInfo, ParsedDecks
from prep.engine.decks.deckcache import from_parsed
from prep.engine.store import Store
from prep.engine.study import plan as plan_mod
from prep.engine.study.due import is_due
from prep.engine.study.plan import Plan, forgetting_curve, plan_day
from prep.engine.study.scheduler import CardState, Rating, Scheduler, Settings, State
from prep.engine.study.session import ReviewSession, build_queue, deck_counts
from tests.conftest import Clock

MONDAY = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)  # a Monday; the interview is the next Monday
INTERVIEW = "2026-03-09"
ON_THE_DAY = datetime(2026, 3, 9, 12, 0, tzinfo=UTC)  # noon local (local time is UTC here)


def week_collection(n_per_deck: int = 42) -> CachedCollection:
    """Two decks of recall cards, tagged in threes."""
    coll = ParsedDecks()
    for deck in ("alpha", "beta"):
        info = DeckInfo(name=deck, title=deck.title(), description="", file=f"{deck}.yaml")
        coll.decks[deck] = info
        for i in range(n_per_deck):
            cid = f"{deck}-{i:02d}"
            coll.add(
                Card(
                    id=cid,
                    kind="recall",
                    prompt=f"Question {cid}?",
                    answer=f"Answer {cid}.",
                    deck=deck,
                    tags=(f"t{i % 3}",),
                )
            )
            info.card_ids.append(cid)
    return from_parsed(coll)


def study_day(
    store: Store, coll: CachedCollection, clock: Clock, rng: random.Random, accuracy: float
):
    """One study day: sessions until nothing is left today, each card answered right with
    probability ``accuracy`` (Good, else Again). Returns the ids rated."""
    rated: list[str] = []
    for _ in range(50):  # sessions (a top-up on the last day comes in a later one)
        session = ReviewSession(
            store, coll, clock=clock, scheduler=Scheduler(store.settings(), seed=7)
        )
        if session.finished and session.waiting is None:
            break
        for _ in range(5000):
            card = session.current
            if card is None:
                if session.waiting is None:
                    break
                clock.now = max(clock.now, session.waiting)
                continue
            clock.advance(seconds=20)
            rating = Rating.Good if rng.random() < accuracy else Rating.Again
            session.rate(rating, duration_ms=20_000)
            rated.append(card.id)
    return rated


def run_week(settings: Settings, *, accuracy: float = 0.85, seed: int = 1, days: int = 8):
    """Study at 9:00 each day from Monday for ``days`` days (the eighth is the interview's
    morning: the interview is at noon)."""
    store = Store.memory()
    store.save_settings(settings)
    coll = week_collection()
    rng = random.Random(seed)
    per_day = []
    for day in range(days):
        clock = Clock(MONDAY + timedelta(days=day))
        per_day.append(study_day(store, coll, clock, rng, accuracy))
    return store, coll, per_day


@pytest.fixture
def week(utc_local_time):
    settings = Settings(new_per_day=5, interview_date=INTERVIEW)
    return run_week(settings)


def test_forgetting_curve_is_fsrs_own():
    """At whole days the plan's curve is py-fsrs's get_card_retrievability."""
    scheduler = fsrs.Scheduler(enable_fuzzing=False)
    reviewed = datetime(2026, 3, 2, tzinfo=UTC)
    card = fsrs.Card(card_id=1, state=State.Review, stability=3.7, difficulty=5.0, step=None)
    card.last_review, card.due = reviewed, reviewed
    for days in (0, 1, 4, 30):
        expected = scheduler.get_card_retrievability(card, reviewed + timedelta(days=days))
        assert forgetting_curve(3.7, days, scheduler.parameters[20]) == pytest.approx(expected)
    assert forgetting_curve(3.7, 3.7, 0.1542) == pytest.approx(0.9)


def test_the_plan_line_and_the_days(utc_local_time):
    store = Store.memory()
    coll = week_collection()
    settings = Settings(new_per_day=5, interview_date=INTERVIEW)
    day = plan_day(store, coll, MONDAY, settings)
    assert day is not None
    assert day.plan.header() == "Interview: Mon 9 Mar, 7 days"
    # 7 study days before Monday: new cards on the first 6, the last one for reviews
    assert day.line() == (
        "84 of 84 cards to see in 6 days: 14 new a day, 14 left today, 2 reviews each before "
        "Mon 9 Mar"
    )
    assert day.new_today == 14 and day.raised
    # (the line says "14 new a day": the why line does not say it again)
    assert day.why() == "More than new_per_day (5) a day: every card seen twice before Mon 9 Mar"
    friday = plan_day(store, coll, MONDAY, replace(settings, interview_date="2026-03-06"))
    assert friday is not None
    assert friday.line() == (
        "84 of 84 cards to see in 3 days: 28 new a day, 28 left today, 2 reviews each before Friday"
    )
    # the setting wins when it is already enough
    relaxed = plan_day(store, coll, MONDAY, replace(settings, new_per_day=30))
    assert relaxed is not None and relaxed.new_today == 30 and relaxed.why() is None
    # a date two weeks out is named in full
    far = plan_day(store, coll, MONDAY, replace(settings, interview_date="2026-03-20"))
    assert far is not None and far.line().endswith("before Fri 20 Mar")
    # the day itself and after it
    on = plan_day(store, coll, ON_THE_DAY, settings)
    assert on is not None and on.plan.header() == "Interview: Mon 9 Mar, today"
    assert on.line().startswith("the weakest cards first")
    # as home and `prep stats` put it after the date: "today" once ("today: Today: …" before)
    assert f"{on.plan.header()} · {on.line()}".lower().count("today") == 1
    # the day itself adds no new cards (day17: the setting's 5 were served before; "study
    # more" still adds), and its line says so in the limit's words
    assert on.new_today == 0 and "0 new on the day, 0 left" in on.line()
    assert plan_day(store, coll, ON_THE_DAY + timedelta(days=1), settings) is None


def test_a_week_on_plan_sees_every_card_and_meets_the_target_on_the_day(week):
    store, coll, per_day = week
    states = store.cards()
    # every card seen before the date, each on at least two study days
    assert set(states) == {c.id for c in coll.cards}
    assert all(not s.is_new for s in states.values())
    days_seen = {cid: sum(cid in day for day in per_day) for cid in states}
    assert min(days_seen.values()) >= 2
    # new cards came in at the plan's rate (14 a day), not the setting's 5
    first_seen = [
        len({cid for cid in day if cid not in set().union(*per_day[:i])})
        for i, day in enumerate(per_day)
    ]
    assert first_seen == [14] * 6 + [0, 0]
    # every card was studied on the last day (reviews brought forward from after the date)
    assert set(per_day[6]) == set(states)
    # the morning of the day: what FSRS makes due that day (a review is due by day, from the
    # 4am rollover) and what is still below target at noon (lapsed on Sunday); not the rest
    assert 0 < len(set(per_day[7])) < 84 / 2
    # the retrievability on the day (FSRS's curve) meets the desired retention for every card
    plan = Plan.of(store.settings(), ON_THE_DAY - timedelta(hours=1))
    assert plan is not None and plan.moment == ON_THE_DAY
    recall = [plan.retrievability(s) for s in states.values()]
    assert min(recall) >= 0.9, sorted(recall)[:5]


def test_the_morning_of_the_day_serves_fsrs_due_and_below_target_only(utc_local_time):
    """The eighth morning serves exactly the cards due on the day by FSRS (by day: a card
    due at 09:20 is served at 09:00) and those below target at noon, weakest first."""
    settings = Settings(new_per_day=5, interview_date=INTERVIEW)
    store, coll, _ = run_week(settings, days=7)
    morning = MONDAY + timedelta(days=7)
    plan = Plan.of(store.settings(), morning)
    assert plan is not None
    states = store.cards()
    by_fsrs = {cid for cid, s in states.items() if is_due(s, morning)}
    assert any(s.due > morning for cid, s in states.items() if cid in by_fsrs)  # later today
    below = {cid for cid, s in states.items() if plan.below(s)}
    served = study_day(store, coll, Clock(morning), random.Random(1), 0.85)
    first = set(served[: len(by_fsrs | below)])
    assert by_fsrs | below == first
    assert 0 < len(below) < len(by_fsrs | below) < 84


def test_the_same_week_without_a_plan_leaves_cards_unseen(utc_local_time):
    """Today's behaviour the plan fixes: at 5 new a day most cards are never seen."""
    store, coll, _ = run_week(Settings(new_per_day=5))
    states = store.cards()
    assert len(states) == 40  # 5 a day for 8 days, of 84
    plan = Plan.of(Settings(interview_date=INTERVIEW), ON_THE_DAY - timedelta(hours=1))
    assert plan is not None
    below = [c.id for c in coll.cards if plan.below(states.get(c.id) or CardState(c.id))]
    assert len(below) >= 84 - 40  # (the cards seen are reviewed on their day: at target)


def test_changing_or_clearing_the_date_loses_nothing(utc_local_time):
    store, coll, _ = run_week(Settings(new_per_day=5, interview_date=INTERVIEW), days=4)
    before = store.dump()
    friday = MONDAY + timedelta(days=4)
    for date in ("2026-03-06", None, "2026-04-01", INTERVIEW):
        store.save_settings(replace(store.settings(), interview_date=date))
        after = store.dump()
        assert after["cards"] == before["cards"]
        assert after["reviews"] == before["reviews"]
    # cleared, the queue is FSRS's own: what is due now, nothing brought forward
    store.save_settings(replace(store.settings(), interview_date=None))
    queue = build_queue(store, coll, friday)
    fsrs_due = {cid for cid, s in store.cards().items() if is_due(s, friday)}
    assert set(queue.due) == fsrs_due
    assert len(queue.new) == 5  # the setting again


def test_a_review_after_the_date_comes_on_the_last_day(utc_local_time):
    store = Store.memory()
    coll = week_collection(3)
    sunday = MONDAY + timedelta(days=6)
    far = CardState(
        id="alpha-00",
        deck="alpha",
        state=int(State.Review),
        step=None,
        stability=20.0,
        difficulty=5.0,
        due=MONDAY + timedelta(days=12),  # FSRS: after the interview
        last_review=MONDAY,
        reps=3,
    )
    store.put_card(far)
    store.put_card(replace(far, id="beta-00", deck="beta", last_review=sunday - timedelta(hours=1)))
    settings = Settings(interview_date=INTERVIEW)
    store.save_settings(settings)
    saturday = MONDAY + timedelta(days=5)
    assert "alpha-00" not in build_queue(store, coll, saturday).due
    queue = build_queue(store, coll, sunday)
    assert "alpha-00" in queue.due  # brought forward to the last day
    assert "beta-00" not in queue.due  # already studied that day, and above target
    counts = {row.name: row.due for row in deck_counts(store, coll, sunday)}
    assert counts["alpha"] == 1 and counts["beta"] == 0 and counts[""] == 1
    plan = Plan.of(settings, sunday)
    assert plan is not None and plan.due(far) == plan.last_day
    # after the date, FSRS's own due again
    after = Plan.of(settings, MONDAY + timedelta(days=8))
    assert after is not None and after.due(far) == far.due
    assert "alpha-00" not in build_queue(store, coll, MONDAY + timedelta(days=8)).due


def test_after_the_date_scheduling_is_plain_fsrs(week):
    store, coll, _ = week
    tuesday = ON_THE_DAY + timedelta(days=1)
    with_date = build_queue(store, coll, tuesday)
    store.save_settings(replace(store.settings(), interview_date=None))
    without = build_queue(store, coll, tuesday)
    assert with_date == without
    # a second date can be set
    store.save_settings(replace(store.settings(), interview_date="2026-03-20"))
    day = plan_day(store, coll, tuesday)
    assert day is not None and day.unseen == 0
    assert (
        day.line()
        == "All 84 cards seen: 2 reviews each before Fri 20 Mar, due ones brought forward"
    )


def test_stats_on_the_day_per_deck_and_tag(week):
    store, coll, _ = week
    out = plan_mod.on_the_day(store, coll, ON_THE_DAY - timedelta(hours=1))
    assert out is not None
    assert set(out.decks) == {"alpha", "beta"} and set(out.tags) == {"t0", "t1", "t2"}
    assert out.decks["alpha"].cards == 42 and out.decks["alpha"].seen == 42
    assert out.all.below_target == 0 and (out.all.lowest or 0) >= 0.9
    fresh = plan_mod.on_the_day(Store.memory(), coll, MONDAY, Settings(interview_date=INTERVIEW))
    assert fresh is not None and fresh.all.recall == 0.0
    assert fresh.all.below_target == 84
    assert plan_mod.on_the_day(Store.memory(), coll, MONDAY, Settings()) is None


def chain_collection() -> CachedCollection:
    """Three main cards with bullets; ``a`` and ``b`` open chains (a follow-up each)."""
    coll = ParsedDecks()
    info = DeckInfo(name="d", title="D", description="", file="d.yaml")
    coll.decks["d"] = info
    for cid, parent in (("a", None), ("b", None), ("c", None), ("a-fu", "a"), ("b-fu", "b")):
        kind = "follow-up" if parent else "recall"
        bullets = () if parent else (f"{cid} in a line",)
        coll.add(Card(cid, kind, f"{cid}?", f"{cid}.", "d", parent=parent, bullets=bullets))
        info.card_ids.append(cid)
    return from_parsed(coll)


def test_the_day_before_cram_and_mock_take_the_weakest_first(utc_local_time):
    from prep.engine.study.cram import cram_sheet, weakest_first
    from prep.engine.study.mock import pick_main
    from prep.tui.reports import cram_text as render

    store = Store.memory()
    coll = chain_collection()
    for cid, stability in (("a", 30.0), ("b", 1.0), ("c", 5.0), ("a-fu", 3.0), ("b-fu", 3.0)):
        store.put_card(
            CardState(
                id=cid,
                deck="d",
                state=int(State.Review),
                step=None,
                stability=stability,
                difficulty=5.0,
                due=MONDAY + timedelta(days=stability),
                last_review=MONDAY,
                reps=2,
            )
        )
    store.save_settings(Settings(interview_date=INTERVIEW))
    sunday = MONDAY + timedelta(days=6)
    sheet = weakest_first(cram_sheet(coll), store, sunday)
    assert [i.card_id for i in sheet[0].items] == ["b", "c", "a"]
    text = render(sheet)
    assert text.startswith("== Weakest first: predicted recall at the interview, Mon 9 Mar")
    plan = Plan.of(store.settings(), sunday)
    assert plan is not None
    b_recall = plan.retrievability(store.card("b"))
    assert f"[{100 * b_recall:.0f}% on the day] b?" in text
    scheduler = Scheduler(store.settings(), enable_fuzzing=False)
    for seed in range(5):  # the weakest root, whatever the seed
        assert pick_main(store, coll, scheduler, sunday, random.Random(seed)).id == "b"
    # earlier in the week: deck order, and the mock's usual pick (most overdue, then ...)
    wednesday = MONDAY + timedelta(days=2)
    assert weakest_first(cram_sheet(coll), store, wednesday) == cram_sheet(coll)
    assert pick_main(store, coll, scheduler, wednesday, random.Random(0)).id == "b"  # due
    assert pick_main(store, coll, scheduler, MONDAY, random.Random(0)).id in ("a", "b")


def test_the_plan_line_adds_up_with_what_was_studied_today(utc_local_time):
    """note13: the plan said "109 cards" beside stats' "9 of 116 seen": it counted the cards
    unseen when the day began (the 2 studied today twice) and said the day's limit, not what
    was left of it. Now the cards to see and the seen ones make the plan's cards, and "left
    today" is what the session serves (the All decks row)."""
    from prep.engine.store import Mark

    store = Store.memory()
    coll = week_collection()
    store.save_settings(Settings(new_per_day=5, interview_date=INTERVIEW))
    store.set_mark("alpha-03", Mark(suspended=True))
    clock = Clock(MONDAY)
    session = ReviewSession(store, coll, clock=clock, scheduler=Scheduler(store.settings(), seed=7))
    for _ in range(3):  # three new cards today
        clock.advance(seconds=20)
        session.rate(Rating.Good, duration_ms=20_000)
    day = plan_day(store, coll, clock.now)
    assert day is not None
    seen = len(store.seen_ids())
    assert seen == 3 and day.to_see + seen + day.hidden == day.cards == 84
    left = deck_counts(store, coll, clock.now)[0].new
    assert left == day.new_today - 3 == 11
    assert day.line() == (
        "80 of 84 cards to see (1 more suspended or buried) in 6 days: 14 new a day, "
        "11 left today, 2 reviews each before Mon 9 Mar"
    )


def test_a_suspended_card_is_not_planned_for_and_plan_decks_narrow_it(utc_local_time):
    from prep.engine.store import Mark

    store = Store.memory()
    coll = week_collection()
    store.save_settings(Settings(new_per_day=5, interview_date=INTERVIEW))
    store.set_mark("alpha-03", Mark(suspended=True))
    day = plan_day(store, coll, MONDAY)
    assert day is not None and day.cards == 84 and day.unseen == 83
    # on one deck: its cards only, and today's new cards come from it
    store.save_settings(replace(store.settings(), plan_decks=("beta",)))
    day = plan_day(store, coll, MONDAY)
    assert day is not None and (day.cards, day.unseen, day.new_today) == (42, 42, 7)
    queue = build_queue(store, coll, MONDAY)
    assert len(queue.new) == 7 and all(cid.startswith("beta-") for cid in queue.new)
    assert deck_counts(store, coll, MONDAY)[0].new == 7
    # a deck chosen on its own still serves its own new cards (outside the plan: at the
    # setting's 5, not the plan's 7: test_day17)
    alone = build_queue(store, coll, MONDAY, deck="alpha").new
    assert len(alone) == 5 and all(cid.startswith("alpha-") for cid in alone)


@pytest.mark.parametrize(
    ("zone", "accuracy"), [("UTC", 0.7), ("UTC", 0.95), ("America/New_York", 0.85)]
)
def test_the_plan_holds_for_other_learners_and_a_dst_week(monkeypatch, zone, accuracy):
    """New York changes to summer time on Sunday 8 March 2026: days are local days."""
    import time

    monkeypatch.setenv("TZ", zone)
    time.tzset()
    try:
        settings = Settings(new_per_day=5, interview_date=INTERVIEW)
        store, coll, per_day = run_week(settings, accuracy=accuracy, seed=3)
        plan = Plan.of(store.settings(), MONDAY + timedelta(days=7))
        assert plan is not None and plan.days_left == 0
        states = store.cards()
        assert len(states) == 84 and all(not s.is_new for s in states.values())
        assert min(plan.retrievability(s) for s in states.values()) >= 0.9
    finally:
        monkeypatch.undo()
        time.tzset()
