"""Today's queue and a review session over it (shared by `--plain`, the TUI and `mock`).

Queue order: due cards first (most overdue first, up to the review limit), then new cards in
deck order up to what is left of today's new-card allowance. A follow-up card is served only
after its parent has been seen (before, or earlier in the same queue). Learning cards whose
next step falls within the learn-ahead window come back later in the same session, as in Anki.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from itertools import chain
from typing import Any

from prep.engine.decks.deck import Card, Collection
from prep.engine.store import Mark, Store
from prep.engine.study.scheduler import CardState, Outcome, Rating, Scheduler, State, state_problem
from prep.engine.timeutil import Clock, day_start, fmt, study_day_start, utcnow

LEARN_AHEAD = timedelta(minutes=20)  # a rating whose next step is due within it is re-shown


@dataclass
class Queue:
    due: list[str]  # learning steps and reviews together, most overdue first
    new: list[str]
    learning: int = 0  # how many of ``due`` are learning or relearning steps
    learning_ids: frozenset[str] = frozenset()  # which ones

    @property
    def ids(self) -> list[str]:
        return self.due + self.new


def build_queue(
    store: Store,
    collection: Collection,
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
    new_limit, review_limit = _limits_left(store, now, new_limit, review_limit)
    decks = None if deck is None else [deck]
    hidden = store.hidden_ids(now)  # suspended, or buried until a later day (a few ids)
    learning = store.due_ids(now, decks=decks, not_state=int(State.Review))
    reviews = store.due_ids(
        now, decks=decks, state=int(State.Review), limit=review_limit + len(hidden)
    )
    learning = [cid for cid in learning if cid in collection and cid not in hidden]
    reviews = [cid for cid in reviews if cid in collection and cid not in hidden]
    reviews = reviews[:review_limit]
    due = _merge_by_due(store, learning, reviews)
    if hidden:
        seen = None if seen is None else seen | hidden  # never served as new either
    new: list[str] = []
    if new_limit > 0:
        among = _decks_with_new(store, collection)
        new = _new_cards(store, collection, seen, hidden, new_limit, deck, among)
    return Queue(due=due, new=new, learning=len(learning), learning_ids=frozenset(learning))


def _limits_left(
    store: Store, now: datetime, new_limit: int | None, review_limit: int | None
) -> tuple[int, int]:
    """Today's new-card and review limits: those given, else the settings minus what was
    already done today."""
    settings = store.settings()
    today = day_start(now)
    if review_limit is None:
        # Anki's "maximum reviews/day": reviews of Review-state cards already done today
        # count against it; learning and relearning steps are never capped.
        done = store.count_reviews(today, prev_state=int(State.Review))
        review_limit = max(0, settings.review_limit - done)
    if new_limit is None:
        new_today = store.count_reviews(today, new_only=True)
        new_limit = max(0, settings.new_per_day + extra_new_today(store, now) - new_today)
    return new_limit, review_limit


@dataclass(frozen=True)
class DeckCounts:
    """One row of the home screen: what today's session would serve from this deck."""

    name: str  # "" for all decks together
    title: str
    cards: int
    new: int
    learning: int
    due: int

    @property
    def total(self) -> int:
        return self.new + self.learning + self.due


_STEP_STATES = frozenset(int(x) for x in State if x != State.Review)  # as due_ids reads them


def deck_counts(
    store: Store, collection: Collection, now: datetime, *, new_limit: int | None = None
) -> list[DeckCounts]:
    """New / learning / due per deck, as ``build_queue`` would serve them (the first row is
    all decks together), without building the queues: learning steps and reviews due are one
    grouped count per state in SQL (less the few suspended or buried cards), reviews capped
    by today's review limit; the new cards are the rotation's, read only as far as the
    new-card limit needs."""
    new_limit, review_limit = _limits_left(store, now, new_limit, None)
    hidden = store.hidden_ids(now)
    due = {deck: list(n) for deck, n in store.due_counts(now).items()}
    for state in store.cards(hidden).values():  # due, but not served today
        if state.removed or state.due is None or state.due > now or state.deck not in due:
            continue
        if state.state == State.Review:
            due[state.deck][1] -= 1
        elif state.state in _STEP_STATES:
            due[state.deck][0] -= 1
    seen = store.seen_ids() | hidden if collection.reads_seen and new_limit > 0 else None
    among = _decks_with_new(store, collection)
    decks: list[tuple[str | None, str, int]] = [(None, "All decks", len(collection))]
    decks += [(name, info.title, len(info.card_ids)) for name, info in collection.decks.items()]
    rows = []
    for name, title, size in decks:
        if name is None:
            learning = sum(n[0] for n in due.values())
            reviews = sum(n[1] for n in due.values())
        else:
            learning, reviews = due.get(name, (0, 0))
        if name is not None and among is not None and name not in among:
            new = []
        else:
            new = _new_cards(store, collection, seen, hidden, new_limit, name, among)
        rows.append(
            DeckCounts(
                name=name or "",
                title=title,
                cards=size,
                new=len(new),
                learning=learning,
                due=min(review_limit, reviews),
            )
        )
    return rows


def unseen_per_deck(store: Store, collection: Collection) -> dict[str, int]:
    """How many cards of each deck have no progress, from two counts: the deck's size and
    its cards with progress (grouped in SQL over the live cards, which the reconciliation keeps to
    the loaded decks), so that a deck whose every card has progress is known to have no new
    card without reading its cards one by one."""
    seen = {deck: n for deck, (n, _) in store.deck_progress(0.0).items()}
    return {deck: max(0, n - seen.get(deck, 0)) for deck, n in collection.deck_sizes().items()}


def _decks_with_new(store: Store, collection: Collection) -> set[str] | None:
    """The decks that have cards without progress, when the collection is over the deck cache
    (whose load reconciled the progress with these decks); None (every deck may) otherwise."""
    if collection.reads_seen:
        return None
    return {deck for deck, n in unseen_per_deck(store, collection).items() if n > 0}


def _new_cards(
    store: Store,
    collection: Collection,
    seen: set[str] | None,
    hidden: set[str],
    limit: int,
    deck: str | None,
    among: AbstractSet[str] | None = None,
) -> list[str]:
    """Up to ``limit`` unseen cards, taking one from each (deck, kind) group in turn, so a
    day's new cards mix decks and recall, choice, red-flag and follow-up cards; file order
    within a group, groups in the order of their first card. A follow-up waits until its
    parent is seen or queued before it.

    The groups come from ``Collection.new_card_groups`` and are read only as far as the
    limit needs: from the deck cache, each (deck file, kind) is an index range read in steps,
    so a new collection of 100k cards reads a few dozen rows, not every unseen card.
    Suspended and buried cards (``hidden``, a few ids) count as seen: never served as new."""
    if limit <= 0:
        return []
    groups: list[_Group] = []
    by_key: dict[tuple[str, str], _Group] = {}
    for source in collection.new_card_groups(store, deck, seen, among):
        first = next((u for u in source if u[1] not in hidden), None)
        if first is None:
            continue
        group = by_key.get((first[2], first[3]))
        if group is None:
            group = by_key[first[2], first[3]] = _Group(first[0], [first], [source])
            groups.append(group)
        else:  # the same (deck, kind) in a later group: read after the earlier one
            group.sources.append(chain([first], source))
    groups.sort(key=lambda g: g.position)  # the order of each group's first card
    new: list[str] = []
    queued: set[str] = set()

    def ready(u: tuple) -> bool:
        parent = u[4]
        return parent is None or u[5] or parent in hidden or parent in queued

    progress = True
    while len(new) < limit and progress:
        progress = False
        for group in groups:
            card = group.take(ready, hidden)
            if card is not None:
                new.append(card)
                queued.add(card)
                progress = True
            if len(new) >= limit:
                break
    return new


@dataclass
class _Group:
    """One (deck, kind) group of the new-card rotation: the cards read so far and not taken
    (in order), then what is left to read."""

    position: Any
    pending: list[tuple]
    sources: list[Iterator[tuple]]

    def take(self, ready: Callable[[tuple], bool], hidden: set[str]) -> str | None:
        """The id of the group's first card that can be served now (removed from the group),
        reading on only when none of the cards read so far can."""
        for i, u in enumerate(self.pending):
            if ready(u):
                del self.pending[i]
                return u[1]
        for source in self.sources:
            for u in source:
                if u[1] in hidden:
                    continue
                if ready(u):
                    return u[1]
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

    @property
    def new_reached(self) -> bool:
        return self.new_waiting > 0 and self.new_done >= self.new_per_day

    @property
    def reviews_reached(self) -> bool:
        return self.reviews_waiting


def limits_today(
    store: Store,
    collection: Collection,
    now: datetime,
    queue: Queue,
    deck: str | None = None,
    seen: set[str] | None = None,
) -> Limits:
    """Today's limits beside ``queue`` (built for ``deck``): what they hold back. ``seen``
    (ids with stored progress) may be passed in when the caller already holds it."""
    settings = store.settings()
    today = day_start(now)
    new_done = store.count_reviews(today, new_only=True)
    reviews_done = store.count_reviews(today, prev_state=int(State.Review))
    # counted from the deck cache in SQL when the collection has one
    if collection.reads_seen:
        unseen = sum(1 for _ in collection.unseen(store, deck, seen))
    else:  # reconciled with these decks on load: two grouped counts
        unseen = sum(n for d, n in unseen_per_deck(store, collection).items() if deck in (None, d))
    decks = None if deck is None else [deck]
    capped = len(queue.due) - queue.learning
    beyond = store.due_ids(now, decks=decks, state=int(State.Review), limit=capped + 1)
    return Limits(
        new_per_day=settings.new_per_day + extra_new_today(store, now),
        new_done=new_done,
        new_waiting=max(0, unseen - len(queue.new)),
        review_limit=settings.review_limit,
        reviews_done=reviews_done,
        reviews_waiting=len([c for c in beyond if c in collection]) > capped,
    )


def review_ahead_ids(
    store: Store, collection: Collection, now: datetime, days: int = 1, deck: str | None = None
) -> list[str]:
    """Anki's custom study "review ahead": review cards due within ``days`` days (not yet
    due), soonest first."""
    decks = None if deck is None else [deck]
    later = store.due_ids(now + timedelta(days=days), decks=decks, state=int(State.Review))
    due_now = set(store.due_ids(now, decks=decks, state=int(State.Review)))
    return [cid for cid in later if cid not in due_now and cid in collection]


def _merge_by_due(store: Store, a: list[str], b: list[str]) -> list[str]:
    """Two most-overdue-first id lists merged into one, still most overdue first."""
    if not a or not b:
        return a or b
    due = {cid: s.due for cid, s in store.cards([*a, *b]).items()}
    return sorted([*a, *b], key=lambda cid: due[cid])


_US = timedelta(microseconds=1)


@dataclass
class SessionStats:
    started: datetime
    reviewed: int = 0
    again: int = 0
    seconds: float = 0.0
    ratings: dict[int, int] = field(default_factory=lambda: {int(r): 0 for r in Rating})

    @property
    def again_rate(self) -> float:
        return self.again / self.reviewed if self.reviewed else 0.0


class ReviewSession:
    """Serve cards from a queue, rate them (committed at once), undo.

    The clock is injectable (``clock=lambda: fixed``) so tests get exact intervals.
    """

    def __init__(
        self,
        store: Store,
        collection: Collection,
        *,
        deck: str | None = None,
        new_limit: int | None = None,
        limit: int | None = None,
        scheduler: Scheduler | None = None,
        clock: Clock = utcnow,
        queue: Iterable[str] | None = None,
        requeue: bool = True,
    ) -> None:
        """``requeue``: show a learning card again this session when its next step is due
        within the learn-ahead window (Anki's behaviour); a mock interview asks once."""
        self.store = store
        self.requeue = requeue
        self.collection = collection
        self.clock = clock
        self.scheduler = scheduler or Scheduler(store.settings())
        now = clock()
        collection.reconcile(store)
        learning_ids: frozenset[str] | None = None
        if queue is None:
            built = build_queue(store, collection, now, deck=deck, new_limit=new_limit)
            queue, new_ids, learning_ids = built.ids, set(built.new), built.learning_ids
        whole = list(queue)
        self.queue: list[str] = whole[: limit if limit is not None else None]
        self.held_back = len(whole) - len(self.queue)  # left for later by ``limit``
        if learning_ids is None:  # a queue given by the caller: ask the store what each is
            states = store.cards(self.queue)
            new_ids = {cid for cid in self.queue if cid not in states}
            learning_ids = frozenset(
                cid for cid, st in states.items() if st.state != int(State.Review)
            )
        # what each queued card is, for Anki's three numbers (new / learning / due)
        self.kind_of: dict[str, str] = {
            cid: "new" if cid in new_ids else "learning" if cid in learning_ids else "review"
            for cid in self.queue
        }
        # learning cards rated this session, waiting for their next step: (due, id), soonest
        # first. One is served when due; early (within the learn-ahead limit) only when
        # nothing else is left.
        self.learning: list[tuple[datetime, str]] = []
        self.learn_ahead = timedelta(minutes=store.settings().learn_ahead_min)
        self.done: list[str] = []  # ids rated in this session, in order (for undo)
        self._requeued: list[bool] = []  # whether each of those ratings re-queued its card
        self._review_ids: list[int] = []  # the review rows those ratings wrote
        self._from_learning: list[tuple[datetime, str] | None] = []  # where each rated card was
        # undo goes back through ratings and marks alike: "rate", or the mark before a change
        self._history: list[str | tuple[str, Mark, tuple[datetime, str] | None]] = []
        self.total = len(self.queue)
        self.skipped: list[tuple[str, str]] = []  # (card id, why) of cards left out
        self.notices: list[str] = []
        self._schedulable: set[str] = set()
        self.stats = SessionStats(started=now)
        self._shown_at = time.monotonic()

    # --- the current card ---------------------------------------------------------------

    def _next(self) -> tuple[Card, tuple[datetime, str] | None] | None:
        """The card to show now and, when it is a waiting learning card, its entry: a learning
        card whose step is due first, then the queue, then (nothing else left) the soonest
        learning card within the learn-ahead limit, shown early."""
        now = self.clock()
        while self.queue:
            card = self.collection.get(self.queue[0])
            if card is not None and (card.id in self._schedulable or self._schedulable_now(card)):
                break
            self.queue.pop(0)  # removed from the decks since the queue was built, or unusable
        self.learning = [e for e in self.learning if self.collection.get(e[1]) is not None]
        if self.learning and self.learning[0][0] <= now:
            return self.collection.get(self.learning[0][1]), self.learning[0]
        if self.queue:
            return self.collection.get(self.queue[0]), None
        if self.learning and self.learning[0][0] <= now + self.learn_ahead:
            return self.collection.get(self.learning[0][1]), self.learning[0]
        return None

    def _schedulable_now(self, card: Card) -> bool:
        """Whether the scheduler can rate this card's stored state. A state it rejects (from a
        hand-edited database, or an import before imports were validated) skips the card with
        a notice instead of crashing the session when the answer is revealed."""
        state = self.state_of(card)
        why = state_problem(state)
        if why is None:
            try:
                self.scheduler.preview(state, self.clock())
            except (ArithmeticError, AssertionError, TypeError, ValueError) as exc:
                why = f"the scheduler cannot rate it ({type(exc).__name__}: {exc})"
        if why is not None:
            self.skipped.append((card.id, why))
            self.notices.append(f"Skipped card {card.id}: its stored state is unusable: {why}")
            return False
        self._schedulable.add(card.id)
        return True

    def take_notices(self) -> list[str]:
        """Messages for the user since the last call (cards skipped, and why)."""
        notices, self.notices = self.notices, []
        return notices

    @property
    def current(self) -> Card | None:
        found = self._next()
        return found[0] if found else None

    @property
    def early(self) -> timedelta | None:
        """How long before its step is due the current card is shown (learn-ahead), or None
        when it is not early."""
        found = self._next()
        if found is None or found[1] is None:
            return None
        ahead = found[1][0] - self.clock()
        return ahead if ahead > timedelta(0) else None

    def counts(self) -> tuple[int, int, int]:
        """Anki's three numbers: new, learning and due (review) cards left in this session."""
        kinds = [self.kind_of.get(cid, "review") for cid in self.queue]
        return (
            kinds.count("new"),
            kinds.count("learning") + len(self.learning),
            kinds.count("review"),
        )

    @property
    def waiting(self) -> datetime | None:
        """When the next learning card of this session is due, if one is waiting."""
        return self.learning[0][0] if self.learning else None

    @property
    def finished(self) -> bool:
        return self.current is None

    @property
    def position(self) -> int:
        """1-based index of the current card among the cards of this session."""
        return min(len(self.done) + 1, max(self.total, 1))

    def state_of(self, card: Card) -> CardState:
        stored = self.store.card(card.id)
        if stored is not None:
            return stored
        return CardState(id=card.id, deck=card.deck, content_hash=card.content_hash)

    def preview(self) -> dict[Rating, Outcome]:
        """The outcome of each rating for the current card (for the rating buttons)."""
        card = self.current
        if card is None:
            return {}
        return self.scheduler.preview(self.state_of(card), self.clock())

    def mark_shown(self) -> None:
        self._shown_at = time.monotonic()

    # --- rating and undo ----------------------------------------------------------------

    def rate(self, rating: Rating | int, duration_ms: int | None = None) -> Outcome:
        found = self._next()
        if found is None:
            raise RuntimeError("no card to rate: the session is finished")
        card, entry = found
        rating = Rating(rating)
        now = self.clock()
        if duration_ms is None:
            duration_ms = int((time.monotonic() - self._shown_at) * 1000)
        outcomes: list[Outcome] = []

        def decide(prev: CardState) -> CardState:
            # never before the card's last review (a clock set back, or a review from a
            # machine whose clock runs ahead, received by a sync): the log's time order is
            # the order the ratings were made in, which a sync's replay follows (a hybrid
            # logical clock per card)
            at = now if prev.last_review is None else max(now, prev.last_review + _US)
            outcomes.append(self.scheduler.review(prev, rating, at))
            return outcomes[-1].state

        # the state is read inside the write transaction: another terminal rating this card
        # at the same moment is serialised before or after us, never interleaved
        fresh = CardState(id=card.id, deck=card.deck, content_hash=card.content_hash)
        review_id, _prev, _new = self.store.rate_card(
            fresh, decide, rating, now, duration_ms, self.scheduler.replay_params()
        )
        outcome = outcomes[-1]
        self._review_ids.append(review_id)
        if entry is None:
            self.queue.pop(0)
        else:
            self.learning.remove(entry)
        self._from_learning.append(entry)
        self._history.append("rate")
        self.done.append(card.id)
        self.stats.reviewed += 1
        self.stats.ratings[int(rating)] += 1
        self.stats.again += rating == Rating.Again
        self.stats.seconds += duration_ms / 1000
        requeued = (
            self.requeue
            and outcome.state.due is not None
            and outcome.state.due <= now + max(LEARN_AHEAD, self.learn_ahead)
        )
        if requeued:  # a learning step due soon: see it again this session
            assert outcome.state.due is not None
            self.learning.append((outcome.state.due, card.id))
            self.learning.sort()
            self.total += 1
        self._requeued.append(requeued)
        self.mark_shown()
        return outcome

    def set_mark(self, change: str) -> Mark:
        """Suspend, bury or flag (toggle) the current card, stored at once and undoable like a
        rating. A suspended or buried card leaves this session; a flagged one stays."""
        found = self._next()
        if found is None:
            raise RuntimeError("no card to mark: the session is finished")
        card, entry = found
        before = self.store.mark(card.id)
        if change == "suspend":
            after = replace(before, suspended=True)
        elif change == "bury":
            after = replace(before, buried_until=study_day_start(self.clock(), 1))
        elif change == "flag":
            after = replace(before, flagged=not before.flagged)
        else:
            raise ValueError(f"unknown mark {change!r}")
        self.store.set_mark(card.id, after)
        if change != "flag":
            if entry is None:
                self.queue.pop(0)
            else:
                self.learning.remove(entry)
        self._history.append((card.id, before, entry if change != "flag" else ("keep", card.id)))
        return after

    def undo(self) -> Card | None:
        """Undo this session's last rating or mark: a rating's stored state is restored
        exactly, a mark is cleared back to what it was, and the card is put back in front.
        Returns the card, or None when there is nothing to undo."""
        if self._history and self._history[-1] != "rate":
            card_id, before, entry = self._history.pop()  # type: ignore[misc]
            self.store.set_mark(card_id, before)
            if entry != ("keep", card_id):  # it had left the session: back in front
                if entry is not None:
                    self.kind_of[card_id] = "learning"
                self.queue.insert(0, card_id)
            return self.collection.get(card_id)
        if not self.done:
            return None
        last = self.store.undo_last(expected_id=self._review_ids[-1])
        if last is None:
            return None  # the newest review is not ours (another session's): leave it
        self._review_ids.pop()
        if self._history:
            self._history.pop()
        card_id = self.done.pop()
        if self._requeued.pop():  # drop the learning-step re-queue this rating added
            self.learning = [e for e in self.learning if e[1] != card_id]
            self.total -= 1
        if self._from_learning.pop() is not None:
            self.kind_of[card_id] = "learning"
        self.queue.insert(0, card_id)  # back in front, as Anki's undo does
        self.stats.reviewed -= 1
        self.stats.ratings[last.rating] -= 1
        self.stats.again -= last.rating == Rating.Again
        self.stats.seconds -= (last.duration_ms or 0) / 1000
        self.mark_shown()
        return self.collection.get(card_id)

    def summary(self) -> dict:
        """End-of-session summary: cards, again-rate, time, what is due next."""
        now = self.clock()
        end_of_tomorrow = study_day_start(now, 2)
        due_by_tomorrow = self.store.count_due(end_of_tomorrow)  # a count, not 40k ids
        return {
            "reviewed": self.stats.reviewed,
            "again": self.stats.again,
            "again_rate": self.stats.again_rate,
            "seconds": round(self.stats.seconds, 1),
            "next_due": self.store.next_due(now),
            "due_by_tomorrow": due_by_tomorrow,
        }
