"""Merged cards: the progress of an id a card lists under ``aliases`` moves onto that card
(engine/decks/aliases.py holds the rules; this holds the SQL).

Part of the one `Store` (engine/store/__init__.py combines the tables' classes).
"""

from __future__ import annotations

from prep.engine.store import devices
from prep.engine.store.core import StoreCore
from prep.engine.store.marks import Mark
from prep.engine.store.reviewlog import Chain, to_us
from prep.engine.timeutil import fmt, utcnow


class AliasesStore(StoreCore):
    """Moves a merged-away card's rows (cards, reviews, card_marks with their clock) onto the
    kept card."""

    def adopt_aliases(self, aliases: dict[str, str]) -> int:
        """Move the progress of each merged-away id in ``aliases`` ({alias: kept id}) onto
        the kept card, in one transaction: its reviews (states untouched, the two chains
        interleaved in log order), its card state when it was reviewed later than the kept
        card's (or the kept card has none), its marks combined. Returns how many moved."""
        from prep.engine.store.aliasrules import keeps_alias_state

        store = self  # the combined Store: cards, reviews and marks methods
        stored = [
            a
            for a in aliases
            if store.card(a) is not None or store.mark(a) != Mark()  # type: ignore[attr-defined]
        ]
        if not stored:
            return 0
        with self.transaction():
            for alias in stored:
                kept = aliases[alias]
                log = sorted(
                    store._card_log(alias) + store._card_log(kept),  # type: ignore[attr-defined]
                    key=lambda rp: rp[0].id,
                )
                chain, rows = Chain(), []
                for review, prev_state in log:
                    at = to_us(review.reviewed_at)
                    pblob, nblob = chain.encode(kept, prev_state, review.prev, review.next, at)
                    rows.append((kept, pblob, nblob, review.id))
                self.conn.executemany(
                    "UPDATE reviews SET card_id = ?, prev = ?, next = ? WHERE id = ?", rows
                )
                mine, theirs = store.card(alias), store.card(kept)  # type: ignore[attr-defined]
                if mine is None:
                    pass  # only marked
                elif theirs is None or keeps_alias_state(mine.last_review, theirs.last_review):
                    self.conn.execute("DELETE FROM cards WHERE id = ?", (kept,))
                    self.conn.execute("UPDATE cards SET id = ? WHERE id = ?", (kept, alias))
                else:
                    self.conn.execute("DELETE FROM cards WHERE id = ?", (alias,))
                old, new = store.mark(alias), store.mark(kept)  # type: ignore[attr-defined]
                if old != Mark():
                    buried = [b for b in (old.buried_until, new.buried_until) if b]
                    both = Mark(
                        suspended=old.suspended or new.suspended,
                        buried_until=max(buried) if buried else None,
                        flagged=old.flagged or new.flagged,
                    )
                    self._move_mark(alias, kept, both)
        return len(stored)

    def _move_mark(self, alias: str, kept: str, both: Mark) -> None:
        """The combined mark onto ``kept`` with the later of the two cards' mark clocks (not a
        new stamp: every device merges the same cards itself, and a stamp of the merge's time
        would outrank a change made on another device after its own merge, or drop it). The
        alias's row goes; its clock stays, so a stale entry naming it is still refused."""
        later = self.conn.execute(
            "SELECT c.at, c.dev, c.seq FROM mark_clock c LEFT JOIN sync_devices d ON d.n = c.dev "
            "WHERE c.card_id IN (?, ?) ORDER BY c.at DESC, coalesce(d.id, '') DESC, c.seq DESC "
            "LIMIT 1",
            (alias, kept),
        ).fetchone()
        self.conn.execute("DELETE FROM card_marks WHERE card_id = ?", (alias,))
        self.conn.execute(
            "INSERT INTO card_marks (card_id, suspended, buried_until, flagged) "
            "VALUES (?, ?, ?, ?) ON CONFLICT(card_id) DO UPDATE SET "
            "suspended = excluded.suspended, buried_until = excluded.buried_until, "
            "flagged = excluded.flagged",
            (kept, int(both.suspended), fmt(both.buried_until), int(both.flagged)),
        )
        if later is None:  # marks from before clocks (v9 stamps every mark): stamp it now
            devices.stamp_mark(self.conn, kept, utcnow())
            return
        self.conn.execute(
            "INSERT INTO mark_clock (card_id, at, dev, seq) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(card_id) DO UPDATE SET at = excluded.at, dev = excluded.dev, "
            "seq = excluded.seq",
            (kept, *later),
        )
