"""Today's queue and a review session over it (shared by `--plain`, the TUI and `mock`).

Queue order: due cards first (most overdue first, up to the review limit), then new cards in
deck order up to what is left of today's new-card allowance. A follow-up card is served only
after its parent has been seen (before, or earlier in the same queue). Learning cards whose
next step falls within the learn-ahead window come back later in the same session, as in Anki.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from prep.engine.deck import Card, Collection
from prep.engine.scheduler import CardState, Outcome, Rating, Scheduler, State
from prep.engine.storage import Store
from prep.engine.timeutil import Clock, day_start, study_day_start, utcnow

LEARN_AHEAD = timedelta(minutes=20)


@dataclass
class Queue:
    due: list[str]  # learning steps and reviews together, most overdue first
    new: list[str]
    learning: int = 0  # how many of ``due`` are learning or relearning steps

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
    settings = store.settings()
    today = day_start(now)
    if review_limit is None:
        # Anki's "maximum reviews/day": reviews of Review-state cards already done today
        # count against it; learning and relearning steps are never capped.
        done = store.count_reviews(today, prev_state=int(State.Review))
        review_limit = max(0, settings.review_limit - done)
    if new_limit is None:
        new_today = store.count_reviews(today, new_only=True)
        new_limit = max(0, settings.new_per_day - new_today)
    decks = None if deck is None else [deck]
    learning = store.due_ids(now, decks=decks, not_state=int(State.Review))
    reviews = store.due_ids(now, decks=decks, state=int(State.Review), limit=review_limit)
    learning = [cid for cid in learning if cid in collection]
    reviews = [cid for cid in reviews if cid in collection]
    due = _merge_by_due(store, learning, reviews)
    new: list[str] = []
    queued: set[str] = set()
    if new_limit > 0:
        # unseen cards in deck order, read only as far as needed (from the deck cache's
        # index when the collection has one, never a set of every seen id)
        for cid, parent, parent_seen in collection.unseen(store, deck, seen):
            if parent is not None and not parent_seen and parent not in queued:
                continue
            new.append(cid)
            queued.add(cid)
            if len(new) >= new_limit:
                break
    return Queue(due=due, new=new, learning=len(learning))


def _merge_by_due(store: Store, a: list[str], b: list[str]) -> list[str]:
    """Two most-overdue-first id lists merged into one, still most overdue first."""
    if not a or not b:
        return a or b
    due = {cid: s.due for cid, s in store.cards([*a, *b]).items()}
    return sorted([*a, *b], key=lambda cid: due[cid])


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
        collection.sync(store)
        if queue is None:
            queue = build_queue(store, collection, now, deck=deck, new_limit=new_limit).ids
        self.queue: list[str] = list(queue)[: limit if limit is not None else None]
        self.done: list[str] = []  # ids rated in this session, in order (for undo)
        self._requeued: list[bool] = []  # whether each of those ratings re-queued its card
        self._review_ids: list[int] = []  # the review rows those ratings wrote
        self.total = len(self.queue)
        self.stats = SessionStats(started=now)
        self._shown_at = time.monotonic()

    # --- the current card ---------------------------------------------------------------

    @property
    def current(self) -> Card | None:
        while self.queue:
            card = self.collection.get(self.queue[0])
            if card is not None:
                return card
            self.queue.pop(0)  # removed from the decks since the queue was built
        return None

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
        card = self.current
        if card is None:
            raise RuntimeError("no card to rate: the session is finished")
        rating = Rating(rating)
        now = self.clock()
        prev = self.state_of(card)
        outcome = self.scheduler.review(prev, rating, now)
        if duration_ms is None:
            duration_ms = int((time.monotonic() - self._shown_at) * 1000)
        review_id = self.store.record_review(prev, outcome.state, rating, now, duration_ms)
        self._review_ids.append(review_id)
        self.queue.pop(0)
        self.done.append(card.id)
        self.stats.reviewed += 1
        self.stats.ratings[int(rating)] += 1
        self.stats.again += rating == Rating.Again
        self.stats.seconds += duration_ms / 1000
        requeued = (
            self.requeue
            and outcome.state.due is not None
            and outcome.state.due <= now + LEARN_AHEAD
        )
        if requeued:
            self.queue.append(card.id)  # a learning step due soon: see it again this session
            self.total += 1
        self._requeued.append(requeued)
        self.mark_shown()
        return outcome

    def undo(self) -> Card | None:
        """Undo this session's last rating: the stored state is restored exactly and the card
        is put back in front. Returns the card, or None when there is nothing to undo."""
        if not self.done:
            return None
        last = self.store.undo_last(expected_id=self._review_ids[-1])
        if last is None:
            return None  # the newest review is not ours (another session's): leave it
        self._review_ids.pop()
        card_id = self.done.pop()
        if self._requeued.pop():  # drop the learning-step re-queue this rating added
            self.queue.reverse()
            self.queue.remove(card_id)  # the last occurrence
            self.queue.reverse()
            self.total -= 1
        self.queue.insert(0, card_id)
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
