"""The study plan that ends on the interview day (`prep config interview_date YYYY-MM-DD`).

With a date set, the days before it are planned backwards from it:

- every card the plan covers (the decks in ``plan_decks``, every deck when unset; cards up to
  ``plan_level``) is introduced early enough to be studied on at least ``REVIEW_DAYS`` study
  days before the interview: new cards come in over the days up to the one before the last,
  at least ``new_per_day`` a day and more when the unseen cards need it, none on the day
  itself ("study more" still adds); a deck outside ``plan_decks`` studied alone keeps the
  setting;
- a review FSRS would put on or after the interview day is brought forward to the last useful
  day, the study day before the interview (unless the card was already studied that day);
- a card (a review or a learning card) whose retrievability at the interview is still below
  the desired retention after that (it lapsed on the last day, say) is due on the morning of
  the day itself. Repeating it the same day would not do: FSRS's same-day update barely moves
  stability (a Good adds about 5%), so only a later review raises the recall at the
  interview. A card failed that morning comes back after ``AGAIN_ON_THE_DAY`` until it is
  above target (hours before the interview, a small stability is enough).

Retrievability "on the day" is FSRS's own forgetting curve (the card's stability, the
scheduler's decay) at noon local time on the interview date, in fractional days.

Nothing here is stored: the card states stay FSRS's own and the plan is a view on which of
them are due. Changing or clearing the date changes the view only, and after the date
scheduling is plain FSRS on the same states. Everything takes ``now``: the clock is the
caller's (tests inject one).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from datetime import date, datetime, time, timedelta
from typing import TYPE_CHECKING

from fsrs.scheduler import DEFAULT_PARAMETERS

from prep.engine.study.due import reviews_until
from prep.engine.study.scheduler import LEVELS, CardState, Settings, State, interview_day
from prep.engine.textsafe import count
from prep.engine.timeutil import day_start, study_day_start, to_utc, today_span

if TYPE_CHECKING:
    from prep.engine.store import Store
    from prep.engine.study.collection import Cards
    from prep.engine.study.statsresult import OnTheDay, Recall

_Date = date  # (a field of Plan is named date)
REVIEW_DAYS = 2  # study days (the introduction's included) each card gets before the day
INTERVIEW_HOUR = 12  # local time of day at which "retrievability on the day" is measured
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
AGAIN_ON_THE_DAY = timedelta(minutes=10)  # as a relearning step
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def forgetting_curve(stability: float, elapsed_days: float, decay: float) -> float:
    """FSRS-6's power forgetting curve, as fsrs computes it (``decay`` is parameter w20):
    R = (1 + factor · t / S) ^ -decay, with factor chosen so that R = 0.9 when t = S."""
    factor = 0.9 ** (-1 / decay) - 1
    return (1 + factor * max(0.0, elapsed_days) / stability) ** -decay


def study_date(now: datetime) -> date:
    """The local calendar date of the study day holding ``now`` (days roll over at 4am)."""
    return (day_start(now) + timedelta(hours=12)).astimezone().date()


# The furthest ahead an interview date is taken (`prep config interview_date`): a year. The plan
# spreads the unseen cards over the days left and brings reviews to the last day; a year ahead
# its pace is under one new card a day for the 116 bundled cards (the default new_per_day is
# 20), so it would change nothing for months, and a date further out is most likely a slip of
# the year (2099 for 2026). A date stored before this bound (an older database, a synced
# setting) is still read: its plan line says it is too far to plan (PlanDay.line).
PLAN_DAYS_AHEAD = 365


def date_problem(day: date, today: date) -> str | None:
    """Why an interview on ``day`` cannot be set on the study day ``today`` (None: it can): a
    date in the past, or more than PLAN_DAYS_AHEAD days ahead; said with what is taken."""
    last = today + timedelta(days=PLAN_DAYS_AHEAD)
    taken = f"give a date from today ({today}) to a year ahead ({last}), or none to clear it"
    if day < today:
        return f"{day} is in the past; {taken}"
    if day > last:
        return f"{day} is {days_text((day - today).days)} ahead, more than a year; {taken}"
    return None


def short_date(day: date) -> str:
    """``Fri 12 Dec`` (English names whatever the locale)."""
    return f"{WEEKDAYS[day.weekday()][:3]} {day.day} {MONTHS[day.month - 1]}"


def days_text(n: int) -> str:
    return "1 day" if n == 1 else f"{n} days"


def interview_header(when: date, days_left: int) -> str:
    """``Interview: Fri 12 Dec, 4 days`` (``today`` on the day; the year when it is not this
    study day's): one wording for home, stats, --plain and `prep config`."""
    said = short_date(when)
    if when.year != (when - timedelta(days=days_left)).year:
        said += f" {when.year}"
    if days_left == 0:
        return f"Interview: {said}, today"
    if days_left < 0:
        return f"Interview: {said}, {days_text(-days_left)} ago"
    return f"Interview: {said}, {days_text(days_left)}"


def new_limit_text(per_day: int, done: int, extra: int = 0, interview_day: bool = False) -> str:
    """Today's new-card limit and what is left of it, said the same way everywhere (home,
    stats, the plan, `prep config`, --plain): ``20 new a day, 18 left today``; with "study
    more" today, ``20 new a day + 10 today, 28 left today``. ``per_day``: the day's limit
    (the setting, or the plan's), ``done``: new cards studied today. On the interview day the
    plan's limit is none: ``0 new on the day, 0 left``; with "study more", ``0 new on the day
    + 10 more, 10 left``."""
    left = max(0, per_day + extra - done)
    if interview_day:  # (after "Interview: Mon 9 Mar, today · ": "today" is said there, once)
        more = f" + {extra} more" if extra else ""
        return f"{per_day} new on the day{more}, {left} left"
    more = f" + {extra} today" if extra else ""
    return f"{per_day} new a day{more}, {left} left today"


@dataclass(frozen=True)
class Plan:
    """The interview plan as seen at ``now`` (the study day ``today``)."""

    now: datetime
    date: _Date  # the interview's date
    today: _Date  # the study day holding now
    moment: datetime  # when "on the day" is measured (noon local on the date), UTC
    day_start: datetime  # the interview's study day starts (UTC)
    last_day: datetime  # the study day before it starts (UTC)
    target: float  # desired retention
    decay: float  # FSRS's w20
    decks: frozenset[str] | None  # None: every deck
    level: str  # the highest level covered

    @classmethod
    def of(cls, settings: Settings, now: datetime) -> Plan | None:
        """The plan for ``settings``' interview date, or None when no date is set."""
        if settings.interview_date is None:
            return None
        day = interview_day(settings.interview_date)
        today = study_date(now)
        offset = (day - today).days
        params = settings.parameters if settings.parameters is not None else DEFAULT_PARAMETERS
        noon = datetime.combine(day, time(INTERVIEW_HOUR)).astimezone()  # local, then UTC
        return cls(
            now=to_utc(now),
            date=day,
            today=today,
            moment=to_utc(noon),
            day_start=study_day_start(now, offset),
            last_day=study_day_start(now, offset - 1),
            target=settings.desired_retention,
            decay=float(params[20]),
            decks=None if settings.plan_decks is None else frozenset(settings.plan_decks),
            level=settings.plan_level,
        )

    def on(self, collection: Cards) -> Plan:
        """This plan on the decks loaded here. A deck ``plan_decks`` names that is not loaded
        (its folder not given this time, or the setting synced from a machine with other decks)
        is left out; when none of them is, the plan covers every deck, as with ``plan_decks``
        unset: never a plan over no card (that served no new card at all, even with --new)."""
        if self.decks is None:
            return self
        here = self.decks & set(collection.decks)
        return self if here == self.decks else replace(self, decks=frozenset(here) or None)

    def at(self, now: datetime) -> Plan:
        """This plan seen at a later ``now``: its study day and whether the interview is still
        ahead read again (the interview's day and moment are fixed times: kept)."""
        return replace(self, now=to_utc(now), today=study_date(now))

    @property
    def until(self) -> datetime:
        """When this view of the plan goes stale: the next study day's start (4 am: days
        left), or the interview's moment first while it is ahead (``before``)."""
        end = study_day_start(self.now, 1)
        return min(end, self.moment) if self.before else end

    # --- where we are ---------------------------------------------------------------------

    @property
    def days_left(self) -> int:
        """Study days before the interview, today included (0 on the day, < 0 after)."""
        return (self.date - self.today).days

    @property
    def before(self) -> bool:
        """Whether the interview is still ahead (the plan shapes the queue only until then)."""
        return self.now < self.moment

    @property
    def bringing_forward(self) -> bool:
        """The day before the interview and its morning: reviews come early."""
        return self.before and self.now >= self.last_day

    @property
    def intro_days(self) -> int:
        """The days left on which new cards come in: all but the last REVIEW_DAYS - 1 of
        them (at least today while the interview is a day or more ahead; none on the day)."""
        return max(1, self.days_left - (REVIEW_DAYS - 1)) if self.days_left > 0 else 0

    def new_per_day(self, unseen_at_day_start: int) -> int:
        """New cards a day that introduce every unseen card in the introduction days (the
        day itself adds none: that morning is for the weakest cards, not new ones)."""
        return math.ceil(unseen_at_day_start / self.intro_days) if self.intro_days else 0

    @property
    def cramming(self) -> bool:
        """The day before the interview and the day itself: cram and mock go weakest first."""
        return 0 <= self.days_left <= 1

    # --- which cards ----------------------------------------------------------------------

    def covers(self, deck: str, level: str | None = None) -> bool:
        """Whether a card of ``deck`` at ``level`` (None: core) is in the plan."""
        if self.decks is not None and deck not in self.decks:
            return False
        return LEVELS.index(level or "core") <= LEVELS.index(self.level)

    def covered_ids(self, collection: Cards) -> list[str]:
        """The ids of the collection's cards the plan covers, in deck order."""
        out = []
        for name, info in collection.decks.items():
            if self.decks is not None and name not in self.decks:
                continue
            if self.level == LEVELS[-1]:  # every level: no card needs to be read
                out += info.card_ids
            else:
                out += [
                    cid
                    for cid in info.card_ids
                    if (card := collection.get(cid)) is not None
                    and self.covers(name, getattr(card, "level", None))
                ]
        return out

    # --- FSRS on the day ------------------------------------------------------------------

    def retrievability(self, state: CardState | None) -> float:
        """FSRS's predicted recall at the interview (0 for a card never studied)."""
        if state is None or state.is_new or not state.stability or state.last_review is None:
            return 0.0
        elapsed = (self.moment - state.last_review).total_seconds() / 86400
        return forgetting_curve(state.stability, elapsed, self.decay)

    def due(self, state: CardState) -> datetime | None:
        """When the plan serves a covered card: FSRS's due, except that a review due on or
        after the interview day comes on the day before it (when it was not studied that
        day), and one still below target at the interview comes on the morning of the day
        (again after ``AGAIN_ON_THE_DAY`` while it stays below). A learning or relearning
        step is served by the same two rules (as Anki's review ahead takes learning cards:
        its search prop:due<=N), still a learning card: one that lands on or after the
        interview day comes the day before, and one still below target (rated on the last
        day onto a step after the interview, say) on the morning; a sooner step is kept."""
        due = state.due
        studied = state.last_review
        if not self.before or due is None or studied is None:
            return due
        if due >= self.day_start and studied < self.last_day:
            due = self.last_day
        if self.below(state):  # (a learning step too: its step, when sooner, is kept)
            again = self.day_start if studied < self.day_start else studied + AGAIN_ON_THE_DAY
            due = min(due, again)
        return due

    def below(self, state: CardState) -> bool:
        return self.retrievability(state) < self.target

    # --- what the learner reads ----------------------------------------------------------

    def header(self) -> str:
        """``Interview: Fri 12 Dec, 4 days`` (interview_header)."""
        return interview_header(self.date, self.days_left)

    def before_text(self) -> str:
        """``before Friday`` within a week, ``before Fri 19 Dec`` further out."""
        if self.days_left <= 6:
            return f"before {WEEKDAYS[self.date.weekday()]}"
        year = f" {self.date.year}" if self.date.year != self.today.year else ""
        return f"before {short_date(self.date)}{year}"


@dataclass(frozen=True)
class PlanDay:
    """Today's share of the plan: how many new cards and why."""

    plan: Plan
    cards: int  # cards the plan covers
    unseen: int  # of them, not introduced when today began
    per_day: int  # new cards a day the plan needs (from today on)
    setting: int  # the new_per_day setting
    introduced: int = 0  # new cards studied today
    extra: int = 0  # new cards added to today's limit with "study more"
    hidden: int = 0  # unseen cards suspended or buried (not in ``unseen``: never served)

    @property
    def to_see(self) -> int:
        """Cards of the plan not seen yet (suspended and buried ones aside)."""
        return max(0, self.unseen - self.introduced)

    def of_cards(self) -> str:
        """``114 of 116 cards to see`` (and the hidden ones named): with the seen ones, the
        plan's cards (stats' "2 of 116 seen")."""
        hidden = f" ({self.hidden} more suspended or buried)" if self.hidden else ""
        return f"{self.to_see} of {count(self.cards, 'card')} to see{hidden}"

    @property
    def new_today(self) -> int:
        """Today's new-card limit: the setting, or more when the plan needs more; none on the
        interview day itself (its morning is for the weakest cards: "study more" still adds)."""
        return 0 if self.plan.days_left == 0 else max(self.setting, self.per_day)

    @property
    def raised(self) -> bool:
        return self.per_day > self.setting

    def line(self) -> str:
        """``106 of 116 cards to see in 3 days: 36 new a day, 26 left today, 2 reviews each
        before Friday`` (the cards to see and the seen ones add up to the plan's cards; the
        limit and what is left today are said as everywhere: new_limit_text)."""
        p = self.plan
        if p.days_left > PLAN_DAYS_AHEAD:  # (set before the bound, or synced: date_problem)
            return (
                "more than a year away, too far to plan: `prep config interview_date` sets a "
                "nearer one"
            )
        if p.days_left == 0:
            # after "Interview: Tue 8 Dec, today · " (heading): the day's limit, none by the plan
            limit = new_limit_text(0, self.introduced, self.extra, interview_day=True)
            return f"the weakest cards first: {limit} (c crams them, m runs a mock interview)"
        reviews = f"{REVIEW_DAYS} reviews each {p.before_text()}"
        if self.to_see == 0:
            seen = f"All {count(self.cards, 'card')} seen" if not self.hidden else self.of_cards()
            return f"{seen}: {reviews}, due ones brought forward"
        if p.days_left < REVIEW_DAYS:  # the day before: no second study day is left for them
            weekday = WEEKDAYS[p.date.weekday()]
            return (
                f"{self.of_cards()} today, once each {p.before_text()}; the weakest again on "
                f"{weekday} morning"
            )
        days = p.intro_days
        per_day = self.new_today if days > 1 else self.unseen
        limit = new_limit_text(per_day, self.introduced, self.extra)
        return f"{self.of_cards()} in {days_text(days)}: {limit}, {reviews}"

    def heading(self) -> str:
        """``Interview: Fri 12 Dec, 4 days · 106 of 116 cards to see in 3 days: ...``: the
        plan in one line, as home, --plain, `prep config` and `prep stats` say it."""
        return f"{self.plan.header()} · {self.line()}"

    def why(self) -> str | None:
        """Why today's new cards are more than the setting, or None when they are not. Said
        after line(): the number it already says ("36 new a day") is not said again."""
        if not self.raised:
            return None
        times = "twice" if self.plan.days_left >= REVIEW_DAYS else "once"
        when = "today" if self.plan.days_left < REVIEW_DAYS else "a day"  # (none after it)
        reason = f"every card seen {times} {self.plan.before_text()}"
        line = self.line()
        if f"{self.per_day} new a day" in line or " to see today" in line:
            # (the line says how many: "36 new a day", "84 of 84 cards to see today")
            return f"More than new_per_day ({self.setting}) {when}: {reason}"
        return f"{self.per_day} new {when}, not {self.setting} (new_per_day): {reason}"


def plan_day(
    store: Store, collection: Cards, now: datetime, settings: Settings | None = None
) -> PlanDay | None:
    """Today's share of the plan, or None when no interview is set or it is past."""
    settings = settings or store.settings()
    plan = Plan.of(settings, now)
    if plan is None or plan.days_left < 0:
        return None
    plan = plan.on(collection)
    hidden = store.hidden_ids(now)  # suspended or buried (a few): never served as new
    if plan.level == LEVELS[-1]:  # whole decks: two grouped counts, no id is read
        seen_in = store.seen_per_deck()
        sizes = {d: n for d, n in collection.deck_sizes().items() if plan.covers(d)}
        cards = sum(sizes.values())
        unseen = sum(n - seen_in.get(d, 0) for d, n in sizes.items())
        stored = store.cards(hidden)
        hidden_unseen = sum(
            1
            for cid in hidden
            if cid not in stored
            and (card := collection.get(cid)) is not None
            and plan.covers(card.deck)
        )
        unseen -= hidden_unseen
    else:
        ids = plan.covered_ids(collection)
        seen = store.seen_ids()
        cards, unseen = len(ids), sum(1 for cid in ids if cid not in seen and cid not in hidden)
        hidden_unseen = sum(1 for cid in ids if cid in hidden and cid not in seen)
    introduced_today = store.count_reviews(*today_span(now), new_only=True)
    per_day = plan.new_per_day(unseen + introduced_today)
    from prep.engine.study.queue import extra_new_today  # (queue imports this module)

    return PlanDay(
        plan,
        cards,
        unseen + introduced_today,
        per_day,
        settings.new_per_day,
        introduced=introduced_today,
        extra=extra_new_today(store, now),
        hidden=hidden_unseen,
    )


def new_per_day(
    store: Store, collection: Cards, now: datetime, settings: Settings, deck: str | None = None
) -> int:
    """Today's new-card limit before "study more" for ``deck`` (None: all decks together):
    the setting, raised by the plan, none on the interview day. A deck outside ``plan_decks``
    studied on its own follows the setting: the plan covers only its decks."""
    return day_limit(store, collection, now, settings, deck)[0]


def day_limit(
    store: Store, collection: Cards, now: datetime, settings: Settings, deck: str | None = None
) -> tuple[int, bool, bool]:
    """``new_per_day``'s limit, whether it is the interview day's (none by the plan), and
    whether it is the plan's at all (False: the setting's, as for a deck the plan leaves out)."""
    if settings.interview_date is None or outside_plan(settings, now, collection, deck):
        return settings.new_per_day, False, False
    day = plan_day(store, collection, now, settings)
    if day is None:
        return settings.new_per_day, False, False
    return day.new_today, day.plan.days_left == 0, True


def outside_plan(settings: Settings, now: datetime, collection: Cards, deck: str | None) -> bool:
    """Whether ``deck`` (None: all decks, never outside) is one ``plan_decks`` leaves out."""
    if deck is None:
        return False
    decks = plan_decks_here(settings, now, collection)
    return decks is not None and deck not in decks


def plan_decks_here(
    settings: Settings, now: datetime, collection: Cards
) -> AbstractSet[str] | None:
    """The decks of ``plan_decks`` that ``collection`` holds while a plan is set (None: no
    plan, or one on every deck): a deck not among them is outside the plan."""
    if settings.plan_decks is None:
        return None
    plan = Plan.of(settings, now)
    return None if plan is None else plan.on(collection).decks


def new_card_decks(
    settings: Settings, now: datetime, collection: Cards, among: AbstractSet[str] | None
) -> AbstractSet[str] | None:
    """The decks today's new cards come from (all decks together): those of ``among``
    (None: every deck) that an interview plan on some decks covers, while it is ahead."""
    plan = Plan.of(settings, now) if settings.plan_decks is not None else None
    if plan is None or not plan.before:
        return among
    decks = plan.on(collection).decks
    if decks is None:
        return among
    return decks if among is None else decks & set(among)


def brought_forward(
    store: Store,
    collection: Cards,
    now: datetime,
    *,
    decks: Iterable[str] | None = None,
    hidden: set[str] | None = None,
    settings: Settings | None = None,
) -> list[str]:
    """The cards the plan makes due now that FSRS does not (on the last day before the
    interview only: brought forward, or topped up), lowest retrievability on the day first:
    reviews, and learning steps that land on or after the interview day (``Plan.due``; the
    queue and home count those as learning: ``learning_of``)."""
    settings = settings or store.settings()
    plan = Plan.of(settings, now)
    if plan is None or not plan.bringing_forward:
        return []
    plan = plan.on(collection)
    wanted = None if decks is None else set(decks)
    ids = [cid for cid in plan.covered_ids(collection) if not hidden or cid not in hidden]
    until = reviews_until(now)
    states = [
        s
        for s in store.cards(ids).values()
        if not s.removed
        and (wanted is None or s.deck in wanted)
        and isinstance(s.due, datetime)
        and s.due > until  # not due today by FSRS (due by day: engine/study/due.py)
        and (due := plan.due(s)) is not None
        and due <= now
    ]
    states.sort(key=plan.retrievability)
    return [s.id for s in states]


def due_of(plan: Plan | None, collection: Cards, state: CardState) -> datetime | None:
    """When a card is served: the plan's due for a covered card, FSRS's otherwise."""
    if plan is None or not plan.before:
        return state.due
    card = collection.get(state.id)
    if card is None or not plan.covers(card.deck, getattr(card, "level", None)):
        return state.due
    return plan.due(state)


def on_the_day(
    store: Store, collection: Cards, now: datetime, settings: Settings | None = None
) -> OnTheDay | None:
    """`prep stats`' "on the day" part: per deck and tag, FSRS's predicted recall at the
    interview if nothing more were studied (unseen cards count as 0), and how many cards
    are below the desired retention. None without an interview ahead (or today)."""
    from prep.engine.study.statsresult import OnTheDay, Recall  # (stats only: not on the
    # way to the first card)

    settings = settings or store.settings()
    day = plan_day(store, collection, now, settings)
    if day is None:
        return None
    plan = day.plan
    ids = plan.covered_ids(collection)
    states = {cid: s for cid, s in store.cards(ids).items() if not s.removed}
    r = {cid: plan.retrievability(states.get(cid)) for cid in ids}

    def group(members: list[str]) -> Recall:
        values = [r[cid] for cid in members]
        return Recall(
            cards=len(members),
            seen=sum(1 for cid in members if cid in states and not states[cid].is_new),
            recall=sum(values) / len(values) if values else None,
            lowest=min(values) if values else None,
            below_target=sum(1 for v in values if v < plan.target),
        )

    by_deck: dict[str, list[str]] = {}
    by_tag: dict[str, list[str]] = {}
    for cid in ids:
        card = collection.get(cid)
        if card is None:
            continue
        by_deck.setdefault(card.deck, []).append(cid)
        for tag in card.tags:
            by_tag.setdefault(tag, []).append(cid)
    tags = {tag: group(m) for tag, m in by_tag.items()}
    return OnTheDay(
        date=plan.date.isoformat(),
        days_left=plan.days_left,
        moment=to_utc(plan.moment).isoformat(),
        target=plan.target,
        plan=day.line(),
        new_today=day.new_today,
        all=group(ids),
        decks={name: group(m) for name, m in by_deck.items()},
        # weakest first: the number to watch during the week
        tags=dict(sorted(tags.items(), key=lambda kv: (kv[1].recall or 0.0, kv[0]))),
    )


def weakest_first(
    store: Store, ids: Iterable[str], now: datetime, settings: Settings | None = None
) -> list[str] | None:
    """``ids`` ordered by predicted retrievability at the interview, lowest first (cram on
    the day before and the day itself); None when no interview is that close."""
    settings = settings or store.settings()
    plan = Plan.of(settings, now)
    if plan is None or not 0 <= plan.days_left <= 1:
        return None
    id_list = list(ids)
    states = store.cards(id_list)
    order = {cid: i for i, cid in enumerate(id_list)}
    return sorted(id_list, key=lambda cid: (plan.retrievability(states.get(cid)), order[cid]))


def learning_of(store: Store, ids: list[str]) -> set[str]:
    """Those of ``ids`` (brought forward) that are learning or relearning cards: counted as
    learning, not as reviews, wherever the plan's cards are counted."""
    if not ids:
        return set()
    return {cid for cid, s in store.cards(ids).items() if s.state != State.Review}
