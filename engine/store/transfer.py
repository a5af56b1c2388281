"""Export and import: every row of a table as a dict, and rows inserted back.

Part of the one `Store` (engine/store/__init__.py combines the tables' classes).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Literal

from prep.engine.store import devices
from prep.engine.store.cards import _row_to_state, state_from_json, state_to_json
from prep.engine.store.marks import MarksStore
from prep.engine.store.reviewlog import Chain, to_us
from prep.engine.store.reviews import (
    _REVIEW_COLS,
    ReviewsStore,
    _decode,
    _json_or_none,
    _review_dict,
)
from prep.engine.store.schema import (
    CARD_COLUMNS,
    DEMO_RUN_COLUMNS,
    REVIEW_COLUMNS,
    SCHEDULE_COLUMNS,
)
from prep.engine.store.schema13 import card_number
from prep.engine.timeutil import fmt, parse

if TYPE_CHECKING:
    from prep.engine.study.scheduler import CardState

# a card's row and its newest review's id (log_if_newest)
_ROW_AND_NEWEST = (
    f"SELECT {', '.join(f'c.{c}' for c in CARD_COLUMNS)}, (SELECT max(r.id) FROM revlog r "
    "WHERE r.cn = (SELECT n FROM review_cards WHERE id = c.id)) FROM cards c WHERE c.id = ?"
)

Table = Literal["cards", "reviews", "demo_runs"]
_COLUMNS: dict[str, tuple[str, ...]] = {
    "cards": CARD_COLUMNS,
    "reviews": REVIEW_COLUMNS,
    "demo_runs": DEMO_RUN_COLUMNS,
}


class TransferStore(ReviewsStore, MarksStore):
    """Rows out (dump) and in (insert_row) for export and import."""

    # --- export and import ----------------------------------------------------------------

    def dump(self) -> dict[str, Any]:
        """Everything stored, as plain data: settings (None when never saved), cards,
        reviews (prev/next as objects), demo runs (metrics as an object) and marks, in one read
        transaction (a rating committed meanwhile is in both cards and reviews, or neither)."""
        own = not self.conn.in_transaction
        if own:
            self.conn.execute("BEGIN")
        try:
            cards = list(self.export_cards())
            used: set[int] = set()
            reviews = list(self.export_reviews(used))
            return {
                "settings": self.saved_settings(),
                "cards": cards,
                "reviews": reviews,
                "params": self.export_params(used),  # what each review was made with
                "demo_runs": list(self.export_runs()),
                "marks": self.mark_rows(),
            }
        finally:
            if own:
                self.conn.execute("COMMIT")

    # dump()'s parts, row by row (`prep export` streams them: engine/transfer/jsonout.py),
    # read inside the caller's transaction

    def export_cards(self) -> Iterator[dict[str, Any]]:
        """The card states as exported, in id order."""
        return self._iter_rows("cards", "ORDER BY id")

    def export_reviews(self, used: set[int]) -> Iterator[dict[str, Any]]:
        """The review log as exported (prev/next as objects, its id and params number), in
        log order; each review's params number is added to ``used``. A row that cannot be
        read is left out and listed in ``damaged_reviews``. Holds one state per card (the
        log is a chain), not the log."""
        self.damaged_reviews = []  # the rows left out (the export says which)
        rows = self.conn.execute(f"SELECT {_REVIEW_COLS} FROM reviews ORDER BY id")
        origins = self.conn.execute(
            "SELECT r.id, d.id, coalesce(r.seq, r.id), r.params FROM reviews r "
            "JOIN sync_devices d ON d.n = r.dev ORDER BY r.id"
        )
        origin = (0, "", 0, 0)
        for x in _decode(rows, self.damaged_reviews):
            while origin[0] != x[0].id:  # (both in id order; a damaged row is skipped)
                origin = next(origins)
            _rid, dev, seq, pn = origin
            used.add(pn)
            r = _review_dict(*x)
            r |= {"prev": _json_or_none(r["prev"]), "next": _json_or_none(r["next"])}
            yield r | {"device": dev, "seq": seq, "params": str(pn)}

    def export_params(self, used: set[int]) -> dict[str, Any]:
        """The scheduler parameters numbered ``used``, by number (as text)."""
        return {
            str(n): json.loads(text)
            for n, text in self.conn.execute("SELECT n, value FROM sched_params")
            if n in used
        }

    def export_runs(self) -> Iterator[dict[str, Any]]:
        """The demo runs as exported (metrics as an object), in run order."""
        for r in self._iter_rows("demo_runs", "ORDER BY id"):
            yield r | {"metrics": _json_or_none(r["metrics"])}

    def review_by_origin(self, device: str, seq: int) -> dict[str, Any] | bool | None:
        """The review whose id is (``device``, ``seq``), as exported (without its origin);
        True when it was undone (a tombstone says so); None when never seen here."""
        found = devices.origin_of(self.conn, device, seq)
        if not isinstance(found, tuple):
            return found
        rid, cid = found
        for review, prev_state in self._card_log(cid):
            if review.id == rid:
                return _review_dict(review, prev_state)
        return None

    def _rows(self, table: Table, tail: str = "", args: Iterable[Any] = ()) -> list[dict[str, Any]]:
        return list(self._iter_rows(table, tail, args))

    def _iter_rows(
        self, table: Table, tail: str = "", args: Iterable[Any] = ()
    ) -> Iterator[dict[str, Any]]:
        columns = _COLUMNS[table]
        rows = self.conn.execute(f"SELECT {', '.join(columns)} FROM {table} {tail}", list(args))
        return (dict(zip(columns, row, strict=True)) for row in rows)

    def saved_settings(self) -> dict[str, Any] | None:
        """The settings as saved (a dict, unvalidated), or None when none were saved."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()
        if row is None:
            return None
        try:
            value = json.loads(row[0])
        except (TypeError, ValueError):
            return None  # unreadable (a hand edit): `prep config --reset` says so; export goes on
        return value if isinstance(value, dict) else None

    def card_row(self, card_id: str) -> dict[str, Any] | None:
        """The stored row of one card (columns as in schema.CARD_COLUMNS)."""
        rows = self._rows("cards", "WHERE id = ?", [card_id])
        return rows[0] if rows else None

    def review_row(self, card_id: str, reviewed_at: str, prev: str | None) -> dict[str, Any] | None:
        """The stored review of ``card_id`` at ``reviewed_at`` from state ``prev`` (JSON), as
        exported (columns as in schema.REVIEW_COLUMNS)."""
        for r in (_review_dict(*x) for x in self._card_log(card_id)):
            if (r["reviewed_at"], r["prev"]) == (reviewed_at, prev):
                return r
        return None

    def review_keys(self, card_id: str) -> set[tuple[str, str, str | None]]:
        """(card id, time, previous state JSON) of every stored review of ``card_id``."""
        return {
            (card_id, fmt(r.reviewed_at), state_to_json(r.prev)) for r, _ in self._card_log(card_id)
        }

    def demo_run_row(self, name: str, ran_at: str) -> dict[str, Any] | None:
        rows = self._rows("demo_runs", "WHERE name = ? AND ran_at = ?", [name, ran_at])
        return rows[0] if rows else None

    def insert_row(
        self, table: Table, row: dict[str, Any], chain: Chain | None = None
    ) -> int | None:
        """Insert one row as exported (columns as in engine/store/schema.py), e.g. by an import.
        ``chain``: a review's, kept by the caller across a run of inserts in one transaction
        (with no other change to those cards' reviews between them), so that a card's log is
        decoded once, not per review. Returns a review's row id (None for other tables)."""
        if table == "reviews":
            cid = row["card_id"]
            prev, nxt = state_from_json(row["prev"]), state_from_json(row["next"])
            assert nxt is not None
            at = to_us(parse(row["reviewed_at"]))
            if chain is None or cid not in chain.last:
                chain = chain or Chain()
                chain.last.update(self._chain(cid).last)
            pblob, nblob = chain.encode(cid, row["prev_state"], prev, nxt, at)
            # the review keeps its id: its device and sequence number (one from an export of
            # an older prep, without them, becomes this device's)
            dev, seq = devices.device(self.conn), None
            if row.get("device"):
                dev = devices.device_n(self.conn, row["device"])
                seq = row["seq"]
                if dev == devices.device(self.conn):
                    devices.take_seq(self.conn, seq)
            params = row.get("params")
            rid = devices.next_review_id(self.conn)
            self.conn.execute(
                "INSERT INTO revlog (id, dev, seq, params, cn, rating, at, duration_ms, "
                "prev_state, prev, next) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    rid,
                    dev,
                    seq,
                    1 if params is None else devices.params_n(self.conn, params),
                    card_number(self.conn, cid),
                    row["rating"],
                    at,
                    row["duration_ms"],
                    row["prev_state"],
                    pblob,
                    nblob,
                ),
            )
            return rid
        columns = _COLUMNS[table]
        self.conn.execute(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
            [row[c] for c in columns],
        )
        return None

    def log_if_newest(self, card_id: str, review_id: int, state: CardState) -> bool:
        """(schema v14) Mark card ``card_id``'s row as the state after review ``review_id``
        (``logged``), as a rating and a sync do, when that review is the card's newest and the
        row is exactly ``state``, the review's ``next``: the next rating here then stores the
        state before it as "that review's next" (NULL), not in full. Anything else leaves the
        row as it is (a row not known to be its newest review's state is stored in full by
        the next rating: never wrong, one whole record). Returns whether it was marked."""
        row = self.conn.execute(_ROW_AND_NEWEST, (card_id,)).fetchone()
        if row is None or row[-1] != review_id or _row_to_state(row[:-1]) != state:
            return False
        self.conn.execute("UPDATE cards SET logged = ? WHERE id = ?", (review_id, card_id))
        return True

    def update_schedule(self, card_id: str, row: dict[str, Any]) -> None:
        """Set a card's schedule fields (schema.SCHEDULE_COLUMNS) from ``row``."""
        sets = ", ".join(f"{k} = ?" for k in SCHEDULE_COLUMNS)
        self.conn.execute(
            f"UPDATE cards SET {sets} WHERE id = ?", [*(row[k] for k in SCHEDULE_COLUMNS), card_id]
        )
