"""Progress statistics: what `prep stats` prints and the TUI's stats screen shows.

Everything is computed in SQL over indexed columns so it stays quick on a large log.
Days are the user's study days (local time, rolling over at 4am like Anki).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from prep.engine.deck import Collection
from prep.engine.scheduler import State
from prep.engine.storage import Store
from prep.engine.timeutil import day_start, fmt, plural, study_day_start

MATURE_DAYS = 21.0  # Anki's threshold for a "mature" card


def _day_modifier(now: datetime, rollover_hour: int = 4) -> str:
    """SQLite date() modifiers turning a UTC timestamp into the user's study day: local time
    with the UTC offset in force at that timestamp (not today's: DST), less the rollover."""
    return f"'localtime', '-{rollover_hour} hours'"


def study_day(now: datetime, rollover_hour: int = 4) -> date:
    return (day_start(now, rollover_hour) + timedelta(hours=12)).astimezone().date()


def compute(
    store: Store,
    collection: Collection,
    now: datetime,
    *,
    since: datetime | None = None,
    history_days: int = 30,
    forecast_days: int = 14,
) -> dict[str, Any]:
    conn = store.conn
    today_start = day_start(now)
    mod = _day_modifier(now)
    since_sql, since_args = ("", [])
    if since is not None:
        since_sql, since_args = (" AND reviewed_at >= ?", [fmt(since)])

    total = conn.execute(
        "SELECT count(*) FROM reviews WHERE 1=1" + since_sql, since_args
    ).fetchone()[0]
    today = store.count_reviews(today_start)

    # True retention: share of reviews of cards in the Review state that were not "Again".
    def retention(extra: str, args: list) -> dict[str, Any]:
        n, passed = conn.execute(
            "SELECT count(*), coalesce(sum(rating > 1), 0) FROM reviews WHERE prev_state = ?"
            + extra,
            [int(State.Review), *args],
        ).fetchone()
        return {"reviews": n, "passed": passed, "rate": (passed / n) if n else None}

    month_ago = fmt(study_day_start(now, -30))
    true_retention = {
        "all": retention(since_sql, since_args),
        "last_30_days": retention(" AND reviewed_at >= ?", [month_ago]),
    }

    # Reviews per study day for the last `history_days` days (oldest first).
    today_date = study_day(now)
    first_day = today_date - timedelta(days=history_days - 1)
    rows = conn.execute(
        f"SELECT date(reviewed_at, {mod}) AS d, count(*) FROM reviews WHERE reviewed_at >= ? GROUP BY d",
        [fmt(study_day_start(now, -history_days))],
    ).fetchall()
    per_day_map = {r[0]: r[1] for r in rows}
    per_day = [
        {
            "date": (first_day + timedelta(days=i)).isoformat(),
            "reviews": per_day_map.get((first_day + timedelta(days=i)).isoformat(), 0),
        }
        for i in range(history_days)
    ]

    # Streak: consecutive study days with at least one review, ending today (or yesterday).
    # One indexed probe per day of the streak, instead of a scan of the whole log.
    def studied(day_offset: int) -> bool:
        start, end = study_day_start(now, -day_offset), study_day_start(now, 1 - day_offset)
        return (
            conn.execute(
                "SELECT 1 FROM reviews WHERE reviewed_at >= ? AND reviewed_at < ? LIMIT 1",
                [fmt(start), fmt(end)],
            ).fetchone()
            is not None
        )

    offset = 0 if studied(0) else 1
    streak = 0
    while studied(offset + streak):
        streak += 1

    # Due counts and forecast (removed cards are not served). One grouped, indexed query.
    def due_before(t: datetime) -> int:
        return conn.execute(
            "SELECT count(*) FROM cards WHERE removed = 0 AND due <= ?", [fmt(t)]
        ).fetchone()[0]

    horizon = study_day_start(now, max(forecast_days, 7))
    by_day = dict(
        conn.execute(
            f"SELECT max(date(due, {mod}), ?) AS d, count(*) FROM cards WHERE removed = 0 AND due <= ? GROUP BY d",
            [today_date.isoformat(), fmt(horizon)],
        ).fetchall()
    )  # overdue cards count as due today
    days_ahead = [
        (today_date + timedelta(days=i)).isoformat() for i in range(max(forecast_days, 7))
    ]
    forecast = [{"date": d, "due": by_day.get(d, 0)} for d in days_ahead[:forecast_days]]
    due = {
        "now": due_before(now),
        "today": by_day.get(days_ahead[0], 0),
        "tomorrow": by_day.get(days_ahead[1], 0),
        "next_7_days": sum(by_day.get(d, 0) for d in days_ahead[:7]),
    }

    # Mastery per deck and per tag: seen / mature (stability >= 21 days) over the deck's cards.
    per_deck = {
        r[0]: (r[1], r[2])
        for r in conn.execute(
            "SELECT deck, count(*), sum(coalesce(stability, 0) >= ?) FROM cards WHERE removed = 0 GROUP BY deck",
            [MATURE_DAYS],
        )
    }

    def mastery(n_cards: int, seen: int, mature: int) -> dict[str, Any]:
        return {
            "cards": n_cards,
            "seen": seen,
            "mature": mature,
            "mastery": (mature / n_cards) if n_cards else 0.0,
        }

    decks = {
        name: {"title": info.title, **mastery(len(info.card_ids), *per_deck.get(name, (0, 0)))}
        for name, info in collection.decks.items()
    }
    tag_cards: dict[str, list[str]] = {}
    for card in collection.cards:
        for tag in card.tags:
            tag_cards.setdefault(tag, []).append(card.id)
    tagged = store.cards({cid for ids in tag_cards.values() for cid in ids})
    tags = {}
    for tag, ids in sorted(tag_cards.items()):
        states = [tagged[c] for c in ids if c in tagged and not tagged[c].removed]
        tags[tag] = mastery(
            len(ids), len(states), sum((s.stability or 0) >= MATURE_DAYS for s in states)
        )

    leeches = [
        r[0]
        for r in conn.execute("SELECT id FROM cards WHERE leech = 1 AND removed = 0 ORDER BY id")
    ]
    changed = [
        r[0]
        for r in conn.execute("SELECT id FROM cards WHERE changed = 1 AND removed = 0 ORDER BY id")
    ]

    # Demos verified: the latest run of each demo.
    demo_rows = conn.execute(
        "SELECT name, device, device_name, scale, passed, seconds, ran_at FROM demo_runs "
        "WHERE id IN (SELECT max(id) FROM demo_runs GROUP BY name) ORDER BY name"
    ).fetchall()
    demos = [
        {
            "name": r[0],
            "device": r[1],
            "device_name": r[2],
            "scale": r[3],
            "passed": bool(r[4]),
            "seconds": r[5],
            "ran_at": r[6],
        }
        for r in demo_rows
    ]

    return {
        "now": fmt(now),
        "since": fmt(since),
        "reviews": {"today": today, "total": total},
        "true_retention": true_retention,
        "desired_retention": store.settings().desired_retention,
        "due": due,
        "forecast": forecast,
        "per_day": per_day,
        "streak_days": streak,
        "cards": {
            "total": len(collection),
            "seen": conn.execute("SELECT count(*) FROM cards WHERE removed = 0").fetchone()[0],
        },
        "decks": decks,
        "tags": tags,
        "leeches": leeches,
        "changed": changed,
        "demos": {"verified": sorted(d["name"] for d in demos if d["passed"]), "latest": demos},
    }


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"


def render(stats: dict[str, Any]) -> str:
    """The human form of `prep stats`."""
    r = stats["reviews"]
    tr = stats["true_retention"]
    d = stats["due"]
    since = f" since {stats['since'][:10]}" if stats.get("since") else ""
    lines = [
        f"Reviews      today {r['today']}   total{since} {r['total']}   streak {plural(stats['streak_days'], 'day')}",
        f"Retention    true{since} {_pct(tr['all']['rate'])} over {plural(tr['all']['reviews'], 'review')}"
        f"   last 30 days {_pct(tr['last_30_days']['rate'])}   target {_pct(stats['desired_retention'])}",
        f"Due          now {d['now']}   today {d['today']}   tomorrow {d['tomorrow']}   next 7 days {d['next_7_days']}",
        f"Cards        {stats['cards']['seen']} of {stats['cards']['total']} seen",
        "",
        f"{'Deck':<22}{'cards':>6}{'seen':>6}{'mature':>8}{'mastery':>9}",
    ]
    for name, m in stats["decks"].items():
        lines.append(
            f"{name:<22}{m['cards']:>6}{m['seen']:>6}{m['mature']:>8}{_pct(m['mastery']):>9}"
        )
    if stats["leeches"]:
        lines += ["", f"Leeches      {', '.join(stats['leeches'])}"]
    if stats["changed"]:
        lines += [f"Edited       {', '.join(stats['changed'])} (text changed since last review)"]
    demos = stats["demos"]
    lines += ["", f"Demos        {len(demos['verified'])} verified"]
    for run in demos["latest"]:
        mark = "PASS" if run["passed"] else "FAIL"
        lines.append(
            f"  {mark}  {run['name']:<22} {run['device']:<5} {run['scale'] or '':<6} {run['ran_at'][:16]}"
        )
    return "\n".join(lines)
