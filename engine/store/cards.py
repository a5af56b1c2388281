"""Cards: each card's FSRS state (the cards table), the queue's due ids and the counts on it.

Part of the one `Store` (engine/store/__init__.py combines the tables' classes).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Literal

from prep.engine.store.core import StoreCore
from prep.engine.store.reviewlog import state_json
from prep.engine.store.schema import (
    CARD_COLUMNS,
)
from prep.engine.store.schema14 import MATURE_DAYS, NOT_REVIEW_SQL
from prep.engine.study.scheduler import CardState, State
from prep.engine.timeutil import fmt, parse


def state_to_json(s: CardState | None) -> str | None:
    if s is None:
        return None
    if isinstance(s, str):  # a reviewlog.LegacyState: kept verbatim
        return s
    return state_json(s)


def state_from_json(text: str | None) -> CardState | None:
    if text is None:
        return None
    d = json.loads(text)
    d["due"] = parse(d.get("due"))
    d["last_review"] = parse(d.get("last_review"))
    return CardState(**d)


_CARD_COLS = ", ".join(CARD_COLUMNS)


def _stored_time(value: Any) -> Any:
    """A stored time as a datetime; a value that is not one (a hand edit: 'tomorrow') is kept
    as it is, so the session skips the card saying what it holds (state_problem) instead of
    crashing or hiding it."""
    try:
        return parse(value)
    except (ValueError, TypeError, OverflowError):
        return value


def _row_to_state(row: tuple) -> CardState:
    (
        cid,
        deck,
        state,
        step,
        stab,
        diff,
        due,
        last,
        reps,
        lapses,
        leech,
        chash,
        changed,
        removed,
    ) = row
    return CardState(
        id=cid,
        deck=deck,
        state=state,
        step=step,
        stability=stab,
        difficulty=diff,
        due=_stored_time(due),
        last_review=_stored_time(last),
        reps=reps,
        lapses=lapses,
        leech=bool(leech),
        content_hash=chash or "",
        changed=bool(changed),
        removed=bool(removed),
    )


def state_to_row(s: CardState) -> dict[str, Any]:
    return {
        "id": s.id,
        "deck": s.deck,
        "state": s.state,
        "step": s.step,
        "stability": s.stability,
        "difficulty": s.difficulty,
        "due": fmt(s.due) if isinstance(s.due, datetime) else s.due,  # a hand edit as it is
        "last_review": fmt(s.last_review) if isinstance(s.last_review, datetime) else s.last_review,
        "reps": s.reps,
        "lapses": s.lapses,
        "leech": int(s.leech),
        "content_hash": s.content_hash,
        "changed": int(s.changed),
        "removed": int(s.removed),
    }


class CardsStore(StoreCore):
    """The cards table."""

    def put_card(self, state: CardState) -> None:
        row = state_to_row(state)
        cols = ", ".join(row)
        updates = ", ".join(f"{c} = excluded.{c}" for c in row if c != "id")
        self.conn.execute(
            f"INSERT INTO cards ({cols}) VALUES ({', '.join('?' * len(row))}) "
            f"ON CONFLICT(id) DO UPDATE SET {updates}",
            tuple(row.values()),
        )

    # --- cards --------------------------------------------------------------------------

    def card(self, card_id: str) -> CardState | None:
        row = self.conn.execute(
            f"SELECT {_CARD_COLS} FROM cards WHERE id = ?", (card_id,)
        ).fetchone()
        return _row_to_state(row) if row else None

    def cards(self, ids: Iterable[str] | None = None) -> dict[str, CardState]:
        if ids is None:
            rows = self.conn.execute(f"SELECT {_CARD_COLS} FROM cards").fetchall()
        else:
            rows = []
            id_list = list(ids)
            for i in range(0, len(id_list), 900):
                chunk = id_list[i : i + 900]
                marks = ",".join("?" * len(chunk))
                rows += self.conn.execute(
                    f"SELECT {_CARD_COLS} FROM cards WHERE id IN ({marks})", chunk
                ).fetchall()
        return {r[0]: _row_to_state(r) for r in rows}

    def seen_ids(self) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT id FROM cards")}

    def due_ids(
        self,
        now: datetime,
        *,
        limit: int | None = None,
        decks: Iterable[str] | None = None,
        state: int | None = None,
        not_state: int | None = None,
    ) -> list[str]:
        """Ids of cards due at ``now``, most overdue first (uses the (removed, due, ...) index),
        optionally only those in (or not in) one fsrs state."""
        # cards in learning and relearning (any state but Review) are few: they are read from
        # their partial index, never by stepping over every overdue Review card (schema v14)
        learning = (state is not None and state != State.Review) or not_state == State.Review
        index = "cards_learning" if learning else "cards_due"
        sql = f"SELECT id, due FROM cards INDEXED BY {index} WHERE removed = 0 AND due <= ?"
        if learning:
            sql += f" AND {NOT_REVIEW_SQL}"  # (the index's own condition, as it is written)
        args: list[Any] = [fmt(now)]
        if state is not None:
            sql += " AND state = ?"
            args.append(state)
        if not_state is not None:
            # as IN (...) so that SQLite takes one index range per state
            others = [int(x) for x in State if x != not_state]
            sql += f" AND state IN ({', '.join('?' * len(others))})"
            args += others
        if decks is not None:
            deck_list = list(decks)
            sql += f" AND deck IN ({','.join('?' * len(deck_list))})"
            args += deck_list
        # a due that is not a time (a hand edit: 'tomorrow', sorted after every date) is served
        # too, so that the session skips it with a message instead of hiding the card: a second
        # range of the same index, merged in due order in one statement (every time sorts
        # before ':', so the due cards come first; LIMIT stops both ranges early)
        sql += f" UNION ALL {sql.replace('due <= ?', 'due >= ?', 1)} ORDER BY 2"
        args += [":", *args[1:]]
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        return [r[0] for r in self.conn.execute(sql, args)]

    def learning_rows(
        self,
        *,
        until: datetime | None = None,
        after: datetime | None = None,
        decks: Iterable[str] | None = None,
    ) -> list[tuple[str, str, int, str, str | None]]:
        """(id, deck, state, due, last review) as stored, soonest first, of the live learning
        and relearning cards (few: their partial index) due by ``until``, followed by those
        whose due is not a time (a hand edit; sorted after every time), or due after
        ``after`` (times only). engine/study/due.py tells the interday steps (due by day)
        from the others by their last review."""
        where, args = _learning_where(decks)
        part = f"SELECT id, deck, state, due, last_review FROM cards INDEXED BY cards_learning WHERE {where}"
        if until is not None:
            sql = f"{part} AND due <= ? UNION ALL {part} AND due >= ':' ORDER BY 4"
            args = [*args, fmt(until), *args]
        else:
            sql = f"{part} AND due > ? AND due < ':' ORDER BY 4"
            args.append(fmt(after) if after is not None else "")
        return [(r[0], r[1], r[2], r[3], r[4]) for r in self.conn.execute(sql, args)]

    def learning_window(
        self, window: datetime, decks: Iterable[str] | None = None
    ) -> tuple[list[tuple[str, str, int, str | None]], str, int]:
        """What due_ids(window, not_state=Review) reads, with each card's due, state and last
        review as stored (engine/study/due.py tells the interday steps by them), and
        in the same statement the earliest due after ``window`` (':' when none: every time
        sorts before it) and PRAGMA data_version: until the window reaches that due and while
        nothing is written, the answer changes only by this connection's own ratings
        (engine/study/duesteps.py keeps it). One statement, the learning index's ranges."""
        where, args = _learning_where(decks)
        part = f"FROM cards INDEXED BY cards_learning WHERE {where}"
        rows = self.conn.execute(
            "SELECT id, due, state, last_review FROM (SELECT id, due, state, last_review "
            f"{part} AND due <= ? UNION ALL SELECT id, due, state, last_review {part} "
            "AND due >= ':' ORDER BY 2) UNION ALL "
            f"SELECT NULL, coalesce(min(due), ':'), 0, NULL {part} AND due > ? AND due < ':' "
            "UNION ALL SELECT NULL, data_version, 0, NULL FROM pragma_data_version()",
            [*args, fmt(window), *args, *args, fmt(window)],
        ).fetchall()
        steps = [(r[0], r[1], r[2], r[3]) for r in rows[:-2]]
        return steps, rows[-2][1], int(rows[-1][1])

    def reconcile(self, cards: Iterable[Any]) -> dict[str, int]:
        """Reconcile stored progress with the loaded deck cards (objects with id, deck and
        content_hash): a card whose text changed keeps its progress and is marked changed;
        a stored card missing from the decks keeps its history and is marked removed; one
        that a card lists under ``aliases`` (merged into it) gives it its progress."""
        present = {c.id: c for c in cards}
        claims = [(c.id, c.aliases) for c in present.values() if getattr(c, "aliases", ())]
        if claims:
            from prep.engine.store.aliasrules import alias_map

            self.adopt_aliases(alias_map(claims, present))  # type: ignore[attr-defined]
        stored = {
            r[0]: (r[1], r[2], r[3])
            for r in self.conn.execute("SELECT id, content_hash, removed, deck FROM cards")
        }
        changed, removed, restored = [], [], []
        for cid, (chash, was_removed, deck) in stored.items():
            card = present.get(cid)
            if card is None:
                if not was_removed:
                    removed.append(cid)
                continue
            if was_removed:
                restored.append(cid)
            if card.content_hash != chash:
                changed.append((card.content_hash, card.deck, cid))
            elif card.deck != deck:
                changed.append((chash, card.deck, cid))
        if changed or removed or restored:
            with self.transaction():
                self.conn.executemany(
                    "UPDATE cards SET removed = 1 WHERE id = ?", [(c,) for c in removed]
                )
                self.conn.executemany(
                    "UPDATE cards SET removed = 0 WHERE id = ?", [(c,) for c in restored]
                )
                self.conn.executemany(
                    "UPDATE cards SET changed = (content_hash != ?) OR changed, content_hash = ?, deck = ? WHERE id = ?",
                    [(h, h, d, c) for h, d, c in changed],
                )
        return {"changed": len(changed), "removed": len(removed), "restored": len(restored)}

    # --- counts for stats and the home screen ---------------------------------------------

    def count_cards(self) -> int:
        """Cards with stored progress that are still in the decks."""
        return int(self.conn.execute("SELECT count(*) FROM cards WHERE removed = 0").fetchone()[0])

    def count_due(self, at: datetime) -> int:
        """Cards due at ``at`` (removed cards are not served)."""
        return int(
            self.conn.execute(
                "SELECT count(*) FROM cards WHERE removed = 0 AND due <= ?", [fmt(at)]
            ).fetchone()[0]
        )

    def next_due(
        self, after: datetime, *, review: bool | None = None, besides: Iterable[str] = ()
    ) -> datetime | None:
        """The first due time after ``after`` (None when nothing is scheduled); ``review``
        True: of Review cards only, False: of learning and relearning cards only; the cards
        ``besides`` (suspended or buried: a few ids) left out."""
        which = "" if review is None else " AND state = 2" if review else f" AND {NOT_REVIEW_SQL}"
        args: list[object] = [fmt(after)]
        left_out = list(besides)
        if left_out:
            which += " AND id NOT IN (SELECT value FROM json_each(?))"
            args.append(json.dumps(left_out))
        row = self.conn.execute(
            f"SELECT min(due) FROM cards WHERE removed = 0 AND due > ?{which}", args
        ).fetchone()
        return parse(row[0])

    def due_per_interval(self, bounds: list[datetime]) -> list[int]:
        """Live cards due in each [bounds[i], bounds[i + 1]), the first interval open below
        (overdue cards count in it): one indexed range count each."""
        values = ", ".join("(?, ?)" for _ in bounds[1:])
        args = [fmt(t) for pair in zip(bounds[:-1], bounds[1:], strict=True) for t in pair]
        args[0] = ""  # before any due time
        rows = self.conn.execute(
            f"WITH b(lo, hi) AS (VALUES {values}) SELECT (SELECT count(*) FROM cards "
            "WHERE removed = 0 AND due >= b.lo AND due < b.hi) FROM b",
            args,
        )
        return [n for (n,) in rows]

    def deck_progress(self, mature_days: float) -> dict[str, tuple[int, int]]:
        """Per deck: (cards seen, cards whose stability reaches ``mature_days``). Stats' 21
        days reads no card row: both counts are kept in ``deck_seen`` (schema v14)."""
        if mature_days == MATURE_DAYS:
            rows = self.conn.execute("SELECT deck, n, mature FROM deck_seen WHERE n > 0")
            return {deck: (int(n), int(mature)) for deck, n, mature in rows}
        rows = self.conn.execute(
            "SELECT deck, count(*), sum(coalesce(stability, 0) >= ?) FROM cards "
            "WHERE removed = 0 GROUP BY deck",
            [mature_days],
        )
        return {deck: (int(seen), int(mature)) for deck, seen, mature in rows}

    def seen_per_deck(self) -> dict[str, int]:
        """Per deck: cards with progress that are still in the decks, read from ``deck_seen``
        (kept by triggers on this table since schema v11: nothing counted per card)."""
        try:
            rows = self.conn.execute("SELECT deck, n FROM deck_seen WHERE n > 0").fetchall()
        except sqlite3.OperationalError:  # an older schema, read as it is
            rows = self.conn.execute(
                "SELECT deck, count(*) FROM cards WHERE removed = 0 GROUP BY deck"
            ).fetchall()
        return dict(rows)

    def flagged(self, flag: Literal["leech", "changed"]) -> list[str]:
        """Ids of live cards marked as leeches, or whose text changed since their last review."""
        column = {"leech": "leech", "changed": "changed"}[flag]
        # the partial index holds only the flagged cards (the planner would rather walk the
        # (removed, ...) index over every live card)
        rows = self.conn.execute(
            f"SELECT id FROM cards INDEXED BY cards_{column} WHERE {column} = 1 AND removed = 0 "
            "ORDER BY id"
        )
        return [r[0] for r in rows]


def _learning_where(decks: Iterable[str] | None) -> tuple[str, list[Any]]:
    """The live learning/relearning cards' condition (their partial index), in ``decks``."""
    where = f"removed = 0 AND {NOT_REVIEW_SQL} AND state IN (1, 3)"
    args: list[Any] = []
    if decks is not None:
        deck_list = list(decks)
        where += f" AND deck IN ({','.join('?' * len(deck_list))})"
        args += deck_list
    return where, args
