"""Reviews: the append-only review log (the reviews table), rating, undo and its counts.

Part of the one `Store` (engine/store/__init__.py combines the tables' classes).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, NamedTuple

from prep.engine.store import devices
from prep.engine.store import known as known_mod
from prep.engine.store.cards import CardsStore, _row_to_state, state_to_json, state_to_row
from prep.engine.store.core import StoreError
from prep.engine.store.known import CARD_AND_STAMP, SHOWN_TEXT, Shown, ShownRead
from prep.engine.store.reviewlog import Chain, from_us, times_of, to_us
from prep.engine.store.schema import CARD_COLUMNS
from prep.engine.store.schema13 import card_number
from prep.engine.store.schema14 import FOLD, TALLY_MARK, fold_tally
from prep.engine.study.scheduler import CardState, State
from prep.engine.textsafe import quoted
from prep.engine.timeutil import EARLIEST, LATEST_STORED, clamp_duration, fmt, utcnow


@dataclass(frozen=True)
class Review:
    """One rating in the review log, with the card's state before and after it."""

    id: int
    card_id: str
    rating: int
    reviewed_at: datetime
    duration_ms: int | None
    prev: CardState | None
    next: CardState


def _json_or_none(text: str | None) -> Any:
    return None if text is None else json.loads(text)


class DamagedReview(NamedTuple):
    """A review row that cannot be read (a hand edit, a damaged page): named, never guessed."""

    id: int
    card_id: str
    why: str

    def __str__(self) -> str:
        return f"review {self.id} (card {quoted(self.card_id)}): {self.why}"


def _row_problem(rating: Any, at: Any, dur: Any, prev_state: Any) -> str | None:
    """Why a review row's plain columns are not what prep writes (an import would refuse)."""
    if type(rating) is not int or not 1 <= rating <= 4:
        return f"rating is {rating!r}, not 1 to 4"
    if type(at) is not int:
        return f"its time is {quoted(str(at)[:40])}, not a time"
    if dur is not None and type(dur) is not int:
        return f"duration_ms is {quoted(str(dur)[:40])}"
    if prev_state is not None and prev_state not in (1, 2, 3):
        return f"prev_state is {quoted(str(prev_state)[:40])}"
    return None


def _decode(
    rows: Iterable[tuple], damaged: list[DamagedReview] | None = None
) -> Iterator[tuple[Review, int | None]]:
    """Review log rows (``_REVIEW_COLS``, in id order, each card's from its first review)
    as Reviews, with the prev_state column beside each. A row that cannot be read is a
    StoreError naming it, or, given ``damaged``, is left out and listed there (export and
    optimize read the rest)."""
    chain = Chain()
    lo, hi = to_us(EARLIEST), to_us(LATEST_STORED)
    for rid, cid, rating, at, dur, prev_state, prev, nxt in rows:
        why = None
        if not (
            type(rating) is int
            and 1 <= rating <= 4
            and type(at) is int
            and lo <= at < hi
            and (dur is None or type(dur) is int)  # < 0: an older prep's, read as 0
            and (prev_state is None or prev_state in (1, 2, 3))
        ):
            why = _row_problem(rating, at, dur, prev_state) or "its time is out of range"
        else:
            try:
                p, n = chain.decode(cid, prev_state, prev, nxt, at)
                if n is None:
                    why = "it has no state after the review"
            except Exception as exc:  # struct.error, ValueError, ...: whatever the bytes hold
                why = f"its stored states cannot be read ({type(exc).__name__}: {exc})"
        if why is not None:
            bad = DamagedReview(rid, str(cid), why)
            if damaged is None:
                raise StoreError(
                    f"the review log is damaged at {bad}; `prep export` saves the other reviews",
                    kind="damaged",
                )
            damaged.append(bad)
            continue
        dur = dur if dur is None or dur >= 0 else 0  # a clock that stepped back (older prep)
        yield Review(rid, cid, rating, from_us(at), dur, p, n), prev_state


def _review_dict(review: Review, prev_state: int | None) -> dict[str, Any]:
    """A review as exported: schema.REVIEW_COLUMNS, states as JSON text."""
    return {
        "card_id": review.card_id,
        "reviewed_at": fmt(review.reviewed_at),
        "rating": review.rating,
        "duration_ms": review.duration_ms,
        "prev_state": prev_state,
        "prev": state_to_json(review.prev),
        "next": state_to_json(review.next),
    }


_REVIEW_COLS = "id, card_id, rating, at, duration_ms, prev_state, prev, next"
_CARD_COLS = ", ".join(CARD_COLUMNS)
_CARD_MARKS = ", ".join("?" * len(CARD_COLUMNS))
_CARD_SETS = ", ".join(f"{c} = excluded.{c}" for c in CARD_COLUMNS if c != "id")
# a rated card's row when this transaction read it (rate_card): an UPDATE, not an upsert's
# INSERT tried first
_CARD_UPDATE = (
    f"UPDATE cards SET {', '.join(f'{c} = ?' for c in CARD_COLUMNS if c != 'id')}, logged = ? "
    "WHERE id = ?"
)
# a rating's stamp (STAMP_SQL) with the number of its scheduler parameters when they are
# stored already (devices.params_n's lookup): one statement
_head, _tail = devices.STAMP_SQL.rsplit(" FROM me", 1)
_RATING_STAMP = f"{_head}, (SELECT n FROM sched_params WHERE value = ?) FROM me{_tail}"
# what a rating reads of the card (rate_card): its row, the review its row is the state after
# (schema v14), its number in the log and its newest review (as _log_head)
_RATED_ROW = (
    f"SELECT {', '.join(f'c.{c}' for c in CARD_COLUMNS)}, c.logged, rc.n, "
    "(SELECT max(id) FROM revlog WHERE cn = rc.n) "
    "FROM cards c LEFT JOIN review_cards rc ON rc.id = c.id WHERE c.id = ?"
)


class ReviewsStore(CardsStore):
    """The reviews table."""

    # inside rate_card: the stamp of the review being made (next_review_key's answer)
    _rating_stamp: tuple[int, str, int] | None = None
    # what shown_card last read (engine/store/known.py)
    _shown_read: Shown | None = None

    # --- reviews ------------------------------------------------------------------------

    def record_review(
        self,
        prev: CardState | None,
        new: CardState,
        rating: int,
        reviewed_at: datetime,
        duration_ms: int | None = None,
        params: dict[str, Any] | None = None,
        *,
        stored: tuple[CardState | None, int | None] | None = None,
        head: tuple[int | None, int | None] | None = None,
        stamp: tuple[int, str, int] | None = None,
        params_n: int | None = None,
    ) -> int:
        """Write the new card state and the review in one committed transaction. ``params``:
        the scheduler's replay_params (default: the saved settings, fuzzed, seed 0), stored
        with the review so that a sync replays it as it was made. ``stored``: the card's row
        as read in this transaction and its ``logged`` review (rate_card), when ``prev`` is
        that row: when the row is its newest review's state, the state before is stored as
        NULL ("that review's next"), else in full (engine/store/schema14.py). ``head`` (the
        card's log number and newest review, ``_log_head``) and ``stamp``
        (devices.review_stamp), when the caller read them in this transaction; ``params_n``:
        the number of ``params`` in sched_params, when the caller looked it up."""
        prev_in = prev
        prev_state = None if prev is None or prev.is_new else prev.state
        prev = None if prev is None or prev.is_new else prev
        duration_ms = clamp_duration(duration_ms)  # what an import takes back: 0 .. a day
        if params is None:
            from prep.engine.study.scheduler import replay_params

            params = replay_params(self.settings(), True, 0)
        at = to_us(reviewed_at)
        with self.transaction():
            cn, last = self._log_head(new.id) if head is None else head
            if prev is None:
                known = last is None  # the card's first review: no state to follow
            else:  # (schema v14) the row is exactly the state after the card's newest review
                known = (
                    stored is not None
                    and stored[0] is prev_in
                    and stored[1] is not None
                    and stored[1] == last
                )
            # the card's log is never read here: when the row is not known to be its newest
            # review's state (rated before v14, changed since by a sync, an undo, a deck
            # edit), the state before is stored in full, as a sync's chain starts
            chain = Chain()
            if known and prev is not None:
                chain.last[new.id] = prev
            pblob, nblob = chain.encode(new.id, prev_state, prev, new, at)
            dev, _dev_id, rid = stamp or devices.review_stamp(self.conn)
            row = state_to_row(new)
            if stored is not None and stored[0] is not None and stored[0].id == new.id:
                # the row read in this transaction (rate_card): there, so updated
                self.conn.execute(_CARD_UPDATE, (*(row[c] for c in CARD_COLUMNS[1:]), rid, new.id))
            else:
                self.conn.execute(
                    f"INSERT INTO cards ({_CARD_COLS}, logged) VALUES ({_CARD_MARKS}, ?) "
                    f"ON CONFLICT(id) DO UPDATE SET {_CARD_SETS}, logged = excluded.logged",
                    (*(row[c] for c in CARD_COLUMNS), rid),
                )
            self.conn.execute(
                "INSERT INTO revlog (id, cn, rating, at, duration_ms, prev_state, prev, "
                "next, dev, params) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    rid,
                    card_number(self.conn, new.id) if cn is None else cn,
                    int(rating),
                    at,
                    duration_ms,
                    prev_state,
                    pblob,
                    nblob,
                    dev,
                    devices.params_n(self.conn, params) if params_n is None else params_n,
                ),
            )
            if rid % FOLD == 0:  # (schema v14) the tally catches up, once every FOLD ratings
                fold_tally(self.conn)
            return rid

    def _log_head(self, card_id: str) -> tuple[int | None, int | None]:
        """The card's number in the log (None before its first review) and its newest
        review's row id (None when it has none): one probe of each index."""
        row = self.conn.execute(
            "SELECT n, (SELECT max(id) FROM revlog WHERE cn = review_cards.n) FROM review_cards "
            "WHERE id = ?",
            (card_id,),
        ).fetchone()
        return (None, None) if row is None else (row[0], row[1])

    def next_review_key(self) -> str:
        """The id the next review made here will have, "DEVICE:SEQ" (Scheduler.review's ``key``:
        it seeded the fuzz of reviews whose replay parameters say "fuzz_by": "review", rounds
        7-11; new reviews seed it by the card, scheduler.FUZZ_BY_CARD); inside rate_card's
        transaction, the id it does get."""
        _n, dev_id, rid = self._rating_stamp or devices.review_stamp(self.conn)
        return f"{dev_id}:{rid}"

    def next_review_id(self) -> int:
        """The row id the next review made here takes (every later one's is larger)."""
        return devices.review_stamp(self.conn)[2]

    def card_and_key(self, card_id: str) -> tuple[CardState | None, str]:
        """The card's stored state (None before its first review) and the id its review
        would get (next_review_key), read in one statement: what a card shown asks."""
        row = self.conn.execute(CARD_AND_STAMP, (card_id,)).fetchone()
        _n, dev_id, rid = devices.stamp_of(row[:4])
        return (None if row[4] is None else _row_to_state(row[4:])), f"{dev_id}:{rid}"

    def shown_card(
        self,
        card_id: str,
        place: tuple[str, int] | None = None,
        params: dict[str, Any] | None = None,
    ) -> ShownRead:
        """What a card shown reads, in one statement: changes_mark (as it is for what is read
        here: the same snapshot), the saved settings' text (settings_from reads it), the card's
        stored state, the id its review would get (as card_and_key) and, given ``place`` (the
        deck cache's file and line of the card), the content hash of its text cached there
        (None when it is not at that line: deck_cache_card looks further), and the row id of
        its newest review (None before its first)."""
        return self.shown_card_text(card_id, place, params)[1]

    def shown_card_text(
        self, card_id: str, place: tuple[str, int] | None, params: dict[str, Any] | None = None
    ) -> tuple[tuple[int, str, str | None, str, str, str] | None, ShownRead]:
        """shown_card's read and the card's row in the deck cache at ``place``, as
        deck_cache_card's first lookup gives it (None when it is not at that line), in the
        same statement: what a card not built yet is built from (CachedCollection.shown)."""
        text = None if params is None else devices.params_text(params)
        where = (None, None) if place is None else place
        row = self.conn.execute(SHOWN_TEXT, (text, card_id, card_id, *where, card_id)).fetchone()
        end = 7 + len(CARD_COLUMNS)
        stamp = devices.stamp_of(row[3:7])
        state = None if row[7] is None else _row_to_state(row[7:end])
        mark = (int(row[0]), self.conn.total_changes)
        # what rate_card would read again of this card (``known``): valid while ``mark`` holds
        self._shown_read = Shown(
            card_id, mark, state, row[end], row[end + 1], row[end + 2], stamp, (text, row[2])
        )
        cached, chash = row[-6:], row[-1]  # (chash is never NULL in the cache: no row)
        return (None if chash is None else cached), (
            mark,
            row[1],
            state,
            f"{stamp[1]}:{stamp[2]}",
            chash,
            row[end + 2],
        )

    def changes_mark(self) -> tuple[int, int]:
        """What moves whenever the database may have changed: other connections' commits
        (PRAGMA data_version) and the rows this one wrote (total_changes). The same mark
        twice: nothing was written in between, so what was read before still holds."""
        (version,) = self.conn.execute("PRAGMA data_version").fetchone()
        return int(version), self.conn.total_changes

    def _card_log(self, card_id: str) -> list[tuple[Review, int | None]]:
        """One card's reviews, oldest first (its states are read along its chain)."""
        rows = self.conn.execute(
            "SELECT id, ?, rating, at, duration_ms, prev_state, prev, next FROM revlog "
            "WHERE cn = (SELECT n FROM review_cards WHERE id = ?) ORDER BY id",
            (card_id, card_id),
        )
        return list(_decode(rows))

    def _chain(self, card_id: str) -> Chain:
        """A chain positioned after the card's newest review, to append the next one."""
        chain = Chain()
        log = self._card_log(card_id)
        if log:
            chain.last[card_id] = log[-1][0].next
        return chain

    def rate_card(
        self,
        fresh: CardState,
        decide: Callable[[CardState], CardState],
        rating: int,
        reviewed_at: datetime,
        duration_ms: int | None = None,
        params: dict[str, Any] | None = None,
        *,
        mark: tuple[int, int] | None = None,
    ) -> tuple[int, CardState, CardState]:
        """Rate a card: read its stored state (``fresh`` when it has none), let ``decide``
        compute the next one, and write both, all inside one write transaction. Two sessions
        rating the same card serialise: the second reads the first one's result, so the review
        log stays a chain (each review's prev is the previous review's next) and ``reps``
        counts the reviews. Returns (review id, prev, next).

        ``mark``: changes_mark as the caller read it inside this transaction (it opened it).
        When it is the mark under which shown_card read this card, nothing has been written
        anywhere since (engine/store/known.py): the card's row, the review's id and the
        parameters' number read then are used, not read again."""
        with self.transaction():
            known = known_mod.rating(self, fresh.id, mark, params)
            if known is not None:
                shown, pn = known
                stamp = shown.stamp
                row: tuple | None = (shown.logged, shown.cn, shown.last)
                stored = shown.state
            # the id this review takes (``decide``'s key, next_review_key
            # answers from it until the review is written) with the number of the parameters
            # when stored, then the card's row, its number in the log and its newest review
            elif params is None:
                stamp, pn = devices.review_stamp(self.conn), None
            else:
                found = self.conn.execute(_RATING_STAMP, (devices.params_text(params),)).fetchone()
                stamp, pn = devices.stamp_of(found[:4]), found[4]
            self._rating_stamp = stamp
            try:
                if known is None:
                    row = self.conn.execute(_RATED_ROW, (fresh.id,)).fetchone()
                    stored = None if row is None else _row_to_state(row[:-3])
                prev = stored or fresh
                new = decide(prev)
                if new.last_review is not None and new.last_review > reviewed_at:
                    reviewed_at = new.last_review  # decide kept it after the card's last review
                rid = self.record_review(
                    prev,
                    new,
                    rating,
                    reviewed_at,
                    duration_ms,
                    params,
                    stored=(stored, None if row is None else row[-3]),
                    head=None if row is None else (row[-2], row[-1]),
                    stamp=stamp,
                    params_n=pn,
                )
            finally:
                self._rating_stamp = None
            return rid, prev, new

    def last_review(self) -> Review | None:
        row = self.conn.execute(
            "SELECT r.id, c.id FROM revlog r JOIN review_cards c ON c.n = r.cn "
            "ORDER BY r.id DESC LIMIT 1"
        ).fetchone()
        return None if row is None else self._card_log(row[1])[-1][0]

    def undo_last(self, expected_id: int | None = None) -> Review | None:
        """Remove the newest review and restore the card's exact previous state (or remove
        the card's row if it was new). Returns the undone review, or None if there is none —
        or, with ``expected_id``, if the newest review is another one (say another session's
        rating committed since): checked inside the same write transaction. Only this device's
        reviews are undone (one received by a sync is not "the last rating"), and only the
        newest of its card. The review leaves a tombstone that a sync takes to the others."""
        with self.transaction():
            row = self.conn.execute(
                "SELECT r.id, c.id FROM revlog r JOIN review_cards c ON c.n = r.cn "
                "WHERE r.dev = ? ORDER BY r.id DESC LIMIT 1",
                (devices.device(self.conn),),
            ).fetchone()
            if row is None or (expected_id is not None and row[0] != expected_id):
                return None
            log = self._card_log(row[1])
            review = log[-1][0]
            if review.id != row[0]:
                return None  # a later review of the card (received by a sync) follows it
            devices.bury_review(self.conn, review.id, review.card_id, utcnow())
            self.conn.execute("DELETE FROM revlog WHERE id = ?", (review.id,))
            if review.prev is None:
                self.conn.execute("DELETE FROM cards WHERE id = ?", (review.card_id,))
            else:
                current = self.card(review.card_id)
                restored = review.prev
                if isinstance(restored, CardState) and restored.id != review.card_id:
                    # a review moved here from a merged-away card (Store.adopt_aliases)
                    restored = CardState(**{**asdict(restored), "id": review.card_id})
                if current is not None:
                    # membership flags describe the deck now, not the card's history
                    restored = CardState(
                        **{**asdict(restored), "removed": current.removed, "deck": current.deck}
                    )
                self.put_card(restored)
                if len(log) > 1 and log[-2][0].next == restored:
                    # the row is again exactly its newest review's state (schema v14)
                    self.conn.execute(
                        "UPDATE cards SET logged = ? WHERE id = ?", (log[-2][0].id, review.card_id)
                    )
            return review

    def reviews(
        self,
        since: datetime | None = None,
        card_id: str | None = None,
        *,
        damaged: list[DamagedReview] | None = None,
    ) -> list[Review]:
        """The review log (since a time, of one card). A damaged row is a StoreError naming
        it, or, given ``damaged``, left out and listed there."""
        if card_id is not None:
            out = [r for r, _ in self._card_log(card_id)]
        else:
            rows = self.conn.execute(f"SELECT {_REVIEW_COLS} FROM reviews ORDER BY id")
            out = [r for r, _ in _decode(rows, damaged)]
        if since is not None:
            out = [r for r in out if r.reviewed_at >= since]
        return out

    def count_reviews(
        self,
        since: datetime | None = None,
        until: datetime | None = None,
        *,
        new_only: bool = False,
        prev_state: int | None = None,
    ) -> int:
        """Reviews (in [since, until)): all, only of new cards, or only of cards that were in
        one fsrs state when reviewed. A day's count needs ``until``: a review dated later (made
        before the clock went back) belongs to its own day."""
        where: list[str] = []
        args: list[Any] = []
        if since is not None:
            where.append("at >= ?")
            args.append(to_us(since))
        if until is not None:
            where.append("at < ?")
            args.append(to_us(until))
        if new_only:
            where.append("prev_state IS NULL")
        if prev_state is not None:
            where.append("prev_state = ?")
            args.append(prev_state)
        if since is until is None and new_only != (prev_state is not None) and prev_state != 0:
            # by state over the whole log: review_tally's few rows (schema v13; ps 0 is new)
            return self._tallied(prev_state or 0)[0]
        # no WHERE at all when nothing is filtered: SQLite then counts the smallest index's
        # pages instead of stepping every entry (a million reviews: 4 ms instead of 20)
        sql = "SELECT count(*) FROM revlog" + (f" WHERE {' AND '.join(where)}" if where else "")
        return int(self.conn.execute(sql, args).fetchone()[0])

    def step_reviews(self, since: datetime, until: datetime) -> list[tuple[int, Any, Any]]:
        """(state, due, last review) of the state before each review in [since, until) made in
        a learning or relearning state (few: a day's; engine/study/due.py tells the interday
        steps among them, which count against the review limit). A state not held in the row
        is its card's previous review's next (one index probe each)."""
        rows = self.conn.execute(
            "SELECT r.prev_state, r.at, r.prev, p.at, p.next FROM revlog AS r "
            "LEFT JOIN revlog AS p ON p.id = "
            "(SELECT max(id) FROM revlog WHERE cn = r.cn AND id < r.id) "
            "WHERE r.prev_state IN (1, 3) AND r.at >= ? AND r.at < ?",
            (to_us(since), to_us(until)),
        )
        out = []
        for state, at, prev, p_at, p_next in rows:
            blob, t = (p_next, p_at) if prev is None else (prev, at)
            last, due = times_of(blob, t) if t is not None else (None, None)
            out.append((state, due, last))
        return out

    def retention_counts(
        self, since: datetime | None = None, until: datetime | None = None
    ) -> tuple[int, int]:
        """Reviews of cards in the Review state (in [since, until)) and how many were not Again:
        true retention."""
        if since is None and until is None:  # the whole log: review_tally's few rows (schema v13)
            return self._tallied(int(State.Review))
        sql = "SELECT count(*), coalesce(sum(rating > 1), 0) FROM revlog WHERE prev_state = ?"
        args: list[int] = [int(State.Review)]
        if since is not None:
            sql += " AND at >= ?"
            args.append(to_us(since))
        if until is not None:
            sql += " AND at < ?"
            args.append(to_us(until))
        n, passed = self.conn.execute(sql, args).fetchone()
        return int(n), int(passed)

    def _tallied(self, ps: int) -> tuple[int, int]:
        """The whole log's reviews made in fsrs state ``ps`` (0: new cards), and how many of
        them were not Again: review_tally's rows, and the rows past its mark (schema v14: at
        most FOLD of them after a rating, a range of row ids) counted here."""
        n, passed = self.conn.execute(
            "SELECT (SELECT coalesce(sum(n), 0) FROM review_tally WHERE ps = ?1) "
            f"+ (SELECT count(*) FROM revlog WHERE id > {TALLY_MARK} "
            "AND coalesce(prev_state, 0) = ?1), "
            "(SELECT coalesce(sum(n), 0) FROM review_tally WHERE ps = ?1 AND rating > 1) "
            f"+ (SELECT count(*) FROM revlog WHERE id > {TALLY_MARK} "
            "AND coalesce(prev_state, 0) = ?1 AND rating > 1)",
            (ps,),
        ).fetchone()
        return int(n), int(passed)

    def reviewed_between(self, start: datetime, end: datetime) -> bool:
        """Whether any review was made in [start, end) (one indexed probe)."""
        row = self.conn.execute(
            "SELECT 1 FROM revlog WHERE at >= ? AND at < ? LIMIT 1",
            [to_us(start), to_us(end)],
        ).fetchone()
        return row is not None

    def latest_review_at(self) -> datetime | None:
        """When the newest review in the log was made (one probe of the time index)."""
        at = self.conn.execute("SELECT max(at) FROM revlog").fetchone()[0]
        return None if at is None else from_us(at)

    def reviews_per_interval(self, bounds: list[datetime]) -> list[int]:
        """Reviews made in each [bounds[i], bounds[i + 1]): one indexed range count each
        (the caller draws the study days' bounds, DST and all; no date() per review)."""
        values = ", ".join("(?, ?)" for _ in bounds[1:])
        args = [to_us(t) for pair in zip(bounds[:-1], bounds[1:], strict=True) for t in pair]
        rows = self.conn.execute(
            f"WITH b(lo, hi) AS (VALUES {values}) "
            "SELECT (SELECT count(*) FROM revlog WHERE at >= b.lo AND at < b.hi) FROM b",
            args,
        )
        return [n for (n,) in rows]
