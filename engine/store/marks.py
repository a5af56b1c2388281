"""Marks: suspend, bury, flag (Anki's), in the card_marks table.

Part of the one `Store` (engine/store/__init__.py combines the tables' classes).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from prep.engine.store import devices
from prep.engine.store.core import StoreCore
from prep.engine.timeutil import fmt, parse, utcnow


@dataclass(frozen=True)
class Mark:
    """Anki's marks on one card: suspended (never served until unsuspended), buried (left out
    until ``buried_until``, the next study day) and flagged (served as usual, listed)."""

    suspended: bool = False
    buried_until: datetime | None = None
    flagged: bool = False


class MarksStore(StoreCore):
    """The card_marks table."""

    # --- marks: suspend, bury, flag (Anki's) --------------------------------------------
    #
    # One small table (schema v10, and v11 for a database that never had it): a row per
    # marked card; a card with no mark has no row.

    def mark(self, card_id: str) -> Mark:
        """The card's suspend / bury / flag state (all clear when never marked)."""
        row = self.conn.execute(
            "SELECT suspended, buried_until, flagged FROM card_marks WHERE card_id = ?",
            (card_id,),
        ).fetchone()
        if row is None:
            return Mark()
        return Mark(suspended=bool(row[0]), buried_until=parse(row[1]), flagged=bool(row[2]))

    def set_mark(self, card_id: str, mark: Mark, at: datetime | None = None) -> None:
        """Store ``mark`` for the card (committed at once); an all-clear mark deletes the row.
        Stamped ``at`` (default: now) by this device: the last writer wins on a sync."""
        with self.transaction():
            devices.stamp_mark(self.conn, card_id, at or utcnow())
            if mark == Mark():
                self.conn.execute("DELETE FROM card_marks WHERE card_id = ?", (card_id,))
                return
            self.conn.execute(
                "INSERT INTO card_marks (card_id, suspended, buried_until, flagged) "
                "VALUES (?, ?, ?, ?) ON CONFLICT(card_id) DO UPDATE SET "
                "suspended = excluded.suspended, buried_until = excluded.buried_until, "
                "flagged = excluded.flagged",
                (card_id, int(mark.suspended), fmt(mark.buried_until), int(mark.flagged)),
            )

    def hidden_ids(self, now: datetime) -> set[str]:
        """Cards the queue leaves out at ``now``: suspended, or buried until later."""
        rows = self.conn.execute(
            "SELECT card_id FROM card_marks WHERE suspended = 1 OR buried_until > ?",
            (fmt(now),),
        )
        return {r[0] for r in rows}

    def mark_counts(self, now: datetime) -> dict[str, int]:
        """How many cards are suspended, buried (until later than ``now``) and flagged."""
        row = self.conn.execute(
            "SELECT COALESCE(SUM(suspended), 0), COALESCE(SUM(buried_until > ?), 0), "
            "COALESCE(SUM(flagged), 0) FROM card_marks",
            (fmt(now),),
        ).fetchone()
        return {"suspended": row[0], "buried": row[1], "flagged": row[2]}

    # The export's form of a mark (engine/transfer/export.py, engine/transfer/importer.py): card_id, suspended
    # (0/1), buried_until (UTC text or None), flagged (0/1), as stored.

    def mark_rows(self, card_id: str | None = None) -> list[dict[str, Any]]:
        """Every stored mark (or ``card_id``'s), in id order, as exported."""
        where, args = ("WHERE card_id = ?", [card_id]) if card_id is not None else ("", [])
        rows = self.conn.execute(
            "SELECT card_id, suspended, buried_until, flagged FROM card_marks "
            f"{where} ORDER BY card_id",
            args,
        )
        keys = ("card_id", "suspended", "buried_until", "flagged")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def marks(self) -> dict[str, Mark]:
        """Every card with a stored mark, by id (in id order); a bury may have expired."""
        return {
            r["card_id"]: Mark(bool(r["suspended"]), parse(r["buried_until"]), bool(r["flagged"]))
            for r in self.mark_rows()
        }
