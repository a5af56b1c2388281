"""How many cards each study day serves: `prep stats`' forecast and "due today / tomorrow / in
7 days", and the end-of-session line "N coming up by the end of tomorrow" (one rule for all).

A live card counts on the study day that holds its due (engine/study/due.py: a review or an
interday step is due from its day's rollover, a learning step on its own day), an overdue
card on today. A suspended card counts on no day. A buried card counts on the day its bury
ends when that is later than its due's day (buried today: tomorrow, where it comes back, as
Anki unburies at the rollover). A review an interview plan brings forward counts today.
"""

from __future__ import annotations

from datetime import datetime

from prep.engine.store import Store
from prep.engine.study import plan as plan_mod
from prep.engine.study.collection import Cards
from prep.engine.timeutil import study_day_start


def due_per_day(store: Store, collection: Cards, now: datetime, days: int) -> list[int]:
    """The cards served on each of ``days`` study days from today's (today first)."""
    bounds = [study_day_start(now, i) for i in range(days + 1)]
    out = store.due_per_interval(bounds)  # every live card by its due (overdue: today's)

    def day(at: datetime) -> int | None:
        """The index of the study day holding ``at`` (0 before today), None after the last."""
        return next((i for i, b in enumerate(bounds[1:]) if at < b), None)

    marks = store.marks()  # (few rows)
    hidden = store.hidden_ids(now)
    for cid, state in store.cards(hidden).items():
        if state.removed or not isinstance(state.due, datetime):
            continue
        i = day(state.due)
        if i is None:  # (due after the last day: counted on none)
            continue
        out[i] -= 1
        mark = marks.get(cid)
        if mark is None or mark.suspended or mark.buried_until is None:
            continue
        back = day(mark.buried_until)  # served again from its bury's end
        if back is not None:
            out[max(i, back)] += 1
    forward = plan_mod.brought_forward(store, collection, now, hidden=hidden)
    for state in store.cards(forward).values():
        i = day(state.due) if isinstance(state.due, datetime) else None
        if i != 0:
            out[0] += 1
            if i is not None:
                out[i] -= 1
    return out
