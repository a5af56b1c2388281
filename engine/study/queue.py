"""Today's queue: what a session serves and what every screen counts (home, the review bar,
stats), from one place.

Queue order: due cards first (most overdue first, up to the review limit), then new cards in
curriculum order (level, then the decks' ``order:``, then file order; kinds taking turns
within a level) up to what is left of today's new-card allowance. A follow-up card is served
only after its parent has been answered (before, or earlier in the same queue).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from itertools import chain
from typing import Any

from prep.engine.store import Store
from prep.engine.study import plan as plan_mod
from prep.engine.study.collection import Cards, Unseen
from prep.engine.study.due import interday, is_due, reviews_until, split_steps
from prep.engine.study.scheduler import State
from prep.engine.timeutil import day_start, fmt, today_span

LEARN_AHEAD = timedelta(minutes=20)  # a rating whose next step is due within it is re-shown


@dataclass
class Queue:
    """Today's queue: the due cards, then the new ones."""

    due: list[str]  # learning steps and reviews together, most overdue first
    new: list[str]
    learning: int = 0  # how many of ``due`` are learning or relearning steps (interday too)
    learning_ids: frozenset[str] = frozenset()  # which ones
    interday: int = 0  # how many of those are interday steps (due by day, under the limit)
    interday_held: bool = False  # whether the review limit holds interday steps back

    @property
    def ids(self) -> list[str]:
        return self.due + self.new


def build_queue(
    store: Store,
    collection: Cards,
    now: datetime,
    *,
    deck: str | None = None,
    new_limit: int | None = None,
    review_limit: int | None = None,
    seen: set[str] | None = None,
) -> Queue:
    """Today's queue. ``new_limit``/``review_limit`` default to the stored settings minus
    what was already done today. ``seen`` (ids with stored progress) may be passed in when
    the caller already holds it."""
    new_limit, review_limit = _limits_left(store, now, new_limit, review_limit, collection, deck)
    decks = None if deck is None else [deck]
    hidden = store.hidden_ids(now)  # suspended, or buried until a later day (a few ids)
    # learning steps by the minute, and interday steps by day (engine/study/due.py): few rows
    steps, days = split_steps(store.learning_rows(until=reviews_until(now), decks=decks), now, now)
    # which of them are cards of these decks: one query for all (not one a card)
    known = set(collection.known([cid for cid, _ in steps + days]))
    learning = [cid for cid, _ in steps if cid in known and cid not in hidden]
    interday = [cid for cid, _ in days if cid in known and cid not in hidden]
    # interday steps are gathered first under the review limit, as Anki's queue builder does
    held = len(interday) > review_limit
    interday = interday[:review_limit]
    room = review_limit - len(interday)
    reviews = store.due_ids(  # due by day: any time of today (engine/study/due.py)
        reviews_until(now), decks=decks, state=int(State.Review), limit=room + len(hidden)
    )
    known = set(collection.known(reviews))
    reviews = [cid for cid in reviews if cid in known and cid not in hidden][:room]
    # the day before an interview and its morning: reviews brought forward from after the
    # date, and cards still below target at the interview (engine/study/plan.py; none without one)
    ahead = plan_mod.brought_forward(store, collection, now, decks=decks, hidden=hidden)
    ahead = ahead[: max(0, room - len(reviews))]
    reviews += ahead
    due = _merge_by_due(store, learning, interday + reviews)
    interday += plan_mod.learning_of(store, ahead)  # (learning cards the plan brought forward)
    if hidden:
        seen = None if seen is None else seen | hidden  # never served as new either
    new: list[str] = []
    if new_limit > 0:
        among: AbstractSet[str] | None = _decks_with_new(store, collection)
        if deck is None:  # an interview plan on some decks: their new cards only
            among = plan_mod.new_card_decks(store.settings(), now, collection, among)
        new = _new_cards(store, collection, seen, hidden, new_limit, deck, among)
    steps_and_days = learning + interday
    return Queue(
        due=due,
        new=new,
        learning=len(steps_and_days),
        learning_ids=frozenset(steps_and_days),
        interday=len(interday),
        interday_held=held,
    )


def _limits_left(
    store: Store,
    now: datetime,
    new_limit: int | None,
    review_limit: int | None,
    collection: Cards,
    deck: str | None = None,
) -> tuple[int, int]:
    """Today's new-card and review limits: those given, else the settings (new cards raised
    by an interview plan, none on its day; a deck outside it: plan.new_per_day) minus what
    was already done today."""
    settings = store.settings()
    today = today_span(now)  # (a review dated after today is not today's)
    if review_limit is None:
        # Anki's "maximum reviews/day": reviews of Review-state cards already done today
        # count against it; learning and relearning steps are never capped.
        done = reviews_done(store, today)
        review_limit = max(0, settings.review_limit - done)
    if new_limit is None:
        new_today = store.count_reviews(*today, new_only=True)
        per_day = plan_mod.new_per_day(store, collection, now, settings, deck)
        new_limit = max(0, per_day + extra_new_today(store, now) - new_today)
    return new_limit, review_limit


def new_left(
    store: Store, collection: Cards, now: datetime, new_limit: int | None, deck: str | None = None
) -> int:
    """How many new cards today's queue may still take (``new_limit`` as build_queue's)."""
    return _limits_left(store, now, new_limit, 0, collection, deck)[0]


def reviews_done(store: Store, today: tuple[datetime, datetime]) -> int:
    """Today's answers that count against the review limit: of cards in the Review state and
    of interday learning steps (Anki's DayLearn queue; engine/study/due.py)."""
    steps = store.step_reviews(*today)
    days = sum(interday(state, due, last) for state, due, last in steps)
    return store.count_reviews(*today, prev_state=int(State.Review)) + days


@dataclass(frozen=True)
class DeckCounts:
    """One row of the home screen: what today's session would serve from this deck."""

    name: str  # "" for all decks together
    title: str
    cards: int
    new: int
    learning: int
    due: int
    # the cards due by day today (reviews and interday steps) before today's review limit
    # (``due`` and the interday part of ``learning`` are capped by it)
    waiting: int = 0
    steps: int = 0  # the learning steps due by the minute (within the learn-ahead window)
    # (all decks' row beside the decks') of ``new``, follow-ups served after their parent from
    # another deck, also new today: their own deck's row, studied alone, waits for those answers
    after_parents: int = 0

    @property
    def total(self) -> int:
        return self.new + self.learning + self.due


def deck_counts(
    store: Store,
    collection: Cards,
    now: datetime,
    *,
    new_limit: int | None = None,
    per_deck: bool = True,
) -> list[DeckCounts]:
    """New / learning / due per deck, as today's session serves them (the first row is all
    decks together; ``per_deck=False``: that row only). The one source of these three
    numbers for every screen (home, the review bar, stats): learning counts the learning and
    relearning steps due within the learn-ahead window (as the session holds them, shown
    when due or early when nothing else is left) and the interday steps due today, due the
    reviews due today (by day, from the rollover: engine/study/due.py); the interday steps
    and then the reviews are capped by today's review limit (as Anki gathers them), new the
    curriculum's next cards up to the new-card limit.

    Without building the queues: reviews due are one grouped count in SQL (less the few
    suspended or buried cards), the learning cards (few) are read from their index; the new
    cards are read only as far as the new-card limit needs."""
    collection.refresh(store)  # (a deck file another prep re-read since: its cards now)
    given = new_limit
    new_limit, review_limit = _limits_left(store, now, new_limit, None, collection)
    settings = store.settings()
    ahead = now + timedelta(minutes=settings.learn_ahead_min)
    hidden = store.hidden_ids(now)
    until = reviews_until(now)
    # per deck: [steps due by the learn-ahead window, interday steps due today, reviews]
    due = {deck: [0, 0, n[1]] for deck, n in store.due_counts(until, steps=False).items()}
    steps, days = split_steps(store.learning_rows(until=until), now, ahead, odd=False)
    for column, cards in ((0, steps), (1, days)):
        for cid, deck in cards:
            if cid not in hidden:
                due.setdefault(deck, [0, 0, 0])[column] += 1
    # the plan's (deck, whether a learning card) in the order the queue takes them, after
    # the reviews FSRS makes due and under the same limit
    ids = plan_mod.brought_forward(store, collection, now, hidden=hidden)
    steps_forward = plan_mod.learning_of(store, ids)
    forward = [(c.deck, c.id in steps_forward) for cid in ids if (c := collection.get(cid))]
    for state in store.cards(hidden).values():  # due, but not served today
        review = state.state == int(State.Review)
        if review and not state.removed and state.deck in due and is_due(state, now):
            due[state.deck][2] -= 1
    # the decks with cards without progress, counted in SQL: the others are not looked at
    among = _decks_with_new(store, collection)
    decks: list[tuple[str | None, str, int]] = [(None, "All decks", len(collection))]
    if per_deck:
        sizes = collection.deck_sizes()  # (counted, not read, over the deck cache)
        decks += [(name, info.title, sizes.get(name, 0)) for name, info in collection.decks.items()]
    rows = []
    all_rows: list[Unseen] = []  # (the rows all decks' new cards were read from)
    # a deck outside an interview plan on some decks follows the setting, the same for each
    planned = None if given is not None else plan_mod.plan_decks_here(settings, now, collection)
    own: int | None = None  # (the setting's limit left today: read once, if a deck needs it)
    for name, title, size in decks:
        if name is None:
            learning, interday, reviews = (sum(n[i] for n in due.values()) for i in range(3))
        else:
            learning, interday, reviews = due.get(name, (0, 0, 0))
        taken = min(review_limit, interday)  # gathered first under the limit
        fsrs = min(review_limit - taken, reviews)
        fwd = [step for deck, step in forward if name in (None, deck)]
        brought = fwd[: review_limit - taken - fsrs]  # (learning ones counted as learning)
        if name is not None and name not in among:
            new = []
        elif name is None:  # as build_queue: an interview plan on some decks takes theirs
            new_among = plan_mod.new_card_decks(settings, now, collection, among)
            new = _new_cards(store, collection, None, hidden, new_limit, name, new_among, all_rows)
        elif planned is not None and name not in planned:
            if own is None:  # (the setting's, not the plan's)
                own = new_left(store, collection, now, None, name)
            new = _new_cards(store, collection, None, hidden, own, name, among)
        else:
            new = _new_cards(store, collection, None, hidden, new_limit, name, among)
        after = _after_parents(all_rows) if name is None and per_deck else 0
        rows.append(
            DeckCounts(
                name=name or "",
                title=title,
                cards=size,
                new=len(new),
                learning=learning + taken + sum(brought),
                due=fsrs + len(brought) - sum(brought),
                waiting=interday + reviews + len(fwd),
                steps=learning,
                after_parents=after,
            )
        )
    return rows


def _after_parents(new: list[Unseen]) -> int:
    """How many of ``new`` (the rows ``_new_cards`` took, in queue order: a parent before its
    follow-ups) are follow-ups served after a parent of another deck new among them, or after
    such a follow-up of their own deck: counted by all decks together but by no deck alone (a
    follow-up waits until its parent has been answered: ``_new_cards``). From the rows read
    for the count: no card is built."""
    decks: dict[str, str] = {}
    after: set[str] = set()
    for _, cid, deck, _, parent, _ in new:
        decks[cid] = deck
        if parent in decks and (decks[parent] != deck or parent in after):
            after.add(cid)
    return len(after)


def unseen_per_deck(store: Store, collection: Cards) -> dict[str, int]:
    """How many cards of each deck have no progress (``Cards.unseen_by_deck``: two grouped
    counts in SQL, no card read one by one), so that a deck whose every card has progress is
    known to have no new card."""
    return collection.unseen_by_deck(store)


def _decks_with_new(store: Store, collection: Cards) -> AbstractSet[str]:
    """The decks that have cards without progress."""
    return {deck for deck, n in collection.unseen_by_deck(store).items() if n > 0}


def _new_cards(
    store: Store,
    collection: Cards,
    seen: set[str] | None,
    hidden: set[str],
    limit: int,
    deck: str | None,
    among: AbstractSet[str] | None = None,
    taken: list[Unseen] | None = None,
) -> list[str]:
    """Up to ``limit`` unseen cards in curriculum order: level by level (basics, core,
    advanced), and within a level one card of each kind in turn (recall, choice, red-flag,
    follow-up: a day mixes them), each kind in deck order (the decks' ``order:``, then file
    order) and file order within a deck. A follow-up waits until its parent has been
    answered or is queued before it (a suspended or buried parent that was never answered
    holds its follow-ups back).

    The groups come from ``Cards.new_card_groups`` and are read only as far as the
    limit needs: from the deck cache, each (kind, level, deck file) is an index range read
    in steps, so a new collection of 100k cards reads a few dozen rows, not every unseen
    card. Suspended and buried cards (``hidden``, a few ids) are never served as new."""
    if limit <= 0:
        return []
    groups: list[_Group] = []
    by_key: dict[tuple[Any, str], _Group] = {}
    for source in collection.new_card_groups(store, deck, seen, among):
        first = next((u for u in source if u[1] not in hidden), None)
        if first is None:
            continue
        group = by_key.get((first[0][0], first[3]))  # (level, kind)
        if group is None:
            group = by_key[first[0][0], first[3]] = _Group(first[0], [first], [source])
            groups.append(group)
        else:  # the same (deck, kind) in a later group: read after the earlier one
            group.sources.append(chain([first], source))
    groups.sort(key=lambda g: g.position)  # the order of each group's first card
    new: list[str] = []
    queued: set[str] = set()

    def ready(u: tuple) -> bool:
        parent = u[4]
        return parent is None or u[5] or parent in queued

    levels = sorted({g.level for g in groups})
    upto = 0  # the groups of levels[: upto + 1] take turns; the next level when they are done
    while levels and len(new) < limit:
        progress = False
        for group in groups:
            if group.level > levels[upto]:
                continue  # a level's cards all come before the next level's
            row = group.take(ready, hidden)
            if row is not None:
                new.append(row[1])
                queued.add(row[1])
                if taken is not None:  # (each card's row: its deck and parent, read already)
                    taken.append(row)
                progress = True
            if len(new) >= limit:
                break
        if not progress:
            if upto + 1 == len(levels):
                break
            upto += 1  # (a follow-up of an earlier level still comes once its parent is queued)
    return new


@dataclass
class _Group:
    """One (level, kind) group of the new-card rotation: the cards read so far and not taken
    (in order), then what is left to read."""

    position: Any  # the place of its first card: (level rank, deck rank, ...)
    pending: list[tuple]
    sources: list[Iterator[tuple]]

    @property
    def level(self) -> int:
        return self.position[0]

    def take(self, ready: Callable[[tuple], bool], hidden: set[str]) -> tuple | None:
        """The row of the group's first card that can be served now (removed from the group),
        reading on only when none of the cards read so far can."""
        for i, u in enumerate(self.pending):
            if ready(u):
                del self.pending[i]
                return u
        for source in self.sources:
            for u in source:
                if u[1] in hidden:
                    continue
                if ready(u):
                    return u
                self.pending.append(u)
        return None


EXTRA_NEW_KEY = "extra_new_today"


def extra_new_today(store: Store, now: datetime) -> int:
    """New cards added to today's limit with "study more" (0 on any other day)."""
    raw = store.get_meta(EXTRA_NEW_KEY)
    if not raw:
        return 0
    day, _, n = raw.partition(" ")
    return int(n) if day == fmt(day_start(now)) and n.isdigit() else 0


def add_new_today(store: Store, now: datetime, n: int) -> int:
    """Anki's custom study "increase today's new card limit": ``n`` more new cards today
    only. Returns today's extra in all."""
    total = extra_new_today(store, now) + n
    with store.transaction():
        store.set_meta(EXTRA_NEW_KEY, f"{fmt(day_start(now))} {total}")
    return total


@dataclass(frozen=True)
class Limits:
    """Why a deck shows nothing (or less than is waiting): today's limits and what they hold
    back, for a line like "daily new-card limit reached (20 today): 26 new cards wait"."""

    new_per_day: int  # the limit in force today (the setting plus "study more")
    new_done: int  # new cards studied today
    new_waiting: int  # unseen cards the limit holds back
    review_limit: int
    reviews_done: int
    reviews_waiting: bool  # due reviews beyond today's review limit
    new_served: int = 0  # new cards the queue serves now
    new_extra: int = 0  # of new_per_day, those added today with "study more"
    interview_day: bool = False  # new_per_day is the interview day's (none by the plan)
    by_plan: bool = False  # new_per_day is the interview plan's (not the setting's)

    @property
    def new_reached(self) -> bool:
        return self.new_waiting > 0 and self.new_done >= self.new_per_day

    @property
    def new_capped(self) -> bool:
        """Whether the limit (not yet reached) is what holds unseen cards back: the queue
        serves all that is left of it and more wait (All decks' New 20 beside decks that sum
        to 68: each deck's count is what it could take of the same 20)."""
        left = self.new_per_day - self.new_done
        return not self.new_reached and self.new_waiting > 0 and 0 < left <= self.new_served

    @property
    def reviews_reached(self) -> bool:
        return self.reviews_waiting


def limits_today(
    store: Store,
    collection: Cards,
    now: datetime,
    queue: Queue,
    deck: str | None = None,
) -> Limits:
    """Today's limits beside ``queue`` (built for ``deck``): what they hold back."""
    settings = store.settings()
    today = today_span(now)
    new_done = store.count_reviews(*today, new_only=True)
    done = reviews_done(store, today)
    # from the deck cache, reconciled with these decks on load: two grouped counts
    unseen = sum(n for d, n in collection.unseen_by_deck(store).items() if deck in (None, d))
    decks = None if deck is None else [deck]
    capped = len(queue.due) - queue.learning  # the reviews served (after the interday steps)
    beyond = store.due_ids(
        reviews_until(now), decks=decks, state=int(State.Review), limit=capped + 1
    )
    per_day, interview_day, by_plan = plan_mod.day_limit(store, collection, now, settings, deck)
    return Limits(
        new_per_day=per_day + extra_new_today(store, now),
        new_done=new_done,
        new_waiting=max(0, unseen - len(queue.new)),
        review_limit=settings.review_limit,
        reviews_done=done,
        reviews_waiting=queue.interday_held or len(collection.known(beyond)) > capped,
        new_served=len(queue.new),
        new_extra=extra_new_today(store, now),
        interview_day=interview_day,
        by_plan=by_plan,
    )


def review_ahead_ids(
    store: Store, collection: Cards, now: datetime, days: int = 1, deck: str | None = None
) -> list[str]:
    """Anki's custom study "review ahead": the cards due within the next ``days`` study days
    that today's queue does not serve now, soonest first. As Anki builds it (rslib
    scheduler/filtered/custom_study.rs, ``ahead_config``: the search ``prop:due<=days``, which
    takes the review cards, the interday learning steps and the intraday ones due by then;
    a filtered deck never takes a suspended or buried card): reviews and interday steps due
    by day on one of those days, learning steps due by their end beyond the learn-ahead
    window, none suspended or buried. With an interview ahead, a card the plan covers is due
    when the plan serves it (``Plan.due``: a review brought to the day before the interview,
    a weak one to its morning), as today's queue takes it: the count "study more" shows is
    what the plan would serve in those days, and pressing it serves them."""
    decks = None if deck is None else [deck]
    hidden = store.hidden_ids(now)
    until = reviews_until(now, days)
    later = store.due_ids(until, decks=decks)  # (by due: soonest first)
    states = store.cards(collection.known(cid for cid in later if cid not in hidden))
    window = timedelta(minutes=store.settings().learn_ahead_min)
    plan = plan_mod.Plan.of(store.settings(), now)
    # (the plan only brings a due sooner, to the interview's last day or its morning: before
    # those days are within reach, FSRS's dues are the plan's, and no other state is read)
    if plan is None or not plan.before or plan.last_day > until:
        return [cid for cid in later if cid in states and not is_due(states[cid], now, window)]
    plan = plan.on(collection)
    covered = [
        cid
        for cid in plan.covered_ids(collection)
        if cid not in hidden
        and (deck is None or getattr(collection.get(cid), "deck", deck) == deck)
    ]
    states.update(store.cards([cid for cid in covered if cid not in states]))
    for cid in set(covered) & states.keys():  # (a new card has no state: not reviewed ahead)
        states[cid] = replace(states[cid], due=plan.due(states[cid]))
    ahead = [
        (due, cid)
        for cid, state in states.items()
        if isinstance(due := state.due, datetime) and due <= until
        if not is_due(state, now, window)
    ]
    return [cid for _, cid in sorted(ahead)]


def _merge_by_due(store: Store, a: list[str], b: list[str]) -> list[str]:
    """Two most-overdue-first id lists merged into one, still most overdue first."""
    if not a or not b:
        return a or b
    due = {cid: s.due for cid, s in store.cards([*a, *b]).items()}
    never = datetime.max.replace(tzinfo=UTC)  # a due that is not a time: last (then skipped)
    return sorted([*a, *b], key=lambda cid: d if isinstance(d := due[cid], datetime) else never)
