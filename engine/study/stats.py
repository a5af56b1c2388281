"""Progress statistics: what `prep stats` prints and the TUI's stats screen shows.

Everything is asked of the store, whose queries run over indexed columns so it stays quick
on a large log.
Days are the user's study days (local time, rolling over at 4am like Anki).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime, timedelta

from prep.engine.store import Store
from prep.engine.study import plan as plan_mod
from prep.engine.study.collection import Cards
from prep.engine.study.forecast import due_per_day
from prep.engine.study.session import deck_counts
from prep.engine.study.statsresult import (
    CardCounts,
    DeckMastery,
    DemoRun,
    Demos,
    Due,
    DueOn,
    MarkCounts,
    Marked,
    Mastery,
    Retention,
    Reviews,
    ReviewsOn,
    Session,
    Stats,
    TrueRetention,
)
from prep.engine.timeutil import day_start, fmt, study_day_start, today_span

MATURE_DAYS = 21.0  # Anki's threshold for a "mature" card


def study_day(now: datetime, rollover_hour: int = 4) -> date:
    return (day_start(now, rollover_hour) + timedelta(hours=12)).astimezone().date()


def streak_days(store: Store, now: datetime) -> int:
    """Consecutive study days with at least one review, ending today (or yesterday, when
    today has none yet): one indexed probe per day of the streak."""

    def studied(day_offset: int) -> bool:
        start, end = study_day_start(now, -day_offset), study_day_start(now, 1 - day_offset)
        return store.reviewed_between(start, end)

    offset = 0 if studied(0) else 1
    streak = 0
    while studied(offset + streak):
        streak += 1
    return streak


def today(store: Store, now: datetime) -> dict[str, int]:
    """Reviews today and the streak: the home screen's line, without the rest of compute."""
    return {"reviews": store.count_reviews(*today_span(now)), "streak": streak_days(store, now)}


def compute(
    store: Store,
    collection: Cards,
    now: datetime,
    *,
    since: datetime | None = None,
    history_days: int = 30,
    forecast_days: int = 14,
    known_demos: Iterable[str] | None = None,
) -> Stats:
    """Every number `prep stats` shows. ``known_demos``: the names of the demos this prep has
    (the caller's registry; engine knows no demos). A run of any other name (say, imported
    from a file) is listed as unknown and never counted as verified."""

    def retention(start: datetime | None, end: datetime | None = None) -> Retention:
        n, passed = store.retention_counts(start, end)
        return Retention(reviews=n, passed=passed, rate=(passed / n) if n else None)

    # Reviews per study day for the last `history_days` days (oldest first).
    today_date = study_day(now)
    first_day = today_date - timedelta(days=history_days - 1)
    counts = store.reviews_per_interval(
        [study_day_start(now, i - history_days + 1) for i in range(history_days + 1)]
    )
    days = [(first_day + timedelta(days=i)).isoformat() for i in range(history_days)]
    per_day = [ReviewsOn(date=d, reviews=n) for d, n in zip(days, counts, strict=True)]

    # today's session: new / learning / due from the one source home and the review bar use
    today_row = deck_counts(store, collection, now, per_deck=False)[0]

    # Due counts and forecast by study day, as the queue serves them (engine/study/forecast.py:
    # overdue cards today, suspended on no day, buried on the day their bury ends)
    n_ahead = max(forecast_days, 7)
    days_ahead = [(today_date + timedelta(days=i)).isoformat() for i in range(n_ahead)]
    by_day = dict(zip(days_ahead, due_per_day(store, collection, now, n_ahead), strict=True))
    forecast = [DueOn(date=d, due=by_day.get(d, 0)) for d in days_ahead[:forecast_days]]
    due = Due(
        # what the session serves now, before today's review limit (home shows it capped)
        now=today_row.steps + today_row.waiting,
        today=by_day.get(days_ahead[0], 0),
        tomorrow=by_day.get(days_ahead[1], 0),
        next_7_days=sum(by_day.get(d, 0) for d in days_ahead[:7]),
    )

    # Mastery per deck and per tag: seen / mature (stability >= 21 days) over the deck's cards.
    per_deck = store.deck_progress(MATURE_DAYS)

    def mastery(n_cards: int, seen: int, mature: int) -> Mastery:
        share = (mature / n_cards) if n_cards else 0.0
        return Mastery(cards=n_cards, seen=seen, mature=mature, mastery=share)

    sizes = collection.deck_sizes()  # (counted, not read, over the deck cache)
    decks = {}
    for name, info in collection.decks.items():
        m = mastery(sizes.get(name, 0), *per_deck.get(name, (0, 0)))
        decks[name] = DeckMastery(info.title, m.cards, m.seen, m.mature, m.mastery)
    # per tag in SQL when the decks come from the cache (no card is built)
    progress = collection.tag_progress(store, MATURE_DAYS)
    tags = {tag: mastery(*progress[tag]) for tag in sorted(progress)}

    # Demos verified: the latest run of each demo.
    known = None if known_demos is None else set(known_demos)
    demos = [
        DemoRun(
            name=run["name"],
            device=run["device"],
            device_name=run["device_name"],
            scale=run["scale"],
            passed=run["passed"],
            seconds=run["seconds"],
            ran_at=run["ran_at"],
            known=known is None or run["name"] in known,
        )
        for run in store.demo_runs(latest=True)
    ]

    return Stats(
        now=fmt(now),
        since=fmt(since),
        session=Session(new=today_row.new, learning=today_row.learning, due=today_row.due),
        reviews=Reviews(
            today=store.count_reviews(*today_span(now)), total=store.count_reviews(since)
        ),
        true_retention=TrueRetention(
            all=retention(since),
            # up to today's end: a review dated after it (the clock went back) is its day's
            last_30_days=retention(study_day_start(now, -30), today_span(now)[1]),
        ),
        desired_retention=store.settings().desired_retention,
        due=due,
        forecast=forecast,
        per_day=per_day,
        streak_days=streak_days(store, now),
        # the live cards with progress are those deck_progress grouped (store.count_cards())
        cards=CardCounts(total=len(collection), seen=sum(seen for seen, _ in per_deck.values())),
        marks=MarkCounts(**store.mark_counts(now)),  # suspended, buried, flagged
        marked=marked_ids(store),  # the suspended and the flagged cards' ids
        decks=decks,
        tags=tags,
        leeches=store.flagged("leech"),
        changed=store.flagged("changed"),
        demos=Demos(verified=sorted(d.name for d in demos if d.passed and d.known), latest=demos),
        # predicted recall at the interview per deck and tag (None without a date ahead)
        interview=plan_mod.on_the_day(store, collection, now),
    )


def marked_ids(store: Store) -> Marked:
    """The ids of the suspended and of the flagged cards (`prep marks` lists them all)."""
    marks = store.marks()
    return Marked(
        suspended=[cid for cid, m in marks.items() if m.suspended],
        flagged=[cid for cid, m in marks.items() if m.flagged],
    )
