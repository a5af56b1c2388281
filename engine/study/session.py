"""A review session over today's queue (shared by `--plain`, the TUI and `mock`).

The queue and the counts every screen shows are in engine/study/queue.py (re-exported here).
The card on screen is the card rated: the session keeps it current until it is rated, marked
away or undone, and refuses an action that names another card. Learning cards whose next
step falls within the learn-ahead window come back later in the same session, as in Anki,
and so do the steps another screen or terminal rated meanwhile.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from prep.engine.decks.deck import Card
from prep.engine.store import Mark, Store, StoreError
from prep.engine.store.known import ShownRead
from prep.engine.study import plan as plan_mod
from prep.engine.study import takein
from prep.engine.study.collection import Cards
from prep.engine.study.due import interday, next_due
from prep.engine.study.duesteps import DueSteps
from prep.engine.study.forecast import due_per_day
from prep.engine.study.onepass import _AGAIN
from prep.engine.study.queue import (  # re-exported: callers import them from here
    EXTRA_NEW_KEY,
    LEARN_AHEAD,
    DeckCounts,
    Limits,
    Queue,
    add_new_today,
    build_queue,
    deck_counts,
    extra_new_today,
    limits_today,
    review_ahead_ids,
    unseen_per_deck,
)
from prep.engine.study.scheduler import (
    CardState,
    Outcome,
    Rating,
    Scheduler,
    Settings,
    State,
    rating_of,
    state_problem,
)
from prep.engine.study.takein import kinds_of
from prep.engine.textsafe import quoted
from prep.engine.timeutil import Clock, clamp_duration, study_day_start, utcnow

__all__ = [
    "EXTRA_NEW_KEY",
    "LEARN_AHEAD",
    "DeckCounts",
    "Limits",
    "NotCurrentCard",
    "Queue",
    "ReviewSession",
    "SessionStats",
    "add_new_today",
    "build_queue",
    "deck_counts",
    "extra_new_today",
    "limits_today",
    "review_ahead_ids",
    "unseen_per_deck",
]


class NotCurrentCard(RuntimeError):
    """An action named a card that is not the session's current card (or none is left)."""


_US = timedelta(microseconds=1)
# a card shown: (id, Store.changes_mark before it was read, its state, the id its review would
# get, its text's hash in the deck cache or None, its newest review's row id or None)
_Seen = tuple[str, tuple[int, int], CardState, str, str | None, int | None]


@dataclass
class SessionStats:
    """What a session has done so far (its summary's numbers)."""

    started: datetime
    reviewed: int = 0
    again: int = 0
    seconds: float = 0.0
    ratings: dict[int, int] = field(default_factory=lambda: {int(r): 0 for r in Rating})

    @property
    def again_rate(self) -> float:
        return self.again / self.reviewed if self.reviewed else 0.0


class ReviewSession:
    """Serve cards from a queue, rate them (committed at once), undo. The clock is
    injectable (``clock=lambda: fixed``) so tests get exact intervals."""

    def __init__(
        self,
        store: Store,
        collection: Cards,
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
        # the settings as saved when the session began: a change saved since (`prep config`,
        # `prep optimize` in another terminal) is used from the next rating on
        self._settings_seen = store.settings()
        now = clock()
        collection.reconcile(store)
        learning_ids: frozenset[str] | None = None
        # today's session (its queue built here) also takes the learning steps that come due
        # while it is open, whichever screen rated them (a mock's Again, another terminal)
        self._adopts = queue is None and requeue
        self._deck = deck
        self._limits = (new_limit, limit)  # (take_in_changes builds the queue again with them)
        self._steps = DueSteps(store, None if deck is None else [deck])
        # PRAGMA data_version before the queue was built: another connection's commit since
        # (another terminal), seen in a mark read later, rebuilds it at the next card
        self._version = store.changes_mark()[0] if self._adopts else None
        self._stale = False
        self._day_end = study_day_start(now, 1)  # (take_in_changes: the next day's, rolled over)
        self._first_id = store.next_review_id() if self._adopts else 1 << 63  # (after its queue)
        if queue is None:
            built = build_queue(store, collection, now, deck=deck, new_limit=new_limit)
            queue, new_ids, learning_ids = built.ids, set(built.new), built.learning_ids
        whole = list(queue)
        # (a deque: each answer takes the front, which a list's pop(0) did by moving every id
        # behind it, ~9% of an answer's instructions at 100k cards, growing with the queue)
        self.queue: deque[str] = deque(whole[: limit if limit is not None else None])
        self.held_back = len(whole) - len(self.queue)  # left for later by ``limit``
        if learning_ids is None:  # a queue given by the caller: ask the store what each is
            states = store.cards(self.queue)
            new_ids = {cid for cid in self.queue if cid not in states}
            learning_ids = frozenset(
                cid for cid, st in states.items() if st.state != int(State.Review)
            )
        # what each queued card is, for Anki's three numbers (new / learning / due)
        self.kind_of: dict[str, str] = kinds_of(self.queue, new_ids, learning_ids)
        # learning cards rated this session, waiting for their next step: (due, id), soonest
        # first. One is served when due; early (within the learn-ahead limit) only when
        # nothing else is left.
        self.learning: list[tuple[datetime, str]] = []
        self._by_day: set[str] = set()  # those on an interday step: from its rollover, never early
        self.learn_ahead = timedelta(minutes=store.settings().learn_ahead_min)
        self.plan: plan_mod.Plan | None = None  # None without an interview date
        self._plan_until = now
        takein.see_plan(self, now, store.settings())
        self.done: list[str] = []  # ids rated in this session, in order (for undo)
        self._requeued: list[bool] = []  # whether each of those ratings re-queued its card
        self._review_ids: list[int] = []  # the review rows those ratings wrote
        self._from_learning: list[tuple[datetime, str] | None] = []  # where each rated card was
        # what undo goes back through: "rate", or (card id, mark before, its entry or ("keep", id))
        self._history: list[
            str | tuple[str, Mark, tuple[datetime, str] | tuple[str, str] | None]
        ] = []
        self.total = len(self.queue)
        self.skipped: list[tuple[str, str]] = []  # (card id, why) of cards left out
        self.notices: list[str] = takein.deck_notices(collection)  # (a deck file added)
        self._schedulable: set[str] = set()
        # the card last shown (_Seen), which its preview and its rating take while nothing
        # has been written since
        self._seen: _Seen | None = None
        self.stats = SessionStats(started=now)
        self._shown_at = time.monotonic()
        # the card on screen, once asked for (``current``), with its entry in ``learning``:
        # it stays the current card until it is rated, marked away or undone, however the
        # clock moves meanwhile (a learning step coming due never takes its place)
        self._pinned: tuple[Card, tuple[datetime, str] | None] | None = None

    # --- the current card ---------------------------------------------------------------

    def _shown(self) -> tuple[Card, tuple[datetime, str] | None] | None:
        """The current card and its learning entry: the pinned one while it is still where it
        was (in front of the queue, or waiting in ``learning``), else the next one, pinned."""
        pinned = self._pinned
        if pinned is not None:
            card, entry = pinned
            if entry is None and self.queue and self.queue[0] == card.id:
                return pinned
            if entry is not None and entry in self.learning:
                return pinned
        self._pinned = found = self._next()
        top = found[0] if found else None
        if top and top.id in self._schedulable and top.id != (self._seen or ("",))[0]:
            self._schedulable_now(top)  # (a step shown again: read as a card shown is)
        return found

    def _pin(self, card_id: str, entry: tuple[datetime, str] | None = None) -> None:
        card = self.collection.get(card_id)
        self._pinned = None if card is None else (card, entry)

    def _next(self) -> tuple[Card, tuple[datetime, str] | None] | None:
        """The card to show now and, when it is a waiting learning card, its entry: a learning
        card whose step is due first, then the queue, then (nothing else left) the soonest
        learning card within the learn-ahead limit, shown early."""
        now = self.clock()
        if self._adopts:
            # another terminal committed (what it made due joins: its Again), or the study
            # day rolled over at 4 am (a comparison: the queue becomes the new day's)
            if self._stale or now >= self._day_end:
                self.take_in_changes()
            takein.adopt_due_steps(self, now)
        while self.queue:
            front = self.queue[0]
            if front in self._schedulable:
                card, read = self.collection.get(front), None
            else:  # (shown first: its text and what a card shown reads, in one statement)
                card, read = self.collection.shown(front, self.scheduler.replay_params())
            if (
                card is not None
                and (read is None or self._schedulable_now(card, read))
                and not self._parent_unanswered(card)
                and not self._studied_elsewhere(card.id)
            ):
                break
            # removed from the decks since the queue was built, unusable, a new follow-up
            # whose parent was buried or suspended unanswered, or rated elsewhere since
            self.queue.popleft()
        self.learning = [e for e in self.learning if e[1] in self.collection]  # (none built)
        if self.learning and self.learning[0][0] <= now:
            return self._card(self.learning[0][1]), self.learning[0]
        if self.queue:
            return self._card(self.queue[0]), None
        first = self.learning[0] if self.learning else None
        if first and first[0] <= now + self.learn_ahead and first[1] not in self._by_day:
            return self._card(first[1]), first
        return None

    def _card(self, card_id: str) -> Card:
        """A card of the lists just filtered by ``get`` (so in the collection)."""
        card = self.collection.get(card_id)
        assert card is not None, card_id
        return card

    def _studied_elsewhere(self, card_id: str) -> bool:
        """Whether the queued card's newest review (read when shown) is newer than its queue and
        not this session's: rated elsewhere meanwhile. Today's session only (as take_in_changes)."""
        last = self._seen[5] if self._seen is not None and self._seen[0] == card_id else None
        return last is not None and last >= self._first_id and last not in self._review_ids

    def _parent_unanswered(self, card: Card) -> bool:
        """A new follow-up waits for its parent to have been answered: the parent, queued
        before it, may have been buried or suspended unseen this session."""
        if card.parent is None or self.kind_of.get(card.id) != "new":
            return False
        return self.store.card(card.parent) is None

    def _schedulable_now(self, card: Card, read: ShownRead | None = None) -> bool:
        """Whether the scheduler can rate this card's stored state. A state it rejects (from a
        hand-edited database, or an import before imports were validated) skips the card with
        a notice instead of crashing the session when the answer is revealed. The check is
        the card's preview, with the key its review will get: the scheduler keeps it for the
        preview asked for when the answer is shown and for the rating (one computation)."""
        # the mark, the settings, the card's row, its review's id and its text's hash in the
        # deck cache: one statement
        mark: tuple[int, int] | None
        if read is None:
            read = self.store.shown_card(
                card.id, self.collection.place(card.id), self.scheduler.replay_params()
            )
        mark, text, stored, key, deck_hash, last = read
        try:
            self._follow_settings(self.store.settings_from(text))
        except StoreError:  # settings saved invalid meanwhile (a hand edit): the preview
            mark = None  # and the rating read them again and say so, as they did before
        if stored is None:
            stored = CardState(id=card.id, deck=card.deck, content_hash=card.content_hash)
        state = stored
        why = state_problem(state)
        if why is None:
            try:
                self.scheduler.check(state, self.clock(), key)
            except (ArithmeticError, AssertionError, TypeError, ValueError) as exc:
                why = f"the scheduler cannot rate it ({type(exc).__name__}: {exc})"
        if why is not None:
            self.skipped.append((card.id, why))
            self.notices.append(f"Skipped card {card.id}: its stored state is unusable: {why}")
            return False
        self._schedulable.add(card.id)
        self._seen = None if mark is None else (card.id, mark, state, key, deck_hash, last)
        if mark is not None:
            self._steps.seen(mark)
            # another connection's commit since the queue was built (the changes mark read
            # here differs): the queue is built again at the next card. Inline, not a helper:
            # an answer's Python calls are counted (tests/test_answer_calls.py)
            if self._version is not None and mark[0] != self._version:
                self._stale = True
        return True

    def take_notices(self) -> list[str]:
        """Messages for the user since the last call (cards skipped, and why)."""
        notices, self.notices = self.notices, []
        return notices

    @property
    def current(self) -> Card | None:
        """The card to show: once asked for, the same card until it is rated, marked away or
        undone (``rate`` and ``set_mark`` act on it and refuse to act on another)."""
        found = self._shown()
        return found[0] if found else None

    @property
    def early(self) -> timedelta | None:
        """How long before its step is due the current card is shown (learn-ahead), or None
        when it is not early."""
        found = self._shown()
        if found is None or found[1] is None:
            return None
        ahead = found[1][0] - self.clock()
        return ahead if ahead > timedelta(0) else None

    def counts(self) -> tuple[int, int, int]:
        """Anki's three numbers: new, learning and due (review) cards left in this session
        (the card on screen included), as home counts them (``deck_counts``). Past the study
        day's end (4 am: an app left open) they are the new day's, the card on screen still
        in front, as a fresh session's are: no rating needed first (a comparison each time)."""
        now = self.clock()
        if self._adopts and now >= self._day_end:
            self.take_in_changes()
        self._shown()  # (the steps come due from elsewhere are taken in first)
        kinds = [self.kind_of.get(cid, "review") for cid in self.queue]
        steps = len(self.learning)  # (an interday one: from its rollover)
        steps -= sum(d > now for d, cid in self.learning if cid in self._by_day)
        return (
            kinds.count("new"),
            kinds.count("learning") + steps,
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
        return self._state_and_key(card)[0]

    def _state_and_key(self, card: Card) -> tuple[CardState, str]:
        """The card's stored state (a new card's when it has none) and the id its review
        would get (Store.next_review_key), read together."""
        stored, key = self.store.card_and_key(card.id)
        if stored is not None:
            return stored, key
        return CardState(id=card.id, deck=card.deck, content_hash=card.content_hash), key

    def _follow_settings(self, saved: Settings | None = None) -> None:
        """Use the saved settings (``saved``: as just read) when they changed since this
        session last looked (the scheduler keeps its fuzzing and seed)."""
        if saved is None:
            saved = self.store.settings()
        if saved != self._settings_seen:
            self._settings_seen = saved
            self.scheduler = replace(self.scheduler, settings=saved)
            self.learn_ahead = timedelta(minutes=saved.learn_ahead_min)
            takein.see_plan(self, self.clock(), saved)  # (an interview date set, moved or cleared)

    def preview(self) -> dict[Rating, Outcome]:
        """The outcome of each rating for the current card (for the rating buttons)."""
        card = self.current
        if card is None:
            return {}
        seen = self._seen
        if seen is not None and seen[0] == card.id and seen[1] == self.store.changes_mark():
            # nothing written anywhere since the card was shown (its state, the review id
            # and the settings as read then): the scheduler's kept preview, moved to now
            state, key = seen[2], seen[3]
        else:
            self._follow_settings()
            state, key = self._state_and_key(card)
        return self.scheduler.preview(state, self.clock(), key)

    def mark_shown(self) -> None:
        self._shown_at = time.monotonic()

    # --- rating and undo ----------------------------------------------------------------

    def _target(self, card_id: str | None, what: str) -> tuple[Card, tuple[datetime, str] | None]:
        """The current card (and its learning entry), checked against the card the front end
        showed: an action names that card, and one for any other card is refused."""
        found = self._shown()
        if found is None:
            raise NotCurrentCard(f"no card to {what}: the session is finished")
        if card_id is not None and found[0].id != card_id:
            raise NotCurrentCard(
                f"cannot {what} card {quoted(card_id)}: the card shown now is {quoted(found[0].id)}"
            )
        return found

    def rate(
        self,
        rating: Rating | int,
        duration_ms: int | None = None,
        *,
        card_id: str | None = None,
        content_hash: str | None = None,
    ) -> Outcome:
        """Rate the current card (the one shown: ``card_id`` names it, and a rating for any
        other card raises NotCurrentCard). ``content_hash`` is the text that was shown (the
        current card's by default): when the deck's text has changed since (another prep
        re-read an edited deck), the rating is kept for this card and its state is marked as
        changed, so it is shown as edited and reviewed on the new text."""
        card, entry = self._target(card_id, "rate")
        rating = rating_of(rating)
        seen = self._seen
        deck_hash = card.content_hash
        shown_hash = content_hash or card.content_hash
        now = self.clock()
        if duration_ms is None:
            duration_ms = int((time.monotonic() - self._shown_at) * 1000)
        duration_ms = clamp_duration(duration_ms) or 0  # never negative (a clock stepped back)
        outcomes: list[Outcome] = []

        def decide(prev: CardState) -> CardState:
            # never before the card's last review (a clock set back, or a review from a
            # machine whose clock runs ahead, received by a sync): the log's time order is
            # the order the ratings were made in, which a sync's replay follows (a hybrid
            # logical clock per card)
            at = now if prev.last_review is None else max(now, prev.last_review + _US)
            # (inside rate_card's transaction: the id this review gets; fuzz_by "card")
            outcome = self.scheduler.review(prev, rating, at, self.store.next_review_key())
            if shown_hash != deck_hash:
                # given on older text: kept, and flagged as edited since this review
                state = replace(outcome.state, content_hash=deck_hash, changed=True)
                outcome = replace(outcome, state=state)
            outcomes.append(outcome)
            return outcome.state

        # read in the write transaction (another terminal's rating is before or after this one),
        # the mark as when the card was shown: nothing written anywhere since, so the settings,
        # the text's hash and the card's row read then hold (engine/store/known.py)
        with self.store.transaction():
            mark = self.store.changes_mark()
            if seen is not None and seen[0] == card.id and seen[4] and seen[1] == mark:
                deck_hash = seen[4]
            else:
                self._follow_settings()
                deck_hash = self.collection.content_hash_now(card.id) or card.content_hash
            fresh = CardState(id=card.id, deck=card.deck, content_hash=deck_hash)
            review_id, _, _ = self.store.rate_card(
                fresh, decide, rating, now, duration_ms, self.scheduler.replay_params(), mark=mark
            )
        outcome = outcomes[-1]
        self._steps.rated(mark, outcome.state)
        if self._version is not None and mark[0] != self._version:  # as in _shown
            self._stale = True
        self._review_ids.append(review_id)
        if entry is None:
            self.queue.popleft()
        else:
            self.learning.remove(entry)
        self._from_learning.append(entry)
        self._history.append("rate")
        self.done.append(card.id)
        self.stats.reviewed += 1
        self.stats.ratings[int(rating)] += 1
        self.stats.again += rating is _AGAIN
        self.stats.seconds += duration_ms / 1000
        # when it comes back (an interview plan may bring a review forward): the plan as seen
        # now (a comparison until its view goes stale)
        if self.plan is not None and now >= self._plan_until:
            takein.see_plan(self, now)
        due = plan_mod.due_of(self.plan, self.collection, outcome.state)
        requeued = (
            self.requeue and due is not None and due <= now + max(LEARN_AHEAD, self.learn_ahead)
        )
        if requeued:  # a learning step due soon: see it again this session
            assert due is not None
            if interday(outcome.state.state, due, outcome.state.last_review):
                due = study_day_start(due)  # due by day, as a new session serves it (due.py)
                self._by_day.add(card.id)
            else:
                self._by_day.discard(card.id)
            self.learning.append((due, card.id))
            self.learning.sort()
            self.total += 1
        self._requeued.append(requeued)
        self._pinned = None
        self._seen = None  # (what was read of it is its state before this rating)
        self.mark_shown()
        return outcome

    def set_mark(self, change: str, *, card_id: str | None = None) -> Mark:
        """Suspend, bury or flag (toggle) the current card (``card_id`` names the card shown;
        any other is refused), stored at once and undoable like a rating. A suspended or
        buried card leaves this session; a flagged one stays."""
        card, entry = self._target(card_id, "mark")
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
                self.queue.popleft()
            else:
                self.learning.remove(entry)
        self._history.append((card.id, before, entry if change != "flag" else ("keep", card.id)))
        if change != "flag":
            self._pinned = None
        return after

    @property
    def undoable(self) -> bool:  # a rating or mark of this session to undo (undo may still refuse)
        return bool(self._history)

    def undo(self) -> Card | None:
        """Undo this session's last rating or mark: a rating's stored state is restored
        exactly, a mark is cleared back to what it was, and the card is put back in front.
        Returns the card, or None when there is nothing to undo."""
        if self._history and self._history[-1] != "rate":
            undone = self._history.pop()
            assert not isinstance(undone, str)
            card_id, before, entry = undone
            self.store.set_mark(card_id, before)
            if entry != ("keep", card_id):  # it had left the session: back in front
                if entry is not None:
                    self.kind_of[card_id] = "learning"
                self.queue.insert(0, card_id)
                self._pin(card_id)  # the card back is the card shown next
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
        self._pin(card_id)  # and shown next, even when a learning step has come due meanwhile
        self.stats.reviewed -= 1
        self.stats.ratings[last.rating] -= 1
        self.stats.again -= last.rating == Rating.Again
        self.stats.seconds -= (last.duration_ms or 0) / 1000
        self.mark_shown()
        return self.collection.get(card_id)

    def take_in_changes(self) -> None:
        """Other devices' reviews applied under this session (the app's sync, between two
        cards): today's queue is built again as a new session would build it, so a card
        studied elsewhere leaves it and a card come due joins it, and the three numbers agree
        with home's. This session's learning steps, ratings, undo and stats are kept, and so
        is the card pinned on screen (or put back by undo), in front. Today's session only
        (a queue given by the caller, review ahead or a mock's, is left as it is)."""
        takein.take_in(self)

    def summary(self) -> dict:
        """End-of-session summary: cards, again-rate, time, what is due next."""
        now = self.clock()
        # counted as the forecast counts (by day; suspended cards not, buried ones when back)
        due_by_tomorrow = sum(due_per_day(self.store, self.collection, now, 2))
        return {
            "reviewed": self.stats.reviewed,
            "again": self.stats.again,
            "again_rate": self.stats.again_rate,
            "seconds": round(self.stats.seconds, 1),
            "next_due": next_due(self.store, now),
            "due_by_tomorrow": due_by_tomorrow,
        }
