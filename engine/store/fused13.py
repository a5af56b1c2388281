"""The v4 review log (states as JSON text) converted straight to v13's compact log, in one pass.

An upgrade from v4 or older to v13 or newer ran two passes over the whole log: v4 -> v5 parsed
every JSON state, packed it as a v5 record and wrote a v5 table with three indexes (v10 and v11
then indexed it again), and v12 -> v13 read every row back, decoded the v5 records and packed
them in v13's form into ``revlog``. On the generated 1M-card collection (10M reviews) that was
~75 CPU-us a review, more than 14 CPU-minutes. Here each row is parsed once and packed once,
straight into ``revlog`` (its indexes are built by v12 -> v13 after the bulk insert), and the
steps between see the ``reviews`` view, as over a newer database set back. Measured (2 shared
cores): the whole v3 -> v15 upgrade of 100k cards / 1M reviews 66.8 -> 36.2 CPU-s; of the 1M
build 462 CPU-s (this pass ~39 CPU-us a review, at load 7-10), where it had not ended in 52 min.

The result is the two passes' row for row, byte for byte (tests/test_fused13.py): a state in
the usual text (engine/store/reviewlog.py's pattern) that fits the v5 record comes through the
two passes unchanged but for a whole number read back as a float (the same bytes packed, the
same comparisons), so it is packed straight away; any other (a hand-made state, one that does
not fit, non-canonical text) makes its card "odd", and that card's rows from there on go
through exactly what the two passes did (v5 encode, v5 decode, v13 encode, each with its own
chain), starting from its chain so far.
"""

from __future__ import annotations

import gc
import sqlite3
import struct
from typing import TYPE_CHECKING, Any

from prep.engine.store.reviewlog import KEPT, Chain, legacy_state, to_us
from prep.engine.store.reviewlog5 import Chain5, _head
from prep.engine.store.schema13 import (
    REVIEW_CARDS_SQL,
    REVLOG_SQL,
    VIEW_SQL,
    drop_old_log_and_count,
)
from prep.engine.study.scheduler import CardState

if TYPE_CHECKING:
    from prep.engine.store.schema import UpgradeTracker

_PACK_ERRORS = (ValueError, OverflowError, struct.error)


def v4_log_to_v13(conn: sqlite3.Connection, progress: UpgradeTracker | None) -> None:
    """v4's ``reviews`` table rewritten as v13's ``revlog`` (+ ``review_cards``, the tally)
    and dropped; ``reviews`` is then v13's view (its indexes and triggers: v12 -> v13)."""

    conn.execute(REVIEW_CARDS_SQL)
    conn.execute(REVLOG_SQL)
    # the chain holds a state per card (a million at 1M cards) and makes no cycles: the
    # collector's full passes over them would only cost time
    collecting = gc.isenabled()
    gc.disable()
    try:
        _convert(conn, progress)
    finally:
        if collecting:
            gc.enable()
    drop_old_log_and_count(conn, progress)
    conn.execute(VIEW_SQL)  # the steps up to v13 see the log as over a newer database


def _convert(conn: sqlite3.Connection, progress: UpgradeTracker | None) -> None:
    from prep.engine.store.reviewlog import _fields_of, _state_text
    from prep.engine.store.schema import BATCH
    from prep.engine.timeutil import parse

    pattern = _state_text()
    new_state = object.__new__

    def clean(text: str) -> CardState | None:
        """The state of ``text`` when it is in the usual form and fits the v5 record (the
        two passes give it back as it is), else None."""
        m = pattern.fullmatch(text)
        d = None if m is None else _fields_of(*m.groups())
        if d is None:
            return None
        state = new_state(CardState)
        state.__dict__.update(d)
        try:
            _head(state)
        except _PACK_ERRORS:
            return None
        return state

    numbers: dict[str, int] = {}  # card id -> number, in the order the log first names them
    chain = Chain()  # the v13 chain (both paths)
    c5, old = Chain5(), Chain5()  # the two passes' v5 chains, for odd cards only
    odd: set[str] = set()
    last_text: dict[str, str] = {}  # each card's latest next, as text: most prevs equal it
    cur = conn.execute(
        "SELECT id, card_id, rating, reviewed_at, duration_ms, prev_state, prev, next "
        "FROM reviews ORDER BY id"
    )
    while rows := cur.fetchmany(BATCH):
        out = []
        named = []
        for rid, cid, rating, at, dur, ps, prev, nxt in rows:
            n = numbers.get(cid)
            if n is None:
                n = numbers[cid] = len(numbers) + 1
                named.append((n, cid))
            when = to_us(parse(at))
            same = prev is not None and prev == last_text.get(cid)
            last_text[cid] = nxt
            if cid not in odd:
                prev_s = chain.last[cid] if same else None if prev is None else clean(prev)
                next_s = clean(nxt)
                if next_s is not None and (prev is None or prev_s is not None):
                    pb, nb = chain.encode(cid, ps, prev_s, next_s, when)
                    out.append((rid, n, rating, when, dur, ps, pb, nb))
                    continue
                odd.add(cid)  # from here on, as the two passes did
                if cid in chain.last:
                    c5.last[cid] = old.last[cid] = chain.last[cid]
            pb, nb = _two_passes(c5, old, chain, cid, ps, prev, nxt, same, when)
            out.append((rid, n, rating, when, dur, ps, pb, nb))
        if named:
            conn.executemany("INSERT INTO review_cards (n, id) VALUES (?, ?)", named)
        conn.executemany(
            "INSERT INTO revlog (id, cn, rating, at, duration_ms, prev_state, prev, next) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            out,
        )
        if progress is not None:
            progress.converted(len(out))


def _two_passes(
    c5: Chain5,
    old: Chain5,
    chain: Chain,
    cid: str,
    ps: int | None,
    prev: str | None,
    nxt: str,
    same: bool,
    when: int,
) -> tuple[bytes | None, bytes]:
    """One row as v4 -> v5 and then v12 -> v13 converted it (their code, step for step)."""
    from prep.engine.store.schema13 import _bytes

    # v4 -> v5
    prev_s: Any = c5.last[cid] if same else legacy_state(prev, check=False)
    try:
        pb5, nb5 = c5.encode(cid, ps, prev_s, legacy_state(nxt, check=False))
    except _PACK_ERRORS:
        prev_s = c5.last[cid] if same else legacy_state(prev)
        pb5, nb5 = c5.encode(cid, ps, prev_s, legacy_state(nxt))
    # v12 -> v13
    try:
        p, n = old.decode(cid, ps, pb5, nb5)
        return chain.encode(cid, ps, p, n, when)
    except Exception:  # a damaged row (struct.error, ValueError, ...): kept as it was
        return (None if pb5 is None else KEPT + _bytes(pb5)), KEPT + _bytes(nb5)
