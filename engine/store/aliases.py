"""Merged cards: the progress of an id a card lists under ``aliases`` moves onto that card
(engine/decks/aliases.py holds the rules; this holds the SQL).

Part of the one `Store` (engine/store/__init__.py combines the tables' classes).
"""

from __future__ import annotations

from prep.engine.store.core import StoreCore
from prep.engine.store.marks import Mark
from prep.engine.store.reviewlog import Chain, to_us


class AliasesStore(StoreCore):
    """Moves a merged-away card's rows (cards, reviews, card_marks) onto the kept card."""

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
                    store.set_mark(alias, Mark())  # type: ignore[attr-defined]
                    store.set_mark(kept, both)  # type: ignore[attr-defined]
        return len(stored)
